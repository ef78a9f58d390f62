"""Pack a strided operand of a reduction tile into a contiguous scratch buffer, and interchange
the two loops around the reduction so the packed slab is reused.

tinygrad's matmul after unroll-and-jam (kcc/passes/unroll.py) is

    for o in range(NO):                        # row blocks of a (WEAK)
        for c in range(NC):                    # jammed column blocks of b (WEAK)
            acc[...] = 0
            for r in range(NR):                # the reduce loop
                acc[...] += a[o, r] * b[sR*r + sC*c + o_i]      # o_i: constant offsets
            out[g(o, c)] = acc[...]

Each b load reads a row of 16 columns, rows sR elements apart (2 KiB at 512³, 4 KiB at 1024³):
the slab of one column block maps to 1-2 sets of L1 and is re-read from L2 or L3 for every row
block (docs/performance.md, "x86 near the machine's limits"). This pass makes it

    for c in range(NC):
        for p in range(NR):                    # the slab, k-major and contiguous (per worker)
            pack[p*F + rank(o_i)] = b[sR*p + sC*c + o_i]        # every distinct (o_i, lanes)
        for o in range(NO):
            acc[...] = 0
            for r in range(NR):
                acc[...] += a[o, r] * pack[r*F + rank(o_i)]
            out[g(o, c)] = acc[...]

F is the number of distinct elements one reduce iteration reads (the footprint, e.g. 4 k rows
of 16 columns = 64), rank(e) the place of element e in it (sorted), so loads of consecutive
elements stay consecutive (the lane packer still reads a row of 16 as one zmm; the fill copies
runs of consecutive loads as the widest vectors the target has, `_copies`). pack is a REG
buffer, which x86 keeps in the worker's stack frame (kcc/isel/x86/select.py, sel_BUFFER): one
per worker, sized statically.

**Semantics.** Every load of b reads the value b holds (b is not stored anywhere in the kernel,
so the copy equals it), and every output is computed by the same operations in the same order
(each accumulator still adds its terms in r order): bit-identical results. The interchange
only reorders whole (o, c) iterations, legal when they do not interact:
- the nest is exactly two loops: c's only order src is o's RANGE, o's END closes c's END and
  nothing else, both bounds are constants, no node outside o's END depends on o or c, every
  other RANGE and every STORE of the nest depends on c;
- every REG buffer stored in the nest carries no value from one (o, c) iteration to the next
  (unroll's rule, `_privatizable`, for loop c: each load reads elements a store of the same
  iteration wrote first);
- every GLOBAL buffer stored in the nest is never loaded in the kernel and every buffer loaded
  there is never stored (so only the stores' order could differ), each store's place is
  `cO*o + cC*c + base + k` (one base per buffer) and the element sets of distinct (o, c)
  iterations are disjoint (checked exactly: `_disjoint`);
- no BARRIER, no LOCAL buffer.

**Cost** (the target's choice: `TargetDesc.pack_bytes`, 0 opts out): a buffer is packed when
the rows the loop reads are at least MIN_ROW_STRIDE bytes apart (the gaps between the runs of
one iteration's footprint and to the next iteration's; a contiguous operand needs no copy),
the slab (NR·F elements) fits pack_bytes, and it is reused by at least MIN_REUSE row blocks
(the copy costs one load and store per element, the loop reads each NO times).

**k blocking** (`_kblock`; off: K_BLOCK_BYTES = 0). A slab larger than K_BLOCK_BYTES can be
cut into chunks of the reduce loop by a loop outside the column loop, each chunk's slab packed
in turn; every accumulator element then starts, from the second chunk on, from the output
element it was copied to (`WHERE(chunk != 0, out[...], initial value)`): float32 stored and
loaded exactly, each output still adding its terms in r order, so bit-identical as well. It
applies only when the nest's outputs are plain copies of its accumulators (`_out_places`),
and the kernel then reads its output buffer. Measured on the 2-core AVX-512 VM at 1024³ (slab
64 KiB → 2 chunks of 32 KiB): 20.3 / 25.2 GFLOP/s (exact / contracted, fastest of 15 rounds)
against 25.0 / 30.3 without it in the same rounds, so it is off; docs/performance.md.

**Row jam** (`_jam_rows`; off: ROW_FACTORS = ()). After the interchange the row loop o is
directly over the reduce loop, the shape unroll-and-jam takes (kcc/passes/unroll.py): its
legality rules and register estimate are applied to o as they are (the fill loop, which o is
ordered after, runs before it and is not fused), with limits on the copied work that admit a
whole column-jammed tile, and each copy's accumulators get a buffer of their own (the copies
are further rows, each already a vector of b's row). On x86-64-v4 the tile becomes 8 rows ×
16 columns (8 zmm accumulators; the estimate 2 × (4 + 1) = 10 of the 16 it allows, half of
32): each packed slab load feeds 8 rows instead of 4 (per 4 k: 4 slab loads, 32 `{1to16}`
broadcasts of a, 40 FP operations with contraction, where two iterations of the 4-row tile
took 8, 32 and 40). x86-64-v3's 4 × 8 tile (4 ymm accumulators) would need 2 × (4 + 1) = 10
of the 8 the estimate allows of its 16 registers, so it is left alone.
Exact like unroll's jam: every output keeps its operations and their order.

**Column widening** (`_widen_cols`; off: COL_FACTOR = 0). A slab larger than COL_WIDEN_BYTES
(32 KiB: 1024³'s 16-column slab is 64 KiB and read from L2) means a long reduce loop, and
the row loop's operand, a, is read whole once per column block: at 1024³ all 4 MiB of it, 64
times, from L3. Before the interchange the jammed column loop c is directly over the reduce loop, so
it is jammed once more by COL_FACTOR with unroll's rules (each copy an accumulator buffer of
its own): a column block is then 32 columns, its slab 128 KiB (must fit pack_bytes), and a is
read half as often. On x86-64-v4 the tile becomes 4 rows × 32 columns (8 zmm accumulators, each
broadcast of a feeding 2 FMAs); the row jam above then finds 2 × (8 + 1) = 18 registers, over
the 16 its estimate allows, and leaves it. Measured at 1024³ (docs/performance.md): +11–19%
with contraction, +4–8% exact. A nest is widened once (its new RANGEs are remembered), and only
when the widened nest is packed. Exact: a jam.

**Column pairs** (`_pair_cols`; off: PAIR_FACTOR = 1). After a widened nest is packed and
interchanged, its column loop is unrolled by PAIR_FACTOR without fusing the reduce loops:
one fill loop packs both blocks' slabs (a buffer each), and each row block runs the first
block's reduce loop, then the second's (unroll's `_jam` with the reduce loop `unfused`, each
copy an accumulator buffer of its own). The first reads a's 4 rows from memory (L3 at 1024³:
a is 2 MiB a worker, read once per column block), the second from L1/L2, so a comes from L3
once per 64 columns instead of 32, with the same 4 × 32 tile and no more registers. Both
slabs (256 KiB at 1024³) must fit pack_bytes. Legal as the interchange is: whole (o, c)
iterations reordered, each with its operations in their order. (Where wide tiles apply, below,
the row loop is jammed and the column loop is not paired.)

**Wide tiles** (off: WIDE_REGS past the target's registers). On a target with WIDE_REGS (32)
vector registers every packed nest is widened (whatever its slab's size), and the widened
nest's row loop is jammed too, with unroll's register estimate over the whole file instead of
half (2 × (8 + 1) = 18 of 32) and larger work limits: x86-64-v4's tile becomes 8 rows × 32
columns, 16 zmm accumulators, 8 slab rows and each row's 4 broadcasts of a, each broadcast
feeding 2 FMAs and each slab load 8 rows (per 4 k: 8 slab loads and 32 broadcasts for 80 FP
operations, where 8 × 16 took 4 and 32 for 40). The jams leave the reduce body copy-major
(row copy, column copy, then the tile's rows) and the linearizer takes ready nodes in that
order, so the broadcasts of 4 rows stayed live across the other column copy and 8
accumulators spilled; `pack_rows.rows_interleaved` regroups the accumulator stores as row j of each
column copy, then row j + 1 (16 + 8 + 4 + 1 registers, no spill). Only the order of stores to
distinct accumulator elements within one iteration changes: the same values.
"""

