"""Dead-instruction elimination on a selected machine function (before allocation).

Selection emits code node by node: address arithmetic that a later memory operand already
folded, lane extracts that a shuffle or insert read directly, copies nobody reads. An
instruction is removed when

- it is an ordinary OP (no control flow, nothing the allocator inserted), has no clobbers and
  at least one DEF operand, and every register it defines is a virtual register that no other
  instruction of the function reads (a whole-function use count, so a value carried around a
  loop and read at its top is kept; a read-modify-write's read of itself does not count);
- it does not also write memory: its memory operands (if any) are read or only addressed, which
  `writes_memory(inst)` tells for the target;
- or, where the target says its compares only set flags (``flag_only``: x86's CMP and TEST,
  whose one effect is RFLAGS, SDM Vol. 2A "CMP"), it defines nothing and writes flags ("w")
  that no reader reads (a compare whose bool a CMOVcc no longer reads: the CMOVcc tests its
  operands again, kcc/isel/x86/alu.py int_flags);
- no flag reader reads the flags it writes (a flag-setting op whose result register is dead
  may still be there for its flags): the reader/writer pairs of kcc/isel/flags.py, the rule
  loop-invariant code motion follows too, from the target's `flags_of(inst)` ("r", "w", "rw"
  or ""). (Before, only the next instruction was asked whether it reads flags, so a dead
  `sub` with a `mov` between it and its `cmove` went, and the `cmove` read older flags.)

Removing an instruction lowers its operands' use counts, so chains of dead values go in one
backwards sweep repeated to a fixed point (a further sweep only when one can find more: a
removal lowered the count of a register an instruction kept earlier in the sweep defines,
or a flag reader went). Linear in the function's size per sweep.
"""

from __future__ import annotations

from _bisect import bisect_right  # bisect's own, without bisect.py (start-up)

from kcc.ir.mir import _READS, _WRITES, Inst, Kind, Mem, MFunction, RegOp, VReg
from kcc.isel.flags import flag_pairs
from kcc.record import Counts  # collections.Counter's counting, without collections

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable


def removable(inst: Inst, writes_memory: Callable[[Inst], bool]) -> bool:
    """The side-effect rule of every removal here: an ordinary OP (no control flow, nothing
    the allocator inserted) without clobbers that writes no memory, so that its only effects
    are the registers it defines and the flags it writes (whose readers each caller asks
    flag_pairs about)."""
    return inst.kind is Kind.OP and not inst.clobbers and not writes_memory(inst)


def eliminate_dead(fn: MFunction, writes_memory: Callable[[Inst], bool],
                   flags_of: Callable[[Inst], str],
                   known: dict[int, tuple[Inst, list, list]] | None = None,
                   flag_only: bool = False) -> int:
    """Remove dead instructions from fn in place; returns how many went. ``known``, when
    given, receives (inst, uses(), defs()) of every instruction by id (the instructions stay
    unchanged: the next pass may read them there instead of asking again). ``flag_only``: an
    OP that defines nothing and only writes flags ("w") has no other effect (x86)."""
    reads: dict[int, list] = {}
    writes: dict[int, list] = {}
    for i in fn.insts:
        reads[id(i)], writes[id(i)] = _uses_defs(i)
    if known is not None:
        for i in fn.insts:
            known[id(i)] = (i, reads[id(i)], writes[id(i)])
    uses: Counts = Counts(r for rs in reads.values() for r in rs if isinstance(r, VReg))
    # the writers some flag reader reads (pairs do not change as dead instructions go: a
    # writer no reader is paired with has no reader before the next writer or boundary)
    insts = fn.insts
    read = {id(insts[w]) for _, w in flag_pairs(insts, lambda i: flags_of(insts[i]))
            if w is not None}
    removed = 0
    changed = True
    OP = Kind.OP              # (bound once: a local is read faster than a class attribute)
    while changed:
        changed = False
        if flag_only and removed:
            # a flag reader that went (a SETcc whose bool is dead) frees its writer
            insts = fn.insts
            read = {id(insts[w]) for _, w in flag_pairs(insts, lambda i: flags_of(insts[i]))
                    if w is not None}
        keep: list[Inst] = []
        # the registers defined by instructions this sweep kept that could go (an OP without
        # clobbers): a later removal that lowers the use count of one of them, or a flag
        # reader removed, is what a further sweep could act on; without either, that sweep
        # would find the same verdicts and remove nothing (so it is not run)
        kept_defs: set = set()
        again = False
        went_reader = False
        for inst in reversed(fn.insts):
            defs, srcs = writes[id(inst)], reads[id(inst)]
            # `removable` in two halves: the cheap one asked of every instruction, the
            # target's writes_memory only of an instruction whose results are all dead
            maybe = inst.kind is OP and not inst.clobbers
            dead = maybe and (bool(defs) or flag_only and flags_of(inst) == "w") \
                and id(inst) not in read
            if dead:
                for r in defs:
                    if not isinstance(r, VReg) or uses[r] != srcs.count(r):
                        dead = False
                        break
                else:
                    dead = not writes_memory(inst)
            if dead:
                for r in srcs:
                    if isinstance(r, VReg):
                        uses[r] -= 1
                        if r in kept_defs:
                            again = True
                if flag_only and not went_reader and "r" in flags_of(inst):
                    went_reader = True
                removed += 1
                changed = True
                continue
            if maybe and defs:
                kept_defs.update(defs)
            keep.append(inst)
        fn.insts = keep[::-1]
        if changed and not again and not went_reader:
            break
    return removed


