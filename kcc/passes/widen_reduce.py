"""Widen integer and bool reductions across iterations: k iterations of a scalar reduce loop
run as one iteration of k-lane vectors, each lane its own partial accumulator, the lanes
combined after the loop (the reduction case of kcc/passes/widen_lanes.py).

tinygrad's row reductions keep a one-element REG accumulator and add one term an iteration:

    acc[c] = e                                   # before the loop (the initial store)
    for j in range(N):
        acc[c] = acc[c] OP x(j)                  # x: what widen_lanes.py widens
    ... = acc[c]                                 # after the loop

With OP associative and commutative on the dtype, the loop is rewritten as

    v[0:k] = (id, id, … id)                      # a fresh k-element REG buffer, id OP's identity
    for j2 in range(N // k):
        v[0:k] = v[0:k] OP x(k*j2 + [0, 1, … k-1])
    for j3 in range(N % k):                      # the tail: the original body
        acc[c] = acc[c] OP x(k*(N // k) + j3)
    acc[c] = acc[c] OP v[0] OP v[1] … OP v[k-1]  # the lanes (halves first, then one by one)

Lane l of v accumulates the terms of iterations j ≡ l (mod k); every term is computed by the
same ops in the same dtype as before (widen_lanes.py's rewrite). Regrouping the terms is
exact for OP in ADD, MUL (integers and bools wrap modulo 2^bits: a ring), MAX, AND, OR and
XOR on integer and bool dtypes, whose identities are 0, 1, the dtype's minimum, all ones, 0
and 0 (docs/semantics.md). Float reductions are not regrouped (float ADD is not associative;
their rules are kcc/passes/unroll.py's).

**Legality**, besides widen_lanes.py's rules for every other node of the loop:
- an accumulator is a REG buffer element `acc[c]` (c a constant) read by one LOAD and
  written by one ungated STORE in the loop, through one AFTER(acc, deps…, counter), whose
  stored value is `OP(load, x)` or `OP(x, load)`; neither the LOAD nor the OP is read by any
  other node, and no x reads any accumulator's LOAD (the lanes' partial values are never
  observed);
- the vector accumulator and the lane-wise ops on it are legal at k lanes.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, const_value, strong_int
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, ParamArg, UOp, base_buffer, rebuild
from kcc.passes.simplify import make_const
from kcc.passes.target import TargetDesc
from kcc.passes.widen_lanes import LaneLoop, _legal
from kcc.passes.widen_tail import factors, split

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable

_REDUCE_OPS = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR})
_BOOL_OPS = frozenset({Ops.MAX, Ops.AND, Ops.OR, Ops.XOR})
# OPs whose last block may overlap the widened loop's (`ReduceLoop.overlap`); the masked ones
# see the repeated lanes as 0, the others absorb them
_OVERLAP_OPS = frozenset({Ops.ADD, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR})
_MASKED_OPS = frozenset({Ops.ADD, Ops.XOR})
# the integer lanes a bool accumulator's k lanes are kept in (0 or 1 each), in order of choice
_BOOL_LANES = (dtypes.uint32, dtypes.uint16, dtypes.uint8, dtypes.uint64)


def identity(op: Ops, dt: DType) -> UOp:
    """OP's identity element in integer or bool dtype dt, as a constant node."""
    if op in (Ops.ADD, Ops.OR, Ops.XOR):
        v: int | bool = 0
    elif op is Ops.MUL:
        v = 1
    elif op is Ops.MAX:
        v = dt.min()
    else:                                           # AND: every bit set
        v = True if dt.is_bool else (-1 if dt.is_signed else (1 << dt.bits) - 1)
    return make_const(v, dt)


