"""float16 MAX in float32 where that is exact: MAX trees and REG max accumulators.

A target without float16 MAX (x86 before AVX512-FP16: kcc's x86-64-v3 and -v4) decomposes
MAX(a, b) on float16 into a float32 compare of the widened operands and a select of the
16-bit patterns (passes/decompose.py `half_bits`), because MAX's chosen operand keeps its bits
(docs/semantics.md) and a float32 round trip would quiet a signalling NaN. tinygrad's half
max reductions pay that on every element: the accumulator lives as bits in a GPR (x86 has no
float16 vector MAX, so it stays scalar), each step widening it again, comparing, moving the
mask to a GPR and CMOVing (half_softmax r_5_4_77: 0.27x clang; half_max_nan r_4_8: 0.22x).

When neither operand can be a signalling NaN, MAX in float32 is exact:
CAST(MAX(a, b), float32) = MAX(CAST(a, float32), CAST(b, float32)) for any float16 a, b (the
widening is exact and order-preserving and keeps NaN a NaN, so both sides compare the same
values and pick the same operand), and CAST(CAST(y, float16), float32) = y for y the widening
of a float16 that is not a signalling NaN (a quiet NaN's payload is float16's top 10 bits
in float32, which narrowing keeps, SDM "VCVTPS2PH"). So this pass, on such a target:

- computes a float16 MAX whose operands are quiet (`_quiet_values`) as a float32 MAX of their
  widenings, through whole trees of MAX (and WHERE selecting between them): tinygrad's
  `max(cast0, …, cast7)` is seven float32 MAXes (VMAXSS/VMAXPS, which x86 has natively) and
  one narrowing, not seven widen/compare/select rounds;
- carries a float16 REG buffer whose every store is such a MAX tree (or a constant) as a
  float32 buffer: the loop's accumulator is float32, MAX's float32 lanes pack (slp) and the
  narrowing runs once after the loop. Every value stored is the widening of a quiet float16,
  so each load narrowed back is that float16, bit for bit.

A float16 is quiet (cannot be a signalling NaN) when it is a CAST from another dtype (float
narrowing gives a quiet NaN: SDM "VCVTPS2PH", numpy), the result of float16 arithmetic (it is
computed in float32 and narrowed), a MAX, WHERE or NEG of quiet values, a lane of quiet lanes,
or a load of a REG buffer whose every store is quiet; a load from memory or a BITCAST is not.
"""

from __future__ import annotations

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, toposort
from kcc.passes.target import TargetDesc
from kcc.record import replace

F16, F32 = dtypes.float16, dtypes.float32
# float16 ops computed in float32 and narrowed (decompose.py lift_half): a NaN result is quiet
_ARITH = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MULACC, Ops.SQRT, Ops.EXP2,
                    Ops.LOG2, Ops.SIN, Ops.RECIPROCAL, Ops.TRUNC})
_PLACES = frozenset({Ops.AFTER, Ops.INDEX, Ops.SHRINK})


def applies(target: TargetDesc) -> bool:
    """The target lacks float16 MAX but has float32 MAX natively."""
    return not target.native(Ops.MAX, F16) and target.native(Ops.MAX, F32)


def _reg_half(u: UOp) -> bool:
    return u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.REG and u.arg.dtype == F16


def _root(place: UOp) -> UOp:
    """The PARAM/BUFFER under a place (INDEX/SHRINK places over AFTERs)."""
    while place.op in (Ops.INDEX, Ops.SHRINK) and place.kind == "place":
        place = place.src[0]
    return base_buffer(place)


def _reg_of(place: UOp) -> UOp | None:
    """The float16 REG buffer a place (INDEX/SHRINK over AFTERs) addresses, if any."""
    if place.op not in (Ops.INDEX, Ops.SHRINK) or place.kind != "place":
        return None
    b = _root(place)
    return b if _reg_half(b) else None


def _accesses(order: list[UOp]) -> tuple[dict[UOp, list[UOp]], set[UOp]]:
    """float16 REG buffer → its STOREs; and the buffers some other use makes ineligible
    (a gated access, a place read by anything but an ungated LOAD or a STORE's place)."""
    stores: dict[UOp, list[UOp]] = {u: [] for u in order if _reg_half(u)}
    bad: set[UOp] = set()
    if not stores:
        return stores, bad
    for u in order:
        for i, s in enumerate(u.src):
            if s.op is not Ops.BUFFER and (s.op not in _PLACES or s.kind != "place"
                                           and s.op is not Ops.AFTER):
                continue
            b = _root(s)
            if b not in stores:
                continue
            if u.op in _PLACES and i == 0 or u.op is Ops.AFTER:
                continue                    # a place over the buffer, or an ordering
            if u.op is Ops.LOAD and len(u.src) == 1:
                continue
            if u.op is Ops.STORE and i == 0 and len(u.src) == 2:
                stores[b].append(u)
                continue
            bad.add(b)
    return stores, bad


