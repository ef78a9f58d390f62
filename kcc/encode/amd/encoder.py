"""AMD GPU encoder for gfx1100 (RDNA3) and gfx942 (CDNA3), driven by the rows of
:mod:`kcc.encode.amd.table`.

``encode(arch, inst)`` turns an :class:`~kcc.encode.amd.operands.Inst` into bytes (the decoder
is :mod:`kcc.encode.amd.decode`, the LLVM syntax :mod:`kcc.encode.amd.syntax`; the package
``kcc.encode.amd`` offers all three). Field layouts are those of RDNA3 ISA §16 and CDNA3 ISA §12
"Microcode Formats"; each packer below names its format.

Mnemonics of VOP1/VOP2/VOPC forms may carry LLVM's ``_e32``/``_e64`` suffix to choose the
encoding; without one the encoder takes the 32-bit encoding when the operands fit it (VGPR
``src1``, VCC lane masks, no modifiers) and VOP3 otherwise. The decoder always names the
suffix, as LLVM prints it.
"""
from __future__ import annotations

from kcc.encode.amd.fields import (
    _CACHE,
    _PREFIX,
    _SEG,
    _VOP_E32,
    AmdEncodeError,
    _fit,
    _mods,
    _one_literal,
    _scalar_code,
    _vgpr,
    _words,
    fits_e32,
    k_literal,
    lane_dwords,
    lookup,
    src_code,
)
from kcc.encode.amd.operands import VGPR, FloatImm, Imm, Inst, Operand, Special
from kcc.encode.amd.table import (
    FAMILY,
    KINDS,
    OFF_CODE,
    SPECIAL_CODES,
    Row,
    vop3_opcode,
)


# ----------------------------------------------------------------------------- encoder
def encode(arch: str, inst: Inst) -> bytes:
    """The bytes of one instruction (with its literal dword, if any)."""
    row, want = lookup(arch, inst.name)
    if len(inst.ops) != len(row.ops):
        raise AmdEncodeError(f"{inst.name}: expected {len(row.ops)} operands "
                             f"({', '.join(f for f, _ in row.ops) or 'none'}), got "
                             f"{len(inst.ops)}")
    ops = dict(zip((f for f, _ in row.ops), inst.ops))
    if row.fmt in _VOP_E32:
        if want == "e64" or (want is None and row.e64 and not fits_e32(arch, row, inst)):
            if not row.e64:
                raise AmdEncodeError(f"{inst.name}: {row.name} has no VOP3 encoding")
            return _enc_vop3(arch, row, inst, ops, row.promoted_fmt, vop3_opcode(arch, row))
        return _enc_vop_e32(arch, row, inst, ops)
    if row.fmt in ("VOP3", "VOP3SD"):
        return _enc_vop3(arch, row, inst, ops, row.fmt, row.op)
    return _ENCODERS[row.fmt](arch, row, inst, ops)


