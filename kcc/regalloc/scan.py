"""One linear scan (step 3 of kcc.regalloc.linear_scan): intervals in order of start get a
register, or the scan names the variables to spill.

`Scan(alloc, work).run()` returns the register of every variable (by id) and the vregs to
spill. `run` frees the registers of intervals ended before a start and records each choice
itself (once per interval: inlined); the other steps are methods: `free_register` picks a free
register (a copy partner's first, then the target's preference order), `relocate` frees a
register for a narrowed variable by moving its holder to a register that was free over the
holder's whole interval, `evict` spills the cheapest of the current variable and the holders
of one register. The scan works on register numbers and bit sets of register units (the
allocator's `umask`/`ubits`); the active intervals are a heap by end: n log n in the
intervals.
"""

from __future__ import annotations

from _bisect import bisect_left, bisect_right  # bisect's and heapq's own C functions,
from _bisect import insort_right as insort     # without bisect.py and heapq.py (start-up)
from _heapq import heappop, heappush
from _operator import attrgetter  # operator.attrgetter itself (no operator module at start-up)

from kcc.ir.mir import PReg, VReg
from kcc.regalloc.liveness import Interval, bits, intervals
from kcc.regalloc.target import AllocationError, hook
from kcc.regalloc.work import MOVE, OP, WorkInst

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_start = attrgetter("start")


