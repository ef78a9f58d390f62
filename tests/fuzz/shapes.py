"""Hypothesis strategies for the shapes an independent fuzzer found bugs in (issue 12):

- carried: a REG accumulator zeroed once or at the top of any of 1–3 nested loops, updated in
  the innermost loop (order-sensitive: acc*k + x), read after it; the loops are closed by one
  END listing them in any order or by nested ENDs; sometimes a GLOBAL read-modify-write of one
  place (through an AFTER on the inner RANGE) rides along;
- mixed_lanes: two vector lane widths in one kernel: a compare of one width selecting vectors
  of another (WHERE), shifts of one width by amounts of another (loaded or constant STACKs),
  vector bools from every source (compares, STACKs of scalar bools, AND/OR/XOR of masks, a
  compare of a loaded bool vector);
- half_nan: float16/bfloat16 values with NaN payloads (signalling ones too) moved by NEG,
  WHERE, MAX, STACK lanes and casts into and out of the half types; movement outputs are
  compared bit for bit (docs/semantics.md: they keep the bits), others NaN-as-NaN;
- spills: long dependency chains over 12–28 values of both register classes (integers and
  floats) live at once, so the allocator spills both;
- jam: tinygrad's reduction tile (REG accumulators zeroed at the top of an outer loop, a reduce
  loop or two inside it, the accumulators stored after it) with random store strides and
  offsets (aliasing between iterations or not), read-modify-writes of the output, gated loads,
  an accumulator sometimes zeroed once outside the loop: the shapes passes/unroll.py jams or
  must refuse;
- reflected (GPU targets): indices (s - t) + c whose part s - t is negative for some threads
  while the whole is in bounds, as tinygrad's flip/sort/topk/reflect pad write them (issue 20).

Every kernel is valid by construction and keeps to defined results (masked shift amounts, no
division).
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from kcc.ir import AddrSpace, AxisType, KernelInfo, Ops, ParamArg, UOp, dtypes
from kcc.ir.dtype import DType

INT_W = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
         dtypes.int64, dtypes.uint64]
FLT_W = [dtypes.float32, dtypes.float64]
HALF = [dtypes.float16, dtypes.bfloat16]
# signalling and quiet NaNs with payloads, infinities, zeros (bit patterns)
HALF_BITS = {"float16": [0x7C01, 0xFC01, 0x7D55, 0x7E00, 0xFE01, 0x7C00, 0x8000, 0x0001,
                         0x3C00, 0xBC00],
             "bfloat16": [0x7F81, 0xFF81, 0x7FA5, 0x7FC0, 0xFFC1, 0x7F80, 0x8000, 0x0001,
                          0x3F80, 0xBF80]}


def c(v) -> UOp:
    return UOp.const(v)


def cast(v, dt: DType) -> UOp:
    return UOp(Ops.CAST, (v if isinstance(v, UOp) else c(v),), dt)


class _Params:
    def __init__(self) -> None:
        self.ps: list[UOp] = []

    def buf(self, dt: DType, n: int) -> UOp:
        p = UOp(Ops.PARAM, (), ParamArg(len(self.ps), dt, n))
        self.ps.append(p)
        return p

    def sink(self, effect: UOp, name: str) -> UOp:
        used = set(UOp(Ops.SINK, (effect,), KernelInfo(name)).toposort())
        return UOp(Ops.SINK, (effect, *(p for p in self.ps if p not in used)), KernelInfo(name))


def _flat(rs: list[UOp], ns: list[int]) -> UOp:
    e = rs[0]
    for r, n in zip(rs[1:], ns[1:]):
        e = UOp(Ops.ADD, (UOp(Ops.MUL, (e, c(n))), r))
    return e


def _end(draw: st.DrawFn, body: UOp, rs: list[UOp]) -> UOp:
    """Close rs: one END listing them in a random order, or nested ENDs."""
    if len(rs) > 1 and draw(st.booleans()):
        return UOp(Ops.END, (body, *draw(st.permutations(rs))))
    for r in reversed(rs):
        body = UOp(Ops.END, (body, r))
    return body


@st.composite
def carried(draw: st.DrawFn, name: str = "fuzz") -> UOp:
    """out[outer index] = acc after the innermost loop; acc = acc*k + x[flat] inside it."""
    P = _Params()
    L = draw(st.integers(1, 3))
    ns = [draw(st.integers(1, 3)) for _ in range(L)]
    level = draw(st.integers(0, L - 1))
    dt = draw(st.sampled_from([dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.float32,
                               dtypes.float64]))
    n_all = 1
    for n in ns:
        n_all *= n
    n_out = n_all // ns[-1]
    out, x = P.buf(dt, n_out), P.buf(dt, n_all)
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dt, 1, addrspace=AddrSpace.REG))
    rs: list[UOp] = []
    init = None
    for lv in range(L):
        order: tuple[UOp, ...] = ()
        if lv == level:
            place = acc if lv == 0 else UOp(Ops.AFTER, (acc, rs[lv - 1]))
            init = UOp(Ops.STORE, (UOp(Ops.INDEX, (place, c(0))), cast(draw(
                st.integers(0, 3)), dt)))
            order = (init,)
        # loops the init does not order nest by axis_id (docs/semantics.md, Loop order)
        rs.append(UOp(Ops.RANGE, (c(ns[lv]),) + order, (lv, AxisType.LOOP)))
    a_in = UOp(Ops.AFTER, (acc, init, rs[-1]))
    p1 = UOp(Ops.INDEX, (a_in, c(0)))
    k = draw(st.sampled_from([2, 3, -1] if dt.is_signed or dt.is_float else [2, 3]))
    xv = UOp(Ops.LOAD, (UOp(Ops.INDEX, (x, _flat(rs, ns))),))
    new = UOp(Ops.ADD, (UOp(Ops.MUL, (UOp(Ops.LOAD, (p1,)), cast(k, dt))), xv))
    effects = [UOp(Ops.STORE, (p1, new))]
    if draw(st.booleans()):
        # a GLOBAL read-modify-write of one place across every iteration
        g = P.buf(dt, 1)
        gp = UOp(Ops.INDEX, (UOp(Ops.AFTER, (g, rs[-1])), c(0)))
        effects.append(UOp(Ops.STORE, (gp, UOp(Ops.ADD, (UOp(Ops.LOAD, (gp,)), xv)))))
    body = effects[0] if len(effects) == 1 else UOp(Ops.GROUP, tuple(effects))
    ei = UOp(Ops.END, (body, rs[-1]))
    res = UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, ei)), c(0))),))
    oi = _flat(rs[:-1], ns[:-1]) if L > 1 else c(0)
    st_out = UOp(Ops.STORE, (UOp(Ops.INDEX, (out, oi)), res))
    return P.sink(_end(draw, st_out, rs[:-1]) if L > 1 else st_out, name)


def _vec_load(P: _Params, dt: DType, n: int, lin: UOp) -> UOp:
    b = P.buf(dt, 2 * n)
    return UOp(Ops.LOAD, (UOp(Ops.SHRINK, (b, UOp(Ops.MUL, (lin, c(n))), c(n))),))


def _mask(draw: st.DrawFn, P: _Params, n: int, lin: UOp, depth: int = 0) -> UOp:
    """A vector of n bools from any source."""
    how = draw(st.integers(0, 4 if depth < 2 else 1))
    if how == 0:
        dt = draw(st.sampled_from(INT_W + FLT_W))
        op = draw(st.sampled_from([Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]))
        return UOp(op, (_vec_load(P, dt, n, lin), _vec_load(P, dt, n, lin)))
    if how == 1:
        lanes = [UOp(Ops.CMPLT, (UOp(Ops.ADD, (lin, c(k))), c(draw(st.integers(0, 2 * n)))))
                 for k in range(n)]
        return UOp(Ops.STACK, tuple(lanes))
    if how == 2:
        op = draw(st.sampled_from([Ops.AND, Ops.OR, Ops.XOR]))
        return UOp(op, (_mask(draw, P, n, lin, depth + 1), _mask(draw, P, n, lin, depth + 1)))
    if how == 3:
        b = _vec_load(P, dtypes.bool, n, lin)
        return UOp(Ops.CMPNE, (b, _mask(draw, P, n, lin, depth + 1)))
    return UOp(Ops.CMPLT, (_vec_load(P, dtypes.int32, n, lin), UOp(
        Ops.STACK, (cast(0, dtypes.int32),) * n)))


@st.composite
def mixed_lanes(draw: st.DrawFn, name: str = "fuzz") -> UOp:
    """Vectors of two lane widths meeting in WHERE masks and shift amounts."""
    P = _Params()
    n = draw(st.sampled_from([2, 4, 8]))
    r = UOp(Ops.RANGE, (c(2),), (0, AxisType.LOOP))
    stores = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 1))
        if kind == 0:
            dt = draw(st.sampled_from(INT_W + FLT_W))
            if dt.itemsize * n > 32:
                dt = dtypes.float32
            v = UOp(Ops.WHERE, (_mask(draw, P, n, r), _vec_load(P, dt, n, r),
                                _vec_load(P, dt, n, r)))
        else:
            dt = draw(st.sampled_from([d for d in INT_W if d.itemsize * n <= 32]))
            adt = draw(st.sampled_from(INT_W))
            if draw(st.booleans()):
                amt = _vec_load(P, adt, n, r)
            else:
                amt = UOp(Ops.STACK, tuple(cast(draw(st.integers(0, 70)), adt)
                                           for _ in range(n)))
            amt = UOp(Ops.AND, (amt, UOp(Ops.STACK, (cast(dt.bits - 1, adt),) * n)))
            op = draw(st.sampled_from([Ops.SHL, Ops.SHR]))
            v = UOp(op, (_vec_load(P, dt, n, r), amt))
        out = P.buf(v.dtype, 2 * n)
        stores.append(UOp(Ops.STORE, (UOp(Ops.SHRINK, (out, UOp(Ops.MUL, (r, c(n))), c(n))),
                                      v)))
    body = stores[0] if len(stores) == 1 else UOp(Ops.GROUP, tuple(stores))
    return P.sink(UOp(Ops.END, (body, r)), name)


@st.composite
def half_nan(draw: st.DrawFn, name: str = "fuzz") -> tuple[UOp, list[int]]:
    """(kernel, slots whose every bit is defined): half values with NaN payloads through
    movement ops (bits kept) and casts into and out of the half types (NaN-as-NaN)."""
    P = _Params()
    dt = draw(st.sampled_from(HALF))
    n = 8
    r = UOp(Ops.RANGE, (c(n),), (0, AxisType.LOOP))
    x, y = P.buf(dt, n), P.buf(dt, n)
    xv = UOp(Ops.LOAD, (UOp(Ops.INDEX, (x, r)),))
    yv = UOp(Ops.LOAD, (UOp(Ops.INDEX, (y, r)),))
    stores, exact = [], []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            v, keeps = UOp(Ops.NEG, (draw(st.sampled_from([xv, yv])),)), True
        elif kind == 1:
            v, keeps = UOp(Ops.MAX, (xv, yv) if draw(st.booleans()) else (yv, xv)), True
        elif kind == 2:
            cnd = UOp(Ops.CMPLT, (r, c(draw(st.integers(0, n)))))
            v, keeps = UOp(Ops.WHERE, (cnd, xv, yv)), True
        elif kind == 3:
            lane = draw(st.integers(0, 1))
            v, keeps = UOp(Ops.INDEX, (UOp(Ops.STACK, (xv, yv)), c(lane))), True
        elif kind == 4:
            to = draw(st.sampled_from([dtypes.float32, dtypes.float64, HALF[1 - HALF.index(dt)],
                                       dtypes.int32, dtypes.bool]))
            v, keeps = UOp(Ops.CAST, (xv,), to), not to.is_float
        else:
            src = draw(st.sampled_from([dtypes.float32, dtypes.float64, dtypes.int64]))
            w = P.buf(src, n)
            v, keeps = cast(UOp(Ops.LOAD, (UOp(Ops.INDEX, (w, r)),)), dt), False
        out = P.buf(v.dtype, n)
        if keeps:
            exact.append(out.arg.slot)
        stores.append(UOp(Ops.STORE, (UOp(Ops.INDEX, (out, r)), v)))
    body = stores[0] if len(stores) == 1 else UOp(Ops.GROUP, tuple(stores))
    return P.sink(UOp(Ops.END, (body, r)), name), exact


@st.composite
def spills(draw: st.DrawFn, name: str = "fuzz") -> UOp:
    """Many int and float values live at once, combined in a long chain."""
    P = _Params()
    n = draw(st.integers(1, 3))
    r = UOp(Ops.RANGE, (c(n),), (0, AxisType.LOOP))
    k = draw(st.integers(12, 28))
    fdt = draw(st.sampled_from(FLT_W))
    idt = draw(st.sampled_from([dtypes.int32, dtypes.int64, dtypes.uint32]))
    fb, ib = P.buf(fdt, n * k), P.buf(idt, n * k)
    at = [UOp(Ops.ADD, (UOp(Ops.MUL, (r, c(k))), c(j))) for j in range(k)]
    fs = [UOp(Ops.LOAD, (UOp(Ops.INDEX, (fb, a)),)) for a in at]
    is_ = [UOp(Ops.LOAD, (UOp(Ops.INDEX, (ib, a)),)) for a in at]
    perm = draw(st.permutations(list(range(k))))
    facc, iacc = fs[perm[0]], is_[perm[0]]
    for j in perm[1:]:
        # each step uses a value loaded long before: all stay live across the chain
        facc = UOp(draw(st.sampled_from([Ops.ADD, Ops.MUL, Ops.MAX, Ops.SUB])), (facc, fs[j]))
        iacc = UOp(draw(st.sampled_from([Ops.ADD, Ops.XOR, Ops.MUL, Ops.SUB])), (iacc, is_[j]))
        if draw(st.integers(0, 3)) == 0:
            facc = UOp(Ops.ADD, (facc, cast(iacc, fdt)))
    fo, io = P.buf(fdt, n), P.buf(idt, n)
    both = UOp(Ops.GROUP, (UOp(Ops.STORE, (UOp(Ops.INDEX, (fo, r)), facc)),
                           UOp(Ops.STORE, (UOp(Ops.INDEX, (io, r)), iacc))))
    return P.sink(UOp(Ops.END, (both, r)), name)


@st.composite
def jam(draw: st.DrawFn, name: str = "fuzz") -> UOp:
    """for o: for i: acc[:] = 0; for j (, l): acc[a] = acc[a]*k + x[o, i, j, l] (gated
    sometimes); out[o*S + stride*i + a*gap (+ shift)] = acc[a] (+ out[...])."""
    P = _Params()
    dt = draw(st.sampled_from([dtypes.float32, dtypes.int32, dtypes.float64]))
    n_o, n_i = draw(st.sampled_from([1, 2])), draw(st.sampled_from([2, 3, 4, 6, 8]))
    n_j = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 2)))]
    n_acc = draw(st.sampled_from([1, 2, 4]))
    stride, gap = draw(st.sampled_from([0, 1, 2, n_acc, n_acc + 1])), draw(st.integers(0, 3))
    span = stride * (n_i - 1) + gap * (n_acc - 1) + 4     # room for the read 3 on
    out = P.buf(dt, n_o * span)
    n_x = n_o * n_i * math.prod(n_j)
    x = P.buf(dt, n_x)
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dt, n_acc, addrspace=AddrSpace.REG))
    ro = UOp(Ops.RANGE, (c(n_o),), (0, AxisType.LOOP))
    once = draw(st.integers(0, 4)) == 0         # zeroed once: carried across i
    ri = UOp(Ops.RANGE, (c(n_i), ro), (1, AxisType.WEAK))
    zero_at = ro if once else ri
    inits = tuple(UOp(Ops.STORE, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, zero_at)), c(a))),
                                  cast(a, dt))) for a in range(n_acc))
    rj = [UOp(Ops.RANGE, (c(n_j[0]), ri, *inits), (2, AxisType.REDUCE))]
    if len(n_j) > 1:
        rj.append(UOp(Ops.RANGE, (c(n_j[1]), rj[0]), (3, AxisType.REDUCE)))
    a_in = UOp(Ops.AFTER, (acc, *inits, *rj))
    xi = _flat([ro, ri, *rj], [n_o, n_i, *n_j])
    if draw(st.booleans()):
        gate = UOp(Ops.CMPLT, (rj[-1], c(draw(st.integers(1, 3)))))
        xv = UOp(Ops.LOAD, (UOp(Ops.INDEX, (x, xi)), cast(7, dt), gate))
    else:
        xv = UOp(Ops.LOAD, (UOp(Ops.INDEX, (x, xi)),))
    k = cast(draw(st.sampled_from([1, 2, -1])), dt)
    body = []
    for a in range(n_acc):
        p = UOp(Ops.INDEX, (a_in, c(a)))
        body.append(UOp(Ops.STORE, (p, UOp(Ops.ADD, (UOp(Ops.MUL, (UOp(Ops.LOAD, (p,)), k)),
                                                         xv)))))
    e = UOp(Ops.GROUP, tuple(body))
    for r in reversed(rj):
        e = UOp(Ops.END, (e, r))
    a_out = UOp(Ops.AFTER, (acc, e))
    stores = []
    # read out[place + shift] first; with stride 0 simplify folds i*0 out of that load's index
    # and must keep it in the i loop (keep_loops), after the previous iteration's store
    rmw = draw(st.sampled_from([None, 0, 1, 3]))
    for a in range(n_acc):
        place = UOp(Ops.ADD, (UOp(Ops.ADD, (UOp(Ops.MUL, (ro, c(span))),
                                            UOp(Ops.MUL, (ri, c(stride))))), c(a * gap)))
        v = UOp(Ops.LOAD, (UOp(Ops.INDEX, (a_out, c(a))),))
        if rmw is not None:
            old = UOp(Ops.LOAD, (UOp(Ops.INDEX, (out, UOp(Ops.ADD, (place, c(rmw))))),))
            v = UOp(Ops.ADD, (v, old))
        stores.append(UOp(Ops.STORE, (UOp(Ops.INDEX, (out, place)), v)))
    ei = UOp(Ops.END, (UOp(Ops.GROUP, tuple(stores)), ri))
    return P.sink(UOp(Ops.END, (ei, ro)), name)


@st.composite
def reflected(draw: st.DrawFn, name: str = "fuzz") -> UOp:
    """GPU-style indices whose parts leave the buffer while the whole stays inside it:
    (s - t)·L + c·L as tinygrad's flip, sort, topk and reflect pad write them (s - t < 0 for
    the last threads), and (t + s)·L + c·L with c < 0, for t a lidx, a gidx or a loop
    counter: out[t] = x[g(t)] for the window of L elements (a SHRINK vector, or one
    element), read from GLOBAL or from a LOCAL copy after a BARRIER (lidx only), gated or
    not; the index dtype weak, int32 or int64 (issue 20: a constant folded into the
    immediate offset left a negative VGPR offset)."""
    P = _Params()
    n = draw(st.integers(2, 12))
    lanes = draw(st.sampled_from([1, 1, 2, 4]))
    dt = draw(st.sampled_from([dtypes.float32, dtypes.int32, dtypes.float64, dtypes.int8,
                               dtypes.uint16]))
    idt = draw(st.sampled_from([None, dtypes.int32, dtypes.int64]))

    def k(v: int) -> UOp:
        return c(v) if idt is None else cast(v, idt)
    axis = draw(st.sampled_from(["lidx0", "gidx0", "range"]))
    t = (UOp(Ops.RANGE, (k(n),), (0, AxisType.LOOP)) if axis == "range" else
         UOp(Ops.SPECIAL, (k(n),), axis))
    x, out = P.buf(dt, n * lanes), P.buf(dt, n * lanes)

    def at(buf: UOp, idx: UOp) -> UOp:
        return UOp(Ops.SHRINK, (buf, idx, c(lanes))) if lanes > 1 else \
            UOp(Ops.INDEX, (buf, idx))
    mine = UOp(Ops.MUL, (t, k(lanes))) if lanes > 1 else t
    src = x
    if axis == "lidx0" and draw(st.booleans()):
        loc = UOp(Ops.BUFFER, (), ParamArg(0, dt, n * lanes, addrspace=AddrSpace.LOCAL))
        put = UOp(Ops.STORE, (at(loc, mine), UOp(Ops.LOAD, (at(x, mine),))))
        src = UOp(Ops.AFTER, (loc, UOp(Ops.BARRIER, (put,))))
    s = draw(st.integers(1, 6))
    if draw(st.booleans()):                     # g = (n - 1 - s - t) + s... reversed
        part, cst = UOp(Ops.SUB, (k(n - 1 - s), t)), s
    else:                                       # g = (t + s) - s
        part, cst = UOp(Ops.ADD, (t, k(s))), -s
    if lanes > 1:
        part = UOp(Ops.MUL, (part, k(lanes)))
    idx = UOp(Ops.ADD, (part, k(cst * lanes)))
    if lanes == 1 and draw(st.booleans()):
        gate = UOp(Ops.CMPLT, (t, k(draw(st.integers(0, n)))))
        v = UOp(Ops.LOAD, (at(src, idx), cast(0, dt), gate))
    else:
        v = UOp(Ops.LOAD, (at(src, idx),))
    body = UOp(Ops.STORE, (at(out, mine), v))
    return P.sink(UOp(Ops.END, (body, t)) if axis == "range" else body, name)
