"""Widen scalar loops across iterations: k iterations of a loop whose body is scalar run as one
iteration of k-lane vectors (the scalar case of kcc/passes/widen.py, whose loops already
hold W-lane vectors).

tinygrad leaves some innermost loops scalar: each iteration reads and writes single elements
at places one element apart from the previous iteration's (Tensor.rand's Threefry kernel
stores two floats an iteration, half the buffer apart; integer kernels tinygrad does not
upcast):

    for i in range(N):
        x = LOAD(INDEX(a, i + base))
        STORE(INDEX(out, i + base + o), f(x, i))

On a target with k-lane vectors this pass rewrites the loop as

    for i2 in range(N // k):
        x = LOAD(SHRINK(a, k*i2 + base, k))
        STORE(SHRINK(out, k*i2 + base + o, k), f(x, k*i2 + [0, 1, … k-1]))

Lane j of every vector is iteration k*i2 + j's scalar. A lane-wise op (ALU, CAST, BITCAST:
every IR op is lane-wise, docs/semantics.md) over such vectors computes exactly the lanes the
k iterations computed; a loop-invariant operand is splatted (a STACK of k copies). An integer
value that is linear in the counter (index arithmetic: ADD, SUB, NEG, MUL and SHL by a
constant, MULACC whose product is loop-invariant, CASTs to an integer no wider: all exact
modulo 2^bits) is computed once as a scalar, for lane 0, and its vector is that scalar
splatted plus c*[0, 1, … k-1] (c its coefficient modulo 2^bits). Every value is computed by
the same op in the same dtype, so the result is bit-identical.

THREEFRY, which no CPU target has (passes/target.py ALWAYS_DECOMPOSED), is decomposed here,
before the loops are examined, instead of in passes/decompose.py (the same rounds: decompose's
own rule), and the uint64 packing around it folded: tinygrad packs two uint32 into the uint64
operand (`hi << 32 | lo`) and takes the result apart (`CAST(x) uint32`, `CAST(x >> 32)
uint32`), and the rounds work on the halves, so the halves are used directly and the loop's
lanes are all uint32 (the packing is exact: `lo` and `hi` are zero-extended uint32).

**Legality** (a loop is left alone otherwise, which is always correct):
- the loop is innermost, closed by an END of its range alone, its bound a constant N >= k,
  and every node that depends on its counter lies under that END (widen.py checks these);
- every node that depends on the counter is scalar (a vector: widen.py's loop), a lane-wise
  op, a LOAD (gated or not) or an ungated STORE of an INDEX place of a kernel argument (a
  GLOBAL PARAM, possibly through an AFTER made outside the loop) whose index is
  `i + base + o` (base a sum of terms free of the counter, o a constant: consecutive
  elements), or a GROUP; RANGE, END, AFTER and BARRIER in the loop are refused; an ungated
  load of a buffer the loop does not store may advance by a constant stride s >= 2 or -1
  instead when the target permutes its lanes in one instruction (passes/widen_stride.py), and a
  load (gated or not) of such a buffer at an int32 index not affine in the counter is read
  at the lanes of an index vector where the target gathers so (passes/widen_gather.py);
- the k iterations' loads run before their stores: for every buffer the loop stores, all its
  accesses in the loop share one base and no store of an iteration meets an access of an
  iteration 1 … k-1 apart (kcc.ir.affine.iterations_disjoint);
- a gated LOAD keeps its gate where the gate is loop-invariant; a gate that depends on the
  counter becomes a bool vector, one gate per lane (a per-lane gate: tinygrad's padding
  compares of the counter, avgpool's and pad's), which the target must load so gated
  (`TargetDesc.lane_gate_legal`: x86-64-v4's masked loads);
- every vector the rewrite makes is legal at k lanes on the target (`TargetDesc.alu_legal`,
  `cast_legal`, `mem_legal`): no op is split back to scalars.

A loop of exactly k iterations becomes one copy of its body at counter 0, with no loop.

**Width**: the k in 16, 8, 4, 2 of least N // k + N % k (the last N % k iterations run in a
tail loop of the original body, passes/widen_tail.py) under the rules above (x86-64-v3:
8 lanes of float32 or int32; v4: 16 of float32, 8 where the loop has an int32 op). A loop
with a constant bound that stores no buffer it loads runs its last N % k iterations as one
more k-lane block over N-k … N-1 instead (passes/widen_stride.py `last_block`: the repeated
iterations store the bytes already there), so its k is the one of least ceil(N / k):
softmax's E_111_77_3 takes 16 lanes and 5 blocks, not 8 lanes, 9 blocks and 5 scalar
iterations each with its own EXP2 polynomial.
"""

