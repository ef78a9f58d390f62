"""x86 selection of scalar float16 values (kcc/isel/x86/alu.py to_f32/from_f32, select.py
STORE): a float16 rounded by VCVTPS2PH and read again as a float32 (the float32 ops of a half
op, passes/decompose.py lift_half) is widened from the xmm VCVTPS2PH wrote, and stored from
it with VPEXTRW, without a round trip through a general-purpose register; results bit for bit
as the reference interpreter's (round to nearest even, NaN, overflow, subnormals, -0.0)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from x86_util import compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import V4_FLAGS, compile_x86, cpu_flags, disasm_object

HAS_V4 = all(f in cpu_flags() for f in V4_FLAGS)
ARCHS = ["x86-64-v3", pytest.param("x86-64-v4", marks=pytest.mark.skipif(
    not HAS_V4, reason="this CPU has no AVX-512 (x86-64-v4 objects cannot run here)"))]

N = 24
KERNEL = f"""# kcc-uop 1
%oh = PARAM ParamArg(0, float16, {N})
%of = PARAM ParamArg(1, float32, {N})
%a  = PARAM ParamArg(2, float32, {N})
%b  = PARAM ParamArg(3, float16, {N})
%i  = RANGE({N}) (0, LOOP)
%pa = INDEX(%a, %i)
%la = LOAD(%pa)
%pb = INDEX(%b, %i)
%lb = LOAD(%pb)
%h  = CAST(%la) float16
%m  = MUL(%h, %lb)
%d  = SUB(%m, %h)
%f  = CAST(%d) float32
%ph = INDEX(%oh, %i)
%s1 = STORE(%ph, %m)
%pf = INDEX(%of, %i)
%s2 = STORE(%pf, %f)
%g  = GROUP(%s1, %s2)
%e  = END(%g, %i)
SINK(%e) KernelInfo(name="half_chain")
"""

# float32 inputs at float16's edges: ties (1 + 2^-11 rounds down to even, 1 + 3 * 2^-11 up),
# overflow (65520 is the first value rounding to inf), NaN, ±inf, -0.0, subnormal halves
A = [1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504.0, 65520.0, -65520.0, float("nan"), float("inf"),
     -float("inf"), -0.0, 2 ** -24, 3 * 2 ** -25, 2 ** -14 - 2 ** -25, 0.1, -3.75, 1e-8,
     70000.0, 2048.5, -2049.0, 1.5, 0.5, 6.1e-5, -1e4, 255.875, 7.0]
B = [1.0, 1.0, 2.0, 0.5, 0.5, 1.0, 0.0, -1.0, 3.0, 0.5, 2.0, 1.0, 3.0, -0.0, 1e4, 1.0,
     1.0, 1.0, float("nan"), float("inf"), 2.0, 7.0, 0.125, 1 / 3]


@pytest.mark.parametrize("arch", ARCHS)
def test_half_chain_bit_exact_without_gpr_round_trip(arch: str) -> None:
    """Every rounding agrees with the interpreter bit for bit, and the kernel moves no float16
    bits between an xmm and a GPR (no VMOVD with a 32-bit GPR, no MOVZX of a word): the
    half values stay in the xmm VCVTPS2PH wrote, and the stores are VPEXTRW."""
    sink = parse(KERNEL, "half_chain.uop")
    args = [np.zeros(N, np.float16), np.zeros(N, np.float32), np.array(A, np.float32),
            np.array(B, np.float32).astype(np.float16)]
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    for g, w in zip(got[:2], want[:2]):
        bits = f"u{g.itemsize}"
        assert np.array_equal(g.view(bits), w.view(bits)), (g, w)
    assert np.isnan(want[0]).any() and np.isinf(want[0]).any()     # the edges were reached
    text = disasm_object(compile_x86([sink], arch)[0])
    assert "vpextrw" in text and "vcvtps2ph" in text
    assert not re.search(r"vmovd\s+(e[a-z]+|r\d+d), xmm", text), text
    assert not re.search(r"movzx\s+\S+, \S+w\b", text), text
