"""Devectorize: split vector ops and vector memory accesses the target cannot do in one piece.

An ALU op, CAST/BITCAST, WHERE or MULACC on n lanes is legal when n is in
`target.alu_widths[dtype]` (for a comparison: the operands' dtype; for a cast: both dtypes);
a LOAD/STORE of a SHRINK place of n elements when n is in `target.mem_widths[dtype]`. An
illegal node is split into chunks, the largest legal width first (then smaller legal widths,
then scalars), and its result is the STACK of the chunks' lanes. A chunk of an operand is taken
without moving data where it can be: the lanes of a STACK, or the whole operand when the chunk is
all of it; otherwise lane INDEXes. A split LOAD reads SHRINK(buf, start + k, w) chunks (a scalar
chunk is an INDEX place); a split STORE writes the chunks and becomes a GROUP of the chunk STOREs.
A LOAD gated lane by lane (its gate a bool vector) is split the same way where the target
has no such load at its width (`TargetDesc.lane_gate_legal`), each chunk gated by its lanes of
the gate. A legal vector stays one node. A 1-lane vector (a SHRINK of one element, a STACK of
one lane) is always split: into one scalar chunk, so no target meets a vector of one lane.
Shape-() nodes are never touched.
"""

from __future__ import annotations

from kcc.ir.dtype import DType
from kcc.ir.ops import ALU, COMPARE
from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite, rewrites_nothing
from kcc.ir.uop import UOp
from kcc.passes.lane_loads import lane_loads
from kcc.passes.simplify import keep_params, lane_of_stack, stack_of_lanes
from kcc.passes.target import TargetDesc


def chunks(n: int, legal: tuple[int, ...]) -> list[tuple[int, int]]:
    """(start, width) pieces covering n lanes: greedy, largest legal width first, then scalars."""
    widths = sorted({w for w in legal if 1 < w <= n}, reverse=True)
    out: list[tuple[int, int]] = []
    s = 0
    while s < n:
        w = next((w for w in widths if w <= n - s), 1)
        out.append((s, w))
        s += w
    return out


def lanes(v: UOp, start: int, width: int) -> UOp:
    """Lanes [start, start+width) of vector value v as a scalar (width 1) or a vector."""
    if width == v.shape[0] and start == 0 and width > 1:
        return v
    if v.op is Ops.STACK:
        if width == 1:
            return v.src[start]
        return _restack(v.src[start:start + width])
    one = [UOp(Ops.INDEX, (v, UOp.const(start + j))) for j in range(width)]
    return one[0] if width == 1 else UOp(Ops.STACK, tuple(one))


def _restack(srcs: tuple[UOp, ...]) -> UOp:
    """STACK of scalars, collapsed to the vector it came from when it is all of one."""
    st = UOp(Ops.STACK, srcs)
    return stack_of_lanes(st) or st


def _flat(parts: list[UOp]) -> UOp:
    """The STACK of every lane of the chunk results, in order."""
    out: list[UOp] = []
    for p in parts:
        if p.shape == ():
            out.append(p)
        else:
            out.extend(lanes(p, j, 1) for j in range(p.shape[0]))
    return _restack(tuple(out))


def _alu_dtypes(x: UOp) -> list[DType]:
    """The dtypes whose legal widths an ALU-like node must respect."""
    if x.op in COMPARE:
        return [x.src[0].dtype]
    if x.op in (Ops.CAST, Ops.BITCAST):
        return [x.src[0].dtype, x.arg]
    return [x.dtype]


def split_alu(ctx: TargetDesc, x: UOp) -> UOp | None:
    """An ALU op, cast, WHERE or MULACC of an illegal vector width → STACK of legal chunks."""
    if x.shape == () or x.kind != "value":
        return None
    n = x.shape[0]
    dts = _alu_dtypes(x)
    if n > 1 and all(ctx.alu_legal(n, d, x.op) for d in dts):
        return None
    if n > 1 and x.op in (Ops.CAST, Ops.BITCAST) and ctx.cast_legal(x.op, dts[0], dts[1], n):
        return None
    if x.op in (Ops.CAST, Ops.BITCAST):
        # a cast's chunks: the widths the target has the cast at (x86-64-v4: float64 x 8 to
        # int64 is two int64 x 4 halves, not eight scalars)
        legal = tuple(w for w in set(ctx.alu_widths.get(dts[0], ()))
                      | set(ctx.alu_widths.get(dts[1], ()))
                      if 1 < w < n and ctx.cast_legal(x.op, dts[0], dts[1], w))
    else:
        legal = tuple(set.intersection(*(set(w for w in ctx.alu_widths.get(d, ())
                                             if ctx.alu_legal(w, d, x.op)) for d in dts)))
    parts = [x.replace(src=tuple(lanes(s, st, w) for s in x.src)) for st, w in chunks(n, legal)]
    return _flat(parts)


