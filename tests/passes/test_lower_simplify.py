"""Tests of weak-dtype lowering, value ranges and simplify (kcc/passes)."""

from __future__ import annotations

import numpy as np
import pytest
from passes_support import eval_values, op, param, rng, sink, strong

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, ParamArg, UOp, toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.ir.ranges import int_ranges
from kcc.ir.pattern import graph_rewrite
from kcc.passes.simplify import SIMPLIFY, simplify
from kcc.targets.x86.arch import X86_AVX2


def weak_left(root: UOp) -> list[UOp]:
    """Weak value nodes other than CONST operands of CAST / static CONST operands."""
    out = []
    for u in toposort([root]):
        for i, s in enumerate(u.src):
            if s.kind == "value" and s.dtype.is_weak and s.op is not Ops.CONST:
                out.append(s)
    return out


def pad_graph() -> UOp:
    out, x = param(0, dtypes.int32, 10), param(1, dtypes.int32, 7)
    i = rng(10, 0)
    v = op(Ops.LOAD, op(Ops.INDEX, x, op(Ops.SUB, i, 3)), strong(0, dtypes.int32),
           op(Ops.CMPLT, 2, i))
    return sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), v), i))


def test_pad_lowers_to_int32() -> None:
    s = lower_weak_dtypes(pad_graph(), X86_AVX2)
    assert weak_left(s) == []
    for u in toposort([s]):
        if u.op in (Ops.RANGE, Ops.SUB, Ops.CMPLT):
            assert u.dtype in (dtypes.int32, dtypes.bool)
        if u.op is Ops.CONST and not isinstance(u.arg, bool):
            # every literal is the CONST of a strong constant CAST(CONST v) dtype
            assert any(p.op is Ops.CAST for p in toposort([s]) if u in p.src)


def test_wide_index_goes_int64() -> None:
    y = param(0, dtypes.float32, 8)
    g = op(Ops.SPECIAL, 8, arg="gidx0")
    big = op(Ops.MUL, g, 1 << 40)
    idx = op(Ops.CDIV, big, 1 << 40)          # fits int32, but the intermediate does not
    s = lower_weak_dtypes(sink(op(Ops.STORE, op(Ops.INDEX, y, idx), 1.5)))
    muls = [u for u in toposort([s]) if u.op is Ops.MUL]
    assert muls[0].dtype == dtypes.int64
    assert [u for u in toposort([s]) if u.op is Ops.CDIV][0].dtype == dtypes.int64
    assert [u for u in toposort([s]) if u.op is Ops.SPECIAL][0].dtype == dtypes.int32
    assert weak_left(s) == []


def test_weak_only_where_resolves_by_place() -> None:
    out = param(0, dtypes.int8, 4)
    c = param(1, dtypes.int32)
    w = op(Ops.WHERE, op(Ops.CMPLT, c, strong(3, dtypes.int32)), 1, 2)
    s = lower_weak_dtypes(sink(op(Ops.STORE, op(Ops.INDEX, out, 0), w)))
    wh = [u for u in toposort([s]) if u.op is Ops.WHERE][0]
    assert wh.dtype == dtypes.int8 and weak_left(s) == []


def test_weakfloat_is_computed_in_float64_and_cast_once_per_use() -> None:
    """docs/semantics.md: a weak float expression is computed in float64 and rounded once to
    the dtype it meets (float16 here), never computed in that dtype."""
    a, b = param(0, dtypes.float16, 2), param(1, dtypes.float64, 2)
    half = op(Ops.ADD, 1.0, 0.5)
    s1 = op(Ops.STORE, op(Ops.INDEX, a, 0), op(Ops.MUL, op(Ops.LOAD, op(Ops.INDEX, a, 1)), half))
    s2 = op(Ops.STORE, op(Ops.INDEX, b, 0), half)
    s = lower_weak_dtypes(sink(s1, s2))
    nodes = toposort([s])
    adds = [u for u in nodes if u.op is Ops.ADD]
    assert [u.dtype for u in adds] == [dtypes.float64]
    assert any(u.op is Ops.CAST and u.dtype == dtypes.float16 and u.src[0] is adds[0]
               for u in nodes)
    assert weak_left(s) == []


