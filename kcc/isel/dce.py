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
- the instruction after it does not read the flags (a flag-setting op whose result register is
  dead may still be there for its flags): `reads_flags(inst)` tells for the target.

Removing an instruction lowers its operands' use counts, so chains of dead values go in one
backwards sweep repeated to a fixed point. Linear in the function's size per sweep.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from kcc.ir.mir import Inst, Kind, MFunction, VReg


def _uses(fn: MFunction) -> Counter:
    n: Counter = Counter()
    for inst in fn.insts:
        for r in inst.uses():
            if isinstance(r, VReg):
                n[r] += 1
    for r, _ in fn.params:
        n[r] += 0
    return n


def eliminate_dead(fn: MFunction, writes_memory: Callable[[Inst], bool],
                   reads_flags: Callable[[Inst], bool]) -> int:
    """Remove dead instructions from fn in place; returns how many went."""
    uses = _uses(fn)
    removed = 0
    changed = True
    while changed:
        changed = False
        keep: list[Inst] = []
        nxt: Inst | None = None
        for inst in reversed(fn.insts):
            defs = inst.defs()
            own = Counter(r for r in inst.uses() if r in defs)   # a read-modify-write's read
            dead = (inst.kind is Kind.OP and not inst.clobbers and defs
                    and all(isinstance(r, VReg) and uses[r] == own[r] for r in defs)
                    and not writes_memory(inst) and not (nxt is not None and reads_flags(nxt)))
            if dead:
                for r in inst.uses():
                    if isinstance(r, VReg):
                        uses[r] -= 1
                removed += 1
                changed = True
                continue
            keep.append(inst)
            nxt = inst
        fn.insts = keep[::-1]
    return removed
