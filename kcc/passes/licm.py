"""Loop-invariant address bases: integer sums regrouped so their invariant part is one node.

Linearize already places every node in the innermost loop of the ranges it depends on, so a
node that is invariant in a loop is computed outside it. A sum is one node per ADD, though,
and producers associate it as they build it: tinygrad writes an index as
`((x*56 + y*4) + r*3136) + (gidx*401408 + z*100352)` with the reduce range `r` in the middle,
so every ADD depends on `r` and the whole sum is recomputed in the inner loop. This pass
flattens each tree of integer ADDs (through inner ADDs of the same dtype that nothing else
reads) into its terms, orders them by how many loops they depend on (fewest first, keeping
the producer's order among equals) with constant terms last, and rebuilds the sum from the
left: the terms of the outer loops form an ADD node of their own (hoisted by linearize), the
inner terms are added to it one by one, and a constant addend ends up outermost, where a
target folds it into an address displacement (`[base + index*4 + disp]`).

Integer ADD wraps (docs/semantics.md), so it is associative and commutative and the value is
unchanged in every dtype. Floats are never regrouped (their addition is not associative).
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.simplify import keep_params
from kcc.passes.target import TargetDesc
from kcc.record import Counts  # collections.Counter's counting, without collections


def _is_int_add(u: UOp) -> bool:
    return u.op is Ops.ADD and u.dtype is not None and u.dtype.is_int and not u.shape


def _nested_sums(order: list[UOp], deps: dict[UOp, frozenset[UOp]]) -> bool:
    """Whether an integer ADD in a loop reads an integer ADD of its dtype. Sufficient to
    plan nothing when not: a sum is regrouped only when it has more than two terms, and
    `_terms` flattens no ADD but such a src (an ADD has two srcs)."""
    return any(_is_int_add(u) and deps[u]
               and any(_is_int_add(s) and s.dtype == u.dtype for s in u.src) for u in order)


def hoist_sums(sink: UOp, target: TargetDesc) -> UOp:
    """Regroup every integer sum by the loops its terms depend on (see the module docstring)."""
    order = toposort([sink])
    deps = range_sets(order)
    if not _nested_sums(order, deps):
        return sink                 # (most kernels: no use counts, no plan)
    uses: Counts = Counts([s for u in order for s in u.src])
    # An ADD that its tree's root flattens (its one reader is an integer ADD of its dtype) is
    # not regrouped on its own: each root flattens its whole tree once, so a chain of n ADDs
    # costs n, not n^2 (it made no difference: when the root's terms are already in order,
    # so are the terms of every ADD inside it, and otherwise the root reads none of them).
    inner = {s for u in order if _is_int_add(u) for s in u.src
             if _is_int_add(s) and s.dtype == u.dtype and uses[s] == 1}
    # which sums regroup, and in what order of their terms (read from the graph as it is: a
    # decision never depends on another's rebuild), before rebuilding anything: most graphs
    # have none, and then nothing is rebuilt
    plan: dict[UOp, tuple[list[UOp], list[int]]] = {}
    for u in order:
        if _is_int_add(u) and deps[u] and u not in inner:
            terms = _terms(u, uses)
            if len(terms) > 2:
                ranked = sorted(range(len(terms)),
                                key=lambda k: (const_int(terms[k]) is not None,
                                               len(deps[terms[k]]), k))
                if ranked != list(range(len(terms))):
                    plan[u] = (terms, ranked)
    if not plan:
        return sink
    new: dict[UOp, UOp] = {}
    for u in order:
        got = plan.get(u)
        if got is not None:
            terms, ranked = got
            acc = new[terms[ranked[0]]]
            for k in ranked[1:]:
                acc = UOp(Ops.ADD, (acc, new[terms[k]]))
            new[u] = acc
            continue
        src = tuple([new[s] for s in u.src])
        new[u] = u if src == u.src else u.replace(src=src)
    return keep_params(sink, new[sink])


def _terms(u: UOp, uses: Counts) -> list[UOp]:
    """The addends of the ADD tree under u, left to right: an inner ADD of the same dtype is
    flattened when u's tree is its only reader."""
    out: list[UOp] = []
    stack = [u]
    while stack:
        x = stack.pop()
        if x is u or (_is_int_add(x) and x.dtype == u.dtype and uses[x] == 1):
            stack.extend(reversed(x.src))
        else:
            out.append(x)
    return out
