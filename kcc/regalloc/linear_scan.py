"""Linear-scan register allocation over the register classes a target describes.

The allocator works on a private copy of the function in four steps:

1. *Constraints become copies.*  A tied DEF gets a fresh temporary that receives a copy of the
   tied USE before the instruction and is copied to the real destination after it; an operand
   fixed to a physical register gets a temporary pre-coloured with that register plus a copy in
   (USE) and/or out (DEF).  Incoming parameters are DEFs fixed to their ABI registers at a
   pseudo entry instruction.  Copies carry a hint so that, when the source dies, source and
   destination get the same register and the copy disappears: this is how two-address operands
   are coalesced when the tied use dies and copied otherwise.
2. *Intervals.*  Liveness by two backward passes over the structured control-flow graph
   (linear in the code, see ``liveness``); each variable's interval is the hull of its live
   positions, so values live into or across a loop cover the whole loop.  Pre-coloured
   temporaries and instruction clobbers reserve their physical register over their range.
   Before that, the selector's own copies (a target's ``is_copy``) are coalesced where source
   and destination are never live at once (``coalesce``): loop-carried values then need no
   copies in and out of the loop body.
3. *Scan.*  Intervals in order of start get a free register of their class that no
   reservation blocks over the whole interval (copy partners' registers first, then the
   target's preference order), among the registers every operand of the variable allows (a
   target's ``operand_regs``: an encoding that cannot name some registers).  A narrowed
   variable that finds none of its registers free first tries to move the holder of one to a
   register that was free over the holder's whole interval.  When none is free, one value is
   spilled among the current interval and the holders of one register: first one not used
   again in the innermost loop around the current position, then a constant, then the one
   used furthest away.  (The scan works on register numbers and bit sets of register units;
   the active intervals are a heap by end: n log n in the intervals.)
4. *Spill everywhere* (``spill``): a spilled variable lives in a frame slot, filled before
   each use and stored after each definition (a constant is re-created instead), and the
   scan is repeated until nothing more spills; ``materialize`` then makes the allocated
   function with the target's copies, spills and fills.

One scan is the object ``kcc.regalloc.scan.Scan``; the working instruction and its renames
are in ``work``.
"""

from __future__ import annotations

from _bisect import bisect_right  # bisect's own, without bisect.py (start-up)
from _operator import attrgetter  # operator.attrgetter itself (no operator module at start-up)

from kcc.ir.mir import (INSERTED_KINDS, Inst, Mem, MFunction, MirError, PReg, Reg, RegOp, VReg,
                        format_inst, structure, successors, verify_mir)
from kcc.regalloc.coalesce import coalesce_copies
from kcc.regalloc.frame import value_sizes
from kcc.regalloc.liveness import Interval, bits, number_vars, vreg_lists
from kcc.regalloc.materialize import Materializer
from kcc.regalloc.scan import Scan
from kcc.regalloc.spill import SpillRewriter
from kcc.regalloc.target import AllocationError, TargetRegInfo, hook, reg_units
from kcc.regalloc.work import (DEF, FILL, MOVE, SPILL, USE, WorkInst, mem_op, reg_op, rename,
                               work_move)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_start = attrgetter("start")


