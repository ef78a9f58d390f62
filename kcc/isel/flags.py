"""Which flag writer each flag reader reads: the one rule that dead-instruction elimination
(kcc/isel/dce.py) and loop-invariant code motion (kcc/isel/licm.py) both follow.

A *reader* is a conditional branch (BRANCH, LOOP_END) or an ordinary OP whose target flag use
(``flags(i)``: "r", "w", "rw" or "") has an "r" (x86: Jcc, SETcc, CMOVcc, ADC/SBB). Its
*writer* is the nearest earlier OP whose use has a "w", with only OPs in between; a label, a
loop boundary, a jump or a return before any writer means the flags come from elsewhere
(None). Selection never carries flags across a label: the flags a reader reads are set in its
own straight-line run, so the pair is exact there. DCE keeps every writer some reader is
paired with (its result may be dead: it is there for its flags), LICM moves a reader only
with its writer. Linear in the code.

`drop_repeated_compares` uses the same pairing after selection: a flag-only compare whose
writer is an identical compare (operands unchanged in between) is redundant.
"""

from __future__ import annotations

from kcc.ir.mir import Imm, Inst, Kind, MFunction, RegOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence  # (no collections at start-up)

# members bound once (a module global is read faster than a class attribute)
_OP = Kind.OP
_BRANCHES = (Kind.BRANCH, Kind.LOOP_END)


def flag_pairs(insts: Sequence[Inst], flags: Callable[[int], str], lo: int = 0,
               hi: int | None = None) -> list[tuple[int, int | None]]:
    """(reader, writer) for every flag reader among ``insts[lo:hi]`` (indices into insts),
    by the module's rule; ``flags(i)`` is asked only for the OPs."""
    pairs: list[tuple[int, int | None]] = []
    writer: int | None = None
    for i in range(lo, len(insts) if hi is None else hi):
        inst = insts[i]
        op = inst.kind is _OP
        fl = flags(i) if op else ""
        if inst.kind in _BRANCHES or "r" in fl:
            pairs.append((i, writer))
        if not op:
            writer = None
        elif "w" in fl:
            writer = i
    return pairs


def drop_repeated_compares(fn: MFunction, flags_of: Callable[[Inst], str]) -> int:
    """Remove, in place, each flag-only compare (an OP that defines nothing, reads no flags,
    touches no memory and writes flags: x86's CMP and TEST) that repeats the flag writer its
    readers would otherwise read: the same form, operands and arg, in the same straight-line
    run, with none of its registers written in between, so the flags are the ones already
    set (selection compares again for each reader: a gate's SETcc or CMOVcc mask and the
    CMOVcc of its safe index both CMP the same operands). Returns how many went."""
    out: list[Inst] = []
    last: Inst | None = None            # the current flag writer, when it is such a compare
    written: set = set()                # registers defined since `last`
    dropped = 0
    for inst in fn.insts:
        if inst.kind is not _OP:
            last = None
            out.append(inst)
            continue
        fl = flags_of(inst)
        if "w" in fl:
            if _flag_only(inst, fl):
                if last is not None and inst.op == last.op and inst.arg == last.arg \
                        and inst.operands == last.operands and not written.intersection(
                            o.reg for o in inst.operands if isinstance(o, RegOp)):
                    dropped += 1
                    continue
                last, written = inst, set()
            else:
                last = None
        elif last is not None:
            written.update(o.reg for o in inst.operands
                           if isinstance(o, RegOp) and o.is_def)
            written.update(inst.clobbers)
        out.append(inst)
    if dropped:
        fn.insts[:] = out
    return dropped


def _flag_only(inst: Inst, fl: str) -> bool:
    """Does inst only write flags (no register def, no flag read, no memory operand, no
    clobber)? Then two of them with equal operands set the same flags."""
    return "r" not in fl and not inst.clobbers and all(
        isinstance(o, Imm) or (isinstance(o, RegOp) and not o.is_def) for o in inst.operands)
