"""Every CAST pair (13 dtypes × 13) on AMD, in kcc's emulator for gfx1100 and gfx942, bit for
bit against the reference interpreter (docs/semantics.md's conversion table) on edge values:
NaN (payloads, both signs), ±inf, ±0, subnormals, the integer limits and the values around them
(saturation), the float16 overflow threshold, and values at and next to the rounding midpoints
of every narrowing conversion (float64 → float32/float16/bfloat16, float32 → float16/bfloat16,
int64/uint64/int32 → float32/float16/bfloat16), where rounding twice would differ from
rounding once."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import UOp
from kcc.targets.manifest import check_launch
from x86_util import reference

DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64")
BLOCK = 64


def _np(dt: str) -> np.dtype:
    return np.dtype("uint16" if dt == "bfloat16" else dt)


def _mid(lo: np.ndarray, wide: type) -> np.ndarray:
    """Midpoints between each value of a narrow float array and its upward neighbour, exactly,
    in the wider float type, and the wider neighbours on both sides of each midpoint."""
    up = np.nextafter(lo, np.inf)
    m = (lo.astype(wide) + up.astype(wide)) / wide(2)
    return np.concatenate([m, np.nextafter(m, np.inf), np.nextafter(m, -np.inf)])


def _bf16_values(rng: np.random.Generator, n: int) -> np.ndarray:
    """float32 values that are bfloat16 midpoints (low 16 bits 0x8000) or next to them."""
    top = rng.integers(0, 1 << 16, n, dtype=np.uint32) << np.uint32(16)
    low = np.uint32(0x8000) + rng.integers(-1, 2, n).astype(np.uint32)
    return (top | low).view(np.float32)


def _float_values(rng: np.random.Generator) -> np.ndarray:
    """float64 edge values (the float sources are made from these, and bit patterns)."""
    lim = [2.0 ** k for k in (7, 8, 15, 16, 24, 31, 32, 53, 63, 64)]
    near = [v + d for v in lim for d in (-1.0, -0.5, 0.0, 0.5, 1.0)]
    near += [-v for v in near]
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, -0.5, 0.9, -0.9,
               1.5, 2.5, -2.5, 300.9, -2.9, 65504.0, 65519.99, 65520.0, 65536.0, -65520.0,
               2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25, 2.0 ** -14, 2.0 ** -126, 2.0 ** -149,
               2.0 ** -150, 1.5 * 2.0 ** -149, 3.4028235e38, 3.4028236e38, 3.5e38, 5e-324,
               1.7976931348623157e308, 2.0 ** 127 * (2 - 2.0 ** -24), 1e10, -1e10, 1e20,
               9.2233720368547758e18, 1.8446744073709552e19, -9.2233720368547758e18]
    f32 = rng.standard_normal(200).astype(np.float32) * np.float32(100)
    f16 = rng.standard_normal(200).astype(np.float16)
    bf = _bf16_values(rng, 200).astype(np.float64)
    # float64 values within half a float32 step of a bfloat16 midpoint: a float32 step
    # would round them onto it
    bf_near = np.concatenate([bf * (1 + 2.0 ** -40), bf * (1 - 2.0 ** -40)])
    return np.concatenate([np.array(near + special), _mid(f32, np.float64),
                           _mid(f16, np.float64), bf, bf_near, rng.standard_normal(200) * 1e6])


def _int_values(rng: np.random.Generator) -> np.ndarray:
    """uint64 bit patterns: limits, powers of two ± 1, and 64-bit integers at and next to the
    float32 rounding midpoints (a 24-bit significand, then a one, then zeros)."""
    v = [0, 1, 2, 3, 127, 128, 255, 256, 32767, 32768, 65535, 65519, 65520, 65536,
         2 ** 24 + 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63,
         2 ** 64 - 1, 2 ** 64 - 2 ** 39, 2 ** 64 - 2 ** 40 + 2 ** 39]
    v += [(1 << 64) - x for x in v if x]                       # the negatives of int64
    # midpoints of float32 (24 bits), float16 (11) and bfloat16 (8) significands; shifted by
    # more than 53 - p bits they are not float64 values, so a float64 step would round them
    ties = []
    for p, n in ((24, 120), (11, 60), (8, 60)):
        sig = rng.integers(1 << (p - 1), 1 << p, n)
        sh = rng.integers(55 - p, 65 - p, n)
        ties += [(int(m) << int(k)) | (1 << (int(k) - 1)) for m, k in zip(sig, sh)]
    near = [t + d for t in ties for d in (-1, 0, 1)]
    near += [(1 << 64) - t for t in near]
    bits = rng.integers(0, 2 ** 64, 200, dtype=np.uint64)
    return np.concatenate([np.array([x % (1 << 64) for x in v + near], np.uint64), bits])


def source_values(dt: str, seed: int = 0) -> np.ndarray:
    """The edge values of dt (as its numpy dtype; bfloat16 as bit patterns)."""
    rng = np.random.default_rng(seed)
    if dt == "bool":
        return np.array([False, True] * 32)
    if dt in ("float16", "float32", "float64"):
        with np.errstate(all="ignore"):
            f = _float_values(rng).astype(dt)
        nbits = np.dtype(dt).itemsize * 8
        bits = rng.integers(0, 2 ** 63, 300, dtype=np.int64).astype(np.uint64)
        bits = (bits >> np.uint64(64 - nbits) if nbits < 64 else bits | (bits << np.uint64(1)))
        nans = {16: [0x7C01, 0xFE00, 0x7FFF], 32: [0x7F800001, 0xFFC00000, 0x7FBFFFFF],
                64: [0x7FF0000000000001, 0xFFF8000000000000]}[nbits]
        raw = np.concatenate([bits, np.array(nans, np.uint64)]).astype(f"u{nbits // 8}")
        return np.concatenate([f, raw.view(dt)])
    if dt == "bfloat16":
        f = _float_values(rng).astype(np.float32).view(np.uint32) >> np.uint32(16)
        raw = rng.integers(0, 1 << 16, 300, dtype=np.uint32)
        nans = np.array([0x7F81, 0xFFC0, 0x7FFF], np.uint32)
        return np.concatenate([f, raw, nans]).astype(np.uint16)
    return _int_values(rng).astype(_np(dt))           # wrapping keeps the low bits


def _kernel(src: str, dst: str, n: int) -> UOp:
    return parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dst}, {n})
%a = PARAM ParamArg(1, {src}, {n})
%g = SPECIAL({n // BLOCK}) "gidx0" : weakint
%l = SPECIAL({BLOCK}) "lidx0" : weakint
%gb = MUL(%g, {BLOCK}) : weakint
%n = ADD(%gb, %l) : weakint
%p = INDEX(%a, %n)
%x = LOAD(%p) : {src}
%r = CAST(%x) {dst}
%oi = INDEX(%o, %n)
%s = STORE(%oi, %r)
SINK(%s) KernelInfo(name="k")
""")


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Element-wise equality of bits; two NaNs of a float dtype are equal (NaN stays NaN;
    bfloat16, whose NaN bits the semantics fix, compares bits)."""
    eq = got.view(np.uint8).reshape(got.size, -1) == want.view(np.uint8).reshape(want.size, -1)
    eq = eq.all(axis=1)
    if got.dtype.kind == "f":
        eq |= np.isnan(got) & np.isnan(want)
    return eq


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
@pytest.mark.parametrize("src", DTYPES)
def test_every_cast_from_src_matches_the_interpreter(src: str, arch: str) -> None:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    x = source_values(src)
    x = np.concatenate([x, x[: (-x.size) % BLOCK]])
    failures = []
    for dst in DTYPES:
        if dst == src:
            continue
        sink = _kernel(src, dst, x.size)
        args = [np.zeros(x.size, _np(dst)), x]
        with np.errstate(all="ignore"):
            want = reference(sink, args)[0]
        (code,) = compile_amd_code([sink], arch)
        got = [a.copy() for a in args]
        emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
        bad = np.flatnonzero(~same(got[0], want))
        if bad.size:
            failures.append((dst, [(x[i], got[0][i], want[i]) for i in bad[:3]]))
    assert not failures, failures


_FORMATS = {"float32": (24, -126, 127), "float16": (11, -14, 15), "bfloat16": (8, -126, 127)}


def _round_once(v: Fraction, dst: str) -> float:
    """v rounded to nearest even in dst's value set (p significand bits, normal exponents
    emin…emax, subnormals below), as a float; beyond the overflow midpoint ±inf."""
    p, emin, emax = _FORMATS[dst]
    if v == 0:
        return 0.0
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e += 1 if Fraction(2) ** e <= a else 0
    e -= 1 if Fraction(2) ** (e - 1) > a else 0          # 2^(e-1) ≤ a < 2^e
    unit = Fraction(2) ** (max(e - 1, emin) - (p - 1))
    q, r = divmod(a / unit, 1)
    q = int(q) + (1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and int(q) % 2) else 0)
    out = q * unit
    if out >= Fraction(2) ** (emax + 1):
        return float("inf") if v > 0 else float("-inf")
    return float(out) if v > 0 else -float(out)


def _as_float(x: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bfloat16":
        return (x.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


@pytest.mark.parametrize("src,dst", [(s, d) for s in ("int64", "uint64", "int32", "uint32",
                                                      "float64", "float32")
                                     for d in ("float32", "float16", "bfloat16")
                                     if s != d])
def test_interpreter_narrowing_casts_round_once(src: str, dst: str) -> None:
    """The oracle itself: the interpreter's narrowing casts equal one exact rounding of the
    source value, computed here with fractions (independent of numpy's conversions)."""
    x = source_values(src)
    if x.dtype.kind == "f":
        x = x[np.isfinite(x)]
    sink = _kernel(src, dst, x.size - x.size % BLOCK)
    x = x[: x.size - x.size % BLOCK]
    with np.errstate(all="ignore"):
        got = _as_float(reference(sink, [np.zeros(x.size, _np(dst)), x])[0], dst)
    want = np.array([_round_once(Fraction(int(v)) if x.dtype.kind in "iu" else
                                 Fraction(float(v)), dst) for v in x])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(x[i], got[i], want[i]) for i in bad[:5]]


