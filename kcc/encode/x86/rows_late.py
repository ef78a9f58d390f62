"""The x86-64 row templates added after the base table (kcc/encode/x86/rows.py): lane rotates,
64-bit lane work on zmm, masked loads, gathers, unsigned conversions, byte MAX/MIN and int64
arithmetic shifts. Each group is built after every row before it, in this order, so that the
golden cases of the rows before keep their register rotation (tests/encode/x86: the golden
files list the rows in build order). Imported by rows.build only.
"""

from __future__ import annotations

from kcc.encode.x86.rows import (M0F, M0F38, M0F3A, P66, PF2, PF3, _BUILT, _add, _evex_twins, _leg,
                                 _sz, _vex, _vxy)


def _int_lane_rows() -> None:
    """Rotates of 32/64-bit lanes by an immediate (kcc/isel/x86/ivec.py), added after every
    other row so that the golden cases of the rows before keep their register rotation.
    SDM Vol. 2 "VPROLD/VPROLVD/VPROLQ/VPROLVQ": EVEX.128/256/512.66.0F.W0 72 /1 ib VPROLD
    (W1: VPROLQ; AVX512F, the 128/256-bit forms AVX512VL), the destination in EVEX.vvvv and
    the source in ModRM.rm as for the VEX shifts by an immediate; Full memory operand
    (disp8*N, N the vector's bytes, §2.7.5)."""
    for mnem, w in (("vprold", False), ("vprolq", True)):
        for v, vl in (("x", 0), ("y", 1), ("z", 2)):
            _add(mnem, "evex", "evex", bytes([0x72]), f"{v}/vvvv/w {v}m/rm/r imm8/imm/r",
                 pp=P66, mmap=M0F, w=w, vl=vl, digit=1, disp8_n=16 << vl)
    # ... and the rest of the 32-bit lane work on zmm that the VEX rows do on ymm (int32 x 16
    # on x86-64-v4): VPORD (EVEX.512.66.0F.W0 EB /r), the shifts by an immediate
    # (EVEX.512.66.0F.W0 72 /6 ib VPSLLD, /2 VPSRLD, /4 VPSRAD: destination in EVEX.vvvv) and
    # by a vector (EVEX.512.66.0F38.W0 47 VPSLLVD, 45 VPSRLVD, 46 VPSRAVD); Full, N = 64.
    ev = dict(pp=P66, w=False, vl=2, disp8_n=64)
    _add("vpord", "evex", "evex", bytes([0xEB]), "z/reg/w z/vvvv/r zm/rm/r", mmap=M0F, **ev)
    for mnem, d in (("vpslld", 6), ("vpsrld", 2), ("vpsrad", 4)):
        _add(mnem, "evex", "evex", bytes([0x72]), "z/vvvv/w zm/rm/r imm8/imm/r", mmap=M0F,
             digit=d, **ev)
    for mnem, op in (("vpsllvd", 0x47), ("vpsrlvd", 0x45), ("vpsravd", 0x46)):
        _add(mnem, "evex", "evex", bytes([op]), "z/reg/w z/vvvv/r zm/rm/r", mmap=M0F38, **ev)


def _late_gpr_rows() -> None:
    """GPR rows added after the golden files' cases were laid out (built last, so the memory
    modes that each earlier row's cases rotate through stay as they were)."""
    # IMUL r/m64 (F7 /5, SDM "IMUL" one-operand form): rdx:rax = rax * r/m64, signed;
    # MULHI of int64 (kcc/isel/x86/alu.py)
    _leg("imul", "gpr", "f7", "rm64/rm/r", digit=5, flags="w", implicit_uses=("rax",),
         implicit_defs=("rax", "rdx"), **_sz(64))
    # PREFETCHT0 m8 (0F 18 /1, SDM "PREFETCHh"): a hint that reads nothing into a register and
    # never faults; ahead of a row reduction's streams (kcc/isel/x86/prefetch.py)
    _leg("prefetcht0", "gpr", "0f18", "m8/rm/r", digit=1)


