"""The allocator's working copy of a function: the working instruction (an ``Inst`` that
remembers the input instruction it stands for) and the renames of its registers, shared by the
scan (``linear_scan``), the spill rewriting (``spill``) and the output (``materialize``)."""

from __future__ import annotations


from kcc.ir.mir import Inst, Kind, Mem, Operand, Reg, RegOp, Role, VReg
from kcc.record import record

# members bound once: a module global is read faster than a class attribute (an Enum's went
# through EnumType's __getattr__ hook before kcc.symbols), per operand in these loops
FILL, MOVE, OP, REMAT, SPILL = Kind.FILL, Kind.MOVE, Kind.OP, Kind.REMAT, Kind.SPILL
DEF, USE = Role.DEF, Role.USE
WRITES = frozenset({Role.DEF, Role.DEF | Role.USE})
READS = frozenset({Role.USE, Role.DEF | Role.USE})


@record(eq=False)
class WorkInst(Inst):
    """A working instruction: ``orig`` is the input instruction it stands for, ``entry`` marks
    the pseudo instruction defining the parameters, ``var`` is the spilled variable whose slot
    a SPILL/FILL means, ``fold`` the operand that reads a spilled variable's slot directly."""

    orig: Inst | None = None
    entry: bool = False
    var: VReg | None = None
    fold: tuple[int, VReg] | None = None   # (operand, spilled variable) read from its slot


def work_move(dst: Reg, src: Reg) -> WorkInst:
    """A copy of ``src`` into ``dst``."""
    return WorkInst("move", [RegOp(dst, DEF), RegOp(src, USE)], kind=MOVE)


def reg_op(o: RegOp, reg: Reg | None) -> RegOp:
    """``o`` naming ``reg`` (``dataclasses.replace`` without its per-call field walk)."""
    return o if reg is o.reg else RegOp(reg, o.role, o.fixed, o.tied)  # type: ignore[arg-type]


def mem_op(o: Mem, base: Reg | None, index: Reg | None) -> Mem:
    """``o`` with registers ``base`` and ``index``."""
    return o if base is o.base and index is o.index else Mem(base, index, o.scale, o.disp)


def rename(w: WorkInst, m: dict[int, VReg]) -> WorkInst:
    """``w`` with every register in ``m`` (keyed by ``id``) replaced."""
    ops: list[Operand] = []
    for o in w.operands:
        if isinstance(o, RegOp):
            o = reg_op(o, m.get(id(o.reg), o.reg))
        elif isinstance(o, Mem):
            o = mem_op(o, m.get(id(o.base), o.base) if o.base is not None else None,
                       m.get(id(o.index), o.index) if o.index is not None else None)
        ops.append(o)
    return WorkInst(w.op, ops, w.clobbers, w.kind, w.arg, w.slot, w.orig, w.entry, w.var,
                    w.fold)
