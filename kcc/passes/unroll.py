"""Unroll-and-jam: f iterations of a loop that holds a REG accumulator run as one, their inner
loops fused, so the accumulators of the f iterations are f independent dependency chains.

tinygrad's reductions (matmul, row sums, softmax's max and sum, layernorm's mean) are

    for i in range(N):                 # an outer loop (WEAK): one output tile per iteration
        acc[...] = 0                   # a REG buffer, initialised every iteration
        for j in range(M):             # the reduce loop
            acc[...] = acc[...] + f(i, j)
        out[g(i)] = acc[...]

Each reduce iteration adds into the same accumulators, so the loop runs at the latency of that
add (float adds are not reassociated: docs/semantics.md), and the loads that do not depend on
i (matmul's A tile, its lane shuffles) are repeated for every i. Unrolling i by f and jamming:

    for i2 in range(N // f):
        acc_0[...] = 0; …; acc_{f-1}[...] = 0        # one REG buffer per copy
        for j in range(M):                             # one fused reduce loop
            acc_k[...] = acc_k[...] + f(f*i2 + k, j)   # for k = 0 … f-1, shared loads once
        out[g(f*i2 + k)] = acc_k[...]                  # for each k

Every copy computes exactly the values iteration f*i2 + k computed, with the same ops in the
same order (each accumulator still adds its terms in j order), so results are bit-identical.

Layout of the copies' accumulators: a tile of rows of W elements (W the widest vector the
kernel takes lanes of: tinygrad's upcast columns), accessed only at constant places within one
row, becomes ONE buffer whose row j holds row j of every copy side by side (`_jam`): matmul's
copies are adjacent column blocks, so a row of the jammed tile is f·W consecutive outputs,
and the lane packer (kcc/passes/slp.py) makes it one vector whose operands are one load of b's
row and a splat of a (x86-64-v4: 4 zmm rows of 16, no shuffles). A column loop's one-element
accumulators (`_columns`: every global load reads element i + terms free of i, tinygrad's
reductions over axis 0) become elements 0 … f-1 of one buffer, so the lane packer makes the
f chains one vector chain over a row load. Other buffers get one fresh buffer per copy.

**Legality** (checked on the graph; the pass refuses a loop otherwise, which is always correct).
The transformation reorders only effects of iterations of one group {f*i2 … f*i2+f-1}: groups
still run in order, and within each copy the order of its own effects is kept. So it is legal
when the iterations of a group do not interact:
- the loop bound N is a constant (symbolic bounds are left alone); when f does not divide
  it, the groups cover the first f*(N // f) iterations and the last N % f run one by one in
  a remainder loop of the original body ordered after the jammed loop (`_tail`): groups, then
  the rest, still in order. Every END in the loop closes one range, and every node that depends
  on the loop's RANGE lies under its END;
- inner loops (RANGEs closed inside the body) have bounds that do not depend on the loop
  (the format's rule already: bounds are constants and scalar PARAMs); they are fused;
- every STORE in the loop (inner loops included) reads the loop's counter or a privatized
  buffer through its value srcs, so its copies differ (one that reaches the counter only
  through ordering srcs — a RANGE's order srcs, an AFTER's deps — would be one node, run f
  times less often), and there is no BARRIER and no LOCAL buffer;
- a REG buffer stored in the loop is privatized (one fresh buffer per copy) only when no value
  flows through it from one iteration to the next: every access to it in the whole kernel is
  in the loop, and every LOAD of it reads constant elements that an ungated STORE of the same
  iteration wrote first — a store in the load's dependency cone that depends on the loop's
  RANGE and on no inner loop (it runs once per iteration, before the load). At least one REG
  buffer must be privatized (otherwise there is nothing to gain from the jam);
- a GLOBAL buffer stored in the loop is accessed in it only at `c*i + base + o` (c and the
  offsets o constants, base the same sum of terms free of i and of inner loops for every
  access), and for every store and every other access of it the element spans of iterations
  d = 1 … f-1 apart are disjoint: no two iterations of a group touch one element.

**Cost** (the target's choice): a factor f from FACTORS (those dividing N first; a remainder
loop only when none does, and not on the column loop passes/pack.py packs) whose accumulators
fit the target's vector registers (`TargetDesc.vector_regs`; 0 opts out of the pass), the
estimate `f * (acc + 1) <= vector_regs // 2` where acc counts the vector registers one copy's
privatized REG buffers need at the widest vector the target loads, a loop whose copied part has
at most MAX_COPIED nodes (compile time: the copies are graph nodes every later pass walks), and
inner loops whose copied work is at most MAX_INNER_WORK ops (a larger body hides the latency by
itself), and memory streams: the largest such f whose fused inner loops read at most
`TargetDesc.load_streams` streams (0: no limit). A stream is a global load whose address
advances with an inner loop; loads of one buffer whose addresses differ by a constant under
STREAM_WINDOW bytes (copies k apart differ by k times the counter's coefficient) are one
stream, and a load the copies share counts once. Each copy of a row reduction reads its own
rows (tinygrad's softmax max: 4 rows of one 4 KB page each, 16 streams at f = 4), and past what
the hardware prefetchers track the jammed loop runs slower although it runs fewer instructions;
matmul's copies read the same B lines 16 bytes apart and share the A tile (8 streams at f = 1
and at f = 4). On x86 the limit is 8 (docs/performance.md). Loops are taken innermost first; a
loop that encloses a jammed one is left alone.
"""

