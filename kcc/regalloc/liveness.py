"""Liveness over the structured control-flow graph, and live intervals in the linear order,
in time linear in the code (plus set work proportional to the live sets at branches and at
the instructions whose live-out sets a caller keeps).

Positions: instruction ``i`` reads its operands at ``2*i`` and writes its results at
``2*i + 1``.  A variable's interval is the hull of every position where it is live, so a value
live into a loop (defined before and used inside, or carried around the back edge) covers the
whole loop; a value defined in a loop and used after it covers the loop's tail and the code up
to its last use.

Why two backward passes suffice (no iteration to a fixed point): the only backward edges are
the ``LOOP_END`` back edges of properly nested loops, so the graph is reducible.  One backward
pass that ignores the back edges gives the exact live-in set of every loop header (a value is
live into a header along some path; cut that path at its last visit of the header and what is
left reaches the use without using this loop's back edge; inner loops' back edges the same way
— Brandner et al., "Computing Liveness Sets for SSA-Form Programs", INRIA RR-7503, §4).  With
those sets known, a second backward pass evaluates every instruction's equation once with all
inputs final: the exact live-out sets, needed only by copy coalescing.

The hull needs no per-instruction sets at all: in a well-formed function (nothing used before
its definition) a variable is live only between its first and last mention in the linear order,
except that a variable live into a loop header is live over the whole loop.  So the interval is
the hull of the variable's own def/use positions widened by each loop it is live into.
"""

from __future__ import annotations

from _bisect import bisect_left  # bisect's own, without bisect.py (start-up)

from kcc.ir.mir import Mem, RegOp, Role, VReg
from kcc.record import field, record

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable, Container, Iterable

_DEF, _USE = Role.DEF, Role.USE     # (globals: read faster than class attributes)


@record
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


def vreg_lists(w: Any) -> tuple[list[Any], list[Any]]:
    """The virtual registers instruction ``w`` reads and writes, each list in operand order
    without repeats (``Inst.uses``/``Inst.defs`` restricted to VRegs), in one operand walk."""
    us: list[Any] = []
    ds: list[Any] = []
    for o in w.operands:
        if isinstance(o, RegOp):
            r = o.reg
            if isinstance(r, VReg):
                role = o.role
                if role is not _DEF and r not in us:      # USE, DEF | USE (VRegs compare
                    us.append(r)                           # by identity: eq=False)
                if role is not _USE and r not in ds:
                    ds.append(r)
        elif isinstance(o, Mem):
            r = o.base
            if isinstance(r, VReg) and r not in us:
                us.append(r)
            r = o.index
            if isinstance(r, VReg) and r not in us:
                us.append(r)
    return us, ds


def number_vars(work: list[Any], regs: Callable[[Any], tuple[list[Any], list[Any]]] = vreg_lists
                ) -> tuple[list[Any], dict[int, int], list[list[int]], list[list[int]]]:
    """Number the virtual registers of a linear instruction list (those used, in order of first
    use, then those only defined): the variables by number, number by id, and each
    instruction's used and defined numbers without repeats. Only VReg operands count
    (pre-coloured registers are not variables). ``regs(w)`` gives an instruction's used and
    defined VRegs (``vreg_lists``; the allocator passes a cached one)."""
    index: dict[int, int] = {}
    var: list[Any] = []
    lists = [regs(w) for w in work]
    get = index.get

    def numbered(regs_of: Iterable[list[Any]]) -> list[list[int]]:
        """Each instruction's registers as numbers, numbering the ones not seen yet."""
        out: list[list[int]] = []
        for rs in regs_of:
            row = []
            for r in rs:
                k = get(id(r))
                if k is None:
                    k = index[id(r)] = len(var)
                    var.append(r)
                row.append(k)
            out.append(row)
        return out
    uses = numbered(us for us, _ in lists)      # (all uses first: the numbering's order)
    defs = numbered(ds for _, ds in lists)
    return var, index, uses, defs


def bits(x: int) -> list[int]:
    """The indices of the set bits of ``x``, lowest first."""
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out