class _Allocator(SpillRewriter, Materializer):
    def __init__(self, fn: MFunction, target: TargetRegInfo) -> None:
        try:
            verify_mir(fn)
        except MirError as e:
            raise AllocationError(f"{fn.name}: {e}") from None
        for inst in fn.insts:
            if inst.kind in INSERTED_KINDS:
                raise AllocationError(f"{fn.name}: {inst.kind.value} instructions are reserved "
                                      f"for the allocator: {format_inst(inst)}")
        self.fn, self.t = fn, target
        self._flow: tuple | None = None     # `flow`'s list and its answer
        self.units: dict[PReg, tuple[str, ...]] = {}
        self.alloc_units: set[str] = set()
        for cls, regs in target.classes.items():
            for p in regs:
                if p.cls != cls:
                    raise AllocationError(f"register {p!r} listed in class {cls}")
                self.alloc_units.update(self._units(p))
        self.pre: dict[int, PReg] = {}      # id(vreg) -> pre-coloured register
        self.nospill: set[int] = set()      # ids of vregs that must get a register
        self.next_id = fn.next_vreg
        for inst in fn.insts:
            us, ds = vreg_lists(inst)
            for r in (*us, *ds):
                if r.id >= self.next_id:
                    self.next_id = r.id + 1
                if r.cls not in target.classes:
                    raise AllocationError(f"{fn.name}: no registers of class {r.cls!r} "
                                          f"for {r!r}")
        self.raw: dict[PReg, VReg] = {}
        self.allocatable: dict[int, bool] = {}   # id(PReg) -> whether it has allocatable units
        self.regno: dict[PReg, int] = {}
        self.regtab: list[PReg] = []
        self.umask: list[int] = []
        self.ubits: list[list[int]] = []     # the unit bits of each umask entry, as a list
        self.unit_bit: dict[str, int] = {}
        self.orders: dict[int, tuple[list[PReg], list[int], set[int]]] = {}
        self.remat_of: tuple[list[WorkInst], dict[int, WorkInst]] | None = None
        self.index = {id(inst): k for k, inst in enumerate(fn.insts)}
        self.sizes: dict[int, int] | None = None   # slot size by id(var), once spilling starts

    # -- helpers ---------------------------------------------------------------------------
    def _units(self, p: PReg) -> tuple[str, ...]:
        u = self.units.get(p)
        if u is None:
            u = self.units[p] = reg_units(self.t, p)
        return u

    def _temp(self, cls: str, color: PReg | None = None) -> VReg:
        v = VReg(self.next_id, cls)
        self.next_id += 1
        self.nospill.add(id(v))
        if color is not None:
            self.pre[id(v)] = color
        return v

    def _map_raw(self, r: Reg | None) -> Reg | None:
        """An allocatable physical register named directly becomes a pre-coloured variable."""
        if not isinstance(r, PReg):
            return r
        ok = self.allocatable.get(id(r))         # (by identity: fn's registers stay alive)
        if ok is None:
            ok = self.allocatable[id(r)] = bool(set(self._units(r)) & self.alloc_units)
        if not ok:
            return r
        v = self.raw.get(r)
        if v is None:
            v = self.raw[r] = self._temp(r.cls, r)
        return v

    def _where(self, w: Inst) -> str:
        src = w.orig if isinstance(w, WorkInst) and w.orig is not None else w
        return f"{self.fn.name}: at '{format_inst(src)}'"

    # -- step 1 ----------------------------------------------------------------------------
    def prepare(self) -> list[WorkInst]:
        """The working copy with parameters, raw registers, ties and fixed operands lowered."""
        entry = WorkInst("entry", [RegOp(v, DEF, fixed=p) for v, p in self.fn.params],
                         entry=True)
        work: list[WorkInst] = []
        map_raw = self._map_raw
        for inst in [entry, *self.fn.insts]:
            w = inst if isinstance(inst, WorkInst) else WorkInst(
                inst.op, list(inst.operands), inst.clobbers, inst.kind, inst.arg, inst.slot,
                orig=inst)
            ops = []
            for o in w.operands:
                # only a physical register can be mapped (_map_raw keeps anything else)
                if isinstance(o, RegOp):
                    if isinstance(o.reg, PReg):
                        o = reg_op(o, map_raw(o.reg))
                elif isinstance(o, Mem):
                    if isinstance(o.base, PReg) or isinstance(o.index, PReg):
                        o = mem_op(o, map_raw(o.base), map_raw(o.index))
                ops.append(o)
            w.operands = ops
            work.extend(self._lower(w))
        return work

    def _lower(self, w: WorkInst) -> list[WorkInst]:
        for o in w.operands:
            if isinstance(o, RegOp) and (o.tied is not None or o.fixed is not None):
                break
        else:
            return [w]                        # nothing tied or fixed: nothing to lower
        pre: list[WorkInst] = []
        post: list[WorkInst] = []
        ops = w.operands
        for k, o in enumerate(ops):
            if not isinstance(o, RegOp) or o.tied is None:
                continue
            u = ops[o.tied]
            assert isinstance(u, RegOp)
            if o.fixed and u.fixed and o.fixed != u.fixed:
                raise AllocationError(f"{self._where(w)}: tied operands fixed to "
                                      f"{o.fixed!r} and {u.fixed!r}")
            fixed = o.fixed or u.fixed
            d, a = o.reg, u.reg
            if a is d:
                ops[k] = RegOp(d, DEF, fixed=fixed)
                ops[o.tied] = RegOp(a, USE, fixed=fixed)
                continue
            if not isinstance(d, VReg) or not isinstance(a, VReg):
                raise AllocationError(f"{self._where(w)}: tied operands name different "
                                      f"non-allocatable registers")
            t = self._temp(d.cls, fixed)
            pre.append(work_move(t, a))
            post.append(work_move(d, t))
            for j, x in enumerate(ops):
                if isinstance(x, RegOp) and x.reg is a and x.role is USE:
                    ops[j] = RegOp(t, USE, fixed=x.fixed if j != o.tied else None)
            ops[k] = RegOp(t, DEF)
        temps: dict[tuple[int, PReg], VReg] = {}
        moved_in: set[tuple[int, PReg]] = set()
        moved_out: set[tuple[int, PReg]] = set()
        for k, o in enumerate(ops):
            if not isinstance(o, RegOp) or o.fixed is None:
                continue
            p = o.fixed
            if isinstance(o.reg, PReg) or self.pre.get(id(o.reg)) == p:
                if isinstance(o.reg, PReg) and o.reg != p:
                    raise AllocationError(f"{self._where(w)}: {o.reg!r} cannot be fixed to "
                                          f"{p!r}")
                ops[k] = RegOp(o.reg, o.role)
                continue
            key = (id(o.reg), p)
            t = temps.get(key)
            if t is None:
                t = temps[key] = self._temp(o.reg.cls, p)
            if o.is_use and key not in moved_in:
                moved_in.add(key)
                pre.append(work_move(t, o.reg))
            if o.is_def and key not in moved_out:
                moved_out.add(key)
                post.append(work_move(o.reg, t))
            ops[k] = RegOp(t, o.role)
        return [*pre, w, *post]

    # -- the scan's tables -----------------------------------------------------------------
    def _vregs(self, w: WorkInst) -> tuple[list[Any], list[Any]]:
        """``vreg_lists(w)``, kept on the working instruction (its operands never change after
        ``prepare``: renaming, spilling and filling make new instructions)."""
        c = w.__dict__.get("_vregs")
        if c is None:
            c = w.__dict__["_vregs"] = vreg_lists(w)
        return c

    def flow(self, work: list[WorkInst]) -> tuple[tuple, list[tuple[int, int, int]],
                                                  dict[str, int], list[list[int]]]:
        """(number_vars(work), its loops, labels and successors) of a working list, kept for
        the list last asked about: where coalescing renames nothing, the first scan reads the
        very list coalescing numbered (a list is never changed once prepared: renaming,
        spilling and filling make new ones)."""
        got = self._flow
        if got is None or got[0] is not work:
            numbering = number_vars(work, self._vregs)
            loops, labels = structure(work)
            got = self._flow = (work, numbering, loops, labels, successors(work, labels))
        return got[1], got[2], got[3], got[4]

    def _regno(self, p: PReg) -> int:
        """The number of physical register ``p`` in the allocator's register table, whose
        ``umask`` entry is the bit set of its register units."""
        r = self.regno.get(p)
        if r is None:
            r = self.regno[p] = len(self.regtab)
            self.regtab.append(p)
            m = 0
            for u in self._units(p):
                b = self.unit_bit.get(u)
                if b is None:
                    b = self.unit_bit[u] = len(self.unit_bit)
                m |= 1 << b
            self.umask.append(m)
            self.ubits.append(bits(m))
        return r

    def _order(self, regs: list[PReg]) -> tuple[list[int], set[int]]:
        """A register list (a class, in preference order) as register numbers and their set;
        memoized by the list's identity (the lists live as long as the target)."""
        got = self.orders.get(id(regs))
        if got is None or got[0] is not regs:
            nums = [self._regno(p) for p in regs]
            got = self.orders[id(regs)] = (regs, nums, set(nums))
        return got[1], got[2]

    # -- steps 2 and 3 ---------------------------------------------------------------------
    def scan(self, work: list[WorkInst]) -> tuple[dict[int, PReg], list[VReg]]:
        """One linear scan: the register of every variable (by id), or the vregs to spill
        (kcc.regalloc.scan)."""
        return Scan(self, work).run()

    def _allowed(self, work: list[WorkInst], index: dict[int, int], var: list[VReg]
                 ) -> dict[int, list[PReg]]:
        """The registers of the variables (by number) that some operand narrows to part of
        their class (the target's ``operand_regs``), in the class's preference order."""
        regs_of = hook(self.t, "operand_regs")     # (operand_regs(t, w, k) is regs_of(w, k))
        if regs_of is None:
            return {}
        sets: dict[int, frozenset[PReg]] = {}
        get = sets.get
        for w in work:
            if w.entry or w.kind in (MOVE, SPILL, FILL):
                continue            # the target's own copies accept its whole class
            narrowed = w.__dict__.get("_narrowed")      # asked once per instruction
            if narrowed is None:
                narrowed = w.__dict__["_narrowed"] = [
                    (o.reg, ok) for k, o in enumerate(w.operands)
                    if isinstance(o, RegOp) and isinstance(o.reg, VReg)
                    and (ok := regs_of(w, k)) is not None]
            for r, ok in narrowed:
                n = index[id(r)]
                have = get(n)
                if have is None:
                    sets[n] = ok
                elif have is not ok:      # (the target hands out the same sets again)
                    sets[n] = have & ok
        out: dict[int, list[PReg]] = {}
        memo: dict[tuple[str, frozenset[PReg]], list[PReg]] = {}
        for n, ok in sets.items():
            v = var[n]
            key = (v.cls, ok)
            regs = memo.get(key)
            if regs is None:
                regs = memo[key] = [p for p in self.t.classes[v.cls] if p in ok]
            if not regs:
                raise AllocationError(f"{self.fn.name}: no {v.cls} register allowed by every "
                                      f"operand of {v!r}")
            out[n] = regs
        return out

    def _reservations(self, work: list[WorkInst], var: list[VReg], ivs: list[Interval | None]
                      ) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """Per register unit, the disjoint sorted ranges blocked by pre-coloured variables and
        clobbers; raises when two pre-coloured variables need one register at once."""
        ranges: dict[str, list[tuple[int, int, int]]] = {}
        for k, v in enumerate(var):
            p = self.pre.get(id(v))
            iv = ivs[k]
            if p is not None and iv is not None:
                for u in self._units(p):
                    ranges.setdefault(u, []).append((iv.start, iv.end, k))
        for i, w in enumerate(work):
            for c in w.clobbers:
                for u in self._units(c):
                    ranges.setdefault(u, []).append((2 * i + 1, 2 * i + 1, -1))
        starts: dict[str, list[int]] = {}
        ends: dict[str, list[int]] = {}
        for u, rs in ranges.items():
            rs.sort()
            clobbered = [s for s, _, k in rs if k < 0]
            for s, e, k in rs:
                j = bisect_right(clobbered, e) - 1
                if k >= 0 and j >= 0 and clobbered[j] > s:
                    raise AllocationError(f"{self._where(work[clobbered[j] // 2])}: a value "
                                          f"fixed to register unit {u} is live across this "
                                          f"instruction, which clobbers it")
            owner, last = -1, -1
            s_list: list[int] = []
            e_list: list[int] = []
            for s, e, k in rs:
                if k >= 0:
                    if owner >= 0 and owner != k and s <= last:
                        raise AllocationError(f"{self._where(work[s // 2])}: two values need "
                                              f"register unit {u} at once (conflicting fixed "
                                              f"registers)")
                    if e >= last or owner < 0:
                        owner, last = k, max(e, last)
                if s_list and s <= e_list[-1] + 1:
                    e_list[-1] = max(e_list[-1], e)
                else:
                    s_list.append(s)
                    e_list.append(e)
            starts[u], ends[u] = s_list, e_list
        return starts, ends

    def run(self) -> MFunction:
        work = self.prepare()
        is_copy = hook(self.t, "is_copy")
        if is_copy is not None:
            numbering, loops, _, succ = self.flow(work)
            m = coalesce_copies(work, is_copy, set(self.pre), self.nospill, loops, succ,
                                self._vregs, numbering)
            if m:
                vregs = self._vregs         # (m names VRegs only: their lists suffice)
                renamed = []
                for w in work:
                    us, ds = vregs(w)
                    for r in us:
                        if id(r) in m:
                            w = rename(w, m)
                            break
                    else:
                        for r in ds:
                            if id(r) in m:
                                w = rename(w, m)
                                break
                    renamed.append(w)
                work = renamed
                # the allocator's own copies that became self-copies go; the selector's stay
                # (the checker pairs them with the input) and the target drops them
                work = [w for w in work if not (w.kind is MOVE
                                                and w.defs()[0] is w.uses()[0])]
        while True:
            assign, spilled = self.scan(work)
            if not spilled:
                return self.materialize(work, assign)
            if self.sizes is None:
                # before the first spill: later rounds only spill variables of this list
                self.sizes = value_sizes(work, self.t)
            work = self.spill(work, spilled)


def allocate(fn: MFunction, target: TargetRegInfo) -> MFunction:
    """Assign physical registers to every virtual register of ``fn``.

    Returns a new function (``fn`` is not changed) whose operands name only physical
    registers, with copies (``Kind.MOVE``), spills and fills (``Kind.SPILL``/``Kind.FILL``,
    ``slot`` = frame offset) inserted, ``frame_size`` set (16-byte aligned; each slot as wide
    as its value and aligned to its size) and ``callee_saved_used`` listing the callee-saved
    registers it writes.
    Deterministic: the same input gives the same output.  Raises ``AllocationError`` when
    constraints conflict or an instruction needs more registers than its class has.
    """
    return _Allocator(fn, target).run()
