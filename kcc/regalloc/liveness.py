"""Liveness by backward data flow over the instruction-level control-flow graph, and live
intervals in the linear order.

Positions: instruction ``i`` reads its operands at ``2*i`` and writes its results at
``2*i + 1``.  A variable's interval is the hull of every position where it is live, so a value
live into a loop (defined before and used inside, or carried around the back edge) is live at
the ``LOOP_END`` and therefore covers the whole loop; a value defined in a loop and used after
it covers the loop's tail and the code up to its last use.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field


@dataclass
class Interval:
    """The live hull ``[start, end]`` of variable ``var`` and its use positions (sorted)."""

    var: int
    start: int
    end: int
    uses: list[int] = field(default_factory=list)

    def next_use(self, pos: int) -> int:
        """The first use at or after ``pos`` (a huge number when there is none)."""
        k = bisect_left(self.uses, pos)
        return self.uses[k] if k < len(self.uses) else 1 << 60


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def live_sets(uses: list[int], defs: list[int],
              succ: list[list[int]]) -> tuple[list[int], list[int]]:
    """Live-in and live-out bit sets per instruction.

    ``uses[i]``/``defs[i]`` are bit sets of the variables instruction ``i`` reads/writes and
    ``succ[i]`` its successors (an index ``>= len(uses)`` is the function exit).  Iterates to
    the fixed point in reverse order, which converges in (loop depth + 2) sweeps.
    """
    n = len(uses)
    live_in = [0] * n
    live_out = [0] * n
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            out = 0
            for s in succ[i]:
                if s < n:
                    out |= live_in[s]
            new_in = uses[i] | (out & ~defs[i])
            if out != live_out[i] or new_in != live_in[i]:
                live_out[i] = out
                live_in[i] = new_in
                changed = True
    return live_in, live_out


def intervals(uses: list[int], defs: list[int], succ: list[list[int]],
              nvars: int) -> tuple[list[Interval | None], int]:
    """Live intervals of variables ``0..nvars-1`` (``None`` for a variable never mentioned).

    Also returns the bit set of variables live into instruction 0 (used before any
    definition on some path).
    """
    live_in, live_out = live_sets(uses, defs, succ)
    lo = [-1] * nvars
    hi = [-1] * nvars
    use_pos: list[list[int]] = [[] for _ in range(nvars)]

    def cover(v: int, p: int) -> None:
        if lo[v] < 0 or p < lo[v]:
            lo[v] = p
        if p > hi[v]:
            hi[v] = p

    for i in range(len(uses)):
        for v in _bits(live_in[i]):
            cover(v, 2 * i)
        for v in _bits(live_out[i] | defs[i]):
            cover(v, 2 * i + 1)
        for v in _bits(uses[i]):
            use_pos[v].append(2 * i)
    out: list[Interval | None] = []
    for v in range(nvars):
        out.append(Interval(v, lo[v], hi[v], use_pos[v]) if lo[v] >= 0 else None)
    return out, (live_in[0] if live_in else 0)
