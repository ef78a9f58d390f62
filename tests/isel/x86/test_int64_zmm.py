"""int64/uint64 x 8 in a zmm on x86-64-v4 (kcc/isel/x86/ivec.py ZMM_INT_OPS): float64 bit work
(exp2's 2^k, sin's Payne-Hanek reduction) stays one zmm instead of two ymm halves or eight
scalar lanes (64-bit MUL one VPMULLQ), and every lane matches the interpreter."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference


_SPLAT = ", ".join(["{0}"] * 8)
# float64 lanes read as uint64, through every zmm op (shift by a constant and by a vector,
# SUB, NEG, XOR, ADD, OR, AND, MUL, CMPEQ and WHERE), back to float64 as bits and as
# values (CAST of uint64 and of int64 lanes); and the float64 lanes cast to uint64 (truncated,
# saturated, NaN 0: docs/semantics.md)
SRC = f"""# kcc-uop 1
%0 = PARAM ParamArg(0, float64, 64)
%1 = PARAM ParamArg(1, float64, 64)
%2 = CAST(8) int32
%3 = RANGE(%2) (0, WEAK)
%4 = MUL(%3, %2)
%5 = SHRINK(%1, %4, 8)
%6 = LOAD(%5)
%7 = BITCAST(%6) uint64
%8 = CAST(52) uint64
%9 = STACK({_SPLAT.format('%8')})
%10 = SHR(%7, %9)
%11 = CAST(3) uint64
%12 = STACK({_SPLAT.format('%11')})
%13 = SUB(%10, %12)
%14 = SHL(%13, %9)
%15 = NEG(%14)
%16 = XOR(%15, %7)
%17 = ADD(%16, %12)
%18 = OR(%17, %10)
%19 = AND(%18, %7)
%20 = CAST(63) uint64
%21 = STACK({_SPLAT.format('%20')})
%22 = AND(%10, %21)
%23 = SHL(%19, %22)
%24 = SHR(%7, %22)
%25 = XOR(%23, %24)
%30 = MUL(%25, %7)
%31 = CMPEQ(%22, %12)
%32 = WHERE(%31, %30, %25)
%26 = BITCAST(%32) float64
%27 = SHRINK(%0, %4, 8)
%28 = STORE(%27, %26)
%33 = PARAM ParamArg(2, float64, 64)
%34 = CAST(%32) float64
%35 = BITCAST(%32) int64
%36 = CAST(%35) float64
%37 = SUB(%34, %36)
%38 = SHRINK(%33, %4, 8)
%39 = STORE(%38, %37)
%41 = PARAM ParamArg(3, uint64, 64)
%42 = CAST(%6) uint64
%43 = SHRINK(%41, %4, 8)
%44 = STORE(%43, %42)
%40 = GROUP(%28, %39, %44)
%29 = END(%40, %3)
SINK(%29) KernelInfo(name="i64z")
"""


def test_uint64_lanes_stay_in_one_zmm() -> None:
    obj, _ = compile_x86([parse(SRC)], "x86-64-v4")
    text = disasm_object(obj)
    for form in ("vpsrlq zmm", "vpsubq zmm", "vpsllq zmm", "vpsllvq zmm", "vpsrlvq zmm",
                 "vpaddq zmm", "vpmullq zmm", "vpcmpeqq k", "vpblendmq zmm",
                 "vcvtuqq2pd zmm", "vcvtqq2pd zmm", "vcvttpd2uqq zmm"):
        assert form in text, form
    # no lane taken apart or put together through a GPR (the uint64 x 8 result is stored as
    # two ymm halves: no zmm integer stores, kcc/targets/x86/arch.py)
    assert not re.search(r"vpextrq|vpinsrq|vmovq", text)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_uint64_lanes_match_the_interpreter(arch: str) -> None:
    if arch == "x86-64-v4" and not HAS_V4:
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(SRC)
    args = random_inputs(sink)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1e300, 1e300, 64)
    x[:16] = rng.uniform(-2.0, 2.0 ** 65, 16)          # in range, just past 2^64, negative
    x[16:24] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0 ** 64, 2.0 ** 64 - 2048]
    x[24:32] = rng.uniform(0.0, 2.0 ** 40, 8)
    args[1] = x
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
