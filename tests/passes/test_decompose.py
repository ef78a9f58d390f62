"""Tests of decompose: transcendental accuracy against numpy long double, specials, THREEFRY
against the definition in UOP_FORMAT.md, half-precision lifting, bfloat16 casts, MAX, CDIV."""

from __future__ import annotations

import numpy as np
import pytest
from passes_support import eval_values, op, param, strong

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import toposort
from kcc.passes.decompose import decompose
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import X86_AVX2

F = {dtypes.float32: np.float32, dtypes.float64: np.float64}
SPECIALS = [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1.0, 2.0, 0.5, -3.5]


def ulps(got: np.ndarray, ref: np.ndarray, npdt: type) -> np.ndarray:
    """|got - ref| in units of the dtype's spacing at the correctly rounded ref."""
    with np.errstate(all="ignore"):
        r = ref.astype(npdt)
        sp = np.spacing(np.abs(r)).astype(np.longdouble)
        return np.abs(got.astype(np.longdouble) - ref) / sp


def run(o: Ops, dt, xs: np.ndarray) -> np.ndarray:
    x = param(0, dt)
    g = decompose(op(o, x), X86_AVX2)
    assert all(u.op not in (Ops.EXP2, Ops.LOG2, Ops.SIN) for u in toposort([g]))
    return eval_values(g, {0: xs})


def sweep(dt, lo: float, hi: float, n: int, seed: int) -> np.ndarray:
    rs = np.random.default_rng(seed)
    return np.concatenate([rs.uniform(lo, hi, n), np.linspace(lo, hi, n)]).astype(F[dt])


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_exp2_accuracy(dt) -> None:
    npdt = F[dt]
    lim = 160 if dt == dtypes.float32 else 1100
    xs = np.concatenate([sweep(dt, -lim, lim, 100_000, 1), sweep(dt, -1, 1, 50_000, 2)])
    with np.errstate(all="ignore"):
        ref = np.exp2(xs.astype(np.longdouble))
        got = run(Ops.EXP2, dt, xs)
        fin = np.isfinite(ref.astype(npdt))
    assert ulps(got[fin], ref[fin], npdt).max() <= 2.0
    assert np.array_equal(got[~fin], ref[~fin].astype(npdt))
    sp = run(Ops.EXP2, dt, np.array(SPECIALS, npdt))
    assert sp[3] == np.inf and sp[4] == 0.0 and np.isnan(sp[5])
    assert sp[0] == 1.0 and sp[7] == 4.0 and sp[1] == 1.0


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_log2_accuracy(dt) -> None:
    npdt = F[dt]
    rs = np.random.default_rng(3)
    info = np.finfo(npdt)
    e = rs.uniform(np.log2(float(info.smallest_subnormal)), np.log2(float(info.max)), 150_000)
    xs = np.concatenate([np.exp2(e), rs.uniform(0.5, 2.0, 100_000)]).astype(npdt)
    xs = xs[(xs > 0) & np.isfinite(xs)]
    ref = np.log2(xs.astype(np.longdouble))
    assert ulps(run(Ops.LOG2, dt, xs), ref, npdt).max() <= 2.0
    sp = run(Ops.LOG2, dt, np.array(SPECIALS, npdt))
    assert sp[0] == -np.inf and sp[1] == -np.inf and np.isnan(sp[2]) and sp[3] == np.inf
    assert np.isnan(sp[4]) and np.isnan(sp[5]) and sp[6] == 0.0 and sp[7] == 1.0
    sub = np.array([info.smallest_subnormal, info.smallest_normal], npdt)
    assert np.array_equal(run(Ops.LOG2, dt, sub), np.log2(sub.astype(np.longdouble)).astype(npdt))


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_sin_accuracy(dt) -> None:
    npdt = F[dt]
    xs = np.concatenate([sweep(dt, -10, 10, 100_000, 4), sweep(dt, -1e9, 1e9, 50_000, 5),
                         sweep(dt, -1e-6, 1e-6, 10_000, 6),
                         (np.arange(1, 20001) * np.pi / 2).astype(npdt)])
    ref = np.sin(xs.astype(np.longdouble))
    assert ulps(run(Ops.SIN, dt, xs), ref, npdt).max() <= 2.0
    sp = run(Ops.SIN, dt, np.array(SPECIALS, npdt))
    assert sp[0] == 0.0 and np.signbit(sp[1]) and np.isnan(sp[3]) and np.isnan(sp[4])
    assert np.isnan(sp[5])


def test_half_ops_lift_to_float32() -> None:
    h = dtypes.float16
    a, b = param(0, h), param(1, h)
    g = decompose(op(Ops.ADD, a, b), X86_AVX2)
    assert g.op is Ops.CAST and g.arg == h and g.src[0].dtype == dtypes.float32
    rs = np.random.default_rng(7)
    xa, xb = (rs.standard_normal(1000).astype(np.float16) for _ in range(2))
    want = (xa.astype(np.float32) + xb.astype(np.float32)).astype(np.float16)
    assert np.array_equal(eval_values(g, {0: xa, 1: xb}), want)
    e = decompose(op(Ops.EXP2, a), X86_AVX2)
    assert all(u.op is not Ops.EXP2 for u in toposort([e]))


