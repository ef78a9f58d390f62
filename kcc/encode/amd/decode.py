"""AMD GPU decoder for gfx1100 and gfx942: bytes -> :class:`Inst`, derived from the same rows
the encoder uses (:func:`kcc.encode.amd.table.by_opcode`). Field layouts: RDNA3 ISA §16 and
CDNA3 ISA §12 "Microcode Formats", as in :mod:`kcc.encode.amd.encoder`.
"""
from __future__ import annotations

from typing import Iterator

from kcc.encode.amd.fields import (
    _CACHE,
    _PREFIX,
    _SEG_FMT,
    AmdDecodeError,
    _signed,
    lane_dwords,
    src_operand,
)
from kcc.encode.amd.operands import SGPR, VGPR, Imm, Inst, Operand, Special
from kcc.encode.amd.table import FAMILY, KINDS, LITERAL, OFF_CODE, Row, by_opcode

__all__ = ["decode", "disassemble"]


def _word(data: bytes, pos: int, base: int, what: str) -> int:
    if pos + 4 > len(data):
        raise AmdDecodeError(f"truncated {what} at offset {base + pos:#x}")
    return int.from_bytes(data[pos:pos + 4], "little")


def _classify(fam: str, w: int) -> tuple[str, int] | None:
    """(format, opcode) of a first instruction dword, or None when no format matches."""
    top9 = w >> 23
    if top9 == 0x17D:
        return "SOP1", (w >> 8) & 0xFF
    if top9 == 0x17E:
        return "SOPC", (w >> 16) & 0x7F
    if top9 == 0x17F:
        return "SOPP", (w >> 16) & 0x7F
    if w >> 28 == 0xB:
        return "SOPK", (w >> 23) & 0x1F
    if w >> 30 == 0b10:
        return "SOP2", (w >> 23) & 0x7F
    if w >> 31 == 0:
        if w >> 25 == 0x3F:
            return "VOP1", (w >> 9) & 0xFF
        if w >> 25 == 0x3E:
            return "VOPC", (w >> 17) & 0xFF
        return "VOP2", (w >> 25) & 0x3F
    if (fam == "gfx11" and w >> 24 == 0xCC) or (fam == "gfx9" and w >> 23 == 0x1A7):
        return "VOP3P", (w >> 16) & 0x7F
    top6 = w >> 26
    p = _PREFIX[fam]
    if top6 == p["SMEM"]:
        return "SMEM", (w >> 18) & 0xFF
    if top6 == p["VOP3"]:
        return "VOP3", (w >> 16) & 0x3FF
    if top6 == p["DS"]:
        return "DS", (w >> 18) & 0xFF if fam == "gfx11" else (w >> 17) & 0xFF
    if top6 == p["FLAT"]:
        seg = (w >> 16) & 3 if fam == "gfx11" else (w >> 14) & 3
        if seg not in _SEG_FMT:
            return None
        return _SEG_FMT[seg], (w >> 18) & 0x7F
    return None


def _sreg(arch: str, code: int, n: int) -> Operand:
    """A scalar register field (SDST, SDATA, SADDR, ...) as an operand."""
    op = src_operand(arch, code, "s32" if n == 1 else "b64" if n == 2 else "s32", None)
    if n > 2:
        if not isinstance(op, SGPR):
            raise AmdDecodeError(f"register tuple at code {code}")
        return SGPR(code, n)
    if isinstance(op, Imm):
        raise AmdDecodeError(f"scalar register code {code} is a constant")
    return op


def _vreg(kind: str, index: int) -> VGPR:
    return VGPR(index, KINDS[kind].dwords)


def _mods(pairs: dict[str, object]) -> tuple[tuple[str, object], ...]:
    return tuple(sorted((k, v) for k, v in pairs.items() if v not in (None, 0, False)))


def decode(arch: str, data: bytes, offset: int = 0, base: int = 0) -> tuple[Inst, int]:
    """Decode the instruction at data[offset:]; return it and its size in bytes. Errors name
    the word and its offset (``base + offset``)."""
    fam = FAMILY[arch]
    w = _word(data, offset, base, "instruction")
    cls = _classify(fam, w)
    hit = by_opcode(arch).get(cls) if cls else None
    if hit is None:
        raise AmdDecodeError(f"{arch}: unknown instruction word {w:#010x} at offset "
                             f"{base + offset:#x}")
    row, promoted = hit
    fmt = cls[0]
    is64 = fmt in ("VOP3", "VOP3P", "SMEM", "DS", "FLAT", "GLOBAL", "SCRATCH")
    w1 = _word(data, offset + 4, base, f"{row.name}") if is64 else 0
    size = 8 if is64 else 4
    ctx = _Ctx(arch, data, offset + size, base)
    try:
        ops, mods = _DECODERS[fmt](ctx, row, promoted, w, w1)
    except AmdDecodeError as e:
        raise AmdDecodeError(f"{arch}: {row.name} at offset {base + offset:#x}: {e}") from None
    name = row.name
    if row.e64:
        name += "_e64" if promoted else "_e32"
    return Inst(name, ops, _mods(mods)), size + ctx.used