from __future__ import annotations


from kcc.ir.affine import affine, iterations_disjoint
from kcc.ir.consts import const_int, literal_value, strong_int
from kcc.ir.ops import ALU
from kcc.ir.ops import Ops
from kcc.ir.uop import (AddrSpace, ParamArg, UOp, base_buffer, free_reg_slot, keep_head_orders,
                        new_uop, rebuild, toposort)
from kcc.passes.linearize import range_sets
from kcc.passes.simplify import make_const
from kcc.passes.target import TargetDesc
from kcc.passes.unroll_legal import (  # noqa: F401 (pack.py, unroll_columns.py)
    _ORDERING, _PLACES, STREAM_WINDOW, _privatizable, _span, _streams, _varies)
from kcc.record import record

FACTORS = (4, 2)
MAX_COPIED = 600          # nodes of one copy of a loop body (f copies are made)
# ALU ops and memory accesses of one copy inside the inner loops: more already hide the
# accumulator's latency, and copies only add register pressure (conv2d's 339: 2 copies ran 4%
# more instructions under callgrind; matmul's 168: 27% fewer)
MAX_INNER_WORK = 256
# a loop whose global stores are indexed through a MULACC is jammed when its copied inner
# work is at most this: in bench/sweep_vs_clang.py tinygrad's conv2d r_4_14_14_2_4_8_3_3 (67
# ops a copy) ran 90 -> 130 us jammed by 2 or by 4, the row kernels of 5-13 ops 1.1-2.9x
# faster (docs/performance.md, "Remainder loops for unroll-and-jam")
MULACC_MAX_WORK = 32
_WORK = frozenset({Ops.LOAD, Ops.STORE}) | ALU


@record(frozen=True)
class _Plan:
    """One loop to unroll-and-jam: its RANGE and END, the factor, what gets copies of its own."""

    rng: UOp
    end: UOp
    factor: int
    private: tuple[UOp, ...]         # REG BUFFERs given one fresh buffer per copy
    inner: frozenset[UOp]            # RANGEs of the inner loops (fused)
    # a column jam wider than FACTORS (unroll_columns.py): its remainder loop may be jammed
    # again, by a narrower factor
    wide: bool = False
    # a wide column jam of the whole bound: its copies in chunks of these sizes, each chunk's
    # accumulators a buffer of their own (unroll_columns.py `column_chunks`); () one buffer
    chunks: tuple[int, ...] = ()
    # a wide column jam whose last chunk overlaps the one before (unroll_columns.py
    # `overlapped_chunks`): copy k's column; () copy k's column is k
    columns: tuple[int, ...] = ()


_OUT_OPS = frozenset({Ops.SHL, Ops.MUL, Ops.MULACC, Ops.ADD})  # what _constant_out moves
_APART = frozenset({Ops.RANGE, Ops.BUFFER, Ops.AFTER, Ops.END})  # `_jam`'s nodes not copied plainly
_PLACES_SET = frozenset({Ops.INDEX, Ops.SHRINK})


