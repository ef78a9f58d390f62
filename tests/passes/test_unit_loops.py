"""Tests of the folding of loops of one trip (kcc/passes/unit_loops.py): which RANGEs of
bound 1 become the constant 0, that the order a folded loop had is kept (an AFTER on its
places, its order srcs on its inner loops), and that the result computes what the graph as
written computes: the interpreter before and after the pass (bit for bit), and the x86
object (x86-64-v3 and v4) against the interpreter."""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unit_loops import fold_unit_loops
from kcc.targets.x86.arch import x86_desc
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

# sum_odd's r_333_77 as passes/unroll.py leaves it, shrunk: rows of 5 summed into out, a
# main loop over rows 0..1 and a remainder loop of one trip (row 2) ordered after its END,
# the tail's accumulator ordered by AFTERs on its RANGE; the tail then reads out[0] back
# (which only the main loop writes) and stores it into out[3]: an order the counter alone
# gave the load
TAIL = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 4)
%1 = PARAM ParamArg(1, float32, 15)
%2 = BUFFER ParamArg(0, float32, 1, addrspace=REG)
%3 = CAST(0) int32
%4 = CAST(1) int32
%5 = CAST(2) int32
%6 = CAST(5) int32
%7 = CAST(0.0) float32
%8 = RANGE(%5) (1, WEAK)
%9 = AFTER(%2, %8)
%10 = INDEX(%9, %3)
%11 = STORE(%10, %7)
%12 = RANGE(%6, %8) (0, REDUCE)
%13 = AFTER(%2, %11, %12)
%14 = INDEX(%13, %3)
%15 = LOAD(%14)
%16 = MULACC(%8, %6, %12)
%17 = INDEX(%1, %16)
%18 = LOAD(%17)
%19 = ADD(%15, %18)
%20 = STORE(%14, %19)
%21 = END(%20, %12)
%22 = AFTER(%2, %21)
%23 = INDEX(%22, %3)
%24 = LOAD(%23)
%25 = INDEX(%0, %8)
%26 = STORE(%25, %24)
%27 = END(%26, %8)
%28 = RANGE(%4, %27) (1, WEAK)
%29 = ADD(%28, %5)
%30 = AFTER(%2, %28)
%31 = INDEX(%30, %3)
%32 = STORE(%31, %7)
%33 = RANGE(%6, %28) (0, REDUCE)
%34 = AFTER(%2, %32, %33)
%35 = INDEX(%34, %3)
%36 = LOAD(%35)
%37 = MULACC(%29, %6, %33)
%38 = INDEX(%1, %37)
%39 = LOAD(%38)
%40 = ADD(%36, %39)
%41 = STORE(%35, %40)
%42 = END(%41, %33)
%43 = AFTER(%2, %42)
%44 = INDEX(%43, %3)
%45 = LOAD(%44)
%46 = INDEX(%0, %29)
%47 = STORE(%46, %45)
%48 = INDEX(%0, %28)
%49 = LOAD(%48)
%50 = ADD(%29, %4)
%51 = INDEX(%0, %50)
%52 = STORE(%51, %49)
%53 = GROUP(%47, %52)
%54 = END(%53, %28)
SINK(%54) KernelInfo(name="r_3_5")
"""

# a loop of one trip whose END holds a store that does not depend on its RANGE (inside the
# loop by the END alone): left as it is
LOOSE = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 4)
%2 = CAST(1) int32
%3 = CAST(1.0) float32
%4 = RANGE(%2) (0, WEAK)
%5 = INDEX(%0, %4)
%6 = STORE(%5, %3)
%7 = INDEX(%0, %2)
%8 = STORE(%7, %3)
%9 = GROUP(%6, %8)
%10 = END(%9, %4)
SINK(%10) KernelInfo(name="E_1")
"""


def _units(sink: UOp) -> int:
    return sum(1 for n in sink.toposort() if n.op is Ops.RANGE and const_int(n.src[0]) == 1)


def _graph(text: str) -> UOp:
    return lower_weak_dtypes(parse(text, "k.uop"))


def test_the_tail_loop_becomes_straight_line_code() -> None:
    g = _graph(TAIL)
    assert _units(g) == 1
    out = simplify(fold_unit_loops(g), x86_desc("x86-64-v3"))
    assert _units(out) == 0
    # the main loop and the tail's inner loop stay; the tail's inner loop is now ordered
    # after the main loop's END (its order src, the folded RANGE, became the RANGE's own)
    ranges = [n for n in out.toposort() if n.op is Ops.RANGE]
    assert len(ranges) == 3
    main_end = next(n for n in out.toposort()
                    if n.op is Ops.END and const_int(n.src[1].src[0]) == 2)
    inner = [r for r in ranges if const_int(r.src[0]) == 5 and main_end in r.src[1:]]
    assert inner, "the tail's reduce loop lost its order after the main loop"


