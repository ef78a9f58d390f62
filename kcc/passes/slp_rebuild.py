"""Rebuilding a graph after slp (kcc/passes/slp.py) packed its lanes: every redirected node
replaced by its vector form and every lane read back from its vector, in one walk that
enters each node once. Packing can make a cycle (a lane read back from a vector that itself
reads that lane: a prefix sum's lane j is lane j-1 plus something), which the walk detects
and `rebuild_acyclic` undoes by dropping the lanes on it."""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.ir.uop import UOp

# nodes whose srcs are a list of effects: merged STOREs leave one src where there were several
_EFFECT_LISTS = frozenset({Ops.GROUP, Ops.AFTER, Ops.SINK})


class Cycle(Exception):
    """Rebuilding would make a cycle: a lane read back from a vector that itself reads that
    lane (lane j of a prefix sum is lane j-1 plus something), or a store group that reads a
    load after another group that reads one after it. `nodes` is the cycle, in walk order."""

    def __init__(self, nodes: list[UOp]) -> None:
        super().__init__("slp would make a cycle")
        self.nodes = nodes


def rebuild(sink: UOp, redirect: dict[UOp, UOp],
             lanes: dict[UOp, tuple[UOp, int]] | None = None) -> UOp:
    """sink with every node in redirect replaced (transitively) by its target, rebuilt; a
    node of lanes (and not of redirect) becomes its lane `INDEX(vec, j)`, built only when the
    walk reaches it. Each node is entered once (a node entered again before it is done is a
    cycle of the new graph: `Cycle`), so the walk is linear in the nodes."""
    memo: dict[UOp, UOp] = {}
    to: dict[UOp, UOp | None] = {}          # an entered node → its replacement (None: none)
    path: list[UOp] = []                     # the entered nodes not done yet, in entry order
    entered: set[UOp] = set()
    stack: list[tuple[UOp, bool]] = [(sink, False)]
    lanes = lanes or {}
    while stack:
        n, ready = stack.pop()
        if ready:
            # every node entered after n is done (their frames were above n's): n is the last
            path.pop()
            entered.discard(n)
            r = to[n]
            if r is not None:
                memo[n] = memo[r]
                continue
            new = tuple([memo[s] for s in n.src])
            if n.op in _EFFECT_LISTS:        # merged STOREs: one src where there were several
                new = tuple(dict.fromkeys(new))
            memo[n] = n if new == n.src else n.replace(src=new)
            continue
        if n in memo:
            continue
        if n in entered:
            raise Cycle(path[path.index(n):])
        entered.add(n)
        path.append(n)
        stack.append((n, True))
        r = redirect.get(n)
        if r is None and n in lanes:
            vec, j = lanes[n]
            r = UOp(Ops.INDEX, (vec, UOp.const(j)))
        to[n] = r
        if r is not None:
            if r not in memo:
                stack.append((r, False))
        else:
            stack.extend([(s, False) for s in n.src if s not in memo])
    return memo[sink]


def rebuild_acyclic(sink: UOp, redirect: dict[UOp, UOp],
                     lanes: dict[UOp, tuple[UOp, int]]) -> UOp:
    """rebuild, giving up reading lanes back where that makes a cycle: the lanes of every
    vector on a cycle are dropped and the walk is retried (a few times: each retry is a walk
    of the graph), then no lane is read back, then nothing is packed (the graph as it was)."""
    lanes = dict(lanes)
    for _ in range(4):
        try:
            return rebuild(sink, redirect, lanes)
        except Cycle as c:
            vecs = {lanes[n][0] for n in c.nodes if n in lanes and n not in redirect}
            if not vecs:
                break
            lanes = {n: vj for n, vj in lanes.items() if vj[0] not in vecs}
    try:
        return rebuild(sink, redirect)
    except Cycle:
        return sink
