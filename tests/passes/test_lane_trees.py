"""Tests of kcc/passes/lane_trees.py: an exact integer reduction over whole vectors' lanes
(tinygrad's argmax r_32_8: the maximum of two int4 loads' eight lanes) becomes one vector op of
the vectors and a lane tree; chains it must not touch are left alone. The oracle is the
reference interpreter, on the graph before and after the pass and on the x86 object."""

from __future__ import annotations

import pytest
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.passes.lane_trees import lane_trees
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc


# out[i] = OP over x[8i … 8i+7], read as two 4-lane loads, the lanes folded in one chain
# ({extra}: more operands of the chain)
CHAIN = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, 32)
%x = PARAM ParamArg(1, {dt}, 256)
%y = PARAM ParamArg(2, {dt}, 32)
%i = RANGE(32) (0, WEAK)
%b = SHL(%i, 3)
%p0 = SHRINK(%x, %b, 4)
%v0 = LOAD(%p0)
%b1 = ADD(%b, 4)
%p1 = SHRINK(%x, %b1, 4)
%v1 = LOAD(%p1)
%a0 = INDEX(%v0, 0)
%a1 = INDEX(%v0, 1)
%a2 = INDEX(%v0, 2)
%a3 = INDEX(%v0, {lane3})
%c0 = INDEX(%v1, 0)
%c1 = INDEX(%v1, 1)
%c2 = INDEX(%v1, 2)
%c3 = INDEX(%v1, 3)
%m1 = {op}(%a0, %a1)
%m2 = {op}(%m1, %a2)
%m3 = {op}(%m2, %a3)
%m4 = {op}(%m3, %c0)
%m5 = {op}(%m4, %c1)
%m6 = {op}(%m5, %c2)
%m7 = {op}(%m6, %c3)
%yp = INDEX(%y, %i)
%yv = LOAD(%yp)
%m8 = {op}(%m7, %yv)
%op = INDEX(%out, %i)
%st = STORE(%op, %m8)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="r_32_8")
"""


def _prep(text: str, desc):
    sink = parse(text, "k.uop")
    return sink, simplify(lower_weak_dtypes(sink, desc), desc)


def _chains(g, op: Ops) -> int:
    """How many scalar op nodes read a vector lane directly."""
    return sum(1 for u in g.toposort() if u.op is op and not u.shape
               and any(s.op is Ops.INDEX and s.src[0].shape for s in u.src))


@pytest.mark.parametrize("op,dt", [("MAX", "int32"), ("ADD", "int32"), ("XOR", "uint32"),
                                   ("MUL", "int32"), ("MAX", "int64")])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_chain_over_whole_vectors_is_vector_ops_and_a_lane_tree(op: str, dt: str,
                                                                  arch: str) -> None:
    desc = x86_desc(arch)
    sink, g = _prep(CHAIN.format(op=op, dt=dt, lane3=3), desc)
    t = lane_trees(g, desc)
    assert t is not g
    ops = [u for u in t.toposort() if u.op is Ops[op]]
    vec = [u for u in ops if u.shape == (4,)]
    assert len(vec) == 3                     # the two loads combined, then two halvings
    assert _chains(t, Ops[op]) == 1          # only the tree's lane 0 is read as a scalar
    for seed in (0, 1):
        args = random_inputs(sink, seed)     # full-range integers: ADD/MUL wrap
        want = reference(sink, args)
        assert_same(sink, reference(t, args), want)
        if arch == "x86-64-v3" or HAS_V4:
            assert_same(sink, compile_and_run(sink, args, arch), want)


def test_a_float_chain_an_incomplete_vector_and_a_gpu_are_left_alone() -> None:
    desc = x86_desc("x86-64-v4")
    # float MAX: NaN makes the order matter; float ADD rounds
    _, g = _prep(CHAIN.format(op="MAX", dt="float32", lane3=3), desc)
    assert lane_trees(g, desc) is g
    _, g = _prep(CHAIN.format(op="ADD", dt="float32", lane3=3), desc)
    assert lane_trees(g, desc) is g
    # lane 2 of the first vector read twice, lane 3 never: only the second vector is whole
    sink, g = _prep(CHAIN.format(op="MAX", dt="int32", lane3=2), desc)
    t = lane_trees(g, desc)
    assert [u.shape for u in t.toposort() if u.op is Ops.MAX and u.shape] == [(4,), (4,)]
    args = random_inputs(sink, 2)
    assert_same(sink, reference(t, args), reference(sink, args))
    # a GPU's lanes are registers of their own (no lane_loads): nothing to gain
    _, g = _prep(CHAIN.format(op="MAX", dt="int32", lane3=3), CUDA)
    assert lane_trees(g, CUDA) is g



def test_a_graph_without_integer_lane_reads_asks_no_chain(monkeypatch) -> None:
    # float lanes only: no integer chain can hold a vector's lanes, so none is asked (the
    # index arithmetic's integer ADDs were before _int_lane_reads)
    import kcc.passes.lane_trees as lt
    asked = []
    monkeypatch.setattr(lt, "_rewrite", lambda *a: asked.append(1))
    desc = x86_desc("x86-64-v4")
    _, g = _prep(CHAIN.format(op="ADD", dt="float32", lane3=3), desc)
    assert lane_trees(g, desc) is g and not asked
    _, g = _prep(CHAIN.format(op="ADD", dt="int32", lane3=3), desc)
    lane_trees(g, desc)
    assert asked

def test_a_chain_read_twice_midway_is_two_chains() -> None:
    # %m4 is also stored: the chain above it ends there (its inner nodes are read once)
    desc = x86_desc("x86-64-v4")
    text = CHAIN.format(op="MAX", dt="int32", lane3=3).replace(
        "%e = END(%st, %i)",
        "%op2 = INDEX(%z, %i)\n%st2 = STORE(%op2, %m4)\n%g = GROUP(%st, %st2)\n%e = END(%g, %i)"
    ).replace("%i = RANGE", "%z = PARAM ParamArg(3, int32, 32)\n%i = RANGE")
    sink, g = _prep(text, desc)
    t = lane_trees(g, desc)
    assert t is not g                        # %m4's chain holds all of %v0's lanes
    args = random_inputs(sink, 3)
    assert_same(sink, reference(t, args), reference(sink, args))
    assert_same(sink, compile_and_run(sink, args, "x86-64-v3"), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_lanes_times_constants_enter_as_one_vector_multiply(arch: str) -> None:
    # argmax's index: (x[j] == max) * (n - j), simplify's shifts for powers of two
    desc = x86_desc(arch)
    text = CHAIN.format(op="MAX", dt="int32", lane3=3).replace(
        "%m1 = MAX(%a0, %a1)", "%s1 = MUL(%a1, 3)\n%m1 = MAX(%a0, %s1)").replace(
        "%m2 = MAX(%m1, %a2)", "%s2 = SHL(%a2, 2)\n%m2 = MAX(%m1, %s2)").replace(
        "%m5 = MAX(%m4, %c1)", "%s5 = MUL(%c1, -7)\n%m5 = MAX(%m4, %s5)")
    sink, g = _prep(text, desc)
    t = lane_trees(g, desc)
    muls = [u for u in t.toposort() if u.op is Ops.MUL and u.shape == (4,)]
    assert len(muls) == 2 and all(m.src[1].op is Ops.STACK for m in muls)
    assert _chains(t, Ops.MAX) == 1
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        want = reference(sink, args)
        assert_same(sink, reference(t, args), want)
        if arch == "x86-64-v3" or HAS_V4:
            assert_same(sink, compile_and_run(sink, args, arch), want)
    # a shift by the width or more is not a multiply: that vector stays lanes
    big = text.replace("%s2 = SHL(%a2, 2)", "%s2 = SHL(%a2, 40)")
    _, g = _prep(big, desc)
    assert [u.shape for u in lane_trees(g, desc).toposort()
            if u.op is Ops.MAX and u.shape] in ([], [(4,), (4,)])