def eliminate_dead_chains(fn: MFunction, writes_memory: Callable[[Inst], bool],
                          flags_of: Callable[[Inst], str],
                          known: dict[int, tuple[Inst, list, list]] | None = None) -> int:
    """Remove, in place, the read-modify-write chains whose value nothing else reads: a
    virtual register every reader of which also defines it (x86's lane of an opmask nobody
    uses, KMOVD then SHR then AND on one register: eliminate_dead discounts an instruction's
    read of its own result only, so the SHR's read kept the AND and the AND's kept the SHR).
    Every instruction defining such a register goes, together, when each defines that
    register alone, is `removable` and writes no flags a reader reads. Returns how many
    went; the values they read may be dead now (run `eliminate_dead` again). ``known``:
    eliminate_dead's (inst, uses, defs) by id, read instead of asking again."""
    insts = fn.insts
    if known:
        info = []
        for i in insts:
            k = known.get(id(i))
            info.append((k[1], k[2]) if k is not None and k[0] is i else _uses_defs(i))
    else:
        info = [_uses_defs(i) for i in insts]
    read = {w for _, w in flag_pairs(insts, lambda k: flags_of(insts[k])) if w is not None}
    writers: dict[VReg, list[int]] = {}
    outside: Counts = Counts()       # reads by an instruction that does not define the register
    for k, (us, ds) in enumerate(info):
        for r in ds:
            if isinstance(r, VReg):
                writers.setdefault(r, []).append(k)
        for r in us:
            if isinstance(r, VReg) and r not in ds:
                outside[r] += 1
    gone: set[int] = set()
    for r, ks in writers.items():
        if outside[r] or len(ks) < 2:
            continue                 # read elsewhere, or a single def (eliminate_dead's case)
        if all(info[k][1] == [r] and k not in read and removable(insts[k], writes_memory)
               for k in ks):
            gone.update(ks)
    if gone:
        fn.insts = [i for k, i in enumerate(insts) if k not in gone]
    return len(gone)


def _uses_defs(inst: Inst) -> tuple[list, list]:
    """(inst.uses(), inst.defs()) in one walk over the operands."""
    us: list = []
    ds: list = []
    for o in inst.operands:
        if isinstance(o, RegOp):
            role = o.role
            if role in _READS:
                us.append(o.reg)
            if role in _WRITES:
                ds.append(o.reg)
        elif isinstance(o, Mem):
            if o.base is not None:
                us.append(o.base)
            if o.index is not None:
                us.append(o.index)
    return us, ds


