"""Scalar and vector bit/integer rows the emulator gained (sign-bit counts, quad masks,
64-bit bit ops, 24-bit multiply high, clamped signed add, PC moves, f64 fract/fmac), with
values worked out by hand from the RDNA3 / CDNA3 manuals' definitions."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest

from kcc.encode.amd.operands import SGPR, VGPR, Imm, Inst
from tests.targets.amd.emu.test_emu_ops import ARCHS, lanes, make, run

V, S = VGPR, SGPR
GFX11 = {"gfx1100": True, "gfx942": False}


def f2u(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def d2u(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# (input, leading bits equal to the sign bit, sign bit included; -1 for 0 and -1)
CLS = [(0x40000000, 1), (0x00000001, 31), (0xFFFF0000, 16), (0x80000000, 1),
       (0, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0xC0000001, 2)]


@pytest.mark.parametrize("arch", ARCHS)
def test_sign_bit_counts_scalar_and_vector(arch):
    w = make(arch, active=len(CLS))
    s_op, v_op = ("s_cls_i32", "v_cls_i32_e32") if GFX11[arch] else \
        ("s_flbit_i32", "v_ffbh_i32_e32")
    for x, want in CLS:
        w.s[1] = x
        run(w, Inst(s_op, (S(2), S(1))))
        assert w.s[2] == want, hex(x)
    lanes(w, 1, [x for x, _ in CLS])
    run(w, Inst(v_op, (V(2), V(1))))
    assert w.v[2, :len(CLS)].tolist() == [want for _, want in CLS]


@pytest.mark.parametrize("arch", ARCHS)
def test_scalar_bit_ops(arch):
    w = make(arch)
    w.s[1] = 0x0000FFFF
    run(w, Inst("s_bcnt0_i32_b32", (S(2), S(1))))
    assert w.s[2] == 16 and w.scc == 1
    w.s[1] = 0xFFFFFFFF
    run(w, Inst("s_bcnt0_i32_b32", (S(2), S(1))))
    assert w.s[2] == 0 and w.scc == 0
    w.s[1], w.s[2] = 40, 8
    run(w, Inst("s_bfm_b64", (S(4, 2), S(1), S(2))))  # ((1 << 40) - 1) << 8
    assert (w.s[4], w.s[5]) == (0xFFFFFF00, 0x0000FFFF)
    w.s[6], w.s[7] = 3, 0
    run(w, Inst("s_brev_b64", (S(8, 2), S(6, 2))))
    assert (w.s[8], w.s[9]) == (0, 0xC0000000)
    ff1 = "s_ctz_i32_b64" if GFX11[arch] else "s_ff1_i32_b64"
    w.s[6], w.s[7] = 0, 1
    run(w, Inst(ff1, (S(10), S(6, 2))))
    assert w.s[10] == 32
    w.s[7] = 0
    run(w, Inst(ff1, (S(10), S(6, 2))))
    assert w.s[10] == 0xFFFFFFFF


@pytest.mark.parametrize("arch", ARCHS)
def test_wqm_and_quadmask(arch):
    w = make(arch)
    w.s[1] = 0x00100201  # quads 0, 2 and 5 have a bit set
    run(w, Inst("s_wqm_b32", (S(2), S(1))))
    assert w.s[2] == 0x00F00F0F and w.scc == 1
    run(w, Inst("s_quadmask_b32", (S(3), S(1))))
    assert w.s[3] == 0b100101 and w.scc == 1
    w.s[4], w.s[5] = 0, 0x80000000
    run(w, Inst("s_wqm_b64", (S(6, 2), S(4, 2))))
    assert (w.s[6], w.s[7]) == (0, 0xF0000000) and w.scc == 1
    w.s[1] = 0
    run(w, Inst("s_wqm_b32", (S(2), S(1))))
    assert w.s[2] == 0 and w.scc == 0


@pytest.mark.parametrize("arch", ARCHS)
def test_setpc_and_swappc(arch):
    w = make(arch)
    w.s[6], w.s[7] = 0x2000, 0
    run(w, Inst("s_swappc_b64", (S(4, 2), S(6, 2))))
    assert (w.s[4], w.s[5]) == (0x1004, 0) and w.next_pc == 0x2000
    w.s[6] = 0x3000
    run(w, Inst("s_setpc_b64", (S(6, 2),)))
    assert w.next_pc == 0x3000


@pytest.mark.parametrize("arch", ARCHS)
def test_mul_hi_i24_and_clamped_signed_add(arch):
    w = make(arch, active=3)
    # i24 operands: -2^23 * -2^23 = 2^46; -1 * 2 = -2; (2^23 - 1)^2 = 0x3FFFFF000001
    lanes(w, 1, [0x00800000, 0x00FFFFFF, 0xFF7FFFFF])
    lanes(w, 2, [0x00800000, 0x00000002, 0x007FFFFF])
    run(w, Inst("v_mul_hi_i32_i24_e32", (V(3), V(1), V(2))))
    assert w.v[3, :3].tolist() == [0x4000, 0xFFFFFFFF, 0x3FFF]
    add, sub = ("v_add_nc_i32", "v_sub_nc_i32") if GFX11[arch] else ("v_add_i32", "v_sub_i32")
    lanes(w, 4, [0x7FFFFFFF, 0x80000000, 5])
    lanes(w, 5, [1, 1, 7])
    clamp = (("clamp", True),)
    run(w, Inst(add, (V(6), V(4), V(5))), Inst(add, (V(7), V(4), V(5)), clamp),
        Inst(sub, (V(8), V(4), V(5))), Inst(sub, (V(9), V(4), V(5)), clamp))
    assert w.v[6, :3].tolist() == [0x80000000, 0x80000001, 12]  # wraps
    assert w.v[7, :3].tolist() == [0x7FFFFFFF, 0x80000001, 12]  # saturates
    assert w.v[8, :3].tolist() == [0x7FFFFFFE, 0x7FFFFFFF, 0xFFFFFFFE]
    assert w.v[9, :3].tolist() == [0x7FFFFFFE, 0x80000000, 0xFFFFFFFE]


@pytest.mark.parametrize("arch", ARCHS)
def test_v_fract_f64_and_fmac_f64(arch):
    w = make(arch, active=4)
    vals = [-0.25, float("inf"), -1e-300, 3.5]
    lanes(w, 2, [d2u(x) & 0xFFFFFFFF for x in vals])
    lanes(w, 3, [d2u(x) >> 32 for x in vals])
    run(w, Inst("v_fract_f64_e32", (V(4, 2), V(2, 2))), Inst("v_nop", ()))
    got = [int(lo) | int(hi) << 32 for lo, hi in zip(w.v[4, :4], w.v[5, :4])]
    # x - floor(x), at most the largest double below 1; inf gives the default NaN
    assert got == [d2u(0.75), 0x7FF8000000000000, 0x3FEFFFFFFFFFFFFF, d2u(0.5)]
    if not GFX11[arch]:  # V_FMAC_F64 (gfx942): D = S0 * S1 + D, one rounding
        a = 1 + 2**-30
        lanes(w, 2, [d2u(a) & 0xFFFFFFFF] * 4)
        lanes(w, 3, [d2u(a) >> 32] * 4)
        c = -(1 + 2**-29)
        lanes(w, 4, [d2u(c) & 0xFFFFFFFF] * 4)
        lanes(w, 5, [d2u(c) >> 32] * 4)
        run(w, Inst("v_fmac_f64_e32", (V(4, 2), V(2, 2), V(2, 2))))
        assert int(w.v[4, 0]) | int(w.v[5, 0]) << 32 == d2u(2.0**-60)


@pytest.mark.parametrize("arch", ARCHS)
def test_lds_atomics_in_lane_order_with_returns(arch):
    w = make(arch, active=3)
    lanes(w, 1, [4, 4, 4])
    lanes(w, 2, [f2u(1.5), f2u(2.25), f2u(-0.75)])
    lanes(w, 3, [7, 0xFFFFFFFF, 5])
    # lane by lane: old 0, 1.5, 3.75 returned; 3.0 left (offset 8 + 4 = byte 12)
    wg = run(w, Inst("ds_add_rtn_f32", (V(4), V(1), V(2)), (("offset", 8),)))
    run(w, Inst("s_waitcnt", (Imm(0xFC07 if arch == "gfx1100" else 0xC07F),)), wg=wg)
    assert w.v[4, :3].tolist() == [0, f2u(1.5), f2u(3.75)]
    assert wg.lds[12:16].view(np.uint32)[0] == f2u(3.0)
    # u32 add wraps: 7 + 0xFFFFFFFF + 5 = 11 at byte 4; max: returns 0, 7, 0xFFFFFFFF
    run(w, Inst("ds_add_u32", (V(1), V(3))), wg=wg)
    assert wg.lds[4:8].view(np.uint32)[0] == 11
    run(w, Inst("ds_max_rtn_u32", (V(5), V(1), V(3)), (("offset", 16),)), wg=wg)
    run(w, Inst("s_waitcnt", (Imm(0xFC07 if arch == "gfx1100" else 0xC07F),)), wg=wg)
    assert w.v[5, :3].tolist() == [0, 7, 0xFFFFFFFF]
    assert wg.lds[20:24].view(np.uint32)[0] == 0xFFFFFFFF


@pytest.mark.parametrize("arch", ARCHS)
def test_frexp_mant_and_exp(arch):
    # 12 = 0.75 * 2^4; -0 = -0 * 2^0; 2^-140 (a denormal, bits 0x200) = 0.5 * 2^-139;
    # inf and NaN: the mantissa is S0, the exponent 0 (manual pseudocode)
    w = make(arch, active=5)
    lanes(w, 1, [f2u(12.0), 0x80000000, 0x00000200, 0x7F800000, 0x7FC00000])
    run(w, Inst("v_frexp_mant_f32_e32", (V(2), V(1))),
        Inst("v_frexp_exp_i32_f32_e32", (V(3), V(1))))
    assert w.v[2, :5].tolist() == [f2u(0.75), 0x80000000, f2u(0.5), 0x7F800000, 0x7FC00000]
    assert w.v[3, :5].tolist() == [4, 0, (-139) & 0xFFFFFFFF, 0, 0]
    lanes(w, 4, [0] * 5)
    lanes(w, 5, [d2u(0.375) >> 32] * 5)  # 0.375 = 0.75 * 2^-1
    run(w, Inst("v_frexp_mant_f64_e32", (V(6, 2), V(4, 2))),
        Inst("v_frexp_exp_i32_f64_e32", (V(8), V(4, 2))))
    assert (int(w.v[6, 0]) | int(w.v[7, 0]) << 32, w.v[8, 0]) == (d2u(0.75), 0xFFFFFFFF)
    # f16: 2^-24 (0x0001) = 0.5 * 2^-23; 65504 (0x7BFF) = 0.99951171875 (0x3BFF) * 2^16
    lanes(w, 1, [0x0001, 0x7BFF])
    w.v[2] = w.v[3] = 0xDEADBEEF
    run(w, Inst("v_frexp_mant_f16_e32", (V(2), V(1))),
        Inst("v_frexp_exp_i16_f16_e32", (V(3), V(1))))
    hi = 0xDEAD0000 if GFX11[arch] else 0
    assert w.v[2, :2].tolist() == [hi | 0x3800, hi | 0x3BFF]
    assert w.v[3, :2].tolist() == [hi | ((-23) & 0xFFFF), hi | 16]


@pytest.mark.parametrize("arch", ARCHS)
def test_v_trig_preop_f64_gives_consecutive_53_bit_chunks_of_two_over_pi(arch):
    """The manual's V_TRIG_PREOP_F64: chunk k of 2/pi is its bits 53k .. 53k+52 after the
    point, scaled; for |x| < 2**54 (biased exponent <= 1077) the exponent adds nothing. Three
    chunks sum to 2/pi within 2**-159 (digits of 2/pi: a table of constants, not kcc's)."""
    two_over_pi = Fraction("0.636619772367581343075535053490057448137838582961825794990669")
    w = make(arch, active=3)
    lanes(w, 2, [d2u(1.0) & 0xFFFFFFFF] * 3)
    lanes(w, 3, [d2u(1.0) >> 32] * 3)
    lanes(w, 6, [0, 1, 2])
    run(w, Inst("v_trig_preop_f64", (V(4, 2), V(2, 2), V(6))))
    chunks = [struct.unpack("<d", struct.pack("<Q", int(lo) | int(hi) << 32))[0]
              for lo, hi in zip(w.v[4, :3], w.v[5, :3])]
    assert 0 <= two_over_pi - Fraction(chunks[0]) < Fraction(1, 2**53)   # truncated, not rounded
    assert chunks[1] < 2.0**-53 and chunks[2] < 2.0**-106
    assert abs(sum(map(Fraction, chunks)) - two_over_pi) < Fraction(1, 2**159)
    # a huge x (biased exponent 1077 + 10) moves the window 10 bits further down
    big = 2.0**64
    lanes(w, 2, [d2u(big) & 0xFFFFFFFF] * 3)
    lanes(w, 3, [d2u(big) >> 32] * 3)
    run(w, Inst("v_trig_preop_f64", (V(8, 2), V(2, 2), V(6))))
    first = struct.unpack("<d", struct.pack("<Q", int(w.v[8, 0]) | int(w.v[9, 0]) << 32))[0]
    assert Fraction(first) == Fraction(int(two_over_pi * 2**63) % 2**53, 2**63)
