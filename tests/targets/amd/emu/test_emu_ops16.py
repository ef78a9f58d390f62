"""16-bit VALU semantics (kcc/targets/amd/emu/valu16.py), expected values worked out by hand
from the RDNA3 / CDNA3 ISA manuals' definitions and IEEE binary16 (f16 encodings written out:
1.0 = 0x3C00, 2.0 = 0x4000, 2048 = 0x6800, +inf = 0x7C00, default NaN = 0x7E00)."""

from __future__ import annotations

import struct

import pytest

from kcc.encode.amd.operands import SGPR, VGPR, FloatImm, Inst
from tests.targets.amd.emu.test_emu_ops import ARCHS, SENTINEL, lanes, make, run, vcc

V, S = VGPR, SGPR


def f2u(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def high(arch: str, result16: int, keep: bool = False) -> int:
    """The 32-bit register after a 16-bit op wrote result16 over SENTINEL: gfx11 keeps the
    upper half, gfx9 zeroes it but for the op_sel-capable ops (``keep``)."""
    if arch == "gfx1100" or keep:
        return (SENTINEL & 0xFFFF0000) | result16
    return result16


@pytest.mark.parametrize("arch", ARCHS)
def test_v_add_f16_rounding_denormals_nan_and_upper_half(arch):
    w = make(arch, active=5)
    # upper halves of the sources are junk: only the low 16 bits are read
    lanes(w, 1, [0xABCD3C00, 0x12346800, 0x00006800, 0x00000001, 0x00007C00])
    lanes(w, 2, [0xFFFF4000, 0x00003C00, 0x00004200, 0x00000001, 0x0000FC00])
    run(w, Inst("v_add_f16_e32", (V(3), V(1), V(2))))
    # 1+2=3 (0x4200); 2048+1 ties to even 2048; 2048+3 ties to even 2052 (0x6802);
    # 2^-24 + 2^-24 = 2^-23 (denormals kept); inf + -inf = the default NaN
    want = [0x4200, 0x6800, 0x6802, 0x0002, 0x7E00]
    assert w.v[3, :5].tolist() == [high(arch, x) for x in want]
    assert w.v[3, 5:].tolist() == [SENTINEL] * (len(w.v[3]) - 5)


@pytest.mark.parametrize("arch", ARCHS)
def test_f16_inline_constant_is_the_half_encoding(arch):
    w = make(arch)
    lanes(w, 1, [0x3C00])
    run(w, Inst("v_add_f16_e64", (V(3), FloatImm(1.0), V(1))),
        Inst("v_cvt_f32_f16_e64", (V(4), FloatImm(-2.0))))
    assert w.v[3, 0] == high(arch, 0x4000)
    # regression: the constant was read as its f32 encoding, whose low half is 0
    assert w.v[4, 0] == f2u(-2.0)


@pytest.mark.parametrize("arch", ARCHS)
def test_v_fma_f16_rounds_once_and_keeps_upper_half(arch):
    w = make(arch)
    # (1 + 2^-10)^2 - (1 + 2^-9) = 2^-20 exactly: the subnormal 16 * 2^-24 = 0x0010
    # (a product rounded first would give 0)
    lanes(w, 1, [0x3C01])
    lanes(w, 2, [0xBC02])
    run(w, Inst("v_fma_f16", (V(3), V(1), V(1), V(2))))
    assert w.v[3, 0] == high(arch, 0x0010, keep=True)
    w.v[3] = 0x5555BC02
    run(w, Inst("v_mul_f16_e32", (V(4), V(1), V(1))))
    assert w.v[4, 0] == high(arch, 0x3C02)  # 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9
    if arch == "gfx1100":  # V_FMAC_F16: D = S0 * S1 + D (gfx11 only)
        run(w, Inst("v_fmac_f16_e32", (V(3), V(1), V(1))))
        assert w.v[3, 0] == 0x55550010


@pytest.mark.parametrize("arch", ARCHS)
def test_v_cvt_pkrtz_f16_f32_rounds_toward_zero(arch):
    w = make(arch)
    # 1 + 2^-11 + 2^-20 is above the halfway point, RTZ still gives 1.0; -65520 is the
    # overflow halfway point, RTZ gives -65504 (0xFBFF), not -inf
    lanes(w, 1, [f2u(1.0 + 2**-11 + 2**-20)])
    lanes(w, 2, [f2u(-65520.0)])
    name = "v_cvt_pk_rtz_f16_f32" if arch == "gfx1100" else "v_cvt_pkrtz_f16_f32"
    run(w, Inst(name + "_e64" if arch == "gfx1100" else name + "_e32", (V(3), V(1), V(2))))
    assert w.v[3, 0] == 0xFBFF3C00


@pytest.mark.parametrize("arch", ARCHS)
def test_16bit_integer_ops_and_conversions(arch):
    add = "v_add_nc_u16" if arch == "gfx1100" else "v_add_u16"
    w = make(arch)
    lanes(w, 1, [0x1234FFFF])
    lanes(w, 2, [0x00000002])
    lanes(w, 4, [0x00008001])
    lanes(w, 5, [0xFFFF0011])  # shift amount 0x11: only S0[3:0] = 1 counts
    run(w, Inst(add + "_e64", (V(3), V(1), V(2))),
        Inst("v_lshlrev_b16_e32", (V(6), V(5), V(4))),
        Inst("v_ashrrev_i16_e32", (V(7), V(5), V(4))),
        Inst("v_max_i16_e64", (V(8), V(4), V(2))),
        Inst("v_max_u16_e64", (V(9), V(4), V(2))),
        Inst("v_cvt_i32_i16_e32" if arch == "gfx1100" else "v_cvt_i32_i16_e64",
             (V(10), V(1))))
    assert w.v[3, 0] == high(arch, 0x0001)  # 0xFFFF + 2 wraps
    assert w.v[6, 0] == high(arch, 0x0002)  # 0x8001 << 1
    assert w.v[7, 0] == high(arch, 0xC000)  # -32767 >> 1 = -16384
    assert w.v[8, 0] == high(arch, 0x0002) and w.v[9, 0] == high(arch, 0x8001)
    assert w.v[10, 0] == 0xFFFFFFFF  # sign-extended -1, a 32-bit result
    if arch == "gfx942":  # V_MAD_U32_U16: 0xFFFF * 0xFFFF + 1, the sources' upper halves junk
        run(w, Inst("v_mad_u32_u16", (V(11), V(1), V(1), V(2))))
        assert w.v[11, 0] == 0xFFFE0001 + 2


@pytest.mark.parametrize("arch", ARCHS)
def test_f16_to_int16_saturates_and_nan_is_zero(arch):
    w = make(arch, active=3)
    lanes(w, 1, [0xFBFF, 0x7E00, 0xBC00])  # -65504, NaN, -1.0
    run(w, Inst("v_cvt_i16_f16_e32", (V(2), V(1))), Inst("v_cvt_u16_f16_e32", (V(3), V(1))))
    assert w.v[2, :3].tolist() == [high(arch, x) for x in (0x8000, 0, 0xFFFF)]
    assert w.v[3, :3].tolist() == [high(arch, x) for x in (0, 0, 0)]


@pytest.mark.parametrize("arch", ARCHS)
def test_16bit_compares_signedness_nan_and_class(arch):
    w = make(arch, active=4)
    v = vcc(arch)
    lanes(w, 1, [0x8000, 0x7E00, 0x0001, 0x3C00])
    lanes(w, 2, [0x0001, 0x3C00, 0x3C00, 0x3C00])
    run(w, Inst("v_cmp_lt_i16_e32", (v, V(1), V(2))))
    assert w.mask_value("vcc") == 0b0101  # -32768 < 1, 1 < 0x3C00
    run(w, Inst("v_cmp_lt_u16_e32", (v, V(1), V(2))))
    assert w.mask_value("vcc") == 0b0100  # 0x8000 and 0x7E00 are not below 1 / 0x3C00
    # as f16: -0 < 1, NaN unordered, 2^-24 < 1, 1 == 1
    run(w, Inst("v_cmp_lt_f16_e32", (v, V(1), V(2))))
    assert w.mask_value("vcc") == 0b0101
    run(w, Inst("v_cmp_nge_f16_e32", (v, V(1), V(2))))
    assert w.mask_value("vcc") == 0b0111
    # class: bit 5 (-0) | 1 (quiet NaN) | 7 (+denormal)
    lanes(w, 3, [(1 << 5) | (1 << 1) | (1 << 7)] * 4)
    run(w, Inst("v_cmp_class_f16_e32", (v, V(1), V(3))))
    assert w.mask_value("vcc") == 0b0111


@pytest.mark.parametrize("arch", ARCHS)
def test_v_max_f16_nan_operands_follow_the_ieee_mode_bit(arch):
    # a quiet NaN (0x7E00) gives the other operand; in IEEE mode a signalling NaN (0x7C01)
    # gives that NaN quieted (0x7E01), with IEEE mode off the other operand
    w = make(arch, active=2)
    lanes(w, 1, [0x7E00, 0x7C01])
    lanes(w, 2, [0x3C00, 0x3C00])
    run(w, Inst("v_max_f16_e32", (V(3), V(1), V(2))))
    assert w.v[3, :2].tolist() == [high(arch, 0x3C00), high(arch, 0x7E01)]
    w.ieee = False
    run(w, Inst("v_min_f16_e32", (V(4), V(1), V(2))))
    assert w.v[4, :2].tolist() == [high(arch, 0x3C00), high(arch, 0x3C00)]
