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
"""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
from kcc.ir.ranges import Range, int_ranges
from kcc.ir.uop import UOp
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


def masked_safe(x: UOp, p: UOp, alt: UOp, gate: UOp, ranges: dict[UOp, Range]) -> UOp | None:
    """A masked LOAD kept gated, at the safe index `start & -gate` unless its index is proved
    in bounds (a masked-off element at an unmapped address costs a microcode assist); None
    when nothing changes (in bounds, a vector gate, or a weak start)."""
    start = p.src[1]
    if gate.shape or start.dtype.is_weak or not start.dtype.is_int or in_bounds(p, ranges):
        return None
    if start.op is Ops.AND and start.src[1] is _safe_start(start.src[0], gate).src[1]:
        return None                         # already made safe (the rewrite's fixed point)
    if p.op is Ops.SHRINK and p.src[0].shape[0] < p.shape[0]:
        return None
    place = p.replace(src=(p.src[0], _safe_start(start, gate), *p.src[2:]))
    return x.replace(src=(place, alt, gate))


def _gated(ctx: tuple[TargetDesc, dict[UOp, Range]], x: UOp, p: UOp, alt: UOp,
           gate: UOp) -> UOp | None:
    """A gated LOAD the target does not do natively (masked_load) → select_gated_load; one it
    does → masked_safe."""
    target, ranges = ctx
    keep = target.masked_load
    if keep is not None and keep(x.dtype, p.shape[0] if p.op is Ops.SHRINK else 1):
        return masked_safe(x, p, alt, gate, ranges)
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
    return keep_params(sink, graph_rewrite(sink, GATES, (target, int_ranges([sink]))))
