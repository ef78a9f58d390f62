"""Gated-load legalization for targets without predicated loads (`gated_load == "select"`).

`LOAD(INDEX(buf, i), alt, gate)` → `WHERE(gate, LOAD(INDEX(buf, AND(i, NEG(CAST(gate))))), alt)`
(the safe index `i & -gate` is `WHERE(gate, i, 0)`, written so that the mask depends on the
gate alone and is hoisted with it; a weak index keeps the WHERE form): with a
false gate the load reads element 0, which always exists (a buffer has size ≥ 1), so no address
outside the buffer is touched, and the WHERE returns alt. A vector load of a SHRINK place of n
elements reads from start 0 instead, which is in bounds because the buffer holds ≥ n elements
(checked here: a smaller buffer is refused). Gated STOREs stay gated: the target branches or
predicates them. On a target with native predicated loads the graph is unchanged, and a
"select" target's `masked_load` keeps the gated loads it does natively as they are
(x86-64-v4: float scalars and vectors and integer vectors, as opmask-masked loads).
"""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
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
        mask = UOp(Ops.NEG, (UOp(Ops.CAST, (gate,), start.dtype),))
        safe = UOp(Ops.AND, (start, mask))
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


def _gated(ctx: TargetDesc, x: UOp, p: UOp, alt: UOp, gate: UOp) -> UOp | None:
    """A gated LOAD the target does not do natively (masked_load) → select_gated_load."""
    keep = ctx.masked_load
    if keep is not None and keep(x.dtype, p.shape[0] if p.op is Ops.SHRINK else 1):
        return None
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
    return keep_params(sink, graph_rewrite(sink, GATES, target))