def test_weakint_beside_float_is_exact_then_cast() -> None:
    y = param(0, dtypes.float32, 16)
    i = rng(16, 0)
    v = op(Ops.ADD, op(Ops.LOAD, op(Ops.INDEX, y, i)), i)
    s = lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, y, i), v), i)))
    casts = [u for u in toposort([s]) if u.op is Ops.CAST and u.src[0].op is Ops.RANGE]
    assert casts and casts[0].dtype == dtypes.float32 and weak_left(s) == []


def test_ranges() -> None:
    i = rng(10, 0)
    p = UOp(Ops.PARAM, (), ParamArg(1, dtypes.int32, vmin_vmax=(-5, 5), addrspace=AddrSpace.ALU))
    e = op(Ops.ADD, op(Ops.MUL, i, 3), p)
    m = op(Ops.CMOD, e, 4)
    r = int_ranges([m])
    assert r[i] == (0, 9) and r[e] == (-5, 32) and r[m] == (-3, 3)
    # a strong int8 op that may wrap has the whole int8 range
    w = op(Ops.ADD, strong(120, dtypes.int8), op(Ops.CAST, i, arg=dtypes.int8))
    assert int_ranges([w])[w] == (-128, 127)


# -- simplify -----------------------------------------------------------------------------------

def test_fold_and_identities() -> None:
    x = param(0, dtypes.int32)
    f = param(1, dtypes.float32)
    i32 = dtypes.int32
    e = op(Ops.ADD, op(Ops.MUL, op(Ops.ADD, x, strong(0, i32)), strong(1, i32)),
           op(Ops.MUL, strong(6, i32), strong(7, i32)))
    s = simplify(e)
    assert s.op is Ops.ADD and s.src[0] is x and s.src[1] is strong(42, i32)
    # float x + 0.0 is not x (-0.0 + 0.0 is +0.0), but x * 1.0 is
    fz = op(Ops.ADD, f, strong(0.0, dtypes.float32))
    assert simplify(fz) is fz
    assert simplify(op(Ops.MUL, f, strong(1.0, dtypes.float32))) is f
    # wrapping int8 fold, float32 rounding fold
    assert simplify(op(Ops.ADD, strong(100, dtypes.int8), strong(100, dtypes.int8))) is \
        strong(-56, dtypes.int8)
    tenth = simplify(op(Ops.ADD, strong(0.1, dtypes.float32), strong(0.2, dtypes.float32)))
    assert tenth.src[0].arg == float(np.float32(0.1) + np.float32(0.2))
    # C division truncates; division by zero is not folded
    assert simplify(op(Ops.CDIV, strong(-7, i32), strong(2, i32))) is strong(-3, i32)
    assert simplify(op(Ops.CMOD, strong(-7, i32), strong(2, i32))) is strong(-1, i32)
    dz = op(Ops.CDIV, strong(1, i32), strong(0, i32))
    assert simplify(dz) is dz
    # MAX with NaN follows a < b ? b : a
    nanmax = simplify(op(Ops.MAX, strong(float("nan"), dtypes.float32),
                         strong(1.0, dtypes.float32)))
    assert np.isnan(nanmax.src[0].arg)