def _int64_zmm_rows() -> None:
    """The 64-bit lane work on zmm that the VEX rows do on ymm (int64/uint64 x 8 on
    x86-64-v4, kcc/isel/x86/ivec.py), added after every other row so that the golden cases
    of the rows before keep their register rotation: VPSUBQ (EVEX.512.66.0F.W1 FB /r), the
    shifts by an immediate (EVEX.512.66.0F.W1 73 /6 ib VPSLLQ, /2 VPSRLQ: destination in
    EVEX.vvvv) and by a vector (EVEX.512.66.0F38.W1 47 VPSLLVQ, 45 VPSRLVQ); Full, N = 64
    (SDM Vol. 2 "PSUBB/PSUBW/PSUBD/PSUBQ", "PSLLW/PSLLD/PSLLQ", "VPSLLVW/VPSLLVD/VPSLLVQ")."""
    ev = dict(pp=P66, w=True, vl=2, disp8_n=64)
    _add("vpsubq", "evex", "evex", bytes([0xFB]), "z/reg/w z/vvvv/r zm/rm/r", mmap=M0F, **ev)
    for mnem, d in (("vpsllq", 6), ("vpsrlq", 2)):
        _add(mnem, "evex", "evex", bytes([0x73]), "z/vvvv/w zm/rm/r imm8/imm/r", mmap=M0F,
             digit=d, **ev)
    for mnem, op in (("vpsllvq", 0x47), ("vpsrlvq", 0x45)):
        _add(mnem, "evex", "evex", bytes([op]), "z/reg/w z/vvvv/r zm/rm/r", mmap=M0F38, **ev)
    # VPMULLQ (EVEX.128/256/512.66.0F38.W1 40 /r, AVX512DQ; SDM "PMULLD/PMULLQ"): the low 64
    # bits of each 64-bit lane product (sin's Payne-Hanek products on x86-64-v4)
    for v, vl in (("x", 0), ("y", 1), ("z", 2)):
        _add("vpmullq", "evex", "evex", bytes([0x40]), f"{v}/reg/w {v}/vvvv/r {v}m/rm/r",
             pp=P66, mmap=M0F38, w=True, vl=vl, disp8_n=16 << vl)
    # VCVTQQ2PD (EVEX.F3.0F.W1 E6 /r) and VCVTUQQ2PD (EVEX.F3.0F.W1 7A /r), AVX512DQ: signed /
    # unsigned 64-bit lanes to float64, rounded by MXCSR (nearest); SDM "VCVTQQ2PD",
    # "VCVTUQQ2PD"
    for mnem, op in (("vcvtqq2pd", 0xE6), ("vcvtuqq2pd", 0x7A)):
        for v, vl in (("x", 0), ("y", 1), ("z", 2)):
            _add(mnem, "evex", "evex", bytes([op]), f"{v}/reg/w {v}m/rm/r", pp=PF3, mmap=M0F,
                 w=True, vl=vl, disp8_n=16 << vl)
    # VCVTTPD2UQQ (EVEX.66.0F.W1 78 /r, AVX512DQ; SDM "VCVTTPD2UQQ"): float64 lanes to uint64,
    # truncated; out of range (and NaN) gives 2^64 - 1
    for v, vl in (("x", 0), ("y", 1), ("z", 2)):
        _add("vcvttpd2uqq", "evex", "evex", bytes([0x78]), f"{v}/reg/w {v}m/rm/r", pp=P66,
             mmap=M0F, w=True, vl=vl, disp8_n=16 << vl)


def _masked_load_rows() -> None:
    """Loads masked by a vector (x86-64-v3's per-lane gates, kcc/isel/x86/vec.py), built last
    so that the golden cases of the rows before keep their rotation: VEX.66.0F38 2C/2D
    VMASKMOVPS/PD, 8C VPMASKMOVD (W0) / VPMASKMOVQ (W1), 128 and 256 bits (SDM Vol. 2
    "VMASKMOV", "VPMASKMOV"): lane i from memory where the mask's lane i has its sign bit set,
    else 0, and a masked-off lane raises no fault. VEX only (AVX-512 masks with k registers)."""
    for mnem, op, w in (("vmaskmovps", 0x2C, False), ("vmaskmovpd", 0x2D, False),
                        ("vpmaskmovd", 0x8C, False), ("vpmaskmovq", 0x8C, True)):
        _vex(mnem, "avx_move", P66, M0F38, op, "x/reg/w x/vvvv/r m128/rm/r", w=w)
        _vex(mnem, "avx_move", P66, M0F38, op, "y/reg/w y/vvvv/r m256/rm/r", vl=1, w=w)