def _backward(uses: list[list[int]], defs: list[list[int]], succ: list[list[int]],
              header_in: dict[int, frozenset[int]] | None, keep: Container[int]
              ) -> tuple[dict[int, frozenset[int]], frozenset[int], dict[int, frozenset[int]]]:
    """One backward pass: live-in sets of branch targets, live-in of instruction 0, and the
    live-out set of every instruction in ``keep``.  Back edges contribute ``header_in``
    (nothing when it is ``None``).

    The live set is one Python set updated in place (a straight-line instruction costs its
    operands, not the live set); only the sets kept (branch targets, ``keep``) are copied.
    (Big-integer bit sets would cost the highest variable number per instruction: quadratic
    in a 200,000-instruction chain, in time and, kept per instruction, in memory.)"""
    n = len(uses)
    targets = {t for i, ss in enumerate(succ) for t in ss if t != i + 1 and t < n}
    at: dict[int, frozenset[int]] = {}
    outs: dict[int, frozenset[int]] = {}
    live: set[int] = set()            # live-in of instruction i + 1
    for i in range(n - 1, -1, -1):
        ss = succ[i]
        if len(ss) == 1 and ss[0] == i + 1:
            out = live                     # straight line: live-out is the next live-in
        else:
            out = set()
            for t in ss:
                if t == i + 1:
                    out |= live
                elif t > i:
                    if t < n:
                        out |= at[t]
                elif header_in is not None:
                    out |= header_in[t]
        if i in keep:
            outs[i] = frozenset(out)
        out.difference_update(defs[i])
        out.update(uses[i])
        live = out
        if i in targets:
            at[i] = frozenset(live)
    return at, frozenset(live), outs


def header_live_in(uses: list[list[int]], defs: list[list[int]], succ: list[list[int]],
                   headers: list[int]) -> tuple[dict[int, frozenset[int]], frozenset[int]]:
    """The exact live-in set of each loop header (``LOOP_BEGIN`` index) and of instruction 0.

    ``uses[i]``/``defs[i]`` list the variables instruction ``i`` reads/writes and ``succ[i]``
    its successors (an index ``>= len(uses)`` is the function exit).
    """
    at, entry, _ = _backward(uses, defs, succ, None, ())
    return {b: at.get(b, frozenset()) for b in headers}, entry


def live_out_sets(uses: list[list[int]], defs: list[list[int]], succ: list[list[int]],
                  header_in: dict[int, frozenset[int]], keep: Container[int] | None = None
                  ) -> dict[int, frozenset[int]]:
    """The exact live-out set of every instruction in ``keep`` (default: all), given the
    headers' live-in sets."""
    return _backward(uses, defs, succ, header_in,
                     range(len(uses)) if keep is None else keep)[2]


def live_sets(uses: list[list[int]], defs: list[list[int]], succ: list[list[int]],
              loops: list[tuple[int, int]]) -> tuple[list[frozenset[int]], list[frozenset[int]]]:
    """Live-in and live-out sets of every instruction (two passes, see the module doc)."""
    header_in, _ = header_live_in(uses, defs, succ, [b for b, _ in loops])
    outs = live_out_sets(uses, defs, succ, header_in)
    ins = [frozenset(uses[i]) | (outs[i] - frozenset(defs[i])) for i in range(len(uses))]
    return ins, [outs[i] for i in range(len(uses))]


def intervals(uses: list[list[int]], defs: list[list[int]], succ: list[list[int]],
              loops: list[tuple[int, int]], nvars: int
              ) -> tuple[list[Interval | None], frozenset[int], dict[int, frozenset[int]]]:
    """Live intervals of variables ``0..nvars-1`` (``None`` for a variable never mentioned).

    ``uses[i]``/``defs[i]`` list the variables instruction ``i`` reads/writes (each once),
    ``loops`` the (``LOOP_BEGIN``, ``LOOP_END``) index pairs.  Also returns the set of
    variables live into instruction 0 (used before any definition on some path) and the
    live-in set of every loop header.
    """
    header_in, entry = header_live_in(uses, defs, succ, [b for b, _ in loops])
    lo = [-1] * nvars
    hi = [-1] * nvars
    use_pos: list[list[int]] = [[] for _ in range(nvars)]
    p = 0
    for us, ds in zip(uses, defs):
        for v in us:
            use_pos[v].append(p)
            if lo[v] < 0:
                lo[v] = p
            hi[v] = p
        if ds:
            q = p + 1
            for v in ds:
                if lo[v] < 0:
                    lo[v] = q
                hi[v] = q
        p += 2
    for b, e in loops:
        for v in header_in[b]:
            if lo[v] > 2 * b:
                lo[v] = 2 * b
            if hi[v] < 2 * e + 1:
                hi[v] = 2 * e + 1
    out: list[Interval | None] = [
        Interval(v, lo[v], hi[v], use_pos[v]) if lo[v] >= 0 else None for v in range(nvars)]
    return out, entry, header_in