def test_the_tails_places_on_a_stored_buffer_keep_their_order() -> None:
    # out[0] loaded in the tail (its index was the counter) and the stores to out: each
    # through an AFTER whose deps reach the main loop's END
    out = fold_unit_loops(_graph(TAIL))
    order = out.toposort()
    main_end = next(n for n in order if n.op is Ops.END and const_int(n.src[1].src[0]) == 2)
    outs = [n for n in order if n.op is Ops.INDEX and n.src[0].op is Ops.AFTER
            and n.src[0].src[0].op is Ops.PARAM and n.src[0].src[0].arg.slot == 0]
    assert len(outs) == 3 and all(main_end in n.src[0].src[1:] for n in outs)
    # the input (no STORE writes it) is read without one
    assert all(n.src[0].op is Ops.PARAM for n in order
               if n.op is Ops.INDEX and n.src[0].op is not Ops.AFTER
               and getattr(n.src[0].arg, "slot", None) == 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_fold_computes_what_the_loop_did(seed: int) -> None:
    g = _graph(TAIL)
    args = random_inputs(g, seed)
    want = reference(g, args)
    assert_same(g, reference(fold_unit_loops(g), args), want)


def test_a_loop_holding_a_store_free_of_its_range_is_left_alone() -> None:
    g = _graph(LOOSE)
    assert fold_unit_loops(g) is g


def test_a_graph_without_a_loop_of_one_trip_is_returned_as_is() -> None:
    g = _graph(TAIL.replace("%4 = CAST(1) int32", "%4 = CAST(3) int32"))
    assert fold_unit_loops(g) is g          # (no RANGE of bound 1: nothing to do)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", [0, 1])
def test_x86_matches_the_interpreter(arch: str, seed: int) -> None:
    g = parse(TAIL, "k.uop")
    args = random_inputs(g, seed)
    assert_same(g, compile_and_run(g, args, arch), reference(g, args))


def test_the_pipeline_leaves_no_loop_of_one_trip() -> None:
    # the pipeline folds after its widen step (kcc/targets/pipeline.py): a reduction of 3
    # rows of 77 that unroll-and-jam splits 2 + 1 (x86-64-v3), its tail kept until then
    from kcc.targets.pipeline import PIPELINE
    from kcc.targets.x86.target import X86Target
    text = TAIL.replace("float32, 15", "float32, 231").replace("CAST(5)", "CAST(77)")
    g = parse(text, "k.uop")
    desc = X86Target("x86-64-v3").desc
    for step in PIPELINE:
        if step.kind != "graph":
            break
        g = step.run(g, desc)
        if step.name == "unroll":
            assert _units(g) == 1
        if step.name == "widen":
            assert _units(g) == 0


# -- a loop of one trip inside an outer loop (the shapes that miscompiled in branch tail19) ---
# An order use of the folded RANGE (an AFTER's dep, an inner RANGE's order src) must keep the
# loops that enclose the RANGE: the constant 0 that replaces it is in none, and the RANGE's own
# order srcs may not be either.

# tests/fuzz/test_fuzz_shapes.py's carried accumulator: acc zeroed once before the outer loop,
# acc = acc*2 + x[i] in an inner loop of one trip, ordered by its RANGE alone (the init is
# before every loop); the old fold hoisted the LOAD out of the outer loop
CARRIED = """# kcc-uop 1
%0 = PARAM ParamArg(0, int32, 2)       : int32[2]
%1 = PARAM ParamArg(1, int32, 2)       : int32[2]
%2 = BUFFER ParamArg(0, int32, 1, addrspace=REG) : int32[1]
%3 = INDEX(%2, 0)                      : int32
%4 = CAST(0) int32                     : int32
%5 = STORE(%3, %4)
%6 = RANGE(2, %5) (0, LOOP)            : weakint
%7 = INDEX(%0, %6)                     : int32
%8 = RANGE(1) (1, LOOP)                : weakint
%9 = AFTER(%2, %5, %8)                 : int32[1]
%10 = INDEX(%9, 0)                     : int32
%11 = LOAD(%10)                        : int32
%12 = CAST(2) int32                    : int32
%13 = MUL(%11, %12)                    : int32
%14 = MUL(%6, 1)                       : weakint
%15 = ADD(%14, %8)                     : weakint
%16 = INDEX(%1, %15)                   : int32
%17 = LOAD(%16)                        : int32
%18 = ADD(%13, %17)                    : int32
%19 = STORE(%10, %18)
%20 = END(%19, %8)
%21 = AFTER(%2, %20)                   : int32[1]
%22 = INDEX(%21, 0)                    : int32
%23 = LOAD(%22)                        : int32
%24 = STORE(%7, %23)
%25 = END(%24, %6)
SINK(%25) KernelInfo(name="carried")
"""

# the same fuzz test's shape with one END closing the outer loop and the loop of one trip
# (END(x, i, j): `for i: for j: x`, by axis), acc zeroed at the top of each iteration of j
# and summed over an inner loop of one trip: j's END lists the outer loop beside it. (acc
# reads 0 wherever its load lands, so only the structural test below tells a hoisted load;
# x86 read garbage in the fuzz test when the END's other RANGE was not taken as enclosing)
SHARED_END = """# kcc-uop 1
%0 = PARAM ParamArg(0, int32, 2)       : int32[2]
%1 = PARAM ParamArg(1, int32, 2)       : int32[2]
%2 = BUFFER ParamArg(0, int32, 1, addrspace=REG) : int32[1]
%3 = RANGE(2) (0, LOOP)                : weakint
%4 = MUL(%3, 1)                        : weakint
%5 = RANGE(1) (1, LOOP)                : weakint
%6 = ADD(%4, %5)                       : weakint
%7 = INDEX(%0, %6)                     : int32
%8 = AFTER(%2, %5)                     : int32[1]
%9 = INDEX(%8, 0)                      : int32
%10 = CAST(0) int32                    : int32
%11 = STORE(%9, %10)
%12 = RANGE(1, %11) (2, LOOP)          : weakint
%13 = AFTER(%2, %11, %12)              : int32[1]
%14 = INDEX(%13, 0)                    : int32
%15 = LOAD(%14)                        : int32
%16 = CAST(2) int32                    : int32
%17 = MUL(%15, %16)                    : int32
%18 = MUL(%6, 1)                       : weakint
%19 = ADD(%18, %12)                    : weakint
%20 = INDEX(%1, %19)                   : int32
%21 = LOAD(%20)                        : int32
%22 = ADD(%17, %21)                    : int32
%23 = STORE(%14, %22)
%24 = END(%23, %12)
%25 = AFTER(%2, %24)                   : int32[1]
%26 = INDEX(%25, 0)                    : int32
%27 = LOAD(%26)                        : int32
%28 = STORE(%7, %27)
%29 = END(%28, %3, %5)
SINK(%29) KernelInfo(name="shared_end")
"""

# tests/ir/test_interp_carried.py's nested_acc((2, 3, 4), 2) as unroll leaves it, shrunk: a
# middle loop of one trip (rows jammed whole) in the outer loop, acc zeroed at the top of its
# body (ordered by its RANGE alone), acc = acc*3 + x over an inner loop of 3; the outer loop
# comes after the middle one in the toposort (the middle RANGE does not depend on it). The
# old fold zeroed acc once, before the outer loop: row 1 went on from row 0's value
ZEROED = """# kcc-uop 1
%0 = PARAM ParamArg(0, int32, 2)       : int32[2]
%1 = PARAM ParamArg(1, int32, 6)       : int32[6]
%2 = BUFFER ParamArg(0, int32, 1, addrspace=REG) : int32[1]
%3 = RANGE(1) (1, LOOP)                : weakint
%4 = AFTER(%2, %3)                     : int32[1]
%5 = INDEX(%4, 0)                      : int32
%6 = CAST(0) int32                     : int32
%7 = STORE(%5, %6)
%8 = RANGE(2) (0, LOOP)                : weakint
%9 = ADD(%8, %3)                       : weakint
%10 = RANGE(3, %7) (2, LOOP)           : weakint
%11 = AFTER(%2, %7, %10)               : int32[1]
%12 = INDEX(%11, 0)                    : int32
%13 = LOAD(%12)                        : int32
%14 = CAST(3) int32                    : int32
%15 = MUL(%13, %14)                    : int32
%16 = MUL(%9, 3)                       : weakint
%17 = ADD(%16, %10)                    : weakint
%18 = INDEX(%1, %17)                   : int32
%19 = LOAD(%18)                        : int32
%20 = ADD(%15, %19)                    : int32
%21 = STORE(%12, %20)
%22 = END(%21, %10)
%23 = AFTER(%2, %22)                   : int32[1]
%24 = INDEX(%23, 0)                    : int32
%25 = LOAD(%24)                        : int32
%26 = INDEX(%0, %9)                    : int32
%27 = STORE(%26, %25)
%28 = END(%27, %3)
%29 = END(%28, %8)
SINK(%29) KernelInfo(name="zeroed")
"""

NESTED = {"carried": CARRIED, "shared_end": SHARED_END, "zeroed": ZEROED}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(NESTED))
def test_a_loop_of_one_trip_in_an_outer_loop_keeps_it(name: str, seed: int) -> None:
    g = _graph(NESTED[name])
    assert _units(g) >= 1
    args = random_inputs(g, seed)
    want = reference(g, args)
    folded = fold_unit_loops(g)
    for out in (folded, simplify(folded, x86_desc("x86-64-v3"))):
        assert _units(out) == 0
        assert_same(g, reference(out, args), want)