def _gather_rows() -> None:
    """Gathers (kcc/isel/x86/gather.py), added after every other row so that the golden cases
    of the rows before keep their register rotation. SDM Vol. 2 "VGATHERDPS/VGATHERDQPS":
    VGATHERDPS zmm1 {k1}, vm32z (EVEX.512.66.0F38.W0 92 /vsib, Tuple1 Scalar: disp8*4): lane
    j of zmm1 is the dword at base + index[j]*scale + disp where bit j of k1 is set; each
    lane's bit is cleared as it completes (k1 is all zero after the instruction, so it is
    written), and lanes whose bit is clear keep zmm1's own (merge: zmm1 is read). k0 cannot
    be the mask; zmm1 must differ from the index register (#UD otherwise)."""
    _add("vgatherdps", "evex_gather", "evex", bytes([0x92]), "z/reg/rw k/aaa/rw vm32z/rm/r",
         pp=P66, mmap=M0F38, w=False, vl=2, disp8_n=4)


def _gather_y_rows() -> None:
    """The 8-lane gather (kcc/isel/x86/gather.py), built last so that the golden cases of
    the rows before keep their rotation: VGATHERDPS ymm1 {k1}, vm32y (EVEX.256.66.0F38.W0 92
    /vsib, AVX512VL, Tuple1 Scalar: disp8*4; SDM Vol. 2 "VGATHERDPS/VGATHERDQPS"), as the
    zmm form on 8 lanes, indexed by a ymm."""
    _add("vgatherdps", "evex_gather", "evex", bytes([0x92]), "y/reg/rw k/aaa/rw vm32y/rm/r",
         pp=P66, mmap=M0F38, w=False, vl=1, disp8_n=4)