from __future__ import annotations

from kcc.ir.affine import iterations_disjoint
from kcc.ir.consts import const_int, literal_value, strong_int
from kcc.ir.dtype import dtypes
from kcc.ir.ops import ALU, COMPARE
from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
from kcc.ir.uop import AddrSpace, UOp, base_buffer
from kcc.passes import decompose
from kcc.passes.simplify import keep_params, make_const
from kcc.passes.target import TargetDesc
from kcc.passes.widen_tail import factors, lone_tail, overlap_ok, split, tail_loop

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable

_LANEWISE = frozenset(ALU | {Ops.CAST, Ops.BITCAST})
_U32, _U64 = dtypes.uint32, dtypes.uint64

Affine = tuple[dict[object, int], int]


# -- THREEFRY and its uint64 packing ------------------------------------------------------------

def _zext32(v: UOp) -> UOp | None:
    """x when v is CAST(x) uint64 of a uint32 x (zero-extended), else None."""
    if v.op is Ops.CAST and v.dtype == _U64 and not v.shape and v.src[0].dtype == _U32:
        return v.src[0]
    return None


def _pack(v: UOp) -> tuple[UOp, UOp] | None:
    """(hi, lo) when v is OR(SHL(CAST(hi) uint64, 32), CAST(lo) uint64) of uint32 hi and lo
    (either OR order): the uint64 whose halves they are."""
    if v.op is not Ops.OR or v.dtype != _U64 or v.shape:
        return None
    for s, lo in (v.src, v.src[::-1]):
        if s.op is Ops.SHL and const_int(s.src[1]) == 32:
            h, lo32 = _zext32(s.src[0]), _zext32(lo)
            if h is not None and lo32 is not None:
                return h, lo32
    return None


def _low_half(x: UOp) -> UOp | None:
    """CAST(v) uint32 of a packed v → its low half; of CAST(y) uint64 of a uint32 y → y."""
    if x.dtype != _U32 or x.shape or x.src[0].dtype != _U64:
        return None
    v = x.src[0]
    p = _pack(v)
    if p is not None:
        return p[1]
    return _zext32(v)


def _high_half(x: UOp) -> UOp | None:
    """SHR(v, 32) of a packed v → CAST(hi) uint64 (zero-extended: the same value)."""
    if x.dtype != _U64 or x.shape or const_int(x.src[1]) != 32:
        return None
    p = _pack(x.src[0])
    return None if p is None else UOp(Ops.CAST, (p[0],), _U64)


_THREEFRY = PatternMatcher([
    (UPat(Ops.THREEFRY, name="x"), decompose.threefry),
    (UPat(Ops.CAST, name="x"), lambda x: _low_half(x)),
    (UPat(Ops.SHR, name="x"), lambda x: _high_half(x)),
])


def expand_threefry(sink: UOp, desc: TargetDesc, order: list[UOp]) -> UOp:
    """Every THREEFRY decomposed into its uint32 rounds, the packing around it folded (module
    docstring); sink itself when it has none or the target computes THREEFRY."""
    if desc.native(Ops.THREEFRY, _U64) or not any(n.op is Ops.THREEFRY for n in order):
        return sink
    return keep_params(sink, graph_rewrite(sink, _THREEFRY, ctx=desc))


# -- the loop ------------------------------------------------------------------------------------

def _legal(n: UOp, width: int, desc: TargetDesc) -> bool:
    """Whether the target has vector node n (a LOAD, STORE, STACK or lane-wise op) at width."""
    if n.op is Ops.LOAD:
        if len(n.src) == 3 and n.src[2].shape:
            return desc.lane_gate_legal(width, n.dtype)
        return desc.mem_legal(width, n.dtype)
    if n.op is Ops.STORE:
        return desc.store_legal(width, n.src[1].dtype)
    if n.op is Ops.STACK:
        return desc.alu_legal(width, n.dtype)
    if n.op in (Ops.CAST, Ops.BITCAST):
        return desc.cast_legal(n.op, n.src[0].dtype, n.dtype, width)
    dt = n.src[0].dtype if n.op in COMPARE else n.dtype
    return desc.alu_legal(width, dt, n.op)


