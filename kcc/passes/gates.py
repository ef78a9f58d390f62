"""Gated-load legalization for targets without predicated loads (`gated_load == "select"`).

`LOAD(INDEX(buf, i), alt, gate)` → `WHERE(gate, LOAD(INDEX(buf, AND(i, NEG(CAST(gate))))), alt)`
(the safe index `i & -gate` is `WHERE(gate, i, 0)`, written so that the mask depends on the
gate alone and is hoisted with it; a weak index keeps the WHERE form): with a
false gate the load reads element 0, which always exists (a buffer has size ≥ 1), so no address
outside the buffer is touched, and the WHERE returns alt. A vector load of a SHRINK place of n
elements reads from start 0 instead, which is in bounds because the buffer holds ≥ n elements
(checked here: a smaller buffer is refused). Gated STOREs stay gated: the target branches or
predicates them. On a target with native predicated loads the graph is unchanged, and a
"select" target's `masked_load` keeps the gated loads it does natively (x86-64-v4: float
scalars and vectors and integer vectors, as opmask-masked loads), gate and all.

A masked load reads nothing where its mask is false, but its address is still formed: Intel's
masked loads suppress the fault of a masked-off element (SDM Vol. 1 §15.6.1) through a
microcode assist when that address's page is not present (unmapped, or mapped and never
touched), each costing hundreds of cycles (bench/gate_assist.py: tinygrad's cumsum over axis 0,
whose padding gate is false for half its loads at addresses up to 15 KB before the buffer, ran
17x slower with an absent page before its input than with present ones). So a kept masked
load whose index value ranges (kcc.ir.ranges) reach past the buffer by more than a small
fraction of it (`in_bounds`) gets the same safe index, `i & -gate`, and keeps its gate as the
mask: the address is inside the buffer whatever the gate, and the masked-off lanes still read
as 0 without a select.

A LOAD gated lane by lane (a bool vector gate, `TargetDesc.lane_gates`) stays as it is (the
target masks it: devectorize split those it cannot); one that reaches past its buffer gets
kcc/passes/gates_lanes.py's safe start.
"""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
from kcc.ir.ranges import Range, int_ranges
from kcc.ir.uop import UOp
from kcc.passes.gates_lanes import is_lane_safe, lane_safe_load
from kcc.passes.simplify import keep_params
from kcc.passes.target import TargetDesc


class GateError(Exception):
    """A gated load that cannot be made safe."""


def _zero_like(u: UOp) -> UOp:
    """The integer 0 in u's dtype (a weak literal if u is weak)."""
    if u.dtype.is_weak:
        return UOp.const(0)
    return UOp(Ops.CAST, (UOp.const(0),), u.dtype)


def select_gated_load(x: UOp, p: UOp, alt: UOp, gate: UOp) -> UOp:
    """A gated LOAD → an ungated LOAD at a safe place, and a WHERE of gate, value and alt."""
    buf, start = p.src[0], p.src[1]
    if start.dtype.is_weak or gate.shape:
        safe = UOp(Ops.WHERE, (gate, start, _zero_like(start)))
    else:
        # start AND -gate (0 or all ones): the same value as WHERE(gate, start, 0), and the
        # mask depends on the gate alone, so it is computed where the gate is (often outside
        # the loop: padding gates of a convolution depend on the outer ranges only)
        safe = _safe_start(start, gate)
    if p.op is Ops.SHRINK:
        n = p.shape[0]
        if buf.shape[0] < n:
            raise GateError(f"a gated load of {n} elements from a buffer of {buf.shape[0]}")
        place = UOp(Ops.SHRINK, (buf, safe, p.src[2]))
        cond = UOp(Ops.STACK, (gate,) * n)
    else:
        place = UOp(Ops.INDEX, (buf, safe))
        cond = gate
    return UOp(Ops.WHERE, (cond, UOp(Ops.LOAD, (place,)), alt))


def _safe_start(start: UOp, gate: UOp) -> UOp:
    """`start AND -gate`: start where the gate holds, else 0 (a scalar int start and gate)."""
    return UOp(Ops.AND, (start, UOp(Ops.NEG, (UOp(Ops.CAST, (gate,), start.dtype),))))


# The safe index costs a few instructions a load (the address no longer folds into the load's
# memory operand), an assist hundreds of cycles: a load whose indices reach past the buffer by
# at most this fraction of its size (a conv's one-element padding border: 15 of 3136) keeps
# its address; bench/gate_assist.py measured both sides (docs/performance.md, "Gated loads").
ASSIST_FRACTION = 1 / 16


def in_bounds(p: UOp, ranges: dict[UOp, Range]) -> bool:
    """Whether the value ranges prove every element p addresses inside its buffer, or past it
    by at most ASSIST_FRACTION of its size."""
    buf, start = p.src[0], p.src[1]
    n = p.shape[0] if p.op is Ops.SHRINK else 1
    r = ranges.get(start)
    if r is None:
        return False
    out = max(0, -r[0]) + max(0, r[1] + n - buf.shape[0])
    return out <= ASSIST_FRACTION * buf.shape[0]


# a shared safe base serves loads whose constant addends differ by less than this (elements)
GROUP_SPAN = 16


def _is_safe(e: UOp) -> bool:
    """Whether e is a safe index `x & -CAST(bool)` (_safe_start's form)."""
    m = e.src[1] if e.op is Ops.AND else None
    return m is not None and m.op is Ops.NEG and m.src[0].op is Ops.CAST \
        and m.src[0].src[0].dtype.is_bool


def _lanes(p: UOp) -> int:
    return p.shape[0] if p.op is Ops.SHRINK else 1