def _constant_out(n: UOp, addend: bool = False) -> UOp:
    """An integer node of a copy with a constant addend of its src moved outward:
    (x + c) << k → (x << k) + (c << k), (x + c) * k → x*k + c*k, (x + c) + y → (x + y) + c,
    MULACC(x + c, k, y) → MULACC(x, k, y) + c*k (tinygrad's row index `row*N + j`),
    (x + c) + c2 → x + (c + c2), and where addend (a wide column jam's copies, unroll_columns.py)
    MULACC(x, k, y + c) → MULACC(x, k, y) + c: tinygrad's `t*4 + j` of a column j under a
    reduce counter t (cumsum_5000 r_10_256_2_64_4, cumprod r_3_40_10_4). There each copy's
    gated loads were packed within the copy (its own 4 consecutive elements: one masked xmm
    load per copy and a transpose) instead of across the copies; with k out, the copies'
    indices differ by constants and pack across (one masked ymm load per element offset).
    Copy k's counter is `f*i2 + k`; moved out, its k ends as an address displacement instead
    of an index sum (and a register) of its own. Integer arithmetic wraps, so the value is
    the same in every dtype."""
    if n.op not in _OUT_OPS:         # (asked per node of each copy: the op first)
        return n
    dt = n.dtype
    if dt is None or not dt.is_int or dt.is_weak or n.shape:
        return n
    if n.op in (Ops.SHL, Ops.MUL) and n.src[0].op is Ops.ADD:
        k, c = const_int(n.src[1]), const_int(n.src[0].src[1])
        if k is not None and c is not None and (n.op is Ops.MUL or 0 <= k < dt.bits):
            m = c * k if n.op is Ops.MUL else c << k
            return UOp(Ops.ADD, (UOp(n.op, (n.src[0].src[0], n.src[1])),
                                 make_const(literal_value(m, dt), dt)))
    if n.op is Ops.MULACC:
        for i in (0, 1):
            x, m = n.src[i], n.src[1 - i]
            k, c = const_int(m), const_int(x.src[1]) if x.op is Ops.ADD else None
            if k is not None and c is not None:      # x's place keeps its operand order
                srcs = (x.src[0], m) if i == 0 else (m, x.src[0])
                return UOp(Ops.ADD, (UOp(Ops.MULACC, srcs + (n.src[2],)),
                                     make_const(literal_value(c * k, dt), dt)))
        y = n.src[2]
        c = const_int(y.src[1]) if addend and y.op is Ops.ADD else None
        if c is not None:       # MULACC(x, k, y + c) → MULACC(x, k, y) + c
            return UOp(Ops.ADD, (UOp(Ops.MULACC, n.src[:2] + (y.src[0],)),
                                 make_const(literal_value(c, dt), dt)))
    if n.op is Ops.ADD:
        a, b = n.src
        c1, c2 = const_int(b), const_int(a.src[1]) if a.op is Ops.ADD else None
        if c1 is not None and c2 is not None:
            # (x + c) + c2 → x + (c + c2): a remainder loop's counter `i3 + f*(N // f)` in
            # copy k of a jam of it (`unroll`'s wide column jams)
            return UOp(Ops.ADD, (a.src[0], make_const(literal_value(c1 + c2, dt), dt)))
        if const_int(b) is None and a.op is Ops.ADD and const_int(a.src[1]) is not None:
            return UOp(Ops.ADD, (UOp(Ops.ADD, (a.src[0], b)), a.src[1]))
        if const_int(a) is None and b.op is Ops.ADD and const_int(b.src[1]) is not None:
            return UOp(Ops.ADD, (UOp(Ops.ADD, (a, b.src[0])), b.src[1]))   # keeps the order
    return n


class _Loops:
    """The loop structure of one graph: range sets, the END of each range, body cones."""

    def __init__(self, sink: UOp) -> None:
        self.order = toposort([sink])
        # the nest's outer ENDs (the sink's first-src chain): their cones are prefixes of
        # this order, kept on them for `cone` (pack asks them next: each was a walk)
        keep_head_orders(self.order, 4)
        self._dep: dict[UOp, frozenset[UOp]] | None = None
        self.end_of: dict[UOp, UOp] = {}
        self.multi: set[UOp] = set()
        for n in self.order:
            if n.op is Ops.END:
                for r in n.src[1:]:
                    (self.multi.add(r) if len(n.src) > 2 else self.end_of.setdefault(r, n))

        self._cones: dict[UOp, list[UOp]] = {}
        self._readers: dict[UOp, list[UOp]] | None = None

    @property
    def dep(self) -> dict[UOp, frozenset[UOp]]:
        """The RANGEs each node depends on (linearize.py `range_sets`), made when first
        asked: a reading that only finds ENDs and cones (pack_rows.py, pack's last look
        over a jammed tile, where every loop is refused before its nodes are asked) does
        not compute them for the whole graph (~2 ms on matmul's 4,800 jammed nodes)."""
        d = self._dep
        if d is None:
            d = self._dep = range_sets(self.order)
        return d

    def readers(self) -> dict[UOp, list[UOp]]:
        """Each BUFFER → the nodes that read it as a src or hold a place of an AFTER of it
        (unroll_legal.py `_privatizable` asks whether all are inside a loop: one pass over
        the graph for every buffer and loop asked, not one per question)."""
        if self._readers is None:
            out: dict[UOp, list[UOp]] = {}
            for n in self.order:
                for s in n.src:
                    if s.op is Ops.BUFFER:
                        out.setdefault(s, []).append(n)
                if n.op in _PLACES and n.src[0].op is Ops.AFTER:
                    out.setdefault(base_buffer(n.src[0]), []).append(n)
            self._readers = out
        return self._readers

    def cone(self, end: UOp) -> list[UOp]:
        """The nodes under an END's body (the loop and what it reads), srcs first."""
        c = self._cones.get(end)
        if c is None:
            # the END's own order is the body's and then the END when the body reaches the
            # counter (the body's sort already visited it), as every loop's does; that order
            # is kept on the END, which unroll_tiny and unroll_inner sorted before, so it is
            # a copy, not a walk of the loop's whole cone (~0.5% of a compile)
            c = toposort([end])
            if c[-2] is end.src[0]:
                c.pop()
            else:
                c = toposort([end.src[0]])
            self._cones[end] = c
        return c


