"""AMD GPU encoder and decoder for gfx1100 (RDNA3) and gfx942 (CDNA3), driven by the rows of
:mod:`kcc.encode.amd.table`.

``encode(arch, inst)`` turns an :class:`~kcc.encode.amd.operands.Inst` into bytes; ``decode``
and ``disassemble`` turn bytes back into ``Inst`` values (and LLVM-syntax text through
:mod:`kcc.encode.amd.syntax`). Field layouts are those of RDNA3 ISA §16 and CDNA3 ISA §12
"Microcode Formats"; each packer below names its format.

Mnemonics of VOP1/VOP2/VOPC forms may carry LLVM's ``_e32``/``_e64`` suffix to choose the
encoding; without one the encoder takes the 32-bit encoding when the operands fit it (VGPR
``src1``, VCC lane masks, no modifiers) and VOP3 otherwise. The decoder always names the
suffix, as LLVM prints it.
"""
from __future__ import annotations

from kcc.encode.amd.operands import SGPR, VGPR, FloatImm, Imm, Inst, Operand, Special
from kcc.encode.amd.table import (FAMILY, KINDS, LITERAL, MAX_SGPR, OFF_CODE, SPECIAL_CODES,
                                  SPECIAL_NAMES, WAVE_SIZE, Row, by_name, code_float,
                                  float_bits, inline_float_codes, vop3_opcode)

__all__ = ["AmdEncodeError", "AmdDecodeError", "encode", "decode", "disassemble", "format_inst",
           "parse_inst", "lookup"]


class AmdEncodeError(ValueError):
    """An instruction the AMD encoder cannot encode (unknown form, bad operand)."""


class AmdDecodeError(ValueError):
    """Bytes that are no instruction form of kcc's tables."""


_VOP_E32 = ("VOP1", "VOP2", "VOPC")
_PREFIX = {  # bits [31:26] of the 64-bit formats (RDNA3 §16, CDNA3 §12)
    "gfx11": {"SMEM": 0x3D, "VOP3": 0x35, "DS": 0x36, "FLAT": 0x37},
    "gfx9": {"SMEM": 0x30, "VOP3": 0x34, "DS": 0x36, "FLAT": 0x37},
}
_SEG = {"FLAT": 0, "SCRATCH": 1, "GLOBAL": 2}
_SEG_FMT = {v: k for k, v in _SEG.items()}
_CACHE = {"gfx11": ("glc", "slc", "dlc"), "gfx9": ("sc0", "sc1", "nt")}


def lookup(arch: str, name: str) -> tuple[Row, str | None]:
    """The row of a mnemonic and the encoding its suffix asks for ("e32", "e64" or None)."""
    table = by_name(arch)
    for suffix in ("_e32", "_e64"):
        base = name.removesuffix(suffix)
        if base != name and base in table and table[base].fmt in _VOP_E32:
            return table[base], suffix[1:]
    if name in table:
        return table[name], None
    raise AmdEncodeError(f"{arch}: unknown instruction {name!r}")


def lane_dwords(arch: str) -> int:
    """SGPRs in a lane mask: 1 on wave32 (gfx1100), 2 on wave64 (gfx942)."""
    return WAVE_SIZE[arch] // 32


def kind_dwords(arch: str, kind: str) -> int:
    """Registers an operand of this kind spans."""
    return lane_dwords(arch) if kind == "lane" else KINDS[kind].dwords


# ----------------------------------------------------------------------------- operands
def _scalar_code(arch: str, op: Operand, n: int, what: str) -> int:
    """Code of an SGPR or special register in a 7/8/9-bit scalar field."""
    fam = FAMILY[arch]
    if isinstance(op, SGPR):
        if op.count != n:
            raise AmdEncodeError(f"{what}: {op} is {op.count} SGPRs, expected {n}")
        if op.index + n - 1 > MAX_SGPR[fam]:
            raise AmdEncodeError(f"{what}: {op} is past s{MAX_SGPR[fam]}")
        if n > 1 and op.index % (2 if n == 2 else 4):
            raise AmdEncodeError(f"{what}: {op} is not aligned")
        return op.index
    if isinstance(op, Special) and op.name in SPECIAL_CODES[fam]:
        code = SPECIAL_CODES[fam][op.name]
        if SPECIAL_NAMES[fam].get((code, n)) == op.name or op.name in ("null", "scc", "vccz",
                                                                      "execz"):
            return code
        raise AmdEncodeError(f"{what}: {op} is not a {n}-dword operand")
    raise AmdEncodeError(f"{what}: expected a scalar register, got {op}")