def _strong(v: int, dt) -> UOp:
    return UOp(Ops.CAST, (UOp.const(v),), dt)


def plan_masked(sink: UOp, target: TargetDesc) -> dict[UOp, UOp]:
    """The kept masked LOADs that need a safe index (not `in_bounds`), each → its rewrite.

    Loads of one buffer at `e + c` (one non-constant part e, constant addends c less than
    GROUP_SPAN apart) whose gates depend on the same loops (range_sets: so none moves to
    another loop) share one safe base:
    `b = (e + cmin) & -G`, G the OR of their gates, each load at `b + (c - cmin)`, so the
    AND is computed once and every addend stays a displacement of the load's address. Where
    a load's own gate holds, G holds and its index is exact; where G is false every load reads
    inside [0, cmax - cmin + n), which the buffer holds (else each load is made safe alone);
    where G holds and a load's gate does not, its masked-off address is at most cmax - cmin
    elements from one the group reads (tinygrad's per-lane gates of 4 consecutive elements:
    3), the small reach `in_bounds` accepts."""
    from kcc.ir.consts import peel_offset
    from kcc.passes.linearize import range_sets
    keep = target.masked_load
    if keep is None and target.lane_gates is None:
        return {}
    order = sink.toposort()
    ranges = int_ranges([sink])
    rsets = range_sets(order)
    groups: dict[tuple, list[tuple[UOp, int]]] = {}
    lane_plan: dict[UOp, UOp | None] = {}
    for u in order:
        if u.op is not Ops.LOAD or len(u.src) != 3 or u.src[0].op not in (Ops.INDEX, Ops.SHRINK):
            continue
        p, gate = u.src[0], u.src[2]
        start, n = p.src[1], _lanes(p)
        if gate.shape:                              # a per-lane gate: gates_lanes.py
            if not in_bounds(p, ranges) and not is_lane_safe(start):
                lane_plan[u] = lane_safe_load(u)
            continue
        if keep is None or not keep(u.dtype, n) or start.dtype.is_weak \
                or not start.dtype.is_int or in_bounds(p, ranges) or p.src[0].shape[0] < n:
            continue
        e, c = peel_offset(start)
        if e is not None and _is_safe(e):
            continue                                # made safe already (a second run)
        key = (p.src[0], p.op, n, e, rsets[gate]) if e is not None else (u,)
        groups.setdefault(key, []).append((u, c if e is not None else 0))
    chunks: list[list[tuple[UOp, int]]] = []
    for members in groups.values():
        # runs whose addends span less than GROUP_SPAN elements: a masked-off address stays
        # that close to one the run reads (a conv's rows of one window are separate runs)
        members.sort(key=lambda m: m[1])
        chunks.append([members[0]])
        for m in members[1:]:
            if m[1] - chunks[-1][0][1] >= GROUP_SPAN:
                chunks.append([])
            chunks[-1].append(m)
    plan: dict[UOp, UOp] = {u: v for u, v in lane_plan.items() if v is not None}
    for members in chunks:
        u0 = members[0][0]
        p0 = u0.src[0]
        buf, n, dt = p0.src[0], _lanes(p0), p0.src[1].dtype
        cs = [c for _, c in members]
        cmin = min(cs)
        if len(members) == 1 or max(cs) - cmin + n > buf.shape[0]:
            for u, _ in members:                    # each alone: start & -gate
                p = u.src[0]
                place = p.replace(src=(buf, _safe_start(p.src[1], u.src[2]), *p.src[2:]))
                plan[u] = u.replace(src=(place, *u.src[1:]))
            continue
        e = peel_offset(p0.src[1])[0]
        gates = list(dict.fromkeys(u.src[2] for u, _ in members))
        g = gates[0]
        for h in gates[1:]:
            g = UOp(Ops.OR, (g, h))
        base = _safe_start(UOp(Ops.ADD, (e, _strong(cmin, dt))) if cmin else e, g)
        for u, c in members:
            p = u.src[0]
            idx = UOp(Ops.ADD, (base, _strong(c - cmin, dt))) if c != cmin else base
            plan[u] = u.replace(src=(p.replace(src=(buf, idx, *p.src[2:])), *u.src[1:]))
    return plan


def _planned(ctx: dict[UOp, UOp], x: UOp) -> UOp | None:
    """A planned masked LOAD → its safe-index form (plan_masked)."""
    return ctx.get(x)


_PLANNED = PatternMatcher([(UPat(Ops.LOAD, name="x"), _planned)])


def _gated(ctx: TargetDesc, x: UOp, p: UOp, alt: UOp, gate: UOp) -> UOp | None:
    """A gated LOAD the target does not do natively (masked_load) → select_gated_load; one it
    does stays (plan_masked made its index safe where needed)."""
    keep = ctx.masked_load
    if gate.shape or keep is not None and keep(x.dtype, _lanes(p)):
        return None             # (a per-lane gate: devectorize split those the target lacks)
    return select_gated_load(x, p, alt, gate)


GATES = PatternMatcher([
    (UPat(Ops.LOAD, src=(UPat((Ops.INDEX, Ops.SHRINK), name="p"), UPat.var("alt"),
                         UPat.var("gate")), name="x"), _gated),
])


def legalize_gates(sink: UOp, target: TargetDesc) -> UOp:
    """Rewrite gated loads to safe-index loads and WHEREs when the target asks for "select",
    except those its `masked_load` does natively."""
    if target.gated_load != "select":
        return sink
    plan = plan_masked(sink, target)
    # top-down: each planned LOAD is met as the node planned, before its srcs are rewritten
    now = graph_rewrite(sink, _PLANNED, plan, bottom_up=False) if plan else sink
    return keep_params(sink, graph_rewrite(now, GATES, target))
