"""slp's seed for runs of gated scalar loads (kcc/passes/slp.py): n scalar LOADs of
consecutive elements of one buffer, each under its own scalar gate, become one LOAD of a
SHRINK place of n elements whose gate is the bool vector of the n gates (a per-lane gate,
docs/semantics.md), where the gates pack into vector work (`_Packer.pack`: tinygrad's
padding gates of 4 consecutive elements are compares of one index against 4 consecutive
bounds, one vector compare) and the target loads n lanes so gated
(`TargetDesc.lane_gate_legal`: x86-64-v4's opmask-masked loads). Each scalar load is then
its lane of the vector load.

Lane j of the vector load reads element j exactly where gate j holds and is alt j
elsewhere, which is what scalar load j computed: the result is bit-identical. A run is cut
greedily from its start into the widest groups whose gates pack (cummax's 16 loads of one
row: four groups of 4 whose gates are four different compares each).

A run whose loads lie in an innermost loop that kcc/passes/widen.py widens across its
iterations is left scalar (`_widened_loops`): packed here, the loop body would hold vectors
and widen_lanes would leave it a loop of partial vectors with a horizontal sum (cumsum's
r_32_8_8: 8 gated loads of `8*i + j - c`, `c <= j`), where widened every load is one
k-lane masked load and every add one vector add.
"""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, base_buffer, toposort
from kcc.passes.slp_index import consecutive_runs, lane_offset

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.passes.slp import _Packer


def _gated_runs(order: list[UOp]) -> list[tuple[UOp, ...]]:
    """Runs of two or more scalar LOADs with a scalar gate of consecutive elements of one
    buffer node (by the constant offset from one base), in element order."""
    loads = [u for u in order if u.op is Ops.LOAD and len(u.src) == 3 and u.shape == ()
             and u.src[0].op is Ops.INDEX and u.src[2].shape == ()
             and u.src[0].src[0].kind == "buffer"]
    return [run for run in consecutive_runs(loads) if len(run) > 1]


_ORDER_ONLY = frozenset({Ops.RANGE, Ops.END, Ops.AFTER, Ops.STORE, Ops.PARAM, Ops.BUFFER})


def _values(x: UOp) -> bool:
    """Whether a cycle check walks into x: values, not loops and effects (what a RANGE or
    AFTER is ordered after is not its value; slp's rebuild finds a cycle through those)."""
    return x.op not in _ORDER_ONLY


def _vector_load(p: _Packer, t: tuple[UOp, ...]) -> UOp | None:
    """The per-lane-gated vector LOAD of the scalar gated loads t, or None when their gates
    do not pack."""
    members = set(t)
    if any(x in members for x in toposort([s.src[i] for s in t for i in (1, 2)], _values)):
        return None                 # a gate or alt reads a load of the group: a cycle
    gate = p.pack(tuple(s.src[2] for s in t))
    if gate is None or gate.op is Ops.STACK and len(set(gate.src)) == len(t):
        return None                 # (a STACK of n different scalars: no vector work)
    alts = tuple(s.src[1] for s in t)
    alt = p.pack(alts) or UOp(Ops.STACK, alts)
    place = t[0].src[0]
    shrink = UOp(Ops.SHRINK, (place.src[0], place.src[1], UOp.const(len(t))))
    return UOp(Ops.LOAD, (shrink, alt, gate))


def tuple_load(p: _Packer, t: tuple[UOp, ...]) -> UOp | None:
    """n gated scalar LOADs of consecutive elements of one buffer that the vector work asks
    for as one tuple (cumprod's jammed columns: lane c of every factor is column c's load of
    it, while the seed below packs each column's own run) → one LOAD gated lane by lane where
    the target has one and their gates pack (`_vector_load`), else None."""
    ctx = p.ctx
    if ctx.lane_gates is None or not all(
            s.op is Ops.LOAD and len(s.src) == 3 and s.shape == () and s.src[2].shape == ()
            and s.src[0].op is Ops.INDEX for s in t):
        return None
    buf, dt = t[0].src[0].src[0], t[0].dtype
    if buf.kind != "buffer" or any(s.src[0].src[0] is not buf or s.dtype != dt for s in t) \
            or not ctx.lane_gate_legal(len(t), dt) or base_buffer(buf) in p.scalar_reg:
        return None
    offs = [lane_offset(s.src[0].src[1]) for s in t]
    if offs[0] is None or any(o != (offs[0][0], offs[0][1] + j) for j, o in enumerate(offs)):
        return None
    return _vector_load(p, t)


def _widened_loops(order: list[UOp], runs: list[tuple[UOp, ...]], ctx) -> set[UOp]:
    """The loads of runs that lie in an innermost loop passes/widen.py widens (that loop's
    nest alone, as the graph stands now: kcc/passes/unroll_tiny.py `widens_as_is`; not
    `_widens`, which runs slp first)."""
    from kcc.passes.linearize import range_sets
    from kcc.passes.unroll_tiny import widens_as_is
    dep = range_sets(order)
    end_of = {e.src[1]: e for e in order if e.op is Ops.END and len(e.src) == 2}
    # a range some other RANGE or an END depends on encloses a loop: not innermost (an
    # END's set stops at its own range: what is left are the loops around it)
    outer: set[UOp] = set()
    for x in order:
        if x.op is Ops.RANGE:
            outer.update(r for r in dep[x] if r is not x)
        elif x.op is Ops.END:
            outer.update(dep[x])
    sink = order[-1]
    widens: dict[UOp, bool] = {}
    out: set[UOp] = set()
    for run in runs:
        for s in run:
            for r in dep[s]:
                e = end_of.get(r)
                if e is None or r in outer:
                    continue
                if r not in widens:
                    widens[r] = widens_as_is(sink, e, ctx)
                if widens[r]:
                    out.add(s)
    return out


def pack_gated_loads(p: _Packer, order: list[UOp], redirect: dict[UOp, UOp]) -> None:
    """Each group of a run of gated scalar loads whose gates pack → one per-lane-gated
    vector LOAD; each scalar load is redirected to its lane (and the group's tuple is
    memoized, so a STACK of those loads is that vector; each load is in p.up, so a tuple of
    lanes of several such loads is a shuffle of them)."""
    ctx = p.ctx
    runs = _gated_runs(order)
    widened = _widened_loops(order, runs, ctx) if runs else set()
    for run in runs:
        if any(s in widened for s in run):
            continue
        dt = run[0].dtype
        widths = sorted((w for w in ctx.mem_widths.get(dt, ()) if ctx.lane_gate_legal(w, dt)),
                        reverse=True)
        i = 0
        while i < len(run) - 1:
            for w in widths:
                t = tuple(run[i:i + w])
                if len(t) < w or any(s.dtype != dt for s in t):
                    continue
                v = _vector_load(p, t)
                if v is not None:
                    p.memo[t] = v
                    for j, s in enumerate(t):
                        redirect[s] = UOp(Ops.INDEX, (v, UOp.const(j)))
                        # a tuple of lanes of such loads (element j of each of 4 rows, a
                        # transposed reduction) is a transpose of them, not 4 scalars
                        p.up[s] = (v, j)
                    i += w
                    break
            else:
                i += 1
