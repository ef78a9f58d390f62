"""Widen elementwise loops across iterations: k iterations of a W-lane loop run as one
iteration of W*k lanes.

tinygrad's elementwise kernels read W = 4 consecutive elements per iteration (one SHRINK),
compute and store 4, and slp packs the lanes into 4-lane vector ops:

    for i in range(N):
        v = LOAD(SHRINK(a, c*i + base, W))       # c == W: iteration i+1 reads the next W
        STORE(SHRINK(out, c*i + base, W), f(v))  # f lane-wise over W-lane vectors

On a target whose vectors hold 8 or 16 lanes, the k = 2 or 4 iterations i = k*i2 + j read
and write k adjacent spans: one span of W*k elements. This pass rewrites the loop as

    for i2 in range(N // k):
        v = LOAD(SHRINK(a, c*(k*i2) + base, W*k))
        STORE(SHRINK(out, c*(k*i2) + base, W*k), f(v))       # f over W*k-lane vectors

Lane j*W + l of a widened vector is lane l of iteration k*i2 + j's vector. A lane-wise op
(ALU, CAST, BITCAST, WHERE: every IR op is lane-wise, docs/semantics.md) over widened srcs
computes exactly the lanes the k iterations computed; a loop-invariant W-lane src is repeated
k times. Scalar work the loop does per lane (what slp left as scalars, e.g. bool chains over
lane INDEXes, then STACKed) is copied once per iteration j, its lane INDEXes reading lane
j*W + l of the widened vector and its STACKs concatenated in j order, and the counter of
copy j is `k*i2 + j`. Every value is computed by the same op in the same dtype, so the result
is bit-identical.

**Legality** (the pass leaves a loop alone otherwise, which is always correct):
- the loop is innermost (no RANGE or END depends on its counter), closed by an END of its
  range alone, its bound is a constant N >= k, and every node that depends on its
  counter lies under that END;
- every memory access in it is an ungated LOAD or STORE of a SHRINK place of W elements of a
  kernel argument (a GLOBAL PARAM, possibly through an AFTER made outside the loop), whose
  start is `W*i + base + o` (i the counter, base a sum of terms free of i, o a constant):
  consecutive vectors. Gated accesses, element INDEX places (gathers, scalar loads), other
  strides and REG/LOCAL buffers are refused, and so are AFTER and BARRIER in the loop;
- widening runs the loads of k iterations before their stores. For every buffer the loop
  stores, all its accesses in the loop share one base, and no store's span of one iteration
  overlaps any access's span of an iteration 1 … k-1 apart (so no store of iteration i is read
  by a load of iteration i+1, and two iterations never write one element). Distinct PARAMs
  are distinct buffers, as in passes/unroll.py;
- every vector node is W lanes; the target stores W*k elements of each stored and loaded
  dtype at once (`TargetDesc.mem_legal`), and every op the target has at W lanes it also has
  at W*k (an op it has at neither is split by devectorize either way).

**Width**: the k of least N // k + N % k (passes/widen_tail.py: a bound k does not divide
runs its last N % k iterations in a tail loop of the original body) with W*k a legal width
by the rules above (x86-64-v3: 8 float32 lanes, v4 16; an int32 load, store, compare or
conversion limits v4 to 8: int32 x 16 is a value for the arithmetic, bitwise ops and shifts
only, TargetDesc.vector_ops_at). N = k is one block without a loop, and N = 2k two blocks in
straight line (their order unspecified, so only when no store's span meets another access's
span in any other of the N iterations) where the buffers the loop loads are not stored in the
kernel (widen_lanes.one_block).
GPU targets opt out: their lanes are threads, and their vector memory widths are 4 at most.

A loop whose body is scalar (no W-lane SHRINKs) is widened from one lane by
kcc/passes/widen_lanes.py, which also decomposes THREEFRY first (its docstring); one whose
body is c shifted copies of a scalar computation is first rerolled to one lane per iteration
by kcc/passes/widen_reroll.py.
"""

from __future__ import annotations

