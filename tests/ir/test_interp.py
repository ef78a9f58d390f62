"""The reference interpreter's numerics (against exact rationals and integer bit tricks) and its
execution model (loop fallback, gates, errors), independent of any kcc target."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest

from kcc.ir import numerics as nm
from kcc.ir.dtype import dtypes
from kcc.ir.interp import InterpError, run
from kcc.ir.ops import Ops
from kcc.ir.rules import IRError
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp
from paths import DATA

RNG = np.random.default_rng(7)


def c(v):
    return UOp(Ops.CONST, (), v)


def param(slot, dt, size=None):
    if size is None:
        return UOp(Ops.PARAM, (), ParamArg(slot, dt, addrspace=AddrSpace.ALU))
    return UOp(Ops.PARAM, (), ParamArg(slot, dt, size))


def rng_(n, axis=0, *order):
    return UOp(Ops.RANGE, (c(n),) + order, (axis, AxisType.LOOP))


def ld(buf, i):
    return UOp(Ops.LOAD, (UOp(Ops.INDEX, (buf, i)),))


def st(buf, i, v, gate=None):
    return UOp(Ops.STORE, (UOp(Ops.INDEX, (buf, i)), v) + ((gate,) if gate is not None else ()))


def end(x, *r):
    return UOp(Ops.END, (x,) + r)


def sink(*x, name="k"):
    return UOp(Ops.SINK, x, KernelInfo(name))


# -- exact references ------------------------------------------------------------------------

def rn64(v: Fraction) -> float:
    """float64 nearest to v: CPython's Fraction -> float rounds correctly."""
    return float(v)


def rn32(v: Fraction) -> float:
    g = np.float32(float(v))
    cands = [g, np.nextafter(g, np.float32(np.inf)), np.nextafter(g, np.float32(-np.inf))]
    return float(min(cands, key=lambda x: (abs(Fraction(float(x)) - v),
                                           int(np.array(x).view(np.uint32)) & 1)))


