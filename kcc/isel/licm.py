"""Loop-invariant code motion on a selected machine function (after dead-code elimination,
before allocation).

Selection emits code where the graph's node is used: a lane mask built from a bool that was
computed outside the loop (gated loads: `movzx`, `neg`, `vmovq`/`vpinsrd` every iteration), a
constant materialized per loop level, address sums of invariant registers. Such an
instruction moves to the loop's preheader (just before its LOOP_BEGIN, after any zero-trip
guard) when

- the target says it may move (`movable(inst)`: an ordinary OP with no side effect, no
  implicit registers, no memory access other than read-only constants, and it cannot fault:
  never a load from a buffer, which a gate may protect, and never a store or a division);
- it sits in the loop's own body (not inside an inner loop: those were processed first, and
  what they hoisted now sits in this body);
- every register it reads is defined nowhere in the loop, or only by instructions that move
  too (a fixed point);
- every register it writes is written only by instructions that move (anywhere in the
  function), and no instruction of the loop reads it before its first write in the body (that
  read sees the previous iteration's value: a loop-carried register stays);
- flags stay paired: an instruction that reads RFLAGS moves only together with the nearest
  earlier flag writer in the body, and that writer only together with it (`flags_of(inst)`
  says "r", "w" or "rw"; branches read flags; the pairs of kcc/isel/flags.py, which DCE
  follows too).

Hoisting a lone constant materialization only lengthens a live range (the allocator may then
spill it), so an instruction that reads no register (and no flags: a SETcc moves with its flag
writer) moves only for the instructions that move with it: when loop code still reads its
result, it stays and a copy of it (a fresh register) is placed in the preheader for the moved
readers. The exception is what the target names with `alone(inst)` (x86: a whole vector read
from .rodata): such a constant moves by itself, so the loop reads a register where it loaded
the constant on every iteration (a bool cast's 1s under an opmask, a lane mask's AND); its
register is then live across the whole loop. Loops are processed innermost first, so a value
invariant in two loops moves out of both. Linear in the function's size per loop.
"""

from __future__ import annotations

from kcc.ir.mir import Inst, Kind, Mem, MFunction, RegOp, VReg, structure
from kcc.isel.flags import flag_pairs
from kcc.record import defaultdict  # collections' own, from _collections

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable

# members bound once (a module global is read faster than a class attribute)
_OP, _LOOP_BEGIN, _LOOP_END = Kind.OP, Kind.LOOP_BEGIN, Kind.LOOP_END


def hoist_invariants(fn: MFunction, movable: Callable[[Inst], bool],
                     flags_of: Callable[[Inst], str],
                     known: dict[int, tuple[Inst, list, list]] | None = None,
                     alone: Callable[[Inst], bool] | None = None) -> int:
    """Move loop-invariant instructions of fn to their loops' preheaders, in place; returns
    how many moved (a cloned constant counts once). ``known``: (inst, uses(), defs()) of
    instructions by id, already asked (eliminate_dead's). ``alone``: the constants that move
    without a moving reader (see the module docstring); none when not given."""
    moved = 0
    done: set[str] = set()
    regs = _Regs(known)
    shape: tuple[list[Inst], list] | None = None   # the loops of fn.insts while it is unchanged
    while True:
        if shape is None or shape[0] is not fn.insts:
            shape = (fn.insts, structure(fn.insts)[0])
        loops = shape[1]
        todo = [(b, e, d) for b, e, d in loops if fn.insts[b].label() not in done]
        if not todo:
            return moved
        b, e, _ = max(todo, key=lambda t: (t[2], -t[0]))     # the deepest loop first
        done.add(fn.insts[b].label() or "")
        moved += _hoist_loop(fn, b, e, movable, flags_of, regs, alone)


class _Regs:
    """Each instruction's ``uses()``, ``defs()`` and flag use, computed once per instruction
    object (this pass never changes an instruction's operands in place: a renamed one is a
    new instruction)."""

    def __init__(self, known: dict[int, tuple[Inst, list, list]] | None = None) -> None:
        self._seen: dict[int, tuple[Inst, list, list, str | None]] = {
            k: (*v, None) for k, v in known.items()} if known else {}
        # the last table and its definitions by register, for the list they were made of (a
        # loop that moves nothing leaves fn.insts as it was for the next loop)
        self.last: tuple[list[Inst], list, dict[object, list[int]]] | None = None

    def get(self, inst: Inst) -> tuple[list, list]:
        got = self._seen.get(id(inst))
        if got is None or got[0] is not inst:
            got = self._seen[id(inst)] = (inst, inst.uses(), inst.defs(), None)
        return got[1], got[2]

    def table(self, insts: list[Inst]) -> list[tuple[Inst, list, list, str | None]]:
        """(inst, uses, defs, flags or None) of every instruction, in one walk (the per-loop
        tables are built from it: a method call per instruction and table costs more)."""
        seen = self._seen
        out = []
        for inst in insts:
            got = seen.get(id(inst))
            if got is None or got[0] is not inst:
                got = seen[id(inst)] = (inst, inst.uses(), inst.defs(), None)
            out.append(got)
        return out

    def flags(self, inst: Inst, flags_of: Callable[[Inst], str]) -> str:
        got = self._seen.get(id(inst))
        if got is None or got[0] is not inst:
            got = (inst, inst.uses(), inst.defs(), None)
        if got[3] is None:
            got = self._seen[id(inst)] = (*got[:3], flags_of(inst))
        return got[3]  # type: ignore[return-value]