from __future__ import annotations


from kcc.ir.affine import affine
from kcc.ir.consts import const_int, const_value, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, AxisType, ParamArg, UOp, base_buffer, free_reg_slot, substitute
from kcc.passes.pack_rows import rows_interleaved
from kcc.passes.target import TargetDesc
from kcc.passes.unroll import _analyze as _unroll_plan
from kcc.passes.unroll import _inner, _Loops, _privatizable, _span
from kcc.passes.unroll import _Plan as _UPlan
from kcc.passes.unroll import _jam as _unroll_jam
from kcc.record import record, replace

# b's rows this many bytes apart or more are packed: a row of 16 float32 is 64 bytes, and rows
# 1 KiB apart or more fall into few L1 sets (48 KiB L1, 12 ways: sets 64 bytes x 64 apart
# repeat every 4 KiB; Intel optimization manual, "Cache and memory subsystem") and defeat the
# L2 streamer, which follows accesses within one 4 KiB page
MIN_ROW_STRIDE = 1024
# the slab is read once per row block: below this many the copy is not paid back
MIN_REUSE = 4
# k blocking (module docstring): a slab larger than this many bytes is cut into chunks of the
# reduce loop that fit it (32 KiB would be two thirds of a 48 KiB L1); 0: off, as measured
K_BLOCK_BYTES = 0
MIN_CHUNK = 16
# Row jam (module docstring): the factors tried for the interchanged row loop (largest first;
# () off), the most ALU ops and accesses one copy of its reduce loop may hold and the most
# nodes one copy may have (a copy is the whole column-jammed tile: tinygrad's 512³ tile after
# unroll is 648 and 1069, past unroll's limits for loops that hide their latency alone)
ROW_FACTORS = (2,)
ROW_MAX_WORK = 1024
ROW_MAX_COPIED = 2048
# Column widening (module docstring): a slab larger than this many bytes (it is read from L2,
# not L1, so the row loop's operand, read once per column block, is the larger stream) gets
# its jammed column loop jammed again by COL_FACTOR, where the wider slab fits pack_bytes
COL_WIDEN_BYTES = 32 * 1024
COL_FACTOR = 2
# Column pairs (module docstring): a widened nest's column loop is unrolled by PAIR_FACTOR
# (its fill and row loops fused, each copy a reduce loop of its own) where the copies' slabs
# fit pack_bytes together
PAIR_FACTOR = 2
# Wide tiles (module docstring): on a target with at least this many vector registers every
# packed nest is widened (not only a slab over COL_WIDEN_BYTES), and the widened nest's row
# loop is jammed with the register estimate over the whole file and these work limits: the
# tile becomes 8 rows x 32 columns on x86-64-v4 (16 accumulators, 8 slab rows, 4 broadcasts)
WIDE_REGS = 32
WIDE_ROW_MAX_WORK = 2048
WIDE_ROW_MAX_COPIED = 4096
_PLACES = (Ops.INDEX, Ops.SHRINK)