def hard_fma_inputs(n: int, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Operands where a*b + c cancels or lands on/near a rounding tie."""
    dt = np.float32 if bits == 32 else np.float64
    a = (1 + RNG.integers(1, 1 << 20, n) * 2.0 ** -(bits // 2 - 4)).astype(dt)
    b = (1 + RNG.integers(1, 1 << 20, n) * 2.0 ** -(bits // 2 - 4)).astype(dt)
    b *= RNG.choice([-1, 1], n) * 2.0 ** RNG.integers(-30, 30, n)
    p = (a.astype(np.float64) * b).astype(dt)                 # the rounded product
    kind = RNG.integers(0, 4, n)
    eps = np.finfo(dt).eps
    cc = np.where(kind == 0, -p, np.where(kind == 1, -p * (1 + eps),
                  np.where(kind == 2, -p * (1 - eps / 2), RNG.standard_normal(n))))
    return a, b.astype(dt), cc.astype(dt)


def test_fma_float32_exact() -> None:
    a, b, cc = hard_fma_inputs(3000, 32)
    got = nm.fma(a, b, cc, dtypes.float32)
    want = [rn32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
            for x, y, z in zip(a, b, cc)]
    assert got.dtype == np.float32 and got.tolist() == want
    unfused = a * b + cc
    assert (unfused != got).sum() > 100        # the cases do tell fused from unfused


def test_fma_float64_exact_including_ties() -> None:
    a, b, cc = hard_fma_inputs(3000, 64)
    # exact ties: (1+2^-30)(1+2^-23) - (2^-23 + 2^-30) = 1 + 2^-53, plus a sticky bit below it
    a = np.concatenate([a, [1 + 2.0 ** -30] * 3, [3.0, 0.0, -0.0, np.inf, 1e300, 1e-300]])
    b = np.concatenate([b, [1 + 2.0 ** -23] * 3, [5.0, -1.0, 2.0, 0.0, 1e300, 1e-300]])
    cc = np.concatenate([cc, [-(2.0 ** -23 + 2.0 ** -30), -(2.0 ** -23 + 2.0 ** -30) + 2.0 ** -70,
                              -(2.0 ** -23 + 2.0 ** -30) - 2.0 ** -70],
                         [-15.0, -0.0, -0.0, 1.0, -1e308, 1e-310]])
    got = nm.fma(a, b, cc, dtypes.float64)
    for k, (x, y, z) in enumerate(zip(a, b, cc)):
        if not (np.isfinite(x) and np.isfinite(y)):
            assert np.isnan(got[k])            # inf * 0
            continue
        v = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        if abs(v) >= Fraction(2) ** 1024:
            want = float("inf") if v > 0 else float("-inf")
        else:
            want = rn64(v) if v != 0 else (-0.0 if (x * y == 0 and np.signbit(x * y)
                                                    and np.signbit(z)) else 0.0)
        assert struct.pack("<d", got[k]) == struct.pack("<d", want), (k, x, y, z)
    assert got[-9] == 1.0 and got[-8] == 1 + 2.0 ** -52 and got[-7] == 1.0
    assert np.signbit(got[-5]) and got[-6] == 0 and not np.signbit(got[-6])


def _fma_special(a: float, b: float, c: float) -> float:
    """IEEE 754 fusedMultiplyAdd for operands at least one of which is not finite, by the
    standard's rules (a NaN result is any NaN)."""
    if np.isnan(a) or np.isnan(b) or np.isnan(c):
        return float("nan")
    if np.isinf(a) or np.isinf(b):
        if a == 0 or b == 0:
            return float("nan")                       # 0 * inf
        p = float("-inf") if np.signbit(a) != np.signbit(b) else float("inf")
        return float("nan") if np.isinf(c) and np.signbit(c) != np.signbit(p) else p
    return c                                          # a finite exact product plus ±inf


def test_fma_float64_infinite_addend_with_a_finite_product() -> None:
    """fma(1e300, 1e300, -inf) is -inf: the exact product is finite. The interpreter gave NaN
    (it rounded the product to inf first), found by scripts/fuzz_amd.py --seed 8 (kernel 203:
    MULACC(x, x, x * (x * -2.5)) at x = 1e300, where both AMD arches gave -inf)."""
    edge = [0.0, -0.0, 1.0, -2.5, 1e300, -1e300, np.finfo(np.float64).max, 5e-324,
            np.inf, -np.inf, np.nan]
    trip = [(x, y, z) for x in edge for y in edge for z in edge
            if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z))]
    a, b, cc = (np.array(v, np.float64) for v in zip(*trip))
    with np.errstate(all="ignore"):                # (the vector path's overflows)
        got = nm.fma(a, b, cc, dtypes.float64)
    for k, (x, y, z) in enumerate(trip):
        want = _fma_special(x, y, z)
        assert (np.isnan(got[k]) and np.isnan(want)) or \
            struct.pack("<d", got[k]) == struct.pack("<d", want), (x, y, z, got[k])
    with np.errstate(all="ignore"):
        assert nm.fma(np.array([1e300]), np.array([1e300]), np.array([-np.inf]),
                      dtypes.float64)[0] == -np.inf


