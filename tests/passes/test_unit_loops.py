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
    out = fold_unit_loops(g, x86_desc("x86-64-v3"))
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