def _inner(loops: _Loops, r: UOp, cone: list[UOp]) -> list[UOp] | None:
    """The RANGEs of the loops closed inside r's body; None when one is closed by a
    several-range END."""
    inside = set(cone)
    res = []
    for n in cone:
        if n.op is Ops.RANGE and n is not r:
            if n in loops.multi:
                return None
            e = loops.end_of.get(n)
            if e is not None and e in inside:
                res.append(n)
    return res


def _analyze(loops: _Loops, r: UOp, desc: TargetDesc, factors: tuple[int, ...] | None = None,
             max_work: int | None = None, max_copied: int | None = None,
             after_loops: bool = False, tail: bool = False,
             elementwise: bool = False, retried: bool = False) -> _Plan | None:
    """The plan for unroll-and-jam of loop r, or None when it is not legal or does not pay
    (factors, max_work and max_copied: the cost rules' choices, passes/pack.py jams its row
    loop with its own, None the module's; after_loops: r's RANGE may be ordered after whole
    loops, which run before it and are not fused: pack's fill loop; tail: a factor that does
    not divide the bound may be taken when none does, the last N % f iterations then run in
    a remainder loop, `_tail`; elementwise: r is an innermost loop without REG buffers,
    `_scalar_loop`: its copies are jammed with nothing to privatize and no loop to fuse)."""
    end = loops.end_of.get(r)
    n_iter = const_int(r.src[0])
    if end is None or r in loops.multi or n_iter is None or n_iter < 2:
        return None
    cone = loops.cone(end)
    inner_l = _inner(loops, r, cone)
    if inner_l and after_loops:
        # loops the RANGE itself is ordered after run before it, not inside it
        before = set(toposort([r]))
        inner_l = [x for x in inner_l if x not in before]
    if inner_l is None or (not inner_l) != elementwise:
        return None
    inner = frozenset(inner_l)
    dep = loops.dep
    cone_set = set(cone)
    if any(r in dep[n] and n not in cone_set for n in loops.order):
        return None
    keys = inner | {r}
    inner_ends = {loops.end_of[x] for x in inner}
    # (isdisjoint: no intersection set built per node of the cone)
    region = [n for n in cone if not dep[n].isdisjoint(keys) or n in inner_ends]
    region_set = set(region)
    stored: dict[UOp, list[UOp]] = {}
    accesses: dict[UOp, list[UOp]] = {}
    for n in region:
        if n.op is Ops.BARRIER:
            return None
        if n.op in (Ops.LOAD, Ops.STORE):
            if n.src[0].op not in _PLACES:
                return None
            buf = base_buffer(n.src[0].src[0])
            if buf.op is Ops.BUFFER and buf.arg.addrspace is AddrSpace.LOCAL:
                return None
            accesses.setdefault(buf, []).append(n)
            if n.op is Ops.STORE:
                stored.setdefault(buf, []).append(n)
    varies = _varies(cone, r, {b for b in stored if b.op is Ops.BUFFER})
    if any(n not in varies for v in stored.values() for n in v):
        return None
    private = [buf for buf in stored if buf.op is Ops.BUFFER]
    if bool(private) == elementwise:       # a jam privatizes; a scalar loop has no REG
        return None
    # the cost limits before the legality walks (every check here is a pure test of the
    # graph, so their order changes no plan): conv2d's and softmax's loops over the work
    # limit skip `_privatizable` and the stores' affine reading
    copied = [n for n in region if n in varies]
    work = sum(1 for n in copied if dep[n] & inner and n.op in _WORK)
    if len(copied) > (MAX_COPIED if max_copied is None else max_copied) \
            or work > (MAX_INNER_WORK if max_work is None else max_work):
        return None
    if not _privatizable(loops, r, inner, region, region_set, private, cone):
        return None
    memo: dict = {}                  # idx as c*r + sum(coef*term) + o, the terms free of r
    mac_memo: dict = {}              # ... reading MULACC(x, k, y) as k*x + y (see below)
    via_mulacc = False
    glob: dict[UOp, list[tuple[int, int, int, bool]]] = {}
    for buf in stored:
        if buf.op is not Ops.PARAM:
            continue
        base = None
        for a in accesses[buf]:
            sp = _span(a.src[0])
            if sp is None or dep[sp[0]] & inner:
                return None
            af = affine(sp[0], lambda n: n is r or r not in dep.get(n, frozenset()), memo)
            if af is None and tail:
                # an index through tinygrad's MULACC(row, M, c): linear too, taken for
                # small bodies only (MULACC_MAX_WORK)
                af = affine(sp[0], lambda n: n is r or r not in dep.get(n, frozenset()),
                            mac_memo, mulacc=True)
                via_mulacc = af is not None
            if af is None:
                return None
            terms = dict(af[0])
            c = terms.pop(r, 0)
            if base is not None and terms != base:
                return None
            base = terms
            glob.setdefault(buf, []).append((c, af[1], sp[1], a.op is Ops.STORE))
    acc = 0
    for buf in private:
        lanes = max(desc.mem_widths.get(buf.arg.dtype, (1,)))
        acc += -(-(buf.arg.size or 1) // lanes)
    # a column loop whose copies each keep one scalar accumulator: the lane packer makes
    # the copies' accumulators one vector (passes/slp_reg.py scalar_reg_groups), so the jam
    # pays whatever the work (mean over axes 0 and 2, r_8_14_2_14: 0.18x -> 0.48x clang).
    # With several accumulators a copy (tinygrad's upcast rows) the copies stayed chains:
    # cumsum_777 r_3_128_2_4_64_4 jammed ran 2.4x -> 1.2x clang, cummax's 2.3x -> 0.8x
    from kcc.passes.unroll_columns import (column_chunks, column_loop, overlapped_chunks,
                                           stores_only, wide_columns)
    columns = via_mulacc and work > MULACC_MAX_WORK \
        and all(b.arg.size == 1 for b in private) and column_loop(loops, r, cone)
    if columns:
        via_mulacc = False
    fs = FACTORS if factors is None else factors
    if tail and not columns:     # dividing factors first (no remainder loop), then the others
        fs = tuple(f for f in fs if n_iter % f == 0) + tuple(f for f in fs if n_iter % f)
    wide = wide_columns(loops, r, cone, private, desc, n_iter, retried) \
        if factors is None and tail and not elementwise else ()
    for f in wide + fs:
        if f in wide:
            pass        # the copies' accumulators are one vector: no register estimate
        elif (n_iter % f and not (tail and n_iter > f)) \
                or f * (acc + 1) > desc.vector_regs // 2 \
                or (via_mulacc and work > MULACC_MAX_WORK):
            continue
        if desc.load_streams and _streams(region, varies, r, inner, dep, f) > desc.load_streams:
            continue
        if all(iterations_disjoint(v, f) for v in glob.values()):
            chunks = column_chunks(f, wide[1:]) if f in wide and f == n_iter else ()
            cols = overlapped_chunks(f, wide[1:]) if f in wide and f == n_iter \
                and stores_only(glob, stored) else ()
            if cols:
                chunks = (wide[1],) * (len(cols) // wide[1])
            elif wide and f == wide[0] == n_iter and len(wide) > 1 and n_iter % wide[1] \
                    and not chunks:
                continue        # (whole only as overlapping chunks, which this loop may not)
            return _Plan(r, end, f, tuple(private), inner, f in wide, chunks, cols)
    return None


def _row_width(loops: _Loops, cone: list[UOp], buf: UOp) -> int:
    """The row length W for interleaving buf's copies (`_jam`), or 0 to give each copy a
    buffer of its own: W is the widest vector the kernel takes lanes of (tinygrad's upcast
    width: matmul's 4 output columns), buf holds several rows of W, and every access to it is
    a constant place within one row."""
    w = max((n.src[0].shape[0] for n in loops.order if n.op is Ops.INDEX
             and n.src[0].kind == "value" and len(n.src[0].shape) == 1), default=0)
    size = buf.arg.size or 0
    if w < 2 or size <= w or size % w:
        return 0
    for n in cone:
        if n.op in _PLACES and n.src[0].kind == "buffer" and base_buffer(n.src[0]) is buf:
            sp = _span(n)
            start = const_int(sp[0]) if sp is not None else None
            if start is None or start // w != (start + sp[1] - 1) // w:
                return 0
    return w


def _jam(sink: UOp, loops: _Loops, plan: _Plan, rows_of: bool = True,
         unfused: frozenset[UOp] = frozenset(),
         tails: set[UOp] | None = None) -> tuple[UOp, set[UOp]]:
    """The graph with plan's loop unrolled and jammed; also the RANGEs it made.

    A privatized buffer of rows of W elements (`_row_width`) becomes one buffer whose row j
    holds row j of every copy side by side (copy k's element e at (e // W)·W·f + k·W + e % W;
    AFTERs of it shared by the copies): matmul's copies are 4 adjacent column blocks of the
    same 4 rows, so each row of the jammed tile is f·W consecutive elements, a run that the
    lane packer (kcc/passes/slp.py) makes one vector whose operands are a whole row of b
    and a splat of a. Every other buffer gets one fresh buffer per copy, and every one with
    rows_of False (passes/pack.py's row loop: its copies are further rows of the tile, each
    row already a whole vector).

    unfused: RANGEs of loops inside the fused ones that are not fused but copied, each copy
    past the first a RANGE with a fresh axis id (passes/pack.py's column pairs: one reduce
    loop per copy inside the fused row loop).

    tails: where given, the RANGEs of the remainder loop (`_tail`) go there, not into the
    RANGEs made (`unroll` jams a wide column jam's remainder loop again)."""
    r, end, f = plan.rng, plan.end, plan.factor
    dt = r.dtype
    r2 = UOp(Ops.RANGE, (strong_int(const_int(r.src[0]) // f, dt),) + r.src[1:], r.arg)
    scale = UOp(Ops.MUL, (r2, strong_int(f, dt)))
    cols = plan.columns or tuple(range(f))
    f = len(cols)                        # the copies (overlapping chunks: more than the bound)
    idx = [scale if c == 0 else UOp(Ops.ADD, (scale, strong_int(c, dt))) for c in cols]
    slot = free_reg_slot(loops.order)
    new: list[dict[UOp, UOp]] = [{r: idx[k]} for k in range(f)]
    rows: dict[UOp, int] = {}            # merged buffer → its copies' row length W
    # copy k's (first copy, copies) of its merged buffer: plan.chunks' chunk, else all f
    chunk = [(0, f)] * f
    start = 0
    for c in plan.chunks:
        chunk[start:start + c] = [(start, c)] * c
        start += c
    from kcc.passes.unroll_columns import column_loop
    columns = rows_of and column_loop(loops, r, loops.cone(end))
    for buf in plan.private:
        a: ParamArg = buf.arg
        w = _row_width(loops, loops.cone(end), buf) if rows_of else 0
        if not w and columns and a.size == 1:
            w = 1                        # a column loop's scalar accumulators: copy k's at k
        if w:
            for k0, c in dict.fromkeys(chunk) if w == 1 else [(0, f)]:
                merged = UOp(Ops.BUFFER, (), ParamArg(slot, a.dtype, a.size * c, a.vmin_vmax,
                                                      a.name, a.addrspace, a.volatile))
                slot += 1
                rows[merged] = w
                for k in range(k0, k0 + c):
                    new[k][buf] = merged
            continue
        for k in range(1, f):
            new[k][buf] = UOp(Ops.BUFFER, (), ParamArg(slot, a.dtype, a.size, a.vmin_vmax,
                                                      a.name, a.addrspace, a.volatile))
            slot += 1
    made = {r2}
    axis = 1 + max((n.arg[0] for n in loops.order if n.op is Ops.RANGE
                    and isinstance(n.arg, tuple)), default=0)

    def merged_of(n: UOp) -> UOp | None:
        b = base_buffer(n) if n.kind == "buffer" else None
        return b if b in rows else None

    def place(k: int, n: UOp) -> UOp:
        # copy k's place in a merged buffer: its row, then its block of W in that row
        b = base_buffer(n.src[0])
        w = rows[b]
        e = const_int(n.src[1])
        assert e is not None
        k0, c = chunk[k] if w == 1 else (0, f)
        e2 = e // w * w * c + (k - k0) * w + e % w
        c = n.src[1]
        return n.replace(src=(n.src[0], c.replace(src=(UOp.const(e2),)) if c.op is Ops.CAST
                              else make_const(e2, c.dtype)) + n.src[2:])

    def src_of(k: int, n: UOp, i: int, s: UOp) -> UOp:
        # an ordering src (AFTER deps, RANGE order srcs) orders after the new loop's counter
        if s is r and i > 0 and n.op in (Ops.AFTER, Ops.RANGE):
            return r2
        return new[k].get(s, s)

    # the ops the branches below treat apart (INDEX and SHRINK only with merged buffers);
    # every other node, most of the cone, takes the last branch: tested first, per node
    apart = _APART | (_PLACES_SET if rows else frozenset())
    wide = plan.wide
    for n in loops.cone(end):
        op = n.op
        if op not in apart:
            # (the last branch below: src_of is a lookup in new[k] here, and the node is
            # built directly, not through replace's keywords: this runs per node and copy;
            # _constant_out is asked only of the ops it moves)
            src = n.src
            for nk in new:
                srcs = tuple(map(nk.get, src, src))
                if srcs != src:
                    m = new_uop(UOp, op, srcs, n.arg, n.tag)
                    nk[n] = _constant_out(m, wide) if op in _OUT_OPS else m
            continue
        if n is r or n.op is Ops.BUFFER:
            continue
        if n.op is Ops.RANGE and n in plan.inner:
            srcs = list(dict.fromkeys(src_of(k, n, i, s) for k in range(f)
                                      for i, s in enumerate(n.src) if i > 0))
            shared = n.replace(src=(n.src[0],) + tuple(srcs))
            made.add(shared)
            for k in range(f):
                new[k][n] = shared
        elif n.op is Ops.RANGE and n in unfused:
            for k in range(f):
                srcs = tuple([src_of(k, n, i, s) for i, s in enumerate(n.src)])
                arg = n.arg if k == 0 else (axis, n.arg[1])
                axis += k > 0
                new[k][n] = n.replace(src=srcs, arg=arg)
                made.add(new[k][n])
        elif rows and n.op is Ops.AFTER \
                and merged_of(new[0].get(n.src[0], n.src[0])) is not None:
            # one AFTER of a merged buffer for every copy of its chunk, ordered after all
            # copies' deps
            deps = tuple(dict.fromkeys(src_of(k, n, i, s) for k in range(f)
                                       for i, s in enumerate(n.src) if i > 0))
            for k in range(f):
                new[k][n] = n.replace(src=(new[k].get(n.src[0], n.src[0]),) + deps)
        elif rows and n.op in _PLACES and n.src[0].kind == "buffer" \
                and merged_of(new[0].get(n.src[0], n.src[0])) is not None:
            for k in range(f):
                new[k][n] = place(k, n.replace(src=(new[k].get(n.src[0], n.src[0]),)
                                               + n.src[1:]))
        elif n.op is Ops.END and n.src[1] in plan.inner:
            bodies = tuple(dict.fromkeys(new[k].get(n.src[0], n.src[0]) for k in range(f)))
            merged = UOp(Ops.END, (UOp(Ops.GROUP, bodies), new[0][n.src[1]]))
            for k in range(f):
                new[k][n] = merged
        elif n.op in (Ops.AFTER, Ops.RANGE):
            for k in range(f):
                srcs = tuple([src_of(k, n, i, s) for i, s in enumerate(n.src)])
                if srcs != n.src:
                    new[k][n] = _constant_out(n.replace(src=srcs), plan.wide)
        else:
            # (most of the cone: src_of is a lookup in new[k] here, and the node is built
            # directly, not through replace's keywords: this runs per node and copy)
            for nk in new:
                srcs = tuple([nk.get(s, s) for s in n.src])
                if srcs != n.src:
                    nk[n] = _constant_out(new_uop(UOp, n.op, srcs, n.arg, n.tag), plan.wide)
    bodies = tuple(dict.fromkeys(new[k].get(end.src[0], end.src[0]) for k in range(f)))
    jammed = UOp(Ops.END, (UOp(Ops.GROUP, bodies), r2))
    if const_int(r.src[0]) % plan.factor:
        jammed, rest = _tail(loops, plan, jammed)
        if tails is None:
            made |= rest
        else:
            tails |= rest
    return rebuild(loops.order, {end: jammed}).get(sink, sink), made


def _tail(loops: _Loops, plan: _Plan, after: UOp) -> tuple[UOp, set[UOp]]:
    """The END of the remainder loop of a jam whose factor f does not divide the bound N:
    iterations f*(N // f) … N-1 of the original body, one after the other, in a loop whose
    RANGE is ordered after `after` (the jammed loop's END: docs/semantics.md, "Loop order",
    a RANGE's srcs after the bound are done before the loop starts). Its nodes are the
    original loop's with the counter `i3 + f*(N // f)` (an ordering src, an AFTER's dep or a
    RANGE's order src, takes the new RANGE itself; every inner RANGE is ordered after it, a
    RANGE of its own), and its REG buffers the original ones,
    which the jammed loop's copy 0 no longer reads or a fresh buffer replaced: every
    iteration runs exactly the ops it ran before, in the original order of the iterations.
    Also returns the RANGEs it made (not to be jammed again)."""
    r, end, f = plan.rng, plan.end, plan.factor
    dt = r.dtype
    n_iter = const_int(r.src[0])
    assert n_iter is not None
    r3 = UOp(Ops.RANGE, (strong_int(n_iter % f, dt),) + r.src[1:] + (after,), r.arg)
    counter = UOp(Ops.ADD, (r3, strong_int(n_iter - n_iter % f, dt)))
    out: dict[UOp, UOp] = {}
    made = {r3}
    for n in loops.cone(end):
        if n is r:
            continue
        srcs = tuple([(r3 if i > 0 and n.op in _ORDERING else counter) if s is r
                      else out.get(s, s) for i, s in enumerate(n.src)])
        if n in plan.inner and r3 not in srcs:
            srcs += (r3,)        # a RANGE of its own (the jammed loop closes the original)
        if srcs != n.src:
            out[n] = n.replace(src=srcs)
            if n.op is Ops.RANGE:
                made.add(out[n])
    body = end.src[0]
    return UOp(Ops.END, (out.get(body, body), r3)), made


def _packs(loops: _Loops, r: UOp, desc: TargetDesc) -> bool:
    """Whether passes/pack.py would pack the nest whose column loop is r (its plan needs the
    column loop's END to be the whole body of the loop around it: a remainder loop beside
    the jammed one would turn it off)."""
    if desc.pack_bytes <= 0:
        return False
    from kcc.passes.pack import _analyze as _pack_plan
    return _pack_plan(loops, r, desc) is not None


def unroll(sink: UOp, desc: TargetDesc, packing: bool = True) -> UOp:
    """Unroll-and-jam every loop the module docstring allows, innermost first; first, on a
    target that asks for it, tiny elementwise nests (passes/unroll_tiny.py) and short reduce
    loops (passes/unroll_full.py) are unrolled fully, and loops gated by compares of their
    counter split where the gates change (passes/split_gates.py); last, on
    a target with `pack_bytes`, a jammed matmul tile's strided operand is packed
    (passes/pack.py; packing False: the jams alone, as the pipeline makes them for pack)."""
    if desc.tiny_unroll > 0:
        from kcc.passes.unroll_inner import unroll_inner
        from kcc.passes.unroll_tiny import unroll_tiny
        from kcc.passes.split_gates import split_gates
        sink = split_gates(unroll_inner(unroll_tiny(sink, desc), desc), desc)
    if desc.full_unroll > 0:
        from kcc.passes.unroll_full import unroll_full
        sink = unroll_full(sink, desc)
    if desc.vector_regs <= 0:
        return sink
    done: set[UOp] = set()
    retry: set[UOp] = set()     # remainder loops of wide column jams, ordered after them
    while True:
        loops = _Loops(sink)
        cands = []
        for r, end in loops.end_of.items():
            cone = loops.cone(end)
            if r in retry:
                before = set(toposort([r])) - {r}
                cone = [n for n in cone if n not in before]
            if any(n in done for n in cone):
                continue
            cands.append((sum(1 for n in cone if n.op is Ops.RANGE), r))
        plan = None
        for _, r in sorted(cands, key=lambda c: c[0]):
            plan = _analyze(loops, r, desc, tail=True, after_loops=r in retry,
                            retried=r in retry)
            if plan is not None and (const_int(r.src[0]) % plan.factor or plan.chunks) \
                    and _packs(loops, r, desc):
                # pack's column loop: packed unjammed, as before remainders (a jam in
                # chunks stands for one: conv_transpose r_10_10_2_3_3's 8 + 2 lost its pack)
                plan = None
            if plan is not None:
                break
        if plan is None:
            break             # every PARAM is still read: copy 0 reads what the loop read
        rest: set[UOp] = set()
        sink, made = _jam(sink, loops, plan, tails=rest if plan.wide else None)
        # a wide column jam's remainder loop, ordered after it, is jammed again, narrower
        retry |= {m for m in rest if m.arg == plan.rng.arg}
        done |= made
    if 64 in desc.mul_high:
        from kcc.passes.unroll_scalar import scalar_loops
        sink = scalar_loops(sink, desc, done, loops)     # (loops: this very sink's)
    if desc.pack_bytes > 0 and packing:
        # the jammed tile's strided operand packed, its loops interchanged (passes/pack.py)
        from kcc.passes.pack import pack
        sink = pack(sink, desc, loops)       # (loops: the structure of this very sink)
    return sink
