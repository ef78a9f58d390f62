"""any/all of one vector's float compares as VCMPPS + VMOVMSKPS (kcc/isel/x86/vec.py
lane_test; issue 24, item 2: the sweep's any_all r_64_4 kernels ran 5.5x slower than clang,
each lane taken out, compared and moved to a GPR one at a time).

The oracle is the reference interpreter, on data where the answer turns on one lane, NaN
(every compare but != false) and the accumulator's own value."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import ARCHS, assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target


def _kernel(op: str, cmp: str, init: str, flip: bool) -> str:
    """out[0] = init op (c(v[0])) op … op (c(v[3])) over 4 float4 rows of x, c = cmp with
    1.0 (on the right when flip)."""
    lane = [f"CMP{cmp}(%l{j}, 1.0)" if flip else f"CMP{cmp}(1.0, %l{j})" for j in range(4)]
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, bool, 1)
%x = PARAM ParamArg(1, float32, 16)
%b = BUFFER ParamArg(0, bool, 1, addrspace=REG)
%z = CAST(0) int32
%bi = INDEX(%b, %z)
%i0 = CAST({init}) bool
%s0 = STORE(%bi, %i0)
%r = RANGE(4) (0, REDUCE)
%a = AFTER(%b, %s0, %r)
%ai = INDEX(%a, %z)
%acc = LOAD(%ai)
%off = SHL(%r, 2)
%p = SHRINK(%x, %off, 4)
%v = LOAD(%p)
%l0 = INDEX(%v, 0)
%l1 = INDEX(%v, 1)
%l2 = INDEX(%v, 2)
%l3 = INDEX(%v, 3)
%c0 = {lane[0]}
%c1 = {lane[1]}
%c2 = {lane[2]}
%c3 = {lane[3]}
%t1 = {op}(%c0, %c1)
%t2 = {op}(%t1, %c2)
%t3 = {op}(%t2, %c3)
%n = {op}(%acc, %t3)
%st = STORE(%ai, %n)
%e = END(%st, %r)
%fa = AFTER(%b, %e)
%fi = INDEX(%fa, %z)
%f = LOAD(%fi)
%oi = INDEX(%o, %z)
%so = STORE(%oi, %f)
SINK(%so) KernelInfo(name="anyall")
"""


FORMS = [("OR", "LT", "false", False), ("AND", "LT", "true", False),
         ("OR", "NE", "false", True), ("AND", "EQ", "true", True), ("AND", "LT", "true", True)]
DATA = [np.full(16, 2.0), np.full(16, 1.0), np.full(16, 0.5), np.r_[np.full(15, 2.0), 1.0],
        np.r_[np.full(7, 0.5), 2.0, np.full(8, 0.5)], np.r_[np.full(15, 1.0), np.nan],
        np.r_[np.nan, np.full(15, 2.0)]]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("form", FORMS)
def test_any_all_of_lanes_match_the_interpreter(arch: str, form: tuple) -> None:
    sink = parse(_kernel(*form))
    answers = set()
    for x in DATA:
        args = [np.zeros(1, np.bool_), x.astype(np.float32)]
        want = reference(sink, args)
        answers.add(bool(want[0][0]))
        assert_same(sink, compile_and_run(sink, args, arch), want)
    assert answers == {True, False}       # the data decides both ways


def _row_kernel() -> str:
    """_kernel's any, each row compared with its own threshold t[r] (a loaded scalar):
    kcc/passes/widen_reroll_reduce.py leaves it a loop of rows (the four compares read t[r],
    one element a row, not shifted copies), so the lanes reach the selector's lane_test.
    (The constant-threshold kernel is rerolled into one compare a lane and widened.)"""
    text = _kernel("OR", "LT", "false", False).replace("CMPLT(1.0, ", "CMPLT(%t, ")
    text = text.replace("%b = BUFFER", "%y = PARAM ParamArg(2, float32, 4)\n%b = BUFFER")
    return text.replace("%l0 = INDEX(%v, 0)", "%yi = INDEX(%y, %r)\n%t = LOAD(%yi)\n"
                        "%l0 = INDEX(%v, 0)")


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_any_all_of_lanes_is_one_compare_and_a_mask(arch: str) -> None:
    out = io.StringIO()
    run_pipeline(parse(_row_kernel()), X86Target(arch), dump_after="select", out=out)
    text = out.getvalue()
    assert "vmovmskps_r32_x" in text and "vcmpps_x_x_xm_imm8" in text, text
    assert "vcmpss" not in text and "vshufps" not in text, text
    sink = parse(_row_kernel())
    for x in DATA:
        args = [np.zeros(1, np.bool_), x.astype(np.float32),
                np.array([1.0, 0.5, 2.0, 1.0], np.float32)]
        if arch == "x86-64-v3" or ARCHS[1].marks[0].args[0] is False:
            assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_constant_threshold_any_is_rerolled_and_widened(arch: str) -> None:
    out = io.StringIO()
    run_pipeline(parse(_kernel("OR", "LT", "false", False)), X86Target(arch),
                 dump_after="select", out=out)
    text = out.getvalue()
    # no lane compared alone: 8- or 16-lane compares, then the lanes ORed across (shuffles)
    assert "vcmpss" not in text and "vmovmskps" not in text, text
    assert "vcmpps_y" in text or "vcmpps_k_z" in text, text


def _or_chain(n: int) -> str:
    """out[0] = (x[0] < 1) | (x[1] < 1) | … as a chain of n - 1 scalar ORs."""
    lines = ["# kcc-uop 1", "%o = PARAM ParamArg(0, bool, 1)",
             f"%x = PARAM ParamArg(1, float32, {n})"]
    prev = None
    for i in range(n):
        lines += [f"%p{i} = SHRINK(%x, {i}, 1)", f"%v{i} = LOAD(%p{i})",
                  f"%l{i} = INDEX(%v{i}, 0)", f"%c{i} = CMPLT(%l{i}, 1.0)"]
        if prev is not None:
            lines.append(f"%r{i} = OR({prev}, %c{i})")
        prev = f"%r{i}" if prev is not None else f"%c{i}"
    lines += ["%po = INDEX(%o, 0)", f"%st = STORE(%po, {prev})",
              'SINK(%st) KernelInfo(name="or_chain")']
    return "\n".join(lines) + "\n"


def test_a_chain_of_ors_is_walked_from_its_root_only(monkeypatch) -> None:
    # the schedule selects a chain's inner ORs first: each walking its own subtree made the
    # compile quadratic in the chain (8000 ORs: 26 s against 3.7 s before lane_test)
    from kcc.isel.x86.select import X86Selector
    walked = []
    seen = X86Selector.lane_test

    def spy(self, u):
        if u not in self.bool_inner:
            walked.append(u)
        return seen(self, u)

    monkeypatch.setattr(X86Selector, "lane_test", spy)
    sink = parse(_or_chain(40))
    run_pipeline(sink, X86Target("x86-64-v3"))
    assert len(walked) == 1
    x = np.linspace(1.0, 2.0, 40, dtype=np.float32)
    x[37] = 0.5                                      # the one lane that makes it true
    args = [np.zeros(1, np.bool_), x]
    assert_same(sink, compile_and_run(sink, args, "x86-64-v3"), reference(sink, args))
