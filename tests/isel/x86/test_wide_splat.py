"""A scalar splat to fewer lanes after a wider splat of it in the same loop nest is the wider
register's low lanes (kcc/isel/x86/analysis.py `wider_splats`): a widened row's narrow last block
(kcc/passes/widen_stride.py `_narrow`) beside its full blocks broadcasts its row's scalar
once. one_hot E_64_10 (a byte compared with 10 column indexes: 8 lanes, then 4 over the last
2) and shrink_expand E_35_50 (a float times rows of 50: 3 zmm, then an xmm). Values as the
reference interpreter's, at x86-64-v3 and (where the CPU has it) x86-64-v4."""

from __future__ import annotations

import re

import pytest
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object

ONE_HOT = """# kcc-uop 1
%o = PARAM ParamArg(0, int32, 640)
%a = PARAM ParamArg(1, uint8, 64)
%r = RANGE(64) (0, WEAK)
%ap = INDEX(%a, %r)
%x = LOAD(%ap)
%xi = CAST(%x) int32
%c = RANGE(10, %r) (1, WEAK)
%p = MULACC(%r, 10, %c)
%op = INDEX(%o, %p)
%ne = CMPNE(%xi, %c)
%v = WHERE(%ne, 0, 1)
%st = STORE(%op, %v)
%e = END(%st, %c)
%e2 = END(%e, %r)
SINK(%e2) KernelInfo(name="one_hot")
"""

ROW_SCALE = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 1750)
%s = PARAM ParamArg(1, float32, 35)
%a = PARAM ParamArg(2, float32, 1750)
%r = RANGE(35) (0, WEAK)
%sp = INDEX(%s, %r)
%k = LOAD(%sp)
%c = RANGE(50, %r) (1, WEAK)
%p = MULACC(%r, 50, %c)
%ap = INDEX(%a, %p)
%x = LOAD(%ap)
%y = MUL(%k, %x)
%op = INDEX(%o, %p)
%st = STORE(%op, %y)
%e = END(%st, %c)
%e2 = END(%e, %r)
SINK(%e2) KernelInfo(name="row_scale")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("text, splat", [(ONE_HOT, "vpbroadcastd"),
                                         (ROW_SCALE, "vbroadcastss")])
def test_a_row_scalar_is_broadcast_once(arch: str, text: str, splat: str) -> None:
    sink = parse(text)
    asm = disasm_object(compile_x86([sink], arch)[0])
    assert len(re.findall(rf"\b{splat}\b", asm)) == 1, asm
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
