"""x86-64 spill slots for the register allocator (kcc/regalloc/target.py): which bytes of an
operand's register carry a value, the spill and fill forms of each width, the width a slot
access moves, and which reloads an instruction can read as its memory operand instead."""

from __future__ import annotations


from kcc.encode.x86.row import KINDS, KindInfo, Row
from kcc.encode.x86.table import FORMS
from kcc.ir.mir import Imm, Inst, Mem, RegOp, Role
from kcc.record import replace
from kcc.startup import regex

# Spill and fill forms by (class, slot bytes).  VMOVAPS faults on a misaligned address
# (SDM Vol. 2 "MOVAPS": #GP if not aligned to 16/32/64 bytes), so it is only used for slots
# aligned to their size.  MOV r32 and VMOVSS/VMOVSD loads zero the rest of the register; an
# opmask moves whole (KMOVQ).
SPILL_FORMS = {("gpr", 4): "mov_rm32_r32", ("gpr", 8): "mov_rm64_r64",
               ("mask", 8): "kmovq_m64_k",
               ("vec", 4): "vmovss_m32_x", ("vec", 8): "vmovsd_m64_x",
               ("vec", 16): "vmovaps_m128_x", ("vec", 32): "vmovaps_m256_y",
               ("vec", 64): "vmovaps_m512_z"}
FILL_FORMS = {("gpr", 4): "mov_r32_rm32", ("gpr", 8): "mov_r64_rm64",
              ("mask", 8): "kmovq_k_km64",
              ("vec", 4): "vmovss_x_m32", ("vec", 8): "vmovsd_x_m64",
              ("vec", 16): "vmovaps_x_xm", ("vec", 32): "vmovaps_y_ym",
              ("vec", 64): "vmovaps_z_zm"}
# Scalar float arithmetic (SDM "ADDSS" …, "VFMADD231SS"): the result's meaningful bytes are
# the low lane; the first source's upper lanes only pass into the result's upper lanes.
_SCALAR_OPS = regex(r"v(add|sub|mul|div|min|max|sqrt|cmp|round|fn?m(add|sub)\d\d\d)"
                     r"(ss|sd)$")      # kcc.startup.regex: re.compile's pattern
# Moves whose register operand holds one scalar (MOVSS/MOVSD load and store, MOVD/MOVQ).
_SCALAR_MOVES = {"vmovss_x_m32": 4, "vmovss_m32_x": 4, "vmovsd_x_m64": 8, "vmovsd_m64_x": 8,
                 "vmovq_m64_x": 8, "vmovd_x_rm32": 4, "vmovd_rm32_x": 4, "vmovq_x_r64": 8,
                 "vmovq_r64_x": 8, "vmovq_x_xm64": 8}


def value_bytes(inst: Inst, k: int, vbytes: int) -> int:
    """How many low bytes of operand k's register hold a value the code relies on.

    A memory operand's base and index are 64-bit addresses.  A GPR operand carries its
    width (at least 4: MOV r32 zero-extends, so a 4-byte slot restores a 32-bit value).  A
    vector operand carries its register width, except the scalar parts: an xm8…xm64
    register operand reads its low lane (VINSERTPS reads lane imm[7:6], so all of it unless
    that is 0), scalar arithmetic and scalar moves carry one lane, and a scalar conversion's
    result is the width it converts to.  Pseudo instructions: the class's widest."""
    o = inst.operands[k]
    if isinstance(o, Mem):
        return 8
    row = FORMS.get(inst.op)
    if row is None or k >= len(row.operands):
        return 8 if isinstance(o, RegOp) and o.reg.cls in ("gpr", "mask") else vbytes
    info = KINDS[row.operands[k].kind]
    if info.cls == "mask":
        return 8                                      # opmasks spill whole (KMOVQ)
    if info.cls != "vec":
        return max(4, info.reg_size or 8)
    return max(4, _vec_bytes(inst, row, info))


def _vec_bytes(inst: Inst, row: Row, info: KindInfo) -> int:
    if inst.op in _SCALAR_MOVES:
        return _SCALAR_MOVES[inst.op]
    assert info.reg_size is not None
    if info.mem_size and info.mem_size < info.reg_size:   # xm8 … xm64
        if row.mnemonic == "vinsertps" and _imm(inst) >> 6:
            return info.reg_size
        return info.mem_size
    if row.mnemonic in ("vcvtss2sd", "vcvtsd2ss"):
        return 8 if row.mnemonic == "vcvtss2sd" else 4
    if _SCALAR_OPS.match(row.mnemonic):
        return 4 if row.mnemonic.endswith("ss") else 8
    return info.reg_size


def _imm(inst: Inst) -> int:
    return next((int(o.value) for o in inst.operands if isinstance(o, Imm)), 0)


def slot_bytes(inst: Inst) -> int:
    """The bytes an instruction with one memory operand (a spill, a fill, or an instruction
    reading a slot in place of a reload) moves: the width of its form's memory operand."""
    row = FORMS[inst.op]
    return next((KINDS[spec.kind].mem_size or 0 for spec, o in zip(row.operands, inst.operands)
                 if isinstance(o, Mem)), 0)


# whole-register moves: a load of one of them from .rodata makes the register hold exactly
# the entry's bytes (no broadcast, no lane insert, no mask)
WHOLE_LOADS = frozenset({"vmovups", "vmovaps", "vmovupd", "vmovapd", "vmovdqu", "vmovdqa",
                         "vmovdqu8", "vmovdqu16", "vmovdqu32", "vmovdqu64"})


def constant_bytes(inst: Inst) -> int:
    """The bytes an unmasked whole-register load from .rodata (a RIP-relative operand, the
    entry's label in ``arg["rip"]``) reads into its one register, whose value they then are
    exactly; 0 for any other instruction."""
    if not isinstance(inst.arg, dict) or "rip" not in inst.arg or len(inst.operands) != 2:
        return 0
    row = FORMS.get(inst.op)
    d, m = inst.operands
    if row is None or row.mnemonic not in WHOLE_LOADS or not isinstance(d, RegOp) or \
            d.role is not Role.DEF or not isinstance(m, Mem) or m.base is not None or \
            m.index is not None:
        return 0
    return slot_bytes(inst)


def fold_fill(inst: Inst, k: int, mem: Mem, size: int) -> Inst | None:
    """inst reading operand k from mem (a size-byte slot) instead of a register, or None:
    only where the form takes memory at that operand (the r/m operand, and one memory operand
    an instruction, SDM Vol. 2 §2.1.5) reading at most the slot's bytes, and where the memory
    form reads what the register form reads (not VINSERTPS from lane imm[7:6] ≠ 0)."""
    row = FORMS.get(inst.op)
    if row is None or k >= len(row.operands) or not isinstance(inst.operands[k], RegOp):
        return None
    spec = row.operands[k]
    m = KINDS[spec.kind].mem_size
    if KINDS[spec.kind].cls not in ("gpr", "vec") or spec.slot != "rm" or \
            spec.access != "use" or not m or m > size or row.implicit_uses or \
            any(isinstance(o, Mem) for o in inst.operands):
        return None
    if row.mnemonic == "vinsertps" and _imm(inst) >> 6:
        return None
    ops = list(inst.operands)
    ops[k] = mem
    if type(inst) is Inst:              # (replace walks the fields per call)
        return Inst(inst.op, ops, inst.clobbers, inst.kind, inst.arg, inst.slot)
    return replace(inst, operands=ops)
