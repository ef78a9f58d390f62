"""Index-set splitting: a loop whose loads are gated by compares of its counter with constants
runs as consecutive loops over the ranges where every such gate is constant (a CPU target's
choice, issue 24 item 2; the sibling of passes/unroll_tiny.py's folding copies).

tinygrad's cumsum_5000 E_1250_4 adds a row total to each 4-element block, the total read
under a gate that is false for the first 34 of 1250 iterations:

    for i in range(1250):
        t = LOAD(INDEX(c, ((i + 30) >> 6) - 1), 0.0, 33 < i)
        out[4i … 4i+3] = x[4i+120 … 4i+123] + t

Every iteration computes the gate and masks the load (x86-64-v4: CMP, SETcc, MOVZX, KMOVW
and a masked VMOVSS, a third of the loop's instructions; clang branches around the load).
This pass runs it as

    for i in range(34):               # 33 < i false: the load is its alternative, 0.0
        out[4i … 4i+3] = x[4i+120 … 4i+123] + 0.0
    for i3 in range(1216):            # i = i3 + 34: 33 < i true, the load ungated
        out[…] = x[…] + LOAD(INDEX(c, ((i3 + 34 + 30) >> 6) - 1))

Each piece is the original body with the counter `i3 + lo` and each gate the constant it is
on [lo, hi) (a compare of the counter with a constant changes value at one iteration, the
cut; a gate may be bool AND, OR, XOR of such compares and of loop-invariant bools, tinygrad's
padding `k < i and i < m`); unroll_inner's `fold_gates` then resolves the loads. The pieces
run in order (each RANGE ordered after the previous piece's END, as passes/widen_tail.py's
tail loops), every iteration once with the same ops on the same elements, so the result is
bit-identical.

**Legality and cost** (the loop is left alone otherwise): the loop is a whole nest (its END
depends on no RANGE, no RANGE depends on its counter), closed by an END of its range alone,
its bound a constant N, every node that depends on its counter under that END, and no REG or
LOCAL buffer, AFTER or BARRIER in it; at most MAX_PIECES pieces (one or two cuts inside
(0, N)); at most MAX_REGION nodes copied a piece; passes/widen.py does not widen the loop as
it is (its per-lane gates already beat the copies' code).
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, rebuild, substitute_closed, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc

MAX_PIECES = 3
MAX_REGION = 256
_REFUSED = frozenset({Ops.AFTER, Ops.BARRIER, Ops.BUFFER, Ops.WMMA, Ops.RANGE, Ops.END})


def _global(place: UOp) -> bool:
    """Whether a LOAD's or STORE's place is on a GLOBAL kernel argument (not a REG or LOCAL
    buffer, whose accesses an iteration orders against the next)."""
    b = base_buffer(place.src[0]) if place.src else place
    return b.op is Ops.PARAM and b.arg.addrspace is AddrSpace.GLOBAL


def _cut(g: UOp, r: UOp) -> int | None:
    """The iteration from which gate g, a compare of r with a constant, takes its other
    value (`r < k`: true below k; `k < r`: true from k + 1), else None."""
    if g.op is not Ops.CMPLT or g.shape:
        return None
    a, b = g.src
    if a is r and (k := const_int(b)) is not None:
        return k
    if b is r and (k := const_int(a)) is not None:
        return k + 1
    return None


_BOOL_OPS = frozenset({Ops.AND, Ops.OR, Ops.XOR})


def _compares(g: UOp, r: UOp, dep: dict[UOp, frozenset[UOp]]) -> list[UOp] | None:
    """The compares of r with constants that gate g is made of (g itself, or bool AND, OR,
    XOR of them and of loop-invariant bools: each constant on a piece, so g folds to a
    constant or to its invariant part), or None when another node of g reads r."""
    out: list[UOp] = []
    stack, seen = [g], set()
    while stack:
        x = stack.pop()
        if x in seen or r not in dep[x]:
            continue
        seen.add(x)
        if _cut(x, r) is not None:
            out.append(x)
        elif x.op in _BOOL_OPS and x.dtype is not None and x.dtype.is_bool and not x.shape:
            stack.extend(x.src)
        else:
            return None
    return out


def _value(g: UOp, r: UOp, at: int) -> bool:
    """Gate g (one `_cut` accepts) at iteration `at`."""
    a, b = g.src
    return at < const_int(b) if a is r else const_int(a) < at  # type: ignore[operator]


def _pieces(e: UOp, r: UOp, n: int, region: list[UOp], gates: list[UOp],
            cuts: list[int]) -> UOp:
    """The END of the last of the loops over [0, c1), [c1, c2), … [ck, n), each the body of
    e with the counter `i3 + lo` and each gate its constant, ordered one after another."""
    bounds = [0, *cuts, n]
    body, after = e.src[0], None
    for lo, hi in zip(bounds, bounds[1:]):
        count = strong_int(hi - lo, r.dtype)
        rr = UOp(Ops.RANGE, (count, *r.src[1:]) + ((after,) if after is not None else ()),
                 r.arg)
        counter = rr if lo == 0 else UOp(Ops.ADD, (rr, strong_int(lo, r.dtype)))
        repl = {r: counter}
        repl.update({g: UOp.const(_value(g, r, lo)) for g in gates})
        sub = rebuild(region, repl)
        after = UOp(Ops.END, (sub.get(body, body), rr))
    assert after is not None
    return after


def _all_inside(e: UOp, r: UOp, region: list[UOp], dep: dict[UOp, frozenset[UOp]]) -> bool:
    """Whether every node of the region is under the loop's END. A user of a node that reads
    r reads r too until an END of r, so the walk from the body stays in the region."""
    inside: set[UOp] = set()
    stack = [e.src[0]]
    while stack:
        y = stack.pop()
        if y in inside or r not in dep[y]:
            continue
        inside.add(y)
        stack.extend(y.src)
    return all(x in inside for x in region)


def _gated_loads(order: list[UOp]) -> bool:
    """Whether the graph has a LOAD with a scalar gate. Sufficient to split nothing when
    not: a loop is split at the cuts of its loads' scalar gates, and without one it has no
    cut."""
    return any(x.op is Ops.LOAD and len(x.src) == 3 and not x.src[2].shape for x in order)


def split_gates(sink: UOp, desc: TargetDesc) -> UOp:
    """Every loop the module docstring allows, split at its gates' cuts; the gates that
    became constants resolved (passes/unroll_inner.py `fold_gates`)."""
    if desc.gpu:
        return sink
    order = toposort([sink])
    if not _gated_loads(order):
        return sink                 # (most kernels: no loop, region or range set asked)
    dep = range_sets(order)
    # the candidate loops: a top-level END of one RANGE with a constant bound
    ends = {e.src[1]: e for e in order if e.op is Ops.END and len(e.src) == 2 and not dep[e]
            and const_int(e.src[1].src[0]) is not None
            and all(s.op is Ops.RANGE for s in e.src[1].src[1:])}
    # each loop's region (the nodes reading its counter), in one pass over the order: a node
    # is in the regions of the few ranges it depends on (linear in the kernel)
    regions: dict[UOp, list[UOp]] = {r: [] for r in ends}
    for x in order:
        for r in dep[x]:
            if r in regions and x is not r:
                regions[r].append(x)
    repl: dict[UOp, UOp] = {}
    for r, e in ends.items():
        n = const_int(r.src[0])
        assert n is not None
        region = regions[r]
        if len(region) > MAX_REGION or any(x.op in _REFUSED or x.op in (Ops.LOAD, Ops.STORE)
                                           and not _global(x.src[0]) for x in region):
            continue
        if not _all_inside(e, r, region, dep):
            continue            # a node depends on the counter outside the loop's END
        gates: list[UOp] = []
        for x in region:
            if x.op is Ops.LOAD and len(x.src) == 3 and not x.src[2].shape:
                gates += _compares(x.src[2], r, dep) or []
        gates = list(dict.fromkeys(gates))
        cuts = sorted({c for g in gates if 0 < (c := _cut(g, r)) < n})  # type: ignore
        if not cuts or len(cuts) + 1 > MAX_PIECES:
            continue
        from kcc.passes.unroll_tiny import _widens
        if _widens(sink, e, desc):
            continue
        repl[e] = _pieces(e, r, n, region, gates, cuts)
    if not repl:
        return sink
    from kcc.passes.simplify import keep_params, simplify
    from kcc.passes.unroll_inner import fold_gates
    out = simplify(keep_params(sink, substitute_closed(sink, repl)), desc)
    return fold_gates(out, desc)
