"""The allocated function made from the working code and the scan's registers (a mixin of the
allocator, ``linear_scan``): the copies, spills and fills made by the target's
``make_move``/``make_spill``/``make_fill`` (the last two at the slot's width), checked and
marked with their kind, the target's folded fills, the frame slots (``frame``) and the
callee-saved registers written."""

from __future__ import annotations


from kcc.ir.mir import Inst, Kind, Mem, MFunction, PReg, Reg, RegOp, VReg, format_inst
from kcc.record import replace
from kcc.regalloc.frame import assign_slots
from kcc.regalloc.target import AllocationError, TargetRegInfo
from kcc.regalloc.work import FILL, MOVE, READS, REMAT, SPILL, WRITES, WorkInst, mem_op, reg_op


class Materializer:
    """The allocator's output step (mixed into the allocator, whose ``_units`` gives a
    register's units)."""

    fn: MFunction
    t: TargetRegInfo
    sizes: dict[int, int] | None

    def _stamp(self, inst: Inst, kind: Kind, dst: PReg | None, src: PReg | None,
               slot: int | None) -> Inst:
        """The target's copy/spill/fill marked with its kind, after checking its shape."""
        d = s = None
        for o in inst.operands:             # the first DEF and the first USE register
            if isinstance(o, RegOp):
                if d is None and o.role in WRITES:
                    d = o.reg
                if s is None and o.role in READS:
                    s = o.reg
        if (dst is not None and d != dst) or (src is not None and s != src):
            raise AllocationError(f"target {kind.value} '{format_inst(inst)}' must have "
                                  f"DEF {dst!r} / USE {src!r} as its first register operands")
        if type(inst) is Inst:              # (dataclasses.replace walks the fields per call)
            return Inst(inst.op, inst.operands, inst.clobbers, kind, inst.arg, slot)
        return replace(inst, kind=kind, slot=slot)

    def _folded(self, inst: Inst, j: int, off: int, size: int) -> Inst:
        """The target's ``fold_fill`` of operand j, after checking that it changed only that
        operand into a memory operand; ``slot`` names the slot it reads."""
        f = self.t.fold_fill(inst, j, off, size)  # type: ignore[attr-defined]
        same = f is not None and f.op == inst.op and len(f.operands) == len(inst.operands) \
            and isinstance(f.operands[j], Mem) and all(
                a == b for k, (a, b) in enumerate(zip(f.operands, inst.operands)) if k != j)
        if not same:
            raise AllocationError(f"target fold of operand {j} into '{format_inst(inst)}' "
                                  f"must only make that operand a memory operand")
        return replace(f, slot=off)  # type: ignore[arg-type]

    def materialize(self, work: list[WorkInst], assign: dict[int, PReg]) -> MFunction:
        """The allocated function."""
        if self.sizes is None:
            self.sizes = {}
        offset, frame = assign_slots(work, self.sizes, self.t)

        def reg(r: Reg | None) -> Reg | None:
            return assign[id(r)] if isinstance(r, VReg) else r

        insts: list[Inst] = []
        t = self.t
        written_regs: dict[tuple[str, str], PReg] = {}   # every PReg written, by (name, cls)
        for w in work:
            if w.entry:
                continue
            kind = w.kind
            if kind is MOVE:
                d, s = reg(w.operands[0].reg), reg(w.operands[1].reg)  # type: ignore
                assert isinstance(d, PReg) and isinstance(s, PReg)
                if d.name == s.name and d.cls == s.cls:      # (PReg's == is a Python call)
                    continue
                inst = self._stamp(t.make_move(d.cls, d, s), MOVE, d, s, None)
            elif kind is REMAT:
                inst = Inst(w.op, [reg_op(o, reg(o.reg)) if isinstance(o, RegOp)
                                   else o for o in w.operands], w.clobbers, REMAT,
                            w.arg, w.slot)
            elif kind is SPILL or kind is FILL:
                assert w.var is not None
                r = reg(w.operands[0].reg)  # type: ignore[union-attr]
                assert isinstance(r, PReg)
                off, size = offset[id(w.var)]
                if kind is SPILL:
                    inst = self._stamp(t.make_spill(r.cls, r, off, size), SPILL,
                                       None, r, off)
                else:
                    inst = self._stamp(t.make_fill(r.cls, r, off, size), FILL,
                                       r, None, off)
            else:
                orig = w.orig
                assert orig is not None
                ops = []
                fold = w.fold
                for j, (o, wo) in enumerate(zip(orig.operands, w.operands)):
                    if fold is not None and j == fold[0]:
                        pass                      # the target replaces it below
                    elif isinstance(o, RegOp):
                        assert isinstance(wo, RegOp)
                        o = reg_op(o, reg(wo.reg))
                    elif isinstance(o, Mem):
                        assert isinstance(wo, Mem)
                        o = mem_op(o, reg(wo.base), reg(wo.index))
                    ops.append(o)
                inst = Inst(orig.op, ops, orig.clobbers, orig.kind, orig.arg, orig.slot) \
                    if type(orig) is Inst else replace(orig, operands=ops)
                if fold is not None:
                    j, v = fold
                    off, size = offset[id(v)]
                    inst = self._folded(inst, j, off, size)
            insts.append(inst)
            for o in inst.operands:
                if isinstance(o, RegOp) and o.role in WRITES:
                    r = o.reg
                    if isinstance(r, PReg):
                        written_regs[r.name, r.cls] = r
            for r in inst.clobbers:
                if isinstance(r, PReg):
                    written_regs[r.name, r.cls] = r
        written: set[str] = set()
        for r in written_regs.values():
            written.update(self._units(r))
        order = [p for regs in self.t.classes.values() for p in regs]
        saved = sorted((p for p in self.t.callee_saved if set(self._units(p)) & written),
                       key=lambda p: (order.index(p) if p in order else len(order), p.name))
        return MFunction(self.fn.name, insts, [(p, p) for _, p in self.fn.params], frame,
                         tuple(saved), self.fn.next_vreg)