class _Ctx:
    """Reads the literal dword that follows an instruction, at most once."""

    def __init__(self, arch: str, data: bytes, pos: int, base: int) -> None:
        self.arch, self.data, self.pos, self.base, self.used = arch, data, pos, base, 0

    def src(self, code: int, kind: str) -> Operand:
        lit = None
        if code == LITERAL:
            lit = _word(self.data, self.pos, self.base, "literal")
            self.used = 4
        return src_operand(self.arch, code, kind, lit)

    def k(self, kind: str) -> Imm:
        """The mandatory literal K of v_fmaak/v_fmamk (the same dword a literal src0 reads).
        A 16-bit K whose high half is not zero is refused: llvm-mc-19 writes it zero, and
        kcc's printer could not spell it back."""
        lit = _word(self.data, self.pos, self.base, "literal K")
        self.used = 4
        if KINDS[kind].ctype == "f16" and lit >> 16:
            raise AmdDecodeError(f"16-bit literal K {lit:#x} has high bits set")
        return Imm(lit)


def _in_order(row: Row, vals: dict[str, Operand]) -> tuple[Operand, ...]:
    return tuple(vals[f] for f, _ in row.ops)


def _dec_sop(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    kinds = row.fields()
    vals: dict[str, Operand] = {}
    if "sdst" in kinds:
        n = KINDS[kinds["sdst"]].dwords
        vals["sdst"] = _sreg(ctx.arch, (w >> 16) & 0x7F, n)
    if row.fmt == "SOPK":
        vals["simm16"] = _imm16(w, kinds["simm16"])
        return _in_order(row, vals), {}
    for i, f in enumerate(("ssrc0", "ssrc1")):
        if f in kinds:
            vals[f] = ctx.src((w >> (8 * i)) & 0xFF, kinds[f])
    return _in_order(row, vals), {}


def _imm16(w: int, kind: str) -> Imm:
    return Imm(_signed(w, 16) if kind == "label" else w & 0xFFFF)


def _dec_sopp(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    kinds = row.fields()
    if "simm16" in kinds:
        return (_imm16(w, kinds["simm16"]),), {}
    return (), {}


def _dec_vop_e32(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    kinds = row.fields()
    vcc = Special("vcc_lo" if lane_dwords(ctx.arch) == 1 else "vcc")
    vals: dict[str, Operand] = {f: vcc for f, k in row.ops if k == "lane"}
    if "vdst" in kinds:
        vd = (w >> 17) & 0xFF
        vals["vdst"] = (_sreg(ctx.arch, vd, 1) if kinds["vdst"] == "s32"
                        else _vreg(kinds["vdst"], vd))
    if "src0" in kinds:
        vals["src0"] = ctx.src(w & 0x1FF, kinds["src0"])
    if "src1" in kinds:
        vals["src1"] = _vreg(kinds["src1"], (w >> 9) & 0xFF)
    if "simm32" in kinds:
        vals["simm32"] = ctx.k(kinds["simm32"])
    return _in_order(row, vals), {}


def _dec_vop3(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    kinds = row.fields()
    fmt = row.promoted_fmt if promoted else row.fmt
    vals: dict[str, Operand] = {}
    vd = w & 0xFF
    if "vdst" in kinds:
        vals["vdst"] = (_sreg(ctx.arch, vd, 1) if kinds["vdst"] == "s32"
                        else _vreg(kinds["vdst"], vd))
    n = lane_dwords(ctx.arch)
    if "sdst" in kinds:
        vals["sdst"] = _sreg(ctx.arch, (w >> 8) & 0x7F if fmt == "VOP3SD" else vd, n)
    for i in range(3):
        f = f"src{i}"
        if f in kinds:
            code = (w1 >> (9 * i)) & 0x1FF
            vals[f] = ctx.src(code, kinds[f])
    if fmt == "VOP3" and (w >> 11) & 0xF:
        raise AmdDecodeError("op_sel is not supported")
    bits3 = lambda b: tuple((b >> i) & 1 for i in range(3)) if b else None  # noqa: E731
    mods = {"neg": bits3(w1 >> 29), "clamp": bool((w >> 15) & 1), "omod": (w1 >> 27) & 3}
    if fmt == "VOP3":
        mods["abs"] = bits3((w >> 8) & 7)
    return _in_order(row, vals), mods


def _dec_vop3p(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    """gfx11 VOP3P (WMMA) and gfx9 VOP3P-MAI (MFMA); field layouts at
    :func:`kcc.encode.amd.encoder._enc_vop3p`."""
    if FAMILY[ctx.arch] == "gfx9" and row.op < 0x40:
        return _dec_pk(ctx, row, w, w1)
    kinds = row.fields()
    vals: dict[str, Operand] = {"vdst": _vreg(kinds["vdst"], w & 0xFF)}
    for i in range(3):
        f = f"src{i}"
        code = (w1 >> (9 * i)) & 0x1FF
        if KINDS[kinds[f]].cls == "vreg":
            if code < 256:
                raise AmdDecodeError(f"{f} must be a VGPR tuple")
            vals[f] = _vreg(kinds[f], code - 256)
        else:
            vals[f] = ctx.src(code, kinds[f])
            if ctx.used or isinstance(vals[f], (SGPR, Special)):
                raise AmdDecodeError(f"{f} must be a VGPR tuple or an inline constant")
    bits3 = lambda b: tuple((b >> i) & 1 for i in range(3)) if b & 7 else None
    if FAMILY[ctx.arch] == "gfx9":
        if (w >> 15) & 1 or (w1 >> 27) & 3:
            raise AmdDecodeError("AGPR operands (acc_cd, acc) are not supported")
        mods = {"cbsz": (w >> 8) & 7, "abid": (w >> 11) & 0xF, "blgp": w1 >> 29}
    else:
        if not (w >> 14) & 1 or (w1 >> 27) & 3 != 3:
            raise AmdDecodeError("op_sel_hi other than [1,1,1] is not supported")
        mods = {"op_sel": bits3(w >> 11), "neg_lo": bits3(w1 >> 29), "neg_hi": bits3(w >> 8),
                "clamp": bool((w >> 15) & 1)}
    return _in_order(row, vals), mods


def _dec_pk(ctx: _Ctx, row: Row, w: int, w1: int):
    """gfx9 VOP3P packed-f32 ops; layout at :func:`kcc.encode.amd.encoder._enc_pk`.
    Modifiers have one bit per source; op_sel_hi is left out when all ones, as llvm-mc-19
    prints it."""
    kinds = row.fields()
    n = sum(1 for f in kinds if f.startswith("src"))
    vals: dict[str, Operand] = {"vdst": _vreg(kinds["vdst"], w & 0xFF)}
    for i in range(n):
        f = f"src{i}"
        vals[f] = ctx.src((w1 >> (9 * i)) & 0x1FF, kinds[f])
        if ctx.used:
            raise AmdDecodeError(f"{f}: packed-f32 ops take no literal")
    hi = ((w1 >> 27) & 3) | ((w >> 14) & 1) << 2
    fields = {"op_sel": (w >> 11) & 7, "neg_lo": (w1 >> 29) & 7, "neg_hi": (w >> 8) & 7}
    if n < 3 and (any(v >> n for v in fields.values()) or hi >> n != 1 or (w1 >> 18) & 0x1FF):
        raise AmdDecodeError("bits of an absent third source are set")
    bits = lambda b: tuple((b >> i) & 1 for i in range(n))
    mods: dict[str, object] = {k: bits(v) if v else None for k, v in fields.items()}
    mods["op_sel_hi"] = None if hi & ((1 << n) - 1) == (1 << n) - 1 else bits(hi)
    mods["clamp"] = bool((w >> 15) & 1)
    return _in_order(row, vals), mods


def _dec_smem(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    fam = FAMILY[ctx.arch]
    kinds = row.fields()
    vals: dict[str, Operand] = {
        "sdata": _sreg(ctx.arch, (w >> 6) & 0x7F, KINDS[kinds["sdata"]].dwords),
        "sbase": _sreg(ctx.arch, (w & 0x3F) << 1, 2)}
    offset = _signed(w1, 21)
    mods: dict[str, object] = {"glc": bool((w >> (14 if fam == "gfx11" else 16)) & 1)}
    if fam == "gfx11":
        mods["dlc"] = bool((w >> 13) & 1)
        soff = w1 >> 25
        if soff == OFF_CODE[fam]:
            # LLVM prints a zero offset with no SGPR as the null soffset it encodes.
            vals["offset"] = Special("null") if offset == 0 else Imm(offset)
        else:
            vals["offset"] = _sreg(ctx.arch, soff, 1)
            mods["offset"] = offset
    else:
        imm, soe = (w >> 17) & 1, (w >> 14) & 1
        if imm and not soe:
            vals["offset"] = Imm(offset)
        elif not imm and not soe:
            vals["offset"] = _sreg(ctx.arch, w1 & 0xFF, 1)
        else:
            vals["offset"] = _sreg(ctx.arch, w1 >> 25, 1)
            mods["offset"] = offset if imm else 0
    return _in_order(row, vals), mods


def _dec_flat(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    fam = FAMILY[ctx.arch]
    kinds = row.fields()
    off_code = OFF_CODE[fam]
    addr, data, saddr, vdst = w1 & 0xFF, (w1 >> 8) & 0xFF, (w1 >> 16) & 0x7F, w1 >> 24
    vals: dict[str, Operand] = {}
    if "vdst" in kinds:
        vals["vdst"] = _vreg(kinds["vdst"], vdst)
    if "data" in kinds:
        vals["data"] = _vreg(kinds["data"], data)
    if "saddr" in kinds:
        vals["saddr"] = (Special("off") if saddr == off_code else
                         _sreg(ctx.arch, saddr, KINDS[kinds["saddr"]].dwords))
    if row.fmt == "FLAT":
        vals["addr"] = VGPR(addr, 2)
    elif row.fmt == "GLOBAL":
        vals["addr"] = VGPR(addr, 2 if saddr == off_code else 1)
    else:
        sve = (w1 >> 23) & 1 if fam == "gfx11" else (w >> 13) & 1
        vals["addr"] = VGPR(addr, 1) if sve else Special("off")
    if row.fmt == "FLAT":
        offset = w & 0xFFF
    else:
        offset = _signed(w, 13)
    if fam == "gfx11":
        c = {"glc": (w >> 14) & 1, "slc": (w >> 15) & 1, "dlc": (w >> 13) & 1}
    else:
        c = {"sc0": (w >> 16) & 1, "sc1": (w >> 25) & 1, "nt": (w >> 17) & 1}
    mods: dict[str, object] = {k: bool(v) for k, v in c.items() if k in _CACHE[fam]}
    mods["offset"] = offset
    return _in_order(row, vals), mods


def _dec_ds(ctx: _Ctx, row: Row, promoted: bool, w: int, w1: int):
    fam = FAMILY[ctx.arch]
    kinds = row.fields()
    regs = {"addr": w1 & 0xFF, "data0": (w1 >> 8) & 0xFF, "data1": (w1 >> 16) & 0xFF,
            "vdst": w1 >> 24}
    vals = {f: _vreg(kinds[f], regs[f]) for f in kinds}
    off0, off1 = w & 0xFF, (w >> 8) & 0xFF
    mods: dict[str, object] = {"gds": bool((w >> (17 if fam == "gfx11" else 16)) & 1)}
    if row.two_offsets:
        mods.update(offset0=off0, offset1=off1)
    else:
        mods["offset"] = off0 | off1 << 8
    return _in_order(row, vals), mods


_DECODERS = {"SOP2": _dec_sop, "SOP1": _dec_sop, "SOPC": _dec_sop, "SOPK": _dec_sop,
             "SOPP": _dec_sopp, "VOP1": _dec_vop_e32, "VOP2": _dec_vop_e32,
             "VOPC": _dec_vop_e32, "VOP3": _dec_vop3, "SMEM": _dec_smem, "FLAT": _dec_flat,
             "GLOBAL": _dec_flat, "SCRATCH": _dec_flat, "DS": _dec_ds, "VOP3P": _dec_vop3p}


def disassemble(arch: str, data: bytes, base: int = 0) -> Iterator[tuple[int, int, Inst, str]]:
    """Decode a whole code range: (offset, size, Inst, LLVM-syntax text) per instruction, the
    offset counted from ``base``. An unknown word raises :class:`AmdDecodeError` naming it and
    its offset."""
    from kcc.encode.amd.syntax import format_inst
    pos = 0
    while pos < len(data):
        inst, size = decode(arch, data, pos, base)
        yield base + pos, size, inst, format_inst(arch, inst)
        pos += size