def _gated(n: UOp) -> bool:
    """n is a gated scalar LOAD (its gate one bool: the rewrite makes it per lane)."""
    return n.op is Ops.LOAD and len(n.src) == 3 and n.src[2].shape == ()


def one_block(r: UOp, region: list[UOp], stored: frozenset[UOp] | set[UOp]) -> bool:
    """Whether a loop (RANGE r, the nodes that depend on it) whose N = k iterations run as one
    widened block may lose its RANGE: it is ordered by enclosing loops alone, and it loads no
    buffer the kernel stores (its loads may then be placed by the loops they still depend
    on, as a load whose index never read the counter is: none can pass a store of what it
    reads). This module's scalar loops and widen.py's vector loops alike."""
    return all(s.op is Ops.RANGE for s in r.src[1:]) and not any(
        x.op is Ops.LOAD and base_buffer(x.src[0].src[0]) in stored for x in region)


class LaneLoop:
    """One innermost scalar loop checked for widening (module docstring): its region (the
    nodes that depend on the counter), its places and the accesses of each stored buffer."""

    # nodes check() leaves to a subclass (kcc/passes/widen_reduce.py: accumulator accesses)
    skip: frozenset[UOp] = frozenset()
    # the buffers the whole kernel stores (widen.py sets it): a loop of one block may then
    # lose its RANGE (_one_block); None: it keeps it
    kernel_stored: frozenset[UOp] | None = None

    def __init__(self, r: UOp, end: UOp, region: list[UOp],
                 dep: dict[UOp, frozenset[UOp]]) -> None:
        self.r, self.end, self.region, self.dep = r, end, region, dep
        self.inside = set(region)
        self.lin_memo: dict[UOp, int | None] = {}
        self.aff_memo: dict[UOp, Affine | None] = {}
        self.spans: dict[UOp, list[tuple[int, bool]]] = {}
        self.strides: dict[UOp, int] = {}       # a strided load's place: its stride
        # a place split from a vector load (passes/widen_split.py): (its lane, the width)
        self.windows: dict[UOp, tuple[int, int]] = {}
        self.gathers: set[UOp] = set()          # places read by index vectors (widen_gather)
        # gated loads of one loop-invariant element under a counter-dependent gate (_splat)
        self.splats: set[UOp] = set()
        self.guards: dict[UOp, UOp] = {}     # splats whose load keeps a guard (`_guard`)

    def free(self, n: UOp) -> bool:
        """Whether n is loop-invariant (does not depend on the counter)."""
        return self.r not in self.dep[n]

    def check(self) -> bool:
        """Whether every node of the region is of a form the rewrite handles, its places
        consecutive across iterations and its stored buffers' accesses independent."""
        inside = self.inside
        accesses: list[tuple[UOp, bool]] = []
        gated: set[UOp] = set()
        for n in self.region:
            if n is self.r or n in self.skip:
                continue
            if n.shape or n.op in (Ops.RANGE, Ops.END, Ops.AFTER, Ops.BARRIER):
                return False
            if n.op is Ops.INDEX:
                b = base_buffer(n.src[0])
                if n.kind != "place" or n.src[0] in inside or b.op is not Ops.PARAM \
                        or b.arg.addrspace is not AddrSpace.GLOBAL:
                    return False
            elif n.op in (Ops.LOAD, Ops.STORE):
                p = n.src[0]
                if n.op is Ops.LOAD and self._splat(n):
                    self.splats.add(n)
                    continue
                if len(n.src) != (1 if n.op is Ops.LOAD else 2) and not _gated(n) \
                        or p.op is not Ops.INDEX or p not in inside:
                    return False
                accesses.append((p, n.op is Ops.STORE))
                if n.op is Ops.LOAD and len(n.src) == 3:
                    gated.add(p)        # a strided load keeps no gate (widen_stride)
            elif n.op is not Ops.GROUP and (n.kind != "value" or n.op not in _LANEWISE):
                return False
        if not self.skip and not any(st for _, st in accesses):
            return False
        return self._consecutive(accesses, gated)

    def _splat(self, n: UOp) -> bool:
        """Whether LOAD n reads one loop-invariant element of a buffer the kernel does not
        store, under a gate that depends on the counter (cumsum's `6 < j ? x[8*i] : 0.0`),
        at an index the value ranges prove inside the buffer: then `WHERE(gate, LOAD(place),
        alt)` is the same value (the ungated load reads an element that exists and writes
        nothing), and its lanes are that one element splatted under a per-lane select."""
        if not _gated(n) or n.src[2] not in self.inside:
            return False
        p = n.src[0]
        if p.op is not Ops.INDEX or p in self.inside or len(p.src) != 2:
            return False
        b = base_buffer(p.src[0])
        stored = self.kernel_stored
        if b.op is not Ops.PARAM or b.arg.addrspace is not AddrSpace.GLOBAL or stored is None \
                or b in stored or not p.src[0].shape:
            return False
        from kcc.ir.ranges import int_ranges
        rng = int_ranges([p.src[1]]).get(p.src[1])
        if rng is not None and 0 <= rng[0] and rng[1] < p.src[0].shape[0]:
            return True
        guard = self._guard(n)
        if guard is None:
            return False
        self.guards[n] = guard
        return True

    def _guard(self, n: UOp) -> UOp | None:
        """For a gated invariant load whose index the value ranges do not prove inside the
        buffer: its gate `inv AND var` with inv free of the counter (the outer loop's padding
        test, pad_reflect E_12_10's `Lidx0 < 2`) and var a compare of the counter with a
        constant that holds for some iteration: inv, which guards a load hoisted out of the
        loop (`inv ? x[i] : alt`, the same alt, itself free of the counter), each lane then
        selected by the whole gate. Whenever inv holds the loop reads x[i] at the iteration
        where var holds, so the hoisted load reads nothing the loop did not."""
        g, alt = n.src[2], n.src[1]
        if g.op is not Ops.AND or g.shape or alt in self.inside:
            return None
        for inv, var in ((g.src[0], g.src[1]), (g.src[1], g.src[0])):
            if not self.free(inv) or var.op is not Ops.CMPLT or var.shape:
                continue
            a, b = var.src
            n_iter = const_int(self.r.src[0])
            ka, kb = const_int(a), const_int(b)
            if n_iter is None or n_iter < 1:
                return None
            if a is self.r and kb is not None and kb > 0:          # r < k: true at r = 0
                return inv
            if b is self.r and ka is not None and ka < n_iter - 1:  # k < r: true at N - 1
                return inv
        return None

    def _consecutive(self, accesses: list[tuple[UOp, bool]], gated: set[UOp]) -> bool:
        """Every place's index is counter + base + o; a stored buffer's accesses share base.
        A load of a buffer the loop does not store may advance by another constant stride
        s >= 2, or fall by one (s = -1: a row read reversed), (passes/widen_stride.py; whether
        the target permutes its lanes is asked at each width)."""
        stored = {base_buffer(p.src[0]) for p, st in accesses if st}
        bases: dict[UOp, frozenset] = {}
        for p, st in accesses:
            a = self.affine(p.src[1])
            b = base_buffer(p.src[0])
            if a is None:
                # a computed index: lanes of an index vector (passes/widen_gather.py)
                from kcc.passes import widen_gather
                if st or not widen_gather.accept(self, p, b in stored):
                    return False
                self.gathers.add(p)
                continue
            c = a[0].get(self.r)
            if c != 1:
                if st or b in stored or c is None or c < 2 and c != -1 or p in gated:
                    return False
                self.strides[p] = c
                continue
            if b in stored:
                base = frozenset((t, c) for t, c in a[0].items() if t is not self.r)
                if bases.setdefault(b, base) != base:
                    return False
                self.spans.setdefault(b, []).append((a[1], st))
        return True

    def _post_order(self, n: UOp, memo: dict[UOp, Any], node: Callable[[UOp], Any]) -> None:
        """node(x) for every not yet memoized x below n that depends on the counter, sources
        first, without recursion (a chain may be deeper than Python's frame limit): then
        node's own calls on x's sources find them memoized. Each node is expanded once."""
        stack, expanded = [(n, False)], set()
        while stack:
            x, ready = stack.pop()
            if x in memo:
                continue
            if ready:
                node(x)
            elif x not in expanded:
                expanded.add(x)
                stack.append((x, True))
                if not self.free(x):
                    stack.extend((s, False) for s in x.src if s not in memo)

    def affine(self, n: UOp) -> Affine | None:
        """An index as ({term: coefficient}, constant) over the integers: terms are the
        counter and loop-invariant nodes (an invariant MULACC product is the term (a, b));
        None when it is not linear in the counter."""
        if n not in self.aff_memo:
            self._post_order(n, self.aff_memo, self._affine_node)
        return self.aff_memo[n]

    def _affine_node(self, n: UOp) -> Affine | None:
        """affine(n), its sources' already memoized."""
        memo = self.aff_memo
        res: Affine | None = None
        c = const_int(n)
        if c is not None:
            res = {}, c
        elif n is self.r or self.free(n):
            res = {n: 1}, 0
        elif n.op in (Ops.ADD, Ops.SUB, Ops.MULACC):
            if n.op is Ops.MULACC:
                x, y, z = n.src
                prod = self._scaled_term(x, y)
                parts = [prod, self.affine(z)]
            else:
                parts = [self.affine(s) for s in n.src]
            if all(p is not None for p in parts):
                sign = -1 if n.op is Ops.SUB else 1
                terms = dict(parts[0][0])
                for t, k in parts[1][0].items():
                    terms[t] = terms.get(t, 0) + sign * k
                res = {t: k for t, k in terms.items() if k}, parts[0][1] + sign * parts[1][1]
        elif n.op in (Ops.MUL, Ops.SHL):
            k = const_int(n.src[1])
            if n.op is Ops.SHL:
                k = 1 << k if k is not None and 0 <= k < n.dtype.bits - 1 else None
            res = self._scale(n.src[0], k) if k is not None else \
                self._scaled_term(n.src[0], n.src[1]) if n.op is Ops.MUL else None
        memo[n] = res
        return res

    def _scale(self, x: UOp, k: int) -> Affine | None:
        a = self.affine(x)
        return None if a is None else ({t: v * k for t, v in a[0].items() if v * k}, a[1] * k)

    def _scaled_term(self, x: UOp, y: UOp) -> Affine | None:
        """x*y as an affine: a constant times an affine, or an invariant product term."""
        for a, b in ((x, y), (y, x)):
            k = const_int(b)
            if k is not None:
                return self._scale(a, k)
        if self.free(x) and self.free(y):
            return {(x, y): 1}, 0
        return None

    def lin(self, n: UOp) -> int | None:
        """The coefficient (modulo 2^bits) of the counter in integer n when n is linear in it
        modulo 2^bits (module docstring), else None; 0 for a loop-invariant node."""
        if n not in self.lin_memo:
            self._post_order(n, self.lin_memo, self._lin_node)
        return self.lin_memo[n]

    def _lin_node(self, n: UOp) -> int | None:
        """lin(n), its sources' already memoized."""
        memo = self.lin_memo
        dt = n.dtype
        res: int | None = None
        if self.free(n):
            res = 0
        elif dt is None or n.shape or not dt.is_int or dt.is_weak or dt.is_bool:
            res = None
        elif n is self.r:
            res = 1
        elif n.op in (Ops.ADD, Ops.SUB):
            a, b = self.lin(n.src[0]), self.lin(n.src[1])
            if a is not None and b is not None:
                res = a + b if n.op is Ops.ADD else a - b
        elif n.op is Ops.NEG:
            a = self.lin(n.src[0])
            res = None if a is None else -a
        elif n.op in (Ops.MUL, Ops.MULACC):
            x, y = n.src[0], n.src[1]
            rest = self.lin(n.src[2]) if n.op is Ops.MULACC else 0
            prod = 0 if self.free(x) and self.free(y) else None
            for a, b in ((x, y), (y, x)):
                k, la = const_int(b), self.lin(a)
                if prod is None and k is not None and la is not None:
                    prod = la * k
            if prod is not None and rest is not None:
                res = prod + rest
        elif n.op is Ops.SHL:
            k, a = const_int(n.src[1]), self.lin(n.src[0])
            if k is not None and a is not None and 0 <= k < dt.bits:
                res = a << k
        elif n.op is Ops.CAST:
            s = n.src[0].dtype
            if s.is_int and not s.is_bool and not s.is_weak and s.bits >= dt.bits:
                res = self.lin(n.src[0])
        if res is not None:
            res &= (1 << dt.bits) - 1 if dt is not None and dt.is_int and not dt.is_weak \
                else -1
        memo[n] = res
        return res

    def independent(self, k: int) -> bool:
        """No store of one iteration meets another access 1 … k-1 iterations apart."""
        return all(iterations_disjoint([(1, o, 1, st) for o, st in spans], k)
                   for spans in self.spans.values())

    def rewrite(self, k: int, desc: TargetDesc, counter: UOp | None = None) -> UOp | None:
        """The loop's new END at k lanes, or None when a vector it needs is not legal. With
        counter: no loop, one k-lane copy of the body whose lane 0 is iteration `counter`
        (the body's new last node: widen_reduce.py's overlapping last block)."""
        r = self.r
        dt = r.dtype
        need_vec, need_scalar = self._demand()
        r2 = None if counter is not None else \
            UOp(Ops.RANGE, (split(r, k)[0],) + r.src[1:], r.arg)
        scal: dict[UOp, UOp] = {r: counter if r2 is None
                                else UOp(Ops.MUL, (r2, strong_int(k, dt)))}
        vec: dict[UOp, UOp] = self.seed(r2, k)
        new: dict[UOp, UOp] = {}
        made: list[UOp] = list(vec.values())
        if self.strides:
            # strided loads (widen_stride.py; imported here: a loop without one, saxpy's,
            # never needs it)
            from kcc.passes.widen_stride import stride_legal, strided_load
            if any(not stride_legal(c, k, desc, p.dtype) for p, c in self.strides.items()):
                return None
        if self.gathers:
            from kcc.passes import widen_gather
            if any(not widen_gather.legal(desc, p.dtype, k) for p in self.gathers):
                return None

        def lanes(s: UOp) -> UOp:
            v = vec.get(s)
            if v is None:                   # loop-invariant: k copies
                v = UOp(Ops.STACK, (s,) * k)
                made.append(v)
            return v

        def place(p: UOp) -> UOp:
            return UOp(Ops.SHRINK, (p.src[0], scal[p.src[1]], UOp.const(k)))

        for n in self.region:
            if n in need_scalar and n is not r:
                scal[n] = n.replace(src=tuple(scal.get(s, s) for s in n.src))
            if n in need_vec and n not in vec:
                c = self.lin(n)
                if n in self.splats:
                    # one element, loaded ungated (inside the buffer: _splat), each lane
                    # selected by its own gate
                    g = self.guards.get(n)
                    one = UOp(Ops.LOAD, (n.src[0],) if g is None else (n.src[0], n.src[1], g))
                    v = UOp(Ops.WHERE, (lanes(n.src[2]), lanes(one), lanes(n.src[1])))
                elif n.op is Ops.LOAD and n.src[0] in self.gathers:
                    v = widen_gather.gather_load(self, n, k, lanes, made)
                elif n.op is Ops.LOAD and n.src[0] in self.strides:
                    p = n.src[0]
                    v, parts = strided_load(p.src[0], scal[p.src[1]], self.strides[p], k,
                                            desc, self.windows.get(p))
                    made.extend(parts[:-1])
                elif n.op is Ops.LOAD and len(n.src) == 3:
                    # a gated load: its gate per lane where it varies with the counter (a
                    # per-lane gate, TargetDesc.lane_gates), else the one scalar gate
                    g = n.src[2]
                    v = UOp(Ops.LOAD, (place(n.src[0]), lanes(n.src[1]),
                                       lanes(g) if g in self.inside else g))
                elif n.op is Ops.LOAD:
                    v = UOp(Ops.LOAD, (place(n.src[0]),))
                elif c is not None:
                    steps = tuple(make_const(literal_value(c * j, n.dtype), n.dtype)
                                  for j in range(k))
                    v = UOp(Ops.ADD, (lanes(scal[n]), UOp(Ops.STACK, steps)))
                elif n.op is Ops.CMPNE and n.src[0].dtype == dtypes.bool:
                    # bools' != is their XOR (one truth table), which targets have on bool
                    # vectors and not as a compare (tinygrad's round: `(x < y) != true`)
                    v = UOp(Ops.XOR, tuple(lanes(s) for s in n.src))
                elif n.op is Ops.CMPEQ and n.src[0].dtype == dtypes.bool:
                    # and == is XOR's complement: XOR with all-true (a NOT)
                    ne = UOp(Ops.XOR, tuple(lanes(s) for s in n.src))
                    made.append(ne)
                    v = UOp(Ops.XOR, (ne, UOp(Ops.STACK, (UOp.const(True),) * k)))
                else:
                    v = n.replace(src=tuple(lanes(s) for s in n.src))
                vec[n] = v
                made.append(v)
            if n.op is Ops.STORE:
                new[n] = self.vector_store(n, place, lanes)
                made.append(new[n])
            elif n.op is Ops.GROUP:
                new[n] = n.replace(src=tuple(dict.fromkeys(new.get(s, s) for s in n.src)))
        if not all(_legal(v, k, desc) for v in made):
            return None
        body = self.end.src[0]
        return new.get(body, body) if r2 is None else UOp(Ops.END, (new.get(body, body), r2))

    def seed(self, r2: UOp | None, k: int) -> dict[UOp, UOp]:
        """Vectors of region nodes the rewrite takes as made (none here; a subclass's hook)."""
        return {}

    def vector_store(self, n: UOp, place: Callable[[UOp], UOp],
                     lanes: Callable[[UOp], UOp]) -> UOp:
        """STORE n at k lanes: its place a SHRINK, its value the k lanes (a subclass's hook)."""
        return UOp(Ops.STORE, (place(n.src[0]), lanes(n.src[1])))

    def _demand(self) -> tuple[set[UOp], set[UOp]]:
        """(the nodes whose k-lane vector the rewrite needs, those whose lane-0 scalar it
        needs): a store's value and the operands of a vector that is not linear are vectors;
        places' indexes and linear vectors' nodes are scalars, and so are their operands."""
        inside = self.inside
        need_vec: set[UOp] = set()
        need_scalar: set[UOp] = set()
        for n in reversed(self.region):
            if n.op is Ops.STORE:
                need_scalar.add(n.src[0].src[1])
                if n.src[1] in inside:
                    need_vec.add(n.src[1])
            if n in need_vec:
                if n in self.splats:
                    need_vec.update(s for s in n.src[1:] if s in inside)   # alt, gate
                elif n.op is Ops.LOAD and n.src[0] in self.gathers:
                    from kcc.passes.widen_gather import demand
                    need_vec.update(demand(self, n.src[0].src[1]))     # its index vector
                    need_vec.update(s for s in n.src[1:] if s in inside)   # alt, gate
                elif n.op is Ops.LOAD:
                    need_scalar.add(n.src[0].src[1])
                    need_vec.update(s for s in n.src[1:] if s in inside)   # alt, gate
                elif self.lin(n) is not None:
                    need_scalar.add(n)
                else:
                    need_vec.update(s for s in n.src if s in inside)
            if n in need_scalar:
                need_scalar.update(s for s in n.src if s in inside)
        return need_vec, need_scalar

    def _one_block(self) -> bool:
        """Whether the loop, all of whose N = k iterations run as one block, may lose its
        RANGE (`one_block`)."""
        stored = self.kernel_stored
        return stored is not None and one_block(self.r, self.region, stored)

    def widen(self, n_iter: int | None, desc: TargetDesc) -> UOp | None:
        """The loop's END at the best legal factor (module docstring), followed by a tail
        loop of the remaining iterations (passes/widen_tail.py), or None. n_iter: the
        constant bound, None for a symbolic one."""
        lone = lone_tail(self, n_iter, desc)    # (then no overlapping block)
        overlap = overlap_ok(self, n_iter) and not lone
        for k in factors(n_iter, overlap):
            if self.independent(k):
                if n_iter == k:
                    # one k-lane iteration: the body once at counter 0, no loop of one
                    # iteration (its counter, compare and branch; uint16_max's r_4_8_8)
                    once = self.rewrite(k, desc, counter=strong_int(0, self.r.dtype))
                    if once is not None:
                        return once
                out = self.rewrite(k, desc)
                if out is not None:
                    start = split(self.r, k)[1]
                    if start is None or not overlap:
                        last = None
                    else:           # (imported here: saxpy's compile needs none of it)
                        from kcc.passes.widen_stride import last_block
                        last = last_block(self, k, desc, n_iter)
                    if n_iter is not None and n_iter // k == 1 and (start is None or last) \
                            and self._one_block():
                        # no loop of one iteration: lane 0 is iteration 0, and what does not
                        # depend on the outer loops is hoisted with them (attention's
                        # transposed operand, gathered once a row block, not once a row)
                        one = self.rewrite(k, desc, counter=strong_int(0, self.r.dtype))
                        out = out if one is None else one
                    if last is not None:        # the last k iterations as one more block
                        out = UOp(Ops.GROUP, (out, last))
                    elif start is not None:
                        out = tail_loop(self.r, self.end, self.region, out, start, one=lone)
                    return out
        return None