from kcc.ir.affine import Affine, affine, iterations_disjoint
from kcc.ir.consts import const_int, literal_value, strong_int
from kcc.ir.ops import ALU, COMPARE
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, free_reg_slot, substitute_closed, toposort
from kcc.passes.lane_loads import lane_loads
from kcc.passes.linearize import range_sets
from kcc.passes.simplify import keep_params, make_const
from kcc.passes.target import TargetDesc
from kcc.passes.widen_lanes import LaneLoop, expand_threefry, one_block
from kcc.passes.widen_tail import factors, split, tail_loop

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_LANEWISE = frozenset(ALU | {Ops.CAST, Ops.BITCAST})


def _scaled(n: UOp) -> UOp:
    """(x * a) << b → x * (a << b) and (x * a) * b → x * (a * b) on integers (wrapping, so
    exact in every dtype): the widened counter's factor k merges into the index's own scale,
    one induction step instead of a MUL and a shift per iteration."""
    dt = n.dtype
    if n.op not in (Ops.SHL, Ops.MUL) or dt is None or not dt.is_int or dt.is_weak or n.shape:
        return n
    x, b = n.src[0], const_int(n.src[1])
    a = const_int(x.src[1]) if x.op is Ops.MUL else None
    if a is None or b is None or (n.op is Ops.SHL and not 0 <= b < dt.bits):
        return n
    m = a << b if n.op is Ops.SHL else a * b
    return UOp(Ops.MUL, (x.src[0], make_const(literal_value(m, dt), dt)))


def _legal(n: UOp, width: int, desc: TargetDesc) -> bool:
    """Whether the target has vector node n (a LOAD, STORE or lane-wise op) at `width` lanes."""
    if n.op is Ops.LOAD:
        return desc.mem_legal(width, n.dtype)
    if n.op is Ops.STORE:
        return desc.store_legal(width, n.src[1].dtype)
    if n.op in (Ops.CAST, Ops.BITCAST):
        return desc.cast_legal(n.op, n.src[0].dtype, n.dtype, width)
    dt = n.src[0].dtype if n.op in COMPARE else n.dtype
    return desc.alu_legal(width, dt, n.op)


def _holds_loop(region: list[UOp], r: UOp) -> bool:
    """Whether a loop's region (the nodes that depend on its RANGE r) holds another RANGE:
    an outer loop, which none of the strategies for a loop `_Loop.check` refuses widens, so
    they are not tried (14 of the 27 loops of tinygrad's 11 captures, ~1% of compiling them).
    Sufficient: widen_lanes.py's LaneLoop.check (also ReduceLoop's, and both after
    widen_split.py's split, which keeps the RANGE: it depends on r) refuses a RANGE in the
    region; widen_reroll.py's reroll refuses a node neither a place, load, store nor a scalar
    lane-wise op; widen_reroll_reduce.py's terms reach the RANGE (the accumulator's place is
    constant, its AFTER reads nothing inside) through a walk whose `_sig` refuses it, or
    through a place index `affine` refuses (a RANGE neither r nor loop-invariant)."""
    return any(n.op is Ops.RANGE and n is not r for n in region)


