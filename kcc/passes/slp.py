"""Lane re-packing (superword-level parallelism): per-lane scalar work becomes vector work.

Producers such as tinygrad load n lanes with one SHRINK, take every lane apart (INDEX with a
constant), compute lane by lane in scalars and rebuild a vector with a STACK for the store.
This pass starts at every STACK of n scalar lanes and rebuilds the tuple of lanes as one
vector value, recursively over the lanes' srcs:

- lanes 0…n-1 of one n-lane vector v, in order → v itself (the lane INDEXes and the STACK go);
- lanes of one vector in another order, one scalar repeated, or constants → a STACK (a shuffle,
  a broadcast or a constant vector: each is one or two instructions in a selector);
- n isomorphic ALU nodes (same op, dtype and arg, every src scalar) → the one vector node of
  that op over the packed srcs, when the target has that op at n lanes and at least one src
  tuple packs into something better than a STACK of unrelated scalars;
- n ungated scalar LOADs of consecutive elements of one buffer → one LOAD of a SHRINK place,
  when the target loads n elements at once.

A run of gated scalar LOADs of consecutive elements whose gates pack is a seed of its own
(kcc/passes/slp_gated.py): one vector LOAD gated lane by lane, on a target that has one; a
tuple of such loads that the downward packing reaches is one such load too (`tuple_load`).
Before the downward packing, scalar work on the lanes of one vector is packed from that
vector up where it pays (kcc/passes/slp_up.py: cummax's per-row selects, which the
accumulator reads transposed); a tuple of such packed scalars is read as their lanes.

A second kind of seed is a run of ungated scalar STOREs to consecutive elements of one buffer
(tinygrad's upcast REG accumulators: `acc[j] = acc[j] + …` for each lane j): cut into groups of
the widest lane count the kernel's vectors have, a group whose values pack becomes one STORE of
a SHRINK place, unless one store of the group feeds another's value (merging would be a cycle).

Widening past the kernel's own vectors: a run of such stores longer than them is cut into
groups of the widest lane count the target stores at once when that is cheaper by an estimate
of the instructions (`pack_cost`: one per vector op, shuffles per 128-bit-style block of STACK
leaves, a block concat shared between the STACKs that read it): tinygrad's 4×4 matmul tile
(16 scalar accumulators in 4 lane groups) becomes one 16-lane group whose operands are the
concat of the four rows shuffled once per k and one row repeated (a block broadcast). All runs
of one REG buffer get one width (its places must stay equal or disjoint to live in
registers), and narrower loads of its elements are lanes of a load of their group (scalar
ones too, so that the group stays in one register). A lane tuple that is a permutation of at
most as many registers as the target's `permute` reads (x86-64-v4: two, one VPERMI2PS) is an
operand as good as a shuffle: tinygrad's conv2d (16 accumulators, 4 output columns × 4
channels) becomes one 16-lane group whose input operands are an input row's lanes and its
gated neighbour, each in a block of its own, and whose weights are a column of block-long row
loads repeated in every block.

Anything else stays a STACK of its lanes. A scalar that was packed and still has other users
is read back as INDEX(vector, lane), so no lane is computed twice, except where the vector
itself reads that scalar (lane j = lane j-1 + x: a prefix sum over lanes), which would be a
cycle: the rebuild finds it, and that vector's lanes are not read back (their scalars stay
as well, `slp_rebuild.rebuild_acyclic`). Each packed node computes exactly its lanes' values
with the same op in the same dtype, so the result is bit-identical to the scalar graph (IR
ops are lane-wise: docs/semantics.md).
"""

from __future__ import annotations

from kcc.ir.dtype import dtypes
from kcc.ir.ops import COMPARE
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, toposort
from kcc.ir.consts import const_int, is_const, peel_offset
from kcc.passes.half_max import half_max
from kcc.passes.simplify import keep_params
from kcc.passes.slp_blend import blend
from kcc.passes.slp_cost import PACKABLE, pack_cost, permute_regs
from kcc.passes.slp_gated import pack_gated_loads, tuple_load
from kcc.passes.slp_index import element_run, permuted_load
from kcc.passes.slp_index import lane_offset as _offset
from kcc.passes.slp_stores import merge_slice_stores
from kcc.passes.slp_rebuild import rebuild as _rebuild
from kcc.passes.slp_rebuild import rebuild_acyclic as _rebuild_acyclic
from kcc.passes.slp_reg import column_groups, reg_stores, scalar_reg_groups, store_runs
from kcc.passes.slp_up import pack_jammed, pack_upward
from kcc.passes.target import TargetDesc

