"""V_DIV_SCALE / V_DIV_FMAS / V_DIV_FIXUP (kcc/targets/amd/emu/valu_div.py): values worked
out by hand from the RDNA3 manual's pseudocode and, where it is incomplete, from the reading
its module docstring gives (checked on llc-19's division macro in test_emu_fdiv.py) and the
values tinygrad's test/amd/hw/test_vop3.py expects of a gfx11 part."""

from __future__ import annotations

import struct

import pytest

from kcc.encode.amd.operands import SGPR, VGPR, Inst
from tests.targets.amd.emu.test_emu_ops import ARCHS, SENTINEL, lanes, make, run, vcc

V, S = VGPR, SGPR


def f2u(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


@pytest.mark.parametrize("arch", ARCHS)
def test_div_fixup_special_cases(arch):
    w = make(arch, active=6)
    lanes(w, 1, [f2u(0.75)] * 6)  # the quotient
    lanes(w, 2, [f2u(-2.0), 0, 0, 0x7F800000, 0x7F800000, f2u(1.0)])  # denominator
    lanes(w, 3, [f2u(1.5), 0, f2u(-3.0), f2u(2.0), 0xFF800000, 0x7F800001])  # numerator
    run(w, Inst("v_div_fixup_f32", (V(4), V(1), V(2), V(3))))
    # -0.75 (sign of den ^ num); 0/0 and inf/inf the negative quiet NaN; -3/+0 = -inf;
    # 2/inf = +0; a signalling NaN numerator comes back quieted
    assert w.v[4, :6].tolist() == [f2u(-0.75), 0xFFC00000, 0xFF800000, 0, 0xFFC00000,
                                   0x7FC00001]
    # f16: -0.75 (0xBA00) in the low half; the upper half is kept on both processors
    lanes(w, 5, [0x3A00])
    lanes(w, 6, [0xC000])
    lanes(w, 7, [0x3E00])
    run(w, Inst("v_div_fixup_f16", (V(8), V(5), V(6), V(7))))
    assert w.v[8, 0] == (SENTINEL & 0xFFFF0000) | 0xBA00


@pytest.mark.parametrize("arch", ARCHS)
def test_div_fixup_underflow_and_overflowed_quotient(arch):
    w = make(arch, active=2)
    lanes(w, 1, [f2u(0.75), 0x7FC00000])  # a quotient; a NaN one (the macro overflowed)
    lanes(w, 2, [f2u(2.0**100), f2u(-2.0**-100)])  # denominators
    lanes(w, 3, [f2u(2.0**-60), f2u(2.0**100)])  # exponent difference -160: 2^-160 -> 0
    run(w, Inst("v_div_fixup_f32", (V(4), V(1), V(2), V(3))))
    assert w.v[4, :2].tolist() == [0, 0xFF800000]   # +0; -inf (sign of den ^ num)


@pytest.mark.parametrize("arch", ARCHS)
def test_div_scale_and_fmas(arch):
    sd = S(10, 2) if arch == "gfx942" else S(10)
    w = make(arch, active=3)
    # 1 / 2^-100: exponent difference 127 - 27 = 100 >= 96, VCC set, only the denominator
    # is scaled (by 2^64); 1.5 / 3 needs no scaling; a zero denominator gives the NaN (VCC
    # set, as on a gfx11 part)
    lanes(w, 1, [f2u(2.0**-100), f2u(3.0), 0])  # denominator
    lanes(w, 2, [f2u(1.0), f2u(1.5), f2u(1.0)])  # numerator
    run(w, Inst("v_div_scale_f32", (V(3), sd, V(1), V(1), V(2))))
    assert w.v[3, :3].tolist() == [f2u(2.0**-36), f2u(3.0), 0x7FC00000]
    assert w.s[10] & 0b111 == 0b101
    run(w, Inst("v_div_scale_f32", (V(4), sd, V(2), V(1), V(2))))
    assert w.v[4, :3].tolist() == [f2u(1.0), f2u(1.5), 0x7FC00000]  # S0 = S2: unscaled
    # V_DIV_FMAS with VCC clear: a fused multiply-add (2 * 3 + 0.5)
    w.set_exec(0b10)
    w.swrite(vcc(arch), 0, 2 if arch == "gfx942" else 1)
    lanes(w, 5, [0, f2u(2.0)])
    lanes(w, 6, [0, f2u(3.0)])
    lanes(w, 7, [0, f2u(0.5)])
    run(w, Inst("v_div_fmas_f32", (V(8), V(5), V(6), V(7))))
    assert w.v[8, 1] == f2u(6.5)
    # VCC set: times 2^-64 as |S2| < 2 (tinygrad's gfx11 values: fma(2, 3, 1) = 7 * 2^-64)
    w.swrite(vcc(arch), 0b10, 2 if arch == "gfx942" else 1)
    lanes(w, 7, [0, f2u(1.0)])
    run(w, Inst("v_div_fmas_f32", (V(8), V(5), V(6), V(7))))
    assert w.v[8, 1] == f2u(7.0 * 2.0**-64)
    # ... and times 2^64 as |S2| >= 2: fma(2, 3, 2) = 8 * 2^64
    lanes(w, 7, [0, f2u(2.0)])
    run(w, Inst("v_div_fmas_f32", (V(8), V(5), V(6), V(7))))
    assert w.v[8, 1] == f2u(8.0 * 2.0**64)
    # rounded once: (2^-60 * 2^-60 + 2^-63 (1 + 2^-23)) * 2^-64 = 2^-127 + 2^-150 + 2^-184,
    # just above the midpoint of two denormals: 2^-127 + 2^-149 (rounding first to float32,
    # which drops the 2^-184, then to the denormal grid would tie to even: 2^-127)
    lanes(w, 5, [0, f2u(2.0**-60)])
    lanes(w, 6, [0, f2u(2.0**-60)])
    lanes(w, 7, [0, f2u(2.0**-63 * (1 + 2.0**-23))])
    run(w, Inst("v_div_fmas_f32", (V(8), V(5), V(6), V(7))))
    assert w.v[8, 1] == f2u(2.0**-127 + 2.0**-149)


@pytest.mark.parametrize("arch", ARCHS)
def test_div_scale_denormal_and_huge_denominators(arch):
    sd = S(10, 2) if arch == "gfx942" else S(10)
    w = make(arch, active=3)
    # a denormal denominator 2^-149 (exponent difference 27 < 96): both operands times 2^64,
    # VCC clear; 1 / 2^127: the reciprocal and the quotient denormal, the denominator scaled
    # down by 2^64 (VCC: post-scale down); 2^127 / 2^127: only the reciprocal denormal, both
    # scaled down, VCC clear
    lanes(w, 1, [1, f2u(2.0**127), f2u(2.0**127)])  # denominator
    lanes(w, 2, [f2u(2.0**-100), f2u(1.0), f2u(2.0**127)])  # numerator
    run(w, Inst("v_div_scale_f32", (V(3), sd, V(1), V(1), V(2))))
    assert w.v[3, :3].tolist() == [f2u(2.0**-85), f2u(2.0**63), f2u(2.0**63)]
    assert w.s[10] & 0b111 == 0b010
    run(w, Inst("v_div_scale_f32", (V(4), sd, V(2), V(1), V(2))))
    assert w.v[4, :3].tolist() == [f2u(2.0**-36), f2u(1.0), f2u(2.0**63)]
    assert w.s[10] & 0b111 == 0b010