def test_mulacc_with_a_zero_factor_folds_for_integers_only() -> None:
    i32, f32 = dtypes.int32, dtypes.float32
    x, y, z = param(0, i32), param(1, i32), param(2, i32)
    def slot(u: UOp) -> int:
        assert u.op is Ops.PARAM
        return u.arg.slot
    assert slot(simplify(op(Ops.MULACC, x, strong(0, i32), z))) == 2
    assert slot(simplify(op(Ops.MULACC, strong(0, i32), y, z))) == 2
    # a zero addend stays (lane 0 of a run MULACC(i, 4, k): slp_index.lane_offset)
    m = simplify(op(Ops.MULACC, x, y, strong(0, i32)))
    assert m.op is Ops.MULACC
    assert [slot(s) for s in m.src[:2]] == [0, 1]
    # a float MULACC keeps its zero factor: 0 * inf is nan, not the addend
    f, g = param(3, f32), param(4, f32)
    fe = op(Ops.MULACC, f, strong(0.0, f32), g)
    assert simplify(fe) is fe


def test_index_arith_and_idempotent() -> None:
    i32 = dtypes.int32
    x = param(0, i32)
    e = op(Ops.ADD, op(Ops.MUL, op(Ops.ADD, x, strong(3, i32)), strong(4, i32)), strong(5, i32))
    s = simplify(e)
    # (x+3)*4+5 → x*4 + 17
    assert s.op is Ops.ADD and s.src[1] is strong(17, i32)
    assert s.src[0].op is Ops.MUL and s.src[0].src == (x, strong(4, i32))
    assert simplify(s) is s
    xs = np.array([0, 1, -5, 2**31 - 1, -2**31, 123456789], np.int32)
    assert np.array_equal(eval_values(e, {0: xs}), eval_values(s, {0: xs}))


def test_cast_chains() -> None:
    x = param(0, dtypes.int16)
    up = op(Ops.CAST, op(Ops.CAST, x, arg=dtypes.int32), arg=dtypes.int64)
    assert simplify(up).src[0] is x
    back = op(Ops.CAST, op(Ops.CAST, x, arg=dtypes.float32), arg=dtypes.int16)
    assert simplify(back) is x
    # int32 → float32 is not exact, so the chain stays
    y = param(1, dtypes.int32)
    lossy = op(Ops.CAST, op(Ops.CAST, y, arg=dtypes.float32), arg=dtypes.int32)
    assert simplify(lossy) is lossy
    # int → float → narrower int is not integer wrapping: kept
    keep = op(Ops.CAST, op(Ops.CAST, x, arg=dtypes.float32), arg=dtypes.int8)
    assert simplify(keep) is keep


@pytest.mark.parametrize("d0,d1", [(dtypes.uint32, dtypes.uint16), (dtypes.int32, dtypes.uint8),
                                   (dtypes.int64, dtypes.uint32), (dtypes.int16, dtypes.uint8)])
def test_zero_extend_chain_is_and(d0, d1) -> None:
    """CAST(CAST(v, narrower unsigned), v's dtype) → v AND mask (simplify.zext_chain), equal to
    numpy's narrowing and widening on values of every sign and size; a signed middle dtype
    (a sign extension) or a different final dtype keeps the chain."""
    x = param(0, d0)
    chain = op(Ops.CAST, op(Ops.CAST, x, arg=d1), arg=d0)
    s = simplify(chain)
    assert s.op is Ops.AND and s.src[0] is x
    rs = np.random.default_rng(1)
    info = np.iinfo(d0.np)
    v = np.concatenate([rs.integers(info.min, info.max, 400, endpoint=True, dtype=d0.np),
                        np.array([info.min, info.max, 0, -1 if info.min else 1], d0.np)])
    assert np.array_equal(eval_values(s, {0: v}), v.astype(d1.np).astype(d0.np))
    signed = op(Ops.CAST, op(Ops.CAST, x, arg=dtypes.int8), arg=d0)
    assert simplify(signed) is signed
    other = op(Ops.CAST, op(Ops.CAST, x, arg=d1), arg=dtypes.float32)
    assert simplify(other).op is Ops.CAST