def eliminate_dead_defs(fn: MFunction, writes_memory: Callable[[Inst], bool],
                        flags_of: Callable[[Inst], str], ops: frozenset[str],
                        known: dict[int, tuple[Inst, list, list]] | None = None) -> int:
    """Remove, in place, the instructions of fn whose op is in ``ops`` and whose results are
    never read: every virtual register they define is dead after them (defined again before
    any read, on every path), by the exact liveness of kcc/regalloc/liveness.py; each
    `removable`, and no flag reader reads its flags. Returns how many went. ``known`` (from
    `eliminate_dead`): each instruction's uses and defs by id, read instead of asking again.

    `eliminate_dead` counts reads over the whole function, so it keeps a variable's first
    definition when a later one is read. The x86 selector zeroes each promoted REG buffer cell
    where the buffer is scheduled, so that it is defined on every path (kcc/isel/x86/select.py
    sel_BUFFER); where every read of the cell follows a store of it, that zeroing is dead, and
    kept it would stretch the cell's live interval (the hull of its mentions) back to it:
    the accumulators of two reduce loops run one after the other would then hold registers
    over both loops (passes/pack.py's column pairs).

    Cheap where nothing can go (most kernels: the ops are every constant's `mov`): a register
    defined once, by the candidate, and read somewhere is live after it (in a well-formed
    function every read is reached by a definition, here only that one), so such a candidate
    stays without liveness; the liveness, when a candidate is left, tracks only the registers
    the candidates define (each variable's liveness is its own: the same answer for them)."""
    insts = fn.insts
    cand = [i for i, inst in enumerate(insts)
            if inst.op in ops and removable(inst, writes_memory)]
    if not cand:
        return 0
    reads: list[list] = []
    writes: list[list] = []
    for inst in insts:
        k = known.get(id(inst)) if known is not None else None
        if k is None:
            reads.append(inst.uses())
            writes.append(inst.defs())
        else:
            reads.append(k[1])
            writes.append(k[2])
    ndefs: Counts = Counts(r for rs in writes for r in rs if isinstance(r, VReg))
    ndefs.update(v for v, _ in fn.params)           # a parameter is defined at the entry
    nreads: Counts = Counts(r for rs in reads for r in set(rs) if isinstance(r, VReg))
    cand = [i for i in cand if writes[i] and all(isinstance(r, VReg) for r in writes[i])
            and not any(ndefs[r] == 1 and nreads[r] > (r in reads[i]) for r in writes[i])]
    if not cand:
        return 0
    live = _read_next(insts, reads, writes, cand)
    cand = [i for i in cand if i not in live]
    if not cand:
        return 0
    read = {w for _, w in flag_pairs(insts, lambda i: flags_of(insts[i])) if w is not None}
    cand = [i for i in cand if i not in read]
    if not cand:
        return 0
    from kcc.ir.mir import structure, successors
    from kcc.regalloc.liveness import header_live_in, live_out_sets
    # the variables: the registers the candidates define, numbered; every instruction's reads
    # and writes of them (each once, as number_vars lists them)
    num: dict[VReg, int] = {}
    for i in cand:
        for r in writes[i]:
            num.setdefault(r, len(num))
    get = num.get
    uses = [list(dict.fromkeys(k for k in map(get, rs) if k is not None)) for rs in reads]
    defs = [list(dict.fromkeys(k for k in map(get, rs) if k is not None)) for rs in writes]
    loops, labels = structure(insts)
    succ = successors(insts, labels)
    header_in, _ = header_live_in(uses, defs, succ, [b for b, _, _ in loops])
    outs = live_out_sets(uses, defs, succ, header_in, set(cand))
    dead = {i for i in cand if not set(defs[i]) & outs[i]}
    if dead:
        fn.insts = [inst for i, inst in enumerate(insts) if i not in dead]
    return len(dead)


def _read_next(insts: list[Inst], reads: list[list], writes: list[list],
               cand: list[int]) -> set[int]:
    """The candidates a register of which is read by the next instruction that mentions it,
    with only fall-through instructions between (no JUMP, no RET: each has the next as a
    successor): a path from the candidate to a read with no definition on it, so that
    register is live after the candidate and the candidate stays, exactly, without liveness
    (a vector accumulator zeroed, then updated in its loop). Linear: each register's
    mentions in order, found by bisection; the JUMPs and RETs counted by prefix."""
    regs = {r for i in cand for r in writes[i]}
    at: dict[VReg, list[int]] = {r: [] for r in regs}
    stops = [0]                          # stops[j]: JUMPs and RETs among insts[:j]
    JUMP, RET = Kind.JUMP, Kind.RET
    n = 0
    for j, inst in enumerate(insts):
        for rs in (reads[j], writes[j]):
            for r in rs:
                lst = at.get(r)
                if lst is not None and (not lst or lst[-1] != j):
                    lst.append(j)
        if inst.kind is JUMP or inst.kind is RET:
            n += 1
        stops.append(n)
    out: set[int] = set()
    for i in cand:
        for r in writes[i]:
            lst = at[r]
            k = bisect_right(lst, i)
            if k < len(lst):
                p = lst[k]
                if stops[p] == stops[i + 1] and r in reads[p]:
                    out.add(i)
                    break
    return out
