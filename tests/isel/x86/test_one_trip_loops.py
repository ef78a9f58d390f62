"""A loop of one trip is straight-line code (issue 24 item 2: relu_spec's E_5_4, 0.39x clang).

Widening E_5_4 (20 floats) leaves a 16-lane loop and a 4-lane tail of one iteration each; as
loops each paid a counter, a compare, a back edge and the 64-byte head padding, which the
single pass through ran. kcc/isel/x86/select.py sel_RANGE now emits a one-trip RANGE as its
body alone (counter 0) and sel_END closes it with nothing. The oracle of every value is the
reference interpreter.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import ARCHS, assert_same, compile_and_run, reference


RELU = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 20)
%x = PARAM ParamArg(1, float32, 20)
%z = CAST(0.0) float32
%n = CAST(20) int32
%i = RANGE(%n) (0, LOOP)
%xp = INDEX(%x, %i)
%v = LOAD(%xp)
%r = MAX(%z, %v)
%op = INDEX(%o, %i)
%s = STORE(%op, %r)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="relu")
"""

# a loop of one trip nested in a loop of 300 (too many copies for unroll_tiny): the inner
# counter is 0, the outer one counts
NESTED = """# kcc-uop 1
%o = PARAM ParamArg(0, int32, 300)
%x = PARAM ParamArg(1, int32, 300)
%c3 = CAST(300) int32
%c1 = CAST(1) int32
%i = RANGE(%c3) (0, LOOP)
%j = RANGE(%c1) (1, LOOP)
%a = ADD(%i, %j)
%xp = INDEX(%x, %a)
%v = LOAD(%xp)
%w = ADD(%v, %j)
%op = INDEX(%o, %a)
%s = STORE(%op, %w)
%ej = END(%s, %j)
%ei = END(%ej, %i)
SINK(%ei) KernelInfo(name="nested")
"""


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


@pytest.mark.parametrize("arch", ARCHS)
def test_widened_relu_has_no_loop(arch: str) -> None:
    """20 lanes on v4: one 16-lane trip and one 4-lane trip, no loop header, no back edge."""
    text = _selected(RELU, arch)
    if arch == "x86-64-v4":
        assert " loop " not in text and "jl_rel32" not in text, text
    sink = parse(RELU)
    x = np.linspace(-3, 3, 20).astype(np.float32)
    args = [np.zeros(20, np.float32), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ARCHS)
def test_one_trip_loop_inside_a_loop(arch: str) -> None:
    """The outer loop keeps its back edge; the inner one-trip loop has none, counter 0."""
    text = _selected(NESTED, arch)
    assert text.count("jl_rel32") == 1, text
    sink = parse(NESTED)
    args = [np.zeros(300, np.int32), np.arange(-150, 150, dtype=np.int32) * 7]
    got = compile_and_run(sink, args, arch)
    assert_same(sink, got, reference(sink, args))
