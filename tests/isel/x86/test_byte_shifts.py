"""int8/uint8 vector shifts (kcc/isel/x86/ivec.py ivec_shift8; issue 24, item 2: shift_u8 and
bitwise_u8 E_16_4 shifted 4 bytes an iteration with scalar SHL/SHR since x86 has no byte
shift). By a constant: a word shift and a byte mask; by per-lane amounts: a multiply by 2^s
(SHL) or three masked steps blended by the amount's bits (SHR), arithmetic SHR sign-extended
by (r ^ m) - m. The oracle is the reference interpreter, on every byte value and amount."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import ARCHS, assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

N = 256 * 8             # every byte value with every amount 0..7


def _kernel(dt: str, op: str, amount: str, n: int) -> str:
    """out[i] = x[i] OP amount (a constant, or s[i]) over N lanes, n to a loop step."""
    splat = "STACK(" + ", ".join(["%c"] * n) + ")"
    shift = f"%cv = {splat}\n%r = {op}(%v, %cv)" if amount != "s" \
        else f"%sv = LOAD(%sp)\n%r = {op}(%v, %sv)"
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {N})
%x = PARAM ParamArg(1, {dt}, {N})
%s = PARAM ParamArg(2, {dt}, {N})
{"" if amount == "s" else f"%c = CAST({amount}) {dt}"}
%i = RANGE({N // n}) (0, LOOP)
%k = MUL(%i, {n})
%p = SHRINK(%x, %k, {n})
{"%sp = SHRINK(%s, %k, " + str(n) + ")" if amount == "s" else ""}
%v = LOAD(%p)
{shift}
%q = SHRINK(%o, %k, {n})
%st = STORE(%q, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="sh8")
"""


def _args(dt: str) -> list[np.ndarray]:
    x = np.tile(np.arange(256, dtype=np.uint8), 8).view(dt)
    s = np.repeat(np.arange(8, dtype=np.uint8), 256).view(dt)
    return [np.zeros(N, dt), x, s]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["uint8", "int8"])
@pytest.mark.parametrize("op", ["SHL", "SHR"])
@pytest.mark.parametrize("amount", ["0", "1", "3", "7", "s"])
@pytest.mark.parametrize("n", [16, 32])
def test_byte_shifts_as_the_interpreter(arch: str, dt: str, op: str, amount: str,
                                        n: int) -> None:
    sink = parse(_kernel(dt, op, amount, n))
    args = _args(dt)
    want = reference(sink, args)
    x = args[1].astype(np.int64)
    k = args[2].astype(np.int64) if amount == "s" else int(amount)
    expect = (x << k) if op == "SHL" else (x >> k)      # numpy: arithmetic for int8
    assert np.array_equal(want[0], expect.astype(dt))   # the oracle means what we think
    assert_same(sink, compile_and_run(sink, args, arch), want)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt,op,amount,forms", [
    ("uint8", "SHL", "1", ("vpaddb_y_y_ym",)),
    ("int8", "SHL", "3", ("vpsllw_y_y_imm8", "vpand_y_y_ym")),
    ("uint8", "SHR", "3", ("vpsrlw_y_y_imm8", "vpand_y_y_ym")),
    ("int8", "SHR", "3", ("vpsrlw_y_y_imm8", "vpxor_y_y_ym", "vpsubb_y_y_ym")),
    ("uint8", "SHL", "s", ("vpshufb_y_y_ym", "vpmullw_y_y_ym")),
    ("uint8", "SHR", "s", ("vpblendvb_y_y_ym_y",)),
])
def test_byte_shifts_are_vector_forms(arch: str, dt: str, op: str, amount: str,
                                      forms: tuple[str, ...]) -> None:
    out = io.StringIO()
    run_pipeline(parse(_kernel(dt, op, amount, 32)), X86Target(arch), dump_after="select",
                 out=out)
    text = out.getvalue()
    assert all(f in text for f in forms), text
    assert "shl_rm" not in text and "shr_rm" not in text and "sar_rm" not in text, text
    assert "vpextrb" not in text, text