def _enc_vop_e32(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """VOP1 (RDNA3 §16.3.2 / CDNA3 §12.3.2), VOP2 (§16.3.1 / §12.3.1), VOPC (§16.3.3 /
    §12.3.3): 32 bits plus an optional literal; lane masks are VCC, implicit. v_fmaak/v_fmamk's
    K is that literal, always present; a literal src0 must be the same dword (one literal per
    instruction)."""
    _mods(inst, ())
    kinds = row.fields()
    vcc = Special("vcc_lo" if lane_dwords(arch) == 1 else "vcc")
    for field, kind in row.ops:
        if kind == "lane" and ops[field] != vcc:
            raise AmdEncodeError(f"{inst.name}: the 32-bit encoding's lane mask is {vcc}, "
                                 f"got {ops[field]}")
    src0, lit = (src_code(arch, ops["src0"], kinds["src0"], f"{inst.name} src0")
                 if "src0" in ops else (0, None))
    if "simm32" in ops:
        lit = _one_literal([lit, k_literal(ops["simm32"], kinds["simm32"],
                                           f"{inst.name} K")], inst.name)
    vdst = 0
    if "vdst" in ops:
        kd = kinds["vdst"]
        vdst = (_scalar_code(arch, ops["vdst"], 1, f"{inst.name} vdst") if kd == "s32" else
                _vgpr(ops["vdst"], KINDS[kd].dwords, f"{inst.name} vdst"))
    if row.fmt == "VOP1":
        w = (0x3F << 25) | (vdst << 17) | (row.op << 9) | src0
    else:
        vsrc1 = _vgpr(ops["src1"], KINDS[kinds["src1"]].dwords, f"{inst.name} src1 (e32)")
        if row.fmt == "VOP2":
            w = (row.op << 25) | (vdst << 17) | (vsrc1 << 9) | src0
        else:
            w = (0x3E << 25) | (row.op << 17) | (vsrc1 << 9) | src0
    return _words(w, literal=lit)


def _enc_vop3(arch: str, row: Row, inst: Inst, ops: dict[str, Operand], fmt: str,
              opcode: int) -> bytes:
    """VOP3 (RDNA3 §16.3.4 / CDNA3 §12.3.4 VOP3A) and VOP3SD (RDNA3 §16.3.5 / CDNA3 §12.3.5
    VOP3B): 64 bits; gfx11 allows a literal dword, CDNA3 does not."""
    fam = FAMILY[arch]
    kinds = row.fields()
    m = _mods(inst, ("neg", "clamp", "omod") + (("abs",) if fmt == "VOP3" else ()))
    codes, lits = [], []
    for i in range(3):
        f = f"src{i}"
        if f in ops:
            c, lit = src_code(arch, ops[f], kinds[f], f"{inst.name} {f}")
            codes.append(c)
            lits.append(lit)
        else:
            codes.append(0)
    literal = _one_literal(lits, inst.name)
    if literal is not None and fam == "gfx9":
        raise AmdEncodeError(f"{inst.name}: CDNA3 VOP3 encodings take no literal constant")
    if "vdst" in ops:
        kd = kinds["vdst"]
        vdst = (_scalar_code(arch, ops["vdst"], 1, f"{inst.name} vdst") if kd == "s32" else
                _vgpr(ops["vdst"], KINDS[kd].dwords, f"{inst.name} vdst"))
    elif row.fmt == "VOPC" and "sdst" not in ops:
        vdst = SPECIAL_CODES[fam]["exec_lo"]          # gfx11 v_cmpx_*_e64 writes EXEC
    else:
        vdst = 0
    mid = 0
    if "sdst" in ops:
        sd = _scalar_code(arch, ops["sdst"], lane_dwords(arch), f"{inst.name} sdst")
        if fmt == "VOP3SD":
            mid = sd << 8
        else:
            vdst = sd                                   # VOPC_e64: mask in VDST
    if fmt == "VOP3":
        mid |= _bits3(m.get("abs"), "abs") << 8
    clamp = 1 if m.get("clamp") else 0
    omod = _fit(m.get("omod", 0), 2, False, f"{inst.name} omod")
    w0 = (_PREFIX[fam]["VOP3"] << 26) | (opcode << 16) | (clamp << 15) | mid | vdst
    w1 = ((_bits3(m.get("neg"), "neg") << 29) | (omod << 27) | (codes[2] << 18) |
          (codes[1] << 9) | codes[0])
    return _words(w0, w1, literal=literal)


def _enc_vop3p(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """The matrix ops: RDNA3 VOP3P (§16.3; WMMA) and CDNA3 VOP3P-MAI (§12.3; MFMA), 64 bits.

    gfx11: [7:0] VDST, [10:8] NEG_HI, [13:11] OP_SEL, [14] OP_SEL_HI[2], [15] CLAMP, [22:16]
    OP, [31:24] 0xCC; then SRC0, SRC1, SRC2 (9 bits each), [28:27] OP_SEL_HI[1:0], [31:29]
    NEG (LLVM's neg_lo). OP_SEL_HI is written all ones, as LLVM does for these ops; on
    v_wmma_i32_16x16x16_iu8 NEG_LO[0]/[1] mean "A/B signed" and CLAMP saturates.
    gfx9: [7:0] VDST, [10:8] CBSZ, [14:11] ABID, [15] ACC_CD (0: C and D are VGPRs), [22:16]
    OP, [31:23] 0x1A7; then SRC0, SRC1, SRC2, [28:27] ACC (0: A and B are VGPRs), [31:29]
    BLGP. AGPRs are not used by kcc, so ACC_CD and ACC are always 0."""
    kinds = row.fields()
    fam = FAMILY[arch]
    if fam == "gfx9" and row.op < 0x40:
        return _enc_pk(row, inst, ops)
    if fam == "gfx11":
        m = _mods(inst, ("op_sel", "neg_lo", "neg_hi", "clamp"))
    else:
        m = _mods(inst, ("cbsz", "abid", "blgp"))
    codes = []
    for i in range(3):
        f = f"src{i}"
        op = ops[f]
        if KINDS[kinds[f]].cls == "vreg":
            codes.append(256 + _vgpr(op, KINDS[kinds[f]].dwords, f"{inst.name} {f}"))
            continue
        if not isinstance(op, (VGPR, Imm, FloatImm)):
            raise AmdEncodeError(f"{inst.name} {f}: a VGPR tuple or an inline constant, "
                                 f"got {op}")
        c, lit = src_code(arch, op, kinds[f], f"{inst.name} {f}")
        if lit is not None:
            raise AmdEncodeError(f"{inst.name} {f}: {op} is no inline constant")
        codes.append(c)
    nd = KINDS[kinds["vdst"]].dwords
    vdst = _vgpr(ops["vdst"], nd, f"{inst.name} vdst")
    if fam == "gfx9":
        for f, op in ops.items():
            if isinstance(op, VGPR) and op.index % 2:
                raise AmdEncodeError(f"{inst.name} {f}: {op} is not 64-bit aligned")
        w0 = ((0x1A7 << 23) | (row.op << 16) | (_fit(m.get("abid", 0), 4, False, "abid") << 11)
              | (_fit(m.get("cbsz", 0), 3, False, "cbsz") << 8) | vdst)
        w1 = ((_fit(m.get("blgp", 0), 3, False, "blgp") << 29) | (codes[2] << 18) |
              (codes[1] << 9) | codes[0])
        return _words(w0, w1)
    w0 = ((0xCC << 24) | (row.op << 16) | ((1 if m.get("clamp") else 0) << 15) | (1 << 14) |
          (_bits3(m.get("op_sel"), "op_sel") << 11) | (_bits3(m.get("neg_hi"), "neg_hi") << 8)
          | vdst)
    w1 = ((_bits3(m.get("neg_lo"), "neg_lo") << 29) | (3 << 27) | (codes[2] << 18) |
          (codes[1] << 9) | codes[0])
    return _words(w0, w1)


def _enc_pk(row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """CDNA3 VOP3P (§12.3.6) packed-f32 ops: [7:0] VDST, [10:8] NEG_HI, [13:11] OP_SEL, [14]
    OP_SEL_HI[2], [15] CLAMP, [22:16] OP, [31:23] 0x1A7; then SRC0, SRC1, SRC2, [28:27]
    OP_SEL_HI[1:0], [31:29] NEG_LO. The modifiers have one bit per source (llvm-mc-19 spells
    op_sel:[1,0] on the two-source ops); OP_SEL_HI defaults to all ones, and its unused bits
    of a two-source op are written ones, as llvm-mc-19 does. No literal (llvm-mc refuses it)."""
    kinds = row.fields()
    m = _mods(inst, ("op_sel", "op_sel_hi", "neg_lo", "neg_hi", "clamp"))
    n = sum(1 for f in kinds if f.startswith("src"))
    codes = [0, 0, 0]
    for i in range(n):
        f = f"src{i}"
        c, lit = src_code("gfx942", ops[f], kinds[f], f"{inst.name} {f}")
        if lit is not None:
            raise AmdEncodeError(f"{inst.name} {f}: {ops[f]} is no inline constant")
        codes[i] = c
    bits = {k: _bitsn(m.get(k), n, f"{inst.name} {k}") for k in ("op_sel", "neg_lo", "neg_hi")}
    hi = 7 if m.get("op_sel_hi") is None else (
        _bitsn(m["op_sel_hi"], n, f"{inst.name} op_sel_hi") | (7 >> n << n))
    vdst = _vgpr(ops["vdst"], 2, f"{inst.name} vdst")
    w0 = ((0x1A7 << 23) | (row.op << 16) | ((1 if m.get("clamp") else 0) << 15) |
          ((hi >> 2) << 14) | (bits["op_sel"] << 11) | (bits["neg_hi"] << 8) | vdst)
    w1 = ((bits["neg_lo"] << 29) | ((hi & 3) << 27) | (codes[2] << 18) | (codes[1] << 9) |
          codes[0])
    return _words(w0, w1)


def _bitsn(v: object, n: int, what: str) -> int:
    """A per-source modifier tuple of n bits (None: all zero) as its field value."""
    if v is None:
        return 0
    if not isinstance(v, tuple) or len(v) != n or any(b not in (0, 1, True, False) for b in v):
        raise AmdEncodeError(f"{what} must be a {n}-tuple of 0/1, got {v!r}")
    return sum(int(b) << i for i, b in enumerate(v))


def _bits3(v: object, what: str) -> int:
    if v is None:
        return 0
    if not isinstance(v, tuple) or len(v) != 3 or any(b not in (0, 1, True, False) for b in v):
        raise AmdEncodeError(f"{what} must be a 3-tuple of 0/1, got {v!r}")
    return int(v[0]) | int(v[1]) << 1 | int(v[2]) << 2


def _enc_sop(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """SOP2, SOP1, SOPC (RDNA3 §16.1.1/16.1.3/16.1.4, CDNA3 §12.1.1/12.1.3/12.1.4)."""
    _mods(inst, ())
    kinds = row.fields()
    sdst = (_scalar_code(arch, ops["sdst"], KINDS[kinds["sdst"]].dwords, f"{inst.name} sdst")
            if "sdst" in ops else 0)
    codes, lits = [0, 0], []
    for i in range(2):
        f = f"ssrc{i}"
        if f in ops:
            if isinstance(ops[f], VGPR):
                raise AmdEncodeError(f"{inst.name} {f}: scalar instructions take no VGPR")
            codes[i], lit = src_code(arch, ops[f], kinds[f], f"{inst.name} {f}")
            lits.append(lit)
    literal = _one_literal(lits, inst.name)
    if row.fmt == "SOP2":
        w = (0b10 << 30) | (row.op << 23) | (sdst << 16) | (codes[1] << 8) | codes[0]
    elif row.fmt == "SOP1":
        w = (0x17D << 23) | (sdst << 16) | (row.op << 8) | codes[0]
    else:
        w = (0x17E << 23) | (row.op << 16) | (codes[1] << 8) | codes[0]
    return _words(w, literal=literal)


def _imm16(op: Operand, kind: str, what: str) -> int:
    if not isinstance(op, Imm):
        raise AmdEncodeError(f"{what}: expected an immediate, got {op}")
    if kind == "label":
        return _fit(op.value, 16, True, what)
    if not -(1 << 15) <= op.value <= 0xFFFF:
        raise AmdEncodeError(f"{what}: {op.value} does not fit 16 bits")
    return op.value & 0xFFFF


def _enc_sopk(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """SOPK (RDNA3 §16.1.2, CDNA3 §12.1.2): the SDST field also holds s_cmpk's source."""
    _mods(inst, ())
    sdst = _scalar_code(arch, ops["sdst"], 1, f"{inst.name} sdst")
    imm = _imm16(ops["simm16"], row.fields()["simm16"], f"{inst.name} simm16")
    return _words((0xB << 28) | (row.op << 23) | (sdst << 16) | imm)


def _enc_sopp(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """SOPP (RDNA3 §16.1.5, CDNA3 §12.1.5)."""
    _mods(inst, ())
    imm = (_imm16(ops["simm16"], row.fields()["simm16"], f"{inst.name} simm16")
           if "simm16" in ops else 0)
    return _words((0x17F << 23) | (row.op << 16) | imm)


def _enc_smem(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """SMEM (RDNA3 §16.2, CDNA3 §12.2): 21-bit signed byte offset and/or an SGPR soffset."""
    fam = FAMILY[arch]
    kinds = row.fields()
    m = _mods(inst, ("offset", "glc") + (("dlc",) if fam == "gfx11" else ()))
    sdata = _scalar_code(arch, ops["sdata"], KINDS[kinds["sdata"]].dwords, f"{inst.name} sdata")
    sbase = _scalar_code(arch, ops["sbase"], 2, f"{inst.name} sbase")
    off = ops["offset"]
    glc = 1 if m.get("glc") else 0
    if isinstance(off, Imm):
        if "offset" in m:
            raise AmdEncodeError(f"{inst.name}: offset given twice")
        offset, soff = _fit(off.value, 21, True, f"{inst.name} offset"), None
    else:
        soff = _scalar_code(arch, off, 1, f"{inst.name} soffset")
        offset = _fit(m.get("offset", 0), 21, True, f"{inst.name} offset")
    if fam == "gfx11":
        w0 = ((0x3D << 26) | (row.op << 18) | (glc << 14) | ((1 if m.get("dlc") else 0) << 13) |
              (sdata << 6) | (sbase >> 1))
        w1 = ((OFF_CODE[fam] if soff is None else soff) << 25) | offset
        return _words(w0, w1)
    w0 = (0x30 << 26) | (row.op << 18) | (glc << 16) | (sdata << 6) | (sbase >> 1)
    if soff is None:
        w0 |= 1 << 17                                   # IMM: OFFSET is a byte offset
        w1 = offset
    elif "offset" in m:
        w0 |= (1 << 17) | (1 << 14)                     # IMM + SOE: both
        w1 = (soff << 25) | offset
    else:
        w1 = soff                                       # OFFSET holds the SGPR
    return _words(w0, w1)


def _enc_flat(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """FLAT, GLOBAL, SCRATCH (RDNA3 §16.8, CDNA3 §12.9): 13-bit offset, SEG selects the
    aperture; SADDR "off" is null (gfx11) or 0x7f (CDNA3)."""
    fam = FAMILY[arch]
    kinds = row.fields()
    cache = _CACHE[fam]
    m = _mods(inst, ("offset",) + cache)
    off_code = OFF_CODE[fam]
    saddr, sve = (off_code if fam == "gfx11" or row.fmt != "FLAT" else 0), 0
    if "saddr" in ops:
        s = ops["saddr"]
        if s != Special("off"):
            saddr = _scalar_code(arch, s, KINDS[kinds["saddr"]].dwords, f"{inst.name} saddr")
    a = ops["addr"]
    if row.fmt == "SCRATCH" and a == Special("off"):
        addr = 0
    else:
        n = 2 if row.fmt == "FLAT" or (row.fmt == "GLOBAL" and saddr == off_code) else 1
        addr = _vgpr(a, n, f"{inst.name} vaddr")
        sve = 1 if row.fmt == "SCRATCH" else 0
    data = _vgpr(ops["data"], KINDS[kinds["data"]].dwords, f"{inst.name} vdata") \
        if "data" in ops else 0
    vdst = _vgpr(ops["vdst"], KINDS[kinds["vdst"]].dwords, f"{inst.name} vdst") \
        if "vdst" in ops else 0
    offset = _fit(m.get("offset", 0), 13 if row.fmt != "FLAT" else 12, row.fmt != "FLAT",
                  f"{inst.name} offset")
    c = [1 if m.get(k) else 0 for k in cache]
    seg = _SEG[row.fmt]
    if fam == "gfx11":
        w0 = ((0x37 << 26) | (row.op << 18) | (seg << 16) | (c[1] << 15) | (c[0] << 14) |
              (c[2] << 13) | offset)
        w1 = (vdst << 24) | (sve << 23) | (saddr << 16) | (data << 8) | addr
    else:
        w0 = ((0x37 << 26) | (c[1] << 25) | (row.op << 18) | (c[2] << 17) | (c[0] << 16) |
              (seg << 14) | (sve << 13) | offset)
        w1 = (vdst << 24) | (saddr << 16) | (data << 8) | addr
    return _words(w0, w1)


def _enc_ds(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """DS (RDNA3 §16.5, CDNA3 §12.6): one 16-bit offset, or offset0/offset1 for 2addr."""
    fam = FAMILY[arch]
    kinds = row.fields()
    if row.two_offsets:
        m = _mods(inst, ("offset0", "offset1", "gds"))
        off0 = _fit(m.get("offset0", 0), 8, False, f"{inst.name} offset0")
        off1 = _fit(m.get("offset1", 0), 8, False, f"{inst.name} offset1")
    else:
        m = _mods(inst, ("offset", "gds"))
        off = _fit(m.get("offset", 0), 16, False, f"{inst.name} offset")
        off0, off1 = off & 0xFF, off >> 8
    regs = {f: _vgpr(ops[f], KINDS[kinds[f]].dwords, f"{inst.name} {f}") if f in ops else 0
            for f in ("vdst", "addr", "data0", "data1")}
    gds = 1 if m.get("gds") else 0
    if fam == "gfx11":
        w0 = (0x36 << 26) | (row.op << 18) | (gds << 17) | (off1 << 8) | off0
    else:
        w0 = (0x36 << 26) | (row.op << 17) | (gds << 16) | (off1 << 8) | off0
    w1 = (regs["vdst"] << 24) | (regs["data1"] << 16) | (regs["data0"] << 8) | regs["addr"]
    return _words(w0, w1)


_ENCODERS = {"SOP2": _enc_sop, "SOP1": _enc_sop, "SOPC": _enc_sop, "SOPK": _enc_sopk,
             "SOPP": _enc_sopp, "SMEM": _enc_smem, "FLAT": _enc_flat, "GLOBAL": _enc_flat,
             "SCRATCH": _enc_flat, "DS": _enc_ds, "VOP3P": _enc_vop3p}