def src_code(arch: str, op: Operand, kind: str, what: str = "source") -> tuple[int, int | None]:
    """9-bit source code of an operand and the literal dword it needs, if any (RDNA3 §7.3,
    CDNA3 §4.4 source operand encoding)."""
    k = KINDS[kind] if kind != "lane" else None
    n = kind_dwords(arch, kind)
    if isinstance(op, VGPR):
        if op.count != n:
            raise AmdEncodeError(f"{what}: {op} is {op.count} VGPRs, expected {n}")
        if k is not None and not k.vgpr:
            raise AmdEncodeError(f"{what}: {op} cannot be a VGPR here")
        return 256 + op.index, None
    if isinstance(op, (SGPR, Special)):
        return _scalar_code(arch, op, n, what), None
    if k is None:
        raise AmdEncodeError(f"{what}: a lane mask must be an SGPR or VCC, got {op}")
    wide_float = kind.startswith("f") and n == 2
    if isinstance(op, Imm):
        v = op.value
        if -16 <= v <= 64:
            return (128 + v if v >= 0 else 192 - v), None
        pattern = v << 32 if wide_float and 0 <= v <= 0xFFFFFFFF else v
        code = inline_float_codes(k.ctype).get(pattern & ((1 << (32 * n)) - 1))
        if code is not None:
            return code, None
        if wide_float and v > 0xFFFFFFFF:
            if v & 0xFFFFFFFF:
                raise AmdEncodeError(f"{what}: f64 literal {v:#x} has nonzero low dword")
            return LITERAL, v >> 32
        if not -(1 << 31) <= v <= 0xFFFFFFFF:
            raise AmdEncodeError(f"{what}: {v:#x} does not fit a 32-bit literal")
        return LITERAL, v & 0xFFFFFFFF
    if isinstance(op, FloatImm):
        bits = float_bits(op.value, k.ctype)
        code = inline_float_codes(k.ctype).get(bits)
        if code is not None:
            return code, None
        if k.ctype == "f64":
            if bits & 0xFFFFFFFF:
                raise AmdEncodeError(f"{what}: {op.value} needs a 64-bit literal")
            return LITERAL, bits >> 32
        return LITERAL, bits
    raise AmdEncodeError(f"{what}: bad operand {op!r}")


def src_operand(arch: str, code: int, kind: str, literal: int | None) -> Operand:
    """The operand a source code stands for (the inverse of :func:`src_code`)."""
    fam = FAMILY[arch]
    n = kind_dwords(arch, kind)
    if code >= 256:
        return VGPR(code - 256, n)
    if code <= MAX_SGPR[fam]:
        return SGPR(code, n)
    name = SPECIAL_NAMES[fam].get((code, n)) or SPECIAL_NAMES[fam].get((code, 1))
    if name is not None and (n == 1 or name in ("null", "scc", "vccz", "execz") or
                             (code, n) in SPECIAL_NAMES[fam]):
        return Special(name)
    if 128 <= code <= 192:
        return Imm(code - 128)
    if 193 <= code <= 208:
        return Imm(192 - code)
    if 240 <= code <= 248:
        return FloatImm(code_float(code))
    if code == LITERAL:
        if literal is None:
            raise AmdDecodeError("literal operand without a literal dword")
        return Imm(literal)
    raise AmdDecodeError(f"unsupported source operand code {code}")


def _vgpr(op: Operand, n: int, what: str) -> int:
    if not isinstance(op, VGPR) or op.count != n:
        raise AmdEncodeError(f"{what}: expected {n} VGPR(s), got {op}")
    return op.index


