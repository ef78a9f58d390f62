"""Spill everywhere: the working code rewritten so that the variables a scan spilled live in
frame slots (step 4 of ``linear_scan``, a mixin of its allocator).

Every use of a spilled variable reads it through a fill into a fresh short-lived temporary
right before the instruction and every definition writes it through a spill right after, so
code inside loops reloads at each use; where the target's ``fold_fill`` allows, one such use
an instruction reads the slot itself as a memory operand instead (``slot`` on the
instruction names it: x86 ALU sources).  A constant (its one definition is an instruction
the target calls ``rematerializable``) is not stored at all: that instruction is repeated
(``Kind.REMAT``) before each use.  The temporaries cannot be spilled; the scan is repeated
until nothing more spills.

Each spilled value's slot is as wide as the value (the target's ``value_bytes``: the largest
width any of its operands reports, one width for the values a copy joins), so a 4-byte scalar
gets a 4-byte slot and an xmm value a 16-byte one even where the widest vector is a zmm.  Frame
slots are then given by a second linear scan over the slots' own live ranges (``frame``):
values of equal size whose slot ranges do not overlap share a slot (a heap of each size's
slots by the end of their occupant: n log n), and the sizes are laid out widest first, so
every slot is aligned to its size without padding."""

from __future__ import annotations


