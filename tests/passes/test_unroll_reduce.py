"""Full unrolling of short widened reduce loops inside other loops (kcc/passes/unroll_reduce.py,
in the pipeline's widen step): which loops become chained straight-line copies and which
stay loops, and that the result is what the graph as written computes (the reference
interpreter before and after the pass, and the x86 object at x86-64-v3 and v4)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unroll import unroll
from kcc.passes.unroll_reduce import MAX_WORK, unroll_reduce
from kcc.passes.unroll_widened import widen_and_unroll
from kcc.targets.x86.arch import x86_desc
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference


def _count(rows: int, cols: int, op: str = "CMPLT(%zero, %v)", dt: str = "float32") -> UOp:
    """tinygrad's bool_sum r_333_77 at rows x cols: out[i] = sum_j int(0 < x[i*cols + j])."""
    return parse(f"""# kcc-uop 1
%out = PARAM ParamArg(0, int32, {rows})
%x = PARAM ParamArg(1, {dt}, {rows * cols})
%acc = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%zero = CAST(0) {dt}
%i = RANGE({rows}) (1, LOOP)
%a0 = AFTER(%acc, %i)
%p0 = INDEX(%a0, 0)
%s0 = STORE(%p0, 0)
%j = RANGE({cols}, %i) (0, REDUCE)
%a1 = AFTER(%acc, %s0, %j)
%p1 = INDEX(%a1, 0)
%c = LOAD(%p1)
%k = MULACC(%i, {cols}, %j)
%xp = INDEX(%x, %k)
%v = LOAD(%xp)
%b = {op}
%t = CAST(%b) int32
%n = ADD(%c, %t)
%w = STORE(%p1, %n)
%e = END(%w, %j)
%a2 = AFTER(%acc, %e)
%p2 = INDEX(%a2, 0)
%r = LOAD(%p2)
%op = INDEX(%out, %i)
%o = STORE(%op, %r)
%f = END(%o, %i)
SINK(%f) KernelInfo(name="r_count")
""", "r_count.uop")


def _short_loops(g: UOp, limit: int = 16) -> int:
    """The loops of a constant bound of 2 to limit iterations nested in another loop."""
    n = 0
    for x in g.toposort():
        if x.op is Ops.RANGE and len(x.src) > 1 and (b := const_int(x.src[0])) is not None \
                and 2 <= b <= limit:
            n += 1
    return n


def _widened(sink: UOp, arch: str = "x86-64-v3", **fields) -> tuple[UOp, UOp]:
    """(the graph before the widen step, after it) with x86's description (fields replaced)."""
    desc = replace(x86_desc(arch), **fields)
    g = unroll(simplify(lower_weak_dtypes(sink)), desc)
    return g, widen_and_unroll(g, desc)


def _same(sink: UOp, before: UOp, after: UOp) -> None:
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, reference(after, args), reference(before, args))


@pytest.mark.parametrize("rows, cols", [(333, 77), (8, 64), (5, 17), (12, 60), (3, 25)])
def test_a_short_widened_row_reduction_is_unrolled(rows: int, cols: int) -> None:
    sink = _count(rows, cols)
    before, after = _widened(sink)
    assert _short_loops(after) == 0
    _same(sink, before, after)
    off = widen_and_unroll(before, replace(x86_desc("x86-64-v3"), reduce_unroll=0))
    assert _short_loops(off) > 0           # (without the pass the loop stays)


def test_unrolled_copies_address_one_base() -> None:
    """The copies' row offsets join their counters' constants (simplify's MULACC(a, b, c1) +
    c2 → MULACC(a, b, c1 + c2)): every load of the row group indexes MULACC(i, cols, k)."""
    _, after = _widened(_count(333, 77))
    idx = [x.src[0].src[1] for x in after.toposort() if x.op is Ops.LOAD
           and x.src[0].op is Ops.SHRINK and x.src[0].src[0].op is Ops.PARAM]
    assert idx and all(i.op is Ops.MULACC and const_int(i.src[2]) is not None for i in idx)


def test_a_long_row_stays_a_loop() -> None:
    # 17 blocks of 8 lanes a row (v3): past reduce_unroll
    _, after = _widened(_count(4, 8 * 17 + 3))
    assert _short_loops(after, 64) > 0


def test_a_loop_past_the_work_budget_stays() -> None:
    # 2 rows jammed x 4 work nodes x 16 blocks = 128 <= MAX_WORK; the budget at 64 refuses it
    sink = _count(2, 8 * 16)
    before, after = _widened(sink)
    assert _short_loops(after) == 0
    desc = replace(x86_desc("x86-64-v3"), reduce_unroll=16)
    import kcc.passes.unroll_reduce as ur
    old = ur.MAX_WORK
    try:
        ur.MAX_WORK = 64
        kept = unroll_reduce(widen_and_unroll(before, replace(desc, reduce_unroll=0)), desc)
    finally:
        ur.MAX_WORK = old
    assert _short_loops(kept) > 0
    assert MAX_WORK >= 144          # (bool_sum's r_333_77: 4 rows x 4 nodes x 9 blocks)


def test_a_loop_no_loop_encloses_stays() -> None:
    # one row: the reduce loop is outermost (it runs once a launch)
    _, after = _widened(_count(1, 77))
    assert any(x.op is Ops.RANGE for x in after.toposort())


def test_a_scalar_loop_stays() -> None:
    # int64 compares are not widened at 4 lanes here: the reduce loop stays scalar
    g = _count(6, 5, "CMPLT(%v, %zero)", "int64")
    before = unroll(simplify(lower_weak_dtypes(g)), x86_desc("x86-64-v3"))
    assert _short_loops(before) == 1
    assert unroll_reduce(before, x86_desc("x86-64-v3")) is before


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("rows, cols", [(333, 77), (5, 17), (12, 100)])
def test_x86_object_matches_the_interpreter(arch: str, rows: int, cols: int) -> None:
    sink = _count(rows, cols)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


OFFSETS = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 12)
%x = PARAM ParamArg(1, int32, 64)
%i = RANGE(3) (0, LOOP)
%j = RANGE(4, %i) (1, LOOP)
%jc = ADD(%j, {c1})
%m = MULACC(%i, 14, %jc)
%k = ADD(%m, {c2})
%xp = INDEX(%x, %k)
%v = LOAD(%xp)
%o = MULACC(%i, 4, %j)
%op = INDEX(%out, %o)
%s = STORE(%op, %v)
%e = END(%s, %j)
%f = END(%e, %i)
SINK(%f) KernelInfo(name="offsets")
"""


@pytest.mark.parametrize("c1, c2", [(3, 2), (14, -1), (0, 5)])
def test_constant_addends_go_outermost(c1: int, c2: int) -> None:
    """`_join_offsets`: MULACC(a, b, x + c1) + c2 → MULACC(a, b, x) + (c1 + c2) (conv1d's
    copies: one base register, each copy a displacement), the same values."""
    from kcc.passes.unroll_reduce import _join_offsets
    sink = simplify(lower_weak_dtypes(parse(OFFSETS.format(c1=c1, c2=c2), "o.uop")))
    got = _join_offsets(sink)
    (load,) = [x for x in got.toposort() if x.op is Ops.LOAD]
    idx = load.src[0].src[1]
    assert idx.op is Ops.ADD and const_int(idx.src[1]) == c1 + c2, idx
    assert idx.src[0].op is Ops.MULACC and idx.src[0].src[2].op is Ops.RANGE
    _same(sink, sink, got)