class Scan:
    """The state of one scan over `work` for the allocator `alloc` (a linear_scan._Allocator:
    its register table, unit masks, reservations and the target's register classes)."""

    def __init__(self, alloc: Any, work: list[WorkInst]) -> None:
        self.a = alloc
        self.work = work
        # (the numbering and control flow coalescing asked for, when it renamed nothing)
        (var, index, uses, defs), loops, _, succ = alloc.flow(work)
        ivs, undefined, _ = intervals(uses, defs, succ,
                                      [(b, e) for b, e, _ in loops], len(var))
        if undefined:
            names = ", ".join(repr(var[k]) for k in sorted(undefined))
            raise AllocationError(f"{alloc.fn.name}: used before any definition on some "
                                  f"path: {names}")
        self.var, self.ivs = var, ivs
        self.starts, self.ends = alloc._reservations(work, var, ivs)
        self.umask: list[int] = alloc.umask
        self.ubits: list[list[int]] = alloc.ubits
        self.regtab: list[PReg] = alloc.regtab
        # the reserved ranges of each register's units, for the registers that have any
        self.resv: dict[int, list[tuple[list[int], list[int]]]] = {}
        self.resv_known: list[int] = []
        # what `cost` reads, made when a spill is first weighed (most scans spill nothing)
        self.loops = loops
        self.inner_end: list[int] = []
        self.is_remat: list[bool] | None = None
        self.nospill = [id(v) in alloc.nospill for v in var]
        partners: dict[int, list[int]] = {}
        for w in work:
            if w.kind is MOVE:
                d, s = w.operands[0].reg, w.operands[1].reg  # type: ignore[union-attr]
                if isinstance(d, VReg) and isinstance(s, VReg):
                    partners.setdefault(index[id(d)], []).append(index[id(s)])
                    partners.setdefault(index[id(s)], []).append(index[id(d)])
        self.partners = partners
        # tuples in place (the target's subreg_copy): variable -> its (tuple, part, register)
        # triples, the tuple at `register` holding the part
        self.groups: dict[int, list[tuple[int, int, int]]] = {}
        sub = hook(alloc.t, "subreg_copy")
        for w in work if sub is not None else ():
            got = sub(w) if w.kind is OP else None
            if got is None:
                continue
            t = w.operands[got[0]].reg  # type: ignore[union-attr]
            for j, pk in enumerate(got[1]):
                p = w.operands[pk].reg  # type: ignore[union-attr]
                if isinstance(t, VReg) and isinstance(p, VReg):
                    e = (index[id(t)], index[id(p)], j)
                    self.groups.setdefault(e[0], []).append(e)
                    self.groups.setdefault(e[1], []).append(e)
        # per register list (by identity): (register j of a register, its unit) -> register
        self.at: dict[int, dict[tuple[int, str], int]] = {}
        self.allowed = alloc._allowed(work, index, var)
        self.classes = alloc.t.classes
        self.assign: dict[int, int] = {}          # variable -> register number
        for k, v in enumerate(var):
            if id(v) in alloc.pre:
                self.assign[k] = alloc._regno(alloc.pre[id(v)])
        self.owner: dict[int, int] = {}           # unit bit -> the active variable holding it
        self.busy = 0                             # bit set of the units active variables hold
        self.active: list[tuple[int, int]] = []  # heap of (end, variable) of assigned ones
        self.spilled: list[VReg] = []
        # per register unit bit, the intervals (start, end, var) given to it so far: disjoint
        # and sorted, so whether a register was free over an earlier stretch is one bisection
        self.held: dict[int, list[tuple[int, int, int]]] = {}

    # -- what is free where --------------------------------------------------------------
    def reserved(self, r: int, iv: Interval) -> bool:
        """Whether a reservation (a pre-coloured temporary, a clobber) of register r's units
        meets the interval."""
        for s, e in self.resv.get(r, ()):
            j = bisect_right(s, iv.end) - 1
            if j >= 0 and e[j] >= iv.start:
                return True
        return False

    def note_reservations(self) -> None:
        """Index the reservations of registers numbered since the last call."""
        starts, ends, regtab = self.starts, self.ends, self.regtab
        for r in range(len(self.resv_known), len(regtab)):
            rs = [(starts[u], ends[u]) for u in self.a._units(regtab[r]) if starts.get(u)]
            if rs:
                self.resv[r] = rs
            self.resv_known.append(r)

    def cost_tables(self) -> None:
        """What `cost` reads. Which value to spill: first one not used again in the innermost
        loop around the current position, then a constant (re-created at its uses, never
        stored), then the one used furthest away (Belady).  Values used inside the inner loop
        stay in registers."""
        inner_end = [-1] * len(self.work)
        for b, e, _ in self.loops:           # outer loops first: inner ones overwrite
            inner_end[b:e + 1] = [2 * e + 1] * (e - b + 1)
        self.inner_end = inner_end
        remat = self.a.rematerializable(self.work)
        self.is_remat = [id(v) in remat for v in self.var]

    def cost(self, k: int, pos: int) -> tuple[bool, bool, int]:
        """How cheap spilling variable k at pos is (larger: cheaper): not used again in the
        innermost loop, a constant, the distance to its next use."""
        if self.is_remat is None:
            self.cost_tables()
        nxt = self.ivs[k].next_use(pos)  # type: ignore[union-attr]
        end = self.inner_end[pos // 2]
        return end >= 0 and nxt > end, self.is_remat[k], nxt

    def regs_of(self, k: int) -> tuple[list[int], set[int]]:
        """Variable k's registers (its operands' narrowing, else its class) by preference."""
        return self.a._order(self.allowed.get(k) or self.classes[self.var[k].cls])

    def record(self, k: int, r: int, add: bool) -> None:
        """Add (or remove) variable k's interval to the history of register r's units."""
        iv = self.ivs[k]
        assert iv is not None
        e = (iv.start, iv.end, k)
        held = self.held
        for u in self.ubits[r]:
            h = held.setdefault(u, [])
            if add:
                insort(h, e)
            else:
                del h[bisect_left(h, e)]

    def free_over(self, r: int, k: int) -> bool:
        """Whether register r was free over variable k's whole interval."""
        iv = self.ivs[k]
        assert iv is not None
        if self.reserved(r, iv):
            return False
        for u in self.ubits[r]:
            h = self.held.get(u)
            j = bisect_right(h, (iv.end, len(self.work) * 2 + 2, 0)) - 1 if h else -1
            if j >= 0 and h[j][1] >= iv.start:    # type: ignore[index]
                return False
        return True

    def blocked(self, r: int, iv: Interval) -> bool:
        """Whether a reservation blocks register r over the interval."""
        return r in self.resv and self.reserved(r, iv)

    # -- the steps -------------------------------------------------------------------------
    def free_register(self, k: int, iv: Interval, nums: list[int], numset: set[int]) -> int:
        """A free register for variable k: a copy partner's, else one that puts it in place
        in a tuple (``tuple_hints``), else the first by preference (-1: none)."""
        busy, umask, assign = self.busy, self.umask, self.assign
        for p in self.partners.get(k, ()):
            r = assign.get(p)
            if r is not None and r in numset and not busy & umask[r] and \
                    not self.blocked(r, iv):
                return r
        if k in self.groups:
            for r in self.tuple_hints(k):
                if r in numset and not busy & umask[r] and not self.blocked(r, iv):
                    return r
        for r in nums:
            if not busy & umask[r] and not self.blocked(r, iv):
                return r
        return -1

    def holding(self, k: int, j: int, unit: str) -> int:
        """The register of variable k's registers whose register j is ``unit`` (-1: none)."""
        nums, _ = self.regs_of(k)
        table = self.at.get(id(nums))
        if table is None:
            table = self.at[id(nums)] = {}
            for r in nums:
                for i, u in enumerate(self.a._units(self.regtab[r])):
                    table[(i, u)] = r
        return table.get((j, unit), -1)

    def tuple_hints(self, k: int) -> list[int]:
        """Registers that put variable k in place, for the target's ``subreg_copy``: a tuple
        where an assigned part sits at its register; a part at its register of the assigned
        tuple, else where an assigned sibling part puts the tuple, else in the first tuple
        of the class whose registers are all free now (the values a vector store writes are
        computed before its data tuple is)."""
        assign, units, regtab = self.assign, self.a._units, self.regtab
        out: list[int] = []
        for t, p, j in self.groups[k]:
            if k == t:
                if p in assign:
                    out.append(self.holding(t, j, units(regtab[assign[p]])[0]))
                continue
            if k != p:
                continue
            if t in assign:
                out.append(self.holding(p, 0, units(regtab[assign[t]])[j]))
                continue
            for t2, p2, j2 in self.groups.get(t, ()):
                if t2 == t and p2 != k and p2 in assign:
                    r = self.holding(t, j2, units(regtab[assign[p2]])[0])
                    if r >= 0:
                        out.append(self.holding(p, 0, units(regtab[r])[j]))
            if not out:
                iv = self.ivs[t]
                tnums, _ = self.regs_of(t)
                if len(self.resv_known) < len(regtab):
                    self.note_reservations()
                for r in tnums:
                    if not self.busy & self.umask[r] and iv is not None and \
                            not self.blocked(r, iv):
                        out.append(self.holding(p, 0, units(regtab[r])[j]))
                        break
        return out

    def relocate(self, nums: list[int], iv: Interval) -> int:
        """Free one of ``nums`` (a narrowed variable's registers) by moving its holder to
        another register that was free over the holder's whole interval; -1 if none."""
        umask, owner, assign = self.umask, self.owner, self.assign
        for r in nums:
            holders = {owner[u] for u in bits(self.busy & umask[r])}
            if self.reserved(r, iv) or len(holders) != 1:
                continue
            b = holders.pop()
            qs, _ = self.regs_of(b)
            self.note_reservations()
            for q in qs:
                if umask[q] & umask[r] or not self.free_over(q, b):
                    continue
                self.record(b, r, False)
                self.busy &= ~umask[r]
                assign[b] = q
                self.record(b, q, True)
                self.busy |= umask[q]
                for u in self.ubits[q]:
                    owner[u] = b
                return r
        return -1

    def evict(self, k: int, iv: Interval, nums: list[int]) -> int:
        """No register is free: spill the cheapest of k and the holders of one register;
        the register k gets, or -1 when k itself is spilled."""
        start = iv.start
        best: tuple[tuple[bool, bool, int], int, list[int]] | None = None
        owner, nospill, umask, busy, resv = self.owner, self.nospill, self.umask, self.busy, \
            self.resv
        # each holder's cost once a call (a holder of several registers' units is weighed
        # for each of them; ~32 vector registers are weighed per eviction)
        costs: dict[int, tuple[bool, bool, int]] = {}
        for r in nums:
            if r in resv and self.reserved(r, iv):
                continue
            m = busy & umask[r]
            if m and not m & (m - 1):             # one unit held: one holder
                b = owner[m.bit_length() - 1]
                if nospill[b]:
                    continue
                blockers = [b]
                score = costs.get(b)
                if score is None:
                    score = costs[b] = self.cost(b, start)
            else:
                blockers = sorted({owner[u] for u in bits(m)})
                if any(nospill[b] for b in blockers):
                    continue
                for b in blockers:
                    if b not in costs:
                        costs[b] = self.cost(b, start)
                score = min(costs[b] for b in blockers)
            if best is None or score > best[0]:
                best = (score, r, blockers)
        if not nospill[k] and (best is None or self.cost(k, start) >= best[0]):
            self.spilled.append(self.var[k])
            return -1
        if best is None:
            where = self.a._where(self.work[start // 2])
            raise AllocationError(f"{where}: no {self.var[k].cls} register left for an "
                                  f"operand (too many values fixed or used at once)")
        for b in best[2]:
            self.record(b, self.assign[b], False)
            self.busy &= ~umask[self.assign.pop(b)]
            self.spilled.append(self.var[b])
        return best[1]

    def run(self) -> tuple[dict[int, PReg], list[VReg]]:
        """Scan every interval in order of start; the registers by variable id and the vregs
        to spill."""
        assign, allowed, regtab = self.assign, self.allowed, self.regtab
        # by start, ties by variable number (ivs is in that order and the sort is stable)
        order = sorted((iv for k, iv in enumerate(self.ivs) if iv and k not in assign),
                       key=_start)
        # (expire, regs_of and give inlined: this loop runs once per interval and scan)
        active, umask, ubits, owner, held = self.active, self.umask, self.ubits, self.owner, \
            self.held
        classes, var, order_of = self.classes, self.var, self.a._order
        free_register = self.free_register
        for iv in order:
            start = iv.start
            while active and active[0][0] < start:
                r = assign.get(heappop(active)[1])      # (None: spilled since)
                if r is not None:
                    self.busy &= ~umask[r]
            k = iv.var
            nums, numset = order_of(allowed.get(k) or classes[var[k].cls])
            if len(self.resv_known) < len(regtab):
                self.note_reservations()
            choice = free_register(k, iv, nums, numset)
            if choice < 0 and k in allowed:
                choice = self.relocate(nums, iv)
            if choice < 0:
                choice = self.evict(k, iv, nums)
                if choice < 0:
                    continue
            # give: k holds the register from now to the end of its interval
            assign[k] = choice
            e = (start, iv.end, k)
            for u in ubits[choice]:
                h = held.get(u)
                if h is None:
                    held[u] = [e]
                else:
                    insort(h, e)
                owner[u] = k
            heappush(active, (iv.end, k))
            self.busy |= umask[choice]
        var = self.var
        return {id(var[k]): regtab[r] for k, r in assign.items()}, self.spilled