from kcc.ir.mir import Mem, Reg, RegOp, VReg
from kcc.record import replace
from kcc.regalloc.target import TargetRegInfo, hook
from kcc.regalloc.work import DEF, FILL, MOVE, OP, REMAT, SPILL, USE, WorkInst, rename

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class SpillRewriter:
    """Step 4 of the allocation (mixed into the allocator, whose ``_temp`` makes a fresh
    unspillable temporary and ``_vregs`` lists an instruction's registers)."""

    t: TargetRegInfo
    nospill: set[int]
    pre: dict[int, Any]
    index: dict[int, int]
    sizes: dict[int, int] | None
    remat_of: tuple[list[WorkInst], dict[int, WorkInst]] | None

    def rematerializable(self, work: list[WorkInst]) -> dict[int, WorkInst]:
        """The variables (by id) whose one definition the target may repeat at each use
        (``rematerializable``: a constant with no register inputs), with that definition."""
        ok = hook(self.t, "rematerializable")
        if ok is None:
            return {}
        if self.remat_of is not None and self.remat_of[0] is work:
            return self.remat_of[1]          # the scan's, asked again by spill
        found: dict[int, WorkInst | None] = {}
        for w in work:
            for r in self._vregs(w)[1]:
                found[id(r)] = None if id(r) in found else w
        out: dict[int, WorkInst] = {}
        for k, w in found.items():
            if w is None:
                continue
            verdict = w.__dict__.get("_remat")   # asked once per working instruction
            if verdict is None:
                verdict = w.__dict__["_remat"] = self._repeatable(w, ok)
            if verdict:
                out[k] = w
        self.remat_of = (work, out)
        return out

    @staticmethod
    def _repeatable(w: WorkInst, ok: Any) -> bool:
        """Whether ``w`` is a constant the target may repeat: an input OP without clobbers
        whose one register operand is a plain DEF, no memory operand naming a register, and
        the target's ``rematerializable`` says so."""
        if w.kind is not OP or w.orig is None or w.clobbers:
            return False
        regs = [o for o in w.operands if isinstance(o, RegOp)]
        mem = [o for o in w.operands if isinstance(o, Mem)]
        if len(regs) != 1 or regs[0].role is not DEF or regs[0].fixed is not None \
                or regs[0].tied is not None or any(m.base or m.index for m in mem):
            return False
        return bool(ok(w.orig))

    def _remat(self, src: WorkInst, dst: VReg, var: VReg) -> WorkInst:
        """A repeat of the constant definition ``src`` into ``dst``."""
        ops = [RegOp(dst, DEF) if isinstance(o, RegOp) else o for o in src.operands]
        assert src.orig is not None
        return WorkInst(src.op, ops, src.clobbers, REMAT, src.arg, self.index[id(src.orig)],
                        var=var)

    def spill(self, work: list[WorkInst], spilled: list[VReg]) -> list[WorkInst]:
        """``work`` with every variable in ``spilled`` kept in its frame slot, or, for a
        constant, re-created before each use."""
        sp = {id(v) for v in spilled}
        remat = {k: w for k, w in self.rematerializable(work).items() if k in sp}
        out: list[WorkInst] = []
        for w in work:
            us, ds = self._vregs(w)
            if not us and not ds:
                out.append(w)
                continue
            if w.kind is MOVE:
                d, s = w.operands[0].reg, w.operands[1].reg  # type: ignore[union-attr]
                if id(d) in sp and id(s) not in sp:
                    out.append(WorkInst("spill", [RegOp(s, USE)], kind=SPILL, var=d))
                    continue
                if id(s) in remat and id(d) not in sp:
                    out.append(self._remat(remat[id(s)], d, s))   # type: ignore[arg-type]
                    continue
                if id(s) in sp and id(d) not in sp:
                    out.append(WorkInst("fill", [RegOp(d, DEF)], kind=FILL, var=s))
                    continue
            used = {id(r): r for r in us if id(r) in sp}
            defd = {id(r): r for r in ds if id(r) in sp}
            if not used and not defd:
                out.append(w)
                continue
            temps: dict[int, VReg] = {}
            prev = out[-1] if out else None
            if prev is not None and prev.kind is SPILL and id(prev.var) in used:
                t = prev.operands[0].reg  # just stored from a temporary: no reload
                if isinstance(t, VReg) and id(t) in self.nospill and id(t) not in self.pre:
                    temps[id(prev.var)] = t
            forwarded = set(temps)
            # one use may read the slot itself (no reload, no temporary)
            fold = self._foldable(w, used, remat, forwarded)
            for k, r in {**used, **defd}.items():
                if k not in temps and (fold is None or fold[1] is not r):
                    temps[k] = self._temp(r.cls)
            for k, r in used.items():
                if k in remat:
                    out.append(self._remat(remat[k], temps[k], r))  # type: ignore[arg-type]
                elif k not in forwarded and k in temps:
                    out.append(WorkInst("fill", [RegOp(temps[k], DEF)], kind=FILL, var=r))
            new = rename(w, temps)
            if fold is not None:
                ops = list(new.operands)
                ops[fold[0]] = Mem()              # the slot, made at materialize
                new = replace(new, operands=ops, fold=fold)
            out.append(new)
            for k, r in defd.items():
                if k not in remat:        # a constant's own definition needs no store
                    out.append(WorkInst("spill", [RegOp(temps[k], USE)], kind=SPILL,
                                        var=r))
        return out

    def _foldable(self, w: WorkInst, used: dict[int, Reg], remat: dict[int, WorkInst],
                  forwarded: set[int]) -> tuple[int, VReg] | None:
        """The operand of ``w`` that may read its spilled value's slot instead of a reload
        (the target's ``fold_fill``): a plain USE of a value read by no other operand of
        ``w``, at most one an instruction."""
        fold_fill = hook(self.t, "fold_fill")
        if fold_fill is None or w.orig is None or w.kind is not OP or w.fold is not None:
            return None
        for j, o in enumerate(w.operands):
            if not isinstance(o, RegOp) or o.role is not USE or o.fixed is not None:
                continue
            r = o.reg
            k = id(r)
            if k not in used or k in remat or k in forwarded:
                continue
            if sum(1 for x in w.uses() if x is r) != 1 or any(x is r for x in w.defs()):
                continue
            assert isinstance(r, VReg)
            size = self.sizes.get(k) or self.t.spill_slot_size(r.cls)  # type: ignore
            if fold_fill(w.orig, j, 0, size) is not None:
                return j, r
        return None