def _uniform_kernel(src: str, dst: str) -> UOp:
    """out[g] = CAST(p + g): a value the same in every lane (an SGPR) per workgroup g."""
    return parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dst}, {BLOCK})
%p = PARAM ParamArg(1, {src}, addrspace=ALU)
%g = SPECIAL({BLOCK}) "gidx0" : weakint
%gs = CAST(%g) {src}
%x = ADD(%p, %gs) : {src}
%r = CAST(%x) {dst}
%oi = INDEX(%o, %g)
%s = STORE(%oi, %r)
SINK(%s) KernelInfo(name="k")
""")


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_casts_of_uniform_integers_match_the_interpreter(arch: str) -> None:
    """≤ 32-bit integers the same in every lane live in SGPRs: their casts (from SALU
    registers) around the limits and the float16 overflow threshold."""
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    failures = []
    for src in ("int8", "uint8", "int16", "uint16", "int32", "uint32"):
        info = np.iinfo(_np(src))
        bases = {int(info.min), int(info.max) - BLOCK + 1, -BLOCK // 2, 65504 - BLOCK // 2,
                 (1 << 24) - BLOCK // 2}
        bases = [b for b in bases if info.min <= b and b + BLOCK - 1 <= info.max]
        for dst in DTYPES:
            if dst == src:
                continue
            sink = _uniform_kernel(src, dst)
            (code,) = compile_amd_code([sink], arch)
            for base in bases:
                args = [np.zeros(BLOCK, _np(dst)), _np(src).type(base)]
                want = reference(sink, args)[0]
                got = [args[0].copy(), args[1]]
                emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
                bad = np.flatnonzero(~same(got[0], want))
                if bad.size:
                    failures.append((src, dst, base, [(got[0][i], want[i]) for i in bad[:3]]))
    assert not failures, failures
