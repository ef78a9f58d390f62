"""x86 selection of scalar float16 values (kcc/isel/x86/alu.py to_f32/from_f32, select.py
STORE): a float16 rounded by VCVTPS2PH and read again as a float32 (the float32 ops of a half
op, passes/decompose.py lift_half) is widened from the xmm VCVTPS2PH wrote, and stored from
it with VPEXTRW, without a round trip through a general-purpose register; results bit for bit
as the reference interpreter's (round to nearest even, NaN, overflow, subnormals, -0.0)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from x86_util import ARCHS, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object


N = 24


def kernel(stride: int) -> str:
    """out_h[i] = h * b[i] and out_f[i] = float32(h * b[i] - h), h = float16(a[i]), read and
    written at i * stride (3: no two elements of a loop step are neighbours, so no vector)."""
    return f"""# kcc-uop 1
%oh = PARAM ParamArg(0, float16, {N * stride})
%of = PARAM ParamArg(1, float32, {N * stride})
%a  = PARAM ParamArg(2, float32, {N * stride})
%b  = PARAM ParamArg(3, float16, {N * stride})
%r  = RANGE({N}) (0, LOOP)
%i  = MUL(%r, {stride})
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
%e  = END(%g, %r)
SINK(%e) KernelInfo(name="half_chain")
"""

# float32 inputs at float16's edges: ties (1 + 2^-11 rounds down to even, 1 + 3 * 2^-11 up),
# overflow (65520 is the first value rounding to inf), NaN, ±inf, -0.0, subnormal halves
A = [1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504.0, 65520.0, -65520.0, float("nan"), float("inf"),
     -float("inf"), -0.0, 2 ** -24, 3 * 2 ** -25, 2 ** -14 - 2 ** -25, 0.1, -3.75, 1e-8,
     70000.0, 2048.5, -2049.0, 1.5, 0.5, 6.1e-5, -1e4, 255.875, 7.0]
B = [1.0, 1.0, 2.0, 0.5, 0.5, 1.0, 0.0, -1.0, 3.0, 0.5, 2.0, 1.0, 3.0, -0.0, 1e4, 1.0,
     1.0, 1.0, float("nan"), float("inf"), 2.0, 7.0, 0.125, 1 / 3]


def _run(stride: int, arch: str) -> str:
    """Runs kernel(stride) on the edge values, asserts bit-exact agreement with the
    interpreter, returns the disassembly."""
    sink = parse(kernel(stride), "half_chain.uop")
    m = N * stride

    def spread(v: list, dt: type) -> np.ndarray:
        out = np.full(m, 1.0, np.float32)
        out[::stride] = v
        return out.astype(dt)
    args = [np.zeros(m, np.float16), np.zeros(m, np.float32), spread(A, np.float32),
            spread(B, np.float16)]
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    for g, w in zip(got[:2], want[:2]):
        bits = f"u{g.itemsize}"
        assert np.array_equal(g.view(bits), w.view(bits)), (g, w)
    assert np.isnan(want[0]).any() and np.isinf(want[0]).any()     # the edges were reached
    return disasm_object(compile_x86([sink], arch)[0])


@pytest.mark.parametrize("arch", ARCHS)
def test_half_chain_bit_exact_without_gpr_round_trip(arch: str) -> None:
    """Scalars (stride 3): every rounding agrees with the interpreter bit for bit, and the
    kernel moves no float16 bits between an xmm and a GPR (no VMOVD with a 32-bit GPR, no
    MOVZX of a word): the half values stay in the xmm VCVTPS2PH wrote, the stores are
    VPEXTRW."""
    text = _run(3, arch)
    assert "vpextrw" in text and "vcvtps2ph" in text
    assert not re.search(r"vmovd\s+(e[a-z]+|r\d+d), xmm", text), text
    assert not re.search(r"movzx\s+\S+, \S+w\b", text), text


@pytest.mark.parametrize("arch", ARCHS)
def test_half_vectors_bit_exact(arch: str) -> None:
    """Contiguous (stride 1): the loop runs on float16 vectors (kcc/isel/x86/half.py), one
    VCVTPS2PH of 4 or 8 lanes where each lane rounds, no lane taken apart or rebuilt, and
    every lane agrees with the interpreter bit for bit."""
    text = _run(1, arch)
    assert re.search(r"vcvtps2ph\s+xmm\d+, ymm", text) or \
        re.search(r"vcvtph2ps\s+ymm", text), text
    assert "vpextrw" not in text and "vpinsrw" not in text, text


I2H = f"""# kcc-uop 1
%o = PARAM ParamArg(0, float16, 16)
%a = PARAM ParamArg(1, int32, 16)
%b = PARAM ParamArg(2, float16, 16)
%r = RANGE(2) (0, LOOP)
%s = MUL(%r, 8)
%pa = SHRINK(%a, %s, 8)
%va = LOAD(%pa)
%h = CAST(%va) float16
%g = CMPLT(%r, 1)
%pb = SHRINK(%b, %s, 8)
%h0 = CAST(0.5) float16
%z = STACK({", ".join(["%h0"] * 8)})
%vb = LOAD(%pb, %z, %g)
%m = MUL(%h, %vb)
%po = SHRINK(%o, %s, 8)
%st = STORE(%po, %m)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="i2h")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_int32_to_half_vector_and_gated_half_load(arch: str) -> None:
    """int32 lanes → float16 lanes through float32 (VCVTDQ2PS, VCVTPS2PH) round once, as
    numpy's direct conversion does (ties to even, 65520 and 2^24 + 1 to inf), and a gated
    float16 vector load takes its alternative lanes where the gate is false."""
    sink = parse(I2H, "i2h.uop")
    a = np.array([2049, 2051, 65519, 65520, 2 ** 24 + 1, 2 ** 31 - 1, -2 ** 31, -65520,
                  0, -1, 4097, -4099, 1000001, 65504, -2049, 3], np.int32)
    b = np.array([1.0, -1.0, 0.5, 2.0, 1.0, 1.0, 1.0, 1.0] + [9.0] * 8, np.float16)
    args = [np.zeros(16, np.float16), a, b]
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    assert np.array_equal(got[0].view(np.uint16), want[0].view(np.uint16)), (got[0], want[0])
    with np.errstate(over="ignore"):               # 65520 and beyond: inf, as wanted
        expect = a.astype(np.float16) * np.where(np.arange(16) < 8, b, np.float16(0.5))
    assert np.array_equal(got[0].view(np.uint16), expect.astype(np.float16).view(np.uint16))
    if arch == "x86-64-v3":
        text = disasm_object(compile_x86([sink], arch)[0])
        assert "vcvtdq2ps" in text and "vcvtsi2ss" not in text, text