def bf16_trick(f: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits by integer rounding (the usual round-to-nearest-even trick)."""
    u = f.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), ((u >> 16) | 0x40).astype(np.uint16), r)


def test_bf16_rounding_matches_integer_trick() -> None:
    bits = RNG.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    bits[:6] = [0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00008000, 0x7FA00001, 0xFF800000]
    f = bits.view(np.float32)
    got = nm.bf16_from_f64(f.astype(np.float64))
    assert np.array_equal(got, bf16_trick(f))
    assert got[:6].tolist() == [0x3F80, 0x3F82, 0x7F80, 0x0000, 0x7FE0, 0xFF80]


@pytest.mark.parametrize("dst,fn", [("float32", rn32), ("float64", rn64)])
def test_int_to_float_rounds_once(dst: str, fn) -> None:
    vals = np.concatenate([RNG.integers(-2**63, 2**63 - 1, 2000, dtype=np.int64),
                           np.array([2**53 + 1, 2**24 + 1, -(2**63), 2**63 - 1,
                                     (1 << 62) + (1 << 38) + 1], np.int64)])
    got = nm.cast(vals, dtypes.int64, dtypes.by_name(dst))
    assert got.tolist() == [fn(Fraction(int(v))) for v in vals]
    u = np.array([2**64 - 1, 2**63 + 2**39 + 1, 12345], np.uint64)
    got = nm.cast(u, dtypes.uint64, dtypes.by_name(dst))
    assert got.tolist() == [fn(Fraction(int(v))) for v in u]


def test_float_to_int_saturates_and_nan_is_zero() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, -0.9, 2.9, -2.9, 2147483520.0],
                 np.float32)
    got = nm.cast(x, dtypes.float32, dtypes.int32).tolist()
    assert got == [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 0, 2, -2, 2147483520]
    assert nm.cast(x, dtypes.float32, dtypes.uint8).tolist() == [0, 255, 0, 255, 0, 0, 2, 0,
                                                                  255]
    big = np.array([2.0 ** 64, 2.0 ** 63, -1.0])
    assert nm.cast(big, dtypes.float64, dtypes.uint64).tolist() == [2**64 - 1, 2**63, 0]
    assert nm.cast(big, dtypes.float64, dtypes.int64).tolist() == [2**63 - 1, 2**63 - 1, -1]


# -- execution model -------------------------------------------------------------------------

def test_prefix_sum_through_global_memory_runs_in_order() -> None:
    """out[i+1] = out[i] + x[i]: each iteration reads the previous one's store."""
    out, x = param(0, dtypes.int32, 65), param(1, dtypes.int32, 64)
    i = rng_(64)
    s = st(out, UOp(Ops.ADD, (i, c(1))), UOp(Ops.ADD, (ld(out, i), ld(x, i))))
    k = sink(end(s, i))
    xv = RNG.integers(-100, 100, 64).astype(np.int32)
    o = np.zeros(65, np.int32)
    o[0] = 5
    run(k, [o, xv])
    assert o.tolist() == [5] + (5 + np.cumsum(xv)).tolist()


def test_two_stores_same_element_last_iteration_wins() -> None:
    """out[i] = 1 and out[i+1] = 2 for i < 8: sequentially out[1..8] end as 2 … then 1."""
    out = param(0, dtypes.int32, 9)
    i = rng_(8)
    s1 = st(out, i, UOp(Ops.CAST, (c(1),), dtypes.int32))
    s2 = st(out, UOp(Ops.ADD, (i, c(1))), UOp(Ops.CAST, (c(2),), dtypes.int32))
    o = np.zeros(9, np.int32)
    run(sink(end(UOp(Ops.GROUP, (s1, s2)), i)), [o])
    assert o.tolist() == [1] * 8 + [2]


def test_reg_accumulator_carried_across_rows() -> None:
    """A REG value never re-initialised inside the outer loop carries across its iterations."""
    out, x = param(0, dtypes.float32, 4), param(1, dtypes.float32, 16)
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, 1, addrspace=AddrSpace.REG))
    init = st(acc, c(0), c(0.0))
    r = rng_(4, 0, init)
    j = rng_(4, 1, r)
    a_j = UOp(Ops.AFTER, (acc, init, j))
    upd = st(a_j, c(0), UOp(Ops.ADD, (ld(a_j, c(0)), ld(x, UOp(Ops.ADD, (UOp(
        Ops.MUL, (r, c(4))), j))))))
    a_r = UOp(Ops.AFTER, (acc, end(upd, j)))
    k = sink(end(st(out, r, ld(a_r, c(0))), r))
    xv = np.arange(16, dtype=np.float32)
    o = np.zeros(4, np.float32)
    run(k, [o, xv])
    assert o.tolist() == np.cumsum(xv).reshape(4, 4)[:, -1].tolist()


def test_gate_false_touches_nothing_and_true_gate_oob_is_an_error() -> None:
    out, x = param(0, dtypes.int32, 4), param(1, dtypes.int32, 4)
    i = rng_(4)
    far = UOp(Ops.ADD, (i, c(1000)))
    g = UOp(Ops.CMPLT, (i, c(2)))
    v = UOp(Ops.LOAD, (UOp(Ops.INDEX, (x, far)), UOp(Ops.CAST, (c(7),), dtypes.int32),
                       UOp(Ops.CMPLT, (i, c(0)))))
    ok = sink(end(st(out, i, v, g), i), name="ok")
    o = np.full(4, -1, np.int32)
    run(ok, [o, np.zeros(4, np.int32)])
    assert o.tolist() == [7, 7, -1, -1]
    bad = sink(end(st(out, i, ld(x, UOp(Ops.ADD, (i, c(1))))), i), name="bad")
    with pytest.raises(InterpError, match=r"LOAD out of bounds: element 4 of PARAM slot 1"):
        run(bad, [o, np.zeros(4, np.int32)])


