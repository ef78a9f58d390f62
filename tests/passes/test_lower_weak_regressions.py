"""Regressions of weak-dtype lowering (kcc/passes/lower_weak.py) an independent fuzzer found
(issue 12 §1-2): a weak int beside a weak float refused at its line, weak float division and
products beside half values computed in float64 and rounded once. Oracle: the reference
interpreter, checked against plain Python here where the issue gives the value.
"""

from __future__ import annotations

import numpy as np
import pytest

from fuzz.harness import check_x86, run_reference, run_x86
from kcc.frontend.errors import SourceError
from kcc.frontend.parser import parse
from ptx_util import HEAD, k, ptx_of
from kcc.ir.ops import Ops
from kcc.passes.lower_weak import lower_weak_dtypes



def _check(text: str, seeds: range = range(4)) -> None:
    sink = k(text)
    for seed in seeds:
        check_x86(sink, seed)




# -- weak dtypes ---------------------------------------------------------------------------

@pytest.mark.parametrize("expr,col", [("ADD(%i, 2.5)", 14), ("MUL(%i, 0.5)", 14),
                                      ("ADD(1, 2.5)", 13), ("CMPLT(%g, 0.5)", 16)])
def test_weak_int_beside_weak_float_is_refused_at_its_line(expr: str, col: int) -> None:
    """A float literal beside an integer (weakint too) is an error (docs/uop-format.md,
    Types): refused with its line and column, never a KeyError in the interpreter."""
    text = f"""%o = PARAM ParamArg(0, float32, 4)
%g = SPECIAL(4) "gidx0"
%i = RANGE(4) (0, LOOP)
%v = {expr}
%p = INDEX(%o, %i)
%s = STORE(%p, 1.0)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""
    with pytest.raises(SourceError) as e:
        parse(HEAD + text, "w.uop")
    msg = str(e.value)
    assert msg.startswith(f"w.uop:5:{col}: error: a float literal cannot combine with a "
                          "weakint"), msg


def test_weak_float_division_is_float64_rounded_once() -> None:
    """STORE(float32, FDIV(0.001, 0.2)): the float64 quotient rounded once is 0x3ba3d70a; a
    float32 division gives 0x3ba3d70b. Interpreter, x86 and the PTX constant agree."""
    sink = k("""%o = PARAM ParamArg(0, float32, 1)
%v = FDIV(0.001, 0.2)
%p = INDEX(%o, 0)
%s = STORE(%p, %v)
SINK(%s) KernelInfo(name="k")
""")
    want = np.float32(np.float64(0.001) / np.float64(0.2)).view(np.uint32)
    assert int(want) == 0x3BA3D70A
    ref = run_reference(sink, [np.zeros(1, np.float32)])
    assert int(ref[0].view(np.uint32)[0]) == 0x3BA3D70A
    got = run_x86(sink, [np.zeros(1, np.float32)])
    assert int(got[0].view(np.uint32)[0]) == 0x3BA3D70A
    assert "0f3BA3D70A" in ptx_of(sink)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_weak_float_product_beside_half_value_is_float64(dt: str) -> None:
    """MUL(0.001, 1e10) beside a half value: computed in float64 (1e7), converted once; no
    MUL in the half dtype survives lowering, and x86 matches the interpreter."""
    text = f"""%o = PARAM ParamArg(0, {dt}, 4)
%x = PARAM ParamArg(1, {dt}, 4)
%i = RANGE(4) (0, LOOP)
%xi = INDEX(%x, %i)
%xv = LOAD(%xi)
%w = MUL(0.001, 1e10)
%v = ADD(%xv, %w)
%oi = INDEX(%o, %i)
%s = STORE(%oi, %v)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""
    sink = k(text)
    low = lower_weak_dtypes(sink)
    muls = [u for u in low.toposort() if u.op is Ops.MUL]
    assert [u.dtype.name for u in muls] == ["float64"]
    xs = np.zeros(4, np.float16 if dt == "float16" else np.uint16)
    ref = run_reference(sink, [xs.copy(), xs.copy()])
    # 1e7 rounded once: float16 overflows to inf (0x7c00); bfloat16 1e7 (0x4b189680 in
    # float32) is 0x4b19
    assert ref[0].view(np.uint16).tolist() == [0x7C00 if dt == "float16" else 0x4B19] * 4
    _check(text)
