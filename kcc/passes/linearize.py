"""Linearize: schedule a graph into the list of nodes the instruction selectors consume.

Contract of `linearize(sink) -> list[UOp]`:
- Every node of the graph appears exactly once, after all its srcs; SINK is last.
- An END with several ranges is first normalized to nested ENDs with one range each:
  `END(x, a, b)` → `END(END(x, inner), outer)`. A range whose RANGE node depends on the other
  (its bound or ordering srcs, transitively) is the inner one; otherwise the ranges nest by
  (axis_id, sub_id) of their arg, then by position in the graph (docs/semantics.md, "Loop
  order") — never by the order END lists them: `END(x, j, i)` with i axis 0 is
  `for i: for j: x`.
- Each RANGE opens a loop and its END closes it: the nodes between a RANGE and its END in the
  list run once per iteration, and loops are properly nested (never interleaved).
- A node depends on a range when it reaches the RANGE through its srcs without passing an END
  of that range. A node sits in the innermost loop of the ranges it depends on, so a node that
  depends on no range (constants, PARAMs, address bases, launch indices) is placed at the top,
  outside every loop (hoisted). A loop sits inside every loop its RANGE depends on and every
  loop its END lies in.
- RANGE ordering srcs and AFTER deps are srcs like any other, so they come first.
- The order is deterministic: within a block, ready items (a node, or a whole inner loop) are
  taken in the order of a depth-first toposort of the graph; with a target's `sched`, a long
  innermost loop body's chains are then interleaved (kcc/passes/interleave.py).
A graph that cannot be scheduled this way (a RANGE with no END or with two, a node that depends
on two loops that are not nested, an open range reaching the SINK) raises LinearizeError.
"""

from __future__ import annotations

import _heapq as heapq  # heapq's own C functions, without heapq.py (start-up)

from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
from kcc.ir.uop import UNKNOWN, UOp, _set_deps, toposort
from kcc.passes.interleave import MIN_ITEMS, interleave

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.passes.target import SchedModel


class LinearizeError(Exception):
    """A graph whose loops cannot be scheduled as properly nested blocks."""


def _depends(a: UOp, b: UOp) -> bool:
    """Whether node a reaches node b through its srcs."""
    return any(n is b for n in toposort([a]))


def nest_key(r: UOp, pos: dict[UOp, int]) -> tuple:
    """The order of loops not nested by a dependency: (axis_id, sub_id), then graph position."""
    ids = tuple(r.arg[:-1]) if isinstance(r.arg, tuple) else ()
    return (ids, pos.get(r, 0))


def split_end(ctx: dict[UOp, int], x: UOp) -> UOp | None:
    """END(body, r1, r2, …) → END(END(body, inner), outer), one range per END (ctx: the
    position of each node in the graph's toposort)."""
    rngs = list(dict.fromkeys(x.src[1:]))
    if len(x.src) < 3:
        return None
    # outermost first: a range some other listed range depends on is outer to it; among the
    # free ones the smallest nest key
    order: list[UOp] = []
    rest = sorted(rngs, key=lambda r: nest_key(r, ctx))
    while rest:
        outer = next(r for r in rest if not any(_depends(r, o) for o in rest if o is not r))
        order.append(outer)
        rest.remove(outer)
    body = x.src[0]
    for r in reversed(order):
        body = UOp(Ops.END, (body, r))
    return body


_ENDS = PatternMatcher([(UPat(Ops.END, name="x"), split_end)])
# Ops members bound once: a module global is read faster than a class attribute (an Enum's
# went through EnumType's __getattr__ hook before kcc.symbols), per node in range_sets
_RANGE, _END = Ops.RANGE, Ops.END


def normalize_ends(sink: UOp) -> UOp:
    """Rewrite every END with several ranges into nested single-range ENDs."""
    order = toposort([sink])
    for n in order:
        if n.op is _END and len(n.src) > 2:
            break
    else:
        return sink        # split_end declines every END: the rewrite would change nothing
    pos = {n: i for i, n in enumerate(order)}
    return graph_rewrite(sink, _ENDS, pos, bottom_up=False)


def range_sets(order: list[UOp]) -> dict[UOp, frozenset[UOp]]:
    """For every node, the RANGEs it depends on (stopping at ENDs of those ranges)."""
    dep: dict[UOp, frozenset[UOp]] = {}
    empty: frozenset[UOp] = frozenset()
    for n in order:
        # a function of n's subgraph, kept on n (UOp._deps): most passes ask again about a
        # graph that is mostly the one the pass before asked about
        s = n._deps
        if s is not UNKNOWN:
            dep[n] = s
            continue
        src = n.src
        # a node's set is most often one of its srcs' sets: share it (no new set per node)
        if not src:
            s = empty
        elif len(src) == 1:
            s = dep[src[0]]
        else:
            s = empty
            for x in src:
                d = dep[x]
                if d and d is not s and not d <= s:
                    s = d if s <= d else s | d
        op = n.op
        if op is _RANGE:
            s = s | {n}
        elif op is _END:
            r = src[1]
            if r in s or any(r in dep[x] for x in s):
                s = frozenset(x for x in s if x is not r and r not in dep[x])
        dep[n] = s
        _set_deps(n, s)
    return dep


