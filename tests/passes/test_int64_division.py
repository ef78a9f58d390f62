"""int64/uint64 CDIV and CMOD by any divisor (kcc/passes/division.py `cdiv64`, exact long
division): on x86 with integer division marked non-native, and in kcc's AMD emulator on both
arches, checked against the reference interpreter on edge values (0, ±1, powers of two ±1,
INT64_MIN, UINT64_MAX, divisors above 2^32, dividends below the divisor) and random ones."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from test_division import _binary, _run
from x86_util import reference


def _edges(dt: np.dtype) -> np.ndarray:
    info = np.iinfo(dt)
    v = {0, 1, 2, 3, 7, 10, info.max, info.max - 1, info.max // 3, 0xFFFFFFFF, 1 << 32,
         (1 << 32) + 1, 0x123456789, 0xFFFFFFFF00000000 & info.max}
    for k in (31, 32, 33, 62, 63):
        for p in ((1 << k) - 1, 1 << k, (1 << k) + 1):
            if p <= info.max:
                v.add(p)
    if info.min < 0:
        v |= {-x for x in v if x <= info.max} | {info.min, info.min + 1}
    return np.array(sorted(v), dt)


def _operands(dt: str, seed: int, n_random: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, then random pairs of mixed magnitudes (a random width for
    each operand, so that dividends below the divisor and divisors above 2^32 are common),
    and exact multiples q·d; INT64_MIN / -1 and zero divisors are kept (checked apart)."""
    t = np.dtype(dt)
    e = _edges(t)
    a, b = np.repeat(e, e.size), np.tile(e, e.size)
    rng = np.random.default_rng(seed)

    def rand(n: int) -> np.ndarray:
        bits = rng.integers(1, 65, n).astype(np.uint64)
        raw = rng.integers(0, 2 ** 64, n, dtype=np.uint64) >> (np.uint64(64) - bits)
        v = raw.view(np.int64).astype(t)
        return np.where(rng.random(n) < 0.5, v, -v) if t.kind == "i" else v
    ra, rb = rand(n_random), rand(n_random)
    q, d = rand(n_random) >> 8 if t.kind == "u" else rand(n_random) >> 8, rand(n_random) >> 24
    qd = (q * d).astype(t)
    return (np.concatenate([a, ra, qd]), np.concatenate([b, rb, d]))


def _compare(a: np.ndarray, b: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    keep = b != 0                      # division by zero is unspecified (docs/semantics.md)
    bad = np.flatnonzero((got != want) & keep)
    assert bad.size == 0, [(a[i], b[i], got[i], want[i]) for i in bad[:5]]


@pytest.mark.parametrize("dt", ["int64", "uint64"])
@pytest.mark.parametrize("op", ["CDIV", "CMOD"])
def test_cdiv64_on_x86_without_division_is_exact(dt: str, op: str) -> None:
    a, b = _operands(dt, 11, 3000)
    sink = _binary(op, dt, a.size)
    args = [np.zeros(a.size, dt), a, b]
    got, want = _run(sink, args)[0], reference(sink, args)[0]
    _compare(a, b, got, want)


def test_int64_min_over_minus_one_wraps_as_the_interpreter() -> None:
    """INT64_MIN / -1 is unspecified; kcc gives the interpreter's choice (quotient INT64_MIN,
    remainder 0) and never traps."""
    a = np.array([-2 ** 63, -2 ** 63, -2 ** 63 + 1], np.int64)
    b = np.array([-1, 1, -1], np.int64)
    for op, want in (("CDIV", [-2 ** 63, -2 ** 63, 2 ** 63 - 1]), ("CMOD", [0, 0, 0])):
        sink = _binary(op, "int64", 3)
        args = [np.zeros(3, np.int64), a, b]
        assert _run(sink, args)[0].tolist() == reference(sink, args)[0].tolist() == want


AMD = all(importlib.util.find_spec(m) is not None
          for m in ("kcc.encode.amd.encoder", "kcc.targets.amd.emu.core"))


@pytest.mark.skipif(not AMD, reason="kcc.encode.amd / kcc.targets.amd.emu (the AMD encoder "
                    "and emulator) are not in this tree")
@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
@pytest.mark.parametrize("dt", ["int64", "uint64"])
@pytest.mark.parametrize("op", ["CDIV", "CMOD"])
def test_cdiv64_in_the_amd_emulator_is_exact(arch: str, dt: str, op: str) -> None:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    # the emulator runs ~1000 instructions a work-item: 160 pairs, edges first (every 23rd
    # edge pair, so each edge value meets several others), then random and exact multiples
    a, b = _operands(dt, 12, 40)
    e = _edges(np.dtype(dt)).size ** 2
    pick = np.concatenate([np.arange(0, e, 23), np.arange(e, a.size)])
    a, b = a[pick], b[pick]
    if dt == "int64":
        a, b = np.append(a, -2 ** 63), np.append(b, -1)
    sink = _binary(op, dt, a.size)
    (code,) = compile_amd_code([sink], arch)
    args = [np.zeros(a.size, dt), a, b]
    want = reference(sink, args)[0]
    got = [x.copy() for x in args]
    emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
    _compare(a, b, got[0], want)