@pytest.mark.parametrize("dt", [dtypes.uint32, dtypes.uint16, dtypes.uint64])
@pytest.mark.parametrize("c", [1, 7, 16])
def test_shift_down_and_back_is_and(dt, c) -> None:
    """SHL(SHR(v, c), c) and SHL(AND(SHR(v, c), m), c) → v AND mask (simplify.shift_back), equal
    to numpy's shifts on values of every size; signed v keeps its shifts."""
    if c >= dt.bits:
        pytest.skip("shift wider than the dtype")
    x = param(0, dt)
    rs = np.random.default_rng(c)
    info = np.iinfo(dt.np)
    v = np.concatenate([rs.integers(0, info.max, 300, endpoint=True, dtype=dt.np),
                        np.array([0, info.max, 1 << (dt.bits - 1)], dt.np)])
    for m in (None, 0xFFFF, 0x5A5A, 1):
        inner = op(Ops.SHR, x, strong(c, dt))
        if m is not None:
            inner = op(Ops.AND, inner, strong(m, dt))
        e = op(Ops.SHL, inner, strong(c, dt))
        s = simplify(e)
        assert s.op is Ops.AND and s.src[0] is x
        assert np.array_equal(eval_values(s, {0: v}), eval_values(e, {0: v}))
    y = param(1, dtypes.int32)
    signed = op(Ops.SHL, op(Ops.SHR, y, strong(3, dtypes.int32)), strong(3, dtypes.int32))
    assert simplify(signed).op is Ops.SHL


def _random_expr(rs: np.random.Generator, leaves: list[UOp], n: int) -> UOp:
    i32 = dtypes.int32
    nodes = list(leaves) + [strong(int(v), i32) for v in rs.integers(-4, 5, 4)]
    for _ in range(n):
        o = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.AND, Ops.XOR][rs.integers(6)]
        a, b = nodes[rs.integers(len(nodes))], nodes[rs.integers(len(nodes))]
        nodes.append(op(o, a, b))
    return nodes[-1]


@pytest.mark.parametrize("seed", range(8))
def test_simplify_keeps_values(seed: int) -> None:
    rs = np.random.default_rng(seed)
    xs = [param(k, dtypes.int32) for k in range(3)]
    e = _random_expr(rs, xs, 30)
    s = simplify(e)
    inp = {k: rs.integers(-2**31, 2**31, 500).astype(np.int32) for k in range(3)}
    assert np.array_equal(eval_values(e, inp), eval_values(s, inp))
    assert simplify(s) is s


def test_where_of_same_condition_takes_that_arm() -> None:
    # WHERE(c, a, WHERE(c, b, y)) → WHERE(c, a, y); WHERE(c, WHERE(c, a, b), y) → WHERE(c, a, y)
    # (tinygrad's padded cummax: c ? -inf : (c ? 0.0 : v)); checked on every c, a, b, y
    f32 = dtypes.float32
    c = op(Ops.CMPLT, param(0, dtypes.int32), strong(0, dtypes.int32))
    a, b, y = (param(k, f32) for k in (1, 2, 3))
    for g, want in ((op(Ops.WHERE, c, a, op(Ops.WHERE, c, b, y)), (c, a, y)),
                    (op(Ops.WHERE, c, op(Ops.WHERE, c, a, b), y), (c, a, y))):
        s = graph_rewrite(g, SIMPLIFY)
        assert s.op is Ops.WHERE and s.src == want
        ins = {0: np.array([-1, 0, 1, -5], np.int32),
               1: np.array([1.5, -0.0, np.inf, 2], np.float32),
               2: np.array([7, 8, 9, np.nan], np.float32),
               3: np.array([-3, 0.0, -np.inf, 4], np.float32)}
        np.testing.assert_array_equal(eval_values(s, ins), eval_values(g, ins))
    # a different condition is left alone
    d = op(Ops.CMPLT, param(4, dtypes.int32), strong(0, dtypes.int32))
    g = op(Ops.WHERE, c, a, op(Ops.WHERE, d, b, y))
    assert graph_rewrite(g, SIMPLIFY) is g