Lanes = tuple[UOp, ...]


def _int_like(c: UOp, k: int) -> UOp:
    """The integer constant k written like the constant c (a weak CONST or CAST(CONST))."""
    return UOp(Ops.CAST, (UOp.const(k),), c.arg) if c.op is Ops.CAST else UOp.const(k)


def _bool_op(u: UOp) -> Ops:
    """The op a packed u computes: CMPNE of two bools is their XOR (the same truth table),
    which targets have on bool vectors (tinygrad's exp2 writes `(x < 128) != true`)."""
    if u.op is Ops.CMPNE and u.src[0].dtype == dtypes.bool:
        return Ops.XOR
    return u.op


class _Packer:
    """Packs lane tuples into vector values; remembers which scalar became which lane."""

    def __init__(self, ctx: TargetDesc, reg_width: dict[UOp, int] | None = None,
                 order: list[UOp] | None = None, blends: bool = False) -> None:
        self.ctx = ctx
        self.blends = blends                  # two-op lane groups (slp_blend.py) allowed
        self.memo: dict[Lanes, UOp | None] = {}
        self.lane_of: dict[UOp, tuple[UOp, int]] = {}
        self.reg_width = reg_width or {}      # REG buffer → the lane count of its groups
        self.order = order or []              # the graph's nodes (row runs are found in it)
        self.runs: dict[int, dict[tuple[UOp, UOp | None, int], int]] = {}
        self.rows: dict[tuple[UOp, UOp | None, int, int], UOp] = {}
        self.scalar_reg: set[UOp] = set()     # REG buffers whose elements stay scalars
        # scalars that are lanes of vectors made before the downward packing (gated-load
        # groups, slp_gated.py; users packed upward, slp_up.py) → (vector, lane)
        self.up: dict[UOp, tuple[UOp, int]] = {}
        # _leaf's answers by tuple (a function of the tuple and ctx alone: a tuple is asked
        # as a src of each tuple that reads it, and again when it is packed itself)
        self.leaves: dict[Lanes, tuple[UOp | None, bool]] = {}
        # (buffer, base) → the offsets the kernel reads with scalar loads, where a blend's
        # operand may load a run wider than its lanes (slp_index.py `_read_window`)
        self.reads: tuple[dict, dict] | None = None
        self.reads_of: list[UOp] | None = None    # the nodes `reads` is made from, lazily
        # _op_ok's answers by tuple (a function of the tuple and ctx alone, like `leaves`:
        # shared with the planning's packer, whose store groups are packed again here)
        self.op_ok: dict[Lanes, bool] = {}
        self.flat: dict[UOp, bool] = {}       # _scalar_srcs' answers by node (the node's)

    def _leaf(self, t: Lanes) -> tuple[UOp | None, bool]:
        """(vector, good) for a tuple that needs no recursion; (None, False) if it needs one."""
        got = self.leaves.get(t)
        if got is None:
            got = self.leaves[t] = self._new_leaf(t)
        return got

    def _new_leaf(self, t: Lanes) -> tuple[UOp | None, bool]:
        """_leaf, not remembered."""
        kind = self._leaf_kind(t)
        if kind == 0:
            return None, False
        if kind == 2:
            return t[0].src[0], True
        return self._concat_load(t) or UOp(Ops.STACK, t), True

    def _concat_load(self, t: Lanes) -> UOp | None:
        """Every lane, in order, of ungated vector LOADs of one buffer at consecutive places
        (the copies unroll-and-jam made of a row load: b[k][4c … 4c+3] for copies c) → one
        LOAD of their concatenation, when the target loads that many elements at once."""
        if not all(s.op is Ops.INDEX for s in t) or not self.ctx.mem_legal(len(t), t[0].dtype):
            return None
        loads: list[UOp] = []
        pos = 0
        while pos < len(t):
            v = t[pos].src[0]
            if v.op is not Ops.LOAD or len(v.src) != 1 or v.src[0].op is not Ops.SHRINK \
                    or len(v.shape) != 1:
                return None
            n = v.shape[0]
            if any(s.src[0] is not v or const_int(s.src[1]) != j
                   for j, s in enumerate(t[pos:pos + n])) or pos + n > len(t):
                return None
            loads.append(v)
            pos += n
        if pos != len(t) or len(loads) < 2:
            return None
        places = [v.src[0] for v in loads]
        buf = places[0].src[0]
        if buf.kind != "buffer" or any(p.src[0] is not buf for p in places):
            return None
        offs = [peel_offset(p.src[1]) for p in places]
        base, k0 = offs[0]
        at = k0
        for (b, k), v in zip(offs, loads):
            if b is not base or k != at:
                return None
            at += v.shape[0]
        return UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, places[0].src[1], UOp.const(len(t)))),))

    @staticmethod
    def _leaf_kind(t: Lanes) -> int:
        """0: t needs recursion; 2: t is the lanes of one vector in order (that vector);
        1: another leaf, a STACK of t (lanes of vectors, one value, constants)."""
        s0 = t[0]
        # (loops, not all() over generators: this runs for every tuple slp looks at)
        INDEX = Ops.INDEX
        lanes = True                     # every lane an INDEX of a value at a constant
        one = True                       # ... and lane j of one vector v, in order
        v = s0.src[0] if s0.op is INDEX else None
        for j, s in enumerate(t):
            if s.op is not INDEX:
                lanes = False
                break
            x = s.src[0]
            if x.kind != "value":
                lanes = False
                break
            k = const_int(s.src[1])
            if k is None:
                lanes = False
                break
            if one and (x is not v or k != j):
                one = False
        if lanes:
            # lanes of one vector are a shuffle; of several (a transpose), at most n inserts
            return 2 if one and v.shape == (len(t),) else 1
        for s in t:
            if s is not s0:
                break
        else:
            return 1
        for s in t:
            if not is_const(s):
                return 0
        return 1

    def _load(self, t: Lanes) -> UOp | None:
        """n ungated LOADs of consecutive elements of one buffer → one vector LOAD; n gated
        ones whose gates pack → one LOAD gated lane by lane (slp_gated.py `tuple_load`); a run
        read partly by scalar loads, partly as vector lanes → one vector LOAD (_mixed_load)."""
        op0 = t[0].op
        if op0 is not Ops.LOAD and op0 is not Ops.INDEX:
            # (most tuples asked: ALU lanes. Every load form below, tuple_load's and
            # element_run's too, wants lane 0 to be a LOAD or a lane INDEX)
            return None
        if not all(s.op is Ops.LOAD and len(s.src) == 1 and s.src[0].op is Ops.INDEX
                   for s in t):
            # gated loads whose gates pack (slp_gated), or scalar loads and vector lanes of
            # one run of elements (slp_index.element_run)
            return tuple_load(self, t) or self._mixed_load(t)
        buf = t[0].src[0].src[0]
        if buf.kind != "buffer" or not self.ctx.mem_legal(len(t), t[0].dtype) \
                or base_buffer(buf) in self.scalar_reg:
            return None
        offs = [_offset(s.src[0].src[1]) for s in t]
        if any(s.src[0].src[0] is not buf for s in t) or any(o is None for o in offs):
            return None
        base, k0 = offs[0]
        if any(o != (base, k0 + j) for j, o in enumerate(offs)):
            return permuted_load(self, t)      # another order (slp_index.py)
        start = t[0].src[0].src[1]
        w = self.reg_width.get(base_buffer(buf), len(t))
        if base is None and w > len(t) and k0 // w == (k0 + len(t) - 1) // w:
            # elements of a wider register group: lanes of the group's load
            g = k0 // w * w
            wide = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, _int_like(start, g),
                                                   UOp.const(w))),))
            return UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (wide, UOp.const(k0 - g + j)))
                                        for j in range(len(t))))
        return UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, start, UOp.const(len(t)))),))

    def _mixed_load(self, t: Lanes) -> UOp | None:
        """Consecutive elements of one buffer read partly by scalar LOADs, partly as lanes of
        ungated vector LOADs (slp_index.element_run) → one vector LOAD of them all."""
        run = element_run(t) if self.ctx.mem_legal(len(t), t[0].dtype) else None
        if run is None or base_buffer(run[0]) in self.scalar_reg:
            return None
        return UOp(Ops.LOAD, (UOp(Ops.SHRINK, (run[0], run[1], UOp.const(len(t)))),))

    def _run_starts(self, n: int) -> dict[tuple[UOp, UOp | None, int], int]:
        """(buffer, base, k) → the first element of the run of n consecutive elements
        base+r … base+r+n-1 holding base+k, for the elements the kernel reads with ungated
        scalar LOADs of that very buffer node (one memory state). Runs are taken greedily
        from the lowest element and never overlap."""
        if n in self.runs:
            return self.runs[n]
        seen: dict[tuple[UOp, UOp | None], set[int]] = {}
        for u in self.order:
            if u.op is Ops.LOAD and len(u.src) == 1 and u.src[0].op is Ops.INDEX \
                    and u.shape == () and u.src[0].src[0].kind == "buffer":
                off = _offset(u.src[0].src[1])
                if off is not None:
                    seen.setdefault((u.src[0].src[0], off[0]), set()).add(off[1])
        starts: dict[tuple[UOp, UOp | None, int], int] = {}
        for (buf, base), ks in seen.items():
            taken: set[int] = set()
            for k in sorted(ks):
                if k not in taken and all(k + j in ks for j in range(n)):
                    for j in range(n):
                        taken.add(k + j)
                        starts[(buf, base, k + j)] = k
        self.runs[n] = starts
        return starts

    def _rows(self, t: Lanes) -> UOp | None:
        """n ungated scalar LOADs at unrelated places (a strided gather: a column of a
        matrix) → a STACK of lanes of vector LOADs of the rows they lie in, when the kernel
        reads every element of each row anyway (a run of `_run_starts`): a row load reads
        nothing the scalar loads do not, and n such columns of n rows are one transpose (n
        row loads and shuffles shared by the columns instead of n scalar loads and n-1 lane
        inserts each)."""
        if not all(s.op is Ops.LOAD and len(s.src) == 1 and s.src[0].op is Ops.INDEX
                   and s.shape == () for s in t):
            return None
        # rows as long as the tuple, else of one 128-bit block (a wider tuple that repeats
        # a column: lanes of the same block-long rows, shuffled once and repeated)
        block = 16 // t[0].dtype.itemsize if t[0].dtype.itemsize <= 16 else 1
        for n in dict.fromkeys((len(t), block)):
            if n > 1 and len(t) % n == 0 and self.ctx.mem_legal(n, t[0].dtype):
                v = self._rows_of(t, n)
                if v is not None:
                    return v
        return None

    def _rows_of(self, t: Lanes, n: int) -> UOp | None:
        """`_rows` with rows of n elements."""
        starts = self._run_starts(n)
        lanes = []
        for s in t:
            buf, idx = s.src[0].src[0], s.src[0].src[1]
            off = _offset(idx)
            r = starts.get((buf, off[0], off[1])) if off is not None else None
            if r is None or s.dtype != t[0].dtype:
                return None
            key = (buf, off[0], r, n)
            row = self.rows.get(key)
            if row is None:
                if off[0] is None:
                    start = _int_like(idx, r)
                elif r == 0:
                    start = off[0]
                else:
                    start = UOp(Ops.ADD, (off[0], _int_like(idx.src[1], r)))
                row = self.rows[key] = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, start,
                                                                       UOp.const(n))),))
            lanes.append(UOp(Ops.INDEX, (row, UOp.const(off[1] - r))))
        return UOp(Ops.STACK, tuple(lanes))

    def _op_ok(self, t: Lanes) -> bool:
        """Whether the lanes are n isomorphic scalar ALU nodes the target has at n lanes."""
        got = self.op_ok.get(t)
        if got is None:
            got = self.op_ok[t] = self._new_op_ok(t)
        return got

    def _new_op_ok(self, t: Lanes) -> bool:
        """_op_ok, not remembered."""
        s0 = t[0]
        if s0.op not in PACKABLE or s0.shape != () or s0.kind != "value":
            return False
        op, arg, dt, n_src = s0.op, s0.arg, s0.dtype, len(s0.src)
        plain = arg is None              # (most ALU nodes: no arg to compare)
        for s in t:                      # (a loop, not all(): this runs per tuple tried)
            if s.op is not op or not (plain and s.arg is None or s.arg == arg) \
                    or len(s.src) != n_src:
                return False
            ut = s._utype or s.utype     # (the type read once, not per property)
            if not (ut.dtype is dt or ut.dtype == dt) or ut.shape != ():
                return False
        flat = self.flat
        for s in t:
            ok = flat.get(s)
            if ok is None:
                ok = flat[s] = self._scalar_srcs(s)
            if not ok:
                return False
        n = len(t)
        if s0.op in (Ops.CAST, Ops.BITCAST):
            return self.ctx.cast_legal(s0.op, s0.src[0].dtype, s0.dtype, n)
        dt = s0.src[0].dtype if s0.op in COMPARE else s0.dtype
        return self.ctx.alu_legal(n, dt, _bool_op(s0))

    @staticmethod
    def _scalar_srcs(s: UOp) -> bool:
        """Whether every src of s is a scalar value (asked once per node: a lane is in a
        tuple of each width the planning costs, and again when its group is packed)."""
        for x in s.src:
            ut = x._utype or x.utype
            if ut.shape != () or ut.kind != "value":
                return False
        return True

    def pack(self, root: Lanes) -> UOp | None:
        """The vector whose lane j is root[j], or None when it would not pay (iterative)."""
        work = [root]
        memo, leaf = self.memo, self._leaf
        # the src tuples of a tuple whose srcs are being packed: when it is on top again,
        # the answers that sent it there (not a leaf, no load, an op that packs) stand
        opened: dict[Lanes, list[Lanes]] = {}
        while work:
            t = work[-1]
            if t in memo:
                work.pop()
                continue
            subs = opened.get(t)
            if subs is None:
                if self.up and all(s in self.up for s in t):
                    # lanes of vectors packed upward (slp_up.py): a shuffle of those
                    memo[t] = leaf(tuple(
                        UOp(Ops.INDEX, (self.up[s][0], UOp.const(self.up[s][1])))
                        for s in t))[0]
                    work.pop()
                    continue
                v, _ = leaf(t)
                if v is None:
                    v = self._load(t)
                if v is not None or not self._op_ok(t):
                    memo[t] = v
                    work.pop()
                    continue
                subs = opened[t] = [tuple([s.src[i] for s in t]) for i in range(len(t[0].src))]
            todo = [s for s in subs if s not in memo and leaf(s)[0] is None]
            if todo:
                work.extend(todo)
                continue
            work.pop()
            self.memo[t] = self._build(t, subs)
        return self.memo[root]

    def pack_or_blend(self, root: Lanes) -> UOp | None:
        """pack, or where it gives nothing and blends are on, a blend of two packed ops."""
        v = self.pack(root)
        return v if v is not None or not self.blends else blend(root, self.pack)

    def _build(self, t: Lanes, subs: list[Lanes]) -> UOp | None:
        """The vector op over the packed src tuples (all resolved), or None if none packs."""
        srcs, good = [], False
        for s in subs:
            v, ok = self._leaf(s)
            if v is None:
                v = self.memo[s]
                ok = v is not None
                if v is None and self.order:
                    v = self._rows(s)         # a strided gather: lanes of row loads
                    # lanes of one row (interpolate's neighbours, elements k, k+1, k+1,
                    # k+2), or of as many as one permutation reads: one shuffle, not n
                    # scalars and their inserts
                    ok = v is not None and permute_regs(v.src, max(
                        1, self.ctx.permute_sources(s[0].dtype, len(s))))
                if v is None:
                    # lanes of at most as many registers as one permutation reads (one
                    # instruction, x86-64-v4's VPERMI2PS): as good as a shuffle
                    n = self.ctx.permute_sources(s[0].dtype, len(s))
                    ok = bool(n) and permute_regs(s, n)
            good |= ok
            srcs.append(v if v is not None else UOp(Ops.STACK, s))
        # a CAST of lanes that pack into nothing better: one vector CAST of their STACK still
        # saves n - 1 conversions (the STACK inserts the same n scalars either way; half
        # max's four strided loads narrowed and widened: 2 F16C conversions, not 8)
        if not good and (t[0].op is not Ops.CAST or len(subs) != 1 or not _one_strong(subs[0])):
            return None
        vec = t[0].replace(op=_bool_op(t[0]), src=tuple(srcs))
        for j, s in enumerate(t):
            self.lane_of.setdefault(s, (vec, j))
        return vec