def _top_level(insts: list[Inst], b: int, e: int) -> list[int]:
    """Indices of the body of loop [b, e] that are not inside an inner loop."""
    out, depth = [], 0
    for i in range(b + 1, e):
        k = insts[i].kind
        if k is _LOOP_BEGIN:
            depth += 1
        elif k is _LOOP_END:
            depth -= 1
        elif depth == 0:
            out.append(i)
    return out


def _hoist_loop(fn: MFunction, b: int, e: int, movable: Callable[[Inst], bool],
                flags_of: Callable[[Inst], str], regs: _Regs,
                alone: Callable[[Inst], bool] | None = None) -> int:
    insts = fn.insts
    body = _top_level(insts, b, e)
    cand = {i for i in body if insts[i].kind is _OP and not insts[i].clobbers
            and movable(insts[i])}
    if not cand:
        return 0
    if regs.last is not None and regs.last[0] is insts:
        _, ud, defs_at = regs.last
    else:
        ud = regs.table(insts)
        defs_at = defaultdict(list)
        for i, got in enumerate(ud):
            for r in got[2]:
                defs_at[r].append(i)
        regs.last = (insts, ud, defs_at)
    # the first use of each register in the loop, and its first def there (program order)
    first_use: dict[object, int] = {}
    first_def: dict[object, int] = {}
    for i in range(b + 1, e):
        _, us, ds, _ = ud[i]
        for r in us:
            if r not in first_use:
                first_use[r] = i
        for r in ds:
            if r not in first_def:
                first_def[r] = i
    # flag pairs: (reader, its writer) within the body, by the rule DCE follows too
    # (kcc/isel/flags.py); a reader with no writer there pins.
    def flags(i: int) -> str:
        fl = ud[i][3]                           # known from an earlier loop, or asked now
        return regs.flags(insts[i], flags_of) if fl is None else fl

    pairs = flag_pairs(insts, flags, b + 1, e)
    changed = True
    while changed:
        changed = False
        for i in sorted(cand):
            if not _invariant(ud[i][1:3], b, e, cand, defs_at, first_use, first_def):
                cand.discard(i)
                changed = True
        for r, w in pairs:
            if w is None or r not in cand or w not in cand:
                for x in (r, w):
                    if x is not None and x in cand:
                        cand.discard(x)
                        changed = True
    if not cand:
        return 0
    # constants (no register read) move only for their moved readers
    readers: dict[object, list[int]] = defaultdict(list)
    for i in range(b + 1, e):
        for r in ud[i][1]:
            readers[r].append(i)
    # a flag reader or writer that moves with its partner is no constant even when it reads no
    # register (SETcc reads only RFLAGS): left behind, it would read flags its moved writer no
    # longer sets (a divisor's `cmp b, -1; sete` read the loop counter's compare instead)
    paired = {x for r, w in pairs if w is not None and r in cand for x in (r, w)}
    pre: list[Inst] = []
    rename: dict[VReg, VReg] = {}
    stay: set[int] = set()
    for i in sorted(cand):
        inst, us, ds, _ = ud[i]
        if us or i in paired or any(len(defs_at[r]) != 1 for r in ds):
            continue
        rs = [j for r in ds for j in readers.get(r, ())]
        if all(j in cand for j in rs):
            continue                          # every reader moves: move it too
        if alone is not None and alone(inst):
            continue                          # kept in a register across the loop
        stay.add(i)
        if any(j in cand for j in rs):
            clone_ops = []
            for o in inst.operands:
                if isinstance(o, RegOp) and o.is_def and isinstance(o.reg, VReg):
                    nv = rename.setdefault(o.reg, fn.new_vreg(o.reg.cls))
                    clone_ops.append(RegOp(nv, o.role, fixed=o.fixed, tied=o.tied))
                else:
                    clone_ops.append(o)
            pre.append(Inst(inst.op, clone_ops, inst.clobbers, inst.kind, inst.arg, inst.slot))
    cand -= stay
    for i in sorted(cand):
        pre.append(_renamed(insts[i], rename) if rename else insts[i])
    fn.insts = insts[:b] + pre + [x for i, x in enumerate(insts[b:], b) if i not in cand]
    return len(pre)


def _invariant(regs: tuple[list, list], b: int, e: int, cand: set[int], defs_at: dict,
               first_use: dict, first_def: dict) -> bool:
    """Whether the instruction reading and writing ``regs`` (its uses and defs) computes the
    same value in every iteration of loop [b, e] given that the instructions in cand move
    (see the module docstring)."""
    for r in regs[0]:
        if any(b < j < e and j not in cand for j in defs_at.get(r, ())):
            return False
    for r in regs[1]:
        if not isinstance(r, VReg) or any(j not in cand for j in defs_at[r]):
            return False
        u = first_use.get(r)
        if u is not None and u <= first_def[r]:
            return False                      # read before written: carried around the loop
    return True


def _renamed(inst: Inst, rename: dict[VReg, VReg]) -> Inst:
    """inst with its USE of a renamed (cloned constant) register pointed at the clone."""
    ops = []
    hit = False
    for o in inst.operands:
        if isinstance(o, RegOp) and o.reg in rename and not o.is_def:
            ops.append(RegOp(rename[o.reg], o.role, fixed=o.fixed, tied=o.tied))
            hit = True
        elif isinstance(o, Mem) and (o.base in rename or o.index in rename):
            ops.append(Mem(rename.get(o.base, o.base), rename.get(o.index, o.index), o.scale,
                           o.disp))
            hit = True
        else:
            ops.append(o)
    if not hit:
        return inst
    return Inst(inst.op, ops, inst.clobbers, inst.kind, inst.arg, inst.slot)