def _quiet_values(order: list[UOp], quiet_bufs: set[UOp]) -> set[UOp]:
    """The float16 values of order that cannot be signalling NaNs (see the module
    docstring), taking loads of quiet_bufs as quiet."""
    quiet: set[UOp] = set()
    for u in order:
        if u.dtype != F16 or u.kind != "value":
            continue
        op = u.op
        if op is Ops.CAST:
            ok = u.src[0].dtype != F16
        elif op in _ARITH:
            ok = True
        elif op in (Ops.MAX, Ops.NEG, Ops.STACK):
            ok = all(s in quiet for s in u.src)
        elif op is Ops.WHERE:
            ok = u.src[1] in quiet and u.src[2] in quiet
        elif op is Ops.INDEX:                               # a lane of a vector value
            ok = u.src[0] in quiet
        elif op is Ops.LOAD:
            ok = len(u.src) == 1 and _reg_of(u.src[0]) in quiet_bufs
        else:
            ok = False
        if ok:
            quiet.add(u)
    return quiet


def _lifts(u: UOp, quiet: set[UOp]) -> bool:
    """u is a float16 MAX computed in float32 (both operands quiet)."""
    return u.op is Ops.MAX and u.dtype == F16 and u.src[0] in quiet and u.src[1] in quiet


def _carried(stores: dict[UOp, list[UOp]], bad: set[UOp], order: list[UOp]
             ) -> tuple[set[UOp], set[UOp]]:
    """The float16 REG buffers carried in float32: every store quiet (a fixpoint: a buffer's
    loads are quiet while every store to it is) and a MAX tree, a constant or a copy of a
    carried buffer's element, at least one of them a MAX; and the quiet values."""
    bufs = {b for b, sts in stores.items() if sts and b not in bad}
    while True:
        quiet = _quiet_values(order, bufs)
        keep = {b for b in bufs if all(st.src[1] in quiet for st in stores[b])}
        if keep == bufs:
            break
        bufs = keep

    def stored_ok(v: UOp) -> bool:
        return _lifts(v, quiet) or v.op is Ops.CAST and v.src[0].op is Ops.CONST \
            or v.op is Ops.LOAD and _reg_of(v.src[0]) in bufs
    while True:
        keep = {b for b in bufs if all(stored_ok(st.src[1]) for st in stores[b])
                and any(_lifts(st.src[1], quiet) for st in stores[b])}
        if keep == bufs:
            return bufs, quiet
        bufs = keep


def half_max(sink: UOp, target: TargetDesc) -> UOp:
    """float16 MAX trees and REG max accumulators in float32 (see the module docstring)."""
    if not applies(target):
        return sink
    order = toposort([sink])
    if not any(u.op is Ops.MAX and u.dtype == F16 for u in order):
        return sink
    stores, bad = _accesses(order)
    bufs, quiet = _carried(stores, bad, order)
    new: dict[UOp, UOp] = {}      # node → its rebuilt self (absent: unchanged)
    wide: dict[UOp, UOp] = {}     # float16 value → its float32 value (exact widening)

    def widened(x: UOp) -> UOp:
        w = wide.get(x)
        return w if w is not None else UOp(Ops.CAST, (new.get(x, x),), F32)

    for u in order:
        if u.op is Ops.BUFFER and u in bufs:
            new[u] = u.replace(arg=replace(u.arg, dtype=F32))
            continue
        srcs = tuple([new.get(s, s) for s in u.src])
        if _lifts(u, quiet):
            a, b = u.src
            wide[u] = UOp(Ops.MAX, (widened(a), widened(b)))
            new[u] = UOp(Ops.CAST, (wide[u],), F16)
        elif u.op is Ops.WHERE and u.dtype == F16 and u in quiet \
                and (u.src[1] in wide or u.src[2] in wide):
            wide[u] = UOp(Ops.WHERE, (srcs[0], widened(u.src[1]), widened(u.src[2])))
            new[u] = UOp(Ops.CAST, (wide[u],), F16)
        elif u.op is Ops.LOAD and len(u.src) == 1 and _reg_of(u.src[0]) in bufs:
            wide[u] = u.replace(src=srcs)                   # a float32 load now
            new[u] = UOp(Ops.CAST, (wide[u],), F16)
        elif u.op is Ops.CAST and u.dtype == F32 and u.src[0] in wide:
            new[u] = wide[u.src[0]]                         # the widening is exact
        elif u.op is Ops.STORE and len(u.src) == 2 and _reg_of(u.src[0]) in bufs:
            new[u] = UOp(Ops.STORE, (srcs[0], widened(u.src[1])))
        elif srcs != u.src:
            new[u] = u.replace(src=srcs)
    return new.get(sink, sink)