def _one_strong(s: Lanes) -> bool:
    """Whether the scalars s have one strong dtype (a STACK of them is a vector of it: a
    CAST of a weak constant, `CAST(0.0) float16`, has a weakfloat src, which no target holds
    in a register; tinygrad's WMMA kernels pad with such zeros)."""
    dt = s[0].dtype
    return dt is not None and not dt.is_weak and all(x.dtype == dt for x in s)


def _claim_loads(p: _Packer) -> None:
    """Record the lanes of every packed vector LOAD (memo entries that are LOADs)."""
    for t, v in p.memo.items():
        if v is not None and v.op is Ops.LOAD and all(s.op is Ops.LOAD for s in t):
            for j, s in enumerate(t):
                p.lane_of.setdefault(s, (v, j))


def _cut(run: tuple[UOp, ...], lanes: int) -> list[tuple[UOp, ...]]:
    """A run cut into groups of `lanes` from its start (a short tail is left out)."""
    return [run[i:i + lanes] for i in range(0, len(run) - lanes + 1, lanes)]


def _groups_cost(ctx: TargetDesc, run: tuple[UOp, ...], lanes: int, order: list[UOp],
                 original: dict[UOp, int], base: int, memo: dict | None = None,
                 p: _Packer | None = None) -> int | None:
    """The estimated cost of the run packed in groups of `lanes`, None if a group does not
    pack (or cannot be one store); original numbers order (`_independent`). p: a plain
    packer (`_Packer(ctx)`) shared by the runs costed (its answers are a function of the
    tuple alone), else a fresh one."""
    p = p or _Packer(ctx)
    vs = []
    for g in _cut(run, lanes):
        if not ctx.store_legal(lanes, g[0].src[1].dtype) \
                or not _independent(g, order, original, memo):
            return None
        v = p.pack(tuple(s.src[1] for s in g))
        if v is None:
            return None
        vs.append(v)
    return pack_cost(vs, original, base, ctx)