def _loop_tree(order: list[UOp], dep: dict[UOp, frozenset[UOp]]
               ) -> tuple[dict[UOp, UOp], dict[UOp, list[UOp]]]:
    """(END of each range, chain of enclosing loops of each range, outermost first)."""
    end_of: dict[UOp, UOp] = {}
    for n in order:
        if n.op is Ops.END:
            r = n.src[1]
            if r in end_of:
                raise LinearizeError(f"RANGE {r.arg} is closed by two ENDs")
            end_of[r] = n
    ranges = [n for n in order if n.op is Ops.RANGE]
    for r in ranges:
        if r not in end_of:
            raise LinearizeError(f"RANGE {r.arg} has no END")
    anc: dict[UOp, set[UOp]] = {r: (set(dep[r]) - {r}) | set(dep[end_of[r]]) for r in ranges}
    changed = True
    while changed:   # transitive closure; ranges are few
        changed = False
        for r in ranges:
            extra = set().union(*(anc[a] for a in anc[r])) - anc[r] if anc[r] else set()
            if extra:
                anc[r] |= extra
                changed = True
    chains: dict[UOp, list[UOp]] = {}
    for r in ranges:
        if r in anc[r]:
            raise LinearizeError(f"RANGE {r.arg} is nested inside itself (a cycle of loops)")
        chain = sorted(anc[r], key=lambda a: len(anc[a]))
        for outer, inner in zip(chain, chain[1:]):
            if outer not in anc[inner]:
                raise LinearizeError(f"RANGE {r.arg} lies in loops {outer.arg} and {inner.arg}, "
                                     "which are not nested")
        chains[r] = chain + [r]
    return end_of, chains


def linearize(sink: UOp, sched: SchedModel | None = None) -> list[UOp]:
    """The schedule of the graph under sink (see the module docstring for the contract).
    sched (a CPU target's TargetDesc.sched; None: none): a long loop body with no inner loop
    has its independent chains interleaved (kcc/passes/interleave.py) while its live values
    fit the model's registers."""
    sink = normalize_ends(sink)
    order = toposort([sink])
    pos = {n: i for i, n in enumerate(order)}
    dep = range_sets(order)
    if dep[sink]:
        raise LinearizeError("the SINK depends on a RANGE that no END closes")
    end_of, chains = _loop_tree(order, dep)
    # the loop (a RANGE) each node is scheduled in; None is the top level
    home: dict[UOp, UOp | None] = {}
    for n in order:
        if n.op is Ops.END:
            home[n] = n.src[1]
            continue
        if not dep[n]:
            home[n] = None
            continue
        inner = max(dep[n], key=lambda r: len(chains[r]))
        if not dep[n] <= set(chains[inner]):
            raise LinearizeError(f"{n.op.name} depends on loops that are not nested")
        home[n] = inner
    def item_in(n: UOp, block: UOp | None) -> UOp | None:
        """The item of block that holds n (n itself, or the child loop around it), or None."""
        h = home[n]
        if h is block:
            return n
        if h is None:
            return None
        chain = chains[h]
        k = 0 if block is None else len(chains[block])
        if len(chain) > k and (block is None or chain[k - 1] is block):
            return chain[k]
        return None   # n lies outside block: it is scheduled before the block

    def order_block(block: UOp | None) -> list[UOp]:
        """The items of block in a deterministic topological order (a RANGE other than the
        block's own stands for its whole loop)."""
        items: dict[UOp, None] = {}
        for n in members.get(block, []):
            items[n] = None
        for r, ch in chains.items():
            if (ch[-2] if len(ch) > 1 else None) is block:
                items[r] = None
        preds: dict[UOp, set[UOp]] = {it: set() for it in items}
        succs: dict[UOp, list[UOp]] = {it: [] for it in items}
        for n in within.get(block, ()):
            it = item_in(n, block)
            if it is None:
                continue
            for s in n.src:
                si = item_in(s, block)
                if si is not None and si is not it and si not in preds[it]:
                    preds[it].add(si)
                    succs[si].append(it)
        ready = [(pos[it], it) for it in items if not preds[it]]
        heapq.heapify(ready)
        res: list[UOp] = []
        while ready:
            _, it = heapq.heappop(ready)
            res.append(it)
            for u in succs[it]:
                preds[u].discard(it)
                if not preds[u]:
                    heapq.heappush(ready, (pos[u], u))
        if len(res) != len(items):
            raise LinearizeError("a cycle between loops and nodes; the graph cannot be scheduled")
        if sched is not None and block is not None and len(res) >= MIN_ITEMS \
                and not any(it.op is Ops.RANGE and it is not block for it in res):
            return interleave(res, succs, pos, sched) or res
        return res

    members: dict[UOp | None, list[UOp]] = {}
    # the nodes each block holds, itself or in a loop nested in it (in order): the only ones
    # item_in places in the block, so order_block need not walk the whole graph per block
    within: dict[UOp | None, list[UOp]] = {}
    top = within[None] = []
    for n in order:
        h = home[n]
        members.setdefault(h, []).append(n)
        top.append(n)
        if h is not None:
            for b in chains[h]:
                within.setdefault(b, []).append(n)
    out: list[UOp] = []
    # iterative emission (explicit stack of (block, items, next index))
    stack: list[tuple[UOp | None, list[UOp], int]] = [(None, order_block(None), 0)]
    while stack:
        block, items, i = stack.pop()
        if i == len(items):
            continue
        stack.append((block, items, i + 1))
        it = items[i]
        if it.op is Ops.RANGE and it is not block:
            stack.append((it, order_block(it), 0))
        else:
            out.append(it)
    return out


def loop_structure(lin: list[UOp]) -> list[tuple[UOp, int, int]]:
    """(RANGE, index of the RANGE, index of its END) for every loop of a linearized list."""
    at = {n: i for i, n in enumerate(lin)}
    res = []
    for i, n in enumerate(lin):
        if n.op is Ops.END:
            r = n.src[1]
            res.append((r, at[r], i))
    return sorted(res, key=lambda t: t[1])
