"""int64/uint64 x 8 compares and MAX in a zmm on x86-64-v4 (kcc/isel/x86/ivec.py _ZMM_OPS64:
VPCMP[U]Q into an opmask, MAX as VPCMP + VPBLENDMQ) and bool x 8 cast to 64-bit lanes
(kcc/targets/x86/arch.py _vector_cast_v4: VMOVDQU64 zmm {k}{z}). Before, these split the
zmm into two ymm halves, and the 8-lane opmask was put together bit by bit through GPRs
(KMOVD, SHR, AND, MOVZX, SHL, OR: ~50 instructions twice in f64_sin E_64_4's Payne-Hanek
reduction, which then ran 0.86-0.97x of clang; 11% faster with this). Every lane matches the
interpreter."""

from __future__ import annotations

import re

import pytest

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

# uint64 lanes: SHR, MAX, CMPLT (unsigned), CMPNE, their CASTs to uint64, ADD; int64 lanes:
# MAX and CMPLT (signed) as a WHERE's condition on uint64 and on float64 lanes; a compare
# stored as bools
SRC = """# kcc-uop 1
%0 = PARAM ParamArg(0, uint64, 64)
%1 = PARAM ParamArg(1, float64, 64)
%2 = CAST(8) int32
%3 = RANGE(%2) (0, WEAK)
%4 = MUL(%3, %2)
%5 = SHRINK(%1, %4, 8)
%6 = LOAD(%5)
%7 = BITCAST(%6) uint64
%8 = CAST(1000) uint64
%9 = STACK(%8, %8, %8, %8, %8, %8, %8, %8)
%42 = CAST(52) uint64
%43 = STACK(%42, %42, %42, %42, %42, %42, %42, %42)
%10 = SHR(%7, %43)
%11 = MAX(%10, %9)
%12 = CMPLT(%11, %7)
%13 = CAST(%12) uint64
%14 = CMPNE(%11, %10)
%15 = CAST(%14) uint64
%16 = ADD(%13, %15)
%17 = ADD(%16, %11)
%18 = BITCAST(%6) int64
%19 = BITCAST(%9) int64
%20 = MAX(%18, %19)
%21 = CMPLT(%20, %18)
%22 = CAST(%21) uint64
%23 = BITCAST(%20) uint64
%24 = WHERE(%21, %23, %17)
%25 = ADD(%24, %22)
%26 = SHRINK(%0, %4, 8)
%27 = STORE(%26, %25)
%28 = PARAM ParamArg(2, bool, 64)
%29 = SHRINK(%28, %4, 8)
%30 = STORE(%29, %14)
%31 = PARAM ParamArg(3, float64, 64)
%35 = MUL(%6, %6)
%36 = WHERE(%21, %35, %6)
%33 = SHRINK(%31, %4, 8)
%34 = STORE(%33, %36)
%40 = GROUP(%27, %30, %34)
%41 = END(%40, %3)
SINK(%41) KernelInfo(name="cmp64z")
"""


def test_compares_stay_in_one_zmm() -> None:
    obj, _ = compile_x86([parse(SRC)], "x86-64-v4")
    text = disasm_object(obj)
    for form in ("vpcmpltuq k", "vpcmpltq k", "vpcmpneqq k", "vpblendmq zmm",
                 "vmovdqu64 zmm"):
        assert form in text, form
    # no opmask taken apart or put together through a GPR, no lane moved through one
    assert not re.search(r"kmov[bwdq] e|movzx|vpextrq|vpinsrq", text)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", [0, 1])
def test_compares_match_the_interpreter(arch: str, seed: int) -> None:
    sink = parse(SRC)
    args = random_inputs(sink, seed)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
