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
   used furthest away.
4. *Spill everywhere.*  A spilled variable lives in a frame slot: every use reads it through a
   fill into a fresh short-lived temporary right before the instruction and every definition
   writes it through a spill right after, so code inside loops reloads at each use.  A
   constant (its one definition is an instruction the target calls ``rematerializable``) is
   not stored at all: that instruction is repeated (``Kind.REMAT``) before each use.  The
   temporaries cannot be spilled; the scan is repeated until nothing more spills.

Frame slots are then given by a second linear scan over the slots' own live ranges (slots of
equal size whose values do not overlap share an offset), and the copies, spills and fills are
made by the target's ``make_move``/``make_spill``/``make_fill``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, replace

from kcc.ir.mir import (INSERTED_KINDS, Inst, Kind, Mem, MFunction, MirError, PReg, Reg, RegOp,
                        Role, VReg, format_inst, structure, successors, verify_mir)
from kcc.regalloc.coalesce import coalesce_copies
from kcc.regalloc.liveness import Interval, intervals, number_vars
from kcc.regalloc.target import AllocationError, TargetRegInfo, operand_regs, reg_units


@dataclass(eq=False)
class _W(Inst):
    """A working instruction: ``orig`` is the input instruction it stands for, ``entry`` marks
    the pseudo instruction defining the parameters, ``var`` is the spilled variable whose slot
    a SPILL/FILL means."""

    orig: Inst | None = None
    entry: bool = False
    var: VReg | None = None


def _move(dst: Reg, src: Reg) -> _W:
    return _W("move", [RegOp(dst, Role.DEF), RegOp(src, Role.USE)], kind=Kind.MOVE)


def _rename(w: _W, m: dict[int, VReg]) -> _W:
    """``w`` with every register in ``m`` (keyed by ``id``) replaced."""
    def r(x: Reg | None) -> Reg | None:
        return m.get(id(x), x) if x is not None else None
    ops = []
    for o in w.operands:
        if isinstance(o, RegOp):
            o = replace(o, reg=r(o.reg))
        elif isinstance(o, Mem):
            o = replace(o, base=r(o.base), index=r(o.index))
        ops.append(o)
    return replace(w, operands=ops)