def _plan_stores(order: list[UOp], ctx: TargetDesc, widest: int,
                 original: dict[UOp, int] | None = None, memo: dict | None = None,
                 p: _Packer | None = None) -> tuple[list[tuple[UOp, ...]], dict[UOp, int]]:
    """The store groups to pack, and the group width of each widened REG buffer: every run
    in groups of `widest` lanes, or of a wider legal count dividing it when pack_cost says that
    is cheaper; the runs of one REG buffer are judged together (one width for all).
    original: the graph's nodes numbered in order (made here when not given); memo: the
    `_independent` answers of the groups costed, for _pack_stores to read again; p: the
    plain packer the runs are costed with (made here when not given)."""
    if original is None:
        original = {u: i for i, u in enumerate(order)}
    p = p or _Packer(ctx)
    sets: dict[object, list[tuple[UOp, ...]]] = {}
    for run in store_runs(order):
        if len(run) < widest:
            continue
        b = base_buffer(run[0].src[0].src[0])
        reg = b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.REG
        sets.setdefault(b if reg else run, []).append(run)
    groups: list[tuple[UOp, ...]] = []
    reg_width: dict[UOp, int] = {}
    for key, runs in sets.items():
        best = widest
        dts = {r[0].src[1].dtype for r in runs}
        cands = set.intersection(*(set(ctx.mem_widths.get(dt, ())) for dt in dts))
        narrow = None
        for w in sorted(cands, reverse=True):
            if w <= widest or any(len(r) % w for r in runs):
                continue
            if narrow is None:
                costs = [_groups_cost(ctx, r, widest, order, original, widest, memo, p)
                         for r in runs]
                if None in costs:
                    break
                narrow = sum(costs)
            wide = [_groups_cost(ctx, r, w, order, original, widest, memo, p) for r in runs]
            if None not in wide and sum(wide) < narrow:
                best = w
                break
        if isinstance(key, UOp) and best > widest:
            reg_width[key] = best
        for r in runs:
            groups += _cut(r, best)
    return groups, reg_width


