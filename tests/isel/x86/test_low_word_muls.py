"""int32 vector products of which only the low 16 bits of each lane are read (through wrapping
adds/multiplies/bitwise ops to a CAST of at most 16 bits) are VPMULLW on the dwords' words:
one µop where VPMULLD is two (kcc/isel/x86/analysis.py low_word_muls; tinygrad's
int8_matmul r_8_8_8, int32 products summed and truncated to int8, 23.5 → 15–17 ns against
clang's 21, issue 24 item 2). A product read at more bits keeps VPMULLD. The oracle of every
value is the reference interpreter, on values at the ends of int32."""

from __future__ import annotations


import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference, selected_text

from kcc.frontend.parser import parse
from kcc.targets.x86.target import V4_FLAGS, cpu_flags

V4 = all(f in cpu_flags() for f in V4_FLAGS)
ARCHES = ["x86-64-v3"] + (["x86-64-v4"] if V4 else [])


def _kernel(out: str, tail: str) -> str:
    """out[i] = CAST((a[i] * b[i]) TAIL) out over 64 elements (TAIL: ops after the product)."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {out}, 64)
%a = PARAM ParamArg(1, int32, 64)
%b = PARAM ParamArg(2, int32, 64)
%n = CAST(64) int32
%i = RANGE(%n) (0, WEAK)
%ap = INDEX(%a, %i)
%av = LOAD(%ap)
%bp = INDEX(%b, %i)
%bv = LOAD(%bp)
%m = MUL(%av, %bv)
{tail}
%r = CAST(%t) {out}
%op = INDEX(%o, %i)
%st = STORE(%op, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="lowmul")
"""


CASES = {   # name: (out dtype, ops after the product, VPMULLW expected)
    "int8_sum": ("int8", "%t = ADD(%m, %av)", True),
    "uint16_xor": ("uint16", "%x = XOR(%m, %bv)\n%t = MUL(%x, %av)", True),
    "int16_sub": ("int16", "%t = SUB(%av, %m)", True),
    "int32_out": ("int32", "%t = ADD(%m, %av)", False),
    "float_out": ("float32", "%t = ADD(%m, %av)", False),
    "shift": ("int8", "%s = CAST(9) int32\n%t = SHR(%m, %s)", False),
}



def _args(out: str) -> list:
    rng = np.random.default_rng(7)
    a = rng.integers(-2**31, 2**31 - 1, 64, dtype=np.int32, endpoint=True)
    b = rng.integers(-2**31, 2**31 - 1, 64, dtype=np.int32, endpoint=True)
    a[:4] = [-2**31, 2**31 - 1, -1, 0x7FFF]
    b[:4] = [-1, 2**31 - 1, -2**31, 0x8001]
    return [np.zeros(64, out), a, b]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_products_read_at_16_bits_or_fewer_are_word_multiplies(case: str, arch: str) -> None:
    out, tail, word = CASES[case]
    text = _kernel(out, tail)
    sel = selected_text(text, arch)
    assert ("vpmullw" in sel) == word and ("vpmulld" in sel) != word, sel
    sink = parse(text)
    args = _args(out)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