class _Acc:
    """One accumulator of the loop: its AFTER, place, LOAD, STORE, OP and term x."""

    def __init__(self, after: UOp, place: UOp, load: UOp, store: UOp, x: UOp) -> None:
        self.after, self.place, self.load, self.store, self.x = after, place, load, store, x
        self.op = store.src[1].op
        self.dtype: DType = load.dtype
        self.buf = after.src[0]
        self.deps = tuple(s for s in after.src[1:])     # the counter last: checked in find
        self.vbuf: UOp | None = None
        self.lane_dt: DType = self.dtype        # a bool accumulator's: an unsigned integer


class ReduceLoop(LaneLoop):
    """An innermost scalar loop whose only effects on REG buffers are reductions (module
    docstring): widen_lanes.py's loop with the accumulators' accesses as vector hooks."""

    def __init__(self, r: UOp, end: UOp, region: list[UOp],
                 dep: dict[UOp, frozenset[UOp]], slot: int) -> None:
        super().__init__(r, end, region, dep)
        self.slot = slot
        self.accs: list[_Acc] = []
        self.k = 0
        self.desc: TargetDesc | None = None
        self.extra: list[UOp] = []              # vector nodes the hooks made, to legalize
        self.after_wide: UOp | None = None      # the overlapping last block's: the loop's END
        self.masked = 0                         # its lanes already added by the loop

    def find(self) -> bool:
        """Whether the loop's REG accesses are all accumulators; records them and skips them
        in widen_lanes.py's check."""
        users: dict[UOp, list[UOp]] = {}
        for n in self.region:
            for s in n.src:
                users.setdefault(s, []).append(n)
        r, inside = self.r, self.inside
        skip: set[UOp] = set()
        for n in self.region:
            if n.op is not Ops.AFTER:
                continue
            b = base_buffer(n.src[0])
            if n.src[0] is not b or b.op is not Ops.BUFFER \
                    or b.arg.addrspace is not AddrSpace.REG or n.src[-1] is not r \
                    or any(s in inside for s in n.src[1:-1]):
                return False
            idx = users.get(n, [])
            if len(idx) != 1 or idx[0].op is not Ops.INDEX or idx[0].src[0] is not n \
                    or const_int(idx[0].src[1]) is None:
                return False
            place = idx[0]
            acc = self._acc(n, place, users.get(place, []), users)
            if acc is None:
                return False
            self.accs.append(acc)
            skip.update((n, place, acc.load, acc.store))
        if not self.accs:
            return False
        loads = {a.load for a in self.accs}
        for a in self.accs:
            stack, seen = [a.x], set()
            while stack:                              # x reads no accumulator's LOAD
                y = stack.pop()
                if y in loads:
                    return False
                if y in inside and y not in seen:
                    seen.add(y)
                    stack.extend(y.src)
        self.skip = frozenset(skip)
        return True

    def _acc(self, after: UOp, place: UOp, acc_users: list[UOp],
             users: dict[UOp, list[UOp]]) -> _Acc | None:
        """The accumulator read and written at place, or None when it is not one."""
        loads = [u for u in acc_users if u.op is Ops.LOAD]
        stores = [u for u in acc_users if u.op is Ops.STORE]
        if len(loads) != 1 or len(stores) != 1 or len(acc_users) != 2:
            return None
        ld, st = loads[0], stores[0]
        if len(ld.src) != 1 or len(st.src) != 2 or st.src[0] is not place:
            return None
        upd = st.src[1]
        dt = ld.dtype
        if upd.op not in (_BOOL_OPS if dt is not None and dt.is_bool else _REDUCE_OPS) \
                or dt is None or dt.is_weak or not (dt.is_int or dt.is_bool) or upd.dtype != dt:
            return None
        if users.get(ld, []) != [upd] or users.get(upd, []) != [st]:
            return None
        x = upd.src[1] if upd.src[0] is ld else upd.src[0] if upd.src[1] is ld else None
        if x is None or x is ld:
            return None
        return _Acc(after, place, ld, st, x)

    @staticmethod
    def _int(a: _Acc, v: int) -> UOp:
        """Index v in the dtype of a's own index."""
        idx = a.place.src[1]
        return strong_int(v, idx.dtype) if idx.dtype is not None else UOp.const(v)

    def _vplace(self, a: _Acc, deps: tuple[UOp, ...]) -> UOp:
        """The k lanes of a's vector accumulator, ordered after deps."""
        assert a.vbuf is not None
        buf = UOp(Ops.AFTER, (a.vbuf,) + deps) if deps else a.vbuf
        return UOp(Ops.SHRINK, (buf, self._int(a, 0), UOp.const(self.k)))

    def seed(self, r2: UOp | None, k: int) -> dict[UOp, UOp]:
        """Each accumulator's LOAD at k lanes: a fresh REG buffer of k elements, its lanes
        set to OP's identity before the loop (ordered as the accumulator's own AFTER); for
        the overlapping last block (r2 None), the widened loop's lanes after its END."""
        out: dict[UOp, UOp] = {}
        if r2 is None:
            assert self.after_wide is not None
            for a in self.accs:
                out[a.load] = UOp(Ops.LOAD, (self._vplace(a, (self.after_wide,)),))
            return out
        self.k = k
        self.extra = []
        for i, a in enumerate(self.accs):
            a.lane_dt = self._lane_dtype(a, k)
            a.vbuf = UOp(Ops.BUFFER, (), ParamArg(self.slot + i, a.lane_dt, k,
                                                 addrspace=AddrSpace.REG))
            one = make_const(1 if a.op is Ops.AND else 0, a.lane_dt)
            ident = UOp(Ops.STACK, ((one if a.dtype.is_bool else identity(a.op, a.dtype)),) * k)
            self.extra.append(ident)
            init = UOp(Ops.STORE, (self._vplace(a, a.deps[:-1]), ident))
            out[a.load] = UOp(Ops.LOAD, (self._vplace(a, (init, r2)),))
        return out

    def vector_store(self, n: UOp, place: Callable[[UOp], UOp],
                     lanes: Callable[[UOp], UOp]) -> UOp:
        """An accumulator's STORE writes its k lanes back to its vector buffer."""
        for a in self.accs:
            if n is a.store:
                vload = lanes(a.load)
                x = lanes(a.x)
                if a.dtype.is_bool:             # 0/1 integer lanes (x86: a shifted mask)
                    x = self._bool_lanes(a, x)
                if self.masked and a.op in _MASKED_OPS:
                    # lanes the widened loop already added: OP's identity 0 (AND with 0)
                    ones = identity(Ops.AND, a.lane_dt)
                    zero = make_const(0, a.lane_dt)
                    mask = UOp(Ops.STACK, tuple(zero if j < self.masked else ones
                                                for j in range(self.k)))
                    x = UOp(Ops.AND, (x, mask))
                    self.extra += [mask, x]
                val = UOp(a.op, (vload, x))
                self.extra.append(val)
                return UOp(Ops.STORE, (vload.src[0], val))
        return super().vector_store(n, place, lanes)

    def _bool_lanes(self, a: _Acc, x: UOp) -> UOp:
        """A bool update's k lanes as a's integer lanes: 0/1 (CAST), or for OR and MAX all
        ones where true (WHERE(x, ~0, 0): a compare's own lane mask on x86, one instruction
        fewer a vector than 0/1 lanes) where the target has that WHERE. The lanes are read
        only through `lane != 0` (combine), and OR or MAX of {0, 1, ~0} is nonzero exactly
        when one of them is, so both give the same bools."""
        desc, k, dt = self.desc, self.k, a.lane_dt
        if a.op in (Ops.OR, Ops.MAX) and desc is not None and dt.is_int \
                and desc.alu_legal(k, dt, Ops.WHERE):
            ones = UOp(Ops.STACK, (identity(Ops.AND, dt),) * k)
            zero = UOp(Ops.STACK, (make_const(0, dt),) * k)
            out = UOp(Ops.WHERE, (x, ones, zero))
            self.extra += [ones, zero, out]
            return out
        out = UOp(Ops.CAST, (x,), dt)
        self.extra.append(out)
        return out

    def _lane_dtype(self, a: _Acc, k: int) -> DType:
        """The dtype of a's k vector lanes: its own, or for a bool the first of _BOOL_LANES
        the target has at k lanes (memory, the op and the CAST from bool)."""
        desc = self.desc
        if not a.dtype.is_bool or desc is None:
            return a.dtype
        for dt in _BOOL_LANES:
            if desc.mem_legal(k, dt) and desc.alu_legal(k, dt, a.op) \
                    and desc.cast_legal(Ops.CAST, dtypes.bool, dt, k):
                return dt
        return a.dtype

    def _demand(self) -> tuple[set[UOp], set[UOp]]:
        """widen_lanes.py's demand, less the accumulators' updates (vector_store makes
        them: a bool's in integer lanes)."""
        need_vec, need_scalar = super()._demand()
        for a in self.accs:
            need_vec.discard(a.store.src[1])
        return need_vec, need_scalar

    def combine(self, wide_end: UOp, last: UOp) -> list[UOp]:
        """Per accumulator, the STORE of acc[c] OP v[0] OP … OP v[k-1] after the last update
        of the lanes (wide_end: the widened loop's END or the overlapping block) and the last
        loop to update acc[c] (last: the tail's END, or wide_end)."""
        out = []
        for a in self.accs:
            assert a.vbuf is not None
            vb = UOp(Ops.AFTER, (a.vbuf, wide_end))
            vfin = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (vb, self._int(a, 0), UOp.const(self.k))),))
            abuf = UOp(Ops.AFTER, (a.buf,) + a.deps[:-1] + (last,))
            aplace = UOp(Ops.INDEX, (abuf, a.place.src[1]))
            # acc[c] still holds OP's identity when its only update is the lanes' (no tail)
            total = None if last is wide_end and self._identity_init(a) \
                else UOp(Ops.LOAD, (aplace,))
            zero = make_const(0, a.lane_dt)
            for lane in self._lanes(a, vfin):
                if a.dtype.is_bool:
                    lane = UOp(Ops.CMPNE, (lane, zero))
                total = lane if total is None else UOp(a.op, (total, lane))
            assert total is not None
            out.append(UOp(Ops.STORE, (aplace, total)))
        return out

    def _identity_init(self, a: _Acc) -> bool:
        """Whether acc[c] enters the loop holding OP's identity: its AFTER's one dep before
        the counter is an ungated STORE of that constant to acc[c] (tinygrad's initial store:
        argmax's MAX from the int32 minimum, bool_sum's ADD from 0). The combine then starts
        from the lanes, not from a LOAD of acc[c] OP the lanes (argmax r_333_77: a mov, cmp,
        cmovl and mov a row fewer)."""
        if len(a.deps) != 2:
            return False
        init = a.deps[0]
        if init.op is not Ops.STORE or len(init.src) != 2 or init.src[0].op is not Ops.INDEX \
                or base_buffer(init.src[0].src[0]) is not a.buf \
                or const_int(init.src[0].src[1]) != const_int(a.place.src[1]):
            return False
        v, ident = const_value(init.src[1]), const_value(identity(a.op, a.dtype))
        return v is not None and v == ident

    def _lanes(self, a: _Acc, v: UOp) -> list[UOp]:
        """Scalars whose OP is the OP of v's k lanes: v's halves combined while a half is a
        whole 128-bit block or more of 32/64-bit float or any integer lanes (lanes then only
        move whole blocks or in-block shuffles, kcc/isel/x86/shuf.py) and the target has OP
        on it, then v's lanes."""
        w, dt = self.k, a.lane_dt
        desc = self.desc
        while desc is not None and w > 1 and (dt.itemsize >= 4 or dt.is_int) \
                and w // 2 * dt.itemsize >= 16 and desc.alu_legal(w // 2, dt, a.op):
            h = w // 2
            lo = UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (v, UOp.const(j))) for j in range(h)))
            hi = UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (v, UOp.const(j))) for j in range(h, w)))
            v, w = UOp(a.op, (lo, hi)), h
        if desc is not None and w > 1 and (dt.itemsize >= 4 or dt.is_int) \
                and w * dt.itemsize == 16 and desc.alu_legal(w, dt, a.op):
            # one 128-bit block left: OP with itself rotated by w/2, w/4 … lanes (in-block
            # shuffles; 8- and 16-bit lanes: a byte shuffle), lane 0 then holds the OP of
            # all w (integer OPs are associative and commutative: any order is exact)
            s = w // 2
            while s:
                rot = UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (v, UOp.const((j + s) % w)))
                                          for j in range(w)))
                v, s = UOp(a.op, (v, rot)), s // 2
            return [UOp(Ops.INDEX, (v, UOp.const(0)))]
        return [UOp(Ops.INDEX, (v, UOp.const(j))) for j in range(w)]

    def tail(self, wide_end: UOp, start: UOp) -> UOp:
        """The END of the original body over iterations start … N-1 after the widened loop:
        it adds its terms to acc[c] before the lanes are (independent of the vector lanes,
        so the two dependency chains overlap)."""
        r = self.r
        n, dt = r.src[0], r.dtype
        c, s = const_int(n), const_int(start)
        count = strong_int(c - s, dt) if c is not None and s is not None else \
            UOp(Ops.SUB, (UOp(Ops.MAX, (n, make_const(0, dt))), start))
        r3 = UOp(Ops.RANGE, (count, wide_end), r.arg)
        repl: dict[UOp, UOp] = {r: UOp(Ops.ADD, (r3, start))}
        for a in self.accs:
            repl[a.after] = UOp(Ops.AFTER, (a.buf,) + a.deps[:-1] + (r3,))
        sub = rebuild(self.region, repl)
        body = self.end.src[0]
        return UOp(Ops.END, (sub.get(body, body), r3))

    def overlap(self, wide_end: UOp, k: int, desc: TargetDesc) -> UOp | None:
        """The last k iterations N-k … N-1 as one more k-lane block after the widened loop
        (wide_end), in place of a tail loop of N % k scalar iterations: its first
        k - N % k lanes repeat iterations the loop already added, which MAX, AND and OR
        absorb (x OP x = x) and which ADD and XOR take as 0 (their lanes ANDed with 0).
        None when the bound is symbolic or below k, an OP is MUL, or the loop stores
        anything but its accumulators (a store repeated would be a second effect)."""
        n = const_int(self.r.src[0])
        if n is None or n < k or any(a.op not in _OVERLAP_OPS for a in self.accs) \
                or any(x.op is Ops.STORE and all(x is not a.store for a in self.accs)
                       for x in self.region):
            return None
        self.after_wide, self.masked = wide_end, k - n % k
        extra = list(self.extra)
        body = self.rewrite(k, desc, counter=strong_int(n - k, self.r.dtype))
        self.after_wide, self.masked = None, 0
        if body is None or not all(_legal(v, k, desc) for v in self.extra):
            self.extra = extra
            return None
        return body

    def widen(self, n_iter: int | None, desc: TargetDesc) -> UOp | None:
        """The reduction's replacement for its END (module docstring), or None."""
        self.desc = desc
        for k in factors(n_iter):
            if not self.independent(k):
                continue
            out = self.rewrite(k, desc)
            if out is None or any(a.dtype.is_bool and a.lane_dt.is_bool for a in self.accs) \
                    or not all(_legal(v, k, desc) for v in self.extra):
                continue
            start = split(self.r, k)[1]
            ov = None if start is None else self.overlap(out, k, desc)
            if start is None:
                stores = self.combine(out, out)
            elif ov is not None:                # the last block updates the lanes last
                stores = self.combine(ov, ov)
            else:
                stores = self.combine(out, self.tail(out, start))
            return stores[0] if len(stores) == 1 else UOp(Ops.GROUP, tuple(stores))
        return None
