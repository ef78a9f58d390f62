"""kcc/passes/division.py (correctly rounded float32 FDIV/SQRT and ≤ 32-bit CDIV/CMOD from
float64 approximations) run on x86 with those ops marked non-native, checked bit for bit
against the reference interpreter on edge values: zeros, subnormals, ties in the subnormal
range, the overflow threshold, infinities, NaN, exact and inexact integer quotients."""

from __future__ import annotations


import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.dtype import dtypes
from x86_util import reference, run_lacking

_LACKS = {(Ops.FDIV, dtypes.float32), (Ops.SQRT, dtypes.float32), (Ops.FDIV, dtypes.float64),
          (Ops.CDIV, None), (Ops.CMOD, None), (Ops.CAST, dtypes.int64),
          (Ops.CAST, dtypes.uint64), (Ops.CAST, dtypes.float64)}


def _run(sink: UOp, args: list) -> list:
    return run_lacking(sink, args, _LACKS)


def _binary(op: str, dt: str, n: int) -> UOp:
    return parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {n})
%a = PARAM ParamArg(1, {dt}, {n})
%b = PARAM ParamArg(2, {dt}, {n})
%i = RANGE({n}) (0, LOOP) : weakint
%ai = INDEX(%a, %i)
%bi = INDEX(%b, %i)
%oi = INDEX(%o, %i)
%x = LOAD(%ai) : {dt}
%y = LOAD(%bi) : {dt}
%r = {op}(%x, %y) : {dt}
%s = STORE(%oi, %r)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")


def _f32_edges() -> np.ndarray:
    tiny = np.float32(1.4e-45)
    vals = [0.0, -0.0, 1.0, -1.0, 3.0, 7.0, 0.1, 1.5, 2.0 ** -126, 2.0 ** -149, 3 * 2.0 ** -149,
            2.0 ** -127, 3.4028235e38, 1.7014118e38, 2.0 ** 127, 1.0000001, 0.99999994,
            np.inf, -np.inf, np.nan, 16777215.0, 16777217.0, 1e-30, 1e30, 5 * tiny]
    return np.array(vals, np.float32)


def _bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(got) & np.isnan(want)
    bad = ~nan & (got.view(np.uint32) != want.view(np.uint32))
    assert not bad.any(), [(i, got[i], want[i]) for i in np.flatnonzero(bad)[:5]]


