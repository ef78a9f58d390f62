"""64-bit integer lanes multiplied by a constant of the form 2^a ± 2^b as shifts and one add
or subtract on x86-64-v4 (kcc/isel/x86/ivec.py ivec_mul_const; issue 24 item 2: int64_arith
E_91's `x*3`, one VPMULLQ of three µops and 15 cycles, where clang adds x + x + x). Other
constants keep VPMULLQ. The oracle of every value is the reference interpreter, on values at
the ends of the dtype (the products wrap modulo 2^64)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import NEEDS_V4, assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.isel.x86.ivec import shift_terms
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target


def _kernel(dt: str, c: int) -> str:
    """out[i] = x[i] * c over 91 elements of dt."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, 91)
%x = PARAM ParamArg(1, {dt}, 91)
%n = CAST(91) int32
%c = CAST({c}) {dt}
%i = RANGE(%n) (0, WEAK)
%xp = INDEX(%x, %i)
%xv = LOAD(%xp)
%m = MUL(%xv, %c)
%op = INDEX(%o, %i)
%st = STORE(%op, %m)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="mulc")
"""


def _selected(text: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target("x86-64-v4"), dump_after="select", out=out)
    return out.getvalue()


def _args(dt: str) -> list:
    rng = np.random.default_rng(5)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, 91, dtype=dt, endpoint=True)
    x[:5] = [info.min, info.max, 0, 1, info.max // 3]
    return [np.zeros(91, dt), x]


def test_shift_terms() -> None:
    assert shift_terms(8, 64) == (3, -1, "+")
    assert shift_terms(3, 64) == (1, 0, "+")
    assert shift_terms(10, 64) == (3, 1, "+")
    assert shift_terms(7, 64) == (3, 0, "-")
    assert shift_terms(1 << 63, 64) == (63, -1, "+")
    assert shift_terms(-1, 64) is None            # 2^64 - 1: no shift by 64
    assert shift_terms(11, 64) is None and shift_terms(0, 64) is None


@NEEDS_V4
@pytest.mark.parametrize("dt", ["int64", "uint64"])
@pytest.mark.parametrize("c,shifts", [(3, True), (2, True), (8, True), (10, True), (7, True),
                                      (1 << 63, True), (11, False), (0x123456789, False)])
def test_a_constant_of_two_powers_is_shifts_and_an_add(dt: str, c: int, shifts: bool) -> None:
    if dt == "int64" and c >= 1 << 63:
        c -= 1 << 64
    text = _kernel(dt, c)
    sel = _selected(text)
    assert ("vpmullq" not in sel) == shifts, sel
    assert "imul" not in sel                      # the loop is widened either way
    sink = parse(text)
    args = _args(dt)
    assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))
