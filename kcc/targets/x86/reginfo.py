"""What the register allocator knows of x86-64 (kcc/regalloc/target.py's interface): the
register classes, callee-saved registers, the copy, spill and fill forms, the slots' widths
and folded fills (x86_slots), and the constants it may re-create instead of spilling."""

from __future__ import annotations

from kcc.ir.mir import Inst, Kind, Mem, PReg, RegOp, Role
from kcc.isel.x86.regs import CALLEE_SAVED, GPR_ORDER, KMASK, RSP, XMM, XMM_HI, vec_limits
from kcc.regalloc.target import TargetRegInfo
from kcc.targets.x86 import slots
from kcc.targets.x86.foldconst import commuted
from kcc.targets.x86.code import COPY_FORMS


class X86RegInfo(TargetRegInfo):
    """What the allocator knows of x86-64: classes, callee-saved registers, copy/spill forms.
    `vbytes` is the widest vector the code uses (32 for ymm, 64 for zmm on x86-64-v4), and
    with 64 (AVX-512) the vector class has xmm16-31 too, which VEX-only forms cannot name."""

    def __init__(self, locals_bytes: int, vbytes: int = 32, high_first: bool = False,
                 constants: dict[str, bytes] | None = None):
        # high_first (x86-64-v4 only) hands out xmm16-31 before xmm0-15, so that every form
        # with an EVEX twin is encoded as EVEX: the tests run code that way to check the twins
        hi = list(XMM_HI) if vbytes == 64 else []
        vec = hi + list(XMM) if high_first else list(XMM) + hi
        self.classes = {"gpr": list(GPR_ORDER), "vec": vec}
        if vbytes == 64:
            self.classes["mask"] = list(KMASK)     # AVX-512 opmasks (k0 means "no mask")
        self._limits: dict[str, tuple[frozenset[PReg] | None, ...]] = {}
        self.callee_saved = set(CALLEE_SAVED)
        self.locals_bytes = locals_bytes
        self.v = "z" if vbytes == 64 else "y"
        self.vbytes = vbytes
        self._bytes: dict[tuple, int] = {}
        self.constants = constants or {}       # .rodata label -> bytes (for ``commute``)

    def spill_slot_size(self, cls: str) -> int:
        """The widest slot: 8 bytes for a GPR or an opmask, a whole ymm (or zmm) for a
        vector."""
        return 8 if cls in ("gpr", "mask") else self.vbytes

    def operand_regs(self, inst: Inst, k: int) -> frozenset[PReg] | None:
        """xmm0-15 for a vector operand of a VEX-only form when xmm16-31 are allocatable."""
        if self.vbytes != 64:
            return None
        lim = self._limits.get(inst.op)
        if lim is None:
            lim = self._limits[inst.op] = vec_limits(inst.op)
        return lim[k] if k < len(lim) else None

    def value_bytes(self, inst: Inst, k: int) -> int:
        """The bytes of operand k's register that carry a value (x86_slots.value_bytes,
        memoized by form, operand and operand type: the allocator asks for every operand)."""
        o = inst.operands[k]
        key = (inst.op, k, type(o), o.reg.cls if isinstance(o, RegOp) else None,
               inst.operands[-1] if inst.op.startswith("vinsertps") else None)
        n = self._bytes.get(key)
        if n is None:
            n = self._bytes[key] = slots.value_bytes(inst, k, self.vbytes)
        return n

    def slot_bytes(self, inst: Inst) -> int:
        """The bytes a spill, fill or folded instruction moves from or to its slot."""
        return slots.slot_bytes(inst)

    def fold_fill(self, inst: Inst, k: int, slot_offset: int, size: int) -> Inst | None:
        """inst reading operand k from its slot instead of a reload (x86_slots.fold_fill)."""
        return slots.fold_fill(inst, k, self.slot_mem(slot_offset), size)

    def slot_mem(self, slot_offset: int) -> Mem:
        """The memory operand of a frame slot: rsp-relative, past the locals."""
        return Mem(RSP, None, 1, self.locals_bytes + slot_offset)

    def is_copy(self, inst: Inst) -> bool:
        """A register-to-register copy of the selector's (the allocator may coalesce it)."""
        return inst.op in COPY_FORMS and len(inst.operands) == 2 and all(
            isinstance(o, RegOp) for o in inst.operands)

    def rematerializable(self, inst: Inst) -> bool:
        """A constant the allocator may re-create at a use instead of spilling it: an
        immediate move, a zeroing, or a load from the read-only constant pool (none of them
        writes the flags)."""
        if inst.op in ("vzero", "mov_r32_imm32", "mov_r64_imm64"):
            return True
        return isinstance(inst.arg, dict) and "rip" in inst.arg and inst.op.startswith(
            ("vmovups_", "vmovaps_", "vmovdqu_", "vmovdqa_", "vmovss_x_m32", "vmovsd_x_m64",
             "vbroadcastss_", "vbroadcastsd_", "vpbroadcast"))

    def constant_bytes(self, inst: Inst) -> int:
        """The bytes of a whole-register .rodata load (x86_slots.constant_bytes): the checker
        lets kcc/targets/x86/foldconst.py's readers read them in place."""
        return slots.constant_bytes(inst)

    def commute(self, inst: Inst, load: Inst) -> Inst | None:
        """inst with its VEX.vvvv source, the value ``load`` defines, swapped with its r/m
        source where the bits stay the same (foldconst's rules: integer and bitwise lane
        operations, float adds and multiplies of a constant without NaN lanes, compares
        with their predicate mirrored)."""
        o = inst.operands[1] if len(inst.operands) > 1 else None
        if not (isinstance(o, RegOp) and o.reg is load.operands[0].reg):
            return None
        return commuted(inst, 1, load, self.constants)

    def make_move(self, cls: str, dst: PReg, src: PReg) -> Inst:
        form = {"gpr": "mov_r64_rm64", "mask": "kmovq_k_km64"}.get(
            cls, f"vmovaps_{self.v}_{self.v}m")
        return Inst(form, [RegOp(dst, Role.DEF), RegOp(src, Role.USE)], kind=Kind.MOVE)

    def make_spill(self, cls: str, src: PReg, slot_offset: int, size: int) -> Inst:
        """A store of the value's own width (x86_slots.SPILL_FORMS)."""
        return Inst(slots.SPILL_FORMS[cls, size], [self.slot_mem(slot_offset),
                                                   RegOp(src, Role.USE)],
                    kind=Kind.SPILL, slot=slot_offset)

    def make_fill(self, cls: str, dst: PReg, slot_offset: int, size: int) -> Inst:
        """A load of the slot's width (x86_slots.FILL_FORMS)."""
        return Inst(slots.FILL_FORMS[cls, size], [RegOp(dst, Role.DEF),
                                                  self.slot_mem(slot_offset)],
                    kind=Kind.FILL, slot=slot_offset)