def _mods(inst: Inst, allowed: tuple[str, ...]) -> dict[str, object]:
    m = dict(inst.mods)
    bad = sorted(set(m) - set(allowed))
    if bad:
        raise AmdEncodeError(f"{inst.name}: modifier(s) {', '.join(bad)} not allowed here")
    return m


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _fit(v: object, bits: int, signed: bool, what: str) -> int:
    if not isinstance(v, int):
        raise AmdEncodeError(f"{what}: expected an integer, got {v!r}")
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= v <= hi:
        raise AmdEncodeError(f"{what}: {v} is outside [{lo}, {hi}]")
    return v & ((1 << bits) - 1)


def _words(*ws: int, literal: int | None = None) -> bytes:
    out = b"".join(w.to_bytes(4, "little") for w in ws)
    return out + (literal.to_bytes(4, "little") if literal is not None else b"")


def _one_literal(lits: list[int | None], what: str) -> int | None:
    vals = {v for v in lits if v is not None}
    if len(vals) > 1:
        raise AmdEncodeError(f"{what}: more than one literal value")
    return vals.pop() if vals else None


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
        if want == "e64" or (want is None and row.e64 and not _fits_e32(arch, row, inst)):
            if not row.e64:
                raise AmdEncodeError(f"{inst.name}: {row.name} has no VOP3 encoding")
            return _enc_vop3(arch, row, inst, ops, row.promoted_fmt, vop3_opcode(arch, row))
        return _enc_vop_e32(arch, row, inst, ops)
    if row.fmt in ("VOP3", "VOP3SD"):
        return _enc_vop3(arch, row, inst, ops, row.fmt, row.op)
    return _ENCODERS[row.fmt](arch, row, inst, ops)


def _fits_e32(arch: str, row: Row, inst: Inst) -> bool:
    if inst.mods:
        return False
    vcc = "vcc_lo" if lane_dwords(arch) == 1 else "vcc"
    for (field, kind), op in zip(row.ops, inst.ops):
        if kind == "lane" and op != Special(vcc):
            return False
        if field == "src1" and kind != "lane" and not isinstance(op, VGPR):
            return False
    return True


def _enc_vop_e32(arch: str, row: Row, inst: Inst, ops: dict[str, Operand]) -> bytes:
    """VOP1 (RDNA3 §16.3.2 / CDNA3 §12.3.2), VOP2 (§16.3.1 / §12.3.1), VOPC (§16.3.3 /
    §12.3.3): 32 bits plus an optional literal; lane masks are VCC, implicit."""
    _mods(inst, ())
    kinds = row.fields()
    vcc = Special("vcc_lo" if lane_dwords(arch) == 1 else "vcc")
    for field, kind in row.ops:
        if kind == "lane" and ops[field] != vcc:
            raise AmdEncodeError(f"{inst.name}: the 32-bit encoding's lane mask is {vcc}, "
                                 f"got {ops[field]}")
    src0, lit = (src_code(arch, ops["src0"], kinds["src0"], f"{inst.name} src0")
                 if "src0" in ops else (0, None))
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
             "SCRATCH": _enc_flat, "DS": _enc_ds}


# ----------------------------------------------------------------------------- front door
def decode(arch: str, data: bytes, offset: int = 0, base: int = 0) -> tuple[Inst, int]:
    """The instruction at data[offset:] and its size (see :mod:`kcc.encode.amd.decode`)."""
    from kcc.encode.amd.decode import decode as _decode
    return _decode(arch, data, offset, base)


def disassemble(arch: str, data: bytes, base: int = 0):
    """(offset, size, Inst, LLVM text) per instruction of a code range (``base`` is the
    address of data[0]); an unknown word raises :class:`AmdDecodeError` naming it and its
    offset."""
    from kcc.encode.amd.decode import disassemble as _disassemble
    return _disassemble(arch, data, base)


def format_inst(arch: str, inst: Inst) -> str:
    """LLVM-syntax text of one instruction (see :mod:`kcc.encode.amd.syntax`)."""
    from kcc.encode.amd.syntax import format_inst as _format
    return _format(arch, inst)


def parse_inst(arch: str, text: str) -> Inst:
    """One line of LLVM-syntax AMD assembly as an Inst (see :mod:`kcc.encode.amd.syntax`)."""
    from kcc.encode.amd.syntax import parse_inst as _parse
    return _parse(arch, text)
