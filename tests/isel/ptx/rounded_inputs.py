"""float32 inputs for the RECIPROCAL/SQRT sequence checks (tests/isel/ptx/test_ptx_rcp.py,
test_ptx_sqrt.py): a fast set (specials, every exponent with random and boundary significands,
subnormals; ~1.2e6 values) and the exhaustive walk over all 2^32 bit patterns in chunks, run
when KCC_EXHAUSTIVE=1 (or `python tests/isel/ptx/test_ptx_rcp.py --exhaustive`)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from rcp_model import from_bits

EXHAUSTIVE = os.environ.get("KCC_EXHAUSTIVE") == "1"
CHUNK = 1 << 24


def fast_inputs(seed: int = 25) -> np.ndarray:
    """Both signs of: ±0, ±inf, NaNs, every exponent (0..254) with 4096 random significands
    and the significands 0, 1, 2, all ones, all ones - 1, 0x400000, 0x7ffffe; every
    significand of the smallest subnormal/normal binades' first 2^16; 2^16 random patterns."""
    rng = np.random.default_rng(seed)
    pats = [np.array([0, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FFFFFFF], np.uint32)]
    special = np.array([0, 1, 2, 0x7FFFFF, 0x7FFFFE, 0x400000, 0x7FFFFD, 0x3FFFFF], np.uint32)
    for e in range(255):
        m = np.concatenate([special, rng.integers(0, 1 << 23, 4096, dtype=np.uint32)])
        pats.append((np.uint32(e) << np.uint32(23)) | m)
    pats.append(np.arange(1 << 16, dtype=np.uint32))                      # subnormals
    pats.append(np.arange(1 << 16, dtype=np.uint32) | np.uint32(1 << 23))  # min normals
    pats.append(np.uint32(0x7F7FFFFF) - np.arange(1 << 16, dtype=np.uint32))  # max floats
    pats.append(rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32))
    p = np.concatenate(pats)
    return from_bits(np.concatenate([p, p | np.uint32(0x80000000)]))


def all_inputs(chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """Every float32 bit pattern, `chunk` at a time."""
    for lo in range(0, 1 << 32, chunk):
        yield from_bits(np.arange(lo, lo + chunk, dtype=np.uint64).astype(np.uint32))


def binade_inputs(exponents: list[int]) -> Iterator[np.ndarray]:
    """Every positive float32 of the given biased exponents (2^23 each, one chunk each)."""
    m = np.arange(1 << 23, dtype=np.uint32)
    for e in exponents:
        yield from_bits(m | (np.uint32(e) << np.uint32(23)))


def walk(check, argv: list[str], name: str) -> None:
    """The command-line walk: `--exhaustive` (all 2^32 patterns) or `--binades 0,1,254`
    (every significand of those exponents); prints progress and the count of wrong results."""
    import time
    if "--binades" in argv:
        exps = [int(x) for x in argv[argv.index("--binades") + 1].split(",")]
        chunks, what = binade_inputs(exps), f"binades {exps}"
    else:
        chunks, what = all_inputs(), "all 2^32 inputs"
    t0, total, bad = time.time(), 0, 0
    for n, b in enumerate(chunks):
        nb, ex = check(b)
        bad, total = bad + nb, total + b.size
        if ex:
            print(ex, flush=True)
        print(f"  {n}: {total} inputs, {bad} wrong, {time.time() - t0:.0f} s", flush=True)
    print(f"{name}, {what}: {total} inputs x 3 approximations (-1, 0, +1 ulp), {bad} wrong, "
          f"{time.time() - t0:.0f} s")