class _Loop:
    """One innermost loop's body checked for widening: its region (the nodes that depend on
    the counter), their vector width W, its places and the vector nodes to legalize."""

    def __init__(self, r: UOp, end: UOp, dep: dict[UOp, frozenset[UOp]]) -> None:
        self.r, self.end, self.dep = r, end, dep
        # the walk enters only nodes that depend on r: the rest of the body (everything the
        # loop reads, up to the loops before it) is not walked once per loop
        cone = toposort([end.src[0]], lambda n: r in dep[n])
        self.region = [n for n in cone if r in dep[n]]
        self.width = 0
        self.places: list[UOp] = []
        self.vectors: list[UOp] = []

    def check(self) -> bool:
        """Whether every node of the region is of a form the widening rewrites (module
        docstring), recording W, the places and the vector nodes on the way."""
        r = self.r
        widths: set[int] = set()
        region = set(self.region)
        for n in self.region:
            if n is r:
                continue
            if n.op in (Ops.RANGE, Ops.END, Ops.AFTER, Ops.BARRIER):
                return False
            if n.op is Ops.SHRINK:
                w = const_int(n.src[2])
                buf = n.src[0]
                b = base_buffer(buf)
                if w is None or w < 2 or buf in region or b.op is not Ops.PARAM \
                        or b.arg.addrspace is not AddrSpace.GLOBAL or n.src[1] not in region:
                    return False
                widths.add(w)
                self.places.append(n)
            elif n.kind == "value" and n.shape:
                if len(n.shape) != 1:
                    return False
                widths.add(n.shape[0])
                if n.op is Ops.LOAD:
                    if len(n.src) != 1 or n.src[0].op is not Ops.SHRINK:
                        return False
                elif n.op is Ops.STACK:
                    if any(s.shape for s in n.src):
                        return False
                elif n.op in _LANEWISE:
                    if any(s.shape != n.shape for s in n.src):
                        return False
                else:
                    return False
                self.vectors.append(n)
            elif n.kind == "value":
                if n.op is Ops.INDEX:
                    v = n.src[0]
                    if v.kind != "value" or v not in region or const_int(n.src[1]) is None:
                        return False
                elif n.op not in _LANEWISE or any(s.shape for s in n.src):
                    return False
            elif n.op is Ops.STORE:
                if len(n.src) != 2 or n.src[0] not in region or n.src[0].op is not Ops.SHRINK:
                    return False
                self.vectors.append(n)
            elif n.op is not Ops.GROUP:
                return False
        if len(widths) != 1 or not self.places:
            return False
        self.width = widths.pop()
        return self._consecutive()

    def _consecutive(self) -> bool:
        """Every place starts at W*i + base + o; the stored buffers' accesses share one base."""
        r, dep = self.r, self.dep
        memo: dict[UOp, Affine | None] = {}
        self.spans: dict[UOp, list[tuple[int, bool]]] = {}
        bases: dict[UOp, frozenset] = {}
        stored = {base_buffer(n.src[0].src[0]) for n in self.vectors if n.op is Ops.STORE}
        users = {n.src[0]: n.op is Ops.STORE for n in self.vectors
                 if n.op in (Ops.LOAD, Ops.STORE)}
        for p in self.places:
            # the counter and the nodes free of it are leaves; anything else: not linear
            a = affine(p.src[1], lambda n: n is r or r not in dep.get(n, frozenset()), memo,
                       mulacc=True)
            if a is None or a[0].get(r) != self.width or p not in users:
                return False
            b = base_buffer(p.src[0])
            if b in stored:
                base = frozenset((t, c) for t, c in a[0].items() if t is not r)
                if bases.setdefault(b, base) != base:
                    return False
                self.spans.setdefault(b, []).append((a[1], users[p]))
        return True

    def independent(self, k: int) -> bool:
        """No store's span of one iteration meets another access's span 1 … k-1 iterations
        apart, in either direction (every span is W elements, W*d apart per d iterations)."""
        w = self.width
        return all(iterations_disjoint([(w, o, w, st) for o, st in spans], k)
                   for spans in self.spans.values())

    def factor(self, desc: TargetDesc) -> int:
        """The largest legal k (module docstring), 0 for none."""
        n_iter = const_int(self.r.src[0])
        w = self.width
        for k in factors(n_iter):
            if not self.independent(k):
                continue
            ok = True
            for n in self.vectors:
                if n.op in (Ops.LOAD, Ops.STORE):
                    ok = _legal(n, w * k, desc)
                elif n.op is not Ops.STACK:
                    ok = not _legal(n, w, desc) or _legal(n, w * k, desc)
                if not ok:
                    break
            if ok:
                return k
        return 0


def _repeat(v: UOp, k: int) -> UOp:
    """A loop-invariant vector's lanes repeated k times (one copy per widened iteration)."""
    if v.op is Ops.STACK:
        return UOp(Ops.STACK, v.src * k)
    lanes = tuple(UOp(Ops.INDEX, (v, UOp.const(j))) for j in range(v.shape[0]))
    return UOp(Ops.STACK, lanes * k)