def _independent(group: tuple[UOp, ...], order: list[UOp], pos: dict[UOp, int],
                 memo: dict | None = None) -> bool:
    """No store of the group is reached from another's value (merging them would be a cycle).

    ``pos`` numbers ``order``, the graph's nodes in a topological order (srcs first), so a
    node reached from a value precedes it: only the stretch of order from the first store to
    the last value is scanned (`_reaches_in`). ``memo``: answers by group for this order (a
    planned group is asked again when packed)."""
    if memo is not None:
        got = memo.get(group)
        if got is None:
            got = memo[group] = _independent(group, order, pos)
        return got
    lo = min(pos[s] for s in group)
    vals = [s.src[1] for s in group if pos[s.src[1]] > lo]
    return not vals or not _reaches_in(vals, set(group), order, pos, lo)


def _reaches_in(vals: list[UOp], members: set[UOp], order: list[UOp], pos: dict[UOp, int],
                lo: int) -> bool:
    """Whether a node of members is among vals or under them, by one scan of order from the
    first store to the last value: a node there whose src is a member or such a node is
    one, and a value among them reaches a member. (A path from a value down to a member
    never leaves that stretch: srcs come first, and every member is numbered lo or more.)
    One C-level set test a node, not a walk a src: the groups slp costs are runs of stores
    right after their values (a matmul tile's accumulator rows: the values of the group's
    later stores are most of the stretch)."""
    marked = set(members)
    hit, add = marked.isdisjoint, marked.add
    for n in order[lo + 1:max(pos[v] for v in vals) + 1]:
        if not hit(n.src):
            add(n)
    return not marked.isdisjoint(vals)


