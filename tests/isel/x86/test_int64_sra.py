"""int64 lanes shifted right arithmetically on x86-64-v4 (issue 24 item 2: int64_arith E_91,
0.33x clang: `x*3 - (y >> 5)` on int64 stayed scalar, AVX2 having no 64-bit arithmetic shift).

x86-64-v4 declares SHR legal on int64 vectors (kcc/isel/x86/ivec.py V4_OPS64, ZMM_INT_OPS):
VPSRAQ by an immediate, VPSRAVQ by a vector of amounts (AVX512F/VL; rows with llvm-mc's bytes
in golden/x86/evex.s). x86-64-v3 keeps the scalar SAR. The oracle of every value is the
reference interpreter, on negative values and values at int64's ends.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import NEEDS_V4, assert_same, compile_and_run, reference


def _kernel(amount: str) -> str:
    """out[i] = x[i]*3 - (y[i] >> amount) over 91 int64 elements (the sweep's int64_arith);
    amount is `%c5` (a constant) or `%s` (a third buffer's element)."""
    if amount == "%s":
        defs = "%sp = INDEX(%s_, %i)\n%s = LOAD(%sp)"
    else:
        defs = "%c5 = CAST(5) int64"
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, int64, 91)
%x = PARAM ParamArg(1, int64, 91)
%y = PARAM ParamArg(2, int64, 91)
%s_ = PARAM ParamArg(3, int64, 91)
%n = CAST(91) int32
%three = CAST(3) int64
%i = RANGE(%n) (0, WEAK)
%xp = INDEX(%x, %i)
%xv = LOAD(%xp)
%yp = INDEX(%y, %i)
%yv = LOAD(%yp)
{defs}
%m = MUL(%xv, %three)
%r = SHR(%yv, {amount})
%d = SUB(%m, %r)
%op = INDEX(%o, %i)
%st = STORE(%op, %d)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="i64sra")
"""


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


def _args() -> list:
    rng = np.random.default_rng(3)
    info = np.iinfo(np.int64)
    x = rng.integers(info.min, info.max, 91, dtype=np.int64, endpoint=True)
    y = rng.integers(info.min, info.max, 91, dtype=np.int64, endpoint=True)
    y[:6] = [info.min, info.max, -1, 0, 1, -33]
    s = rng.integers(0, 64, 91, dtype=np.int64)
    return [np.zeros(91, np.int64), x, y, s]


@NEEDS_V4
@pytest.mark.parametrize("amount,form", [("%c5", "vpsraq_y_ym_imm8"), ("%s", "vpsravq")])
def test_int64_shr_is_a_vector_shift_on_v4(amount: str, form: str) -> None:
    """The loop is widened: VPSRAQ (a constant amount) or VPSRAVQ, no scalar SAR."""
    text = _kernel(amount)
    sel = _selected(text, "x86-64-v4")
    assert form in sel and "sar_" not in sel, sel
    sink = parse(text)
    args = _args()
    assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


@pytest.mark.parametrize("amount", ["%c5", "%s"])
def test_int64_shr_on_v3_is_right(amount: str) -> None:
    """x86-64-v3 (no VPSRAQ) computes the same values."""
    sink = parse(_kernel(amount))
    args = _args()
    assert_same(sink, compile_and_run(sink, args, "x86-64-v3"), reference(sink, args))
