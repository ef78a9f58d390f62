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
"""

from __future__ import annotations

from kcc.ir.mir import Inst, Kind

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
