"""A Hypothesis strategy for lane-wise kernels: the shape tinygrad writes vectors in.

n-lane SHRINK loads are taken apart lane by lane (INDEX with a constant), each lane is computed
in scalars by the same expression (isomorphic lanes: what the SLP pass re-packs), the results
are rebuilt with a STACK and stored with one SHRINK store. To reach every branch of the pass the
expression also reads lanes in another order, one lane of a vector for all lanes (a broadcast),
scalar PARAMs, per-lane constants and scalar loads of consecutive elements; a WHERE's condition
may join two compares by AND/OR/XOR/CMPNE, maybe negated (vector bool ops once packed);
sometimes one lane uses a different op (not isomorphic: must stay scalar), sometimes an
intermediate lane is also stored on its own (a packed scalar that keeps another user), and
sometimes per-lane compares of the result, joined by a bool op, are stored as a bool vector.
Lanes are float32, float64 and 8- to 64-bit integers.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzz.strategies import Scope, Val, _close, _group, _Kernel, _loops, _sink, loop_nest
from kcc.ir import AddrSpace, AxisType, Ops, ParamArg, UOp, dtypes
from kcc.ir.dtype import DType

SHAPES = [(dtypes.float32, 4), (dtypes.float32, 8), (dtypes.float64, 2), (dtypes.float64, 4),
          (dtypes.int32, 4), (dtypes.int32, 8), (dtypes.uint32, 4), (dtypes.int8, 16),
          (dtypes.uint8, 16), (dtypes.int16, 8), (dtypes.uint16, 8), (dtypes.int64, 2),
          (dtypes.int64, 4)]
WIDE = [(dtypes.float32, 16), (dtypes.float64, 8), (dtypes.int32, 16), (dtypes.int64, 8),
        (dtypes.int16, 32)]
F_OPS = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.FDIV, Ops.MULACC, Ops.NEG, Ops.SQRT, Ops.WHERE)
I_OPS = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.XOR, Ops.AND, Ops.OR, Ops.MULACC, Ops.NEG,
         Ops.SHL, Ops.WHERE)
ARITY = {Ops.NEG: 1, Ops.SQRT: 1, Ops.MULACC: 3, Ops.WHERE: 3}
Tmpl = tuple[Any, ...]


class _Lanes:
    """Draws one expression template and instantiates it for every lane."""

    def __init__(self, draw: st.DrawFn, s: Scope, dt: DType, w: int):
        self.draw, self.s, self.dt, self.w = draw, s, dt, w
        self.vecs = [s.load(dt, (w,), 1).u for _ in range(draw(st.integers(1, 3)))]
        self.cache: dict[tuple[int, int], UOp] = {}
        # lane numbers as weak literals or as tinygrad writes them: strong int32 constants
        self.strong = draw(st.booleans())
        self.tmpls: list[Tmpl] = []

    def leaf(self) -> Tmpl:
        """A lane source: a lane of a vector (in order, reversed or one fixed lane), a scalar
        argument, per-lane constants or consecutive scalar loads."""
        d = self.draw
        how = d(st.integers(0, 9))
        if how < 5:
            return ("lane", d(st.integers(0, len(self.vecs) - 1)), "id")
        if how == 5:
            return ("lane", d(st.integers(0, len(self.vecs) - 1)),
                    d(st.sampled_from(["rev", d(st.integers(0, self.w - 1))])))
        if how == 6:
            return ("param", self.s.k.param(self.dt, None))
        if how == 7:
            return ("const", tuple(self.s.strong_const(self.dt).u for _ in range(self.w)))
        return ("scal", self.s.buffer(self.dt, self.s.n * self.w))

    def tmpl(self, depth: int) -> Tmpl:
        """An expression template: an op over sub-templates, or a leaf."""
        d = self.draw
        if depth >= 3 or d(st.integers(0, 3)) == 0:
            return self.leaf()
        op = d(st.sampled_from(F_OPS if self.dt.is_float else I_OPS))
        kids = tuple(self.tmpl(depth + 1) for _ in range(ARITY.get(op, 2)))
        cmp: Any = d(st.sampled_from(CMPS))
        if op is Ops.WHERE and d(st.booleans()):
            # a condition of two compares joined by a bool op, maybe negated (XOR true):
            # vector bool ops on lane masks once packed
            cmp = (cmp, d(st.sampled_from(CMPS)), d(st.sampled_from(BOOLS)), d(st.booleans()))
        t: Tmpl = ("op", op, kids, cmp)
        if d(st.integers(0, 7)) == 0:             # one lane computes something else
            other = d(st.sampled_from([o for o in (Ops.ADD, Ops.MUL, Ops.SUB) if o is not op]))
            t = ("mut", t, ("op", other, kids[:1] * 2, t[3]), d(st.integers(0, self.w - 1)))
        self.tmpls.append(t)
        return t

    def num(self, k: int) -> UOp:
        """The lane number or offset k (weak, or CAST(k) int32)."""
        return UOp(Ops.CAST, (UOp.const(k),), dtypes.int32) if self.strong else UOp.const(k)

    def lane(self, t: Tmpl, j: int) -> UOp:
        """Lane j of template t."""
        kind = t[0]
        if kind == "lane":
            p = t[2]
            k = j if p == "id" else self.w - 1 - j if p == "rev" else p
            return UOp(Ops.INDEX, (self.vecs[t[1]], self.num(k)))
        if kind == "param":
            return t[1]
        if kind == "const":
            return t[1][j]
        if kind == "scal":
            base = UOp(Ops.MUL, (self.s.lin, UOp.const(self.w)))
            if self.strong:
                base = UOp(Ops.CAST, (base,), dtypes.int32)
            idx = UOp(Ops.ADD, (base, self.num(j)))
            return UOp(Ops.LOAD, (UOp(Ops.INDEX, (t[1], idx)),))
        if kind == "mut":
            return self.lane(t[2] if j == t[3] else t[1], j)
        op, kids = t[1], [self.lane(k, j) for k in t[2]]
        if op is Ops.WHERE:
            if isinstance(t[3], tuple):
                c1, c2, bop, neg = t[3]
                cond = UOp(bop, (UOp(c1, (kids[0], kids[1])), UOp(c2, (kids[2], kids[0]))))
                if neg:
                    neg_op = Ops.CMPNE if bop is Ops.CMPNE else Ops.XOR
                    cond = UOp(neg_op, (cond, UOp.const(True)))
            else:
                cond = UOp(t[3], (kids[0], kids[1]))
            return UOp(Ops.WHERE, (cond, kids[1], kids[2]))
        if op is Ops.SHL:
            amt = UOp(Ops.AND, (kids[1], UOp.const(self.dt.bits - 1)))
            return UOp(Ops.SHL, (kids[0], amt))
        return UOp(op, tuple(kids))


CMPS = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
# CMPNE of two bools is XOR's truth table (slp packs it as XOR: tinygrad's `(x < c) != true`)
BOOLS = (Ops.AND, Ops.OR, Ops.XOR, Ops.CMPNE)


def _widen_loops(draw: st.DrawFn) -> tuple[list[UOp], UOp, int]:
    """One or two loops whose innermost bound is one passes/widen.py may divide (2, 4, 6, 8,
    12, 16) or not (3, 5, 7, 13, 19: widened with a tail loop, passes/widen_tail.py): the loop
    nest `lanewise(loop=True)` draws."""
    bounds = [draw(st.integers(1, 3))] if draw(st.booleans()) else []
    bounds.append(draw(st.sampled_from((2, 4, 6, 8, 12, 16, 3, 5, 7, 13, 19))))
    return loop_nest(draw, bounds)


@st.composite
def lanewise(draw: st.DrawFn, name: str = "fuzz", wide: bool = False, loop: bool = False
             ) -> UOp:
    """out[w·i : w·i+w] = STACK(f(lane 0), …, f(lane w-1)) over one or two loops. With `loop`,
    the innermost loop has a bound passes/widen.py may divide, the loops nest (one END each)
    and the result is sometimes stored in place over one of the inputs (read and written by
    the same iteration): the elementwise loops that pass widens across iterations."""
    dt, w = draw(st.sampled_from(WIDE if wide else SHAPES))
    k = _Kernel(draw)
    ranges, lin, n = (_widen_loops(draw) if loop else
                      _loops(draw, draw(st.integers(1, 2)), max_bound=4))
    s = Scope(k, ranges, lin, n, w)
    g = _Lanes(draw, s, dt, w)
    t = g.tmpl(0)
    res = UOp(Ops.STACK, tuple(g.lane(t, j) for j in range(w)))
    v0 = g.vecs[0]
    # in place: over the first vector's input, when the result reads that load (so the load
    # is ordered before the store; no other effect may read the buffer: no mask store below)
    inplace = loop and draw(st.booleans()) and v0.op is Ops.LOAD and len(v0.src) == 1 \
        and v0 in set(res.toposort())
    stores = [UOp(Ops.STORE, (v0.src[0], res)) if inplace else s.store(Val(res), False)]
    if g.tmpls and draw(st.booleans()) and not loop:   # an intermediate lane with its own user
        inner = draw(st.sampled_from(g.tmpls))
        lane = draw(st.integers(0, w - 1))
        stores.append(s.store(Val(g.lane(inner, lane)), False))
    if draw(st.integers(0, 3)) == 0:               # the same lanes stored in reverse order
        rev = UOp(Ops.STACK, tuple(reversed(res.src)))
        stores.append(s.store(Val(rev), False))
    if draw(st.integers(0, 2)) == 0 and not inplace:
        stores.append(s.store(Val(_mask_lanes(draw, g, res.src)), False))
    body = _group(stores)
    if loop:
        for r in reversed(ranges):
            body = UOp(Ops.END, (body, r))
        return _sink(k, body, name)
    return _sink(k, _close(draw, body, ranges), name)


def _mask_lanes(draw: st.DrawFn, g: _Lanes, res: tuple[UOp, ...]) -> UOp:
    """A bool vector stored on its own, as tinygrad writes `(a < b) & (c != d)`: per lane two
    compares (of the result lane and a lane of a loaded vector) joined by AND/OR/XOR, maybe
    negated (XOR true): packed, a vector compare and a vector bool op (opmasks on v4)."""
    v = g.vecs[draw(st.integers(0, len(g.vecs) - 1))]
    c1, c2 = draw(st.sampled_from(CMPS)), draw(st.sampled_from(CMPS))
    bop, neg, two = draw(st.sampled_from(BOOLS)), draw(st.booleans()), draw(st.booleans())
    lanes = []
    for j, r in enumerate(res):
        x = UOp(Ops.INDEX, (v, g.num(j)))
        m = UOp(c1, (r, x))
        if two:
            m = UOp(bop, (m, UOp(c2, (x, UOp.const(0 if g.dt.is_int else 0.0)))))
        if neg:
            m = UOp(Ops.XOR, (m, UOp.const(True)))
        lanes.append(m)
    return UOp(Ops.STACK, tuple(lanes))


@st.composite
def lanewise_reduce(draw: st.DrawFn, name: str = "fuzz") -> UOp:
    """tinygrad's upcast reduce: a REG accumulator of w elements set per lane before a reduce
    loop, each lane updated in it by acc[j] = acc[j] + f(lane j) (f as in `lanewise`, or the
    sum of the lanes of the j-th of w loaded vectors: a transpose), STACKed after it."""
    dt, w = draw(st.sampled_from([(dtypes.float32, 4), (dtypes.int32, 4), (dtypes.float64, 2),
                                  (dtypes.float32, 8)]))
    k = _Kernel(draw)
    outer, lin_o, n_o = _loops(draw, 1, max_bound=3)
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dt, w, addrspace=AddrSpace.REG))
    so = Scope(k, outer, lin_o, n_o, w)
    init = [UOp(Ops.STORE, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, *outer)), UOp.const(j))),
                            so.strong_const(dt).u)) for j in range(w)]
    n_i = draw(st.integers(1, 4))
    i = UOp(Ops.RANGE, (UOp.const(n_i), *outer), (1, AxisType.REDUCE))
    lin_i = UOp(Ops.ADD, (UOp(Ops.MUL, (lin_o, UOp.const(n_i))), i))
    si = Scope(k, [*outer, i], lin_i, n_o * n_i, w)
    after = UOp(Ops.AFTER, (acc, *init, i))
    if draw(st.booleans()):
        g = _Lanes(draw, si, dt, w)
        t = g.tmpl(1)
        term = [g.lane(t, j) for j in range(w)]
    else:
        rows = [si.load(dt, (w,), 2).u for _ in range(w)]
        term = []
        for r in rows:
            s = UOp(Ops.INDEX, (r, UOp.const(0)))
            for c in range(1, w):
                s = UOp(Ops.ADD, (s, UOp(Ops.INDEX, (r, UOp.const(c)))))
            term.append(s)
    ups = [UOp(Ops.STORE, (UOp(Ops.INDEX, (after, UOp.const(j))),
                           UOp(Ops.ADD, (UOp(Ops.LOAD, (UOp(Ops.INDEX, (after, UOp.const(j))),)),
                                         term[j])))) for j in range(w)]
    ei = UOp(Ops.END, (UOp(Ops.GROUP, tuple(ups)), i))
    done = UOp(Ops.AFTER, (acc, ei))
    res = UOp(Ops.STACK, tuple(UOp(Ops.LOAD, (UOp(Ops.INDEX, (done, UOp.const(j))),))
                               for j in range(w)))
    return _sink(k, _close(draw, so.store(Val(res), False), outer), name)


TILE_SHAPES = [(dtypes.float32, 4), (dtypes.float64, 2), (dtypes.float32, 8), (dtypes.int32, 4),
               (dtypes.float64, 4)]


@st.composite
def lanewise_tile(draw: st.DrawFn, name: str = "fuzz") -> UOp:
    """tinygrad's upcast matmul tile: a REG accumulator of R rows of w lanes (R·w scalars, a
    run the SLP pass may widen past w), acc[r·w + j] = acc[r·w + j] + g(f(a_r[0], b_0[j]), …,
    f(a_r[K-1], b_{K-1}[j])) in each reduce step, with a_r and b_k loaded w-lane vectors: lane
    k of row r's vector is the same for the whole row (a broadcast per row), b_k's lanes run
    along it. After the loop each row's lanes are STACKed and stored on their own."""
    dt, w = draw(st.sampled_from(TILE_SHAPES))
    rows_n = draw(st.sampled_from([2, 4]))
    terms = draw(st.integers(1, w))
    k = _Kernel(draw)
    outer, lin_o, n_o = _loops(draw, 1, max_bound=3)
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dt, rows_n * w, addrspace=AddrSpace.REG))
    so = Scope(k, outer, lin_o, n_o, w)
    same = draw(st.booleans())                   # one start value for all (tinygrad: zero)
    c0 = so.strong_const(dt).u
    init = [UOp(Ops.STORE, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, *outer)), UOp.const(j))),
                            c0 if same else so.strong_const(dt).u))
            for j in range(rows_n * w)]
    n_i = draw(st.integers(1, 4))
    i = UOp(Ops.RANGE, (UOp.const(n_i), *outer), (1, AxisType.REDUCE))
    lin_i = UOp(Ops.ADD, (UOp(Ops.MUL, (lin_o, UOp.const(n_i))), i))
    si = Scope(k, [*outer, i], lin_i, n_o * n_i, w)
    after = UOp(Ops.AFTER, (acc, *init, i))
    a = [si.load(dt, (w,), 2).u for _ in range(rows_n)]
    b = [si.load(dt, (w,), 2).u for _ in range(terms)]
    f = draw(st.sampled_from([Ops.MUL, Ops.ADD, Ops.SUB, Ops.MAX] if dt.is_float else
                             [Ops.MUL, Ops.ADD, Ops.XOR]))
    g = draw(st.sampled_from([Ops.ADD, Ops.MAX] if dt.is_float else [Ops.ADD, Ops.OR]))
    swap = draw(st.booleans())
    lane = lambda v, j: UOp(Ops.INDEX, (v, UOp.const(j)))      # noqa: E731
    ups = []
    for r in range(rows_n):
        for j in range(w):
            t = None
            for kk in range(terms):
                x, y = lane(a[r], kk), lane(b[kk], j)
                p = UOp(f, (y, x) if swap else (x, y))
                t = p if t is None else UOp(g, (t, p))
            place = UOp(Ops.INDEX, (after, UOp.const(r * w + j)))
            ups.append(UOp(Ops.STORE, (place, UOp(Ops.ADD, (UOp(Ops.LOAD, (place,)), t)))))
    ei = UOp(Ops.END, (UOp(Ops.GROUP, tuple(ups)), i))
    done = UOp(Ops.AFTER, (acc, ei))
    stores = []
    for r in range(rows_n):
        res = UOp(Ops.STACK, tuple(UOp(Ops.LOAD, (UOp(Ops.INDEX, (done, UOp.const(r * w + j))),))
                                   for j in range(w)))
        stores.append(so.store(Val(res), False))
    return _sink(k, _close(draw, _group(stores), outer), name)
