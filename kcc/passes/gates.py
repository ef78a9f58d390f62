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
fraction of it (`in_bounds`) gets a safe index and keeps its gate as the mask (plan_masked):
a select of the index, not the AND mask above, since on x86 a select on a compare is one
CMOVcc on that compare's flags and keeps the index's constant addend a displacement of the
address, where `i & -gate` took SETcc, MOVZX, NEG, AND, a MOVSXD and an ADD in the loop
(cumsum_777's E_3_777: 0.56x → 0.47x clang; docs/performance.md, "Cheaper gate safe bases").

A LOAD gated lane by lane (a bool vector gate, `TargetDesc.lane_gates`) stays as it is (the
target masks it: devectorize split those it cannot); one that reaches past its buffer gets
kcc/passes/gates_lanes.py's safe start, or, where its gate is false on the lanes that reach
out, is read inside the buffer and its lanes rotated back (gates_lanes.shifted_load).
"""

from __future__ import annotations

from kcc.ir.consts import const_int, peel_offset, plus_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite, rewrites_nothing
from kcc.ir.ranges import Range, int_ranges, vmin_vmax
from kcc.ir.uop import UOp
from kcc.passes.simplify import keep_params
from kcc.passes.target import TargetDesc

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable


class GateError(Exception):
    """A gated load that cannot be made safe."""


def select_gated_load(x: UOp, p: UOp, alt: UOp, gate: UOp) -> UOp:
    """A gated LOAD → an ungated LOAD at a safe place, and a WHERE of gate, value and alt."""
    buf, start = p.src[0], p.src[1]
    if start.dtype.is_weak or gate.shape:
        safe = UOp(Ops.WHERE, (gate, start, strong_int(0, start.dtype)))
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

# A gate false on at most this fraction of its loop's iterations leaves its load's address as
# it is: those few masked-off loads cost less, even at an absent page, than a select on every
# iteration. cumsum_777's E_3_777 (`8 < i` of 777: 9 masked off, 3 of them before the buffer
# per launch): 2.95 µs with an absent page before it, 2.82 with present pages, 2.98 with the
# select (bench/gate_assist.py; an assist measured ~14 ns here, the select ~0.1 ns a load).
RARE_FRACTION = 1 / 64


def rarely_false(gate: UOp) -> bool:
    """Whether gate compares one loop index with a constant (`k < r`, `r < k`) and is false
    on at most RARE_FRACTION of that loop's iterations."""
    if gate.op is not Ops.CMPLT:
        return False
    a, b = gate.src
    if a.op is Ops.RANGE and (k := const_int(b)) is not None:
        r, lo, hi = a, k, None                  # r < k: false for r ≥ k
    elif b.op is Ops.RANGE and (k := const_int(a)) is not None:
        r, lo, hi = b, None, k                  # k < r: false for r ≤ k
    else:
        return False
    n = const_int(r.src[0])
    if n is None or n <= 0:
        return False
    false = n - max(lo, 0) if lo is not None else min(hi + 1, n)
    return max(false, 0) <= RARE_FRACTION * n


def _is_safe(e: UOp, gate: UOp) -> bool:
    """Whether e is a safe index plan_masked wrote: `WHERE(gate, x, k)` on the load's own gate,
    or `WHERE(x < lo, k, …)` / `WHERE(hi < x, k, …)` of a shared base (k a constant), or
    `WHERE(gate, inv, k) + var` (_gate_select's row base)."""
    if e.op is Ops.ADD and e.src[0].op is Ops.WHERE and e.src[0].src[0] is gate:
        e = e.src[0]
    if e.op is not Ops.WHERE:
        return False
    c, yes, no = e.src
    if c is gate and const_int(no) is not None:
        return True
    return c.op is Ops.CMPLT and const_int(yes) is not None


def _lanes(p: UOp) -> int:
    return p.shape[0] if p.op is Ops.SHRINK else 1


def _spot(cs: list[int], n: int, size: int) -> int | None:
    """A base k where every load of the group reads inside the buffer (k + c ≥ 0 and
    k + c + n ≤ size for each addend c), the smallest ≥ 0 where one fits (a base that may be
    negative costs the address a sign extension); None if the group's span does not fit."""
    lo, hi = -min(cs), size - n - max(cs)
    if lo > hi:
        return None
    return min(max(lo, 0), hi)


def _gate_select(u: UOp, ranges: dict[UOp, Range],
                 deps: Callable[[], dict[UOp, frozenset[UOp]]]) -> UOp:
    """A lone masked load at `e + c` → at `WHERE(gate, e, k) + c` (k: _spot): a CMOVcc on the
    gate's own compare (kcc/isel/x86/alu.py int_flags), c stays the address's displacement.
    Where e is `inv + var` with inv free of every loop the gate is free of and var not
    (tinygrad's gathered rows: `row*77 + 16*i` under a gate on the row), only inv is selected,
    `WHERE(gate, inv, k) + var + c`, k putting every value of var inside the buffer: the
    select is made once a row, not once an iteration."""
    p = u.src[0]
    e, c = peel_offset(p.src[1])
    if e is None:
        e, c = p.src[1], 0
    safe = _safe_base(e, [c], u, ranges, deps)
    assert safe is not None                     # plan_masked checked the buffer holds n
    return _at(u, safe, c)


def _safe_base(e: UOp, cs: list[int], u: UOp, ranges: dict[UOp, Range],
               deps: Callable[[], dict[UOp, frozenset[UOp]]]) -> UOp | None:
    """The base that keeps loads like u (gate u.src[2]) at `e + c`, c in cs, inside the
    buffer: `WHERE(gate, inv, k) + var` where e splits as `inv + var` (_invariant_split) and
    k fits every value of var, else `WHERE(gate, e, k)`; None where no k fits (_spot)."""
    p, gate = u.src[0], u.src[2]
    n, size = _lanes(p), p.src[0].shape[0]
    split = _invariant_split(e, gate, deps())
    if split is not None:
        inv, var = split
        vr = ranges.get(var)
        k = _spot([c + v for c in cs for v in vr], n, size) if vr is not None else None
        if k is not None:
            return UOp(Ops.ADD, (UOp(Ops.WHERE, (gate, inv, strong_int(k, e.dtype))), var))
    k = _spot(cs, n, size)
    return None if k is None else UOp(Ops.WHERE, (gate, e, strong_int(k, e.dtype)))


def _at(u: UOp, base: UOp, c: int) -> UOp:
    """Masked load u reading at `base + c` instead."""
    p = u.src[0]
    return u.replace(src=(p.replace(src=(p.src[0], plus_int(base, c), *p.src[2:])),
                          *u.src[1:]))


def _invariant_split(e: UOp, gate: UOp, dep: dict[UOp, frozenset[UOp]]
                     ) -> tuple[UOp, UOp] | None:
    """e = inv + var (an ADD, or a MULACC by a constant: inv its product or its addend) with
    inv's loops among the gate's and var's not, or None."""
    if e.dtype is None or not e.dtype.is_int or e.dtype.is_weak or e.shape:
        return None
    if e.op is Ops.ADD:
        pairs = [(e.src[0], e.src[1]), (e.src[1], e.src[0])]
    elif e.op is Ops.MULACC and const_int(e.src[1]) is not None:
        prod = UOp(Ops.MUL, e.src[:2])
        pairs = [(prod, e.src[2]), (e.src[2], prod)]
    else:
        return None
    g = dep.get(gate)
    if g is None:
        return None
    for inv, var in pairs:
        di = dep.get(inv) if inv in dep else dep.get(inv.src[0])
        dv = dep.get(var) if var in dep else dep.get(var.src[0])
        if di is not None and dv is not None and di <= g and not dv <= g:
            return inv, var
    return None


def _range_base(e: UOp, er: Range | None, cs: list[int], n: int, size: int, k: int) -> UOp:
    """The shared base of loads at `e + c`, c in cs: e, or k where e puts every load of the
    group outside the buffer (`e + max(cs) < 0` or `e + min(cs) + n > size`); each side only
    where e's value range (er) reaches it. Gate-free: one CMP and CMOVcc a side, computed
    where e is, so no OR of the gates is kept live (docs/performance.md, "Cheaper gate safe
    bases")."""
    b, dt = e, e.dtype
    if er is None or er[0] + max(cs) < 0:
        b = UOp(Ops.WHERE, (UOp(Ops.CMPLT, (e, strong_int(-max(cs), dt))), strong_int(k, dt), b))
    if er is None or er[1] + min(cs) + n > size:
        b = UOp(Ops.WHERE, (UOp(Ops.CMPLT, (strong_int(size - n - min(cs), dt), e)),
                            strong_int(k, dt), b))
    return b


def _peel(start: UOp) -> tuple[UOp | None, int]:
    """start as (e, c) with start = e + c (peel_offset), a MULACC's constant addend peeled
    too: tinygrad's gathered row `row*77 + 16j` unrolled is `MULACC(row, 77, 16j)`, each copy
    its own e unless its addend is a displacement of one base `MULACC(row, 77, 0)`."""
    e, c = peel_offset(start)
    if e is not None and e.op is Ops.MULACC and (a := const_int(e.src[2])) and \
            not e.dtype.is_weak and not e.shape:
        e, c = e.replace(src=(*e.src[:2], strong_int(0, e.dtype))), c + a
    return e, c


def _one_gate_base(members: list[tuple[UOp, int]], plan: dict[UOp, UOp],
                   ranges: dict[UOp, Range],
                   deps: Callable[[], dict[UOp, frozenset[UOp]]]) -> bool:
    """Loads at `e + c` (c in cs) under one gate share one safe base (_safe_base, as a lone
    load's _gate_select), k putting all of them inside the buffer whatever cs spans: where
    the gate holds every index is exact, where it does not every load reads inside; one
    CMOVcc for all, not one a load (index_rows' E_9_77: five zmm loads of a gathered row, one
    gate). Planned into plan; False where the gates differ or the loads do not fit the
    buffer together."""
    if len(members) < 2 or len({u.src[2] for u, _ in members}) != 1:
        return False
    u0 = members[0][0]
    e = _peel(u0.src[0].src[1])[0]
    if e is None:
        return False
    base = _safe_base(e, [c for _, c in members], u0, ranges, deps)
    if base is None:
        return False
    for u, c in members:
        plan[u] = _at(u, base, c)
    return True


def plan_masked(sink: UOp, target: TargetDesc) -> dict[UOp, UOp]:
    """The kept masked LOADs that need a safe index (not `in_bounds`, gate not
    `rarely_false`), each → its rewrite.

    A lone load at `e + c` reads at `WHERE(gate, e, k) + c`, k a constant that puts it inside
    the buffer (_spot): exact where the gate holds, inside where it does not.
    Loads of one buffer at `e + c` (one non-constant part e, constant addends c less than
    GROUP_SPAN apart) share one safe base b (_range_base), whatever their gates: e, or k where
    e puts all of them outside the buffer, each load at `b + c` (a displacement) under its own
    mask. A load whose gate holds is inside the buffer,
    so b = e there and its index is exact; where b = k every load reads inside; where b = e
    and a load's gate is false, its masked-off address is inside or at most cmax - cmin
    elements past the buffer's edge (tinygrad's per-lane gates of 4 consecutive elements: 3),
    the small reach `in_bounds` accepts. A group whose span does not fit the buffer is made
    safe load by load."""
    keep = target.masked_load
    if keep is None and target.lane_gates is None:
        return {}
    order = sink.toposort()
    ranges = int_ranges([sink])
    dep_memo: list[dict[UOp, frozenset[UOp]]] = []

    def deps() -> dict[UOp, frozenset[UOp]]:
        """The loops each node depends on (walked once, when a lone load asks)."""
        if not dep_memo:
            from kcc.passes.linearize import range_sets
            dep_memo.append(range_sets(order))
        return dep_memo[0]
    groups: dict[tuple, list[tuple[UOp, int]]] = {}
    lane_plan: dict[UOp, UOp | None] = {}
    for u in order:
        if u.op is not Ops.LOAD or len(u.src) != 3 or u.src[0].op not in (Ops.INDEX, Ops.SHRINK):
            continue
        p, gate = u.src[0], u.src[2]
        start, n = p.src[1], _lanes(p)
        if gate.shape:                              # a per-lane gate: gates_lanes.py
            # (imported here: a kernel without per-lane gates, saxpy's, never needs it)
            from kcc.passes.gates_lanes import (
                is_lane_safe,
                lane_safe_load,
                shifted_load,
            )
            moved = shifted_load(u, ranges)
            if moved is not None:
                lane_plan[u] = moved
            elif not in_bounds(p, ranges) and not is_lane_safe(start):
                lane_plan[u] = lane_safe_load(u)
            continue
        if keep is None or not keep(u.dtype, n) or start.dtype.is_weak \
                or not start.dtype.is_int or in_bounds(p, ranges) or p.src[0].shape[0] < n \
                or rarely_false(gate) or ranges.get(gate) == (1, 1):
            continue                                # (an always-true gate: _gated drops it)
        e, c = _peel(start)
        if _is_safe(e if e is not None else start, gate):
            continue                                # made safe already (a second run)
        key = (p.src[0], p.op, n, e) if e is not None else (u,)
        groups.setdefault(key, []).append((u, c if e is not None else 0))
    chunks: list[list[tuple[UOp, int]]] = []
    plan: dict[UOp, UOp] = {u: v for u, v in lane_plan.items() if v is not None}
    for members in groups.values():
        if _one_gate_base(members, plan, ranges, deps):
            continue
        # runs whose addends span less than GROUP_SPAN elements: a masked-off address stays
        # that close to the buffer (a conv's rows of one window are separate runs)
        members.sort(key=lambda m: m[1])
        chunks.append([members[0]])
        for m in members[1:]:
            if m[1] - chunks[-1][0][1] >= GROUP_SPAN:
                chunks.append([])
            chunks[-1].append(m)
    moved = {u: v for u, v in plan.items() if v.op is Ops.WHERE}     # shifted_load's
    if moved:
        from kcc.passes.gates_lanes import fold_outer_where
        for w in order:
            if w.op is Ops.WHERE and (w.src[2] in moved or w.src[1] in moved):
                f = fold_outer_where(w, moved[w.src[2] if w.src[2] in moved else w.src[1]])
                if f is not None:
                    plan[w] = f
    for members in chunks:
        u0 = members[0][0]
        p0 = u0.src[0]
        buf, n = p0.src[0], _lanes(p0)
        cs = [c for _, c in members]
        k = _spot(cs, n, buf.shape[0])
        if len(members) == 1 or k is None:
            for u, _ in members:                    # each alone: WHERE(gate, e, k) + c
                plan[u] = _gate_select(u, ranges, deps)
            continue
        e = _peel(p0.src[1])[0]
        base = _range_base(e, ranges.get(e), cs, n, buf.shape[0], k)
        for u, c in members:
            p = u.src[0]
            plan[u] = u.replace(src=(p.replace(src=(buf, plus_int(base, c), *p.src[2:])),
                                     *u.src[1:]))
    return plan


def _planned(ctx: dict[UOp, UOp], x: UOp) -> UOp | None:
    """A planned masked LOAD → its safe-index form, a planned WHERE over a moved one → its
    fold (plan_masked)."""
    return ctx.get(x)


_PLANNED = PatternMatcher([(UPat((Ops.LOAD, Ops.WHERE), name="x"), _planned)])


def _gated(ctx: TargetDesc, x: UOp, p: UOp, alt: UOp, gate: UOp) -> UOp | None:
    """A gated LOAD whose gate value ranges prove always true → ungated (simplify leaves
    scalar ones to after slp); one the target does not do natively (masked_load) →
    select_gated_load; one it does stays (plan_masked made its index safe where needed)."""
    if vmin_vmax(gate) == (1, 1):
        return UOp(Ops.LOAD, (p,))
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
    done: dict[UOp, UOp] = {}
    if rewrites_nothing(now, GATES, target, done):     # (no gated load left to rewrite)
        return keep_params(sink, now)
    return keep_params(sink, graph_rewrite(now, GATES, target, memo=done))