def test_argument_errors_are_clear() -> None:
    out, a = param(0, dtypes.float32, 4), param(1, dtypes.int8)
    i = rng_(4)
    k = sink(end(st(out, i, UOp(Ops.CAST, (a,), dtypes.float32)), i))
    with pytest.raises(InterpError, match="takes 2 arguments"):
        run(k, [np.zeros(4, np.float32)])
    with pytest.raises(InterpError, match="dtype float64, expected float32"):
        run(k, [np.zeros(4), 1])
    with pytest.raises(InterpError, match="5 elements, expected 4"):
        run(k, [np.zeros(5, np.float32), 1])
    with pytest.raises(InterpError, match="int8 scalar; got 300"):
        run(k, [np.zeros(4, np.float32), 300])
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(InterpError, match="read-only"):
        run(k, [ro, 1])
    with pytest.raises(IRError):
        run(sink(UOp(Ops.ADD, (c(1), c(True)))), [])


def test_noncontiguous_buffer_is_written_back_and_shape_is_free() -> None:
    out, x = param(0, dtypes.float64, 4), param(1, dtypes.float64, 4)
    i = rng_(4)
    k = sink(end(st(out, i, UOp(Ops.NEG, (ld(x, i),))), i))
    big = np.zeros((4, 2))
    view = big[:, 0]
    run(k, [view, np.arange(4.0).reshape(2, 2)])
    assert big[:, 0].tolist() == [-0.0, -1.0, -2.0, -3.0] and np.signbit(big[0, 0])


def test_weak_float_expression_rounds_once_where_it_meets_float32() -> None:
    out = param(0, dtypes.float32, 1)
    v = UOp(Ops.ADD, (c(0.1), c(0.2)))                      # weakfloat: float64 arithmetic
    o = np.zeros(1, np.float32)
    run(sink(st(out, c(0), v)), [o])
    assert o[0] == np.float32(0.1 + 0.2)


def test_store_without_end_runs_its_loop_and_long_chains_do_not_recurse() -> None:
    out = param(0, dtypes.int64, 8)
    i = rng_(8)
    v = UOp(Ops.CAST, (i,), dtypes.int64)
    for _ in range(20_000):
        v = UOp(Ops.ADD, (v, c(1)))
    o = np.zeros(8, np.int64)
    run(sink(st(out, i, v)), [o])
    assert o.tolist() == [k + 20_000 for k in range(8)]


def test_nested_loops_vectorize_and_match_sequential_semantics() -> None:
    """A 2-level loop writing every element once gives the same as the numpy expression."""
    out, x = param(0, dtypes.float32, 600), param(1, dtypes.float32, 600)
    i, j = rng_(20, 0), rng_(30, 1)
    n = UOp(Ops.ADD, (UOp(Ops.MUL, (i, c(30))), j))
    v = UOp(Ops.MULACC, (ld(x, n), UOp(Ops.CAST, (j,), dtypes.float32), c(0.5)))
    o = np.zeros(600, np.float32)
    xv = RNG.standard_normal(600).astype(np.float32)
    run(sink(end(end(st(out, n, v), j), i)), [o, xv])
    want = nm.fma(xv, np.tile(np.arange(30, dtype=np.float32), 20), np.float32(0.5),
                  dtypes.float32)
    assert o.tobytes() == want.tobytes()


def test_bitcast_of_one_lane_under_a_stack() -> None:
    """A scalar BITCAST (a 0-d value) keeps its shape: tinygrad's float16 rand kernel stacks it
    into a vector store (reduced to tests/data/tinygrad_repro/interp_bitcast_stack.uop)."""

    from kcc.frontend.parser import parse
    path = DATA / "tinygrad_repro" / "interp_bitcast_stack.uop"
    o, x = np.zeros(4, np.float32), np.array([0x3FC00000], np.uint32)
    run(parse(path.read_text(), str(path)), [o, x])
    assert o.tobytes() == np.full(4, 1.5, np.float32).tobytes()
