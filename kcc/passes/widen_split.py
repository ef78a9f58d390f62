"""Small vector loads taken apart lane by lane, split into scalar loads so that a loop of
scalars can be widened across iterations (kcc/passes/widen_lanes.py).

tinygrad's pooling windows read each window row as one short vector and take its lanes
apart at once (maxpool's 2x2 window: two 2-lane loads per output element, the rows 8
elements apart, each iteration's window 2 elements right of the one before):

    for i in range(N):
        v = LOAD(SHRINK(a, 2*i + base, 2))
        STORE(INDEX(out, i + o), MAX(INDEX(v, 0), INDEX(v, 1)))

The loop's store is one element, its loads two, so neither widening applies: kcc/passes/
widen.py wants every vector of one width, widen_lanes.py a scalar body, and the loop ran
one window per iteration. Here every lane read `INDEX(LOAD(SHRINK(a, e, W)), c)` (a
constant c < W) of a load read only so becomes the scalar load `LOAD(INDEX(a, e + c))`:
the same element of the same buffer, so the same bits. The loop is then a loop of scalars
whose loads advance by a constant stride (2 above), which widen_lanes.py widens with
widen_stride.py's contiguous loads and one lane permutation per lane offset: k windows an
iteration.

The split is only a candidate: widen.py keeps it only when widen_lanes.py widens the split
loop, else the loop stays as it was.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, substitute_closed, toposort
from kcc.passes.lane_loads import read_alone
from kcc.passes.linearize import range_sets

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator
    Split = tuple[UOp, list[UOp], dict[UOp, frozenset[UOp]], dict[UOp, tuple[int, int]]]


# what split_lane_loads answers when `refuse` refuses the split loop (falsy, unlike a Split)
REFUSED: tuple[()] = ()


def split_lane_loads(r: UOp, end: UOp, region: list[UOp],
                     refuse: Callable[[UOp], bool] | None = None,
                     shared: dict[str, Any] | None = None) -> Split | tuple[()] | None:
    """(the loop's END with its lane-read vector loads split into scalar loads, the new
    region, the new range sets, each new place's (lane, vector width)) or None when no load
    of the region is of the module docstring's form. r: the loop's RANGE; region: the nodes
    that depend on it, in order. The widths let widen_stride.py load a strided place from
    its vector's start (its `window`): the lanes of one vector then share their loads.
    refuse: a test of a node the caller's check of the split loop fails on, whatever the
    rest of the loop; REFUSED, the split not made, when the split loop would keep such a
    node as it is (`_kept`: the split is a substitution, sort and range sets of the whole
    kernel, ~5% of compiling tinygrad's kernels, where every candidate was refused so).
    shared: a dict the callers asking about one loop share (widen.py's lane split, then
    widen_reroll_reduce.py's): the loads of the form and the nodes the split keeps are found
    once (tinygrad's float reductions: both refused, each walk ~50 us)."""
    if shared is not None and "split" in shared:
        split, inside = shared["split"], shared["inside"]
    else:
        split, inside = _candidates(region)
        if shared is not None:
            shared["split"], shared["inside"] = split, inside
    if not split:
        return None
    if refuse is not None:
        kept: Iterable[UOp] | None = None if shared is None else shared.get("kept")
        if kept is None:
            kept = _kept(r, end, region, inside, {x for _, lanes in split for x in lanes})
            if shared is not None:      # (all of them: the next caller's test is another)
                kept = shared["kept"] = list(kept)
        if any(refuse(n) for n in kept):
            return REFUSED
    repl: dict[UOp, UOp] = {}
    windows: dict[UOp, tuple[int, int]] = {}
    for n, lanes in split:
        read_alone(n, lanes, repl, windows)
    # substitute_closed: a new place whose index reads another split lane (a loaded index)
    # reads that lane's new scalar load, not the vector load it replaces (as lane_loads)
    new_end = substitute_closed(end, repl)
    order = toposort([new_end])
    dep = range_sets(order)
    return new_end, [n for n in order if r in dep[n]], dep, windows


def _candidates(region: list[UOp]) -> tuple[list[tuple[UOp, list[UOp]]], set[UOp]]:
    """(each vector load of the module docstring's form with its lane reads, the region as
    a set); the list is empty when there is none."""
    inside = set(region)
    # the vector loads of the form, then their readers (the users of these alone)
    loads = []
    for n in region:
        if n.op is not Ops.LOAD or len(n.src) != 1 or len(n.shape) != 1:
            continue
        p = n.src[0]
        if p.op is not Ops.SHRINK or p.src[0] in inside:
            continue
        b = base_buffer(p.src[0])
        if b.op is not Ops.PARAM or b.arg.addrspace is not AddrSpace.GLOBAL:
            continue
        loads.append(n)
    if not loads:
        return [], inside
    users: dict[UOp, list[UOp]] = {n: [] for n in loads}
    for n in region:
        for s in n.src:
            if s in users:
                users[s].append(n)
    split: list[tuple[UOp, list[UOp]]] = []
    for n in loads:
        lanes = users[n]
        cs = [const_int(u.src[1]) if u.op is Ops.INDEX else None for u in lanes]
        if not lanes or any(c is None or not 0 <= c < n.shape[0] for c in cs):
            continue
        split.append((n, lanes))
    return split, inside


def _kept(r: UOp, end: UOp, region: list[UOp], inside: set[UOp],
          keys: set[UOp]) -> Iterator[UOp]:
    """The nodes of the region (r aside) the split loop holds as they are, from the END
    down: each reads no split lane (of keys), not even through its srcs (so the split keeps
    the same node, which still depends on the counter), and the END reaches it past the
    split lanes (so the split graph holds it). Two passes over the region, which is in
    order (srcs first); the second stops where the caller stops asking."""
    changed = set(keys)         # the keys and every node that reads one
    for n in region:
        for s in n.src:
            if s in changed:
                changed.add(n)
                break
    live = {s for s in end.src if s in inside}
    for n in reversed(region):
        if n not in live or n in keys:
            continue
        if n not in changed and n is not r:
            yield n
        for s in n.src:
            if s in inside:
                live.add(s)


def not_scalar(n: UOp) -> bool:
    """A node widen_lanes.py's LaneLoop.check refuses in any loop (the counter aside): a
    vector, or a RANGE, END, AFTER or BARRIER."""
    return bool(n.shape) or n.op in _NOT_LANEWISE


_NOT_LANEWISE = (Ops.RANGE, Ops.END, Ops.AFTER, Ops.BARRIER)