class _Allocator:
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
            for r in [*inst.uses(), *inst.defs()]:
                if isinstance(r, VReg):
                    self.next_id = max(self.next_id, r.id + 1)
                    if r.cls not in target.classes:
                        raise AllocationError(f"{fn.name}: no registers of class {r.cls!r} "
                                              f"for {r!r}")
        self.raw: dict[PReg, VReg] = {}
        self.index = {id(inst): k for k, inst in enumerate(fn.insts)}

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
        if not isinstance(r, PReg) or not set(self._units(r)) & self.alloc_units:
            return r
        v = self.raw.get(r)
        if v is None:
            v = self.raw[r] = self._temp(r.cls, r)
        return v

    def _where(self, w: Inst) -> str:
        src = w.orig if isinstance(w, _W) and w.orig is not None else w
        return f"{self.fn.name}: at '{format_inst(src)}'"

    # -- step 1 ----------------------------------------------------------------------------
    def prepare(self) -> list[_W]:
        """The working copy with parameters, raw registers, ties and fixed operands lowered."""
        entry = _W("entry", [RegOp(v, Role.DEF, fixed=p) for v, p in self.fn.params],
                   entry=True)
        work: list[_W] = []
        for inst in [entry, *self.fn.insts]:
            w = inst if isinstance(inst, _W) else _W(
                inst.op, list(inst.operands), inst.clobbers, inst.kind, inst.arg, inst.slot,
                orig=inst)
            w.operands = [
                replace(o, reg=self._map_raw(o.reg)) if isinstance(o, RegOp) else
                replace(o, base=self._map_raw(o.base), index=self._map_raw(o.index))
                if isinstance(o, Mem) else o for o in w.operands]
            work.extend(self._lower(w))
        return work

    def _lower(self, w: _W) -> list[_W]:
        pre: list[_W] = []
        post: list[_W] = []
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
                ops[k] = RegOp(d, Role.DEF, fixed=fixed)
                ops[o.tied] = RegOp(a, Role.USE, fixed=fixed)
                continue
            if not isinstance(d, VReg) or not isinstance(a, VReg):
                raise AllocationError(f"{self._where(w)}: tied operands name different "
                                      f"non-allocatable registers")
            t = self._temp(d.cls, fixed)
            pre.append(_move(t, a))
            post.append(_move(d, t))
            for j, x in enumerate(ops):
                if isinstance(x, RegOp) and x.reg is a and x.role is Role.USE:
                    ops[j] = RegOp(t, Role.USE, fixed=x.fixed if j != o.tied else None)
            ops[k] = RegOp(t, Role.DEF)
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
                pre.append(_move(t, o.reg))
            if o.is_def and key not in moved_out:
                moved_out.add(key)
                post.append(_move(o.reg, t))
            ops[k] = RegOp(t, o.role)
        return [*pre, w, *post]

    # -- steps 2 and 3 ---------------------------------------------------------------------
    def scan(self, work: list[_W]) -> tuple[dict[int, PReg], list[VReg]]:
        """One linear scan: the register of every variable (by id), or the vregs to spill."""
        var, index, uses, defs = number_vars(work)
        loops, labels = structure(work)
        ivs, undefined, _ = intervals(uses, defs, successors(work, labels),
                                      [(b, e) for b, e, _ in loops], len(var))
        if undefined:
            names = ", ".join(repr(var[k]) for k in range(len(var)) if undefined >> k & 1)
            raise AllocationError(f"{self.fn.name}: used before any definition on some "
                                  f"path: {names}")
        starts, ends = self._reservations(work, var, ivs)

        def reserved(p: PReg, iv: Interval) -> bool:
            for u in self._units(p):
                s = starts.get(u)
                if s:
                    j = bisect_right(s, iv.end) - 1
                    if j >= 0 and ends[u][j] >= iv.start:
                        return True
            return False

        # Which value to spill: first one not used again in the innermost loop around the
        # current position, then a constant (re-created at its uses, never stored), then the
        # one used furthest away (Belady).  Values used inside the inner loop stay in registers.
        inner_end = [-1] * len(work)
        for b, e, _ in loops:                # outer loops first: inner ones overwrite
            inner_end[b:e + 1] = [2 * e + 1] * (e - b + 1)
        remat = self.rematerializable(work)

        def cost(k: int, pos: int) -> tuple[bool, bool, int]:
            nxt = ivs[k].next_use(pos)  # type: ignore[union-attr]
            end = inner_end[pos // 2]
            return end >= 0 and nxt > end, id(var[k]) in remat, nxt

        partners: dict[int, list[int]] = {}
        for w in work:
            if w.kind is Kind.MOVE:
                d, s = w.defs()[0], w.uses()[0]
                if isinstance(d, VReg) and isinstance(s, VReg):
                    partners.setdefault(index[id(d)], []).append(index[id(s)])
                    partners.setdefault(index[id(s)], []).append(index[id(d)])
        allowed = self._allowed(work, index, var)
        assign: dict[int, PReg] = {}
        for k, v in enumerate(var):
            if id(v) in self.pre:
                assign[k] = self.pre[id(v)]
        busy: dict[str, int] = {}
        active: list[int] = []
        spilled: list[VReg] = []
        # per register unit, the intervals (start, end, var) given to it so far: disjoint and
        # sorted, so whether a register was free over an earlier stretch is one bisection
        held: dict[str, list[tuple[int, int, int]]] = {}

        def record(k: int, p: PReg, add: bool) -> None:
            iv = ivs[k]
            assert iv is not None
            e = (iv.start, iv.end, k)
            for u in self._units(p):
                h = held.setdefault(u, [])
                if add:
                    insort(h, e)
                else:
                    del h[bisect_left(h, e)]

        def free_over(p: PReg, k: int) -> bool:
            iv = ivs[k]
            assert iv is not None
            if reserved(p, iv):
                return False
            for u in self._units(p):
                h = held.get(u)
                j = bisect_right(h, (iv.end, len(work) * 2 + 2, 0)) - 1 if h else -1
                if j >= 0 and h[j][1] >= iv.start:    # type: ignore[index]
                    return False
            return True

        def relocate(regs: list[PReg], iv: Interval) -> PReg | None:
            """Free one of ``regs`` (a narrowed variable's) by moving its holder to another
            register that was free over the holder's whole interval."""
            for p in regs:
                holders = {busy[u] for u in self._units(p) if u in busy}
                if reserved(p, iv) or len(holders) != 1:
                    continue
                b = holders.pop()
                for q in allowed.get(b) or self.t.classes[var[b].cls]:
                    if set(self._units(q)) & set(self._units(p)) or not free_over(q, b):
                        continue
                    record(b, p, False)
                    for u in self._units(p):
                        del busy[u]
                    assign[b] = q
                    record(b, q, True)
                    for u in self._units(q):
                        busy[u] = b
                    return p
            return None
        order = sorted((iv for k, iv in enumerate(ivs) if iv and k not in assign),
                       key=lambda iv: (iv.start, iv.var))
        for iv in order:
            for a in [a for a in active if ivs[a].end < iv.start]:  # type: ignore[union-attr]
                active.remove(a)
                for u in self._units(assign[a]):
                    del busy[u]
            v = var[iv.var]
            regs = allowed.get(iv.var) or self.t.classes[v.cls]
            hints = [assign[p] for p in partners.get(iv.var, ()) if p in assign]
            choice = None
            for p in [*(h for h in hints if h in regs), *regs]:
                if not any(u in busy for u in self._units(p)) and not reserved(p, iv):
                    choice = p
                    break
            if choice is None and iv.var in allowed:
                choice = relocate(regs, iv)
            if choice is None:
                best: tuple[tuple[bool, bool, int], PReg, list[int]] | None = None
                for p in regs:
                    if reserved(p, iv):
                        continue
                    blockers = sorted({busy[u] for u in self._units(p) if u in busy})
                    if any(id(var[b]) in self.nospill for b in blockers):
                        continue
                    score = min(cost(b, iv.start) for b in blockers)
                    if best is None or score > best[0]:
                        best = (score, p, blockers)
                if id(v) not in self.nospill and (best is None
                                                  or cost(iv.var, iv.start) >= best[0]):
                    spilled.append(v)
                    continue
                if best is None:
                    pos = iv.start // 2
                    raise AllocationError(f"{self._where(work[pos])}: no {v.cls} register "
                                          f"left for an operand (too many values fixed or "
                                          f"used at once)")
                choice = best[1]
                for b in best[2]:
                    active.remove(b)
                    record(b, assign[b], False)
                    for u in self._units(assign.pop(b)):
                        del busy[u]
                    spilled.append(var[b])
            assign[iv.var] = choice
            record(iv.var, choice, True)
            active.append(iv.var)
            for u in self._units(choice):
                busy[u] = iv.var
        return {id(var[k]): p for k, p in assign.items()}, spilled

    def _allowed(self, work: list[_W], index: dict[int, int], var: list[VReg]
                 ) -> dict[int, list[PReg]]:
        """The registers of the variables (by number) that some operand narrows to part of
        their class (the target's ``operand_regs``), in the class's preference order."""
        if getattr(self.t, "operand_regs", None) is None:
            return {}
        sets: dict[int, frozenset[PReg]] = {}
        for w in work:
            if w.entry or w.kind in (Kind.MOVE, Kind.SPILL, Kind.FILL):
                continue            # the target's own copies accept its whole class
            for k, o in enumerate(w.operands):
                if isinstance(o, RegOp) and isinstance(o.reg, VReg):
                    ok = operand_regs(self.t, w, k)
                    if ok is not None:
                        n = index[id(o.reg)]
                        sets[n] = sets[n] & ok if n in sets else ok
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

    def _reservations(self, work: list[_W], var: list[VReg], ivs: list[Interval | None]
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

    # -- step 4 ----------------------------------------------------------------------------
    def rematerializable(self, work: list[_W]) -> dict[int, _W]:
        """The variables (by id) whose one definition the target may repeat at each use
        (``rematerializable``: a constant with no register inputs), with that definition."""
        ok = getattr(self.t, "rematerializable", None)
        if ok is None:
            return {}
        found: dict[int, _W | None] = {}
        for w in work:
            for r in w.defs():
                found[id(r)] = None if id(r) in found else w
        out: dict[int, _W] = {}
        for k, w in found.items():
            if w is None or w.kind is not Kind.OP or w.orig is None or w.clobbers:
                continue
            regs = [o for o in w.operands if isinstance(o, RegOp)]
            mem = [o for o in w.operands if isinstance(o, Mem)]
            if len(regs) != 1 or regs[0].role is not Role.DEF or regs[0].fixed is not None \
                    or regs[0].tied is not None or any(m.base or m.index for m in mem):
                continue
            if ok(w.orig):
                out[k] = w
        return out

    def _remat(self, src: _W, dst: VReg, var: VReg) -> _W:
        """A repeat of the constant definition ``src`` into ``dst``."""
        ops = [RegOp(dst, Role.DEF) if isinstance(o, RegOp) else o for o in src.operands]
        assert src.orig is not None
        return _W(src.op, ops, src.clobbers, Kind.REMAT, src.arg, self.index[id(src.orig)],
                  var=var)

    def spill(self, work: list[_W], spilled: list[VReg]) -> list[_W]:
        """``work`` with every variable in ``spilled`` kept in its frame slot, or, for a
        constant, re-created before each use."""
        sp = {id(v) for v in spilled}
        remat = {k: w for k, w in self.rematerializable(work).items() if k in sp}
        out: list[_W] = []
        for w in work:
            if w.kind is Kind.MOVE:
                d, s = w.defs()[0], w.uses()[0]
                if id(d) in sp and id(s) not in sp:
                    out.append(_W("spill", [RegOp(s, Role.USE)], kind=Kind.SPILL, var=d))
                    continue
                if id(s) in remat and id(d) not in sp:
                    out.append(self._remat(remat[id(s)], d, s))   # type: ignore[arg-type]
                    continue
                if id(s) in sp and id(d) not in sp:
                    out.append(_W("fill", [RegOp(d, Role.DEF)], kind=Kind.FILL, var=s))
                    continue
            used = {id(r): r for r in w.uses() if id(r) in sp}
            defd = {id(r): r for r in w.defs() if id(r) in sp}
            if not used and not defd:
                out.append(w)
                continue
            temps: dict[int, VReg] = {}
            prev = out[-1] if out else None
            if prev is not None and prev.kind is Kind.SPILL and id(prev.var) in used:
                t = prev.operands[0].reg  # just stored from a temporary: no reload
                if isinstance(t, VReg) and id(t) in self.nospill and id(t) not in self.pre:
                    temps[id(prev.var)] = t
            forwarded = set(temps)
            for k, r in {**used, **defd}.items():
                if k not in temps:
                    temps[k] = self._temp(r.cls)
            for k, r in used.items():
                if k in remat:
                    out.append(self._remat(remat[k], temps[k], r))  # type: ignore[arg-type]
                elif k not in forwarded:
                    out.append(_W("fill", [RegOp(temps[k], Role.DEF)], kind=Kind.FILL,
                                  var=r))
            out.append(_rename(w, temps))
            for k, r in defd.items():
                if k not in remat:        # a constant's own definition needs no store
                    out.append(_W("spill", [RegOp(temps[k], Role.USE)], kind=Kind.SPILL,
                                  var=r))
        return out

    def slots(self, work: list[_W]) -> tuple[dict[int, int], int]:
        """Frame offset of every spilled variable (by id) and the 16-byte aligned frame size."""
        index: dict[int, int] = {}
        var: list[VReg] = []
        uses: list[list[int]] = []
        defs: list[list[int]] = []
        for w in work:
            mark: list[int] = []
            if w.kind in (Kind.SPILL, Kind.FILL):
                assert w.var is not None
                k = index.setdefault(id(w.var), len(var))
                if k == len(var):
                    var.append(w.var)
                mark = [k]
            uses.append(mark if w.kind is Kind.FILL else [])
            defs.append(mark if w.kind is Kind.SPILL else [])
        loops, labels = structure(work)
        ivs, _, _ = intervals(uses, defs, successors(work, labels),
                              [(b, e) for b, e, _ in loops], len(var))
        slots: list[list[int]] = []          # [offset, size, end of the current occupant]
        offset: dict[int, int] = {}
        top = 0
        for iv in sorted((iv for iv in ivs if iv), key=lambda iv: (iv.start, iv.var)):
            cls = var[iv.var].cls
            size = self.t.spill_slot_size(cls)
            if size <= 0 or size & (size - 1):
                raise AllocationError(f"spill slot size {size} of class {cls} is not a power "
                                      f"of two")
            for s in slots:
                if s[1] == size and s[2] < iv.start:
                    s[2] = iv.end
                    offset[id(var[iv.var])] = s[0]
                    break
            else:
                off = -(-top // size) * size
                top = off + size
                slots.append([off, size, iv.end])
                offset[id(var[iv.var])] = off
        return offset, -(-top // 16) * 16

    def _stamp(self, inst: Inst, kind: Kind, dst: PReg | None, src: PReg | None,
               slot: int | None) -> Inst:
        """The target's copy/spill/fill marked with its kind, after checking its shape."""
        d = next((o.reg for o in inst.operands if isinstance(o, RegOp) and o.is_def), None)
        s = next((o.reg for o in inst.operands if isinstance(o, RegOp) and o.is_use), None)
        if (dst is not None and d != dst) or (src is not None and s != src):
            raise AllocationError(f"target {kind.value} '{format_inst(inst)}' must have "
                                  f"DEF {dst!r} / USE {src!r} as its first register operands")
        return replace(inst, kind=kind, slot=slot)

    def materialize(self, work: list[_W], assign: dict[int, PReg]) -> MFunction:
        """The allocated function."""
        offset, frame = self.slots(work)

        def reg(r: Reg | None) -> Reg | None:
            return assign[id(r)] if isinstance(r, VReg) else r

        insts: list[Inst] = []
        for w in work:
            if w.entry:
                continue
            if w.kind is Kind.MOVE:
                d, s = reg(w.defs()[0]), reg(w.uses()[0])
                assert isinstance(d, PReg) and isinstance(s, PReg)
                if d != s:
                    insts.append(self._stamp(self.t.make_move(d.cls, d, s), Kind.MOVE,
                                             d, s, None))
            elif w.kind is Kind.REMAT:
                insts.append(Inst(w.op, [replace(o, reg=reg(o.reg)) if isinstance(o, RegOp)
                                         else o for o in w.operands], w.clobbers, Kind.REMAT,
                                  w.arg, w.slot))
            elif w.kind in (Kind.SPILL, Kind.FILL):
                assert w.var is not None
                r = reg(w.operands[0].reg)  # type: ignore[union-attr]
                assert isinstance(r, PReg)
                off = offset[id(w.var)]
                if w.kind is Kind.SPILL:
                    inst = self._stamp(self.t.make_spill(r.cls, r, off), Kind.SPILL,
                                       None, r, off)
                else:
                    inst = self._stamp(self.t.make_fill(r.cls, r, off), Kind.FILL,
                                       r, None, off)
                insts.append(inst)
            else:
                assert w.orig is not None
                ops = []
                for o, wo in zip(w.orig.operands, w.operands):
                    if isinstance(o, RegOp):
                        assert isinstance(wo, RegOp)
                        o = replace(o, reg=reg(wo.reg))
                    elif isinstance(o, Mem):
                        assert isinstance(wo, Mem)
                        o = replace(o, base=reg(wo.base), index=reg(wo.index))
                    ops.append(o)
                insts.append(replace(w.orig, operands=ops))
        written: set[str] = set()
        for inst in insts:
            for r in [*inst.defs(), *inst.clobbers]:
                if isinstance(r, PReg):
                    written.update(self._units(r))
        order = [p for regs in self.t.classes.values() for p in regs]
        saved = sorted((p for p in self.t.callee_saved if set(self._units(p)) & written),
                       key=lambda p: (order.index(p) if p in order else len(order), p.name))
        return MFunction(self.fn.name, insts, [(p, p) for _, p in self.fn.params], frame,
                         tuple(saved), self.fn.next_vreg)

    def run(self) -> MFunction:
        work = self.prepare()
        is_copy = getattr(self.t, "is_copy", None)
        if is_copy is not None:
            loops, labels = structure(work)
            m = coalesce_copies(work, is_copy, set(self.pre), self.nospill, loops,
                                successors(work, labels))
            if m:
                work = [_rename(w, m) if any(id(r) in m for r in (*w.uses(), *w.defs()))
                        else w for w in work]
                # the allocator's own copies that became self-copies go; the selector's stay
                # (the checker pairs them with the input) and the target drops them
                work = [w for w in work if not (w.kind is Kind.MOVE
                                                and w.defs()[0] is w.uses()[0])]
        while True:
            assign, spilled = self.scan(work)
            if not spilled:
                return self.materialize(work, assign)
            work = self.spill(work, spilled)


def allocate(fn: MFunction, target: TargetRegInfo) -> MFunction:
    """Assign physical registers to every virtual register of ``fn``.

    Returns a new function (``fn`` is not changed) whose operands name only physical
    registers, with copies (``Kind.MOVE``), spills and fills (``Kind.SPILL``/``Kind.FILL``,
    ``slot`` = frame offset) inserted, ``frame_size`` set (16-byte aligned; each slot aligned
    to its size) and ``callee_saved_used`` listing the callee-saved registers it writes.
    Deterministic: the same input gives the same output.  Raises ``AllocationError`` when
    constraints conflict or an instruction needs more registers than its class has.
    """
    return _Allocator(fn, target).run()
