"""Reroll a reduction loop whose term is c copies of one scalar computation on c adjacent
elements, so that kcc/passes/widen_reduce.py widens it (the reduction case of
kcc/passes/widen_reroll.py).

tinygrad upcasts a reduction by c: each iteration reads c adjacent elements (one c-lane
vector load, its lanes taken apart) and folds their c terms into the accumulator at once
(any_all's r_64_4: `acc = acc | (1.0 < v[0]) | (1.0 < v[1]) | (1.0 < v[2]) | (1.0 < v[3])`):

    for i in range(N):
        acc[a] = acc[a] OP (f(4i + 0) OP f(4i + 1) OP … OP f(4i + c-1))

widen_reduce.py widens a loop one term an iteration; this one reads a c-lane vector whose
lanes widening would have to take apart again (and the lane-split loop, widen_split.py, reads
them strided). When OP is associative and commutative on the accumulator's dtype (the integer
and bool OPs widen_reduce.py regroups: exact, docs/semantics.md) and the c terms are one
computation shifted by one element each, the loop folds the same terms as

    for t in range(N*c):
        acc[a] = acc[a] OP f(t)

(element t = c*i + o being term o of iteration i; the index of each place is `t + g(0)`, g
lane 0's index with the counter replaced by 0, exact modulo 2^bits as in widen_reroll.py),
which widen_reduce.py then widens over contiguous loads.

**Legality** (the loop is left alone otherwise): the loop's only effect is one accumulator
(widen_reduce.py's `find`: a REG element read by one LOAD, written by one STORE of
`OP(load, x)`); the OP tree of x (nodes of that OP read by nothing else) has c ≥ 2 leaves;
every leaf depends on the counter only through INDEX places `c*i + base + o` of loads
(widen_reroll.py's `_sig`), of buffers the loop does not store, and leaf o's graph is leaf 0's
with every place shifted by o. The rerolled loop is kept only when widen_reduce.py widens it.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, rebuild, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc
from kcc.passes.widen_reduce import ReduceLoop
from kcc.passes.widen_reroll import _Refuse, _sig, _walk, _zeroed
from kcc.passes.widen_split import REFUSED, split_lane_loads

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def _leaves(x: UOp, op: Ops, users: dict[UOp, int], inside: set[UOp]) -> list[UOp]:
    """The leaves of x's tree of op nodes (each read once, inside the loop), left to right."""
    out: list[UOp] = []
    stack = [x]
    while stack:
        n = stack.pop()
        if n.op is op and n.dtype == x.dtype and n in inside and len(n.src) == 2 \
                and (n is x or users.get(n, 0) == 1):
            stack.extend(reversed(n.src))
        else:
            out.append(n)
    return out


def _offset(lp: ReduceLoop, leaf: UOp) -> int | None:
    """The element offset of the first place leaf loads (in `_walk` order), or None."""
    for n in _walk(lp, leaf):
        if n.op is Ops.LOAD and len(n.src) == 1 and n.src[0].op is Ops.INDEX:
            a = lp.affine(n.src[0].src[1])
            return None if a is None else a[1]
    return None


def _no_accumulator(n: UOp) -> bool:
    """An AFTER ReduceLoop.find refuses in any loop: one of a buffer whose elements are not
    an integer or bool dtype (its accumulator LOAD's dtype is the buffer's)."""
    dt = n.dtype
    return n.op is Ops.AFTER and (dt is None or dt.is_weak or not (dt.is_int or dt.is_bool))


def reroll_reduction(r: UOp, end: UOp, region: list[UOp], dep: dict[UOp, frozenset[UOp]],
                     slot: int, shared: dict[str, Any] | None = None
                     ) -> tuple[UOp, ReduceLoop] | None:
    """(the rerolled loop's END, its ReduceLoop, found) or None (module docstring). shared:
    widen_split.py's split_lane_loads's, when another caller asked it about this loop."""
    n_iter = const_int(r.src[0])
    if n_iter is None:
        return None
    cut = split_lane_loads(r, end, region, _no_accumulator, shared)
    if cut == REFUSED:      # the split loop's ReduceLoop.find would fail
        return None
    e2, reg2, dep2 = (end, region, dep) if cut is None else cut[:3]
    lp = ReduceLoop(r, e2, reg2, dep2, slot)
    if not lp.find() or len(lp.accs) != 1 or e2.src[0] is not lp.accs[0].store:
        return None
    a = lp.accs[0]
    users: dict[UOp, int] = {}
    for n in reg2:
        for s in n.src:
            users[s] = users.get(s, 0) + 1
    leaves = _leaves(a.x, a.op, users, lp.inside)
    c = len(leaves)
    try:
        offs = [_offset(lp, x) for x in leaves]
        if c < 2 or None in offs:
            return None
        lo = min(o for o in offs if o is not None)
        shift = [o - lo for o in offs if o is not None]
        if sorted(shift) != list(range(c)):
            return None
        ids: dict[tuple, int] = {}
        sigs = [_sig(lp, c, x, o, ids) for x, o in zip(leaves, shift)]
        if any(s != sigs[0] for s in sigs[1:]):
            return None
    except _Refuse:
        return None
    first = leaves[shift.index(0)]
    t = UOp(Ops.RANGE, (strong_int(n_iter * c, r.dtype),) + r.src[1:], r.arg)
    zero: dict[UOp, UOp] = {}
    new: dict[UOp, UOp] = {}
    for x in _walk(lp, first):
        if x.op is Ops.INDEX:
            new[x] = x.replace(src=(x.src[0], UOp(Ops.ADD, (t, _zeroed(x.src[1], r, zero)))))
        else:
            new[x] = x.replace(src=tuple(new.get(s, s) for s in x.src))
    term = new.get(first, first)
    order = toposort([e2])
    e3 = rebuild(order, {r: t, a.x: term}).get(e2, e2)
    order3 = toposort([e3])
    dep3 = range_sets(order3)
    red = ReduceLoop(t, e3, [n for n in order3 if t in dep3[n]], dep3, slot)
    return (e3, red) if red.find() else None


def widen_reduction_rerolled(r: UOp, end: UOp, region: list[UOp],
                             dep: dict[UOp, frozenset[UOp]], slot: int,
                             desc: TargetDesc, shared: dict[str, Any] | None = None
                             ) -> tuple[UOp, int] | None:
    """(the loop rerolled and widened by widen_reduce.py, the REG slots its lane buffers
    took) or None when either step refuses (shared: as reroll_reduction's)."""
    got = reroll_reduction(r, end, region, dep, slot, shared)
    if got is None:
        return None
    e3, red = got
    out = red.widen(const_int(e3.src[1].src[0]), desc) if red.check() else None
    return None if out is None else (out, len(red.accs))
