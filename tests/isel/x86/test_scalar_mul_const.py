"""Scalar integer multiplies by small constants (kcc/isel/x86/alu.py ialu): x * 3, 5, 9 on
int32/int64 (and their unsigned twins) are one LEA [x + x*(c-1)], x * 2^k a shift, other
constants IMUL by an immediate. The oracle is the reference interpreter, on full-range values
whose products wrap."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import assert_same, compile_and_run, reference

# one element a worker (a scalar kernel: nothing for the vectorizer to widen)
TEXT = """# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, 16)
%x = PARAM ParamArg(1, {dt}, 16)
%g = SPECIAL(16) "gidx0"
%px = INDEX(%x, %g)
%v = LOAD(%px)
%c = CAST({c}) {dt}
%m = MUL(%v, %c)
%po = INDEX(%o, %g)
%st = STORE(%po, %m)
SINK(%st) KernelInfo(name="mulc")
"""


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("c", [3, 5, 7, 9, 8])
def test_small_constant_multiplies(dt: str, c: int) -> None:
    text = TEXT.format(dt=dt, c=c)
    sel = _selected(text, "x86-64-v3")
    bits = np.dtype(dt).itemsize * 8
    if c in (3, 5, 9):
        assert f"lea_r{bits}_m" in sel and "imul" not in sel, sel
    elif c == 7:
        assert "imul" in sel, sel
    sink = parse(text)
    info = np.iinfo(dt)
    rng = np.random.default_rng(c)
    x = rng.integers(info.min, info.max, 16, dtype=dt, endpoint=True)
    x[:4] = [info.min, info.max, 0, 1] if info.min < 0 else [info.max, info.max - 1, 0, 1]
    args = [np.zeros(16, dt), x]
    assert_same(sink, compile_and_run(sink, args, "x86-64-v3"), reference(sink, args))