def _widen_loop(loop: _Loop, k: int, once: bool = False, start: int = 0) -> tuple[UOp, UOp]:
    """(the loop's new END, its new RANGE): the region rewritten at W*k lanes; once: the
    body alone at counter `start` (iterations start … start+k-1 as one block), no END."""
    r, w = loop.r, loop.width
    dt = r.dtype
    r2 = UOp(Ops.RANGE, (split(r, k)[0],) + r.src[1:], r.arg)
    base = strong_int(start, dt) if once else UOp(Ops.MUL, (r2, strong_int(k, dt)))
    copies: dict[UOp, list[UOp]] = {
        r: [base] + [UOp(Ops.ADD, (base, strong_int(j, dt))) for j in range(1, k)]}
    wide: dict[UOp, UOp] = {}

    def scalar(s: UOp, j: int) -> UOp:
        c = copies.get(s)
        return s if c is None else c[j]

    def vector(s: UOp) -> UOp:
        v = wide.get(s)
        return v if v is not None else _repeat(s, k)

    for n in loop.region:
        if n is r:
            continue
        if n.op is Ops.SHRINK:
            cnt = n.src[2]
            cnt2 = strong_int(w * k, cnt.arg) if cnt.op is Ops.CAST else UOp.const(w * k)
            wide[n] = n.replace(src=(n.src[0], copies[n.src[1]][0], cnt2))
        elif n.op is Ops.STORE:
            wide[n] = n.replace(src=(wide[n.src[0]], vector(n.src[1])))
        elif n.op is Ops.GROUP:
            wide[n] = n.replace(src=tuple(dict.fromkeys(wide.get(s, s) for s in n.src)))
        elif n.shape:
            if n.op is Ops.LOAD:
                wide[n] = n.replace(src=(wide[n.src[0]],))
            elif n.op is Ops.STACK:
                wide[n] = UOp(Ops.STACK, tuple(scalar(s, j) for j in range(k) for s in n.src))
            else:
                wide[n] = n.replace(src=tuple(vector(s) for s in n.src))
        elif n.op is Ops.INDEX:
            lane = const_int(n.src[1])
            copies[n] = [UOp(Ops.INDEX, (wide[n.src[0]], UOp.const(j * w + lane)))
                         for j in range(k)]
        else:
            copies[n] = [_scaled(n.replace(src=tuple(scalar(s, j) for s in n.src)))
                         for j in range(k)]
    body = loop.end.src[0]
    if once:
        return wide.get(body, body), r2
    return UOp(Ops.END, (wide.get(body, body), r2)), r2


def _int_bound(n: UOp) -> bool:
    """Whether loop bound n is a constant or a scalar integer expression (of PARAMs: the
    verifier's rule for a RANGE bound), which passes/widen_tail.py splits."""
    return const_int(n) is not None or (n.dtype is not None and n.dtype.is_int
                                        and not n.dtype.is_weak and not n.shape)


def widen(sink: UOp, desc: TargetDesc) -> UOp:
    """Widen every innermost elementwise loop the module docstring allows."""
    sink, new_end = _plan(sink, desc)
    if not new_end:
        return sink
    # a loop ordered after another widened loop (a RANGE's order src: unroll's or a widening's
    # remainder loop) was rewritten from the graph before: its new END still reads old nodes
    # (the other loop's END, its own RANGE ordered after it), which take their new versions
    # in the same walk that puts the new ENDs in the graph (one walk for any chain of them)
    new = substitute_closed(sink, new_end)
    return keep_params(sink, new)


def widens_a_loop(sink: UOp, desc: TargetDesc) -> bool:
    """Whether widen rewrites a loop of sink (not only its loads' lanes, which it may split)."""
    return bool(_plan(sink, desc)[1])


