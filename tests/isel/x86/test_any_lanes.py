"""`x != 0` (`x == 0`) of an OR lane tree over whole integer vectors as VPTEST
(kcc/isel/x86/anylanes.py; issue 24, item 2: argmax_bool r_333_77's `any` of a row took each
row's accumulator apart with an extract, two shuffles, three ORs and a lane move).

The oracle is the reference interpreter, on data where one bit of one lane decides."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

HAVE_V4 = "avx512f" in open("/proc/cpuinfo").read()


def _tree(lanes: list[int], cmp: str = "CMPNE") -> str:
    """out[0] = (OR of x's lanes `lanes`, as a lane tree) cmp 0: two uint32x4 halves ORed,
    then two swap-and-OR steps, lane 0 compared."""
    ls = "\n".join(f"%l{j} = INDEX(%v, {k})" for j, k in enumerate(lanes))
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, bool, 1)
%x = PARAM ParamArg(1, uint32, 8)
%p = SHRINK(%x, 0, 8)
%v = LOAD(%p)
{ls}
%a = STACK(%l0, %l1, %l2, %l3)
%b = STACK(%l4, %l5, %l6, %l7)
%c = OR(%a, %b)
%c0 = INDEX(%c, 0)
%c1 = INDEX(%c, 1)
%c2 = INDEX(%c, 2)
%c3 = INDEX(%c, 3)
%e = STACK(%c2, %c3, %c0, %c1)
%f = OR(%c, %e)
%f0 = INDEX(%f, 0)
%f1 = INDEX(%f, 1)
%f2 = INDEX(%f, 2)
%f3 = INDEX(%f, 3)
%g = STACK(%f1, %f0, %f3, %f2)
%h = OR(%f, %g)
%r = INDEX(%h, 0)
%z = CAST(0) uint32
%t = {cmp}(%r, %z)
%oi = INDEX(%o, 0)
%st = STORE(%oi, %t)
SINK(%st) KernelInfo(name="anytree")
"""


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


def _data() -> list[np.ndarray]:
    one_bit = [np.zeros(8, np.uint32) for _ in range(8)]
    for k, x in enumerate(one_bit):
        x[k] = 1 << (5 * k % 32)
    return [np.zeros(8, np.uint32), np.full(8, 0xFFFFFFFF, np.uint32), *one_bit]


@pytest.mark.parametrize("cmp", ["CMPNE", "CMPEQ"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_or_tree_compare_is_one_vptest(arch: str, cmp: str) -> None:
    text = _tree(list(range(8)), cmp)
    sel = _selected(text, arch)
    assert "vptest_y_ym" in sel and "vpextrd" not in sel, sel
    if arch == "x86-64-v4" and not HAVE_V4:
        return
    sink = parse(text)
    for x in _data():
        args = [np.zeros(1, np.bool_), x]
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_tree_missing_a_lane_is_not_a_vptest(arch: str) -> None:
    # lane 7 is never read (lane 6 twice): testing the whole vector would see its bit
    text = _tree([0, 1, 2, 3, 4, 5, 6, 6])
    sel = _selected(text, arch)
    assert "vptest" not in sel, sel
    if arch == "x86-64-v4" and not HAVE_V4:
        return
    sink = parse(text)
    answers = set()
    for x in _data():
        args = [np.zeros(1, np.bool_), x]
        want = reference(sink, args)
        answers.add(bool(want[0][0]))
        assert_same(sink, compile_and_run(sink, args, arch), want)
    assert answers == {True, False}       # lane 7's bit alone reads false