def _place_chunk(place: UOp, start: int, width: int) -> UOp:
    """The place of elements [start, start+width) of a SHRINK place."""
    buf, base = place.src[0], place.src[1]
    if start:
        base = UOp(Ops.ADD, (base, _int_like(start, base)))
    if width == 1:
        return UOp(Ops.INDEX, (buf, base))
    return UOp(Ops.SHRINK, (buf, base, UOp.const(width)))


def _int_like(k: int, like: UOp) -> UOp:
    """The integer constant k in like's dtype (a weak literal if like is weak)."""
    if like.dtype.is_weak:
        return UOp.const(k)
    return UOp(Ops.CAST, (UOp.const(k),), like.dtype)


def split_load(ctx: TargetDesc, x: UOp, p: UOp) -> UOp | None:
    """A LOAD of an illegal-width SHRINK place → STACK of lanes of legal-width LOADs; a LOAD
    gated lane by lane (a bool vector gate) that the target cannot do as one
    (`TargetDesc.lane_gate_legal`) likewise, each chunk gated by its lanes of the gate (a
    scalar chunk by its own lane: CUDA and AMD)."""
    n = p.shape[0]
    lane_gated = len(x.src) == 3 and x.src[2].shape != ()
    if n > 1 and ctx.mem_legal(n, p.dtype) \
            and (not lane_gated or ctx.lane_gate_legal(n, p.dtype)):
        return None
    legal = tuple(w for w in ctx.mem_widths.get(p.dtype, ())
                  if not lane_gated or ctx.lane_gate_legal(w, p.dtype))
    parts = []
    for st, w in chunks(n, legal):
        rest = ()
        if len(x.src) == 3:
            gate = lanes(x.src[2], st, w) if lane_gated else x.src[2]
            rest = (lanes(x.src[1], st, w), gate)
        parts.append(UOp(Ops.LOAD, (_place_chunk(p, st, w),) + rest))
    return _flat(parts)


def split_store(ctx: TargetDesc, x: UOp, p: UOp) -> UOp | None:
    """A STORE to an illegal-width SHRINK place → GROUP of legal-width chunk STOREs."""
    n = p.shape[0]
    if n > 1 and ctx.store_legal(n, p.dtype):
        return None
    stores = []
    for st, w in chunks(n, tuple(ctx.mem_widths.get(p.dtype, ()))):
        stores.append(UOp(Ops.STORE, (_place_chunk(p, st, w), lanes(x.src[1], st, w))
                          + x.src[2:]))
    return UOp(Ops.GROUP, tuple(stores))


_SPLIT = tuple(ALU | {Ops.CAST, Ops.BITCAST})

DEVECTORIZE = PatternMatcher([
    (UPat(_SPLIT, name="x"), split_alu),
    (UPat(Ops.LOAD, src=(UPat(Ops.SHRINK, name="p"),), rest=True, name="x"), split_load),
    (UPat(Ops.STORE, src=(UPat(Ops.SHRINK, name="p"),), rest=True, name="x"), split_store),
    (UPat(Ops.STACK, name="x"), stack_of_lanes),
    (UPat(Ops.INDEX, src=(UPat.var("v"), UPat(Ops.CONST, name="i")), name="x"), lane_of_stack),
])


def devectorize(sink: UOp, target: TargetDesc) -> UOp:
    """Split every vector node of a width the target cannot do (see the module docstring)."""
    # splitting can drop the only use of a scalar PARAM (an unused lane): keep its slot
    done: dict[UOp, UOp] = {}
    sink = lane_loads(sink, target)
    if rewrites_nothing(sink, DEVECTORIZE, target, done):   # (every width legal: most kernels)
        return sink
    return keep_params(sink, graph_rewrite(sink, DEVECTORIZE, ctx=target, memo=done))