@record(frozen=True)
class _Operand:
    """A buffer to pack: its loads in the reduce loop and how their places decompose."""

    buf: UOp
    loads: tuple[UOp, ...]                   # LOADs in the reduce loop, srcs[0] a place
    offsets: tuple[tuple[int, int], ...]     # each load's (constant offset, lanes)
    rep: UOp                                 # one load's index: T(r, c) + rep_off
    rep_off: int
    rank: dict[int, int]                     # element offset → place in one packed row
    width: int                               # F: elements one reduce iteration reads


@record(frozen=True)
class _Plan:
    """One packing: the three loops, their ENDs and the operands packed."""

    outer: UOp                # o's RANGE
    col: UOp                  # c's RANGE
    red: UOp                  # r's RANGE
    end_o: UOp
    end_c: UOp
    operands: tuple[_Operand, ...]


@record(frozen=True)
class _KBlock:
    """k blocking: the reduce loop run in chunks of `size` iterations; each accumulator
    element's first STORE reloads, from the second chunk on, the output element it is copied
    to: WHERE(chunk != 0, lane of a load of the output place, the original initial value). The
    load is not gated (the output place is in bounds in every chunk; a value of the first
    chunk is not used), so the lane packer keeps the accumulator rows whole vectors."""

    size: int
    reload: dict[UOp, tuple[UOp, int]]   # initial STORE → (output place, lane; -1: scalar)