def test_fdiv32_edges_and_random_bit_exact() -> None:
    e = _f32_edges()
    a = np.repeat(e, e.size)
    b = np.tile(e, e.size)
    rng = np.random.default_rng(1)
    ra = rng.integers(0, 2 ** 32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    rb = rng.integers(0, 2 ** 32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    # ties: odd multiples of half the smallest subnormal, quotients of small integers
    ta = (np.arange(1, 200, 2, dtype=np.float32) * np.float32(2.0 ** -149))
    tb = np.full(ta.size, 2.0, np.float32)
    a = np.concatenate([a, ra, ta, np.float32(rng.standard_normal(2000))])
    b = np.concatenate([b, rb, tb, np.float32(rng.standard_normal(2000))])
    sink = _binary("FDIV", "float32", a.size)
    args = [np.zeros(a.size, np.float32), a, b]
    with np.errstate(all="ignore"):
        _bits_equal(_run(sink, args)[0], reference(sink, args)[0])


def test_sqrt32_edges_and_random_bit_exact() -> None:
    rng = np.random.default_rng(2)
    x = np.concatenate([_f32_edges(),
                        rng.integers(0, 2 ** 32, 6000, dtype=np.uint64).astype(np.uint32)
                        .view(np.float32),
                        np.float32(np.arange(1, 3000) ** 2), np.float32([2.0 ** -149] * 3)])
    n = x.size
    sink = parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {n})
%a = PARAM ParamArg(1, float32, {n})
%i = RANGE({n}) (0, LOOP) : weakint
%ai = INDEX(%a, %i)
%oi = INDEX(%o, %i)
%x = LOAD(%ai) : float32
%r = SQRT(%x) : float32
%s = STORE(%oi, %r)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")
    args = [np.zeros(n, np.float32), x]
    with np.errstate(all="ignore"):
        _bits_equal(_run(sink, args)[0], reference(sink, args)[0])


def _int_edges(dt: np.dtype) -> np.ndarray:
    info = np.iinfo(dt)
    v = {0, 1, 2, 3, 7, 10, 100, info.max, info.max - 1, info.max // 2, info.max // 3}
    if info.min < 0:
        v |= {info.min, info.min + 1, -1, -2, -3, -7, -10, info.min // 2}
    return np.array(sorted(v), dt)


@pytest.mark.parametrize("dt", ["int32", "uint32", "int8", "uint16"])
@pytest.mark.parametrize("op", ["CDIV", "CMOD"])
def test_cdiv_cmod_edges_and_random_exact(dt: str, op: str) -> None:
    e = _int_edges(np.dtype(dt))
    a, b = np.repeat(e, e.size), np.tile(e, e.size)
    info = np.iinfo(np.dtype(dt))
    rng = np.random.default_rng(3)
    ra = rng.integers(info.min, info.max, 3000, endpoint=True).astype(dt)
    rb = rng.integers(info.min, info.max, 3000, endpoint=True).astype(dt)
    # exact quotients (the case the correction step is for), and small divisors
    q = rng.integers(1, 1 << min(info.bits - 1, 15), 2000).astype(dt)
    d = rng.integers(1, 1 << min(info.bits - 1, 15), 2000).astype(dt)
    a = np.concatenate([a, ra, (q.astype(np.int64) * d % (int(info.max) + 1)).astype(dt)])
    b = np.concatenate([b, rb, d])
    keep = b != 0                       # division by zero is unspecified
    if info.min < 0:
        keep &= ~((a == info.min) & (b == -1))   # so is INT_MIN / -1
    a, b = a[keep], b[keep]
    sink = _binary(op, dt, a.size)
    args = [np.zeros(a.size, dt), a, b]
    got, want = _run(sink, args)[0], reference(sink, args)[0]
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(a[i], b[i], got[i], want[i]) for i in bad[:5]]


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint64", "uint16"])
@pytest.mark.parametrize("op", ["CDIV", "CMOD"])
def test_division_by_a_power_of_two_any_width(dt: str, op: str) -> None:
    info = np.iinfo(np.dtype(dt))
    e = _int_edges(np.dtype(dt))
    rng = np.random.default_rng(4)
    r = rng.integers(0, 2 ** 64, 500, dtype=np.uint64).view(np.int64).astype(dt)
    a = np.concatenate([e, r])
    divisors = [1, 2, 8, 1 << (info.bits - 2)] + ([-1, -2, -16] if info.min < 0 else [])
    for d in divisors:
        n = a.size
        sink = parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {n})
%a = PARAM ParamArg(1, {dt}, {n})
%i = RANGE({n}) (0, LOOP) : weakint
%ai = INDEX(%a, %i)
%oi = INDEX(%o, %i)
%x = LOAD(%ai) : {dt}
%c = CAST({d}) {dt}
%r = {op}(%x, %c) : {dt}
%s = STORE(%oi, %r)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")
        keep = ~((a == info.min) & (d == -1)) if info.min < 0 else np.ones(n, bool)
        args = [np.zeros(n, dt), a]
        got, want = _run(sink, args)[0], reference(sink, args)[0]
        bad = np.flatnonzero((got != want) & keep)
        assert bad.size == 0, (d, [(a[i], got[i], want[i]) for i in bad[:5]])


@pytest.mark.parametrize("src,dst", [("int64", "float32"), ("uint64", "float32"),
                                     ("int64", "float16"), ("float64", "float16")])
def test_round_to_odd_casts_round_once(src: str, dst: str) -> None:
    rng = np.random.default_rng(5)
    if src == "float64":
        x = np.concatenate([rng.standard_normal(3000) * 1e4, rng.standard_normal(3000) * 1e-6,
                            np.float64([65520.0, 65519.99, 2.0 ** -25, 2.0 ** -24 * 1.5,
                                        np.inf, -np.inf, np.nan, 0.0, -0.0, 1e300]),
                            (np.float16(rng.standard_normal(2000)).astype(np.float64)
                             + 2.0 ** -12 * rng.integers(-2, 3, 2000))])
    else:
        base = rng.integers(0, 2 ** 64, 5000, dtype=np.uint64)
        ties = (rng.integers(1, 2 ** 24, 2000, dtype=np.uint64) << np.uint64(39)) | \
            (np.uint64(1) << np.uint64(38))                       # exact midpoints of float32
        near = ties + rng.integers(0, 3, 2000).astype(np.uint64) - np.uint64(1)
        x = np.concatenate([base, ties, near, np.uint64([0, 1, 2 ** 63, 2 ** 64 - 1,
                                                         2 ** 24 + 1, 65520, 65519])])
        x = x.astype(np.int64).astype(src) if src == "int64" else x
    n = x.size
    sink = parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dst}, {n})
%a = PARAM ParamArg(1, {src}, {n})
%i = RANGE({n}) (0, LOOP) : weakint
%ai = INDEX(%a, %i)
%oi = INDEX(%o, %i)
%x = LOAD(%ai) : {src}
%r = CAST(%x) {dst}
%s = STORE(%oi, %r)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")
    args = [np.zeros(n, dst), x.astype(src)]
    got, want = _run(sink, args)[0], reference(sink, args)[0]
    u = f"u{got.itemsize}"
    bad = np.flatnonzero((got.view(u) != want.view(u)) & ~(np.isnan(got) & np.isnan(want)))
    assert bad.size == 0, [(x[i], got[i], want[i]) for i in bad[:5]]
