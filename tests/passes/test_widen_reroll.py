"""Tests of the rerolling of loops whose body is c shifted copies of one scalar computation
(kcc/passes/widen_reroll.py, run by kcc/passes/widen.py before widen_lanes.py): which loops
become one-lane loops over N*c elements (then widened, with a tail loop) and which are left
alone. The oracle is the reference interpreter, on the graph before and after the pass (bit
for bit) and on the x86 object compiled with the pass in the pipeline."""

from __future__ import annotations

import pytest
from widen_util import range_bounds as _bounds
from widen_util import widen_check as _check
from widen_util import widen_prep as _prep

from kcc.ir import Ops
from kcc.targets.x86.target import V4_FLAGS, cpu_flags

HAS_V4 = all(f in cpu_flags() for f in V4_FLAGS)
ARCHS = ["x86-64-v3", pytest.param("x86-64-v4", marks=pytest.mark.skipif(
    not HAS_V4, reason="this CPU has no AVX-512 (x86-64-v4 objects cannot run here)"))]

# tinygrad's upcast by 3 (E_8547_3): each iteration computes 3 adjacent elements
HEAD = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, {size})
%a = PARAM ParamArg(1, float32, {size})
%b = PARAM ParamArg(2, float32, {size})
%i = RANGE({n}) (0, WEAK)
%p0 = MUL(%i, 3)
%p1 = MULACC(%i, 3, 1)
%p2 = MULACC(%i, 3, 2)
"""
LANE = """%xa{j} = INDEX(%a, %p{j})
%x{j} = LOAD(%xa{j})
%ya{j} = INDEX(%b, %p{j})
%y{j} = LOAD(%ya{j})
%m{j} = MUL(%x{j}, %y{j})
%r{j} = ADD(%m{j}, 1.5)
%oa{j} = INDEX(%out, %p{j})
%s{j} = STORE(%oa{j}, %r{j})
"""
TAIL = """%g = GROUP(%s0, %s1, %s2)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="E_n_3")
"""


def _text(n: int = 11, lane1: str = "") -> str:
    lanes = [LANE.format(j=j) for j in range(3)]
    if lane1:
        lanes[1] = lane1
    return HEAD.format(n=n, size=3 * n) + "".join(lanes) + TAIL


@pytest.mark.parametrize("arch", ARCHS)
def test_three_copies_become_one_widened_loop_and_a_last_block(arch: str) -> None:
    # 33 elements: v3 4 iterations of 8 lanes, v4 2 of 16, then elements 25 … 32 (17 … 32)
    # as one more block (overlapping the loop's last: the output is not loaded), no tail
    w = _check(_text(), arch)
    assert _bounds(w) == ([4] if arch == "x86-64-v3" else [2])
    assert {u.shape for u in w.toposort() if u.op is Ops.MUL and u.dtype.is_float} \
        == {(8,) if arch == "x86-64-v3" else (16,)}


@pytest.mark.parametrize("lane1, why", [
    (LANE.format(j=1).replace("ADD(%m1, 1.5)", "SUB(%m1, 1.5)"), "another op"),
    (LANE.format(j=1).replace("ADD(%m1, 1.5)", "ADD(%m1, 2.5)"), "another constant"),
    (LANE.format(j=1).replace("INDEX(%a, %p1)", "INDEX(%a, %p0)"), "lane 0's element"),
    (LANE.format(j=1).replace("INDEX(%a, %p1)", "INDEX(%out, %p1)"), "reads the output"),
    (LANE.format(j=1).replace("%r1 = ADD(%m1, 1.5)", "%c1 = CAST(%i) float32\n"
                              "%r1 = ADD(%m1, %c1)"), "uses the counter"),
])
def test_lanes_that_are_not_shifted_copies_are_left_alone(lane1: str, why: str) -> None:
    text = _text(lane1=lane1)
    _, g, w = _prep(text)
    assert w is g, why
    _check(text)


def test_store_offsets_with_a_gap_are_left_alone() -> None:
    # lane 2 stores 3 ahead of lane 0 (offsets 0, 1, 3): not c adjacent elements
    text = _text().replace("%p2 = MULACC(%i, 3, 2)", "%p2 = MULACC(%i, 3, 3)")
    text = text.replace("float32, 33)", "float32, 36)")
    _, g, w = _prep(text)
    assert w is g
    _check(text)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 11, 16, 21, 43])
def test_rerolled_loops_of_every_size(arch: str, n: int) -> None:
    # 3n elements: the widened blocks and the tail cover each once
    w = _check(_text(n=n), arch)
    b = _bounds(w)
    assert len(b) <= 2 and (b == [n] or b[0] < n)