def _disjoint(accesses: list[tuple[int, int, int, int]], n_o: int, n_c: int) -> bool:
    """Whether stores (cO, cC, offset, lanes), each of elements cO*o + cC*c + base + offset
    … + lanes-1 in iteration (o, c), never write one element in two distinct iterations."""
    co, cc = accesses[0][0], accesses[0][1]
    if any(a[0] != co or a[1] != cc for a in accesses) or co == 0 or cc == 0:
        return False
    elems = sorted({a[2] + k for a in accesses for k in range(a[3])})
    # the elements as runs of consecutive ones: the differences of two runs' elements are
    # one interval, so the question (is some difference co*do + cc*dc for an iteration step
    # (do, dc) != (0, 0)?) is asked per pair of runs and dc, not per distinct difference
    # (a 4 x 32 tile's stores: 16 intervals against ~440 differences, and no set of the
    # e^2 differences built)
    runs: list[tuple[int, int]] = []
    for e in elems:
        if runs and runs[-1][1] == e - 1:
            runs[-1] = (runs[-1][0], e)
        else:
            runs.append((e, e))
    lim = n_o - 1
    for s1, e1 in runs:
        for s2, e2 in runs:
            lo, hi = s1 - e2, e1 - s2            # every difference between the two runs
            for dc in range(-(n_c - 1), n_c):
                a, b = lo - cc * dc, hi - cc * dc    # co*do must lie in [a, b]
                if co > 0:
                    d_lo, d_hi = -(-a // co), b // co
                else:
                    d_lo, d_hi = -(-b // co), a // co
                d_lo, d_hi = max(d_lo, -lim), min(d_hi, lim)
                if d_lo <= d_hi and (dc != 0 or d_lo != 0 or d_hi != 0):
                    return False
    return True


def _operands(loops: _Loops, red: UOp, col: UOp, outer: UOp, cone: list[UOp],
              stored: set[UOp], desc: TargetDesc, n_o: int) -> list[_Operand]:
    """The buffers worth packing: loaded in r's body at sR*r + sC*c + invariant + constant."""
    dep = loops.dep
    n_r = const_int(red.src[0])
    assert n_r is not None
    memo: dict = {}
    found: dict[UOp, list[tuple[UOp, dict, int, int]]] = {}
    for n in cone:
        if n.op is not Ops.LOAD or len(n.src) != 1 or red not in dep[n]:
            continue
        place = n.src[0]
        if place.op not in _PLACES or len(place.src) != (2 if place.op is Ops.INDEX else 3):
            continue
        buf = base_buffer(place.src[0])
        if buf.op is not Ops.PARAM or buf in stored:
            continue
        sp = _span(place)
        if sp is None:
            continue
        # leaves: r, c and loop-invariant terms; a term of o (or of any other loop) is none
        # of these, and makes the decomposition None
        af = affine(sp[0], lambda x: x in (red, col) or not dep.get(x), memo)
        if af is None or af[0].get(red, 0) == 0:
            continue
        terms = af[0]
        found.setdefault(buf, []).append((n, terms, af[1], sp[1]))
    out = []
    for buf, ls in found.items():
        terms = ls[0][1]
        ls = [x for x in ls if x[1] == terms]
        elems = sorted({o + k for _, _, o, w in ls for k in range(w)})
        # the distance between the rows the loop reads: between the runs of one iteration's
        # footprint, and from the last run to the next iteration's first
        starts = [e for e in elems if e - 1 not in elems]
        gaps = [y - x for x, y in zip(starts, starts[1:])] + [starts[0] + terms[red] - starts[-1]]
        row = min(gaps) * buf.dtype.itemsize
        # every load's lanes must be consecutive places of the packed row
        rank = {e: i for i, e in enumerate(elems)}
        if any(rank.get(o + w - 1, -1) - rank[o] != w - 1 for _, _, o, w in ls):
            continue
        slab = n_r * len(elems) * buf.dtype.itemsize
        if row < MIN_ROW_STRIDE or slab > desc.pack_bytes or n_o < MIN_REUSE:
            continue
        rep = ls[0][0].src[0]
        out.append(_Operand(buf, tuple(x[0] for x in ls), tuple((o, w) for _, _, o, w in ls),
                            _span(rep)[0], ls[0][2], rank, len(elems)))
    return out


def _analyze(loops: _Loops, col: UOp, desc: TargetDesc) -> _Plan | None:
    """The plan for loop c (the column loop), or None when it is not legal or does not pay."""
    end_c = loops.end_of.get(col)
    n_c = const_int(col.src[0])
    rs = [s for s in col.src[1:] if s.op is Ops.RANGE]
    if end_c is None or col in loops.multi or n_c is None or len(col.src) != 2 or not rs:
        return None
    outer = rs[0]
    end_o = loops.end_of.get(outer)
    n_o = const_int(outer.src[0])
    # every check below is a pure test of the graph, so their order changes no plan: the
    # cheap ones and the operand costs run first, because BEAM's candidates (tinygrad
    # BEAM=2 on a 256^3 matmul or a conv) reach this for each loop and none of them packs;
    # the walks over the whole graph and region then ran for nothing (docs/performance.md,
    # "BEAM candidates: compile time by pass")
    if end_o is None or outer in loops.multi or n_o is None or end_o.src[0] is not end_c \
            or n_o < MIN_REUSE:                # no operand is worth packing (_operands)
        return None
    dep = loops.dep
    inner = _inner(loops, col, loops.cone(end_c))
    if not inner:
        return None
    reds = [r for r in inner if col in r.src[1:] and not (_inner(loops, r, loops.cone(
        loops.end_of[r])) or [])]
    if len(reds) != 1 or const_int(reds[0].src[0]) is None:
        return None
    red = reds[0]
    stored: set[UOp] = set()
    loaded: set[UOp] = set()
    for n in loops.order:
        if n.op in (Ops.LOAD, Ops.STORE) and n.src[0].op in _PLACES:
            (stored if n.op is Ops.STORE else loaded).add(base_buffer(n.src[0].src[0]))
    ops = _operands(loops, red, col, outer, loops.cone(loops.end_of[red]), stored, desc, n_o)
    if not ops:
        return None
    cone = loops.cone(end_o)
    cone_set = set(cone)
    if any((outer in dep[n] or col in dep[n]) and n not in cone_set for n in loops.order):
        return None
    oc = {outer, col}         # (built once: a set literal per node of the cone was 1.5%)
    region = [n for n in cone if not dep[n].isdisjoint(oc)]
    region_set = set(region)
    glob: dict[UOp, list[tuple[int, int, int, int]]] = {}
    bases: dict[UOp, dict] = {}
    memo: dict = {}
    for n in region:
        if n.op is Ops.BARRIER:
            return None
        if n.op is Ops.RANGE and n is not outer and col not in dep[n]:
            return None
        if n.op not in (Ops.LOAD, Ops.STORE):
            continue
        if n.src[0].op not in _PLACES:
            return None
        buf = base_buffer(n.src[0].src[0])
        if buf.op is Ops.BUFFER and buf.arg.addrspace is AddrSpace.LOCAL:
            return None
        if buf.op is not Ops.PARAM:
            continue
        if n.op is Ops.LOAD:
            if buf in stored:
                return None
            continue
        sp = _span(n.src[0])
        if buf in loaded or sp is None or col not in dep[n] or dep[sp[0]] & set(inner):
            return None
        af = affine(sp[0], lambda x: x in (outer, col) or not dep.get(x) & {outer, col},
                    memo)
        if af is None:
            return None
        terms = dict(af[0])
        co, cc = terms.pop(outer, 0), terms.pop(col, 0)
        if bases.setdefault(buf, terms) != terms:
            return None
        glob.setdefault(buf, []).append((co, cc, af[1], sp[1]))
    if not all(_disjoint(v, n_o, n_c) for v in glob.values()):
        return None
    inner_c = frozenset(inner)
    # (the sets built once, not per node of the cone: 1.4% of unroll at v4 on matmul)
    c_keys = inner_c | {col}
    inner_ends = {loops.end_of[x] for x in inner_c}
    c_region = [n for n in loops.cone(end_c) if not dep[n].isdisjoint(c_keys)
                or n in inner_ends]
    c_set = set(c_region)
    # the buffers the region places into, found in one scan (not one per stored buffer)
    private = [buf for buf in stored if buf.op is Ops.BUFFER]
    if private:
        placed = {base_buffer(n.src[0]) for n in region_set
                  if n.op in _PLACES and n.src[0].kind == "buffer"}
        private = [buf for buf in private if buf in placed]
    if not _privatizable(loops, col, inner_c, c_region, c_set, private, loops.cone(end_c)):
        return None
    return _Plan(outer, col, red, end_o, end_c, tuple(ops))


def _out_places(loops: _Loops, plan: _Plan, cone: list[UOp]
                ) -> dict[UOp, tuple[UOp, int]] | None:
    """For each initial STORE of an accumulator element (a constant into a constant place,
    before the reduce loop), the output element the nest copies that accumulator element to
    after the loop: (the output store's place, the lane in it; -1 for a scalar INDEX); None
    unless every accumulator element is
    initialised once and copied as is to one output element of its own, and every output
    store is such a copy."""
    dep, red = loops.dep, plan.red
    users: dict[UOp, list[UOp]] = {}
    for n in cone:
        for x in n.src:
            users.setdefault(x, []).append(n)
    inits: dict[tuple[UOp, int], UOp] = {}
    finals: dict[tuple[UOp, int], tuple[UOp, int]] = {}
    # the nest's output stores: each must be found below as a copy of an accumulator
    copies = {n for n in cone if n.op is Ops.STORE and plan.col in dep[n]
              and base_buffer(n.src[0].src[0]).op is Ops.PARAM}
    for n in cone:
        if n.op not in (Ops.LOAD, Ops.STORE) or base_buffer(n.src[0].src[0]).op is Ops.PARAM:
            continue
        buf = base_buffer(n.src[0].src[0])
        if red in dep[n]:
            continue                  # the reduce loop's own updates
        if n.src[0].op is not Ops.INDEX or const_int(n.src[0].src[1]) is None:
            return None
        key = (buf, const_int(n.src[0].src[1]))
        if n.op is Ops.STORE:
            if len(n.src) != 2 or const_value(n.src[1]) is None or key in inits:
                return None
            inits[key] = n
            continue
        places = []
        for u in users.get(n, []):
            if u.op is Ops.STORE and len(u.src) == 2 and u.src[1] is n \
                    and u.src[0].op is Ops.INDEX:
                places.append((u.src[0], -1))
                copies.discard(u)
            elif u.op is Ops.STACK and u.src.count(n) == 1 and users.get(u) and all(
                    w.op is Ops.STORE and len(w.src) == 2 and w.src[1] is u
                    and w.src[0].op is Ops.SHRINK for w in users[u]):
                for w in users[u]:
                    places.append((w.src[0], u.src.index(n)))
                    copies.discard(w)
            else:
                return None
        if len(places) != 1 or key in finals:
            return None
        finals[key] = places[0]
    if copies or set(inits) != set(finals):
        return None
    # the copies' elements within one iteration are distinct (same terms, other constants)
    forms = [affine(p.src[1]) for p, _ in finals.values()]
    elems = {f[1] + max(j, 0) for f, (_, j) in zip(forms, finals.values()) if f is not None}
    if any(f is None or f[0] != forms[0][0] for f in forms) or len(elems) != len(forms):
        return None
    return {inits[k]: finals[k] for k in inits}


def _kblock(loops: _Loops, plan: _Plan) -> _KBlock | None:
    """k blocking for a slab larger than K_BLOCK_BYTES: the largest chunk of the reduce loop
    (a divisor of its bound, at least MIN_CHUNK iterations) whose slab fits; None when it is
    off, the slab fits already or the accumulators are not plain copies to the output."""
    n_r = const_int(plan.red.src[0])
    assert n_r is not None
    row = sum(op.width * op.buf.dtype.itemsize for op in plan.operands)
    limit = K_BLOCK_BYTES
    if not limit or n_r * row <= limit:
        return None
    size = max((d for d in range(MIN_CHUNK, n_r) if n_r % d == 0 and d * row <= limit),
               default=0)
    if not size or _inner(loops, plan.col, loops.cone(plan.end_c)) != [plan.red]:
        return None
    reload = _out_places(loops, plan, loops.cone(plan.end_o))
    return _KBlock(size, reload) if reload else None


def _place(buf: UOp, idx: UOp, lanes: int) -> UOp:
    """An INDEX (one element) or SHRINK (lanes elements) place of buf at idx."""
    if lanes == 1:
        return UOp(Ops.INDEX, (buf, idx))
    return UOp(Ops.SHRINK, (buf, idx, strong_int(lanes, idx.dtype)))


def _copies(op: _Operand, widths: tuple[int, ...]) -> list[tuple[int, int]]:
    """The (offset, lanes) copies the fill makes of op's footprint: its distinct loads, runs of
    consecutive ones whose packed places are consecutive too merged into the widest vector of
    `widths` (tinygrad's 4-lane loads of one 32-column row: 2 zmm copies, not 8 xmm). The same
    elements are read; a copy of a float is its bits."""
    items = sorted(dict.fromkeys(op.offsets))
    out = []
    i = 0
    while i < len(items):
        o, w = items[i]
        take, lanes, tot, j = i + 1, w, w, i + 1
        while j < len(items) and items[j][0] == o + tot \
                and op.rank[items[j][0]] == op.rank[o] + tot:
            tot += items[j][1]
            j += 1
            if tot in widths:
                take, lanes = j, tot
        out.append((o, lanes))
        i = take
    return out


def _rewrite(sink: UOp, loops: _Loops, plan: _Plan, kb: _KBlock | None,
             desc: TargetDesc) -> tuple[UOp, UOp]:
    """The graph with plan's loops interchanged and its operands read from packed copies;
    with kb, the reduce loop cut into chunks by a loop outside the column loop. Also the row
    loop's new RANGE."""
    outer, col, red = plan.outer, plan.col, plan.red
    dt = red.dtype
    ids = [n.arg[0] for n in loops.order if n.op is Ops.RANGE and isinstance(n.arg, tuple)]
    axis = max(ids, default=0) + 1
    slot = free_reg_slot(loops.order)
    n_r = const_int(red.src[0])
    assert n_r is not None
    chunk = kb.size if kb else n_r
    if kb:
        kbr = UOp(Ops.RANGE, (strong_int(n_r // chunk, dt),) + outer.src[1:],
                  (axis + 1, AxisType.LOOP))
        col2 = col.replace(src=(col.src[0], kbr))
        first = UOp(Ops.MUL, (kbr, strong_int(chunk, dt)))     # the chunk's first iteration
    else:
        col2 = col.replace(src=(col.src[0],) + outer.src[1:])
    p = UOp(Ops.RANGE, (strong_int(chunk, dt), col2), (axis, AxisType.LOOP))
    m: dict[UOp, UOp] = {}
    stores = []
    views = []
    for k, op in enumerate(plan.operands):
        a: ParamArg = op.buf.arg
        pbuf = UOp(Ops.BUFFER, (), ParamArg(slot + k, a.dtype, chunk * op.width, None, None,
                                             AddrSpace.REG))
        into = UOp(Ops.AFTER, (pbuf, p))
        src_idx = substitute(op.rep, {red: UOp(Ops.ADD, (first, p)) if kb else p, col: col2})
        row = UOp(Ops.MUL, (p, strong_int(op.width, dt)))
        for o, w in _copies(op, desc.mem_widths.get(a.dtype, ())):
            at = src_idx if o == op.rep_off else \
                UOp(Ops.ADD, (src_idx, strong_int(o - op.rep_off, dt)))
            v = UOp(Ops.LOAD, (_place(op.buf, at, w),))
            to = UOp(Ops.ADD, (row, strong_int(op.rank[o], dt))) if op.rank[o] else row
            stores.append(UOp(Ops.STORE, (_place(into, to, w), v)))
        views.append(pbuf)
    pack_end = UOp(Ops.END, (UOp(Ops.GROUP, tuple(stores)), p))
    outer2 = outer.replace(src=(outer.src[0], col2, pack_end))
    # r was directly inside c: now directly inside o (the inner loop of the two)
    bound = strong_int(chunk, dt) if kb else red.src[0]
    red2 = red.replace(src=(bound,) + tuple(outer2 if s is col else s for s in red.src[1:]))
    # r's value in the original loop: the chunk's first iteration plus the counter
    r_val = UOp(Ops.ADD, (first, red2)) if kb else red2
    for k, op in enumerate(plan.operands):
        view = UOp(Ops.AFTER, (views[k], pack_end))
        rr = UOp(Ops.MUL, (red2, strong_int(op.width, dt)))
        for ld, (o, w) in zip(op.loads, op.offsets):
            at = UOp(Ops.ADD, (rr, strong_int(op.rank[o], dt))) if op.rank[o] else rr
            m[ld.src[0]] = _place(view, at, w)
    out: dict[UOp, UOp] = {outer: outer2, col: col2, **m}
    for n in loops.order:
        if n in out or n is red:
            continue
        if n is plan.end_c:
            out[n] = UOp(Ops.END, (out.get(n.src[0], n.src[0]), outer2))
            continue
        if n is plan.end_o:
            out[n] = UOp(Ops.END, (out[plan.end_c], col2))
            if kb:
                out[n] = UOp(Ops.END, (out[n], kbr))
            continue
        srcs = []
        for i, s in enumerate(n.src):
            if s is red:
                # ordering srcs (an AFTER's deps, an END's range) name the loop; values the
                # original counter
                order = (n.op is Ops.AFTER and i > 0) or (n.op is Ops.END and i == 1)
                srcs.append(red2 if order else r_val)
            elif s is col and n.op is Ops.RANGE and i > 0:
                srcs.append(outer2)   # a loop directly inside c is now directly inside o
            else:
                srcs.append(out.get(s, s))
        if kb and n in kb.reload:
            # from the second chunk on, the accumulator element starts from the output element
            # it was copied to: float32 stored and loaded exactly, its terms still in r order
            place, lane = kb.reload[n]
            v = UOp(Ops.LOAD, (substitute(place, out),))
            v = UOp(Ops.INDEX, (v, strong_int(lane, dt))) if lane >= 0 else v
            gate = UOp(Ops.CMPNE, (kbr, strong_int(0, dt)))
            srcs[1] = UOp(Ops.WHERE, (gate, v, srcs[1]))
        if tuple(srcs) != n.src:
            out[n] = n.replace(src=tuple(srcs))
    return out.get(sink, sink), outer2


def _jam_rows(sink: UOp, rows: UOp, desc: TargetDesc, wide: bool = False) -> tuple[UOp, bool]:
    """The interchanged row loop unrolled and jammed (module docstring, "Row jam"): unroll's
    legality rules and register estimate (passes/unroll.py `_analyze`) with ROW_FACTORS and
    ROW_MAX_WORK, each copy's accumulators a buffer of their own; and whether it was. wide: a
    widened nest on a target with WIDE_REGS registers ("Wide tiles"): the estimate counts the
    whole register file, not half, and the limits are WIDE_ROW_MAX_*."""
    if not ROW_FACTORS:
        return sink, False
    loops = _Loops(sink)
    if rows not in loops.end_of:
        return sink, False
    if wide:
        # unroll's estimate allows vector_regs // 2: the whole file here ("Wide tiles")
        desc = replace(desc, vector_regs=2 * desc.vector_regs)
    plan = _unroll_plan(loops, rows, desc, ROW_FACTORS,
                        WIDE_ROW_MAX_WORK if wide else ROW_MAX_WORK,
                        WIDE_ROW_MAX_COPIED if wide else ROW_MAX_COPIED, after_loops=True)
    if plan is None or len(plan.inner) != 1:
        return sink, False
    return _unroll_jam(sink, loops, plan, rows_of=False)[0], True


def _slab_bytes(plan: _Plan) -> int:
    """Bytes of one column block's packed slabs (every operand)."""
    n_r = const_int(plan.red.src[0])
    assert n_r is not None
    return n_r * sum(op.width * op.buf.dtype.itemsize for op in plan.operands)


def _widen_cols(sink: UOp, loops: _Loops, plan: _Plan, desc: TargetDesc
                ) -> tuple[UOp, set[UOp], _Loops, dict[UOp, _Plan | None]] | None:
    """The nest with its (jammed) column loop jammed again by COL_FACTOR before the interchange
    (module docstring, "Column widening") and the RANGEs the jam made, or None when the slab
    is small enough, the wider one would not fit pack_bytes, unroll's rules refuse the jam,
    or the widened nest would not be packed. Also the widened graph's loops and the answers
    of `_analyze` asked there (by column RANGE), which pack reads instead of asking again."""
    slab = _slab_bytes(plan)
    small = slab <= COL_WIDEN_BYTES and desc.vector_regs < WIDE_REGS
    if not COL_FACTOR or small or slab * COL_FACTOR > desc.pack_bytes:
        return None
    uplan = _unroll_plan(loops, plan.col, desc, (COL_FACTOR,), ROW_MAX_WORK, ROW_MAX_COPIED)
    if uplan is None or uplan.inner != frozenset({plan.red}):
        return None
    wide, made = _unroll_jam(sink, loops, uplan, rows_of=False)
    wl = _Loops(wide)
    asked: dict[UOp, _Plan | None] = {}
    for c in wl.end_of:
        if c in made:
            asked[c] = _analyze(wl, c, desc)
            if asked[c] is not None:
                return wide, made, wl, asked
    return None


def _pair_cols(sink: UOp, col: UOp, rows: UOp) -> tuple[UOp, set[UOp]]:
    """The interchanged nest's column loop unrolled by PAIR_FACTOR (module docstring, "Column
    pairs"): its fill loop and row loop fused, the reduce loop inside the row loop one per
    copy, every REG buffer of the nest (the slab, the accumulators) one per copy. Also the
    RANGEs it made (none when it leaves the nest alone: the row loop jammed, an odd count).

    Legal where the interchange was: it only reorders whole (o, c) iterations, which do not
    interact (`_analyze`), and each keeps its operations and their order."""
    loops = _Loops(sink)
    end = loops.end_of.get(col)
    n_c = const_int(col.src[0])
    if end is None or rows not in loops.end_of or n_c is None or n_c % PAIR_FACTOR:
        return sink, set()
    cone = loops.cone(end)
    inner = _inner(loops, col, cone)
    if not inner:
        return sink, set()
    unfused = frozenset(x for x in inner if x is not rows and rows in loops.dep[x])
    private = tuple(dict.fromkeys(
        base_buffer(n.src[0].src[0]) for n in cone if n.op is Ops.STORE
        and n.src[0].op in _PLACES and base_buffer(n.src[0].src[0]).op is Ops.BUFFER))
    plan = _UPlan(col, end, PAIR_FACTOR, private, frozenset(inner) - unfused)
    return _unroll_jam(sink, loops, plan, rows_of=False, unfused=unfused)


def pack(sink: UOp, desc: TargetDesc, loops: _Loops | None = None) -> UOp:
    """Pack and interchange every loop nest the module docstring allows (outermost nests are
    tried for each jammed column loop; one rewrite at a time, the graph re-read after each).
    loops: the graph's loop structure if the caller has it (unroll's last reading)."""
    if desc.pack_bytes <= 0:
        return sink
    done: set[UOp] = set()
    widened: set[UOp] = set()     # RANGEs made by a column widening: never widened twice
    # _analyze's answers already asked on the graph of `loops` (a widening's: _widen_cols);
    # _analyze is a pure test of the graph, so the answer asked again would be the same
    asked: dict[UOp, _Plan | None] = {}
    while True:
        if loops is None or loops.order[-1] is not sink:
            loops = _Loops(sink)
            asked = {}
        plan = None
        for col in list(loops.end_of):
            if col in done:
                continue
            plan = asked[col] if col in asked else _analyze(loops, col, desc)
            if plan is not None:
                break
        if plan is None:
            return sink
        wide = None if plan.col in widened else _widen_cols(sink, loops, plan, desc)
        if wide is not None:
            # the widened nest is planned again from the graph (its loops and the answers
            # _widen_cols had there kept: the same _Loops, so `loops` is not rebuilt)
            sink, made, loops, asked = wide
            widened |= made
            continue
        kb = _kblock(loops, plan)
        pair = PAIR_FACTOR > 1 and kb is None and plan.col in widened \
            and _slab_bytes(plan) * PAIR_FACTOR <= desc.pack_bytes
        sink, rows = _rewrite(sink, loops, plan, kb, desc)
        col2 = plan.col.replace(src=(plan.col.src[0],) + plan.outer.src[1:])
        big = plan.col in widened and desc.vector_regs >= WIDE_REGS
        sink, jammed = _jam_rows(sink, rows, desc, big)
        if jammed and big:
            sink = rows_interleaved(sink, col2, desc, COL_FACTOR)
        done.add(col2)
        if pair:
            sink, made = _pair_cols(sink, col2, rows)
            done |= made
