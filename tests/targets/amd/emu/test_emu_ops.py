"""Emulator instruction semantics, one test per behaviour, expected values worked out by hand
from the RDNA3 / CDNA3 ISA manuals (not from what a selector assumes).

Instructions are built as `Inst` values (the decoder's output), so these tests need no LLVM.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from kcc.encode.amd.operands import SGPR, VGPR, FloatImm, Imm, Inst, Special
from kcc.targets.amd.emu.core import WAVE, EmuError, Memory, Wave, Workgroup, execute

ARCHS = ("gfx1100", "gfx942")
SENTINEL = 0xDEADBEEF


def f2u(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def d2u(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def make(arch: str, active: int | None = None) -> Wave:
    w = Wave(arch, 32, WAVE[arch])
    w.v[:] = SENTINEL
    n = WAVE[arch] if active is None else active
    w.set_exec((1 << n) - 1)
    return w


def run(w: Wave, *insts: Inst, wg: Workgroup | None = None) -> Workgroup:
    wg = wg or Workgroup(np.zeros(256, np.uint8), Memory())
    for inst in insts:
        w.pc = 0x1000
        w.next_pc = 0x1004
        execute(w, inst, wg)
    return wg


def vcc(arch: str) -> Special:
    return Special("vcc_lo" if arch == "gfx1100" else "vcc")


def lanes(w: Wave, reg: int, vals: list[int]) -> None:
    w.v[reg, :len(vals)] = vals


V = VGPR
S = SGPR


@pytest.mark.parametrize("arch", ARCHS)
def test_v_add_f32_values_zeros_nans_and_masked_lanes(arch):
    w = make(arch, active=5)
    a = [1.5, 0.0, -0.0, float("inf"), float("nan")]
    b = [2.25, -0.0, -0.0, float("-inf"), 1.0]
    lanes(w, 1, [f2u(x) for x in a])
    lanes(w, 2, [f2u(x) for x in b])
    run(w, Inst("v_add_f32_e32", (V(3), V(1), V(2))))
    got = w.v[3].tolist()
    # +0 + -0 = +0 and -0 + -0 = -0 in round-to-nearest (IEEE 754 §6.3).
    assert got[:3] == [f2u(3.75), 0x00000000, 0x80000000]
    assert got[3] == 0x7FC00000  # inf - inf: the default quiet NaN
    assert got[4] & 0x7FC00000 == 0x7FC00000  # NaN operand propagates, quiet
    assert got[5:] == [SENTINEL] * (WAVE[arch] - 5)  # EXEC-masked lanes untouched


@pytest.mark.parametrize("arch", ARCHS)
def test_v_add_f64_nan_results(arch):
    w = make(arch, active=2)
    for reg, vals in ((2, [float("inf"), float("nan")]), (4, [float("-inf"), 1.0])):
        lanes(w, reg, [d2u(x) & 0xFFFFFFFF for x in vals])
        lanes(w, reg + 1, [d2u(x) >> 32 for x in vals])
    run(w, Inst("v_add_f64", (V(6, 2), V(2, 2), V(4, 2))))
    got = [int(w.v[6, k]) | int(w.v[7, k]) << 32 for k in range(2)]
    assert got[0] == 0x7FF8000000000000  # inf - inf: the default quiet NaN (positive)
    assert got[1] & 0x7FF8000000000000 == 0x7FF8000000000000  # a NaN operand stays NaN


@pytest.mark.parametrize("arch", ARCHS)
def test_v_max_min_f32_signed_zero_and_nan(arch):
    w = make(arch)
    lanes(w, 1, [0x00000000, 0x80000000, 0x7FC00000, f2u(3.0)])
    lanes(w, 2, [0x80000000, 0x00000000, f2u(3.0), 0x7FC00000])
    run(w, Inst("v_max_f32_e32", (V(3), V(1), V(2))), Inst("v_min_f32_e32", (V(4), V(1), V(2))))
    # +0 > -0 for max and -0 < +0 for min; with IEEE mode a quiet NaN loses to a number.
    assert w.v[3, :4].tolist() == [0, 0, f2u(3.0), f2u(3.0)]
    assert w.v[4, :4].tolist() == [0x80000000, 0x80000000, f2u(3.0), f2u(3.0)]


def test_v_fma_f32_rounds_once_and_v_mad_f32_twice():
    a = 1 + 2.0 ** -12
    c = -(1 + 2.0 ** -11)
    # a*a = 1 + 2^-11 + 2^-24 exactly; fused: + c leaves 2^-24. Unfused: a*a rounds (a tie,
    # to even) to 1 + 2^-11 first, so the sum is 0.
    for arch, name in (("gfx1100", "v_fma_f32"), ("gfx942", "v_fma_f32"), ("gfx942", "v_mad_f32")):
        w = make(arch)
        lanes(w, 1, [f2u(a)])
        lanes(w, 2, [f2u(c)])
        run(w, Inst(name, (V(3), V(1), V(1), V(2))))
        assert w.v[3, 0] == (f2u(2.0 ** -24) if name == "v_fma_f32" else 0), name


@pytest.mark.parametrize("arch", ARCHS)
def test_v_fmac_accumulates_into_dst(arch):
    w = make(arch)
    lanes(w, 1, [f2u(2.0)])
    lanes(w, 2, [f2u(3.0)])
    lanes(w, 3, [f2u(0.5)])
    run(w, Inst("v_fmac_f32_e32", (V(3), V(1), V(2))))
    assert w.v[3, 0] == f2u(6.5)


@pytest.mark.parametrize("arch", ARCHS)
def test_vop3_neg_abs_clamp_omod(arch):
    w = make(arch)
    lanes(w, 1, [f2u(-0.75)])
    lanes(w, 2, [f2u(0.5)])
    run(w, Inst("v_add_f32_e64", (V(3), V(1), V(2)), (("abs", (1, 0, 0)),)),
        Inst("v_add_f32_e64", (V(4), V(1), V(2)), (("neg", (0, 1, 0)),)),
        Inst("v_mul_f32_e64", (V(5), V(1), V(2)), (("clamp", True),)),
        Inst("v_mul_f32_e64", (V(6), V(2), V(2)), (("omod", 1),)))
    w.ieee = False
    run(w, Inst("v_mul_f32_e64", (V(7), V(2), V(2)), (("omod", 1),)))
    assert w.v[3, 0] == f2u(1.25)   # |-0.75| + 0.5
    assert w.v[4, 0] == f2u(-1.25)  # -0.75 + -(0.5)
    assert w.v[5, 0] == 0           # -0.375 clamped to [0, 1]
    assert w.v[6, 0] == f2u(0.25)   # omod is ignored in IEEE mode
    assert w.v[7, 0] == f2u(0.5)    # 0.25 * 2 (omod 1) with IEEE mode off


@pytest.mark.parametrize("arch", ARCHS)
def test_inline_and_literal_constants(arch):
    w = make(arch)
    lanes(w, 1, [f2u(1.0)])
    lanes(w, 4, [0])
    lanes(w, 5, [d2u(0.5) >> 32])
    w.v[4, 0] = d2u(0.5) & 0xFFFFFFFF
    run(w, Inst("v_add_f32_e32", (V(2), FloatImm(0.5), V(1))),
        Inst("v_add_f32_e32", (V(3), Imm(f2u(2.5)), V(1))),
        # f64: an inline float is the f64 value, a 32-bit literal is the high dword.
        Inst("v_add_f64", (V(6, 2), FloatImm(-2.0), V(4, 2))),
        Inst("v_add_f64", (V(8, 2), Imm(0x40080000), V(4, 2))),
        Inst("v_add_nc_u32" if arch == "gfx1100" else "v_add_u32", (V(10), Imm(-1), V(1))))
    assert w.v[2, 0] == f2u(1.5) and w.v[3, 0] == f2u(3.5)
    assert int(w.v[6, 0]) | int(w.v[7, 0]) << 32 == d2u(-1.5)
    assert int(w.v[8, 0]) | int(w.v[9, 0]) << 32 == d2u(3.5)
    assert w.v[10, 0] == f2u(1.0) - 1


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_carry_chain_and_mask_of_inactive_lanes(arch):
    w = make(arch, active=3)
    # 64-bit adds per lane from 32-bit halves: lo with carry out, hi with carry in.
    lanes(w, 1, [0xFFFFFFFF, 5, 0x80000000])
    lanes(w, 2, [0, 7, 0])
    lanes(w, 3, [1, 1, 0x80000000])
    lanes(w, 4, [0, 1, 0])
    cin = "v_add_co_ci_u32_e32" if arch == "gfx1100" else "v_addc_co_u32_e32"
    w.swrite(vcc(arch), -1 & ((1 << WAVE[arch]) - 1), 2 if arch == "gfx942" else 1)
    run(w, Inst("v_add_co_u32_e32", (V(5), vcc(arch), V(1), V(3))))
    # Carries of lanes 0 and 2; the inactive lanes' bits are written as 0.
    assert w.mask_value("vcc") == 0b101
    run(w, Inst(cin, (V(6), vcc(arch), V(2), V(4), vcc(arch))))
    assert w.v[5, :3].tolist() == [0, 6, 0] and w.v[6, :3].tolist() == [1, 8, 1]
    assert w.mask_value("vcc") == 0
    assert w.v[5, 3] == SENTINEL


@pytest.mark.parametrize("arch", ARCHS)
def test_v_sub_co_borrow_and_subrev(arch):
    w = make(arch)
    lanes(w, 1, [3, 5])
    lanes(w, 2, [5, 3])
    sd = S(10) if arch == "gfx1100" else S(10, 2)
    run(w, Inst("v_sub_co_u32_e64", (V(3), sd, V(1), V(2))),
        Inst("v_subrev_co_u32_e64", (V(4), S(12) if arch == "gfx1100" else S(12, 2), V(1),
                                     V(2))))
    assert w.v[3, :2].tolist() == [0xFFFFFFFE, 2] and w.s[10] & 3 == 0b01
    assert w.v[4, :2].tolist() == [2, 0xFFFFFFFE] and w.s[12] & 3 == 0b10


@pytest.mark.parametrize("arch", ARCHS)
def test_64bit_pairs_shift_and_mad(arch):
    w = make(arch)
    lanes(w, 2, [0x89ABCDEF])
    lanes(w, 3, [0x01234567])
    lanes(w, 1, [4])
    lanes(w, 6, [0xFFFFFFFF])
    lanes(w, 7, [0xFFFFFFFF])
    lanes(w, 8, [0xFFFFFFFF])
    run(w, Inst("v_lshlrev_b64", (V(4, 2), V(1), V(2, 2))),
        Inst("v_mad_u64_u32", (V(10, 2), S(20, 2) if arch == "gfx942" else S(20), V(8), V(8),
                               V(6, 2))))
    assert (int(w.v[4, 0]), int(w.v[5, 0])) == (0x9ABCDEF0, 0x12345678)
    # (2^32-1)^2 + (2^64-1) = 2^65 - 2^33: low 64 bits 0xFFFFFFFE00000000, carry out 1.
    assert (int(w.v[10, 0]), int(w.v[11, 0])) == (0, 0xFFFFFFFE)
    assert w.s[20] & 1 == 1


@pytest.mark.parametrize("arch", ARCHS)
def test_compares_with_nan_and_class(arch):
    w = make(arch)
    lanes(w, 1, [f2u(1.0), 0x7FC00000, f2u(-0.0), 0x7F800000])
    lanes(w, 2, [f2u(2.0), f2u(2.0), f2u(0.0), f2u(1.0)])
    v = vcc(arch)
    run(w, Inst("v_cmp_lt_f32_e32", (v, V(1), V(2))))
    assert w.mask_value("vcc") & 0xF == 0b0001  # NaN is unordered: lt is false
    run(w, Inst("v_cmp_nge_f32_e32", (v, V(1), V(2))))
    assert w.mask_value("vcc") & 0xF == 0b0011  # not (a >= b): true for NaN
    run(w, Inst("v_cmp_eq_f32_e32", (v, V(1), V(2))))
    assert w.mask_value("vcc") & 0xF == 0b0100  # -0 == +0
    # class bit 9 (+inf) | 1 (quiet NaN)
    run(w, Inst("v_cmp_class_f32_e64", (S(8, 2) if arch == "gfx942" else S(8), V(1),
                                        Imm(0x202))))
    assert w.s[8] & 0xF == 0b1010


@pytest.mark.parametrize("arch", ARCHS)
def test_cndmask_and_saveexec_mask_lanes(arch):
    w = make(arch)
    n = WAVE[arch]
    wide = arch == "gfx942"
    lanes(w, 1, list(range(n)))
    m = S(4, 2) if wide else S(4)
    w.swrite(m, 0b0110, 2 if wide else 1)
    run(w, Inst("v_cndmask_b32_e64", (V(2), Imm(7), V(1), m)))
    assert w.v[2, :5].tolist() == [7, 1, 2, 7, 7]
    saved = S(6, 2) if wide else S(6)
    run(w, Inst("s_and_saveexec_b64" if wide else "s_and_saveexec_b32", (saved, m)),
        Inst("v_mov_b32_e32", (V(3), Imm(9))))
    assert w.sread(saved, 2 if wide else 1) == (1 << n) - 1 and w.scc == 1
    assert w.v[3, :4].tolist() == [SENTINEL, 9, 9, SENTINEL]


@pytest.mark.parametrize("arch", ARCHS)
def test_float_int_conversions(arch):
    w = make(arch)
    lanes(w, 1, [f2u(-2.5), 0x7FC00000, f2u(3e9), f2u(-3e9), f2u(7.9)])
    run(w, Inst("v_cvt_i32_f32_e32", (V(2), V(1))), Inst("v_cvt_u32_f32_e32", (V(3), V(1))))
    # Truncation toward zero; NaN converts to 0; out of range saturates.
    assert w.v[2, :5].tolist() == [0xFFFFFFFE, 0, 0x7FFFFFFF, 0x80000000, 7]
    assert w.v[3, :5].tolist() == [0, 0, 3000000000, 0, 7]


@pytest.mark.parametrize("arch", ARCHS)
def test_integer_bitfield_ops(arch):
    w = make(arch)
    lanes(w, 1, [0xF0F0_1234])
    run(w, Inst("v_bfe_u32", (V(2), V(1), Imm(4), Imm(8))),
        Inst("v_bfe_i32", (V(3), V(1), Imm(28), Imm(4))),
        Inst("v_lshl_add_u32", (V(4), V(1), Imm(4), Imm(3))),
        Inst("v_alignbit_b32", (V(5), V(1), V(1), Imm(8))),
        Inst("v_ashrrev_i32_e32", (V(6), Imm(4), V(1))),
        Inst("v_mul_hi_u32", (V(7), V(1), Imm(16))))
    assert w.v[2, 0] == 0x23
    assert w.v[3, 0] == 0xFFFFFFFF  # 0xF sign-extended from 4 bits
    assert w.v[4, 0] == (0xF0F01234 << 4 & 0xFFFFFFFF) + 3
    assert w.v[5, 0] == 0x34F0F012
    assert w.v[6, 0] == 0xFF0F0123
    assert w.v[7, 0] == 0xF


@pytest.mark.parametrize("arch", ARCHS)
def test_scalar_carries_overflow_and_64bit(arch):
    w = make(arch)
    w.s[0], w.s[1], w.s[2], w.s[3] = 0xFFFFFFFF, 1, 1, 2
    run(w, Inst("s_add_u32", (S(4), S(0), S(2))))
    assert w.s[4] == 0 and w.scc == 1
    run(w, Inst("s_addc_u32", (S(5), S(1), S(3))))
    assert w.s[5] == 4 and w.scc == 0  # 1 + 2 + carry
    run(w, Inst("s_sub_u32", (S(6), S(2), S(3))))
    assert w.s[6] == 0xFFFFFFFF and w.scc == 1  # borrow
    w.s[7] = 0x7FFFFFFF
    run(w, Inst("s_add_i32", (S(8), S(7), Imm(1))))
    assert w.s[8] == 0x80000000 and w.scc == 1  # signed overflow
    run(w, Inst("s_lshl_b64", (S(10, 2), S(0, 2), Imm(4))))
    assert (w.s[10], w.s[11]) == (0xFFFFFFF0, 0x1F) and w.scc == 1
    run(w, Inst("s_cmp_lt_i32", (S(7), S(8))))
    assert w.scc == 0  # 0x7fffffff < -2^31 is false when signed
    run(w, Inst("s_cmp_lt_u32", (S(7), S(8))))
    assert w.scc == 1


@pytest.mark.parametrize("arch", ARCHS)
def test_branches_use_next_pc_plus_simm16_dwords(arch):
    w = make(arch)
    w.scc = 1
    w.pc, w.next_pc = 0x1000, 0x1004
    execute(w, Inst("s_cbranch_scc1", (Imm(0xFFFE),)), Workgroup(np.zeros(0, np.uint8),
                                                                 Memory()))
    assert w.next_pc == 0x1004 - 8
    w.pc, w.next_pc = 0x1000, 0x1004
    w.set_exec(0)
    execute(w, Inst("s_cbranch_execnz", (Imm(3),)), Workgroup(np.zeros(0, np.uint8), Memory()))
    assert w.next_pc == 0x1004


@pytest.mark.parametrize("arch", ARCHS)
def test_global_memory_saddr_offset_and_waitcnt_check(arch):
    mem = Memory()
    base = mem.alloc(np.arange(16, dtype=np.uint32))
    out = mem.alloc(64)
    w = make(arch, active=4)
    w.swrite(S(2, 2), base, 2)
    w.swrite(S(4, 2), out, 2)
    lanes(w, 1, [0, 4, 8, 12])
    wg = Workgroup(np.zeros(0, np.uint8), mem)
    load = "global_load_b32" if arch == "gfx1100" else "global_load_dword"
    store = "global_store_b32" if arch == "gfx1100" else "global_store_dword"
    run(w, Inst(load, (V(2), V(1), S(2, 2)), (("offset", 8),)), wg=wg)
    with pytest.raises(EmuError, match=r"v2 is used before an s_waitcnt for the load at 0x1000"):
        run(w, Inst("v_add_nc_u32" if arch == "gfx1100" else "v_add_u32", (V(3), V(2), V(2))),
            wg=wg)
    wait = 0x3F7 if arch == "gfx1100" else 0x0F70  # vmcnt(0) (lgkmcnt at its maximum)
    run(w, Inst("s_waitcnt", (Imm(wait),)), Inst(store, (V(1), V(2), S(4, 2))), wg=wg)
    assert mem.view(out).view(np.uint32)[:4].tolist() == [2, 3, 4, 5]
    lanes(w, 1, [60, 0, 0, 0])
    with pytest.raises(EmuError, match="outside every buffer"):
        run(w, Inst(load, (V(5), V(1), S(2, 2)), (("offset", 8),)), wg=wg)


@pytest.mark.parametrize("arch", ARCHS)
def test_lds_store_load_and_bounds(arch):
    w = make(arch, active=4)
    lanes(w, 1, [0, 4, 8, 12])
    lanes(w, 2, [10, 11, 12, 13])
    st, ld = (("ds_store_b32", "ds_load_b32") if arch == "gfx1100"
              else ("ds_write_b32", "ds_read_b32"))
    wg = run(w, Inst(st, (V(1), V(2)), (("offset", 16),)))
    run(w, Inst("s_waitcnt", (Imm(0xFC07 if arch == "gfx1100" else 0xC07F),)), wg=wg)
    run(w, Inst(ld, (V(3), V(1)), (("offset", 20),)), wg=wg)
    run(w, Inst("s_waitcnt", (Imm(0xFC07 if arch == "gfx1100" else 0xC07F),)), wg=wg)
    assert w.v[3, :4].tolist() == [11, 12, 13, 0]
    lanes(w, 1, [252, 0, 0, 0])
    with pytest.raises(EmuError, match="LDS access of 4 bytes at 0x100 is outside"):
        run(w, Inst(ld, (V(3), V(1)), (("offset", 4),)), wg=wg)


@pytest.mark.parametrize("arch", ARCHS)
def test_scalar_load_then_use_needs_lgkmcnt0(arch):
    mem = Memory()
    base = mem.alloc(struct.pack("<4I", 1, 2, 3, 4))
    w = make(arch)
    w.swrite(S(0, 2), base, 2)
    wg = Workgroup(np.zeros(0, np.uint8), mem)
    name = "s_load_b64" if arch == "gfx1100" else "s_load_dwordx2"
    run(w, Inst(name, (S(4, 2), S(0, 2), Imm(8))), wg=wg)
    with pytest.raises(EmuError, match=r"s\[4:5\] is used before an s_waitcnt"):
        run(w, Inst("s_mov_b64", (S(6, 2), S(4, 2))), wg=wg)
    wait1 = 0xFC17 if arch == "gfx1100" else 0xC17F  # lgkmcnt(1): scalar loads may reorder
    run(w, Inst("s_waitcnt", (Imm(wait1),)), wg=wg)
    with pytest.raises(EmuError):
        run(w, Inst("s_mov_b64", (S(6, 2), S(4, 2))), wg=wg)
    run(w, Inst("s_waitcnt", (Imm(0xFC07 if arch == "gfx1100" else 0xC07F),)),
        Inst("s_mov_b64", (S(6, 2), S(4, 2))), wg=wg)
    assert (w.s[6], w.s[7]) == (3, 4)


def test_unknown_instruction_names_itself_and_its_address():
    w = make("gfx1100")
    w.pc = 0x1A40
    with pytest.raises(EmuError, match=r"at 0x1a40: instruction v_frobnicate_b32 is not "):
        execute(w, Inst("v_frobnicate_b32", (V(1), V(2))), Workgroup(np.zeros(0, np.uint8),
                                                                     Memory()))


@pytest.mark.parametrize("arch", ARCHS)
def test_mbcnt_counts_set_bits_of_lower_lanes(arch):
    w = make(arch)
    n = WAVE[arch]
    run(w, Inst("v_mbcnt_lo_u32_b32", (V(1), Imm(-1), Imm(0))),
        Inst("v_mbcnt_hi_u32_b32", (V(2), Imm(-1), V(1))),
        Inst("v_mbcnt_lo_u32_b32", (V(3), Imm(0x5), Imm(10))))
    lane = np.arange(n)
    # lo: lanes below among 0..31; hi adds the lanes below among 32..63.
    assert w.v[1].tolist() == np.minimum(lane, 32).tolist()
    assert w.v[2].tolist() == lane.tolist()
    assert w.v[3].tolist() == (10 + (lane > 0) + (lane > 2)).tolist()


@pytest.mark.parametrize("arch", ARCHS)
def test_global_atomic_add_lane_order(arch):
    mem = Memory()
    base = mem.alloc(np.array([1, 0], np.uint32))
    fbase = mem.alloc(np.array([1e8], np.float32))
    w = make(arch, active=3)
    w.swrite(S(2, 2), base, 2)
    w.swrite(S(4, 2), fbase, 2)
    lanes(w, 1, [0, 0, 4])
    lanes(w, 2, [10, 20, 30])
    lanes(w, 3, [0, 0, 0])
    lanes(w, 4, [f2u(3.0), f2u(3.0), f2u(3.0)])
    wg = Workgroup(np.zeros(0, np.uint8), mem)
    add = "global_atomic_add_u32" if arch == "gfx1100" else "global_atomic_add"
    run(w, Inst(add, (V(1), V(2), S(2, 2))), Inst("global_atomic_add_f32", (V(3), V(4), S(4, 2))),
        wg=wg)
    assert mem.view(base).view(np.uint32).tolist() == [31, 30]
    # Each lane's add rounds: 1e8 + 3 rounds to 1e8 (the spacing there is 8), three times.
    assert mem.view(fbase).view(np.float32)[0] == np.float32(1e8)


@pytest.mark.parametrize("arch", ARCHS)
def test_v_perm_b32_byte_selects(arch):
    w = make(arch)
    lanes(w, 1, [0x80_22_33_44])  # S0: bytes 4..7 of the pair
    lanes(w, 2, [0x55_66_77_08])  # S1: bytes 0..3
    # selectors (byte 3..0): 7 -> 0x80, 0 -> 0x08, 11 -> sign of byte 7 (set) -> 0xff, 12 -> 0
    run(w, Inst("v_perm_b32", (V(3), V(1), V(2), Imm(0x07_00_0B_0C))))
    assert w.v[3, 0] == 0x80_08_FF_00
    # 8 -> sign of byte 1 (0x77: clear) -> 0x00; 13 -> 0xff; 4 -> 0x44; 3 -> 0x55
    run(w, Inst("v_perm_b32", (V(4), V(1), V(2), Imm(0x08_0D_04_03))))
    assert w.v[4, 0] == 0x00_FF_44_55


@pytest.mark.parametrize("arch", ARCHS)
def test_s_trap_terminates_the_dispatch_naming_the_trap_id(arch):
    """LLVM AMDGPUUsage "Trap Handler ABI": llvm.trap is s_trap 2 and ends the dispatch (the
    queue in the error state); without a debugger s_trap 3 is handled the same."""
    for trap_id in (2, 3):
        with pytest.raises(EmuError, match=rf"s_trap {trap_id}: the trap handler terminates"):
            run(make(arch), Inst("s_trap", (Imm(trap_id),)))


@pytest.mark.parametrize("arch", ARCHS)
def test_ds_bpermute_gathers_lanes_and_reads_zero_from_inactive_ones(arch):
    """llvm.amdgcn.ds.bpermute: lane i gets vdata of lane (vaddr[i] + offset) / 4 (mod the
    wave), 0 from an inactive lane; inactive lanes keep their vdst."""
    w = make(arch, active=6)
    lanes(w, 1, [4 * 5, 4 * 0, 4 * 7, 4 * 2 + 1, 4 * 3, 4 * (WAVE[arch] + 1)])   # byte addresses
    lanes(w, 2, [100 + k for k in range(WAVE[arch])])
    run(w, Inst("ds_bpermute_b32", (V(3), V(1), V(2))))
    assert list(w.v[3, :6]) == [105, 100, 0, 102, 103, 101]     # lane 7 is inactive: 0
    assert w.v[3, 6] == SENTINEL