def _uint_cvt_rows() -> None:
    """Unsigned integers to float (x86-64-v4, AVX512F), built last so that the golden cases
    of the rows before keep their rotation: VCVTUDQ2PS (EVEX.128/256/512.F2.0F.W0 7A /r,
    Full: N = VL bytes; SDM "VCVTUDQ2PS") uint32 lanes to float32; VCVTUSI2SS/SD
    (EVEX.LLIG.F3/F2.0F.W0/W1 7B /r, Tuple1 Scalar: N = the GPR's size; SDM "VCVTUSI2SS")
    a uint32/uint64 into the low lane, the rest from the second source. MXCSR rounds."""
    for v, vl in (("x", 0), ("y", 1), ("z", 2)):
        _add("vcvtudq2ps", "evex", "evex", bytes([0x7A]), f"{v}/reg/w {v}m/rm/r", pp=PF2,
             mmap=M0F, w=False, vl=vl, disp8_n=16 << vl)
    for t, pp in (("ss", PF3), ("sd", PF2)):
        for size in (32, 64):
            _add(f"vcvtusi2{t}", "evex", "evex", bytes([0x7B]),
                 f"x/reg/w x/vvvv/r rm{size}/rm/r", pp=pp, mmap=M0F, w=size == 64, vl=0,
                 disp8_n=size // 8)


def _byte_minmax_rows() -> None:
    """MAX/MIN of byte and word lanes (kcc/isel/x86/ivec.py: int8/uint8/int16/uint16 MAX and
    WHERE(a < b, b, a)), added after every other row so that the golden cases of the rows
    before keep their register rotation. SDM Vol. 2 "PMAXSB/PMAXSW/PMAXSD/PMAXSQ",
    "PMAXUB/PMAXUW", "PMINSB/PMINSW", "PMINUB/PMINUW": VEX.128/256.66.0F.WIG EE (VPMAXSW),
    DE (VPMAXUB), EA (VPMINSW), DA (VPMINUB); VEX.128/256.66.0F38.WIG 3C (VPMAXSB), 3E
    (VPMAXUW), 38 (VPMINSB), 3A (VPMINUW); their EVEX.128/256 twins (AVX512VL+BW)."""
    start = len(_BUILT)
    three = "V/reg/w V/vvvv/r VM/rm/r"
    for mnem, op in (("vpmaxsw", 0xEE), ("vpmaxub", 0xDE), ("vpminsw", 0xEA),
                     ("vpminub", 0xDA)):
        _vxy(mnem, "avx_int", P66, M0F, op, three)
    for mnem, op in (("vpmaxsb", 0x3C), ("vpmaxuw", 0x3E), ("vpminsb", 0x38),
                     ("vpminuw", 0x3A)):
        _vxy(mnem, "avx_int", P66, M0F38, op, three)
    _evex_twins(start)


def _int64_sra_rows() -> None:
    """Arithmetic right shifts of 64-bit lanes (x86-64-v4, AVX512F; the 128/256-bit forms
    AVX512VL), built last so that the golden cases of the rows before keep their rotation:
    VPSRAQ by an immediate (EVEX.128/256/512.66.0F.W1 72 /4 ib, destination in EVEX.vvvv,
    source in ModRM.rm) and VPSRAVQ by a vector (EVEX.128/256/512.66.0F38.W1 46 /r); Full,
    N = VL bytes (SDM Vol. 2 "PSRAW/PSRAD/PSRAQ", "VPSRAVW/VPSRAVD/VPSRAVQ"). AVX2 has no
    64-bit arithmetic shift: int64 SHR lanes (kcc/isel/x86/ivec.py) on x86-64-v4 only."""
    for v, vl in (("x", 0), ("y", 1), ("z", 2)):
        _add("vpsraq", "evex", "evex", bytes([0x72]), f"{v}/vvvv/w {v}m/rm/r imm8/imm/r",
             pp=P66, mmap=M0F, w=True, vl=vl, digit=4, disp8_n=16 << vl)
        _add("vpsravq", "evex", "evex", bytes([0x46]), f"{v}/reg/w {v}/vvvv/r {v}m/rm/r",
             pp=P66, mmap=M0F38, w=True, vl=vl, disp8_n=16 << vl)


def _down_convert_rows() -> None:
    """Integer lanes narrowed to their low half, quarter or eighth (x86-64-v4), built last so
    that the golden cases of the rows before keep their rotation. SDM Vol. 2 "VPMOVWB/VPMOVSWB/
    VPMOVUSWB" (EVEX.128/256/512.F3.0F38.W0 30 /r, AVX512BW), "VPMOVDB/VPMOVSDB/VPMOVUSDB"
    (31 /r), "VPMOVQB/…" (32 /r), "VPMOVDW/…" (33 /r), "VPMOVQW/…" (34 /r), "VPMOVQD/…"
    (35 /r; AVX512F, the 128/256-bit forms AVX512VL): each lane's low bits (truncation), the
    destination in ModRM.rm (an xmm/ymm whose upper part is zeroed, or memory of the result's
    size), the source in ModRM.reg; Half/Quarter/Oct Mem, disp8*N with N the result's bytes
    (§2.7.5, Table 2-34)."""
    kinds = {32: "ym", 16: "xm", 8: "xm64", 4: "xm32", 2: "xm16"}
    for mnem, op, ratio in (("vpmovwb", 0x30, 2), ("vpmovdb", 0x31, 4), ("vpmovqb", 0x32, 8),
                            ("vpmovdw", 0x33, 2), ("vpmovqw", 0x34, 4), ("vpmovqd", 0x35, 2)):
        for v, vl in (("x", 0), ("y", 1), ("z", 2)):
            n = (16 << vl) // ratio
            _add(mnem, "evex", "evex", bytes([op]), f"{kinds[n]}/rm/w {v}/reg/r", pp=PF3,
                 mmap=M0F38, w=False, vl=vl, disp8_n=n)


def _shift_mem_rows() -> None:
    """Shifts of 32/64-bit lanes by an immediate that read their source from memory
    (x86-64-v4: the VEX forms' ModRM.rm is a register only), xmm and ymm, built last so that
    the golden cases of the rows before keep their rotation: EVEX.128/256.66.0F.W1 73 /6 ib
    VPSLLQ, /2 VPSRLQ; EVEX.128/256.66.0F.W0 72 /6 ib VPSLLD, /2 VPSRLD, /4 VPSRAD (AVX512VL),
    the destination in EVEX.vvvv; Full, N = VL bytes (SDM Vol. 2 "PSLLW/PSLLD/PSLLQ",
    "PSRLW/PSRLD/PSRLQ", "PSRAW/PSRAD/PSRAQ"). u64_shift's E_50: a load folded into each
    shift, as clang does (kcc/isel/x86/ivec.py)."""
    for mnem, op, d, w in (("vpsllq", 0x73, 6, True), ("vpsrlq", 0x73, 2, True),
                           ("vpslld", 0x72, 6, False), ("vpsrld", 0x72, 2, False),
                           ("vpsrad", 0x72, 4, False)):
        for v, vl in (("x", 0), ("y", 1)):
            _add(mnem, "evex", "evex", bytes([op]), f"{v}/vvvv/w {v}m/rm/r imm8/imm/r",
                 pp=P66, mmap=M0F, w=w, vl=vl, digit=d, disp8_n=16 << vl)


def _mulx_rows() -> None:
    """MULX r64a, r64b, r/m64 (VEX.LZ.F2.0F38.W1 F6 /r, BMI2; SDM "MULX"): r64a:r64b = rdx *
    r/m64, unsigned, flags untouched; the high half in ModRM.reg, the low in VEX.vvvv. The
    MULHI of uint64 (kcc/isel/x86/alu.py): the dividend stays in rdx, no copy to rax."""
    _vex("mulx", "gpr", PF2, M0F38, 0xF6, "r64/reg/w r64/vvvv/w rm64/rm/r", w=True,
         implicit_uses=("rdx",))


def _widen_zmm_rows() -> None:
    """Byte and word lanes sign- or zero-extended to 16 dword lanes of a zmm (x86-64-v4,
    AVX512F), built last so that the golden cases of the rows before keep their rotation:
    EVEX.512.66.0F38.WIG 21 /r VPMOVSXBD zmm1, xmm2/m128 (31: VPMOVZXBD; Quarter Mem, N =
    16) and 23 /r VPMOVSXWD zmm1, ymm2/m256 (33: VPMOVZXWD; Half Mem, N = 32); SDM Vol. 2
    "PMOVSX", "PMOVZX", §2.7.5 Table 2-34. int8_sum's r_37_9: one shuffle-port micro-op
    widens 16 lanes where the ymm form widens 8."""
    for pfx, op in (("vpmovsx", 0x20), ("vpmovzx", 0x30)):
        _add(pfx + "bd", "evex", "evex", bytes([op + 1]), "z/reg/w xm/rm/r", pp=P66,
             mmap=M0F38, w=False, vl=2, disp8_n=16)
        _add(pfx + "wd", "evex", "evex", bytes([op + 3]), "z/reg/w ym/rm/r", pp=P66,
             mmap=M0F38, w=False, vl=2, disp8_n=32)


def _sbb_rows() -> None:
    """SBB r/m32, r32 (19 /r) and SBB r32, r/m32 (1B /r; SDM "SBB"): the first operand minus
    (the second + CF), flags written from the result.
    With both operands one register it is -CF (all ones or zero) whatever the register held:
    the selector's `sbb_self` pseudo (kcc/isel/x86/kmask.py gate_ones, kcc/targets/x86/
    code.py), a lane mask straight from an unsigned compare's carry, as clang makes
    embedding E_8_5's row gates (`cmp; sbb; kmovd`)."""
    mr = _leg("sbb", "gpr", "19", "rm32/rm/rw r32/reg/r", flags="rw", prefixes=b"", w=False)
    _leg("sbb", "gpr", "1b", "r32/reg/rw rm32/rm/r", flags="rw", rr_form=mr, prefixes=b"",
         w=False)


def _kshift_rows() -> None:
    """KSHIFTRW k1, k2, imm8 (VEX.L0.66.0F3A.W1 30 /r ib, AVX512F; SDM Vol. 2
    "KSHIFTRW/KSHIFTRB/KSHIFTRD/KSHIFTRQ"): k2 shifted right by imm8 bits, zeros shifted in
    (a count above 15 clears k1); ModRM.rm names a mask register (mod = 11). Lane j of an
    opmask brought to bit 0, the bit a scalar's masked load or move reads
    (kcc/isel/x86/kmask.py kgate)."""
    _vex("kshiftrw", "evex_mask", P66, M0F3A, 0x30, "k/reg/w k/rm/r imm8/imm/r", w=True)


def build_late() -> None:
    """Append the later rows to rows._BUILT, in the golden files' order."""
    _int_lane_rows()
    _late_gpr_rows()
    _int64_zmm_rows()
    _masked_load_rows()
    _gather_rows()
    _uint_cvt_rows()
    _byte_minmax_rows()
    _int64_sra_rows()
    _gather_y_rows()
    _down_convert_rows()
    _shift_mem_rows()
    _mulx_rows()
    _widen_zmm_rows()
    _sbb_rows()
    _kshift_rows()