def _pack_stores(p: _Packer, groups: list[tuple[UOp, ...]], redirect: dict[UOp, UOp],
                 order: list[UOp], pos: dict[UOp, int], memo: dict | None = None) -> None:
    """Consecutive scalar STOREs whose values pack become one vector STORE (``pos``: the
    numbers of ``order``, the graph's nodes in topological order)."""
    for group in groups:
        dt = group[0].src[1].dtype
        if not p.ctx.store_legal(len(group), dt) or not _independent(group, order, pos, memo):
            continue
        v = p.pack_or_blend(tuple(s.src[1] for s in group))
        if v is None:
            continue
        place = group[0].src[0]
        st = UOp(Ops.STORE, (UOp(Ops.SHRINK, (place.src[0], place.src[1],
                                              UOp.const(len(group)))), v))
        for s in group:
            redirect[s] = st


def _group_lanes(order: list[UOp], reg_width: dict[UOp, int], redirect: dict[UOp, UOp],
                 lanes: dict[UOp, tuple[UOp, int]]) -> None:
    """A scalar LOAD of a widened REG buffer's element that nothing packed (tinygrad reads
    conv2d's accumulators back one by one, transposed, for its output STACKs) becomes its lane
    of a load of the element's group: every place of the buffer is then a whole group, so
    the selector keeps each group in a register (kcc/isel/x86/select.py promotable_buffers)."""
    # the group loads made, by (buffer, first element, how the index is written): each
    # group's elements share one (UOps are interned: the same node the construction gives)
    if not reg_width:
        return
    wides: dict[tuple, UOp] = {}
    for u in order:
        if u.op is not Ops.LOAD or len(u.src) != 1 or u.shape != () or u in redirect \
                or u in lanes or u.src[0].op is not Ops.INDEX:
            continue
        buf, idx = u.src[0].src
        if buf.kind != "buffer":
            continue
        b = base_buffer(buf)
        w = reg_width.get(b)
        k = const_int(idx)
        if w is None or k is None or k < 0 or k // w * w + w > b.arg.size:
            continue
        g = k // w * w
        key = (buf, g, idx.arg if idx.op is Ops.CAST else None, idx.op is Ops.CAST)
        wide = wides.get(key)
        if wide is None:
            wide = wides[key] = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, _int_like(idx, g),
                                                                UOp.const(w))),))
        redirect[u] = UOp(Ops.INDEX, (wide, UOp.const(k - g)))


