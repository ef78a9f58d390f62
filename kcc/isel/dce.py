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
- no flag reader reads the flags it writes (a flag-setting op whose result register is dead
  may still be there for its flags): the reader/writer pairs of kcc/isel/flags.py, the rule
  loop-invariant code motion follows too, from the target's `flags_of(inst)` ("r", "w", "rw"
  or ""). (Before, only the next instruction was asked whether it reads flags, so a dead
  `sub` with a `mov` between it and its `cmove` went, and the `cmove` read older flags.)

Removing an instruction lowers its operands' use counts, so chains of dead values go in one
backwards sweep repeated to a fixed point. Linear in the function's size per sweep.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from kcc.ir.mir import Inst, Kind, MFunction, VReg
from kcc.isel.flags import flag_pairs


def eliminate_dead(fn: MFunction, writes_memory: Callable[[Inst], bool],
                   flags_of: Callable[[Inst], str],
                   known: dict[int, tuple[Inst, list, list]] | None = None) -> int:
    """Remove dead instructions from fn in place; returns how many went. ``known``, when
    given, receives (inst, uses(), defs()) of every instruction by id (the instructions stay
    unchanged: the next pass may read them there instead of asking again)."""
    reads = {id(i): i.uses() for i in fn.insts}
    writes = {id(i): i.defs() for i in fn.insts}
    if known is not None:
        for i in fn.insts:
            known[id(i)] = (i, reads[id(i)], writes[id(i)])
    uses: Counter = Counter(r for rs in reads.values() for r in rs if isinstance(r, VReg))
    # the writers some flag reader reads (pairs do not change as dead instructions go: a
    # writer no reader is paired with has no reader before the next writer or boundary)
    insts = fn.insts
    read = {id(insts[w]) for _, w in flag_pairs(insts, lambda i: flags_of(insts[i]))
            if w is not None}
    removed = 0
    changed = True
    OP = Kind.OP              # (bound once: an Enum class attribute is a slow lookup)
    while changed:
        changed = False
        keep: list[Inst] = []
        for inst in reversed(fn.insts):
            defs, srcs = writes[id(inst)], reads[id(inst)]
            dead = (inst.kind is OP and not inst.clobbers and bool(defs)
                    and id(inst) not in read
                    and all(isinstance(r, VReg) and uses[r] == srcs.count(r) for r in defs)
                    and not writes_memory(inst))
            if dead:
                for r in srcs:
                    if isinstance(r, VReg):
                        uses[r] -= 1
                removed += 1
                changed = True
                continue
            keep.append(inst)
        fn.insts = keep[::-1]
    return removed