@pytest.mark.parametrize("name", sorted(NESTED))
def test_the_folded_accumulator_stays_in_the_outer_loop(name: str) -> None:
    # every access of acc (the REG buffer) ordered by an AFTER (all but CARRIED's init, before
    # every loop) still depends on the outer loop's RANGE
    from kcc.ir.uop import base_buffer
    from kcc.passes.linearize import range_sets
    out = fold_unit_loops(_graph(NESTED[name]))
    order = out.toposort()
    dep = range_sets(order)
    (outer,) = [n for n in order if n.op is Ops.RANGE and const_int(n.src[0]) == 2]
    acc = [n for n in order if n.op is Ops.INDEX and n.src[0].op is Ops.AFTER
           and base_buffer(n.src[0]).op is Ops.BUFFER]
    assert acc and all(outer in dep[n] for n in acc)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(NESTED))
def test_x86_runs_a_loop_of_one_trip_in_an_outer_loop(name: str, arch: str) -> None:
    g = parse(NESTED[name], "k.uop")
    args = random_inputs(g, 0)
    assert_same(g, compile_and_run(g, args, arch), reference(g, args))


def _nested_acc(ns: tuple[int, ...], level: int) -> UOp:
    """acc = acc*3 + x[flat] in the innermost of len(ns) loops (a loop of bound 1 wherever ns
    has a 1), acc zeroed before every loop (level 0) or at the top of loop level-1's body;
    out[flat of the outer loops] = acc after the innermost loop (tests/ir/
    test_interp_carried.py's nested_acc, whose nest of (2, 3, 4) miscompiled in tail19)."""
    from kcc.ir.dtype import dtypes
    from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg

    def c(v: int) -> UOp:
        return UOp(Ops.CONST, (), v)

    def place(b: UOp, i: UOp) -> UOp:
        return UOp(Ops.INDEX, (b, i))

    def flat(rs: list[UOp], sizes: tuple[int, ...]) -> UOp:
        e = rs[0]
        for r, n in zip(rs[1:], sizes[1:]):
            e = UOp(Ops.ADD, (UOp(Ops.MUL, (e, c(n))), r))
        return e

    i64 = dtypes.int64
    outer = 1
    for n in ns[:-1]:
        outer *= n
    out = UOp(Ops.PARAM, (), ParamArg(0, i64, outer))
    x = UOp(Ops.PARAM, (), ParamArg(1, i64, outer * ns[-1]))
    acc = UOp(Ops.BUFFER, (), ParamArg(0, i64, 1, addrspace=AddrSpace.REG))
    rs: list[UOp] = []
    init = None
    for lv, n in enumerate(ns):
        order: tuple[UOp, ...] = ()
        if lv == level:
            b = acc if lv == 0 else UOp(Ops.AFTER, (acc, rs[lv - 1]))
            init = UOp(Ops.STORE, (place(b, c(0)), UOp(Ops.CAST, (c(0),), i64)))
            order = (init,)
        rs.append(UOp(Ops.RANGE, (c(n), *order), (lv, AxisType.LOOP)))
    a_in = place(UOp(Ops.AFTER, (acc, init, rs[-1])), c(0))
    val = UOp(Ops.ADD, (UOp(Ops.MUL, (UOp(Ops.LOAD, (a_in,)), UOp(Ops.CAST, (c(3),), i64))),
                        UOp(Ops.LOAD, (place(x, flat(rs, ns)),))))
    e = UOp(Ops.END, (UOp(Ops.STORE, (a_in, val)), rs[-1]))
    res = UOp(Ops.LOAD, (place(UOp(Ops.AFTER, (acc, e)), c(0)),))
    node = UOp(Ops.STORE, (place(out, flat(rs[:-1], ns[:-1]) if len(ns) > 1 else c(0)), res))
    for r in reversed(rs[:-1]):
        node = UOp(Ops.END, (node, r))
    return UOp(Ops.SINK, (node,), KernelInfo("nested_acc"))


NESTS = [(ns, lv) for ns in [(1, 2), (2, 1), (1, 1, 2), (2, 1, 3), (3, 1, 2), (2, 3, 1),
                             (1, 2, 1), (2, 1, 1, 2), (1, 3, 1, 2)] for lv in range(len(ns))]


@pytest.mark.parametrize("ns,level", NESTS)
def test_a_carried_accumulator_across_loops_of_one_trip(ns: tuple[int, ...], level: int) -> None:
    # every loop of bound 1 folded; the interpreter on the graph as written is the oracle
    g = lower_weak_dtypes(_nested_acc(ns, level))
    out = fold_unit_loops(g)
    assert _units(out) == 0
    args = random_inputs(g, 0)
    assert_same(g, reference(out, args), reference(g, args))