@pytest.mark.parametrize("arch", ARCHS)
def test_bfloat16_bit_rounding_runs_on_uint32_vectors(arch: str) -> None:
    """tinygrad's bfloat16 rounding as uint32 bit operations (the value narrowed to uint16
    and widened back, which simplify makes one AND) runs on uint32 vectors, not lane by lane
    in GPRs, and agrees bit for bit with the interpreter on ties, NaN, inf and subnormals."""
    from x86_util import REPO
    sink = parse((REPO / "tests" / "data" / "kernels" / "bf16_round_trip.uop").read_text())
    rs = np.random.default_rng(5)
    bits = rs.integers(0, 2 ** 32, 256, dtype=np.uint32)
    bits[:8] = [0x3F808000, 0x3F818000, 0x7F800000, 0xFF800001, 0x7FC00000, 0x00008000,
                0x7F7FFFFF, 0x80000000]              # ties to even, inf, NaNs, subnormal, max
    x = bits.view(np.float32)
    args = [np.zeros(256, np.float32), x.copy()]
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32))
    text = disasm_object(compile_x86([sink], arch)[0])
    assert "vpsrld" in text and "cmov" not in text and "movzx" not in text, text


def test_bfloat16_row_sum_scalar_bit_work() -> None:
    """The scalar bfloat16 rounding of a row sum (a float add chain, no vector): each float is
    read straight into a GPR (MOV, no VMOVSS + VMOVD), each select is TEST + CMOVcc (no CMP +
    SETcc + TEST), the top half kept by one AND; bit-exact against the interpreter."""
    from x86_util import REPO
    sink = parse((REPO / "tests" / "data" / "kernels" / "bf16_sum_rows.uop").read_text())
    rs = np.random.default_rng(9)
    bits = rs.integers(0, 2 ** 32, 25641, dtype=np.uint32)
    bits[:6] = [0x3F808000, 0x3F818000, 0x7F800000, 0x7FC00001, 0x00018000, 0x80000000]
    args = [np.zeros(333, np.float32), bits.view(np.float32)]
    want = reference(sink, args)
    got = compile_and_run(sink, args, "x86-64-v3")
    assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32))
    text = disasm_object(compile_x86([sink], "x86-64-v3")[0])
    assert "setne" not in text and "cmovne" in text and "0xffff0000" in text, text
    assert not re.search(r"vmovd\s+(e[a-z]+|r\d+d), xmm", text.split("jl")[0]), text
