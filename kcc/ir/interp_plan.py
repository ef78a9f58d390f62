"""The reference interpreter's static analysis: a kernel's nodes in order, the loops each lies
inside, their nesting order and numpy axes (kcc/ir/interp.py runs what this prepares; the
execution model is described there and in docs/semantics.md, "Execution order")."""

from __future__ import annotations

import heapq
import weakref
from dataclasses import dataclass, field

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort

MAX_AXES = 40   # numpy allows 64 dims; the rest is for a vector lane and the storage element


class InterpError(Exception):
    """A kernel the interpreter cannot run with these arguments (the message says why)."""


# -- static analysis (cached per kernel) -----------------------------------------------------

@dataclass
class _Kernel:
    """A kernel prepared to run: its nodes in order and the loops each lies inside."""

    sink: UOp
    order: list[UOp]
    deps: dict[UOp, frozenset[UOp]]          # RANGE and SPECIAL nodes each node lies inside
    rank: dict[UOp, int]                     # nesting order of RANGEs (outer first)
    axis: dict[UOp, int]                     # numpy axis of each SPECIAL / vectorizable RANGE
    nax: int
    params: dict[int, UOp]
    buffers: list[UOp]
    written: set[UOp]                        # every base stored anywhere
    seq: set[UOp] = field(default_factory=set)   # loops learned to need sequential execution
    pre: dict[UOp, tuple[UOp, ...]] = field(default_factory=dict)   # srcs evaluated first
    rdeps: dict[UOp, tuple[UOp, ...]] = field(default_factory=dict)  # RANGE deps, inner first
    void: frozenset[UOp] = frozenset()
    pos: dict[UOp, int] = field(default_factory=dict)            # position in order

    def __post_init__(self) -> None:
        for n in self.order:
            self.pre[n] = () if n.op in (Ops.RANGE, Ops.SPECIAL, Ops.END) else (
                n.src[1:] + n.src[:1] if n.op is Ops.AFTER else n.src)
            self.rdeps[n] = tuple(sorted((r for r in self.deps[n] if r.op is Ops.RANGE),
                                         key=self.rank.__getitem__, reverse=True))
        self.void = frozenset(n for n in self.order if n.kind == "void")
        self.pos = {n: i for i, n in enumerate(self.order)}


_CACHE: "weakref.WeakKeyDictionary[UOp, _Kernel]" = weakref.WeakKeyDictionary()


def base_of(n: UOp) -> UOp:
    """The PARAM or BUFFER under a place or buffer node (through INDEX/SHRINK and AFTER)."""
    while n.op in (Ops.INDEX, Ops.SHRINK, Ops.AFTER):
        n = n.src[0]
    return n


def _analyse(sink: UOp) -> _Kernel:
    if sink.op is not Ops.SINK:
        raise InterpError(f"run() takes the kernel's SINK, not {sink.op.name}")
    sink.utype  # type-checks the whole graph (raises IRError)
    order = toposort([sink])
    deps: dict[UOp, frozenset[UOp]] = {}
    for n in order:
        d: set[UOp] = set()
        for s in n.src:
            d |= deps[s]
        if n.op in (Ops.RANGE, Ops.SPECIAL):
            d.add(n)
        if n.op is Ops.END:
            d -= set(n.src[1:])
        deps[n] = frozenset(d)
    pos = {n: i for i, n in enumerate(order)}
    ranges = [n for n in order if n.op is Ops.RANGE]
    rank = _nest_order(ranges, deps, pos)
    specials: dict[str, UOp] = {}
    for n in order:
        if n.op is Ops.SPECIAL:
            if n.arg in specials and specials[n.arg].src[0] is not n.src[0] \
                    and const_int(specials[n.arg].src[0]) != const_int(n.src[0]):
                raise InterpError(f"SPECIAL {n.arg} appears with two different bounds")
            specials.setdefault(n.arg, n)
    axis: dict[UOp, int] = {}
    for n in order:
        if n.op is Ops.SPECIAL:
            axis[n] = sorted(specials).index(n.arg)
    nax = len(specials)
    for r in sorted(ranges, key=rank.__getitem__):
        if nax < MAX_AXES:
            axis[r] = nax
            nax += 1
    params: dict[int, UOp] = {}
    for n in order:
        if n.op is Ops.PARAM:
            if n.arg.slot in params and params[n.arg.slot] is not n:
                raise InterpError(f"two PARAMs share slot {n.arg.slot}")
            params[n.arg.slot] = n
    if sorted(params) != list(range(len(params))):
        raise InterpError(f"PARAM slots {sorted(params)} do not run from 0 without gaps")
    written = {base_of(n.src[0]) for n in order if n.op is Ops.STORE}
    buffers = [n for n in order if n.op is Ops.BUFFER]
    return _Kernel(sink, order, deps, rank, axis, nax, params, buffers, written)


def _nest_order(ranges: list[UOp], deps: dict[UOp, frozenset[UOp]],
                pos: dict[UOp, int]) -> dict[UOp, int]:
    """Outer to inner: a RANGE whose bound or order srcs use another is nested inside it;
    otherwise by (axis_id, sub_id), then by position in the graph."""
    def key(r: UOp) -> tuple:
        ids = tuple(a for a in r.arg[:-1]) if isinstance(r.arg, tuple) else ()
        return (ids, pos[r])
    preds = {r: {p for p in deps[r] if p.op is Ops.RANGE and p is not r} for r in ranges}
    heap = [(key(r), pos[r], r) for r in ranges if not preds[r]]
    heapq.heapify(heap)
    rank: dict[UOp, int] = {}
    while heap:
        _, _, r = heapq.heappop(heap)
        rank[r] = len(rank)
        for q in ranges:
            if q not in rank and r in preds[q]:
                preds[q].discard(r)
                if not preds[q]:
                    heapq.heappush(heap, (key(q), pos[q], q))
    return rank