def _widest(order: list[UOp]) -> int:
    """The widest vector whose lanes the kernel takes apart."""
    return max((u.src[0].shape[0] for u in order if u.op is Ops.INDEX
                and u.src[0].kind == "value" and u.src[0].shape), default=0)


def slp(sink: UOp, target: TargetDesc) -> UOp:
    """Re-pack per-lane scalar work into vector ops (see the module docstring)."""
    # float16 MAX trees and max accumulators in float32 first (kcc/passes/half_max.py), where
    # the target has no float16 MAX: their stores then pack as float32 MAX lanes
    lifted = half_max(sink, target)
    if lifted is not sink:
        return keep_params(sink, _slp(lifted, target))
    return _slp(sink, target)


def _slp(sink: UOp, target: TargetDesc) -> UOp:
    order = toposort([sink])
    widest = _widest(order)
    stored = reg_stores(order) if widest < 2 and target.vector_regs else {}
    pos = {u: i for i, u in enumerate(order)}      # the graph's nodes, numbered in order
    indep: dict[tuple[UOp, ...], bool] = {}        # _independent's answers, by group
    # one plain packer (no REG widths, rows or lanes packed upward) for the planning: its
    # answers are a function of the tuple alone, so the runs and widths asked share them
    plain = _Packer(target)
    groups, reg_width = _plan_stores(order, target, widest, pos, indep, plain) if widest >= 2 \
        else scalar_reg_groups(order, target, stored, lambda t: plain.pack(t) is not None)
    if widest < 2:      # an output's run of stores of one vector's lanes (slp_reg.py)
        q = _Packer(target, reg_width, blends=True)
        q.reads_of = order
        groups += column_groups(order, target, q.pack, lambda t: blend(t, q.pack))
    p = _Packer(target, reg_width, order, blends=widest < 2)
    if widest < 2:
        p.reads_of = order
    p.leaves = plain.leaves                       # (_leaf's answers: the tuple's alone)
    p.op_ok, p.flat = plain.op_ok, plain.flat     # (and _op_ok's, _scalar_srcs')
    # a REG buffer whose stores stay scalar lives in scalar registers: a vector load of its
    # elements (the final read of an accumulator) would put it in memory instead
    p.scalar_reg = {b for b in stored if b not in reg_width}
    redirect: dict[UOp, UOp] = {}
    if target.lane_gates is not None:
        pack_gated_loads(p, order, redirect)      # runs of gated loads (slp_gated.py)
    if target.vector_regs:
        pack_upward(p, order)                     # from vectors' lanes up (slp_up.py)
        pack_jammed(p, order)                     # jammed row reductions' elements
    for u in order:
        if u.op is not Ops.STACK or u.kind != "value" or len(u.shape) != 1:
            continue
        if any(s.shape != () for s in u.src):
            continue
        v = p.pack(u.src)
        if v is not None and v is not u:
            redirect[u] = v
    _pack_stores(p, groups, redirect, order, pos, indep)
    _group_lanes(order, reg_width, redirect, p.lane_of)
    if not redirect and not p.up:
        return sink
    _claim_loads(p)
    out = keep_params(sink, _rebuild_acyclic(sink, redirect, p.lane_of))
    if target.vector_regs and out is not sink:
        # the slices of one packed vector stored apart become one store (slp_stores.py)
        merged = merge_slice_stores(toposort([out]), target)
        if merged:
            out = keep_params(out, _rebuild(out, merged))
    return out