def _plan(sink: UOp, desc: TargetDesc) -> tuple[UOp, dict[UOp, UOp]]:
    """(sink with its lanes split as widen reads them, each END widen rewrites → its new
    version); no ENDs when no loop is widened."""
    if desc.gpu:
        return sink, {}
    windows: dict[UOp, tuple[int, int]] = {}   # the split lanes' (lane, width): widen_stride
    sink = lane_loads(sink, desc, before_widen=True, windows=windows)   # (lanes read alone)
    order = toposort([sink])
    sink2 = expand_threefry(sink, desc, order)
    if sink2 is not sink:
        sink, order = sink2, toposort([sink2])
    ends = [n for n in order if n.op is Ops.END]
    if not ends:
        return sink, {}
    dep = range_sets(order)
    closed: dict[UOp, int] = {}
    for e in ends:
        for x in e.src[1:]:
            closed[x] = closed.get(x, 0) + 1
    # how many nodes depend on each RANGE (one pass; a loop's region must hold all of them)
    dependents: dict[UOp, int] = {}
    for n in order:
        for x in dep[n]:
            dependents[x] = dependents.get(x, 0) + 1
    # the RANGEs another RANGE depends on (an outer loop's, which that RANGE reads as an
    # order src): such a loop is never widened (`_holds_loop`: the other RANGE is a node of
    # its region, or a dependent outside it), so its region, a walk of most of the nest, is
    # not made (tinygrad's nests: every loop but the innermost)
    holders: set[UOp] = set()
    for n in order:
        if n.op is Ops.RANGE:
            for x in dep[n]:
                if x is not n:
                    holders.add(x)
    new_end: dict[UOp, UOp] = {}
    stored = frozenset(base_buffer(n.src[0].src[0]) for n in order if n.op is Ops.STORE)
    slot = free_reg_slot(order)          # the next REG slot for a reduction's lane buffers
    for e in ends:
        r = e.src[1]
        if len(e.src) != 2 or closed[r] != 1 or not _int_bound(r.src[0]):
            continue
        if r in holders:
            continue
        n_iter = const_int(r.src[0])
        loop = _Loop(r, e, dep)
        if dependents[r] != len(loop.region):    # a node depends on r outside its END
            continue
        if not loop.check():
            if _holds_loop(loop.region, r):
                continue            # (no strategy below widens it: _holds_loop)
            # a loop of scalars: widened across iterations from one lane (widen_lanes.py)
            lanes = LaneLoop(r, e, loop.region, dep)
            lanes.kernel_stored = stored
            lanes.windows = windows
            out = lanes.widen(n_iter, desc) if lanes.check() else None
            # what widen_split.py finds about this loop, for both of its callers below
            shared: dict[str, Any] = {}
            lanes2 = None
            if out is None:
                # short vector loads read lane by lane (pooling windows): split into scalar
                # loads, then widened from one lane (widen_split.py; imported here: saxpy's
                # compile never needs it)
                from kcc.passes.widen_split import not_scalar, split_lane_loads
                cut = split_lane_loads(r, e, loop.region, not_scalar, shared)
                if cut:
                    lanes2 = LaneLoop(r, cut[0], cut[1], cut[2])
                    lanes2.windows = cut[3]
                    out = lanes2.widen(n_iter, desc) if lanes2.check() else None
            if out is None:
                # a reduction into REG accumulators: lanes of partial results (widen_reduce.py;
                # imported here: a kernel without such a loop, saxpy's, never needs it)
                from kcc.passes.widen_reduce import ReduceLoop
                red = ReduceLoop(r, e, loop.region, dep, slot)
                out = red.widen(n_iter, desc) if red.find() and red.check() else None
                if out is not None:     # each loop's lane buffers their own slots
                    slot += len(red.accs)
            if out is None:
                # a term of c shifted copies an iteration (tinygrad's upcast reductions):
                # rerolled to one a lane, then widened (widen_reroll_reduce.py)
                from kcc.passes.widen_reroll_reduce import widen_reduction_rerolled
                got = widen_reduction_rerolled(r, e, loop.region, dep, slot, desc, shared)
                if got is not None:
                    out, used = got
                    slot += used
            if out is None:
                # c shifted copies of one scalar computation a lane: rerolled, then widened
                from kcc.passes.widen_reroll import widen_rerolled
                out = widen_rerolled(lanes, desc)
                if out is None and lanes2 is not None:
                    # ... whose lanes are a short vector load's, read one by one (int16's
                    # E_64_4: an int4 load, each lane cast and multiplied): split, rerolled
                    out = widen_rerolled(lanes2, desc)
            if out is not None:
                new_end[e] = out
            continue
        k = loop.factor(desc)
        if k:
            if n_iter == k and one_block(loop.r, loop.region, stored):
                # one block: no loop of one iteration (its counter, compare and branch;
                # interpolate's inner 4 float4 as one zmm)
                new_end[e] = _widen_loop(loop, k, once=True)[0]
                continue
            if n_iter == 2 * k and loop.independent(n_iter) \
                    and one_block(loop.r, loop.region, stored):
                # two blocks: straight-line, no loop of two iterations (its counter, compare
                # and branch outnumber scatter E_8_4's two zmm stores of zeros); unordered,
                # so no store of one iteration meets an access of any other
                new_end[e] = UOp(Ops.GROUP, (_widen_loop(loop, k, once=True)[0],
                                             _widen_loop(loop, k, once=True, start=k)[0]))
                continue
            out = _widen_loop(loop, k)[0]
            start = split(r, k)[1]
            if start is not None:
                out = tail_loop(r, e, loop.region, out, start)
            new_end[e] = out
    return sink, new_end