def test_bfloat16_casts() -> None:
    x = param(0, dtypes.float32)
    g = decompose(op(Ops.CAST, op(Ops.CAST, x, arg=dtypes.bfloat16), arg=dtypes.float32),
                  X86_AVX2)
    xs = np.array([1.0, 1.00390625, 1.01171875, 3.0e38, -2.5, np.inf, np.nan, 1e-40,
                   1.0 + 2**-8 + 2**-20], np.float32)
    got = eval_values(g, {0: xs})
    # reference: round the float32 bit pattern to its top 16 bits, ties to even (numpy ints)
    b = xs.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    fin = ~np.isnan(xs)
    assert np.array_equal(got[fin], r[fin]) and np.isnan(got[~fin]).all()
    assert got[1] == 1.0 and got[2] == 1.015625


def test_max_reciprocal_cdiv() -> None:
    f = dtypes.float32
    a, b = param(0, f), param(1, f)
    g = decompose(op(Ops.MAX, a, b), CUDA)
    xa = np.array([np.nan, 1.0, -0.0, 0.0, 2.0], np.float32)
    xb = np.array([1.0, np.nan, 0.0, -0.0, 1.0], np.float32)
    got = eval_values(g, {0: xa, 1: xb})
    assert np.isnan(got[0]) and got[1] == 1.0 and np.signbit(got[2]) and not np.signbit(got[3])
    r = decompose(op(Ops.RECIPROCAL, a), X86_AVX2)
    assert r.op is Ops.FDIV
    i32 = dtypes.int32
    from kcc.passes.target import TargetDesc
    nodiv = TargetDesc("t", {}, {}, lambda o, d: o not in (Ops.CDIV, Ops.CMOD), "native", True)
    x, y = param(0, i32), param(1, i32)
    rs = np.random.default_rng(8)
    xi = rs.integers(-2**31, 2**31, 20000).astype(np.int32)
    yi = rs.integers(-2**31, 2**31, 20000).astype(np.int32)
    yi[:5000] = rs.integers(1, 50, 5000) * rs.choice([-1, 1], 5000)
    yi[yi == 0] = 1
    q = eval_values(decompose(op(Ops.CDIV, x, y), nodiv), {0: xi, 1: yi})
    m = eval_values(decompose(op(Ops.CMOD, x, y), nodiv), {0: xi, 1: yi})
    tq = np.array([int(a / b) if abs(a) < 2**52 else 0 for a, b in zip(xi.tolist(),
                                                                       yi.tolist())])
    tq = np.array([abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                   for a, b in zip(xi.tolist(), yi.tolist())])
    assert np.array_equal(q, tq) and np.array_equal(m, xi - tq * yi)


def _threefry_ref(x: int, key: int) -> int:
    """Threefry-2x32 (20 rounds) written from UOP_FORMAT.md with Python ints."""
    m = 0xFFFFFFFF
    x0, x1, k0, k1 = x & m, x >> 32, key & m, key >> 32
    ks = (k1, k0 ^ k1 ^ 0x1BD11BDA, k0)
    a, b = (x0 + ks[2]) & m, (x1 + ks[0]) & m
    for i in range(5):
        for r in ((13, 15, 26, 6) if i % 2 == 0 else (17, 29, 16, 24)):
            a = (a + b) & m
            b = a ^ (((b << r) | (b >> (32 - r))) & m)
        a = (a + ks[i % 3]) & m
        b = (b + ks[(i + 1) % 3] + i + 1) & m
    return (b << 32) | a


def test_threefry() -> None:
    u64 = dtypes.uint64
    x, k = param(0, u64), param(1, u64)
    g = decompose(op(Ops.THREEFRY, x, k), X86_AVX2)
    assert all(u.op is not Ops.THREEFRY for u in toposort([g]))
    rs = np.random.default_rng(9)
    xs = rs.integers(0, 2**64, 300, dtype=np.uint64)
    ks = rs.integers(0, 2**64, 300, dtype=np.uint64)
    got = eval_values(g, {0: xs, 1: ks})
    assert [int(v) for v in got] == [_threefry_ref(int(a), int(b)) for a, b in zip(xs, ks)]


def test_vector_exp2_stays_legal() -> None:
    from kcc.passes.devectorize import devectorize
    f = dtypes.float32
    buf = param(0, f, 16)
    from kcc.ir.ops import Ops as O
    v = op(O.LOAD, op(O.SHRINK, buf, strong(0, dtypes.int32), 8))
    st = op(O.STORE, op(O.SHRINK, buf, strong(8, dtypes.int32), 8), op(O.SIN, v))
    g = decompose(devectorize(st, X86_AVX2), X86_AVX2)
    for u in toposort([g]):
        if u.kind == "value" and u.shape != () and u.op not in (O.STACK, O.LOAD):
            dts = [u.src[0].dtype] if u.op in (O.CMPLT, O.CMPEQ, O.CMPNE) else [u.dtype]
            if u.op is O.CAST:
                dts.append(u.src[0].dtype)
            assert all(X86_AVX2.alu_legal(u.shape[0], d) for d in dts), u
