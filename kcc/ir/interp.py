"""The reference interpreter: runs any valid UOp graph on numpy, bit-exact with docs/semantics.md.

    from kcc.ir.interp import run
    out, x = run(sink, [np.zeros(16, np.float32), np.arange(16, dtype=np.float32)])

Execution model (docs/semantics.md, "Execution order"):
- Effects run depth first from the SINK, srcs in order; a node is evaluated once per iteration
  of the innermost RANGE it depends on (UOP_FORMAT.md: a node is inside the loop of every RANGE
  it depends on unless an END of that range lies on the way). END runs its loops. A node is
  evaluated on demand, so an effect outside a loop that only the loop's body reaches (an
  accumulator's initial STORE ordered by an AFTER in the body) runs in its iteration 0; a loop
  with bound <= 0 runs such effects itself (_outside), as it runs no iteration.
- All hardware threads (SPECIAL gidx/lidx) run in lockstep, each a lane of a numpy axis, so a
  BARRIER holds by construction and a WMMA sees its whole warp (kcc/ir/wmma.py); LOCAL buffers
  have one copy per workgroup (gidx), REG buffers one copy per thread.
- Speed: a RANGE loop runs all its iterations at once as another lane axis when no iteration
  can observe another. That is checked while it runs, on every access to a buffer the kernel
  stores to (shared memory: no element touched by two iterations when one of them writes; REG
  buffers: privatized per iteration, no iteration reads an element it did not write first when
  another iteration writes it). An access is by every iteration when it runs in the loop's
  body: its node lies inside a loop entered at or below the vectorized one (which includes
  nodes inside an inner loop that an END in the body reruns, whether or not they use the outer
  RANGE). Any other access runs once: it belongs to iteration 0 (a once-store to a REG buffer
  reaches every private copy but counts as iteration 0's write; a once-load reads iteration 0's
  copy). When the check fails the kernel is rerun from a snapshot of its buffers with that loop
  sequential, so results are always those of the sequential program.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from kcc.ir import numerics as nm
from kcc.ir import wmma
from kcc.ir.consts import const_int
from kcc.ir.dtype import DType, dtypes, promote
from kcc.ir.interp_plan import _CACHE, InterpError, _Kernel, _analyse
from kcc.ir.ops import ALU, COMPARE, Ops
from kcc.ir.uop import AddrSpace, ParamArg, UOp


class _Conflict(Exception):
    """A vectorized loop whose iterations interfere: rerun with these loops sequential."""

    def __init__(self, ranges: set[UOp]):
        super().__init__("loop iterations interfere")
        self.ranges = ranges


# -- memory ----------------------------------------------------------------------------------

@dataclass
class _Storage:
    """A buffer's elements. GLOBAL: the flat argument array. LOCAL/REG: axes dims (one copy
    per workgroup / per thread and per vectorized iteration) followed by the elements."""

    node: UOp
    space: AddrSpace
    dtype: DType
    size: int
    data: np.ndarray
    writable: bool = True

    def what(self) -> str:
        a: ParamArg = self.node.arg
        kind = "PARAM" if self.node.op is Ops.PARAM else f"{a.addrspace.value} BUFFER"
        return f"{kind} slot {a.slot} ({a.dtype}, {self.size} elements)"


@dataclass
class _Place:
    """Where a value lives: a storage, its element indices, and how many elements."""

    st: _Storage
    idx: np.ndarray
    n: int            # 0: one element; n: a vector of n elements (SHRINK)


@dataclass
class _Tracker:
    """The interference check of one vectorized loop while it runs."""

    r: UOp
    ax: int
    n: int
    depth: int                                                # position in the loop stack
    bad: bool = False                                         # a conflict seen on the way
    w: dict[int, np.ndarray] = field(default_factory=dict)    # REG: written by this lane
    ur: dict[int, np.ndarray] = field(default_factory=dict)   # REG: read before own write
    log: dict[int, list] = field(default_factory=dict)        # shared: (pos, lanes, write, uniq)


# -- the executor ----------------------------------------------------------------------------

class _Exec:
    def __init__(self, k: _Kernel, stores: dict[UOp, _Storage], scalars: dict[UOp, np.ndarray]):
        self.k = k
        self.ones = (1,) * k.nax
        self.memo: dict[UOp, Any] = {}
        self.memo_at: dict[UOp | None, list[UOp]] = {}
        self.rval: dict[UOp, np.ndarray] = {}
        self.st = dict(stores)
        self.scalars = scalars
        self.trackers: list[_Tracker] = []
        self.depth: dict[UOp, int] = {}         # running loops -> nesting depth (outer: 0)
        sizes = [1] * k.nax
        self.special_size: dict[UOp, int] = {}
        for n, a in k.axis.items():
            if n.op is Ops.SPECIAL:
                sizes[a] = self.special_size[n] = self._launch_dim(n)
        for b in k.buffers:
            arg: ParamArg = b.arg
            shp = [s if (arg.addrspace is AddrSpace.REG or self._is_gidx(i)) else 1
                   for i, s in enumerate(sizes)]
            data = np.zeros(tuple(shp) + (arg.size,), arg.dtype.np)
            if nm.UNSPECIFIED["variant"] and arg.addrspace is not AddrSpace.GLOBAL:
                # storage before its first store is unspecified: the other choice, 0xA5 bytes
                data.view(np.uint8)[...] = 0x01 if arg.dtype.np == np.bool_ else 0xA5
            self.st[b] = _Storage(b, arg.addrspace, arg.dtype, arg.size, data)

    def _launch_dim(self, special: UOp) -> int:
        """A SPECIAL's bound: a constant, or an expression of scalar arguments (this launch's)."""
        b = const_int(special.src[0])
        if b is None:
            b = int(np.asarray(self.get(special.src[0])).reshape(-1)[0])
        if b < 0:
            raise InterpError(f"SPECIAL {special.arg} has bound {b} for these arguments")
        return b

    def _is_gidx(self, ax: int) -> bool:
        return any(n.op is Ops.SPECIAL and n.arg.startswith("gidx") and a == ax
                   for n, a in self.k.axis.items())

    # -- evaluation ---------------------------------------------------------------------------
    def get(self, n: UOp) -> Any:
        """The value of n in the current iteration (running effects and loops it needs)."""
        memo = self.memo
        if n in memo:
            return memo[n]
        stack = [n]
        pre, void, rval = self.k.pre, self.k.void, self.rval
        while stack:
            x = stack[-1]
            if x in memo:
                stack.pop()
                continue
            if x in void and (x.op is Ops.END or any(r not in rval for r in self.k.rdeps[x])):
                self._run_effect(x)
                stack.pop()
                continue
            pending = [s for s in pre[x] if s not in memo]
            if pending:
                stack.extend(reversed(pending))
                continue
            self._set(x, self._compute(x))
            stack.pop()
        return memo[n]

    def _unbound(self, x: UOp) -> list[UOp]:
        return [r for r in reversed(self.k.rdeps[x]) if r not in self.rval]

    def _set(self, x: UOp, v: Any) -> None:
        self.memo[x] = v
        inner = None
        for r in self.k.rdeps[x]:
            if r in self.rval:
                inner = r
                break
        lst = self.memo_at.get(inner)
        if lst is None:
            self.memo_at[inner] = [x]
        else:
            lst.append(x)

    def _clear(self, r: UOp) -> None:
        for x in self.memo_at.pop(r, []):
            self.memo.pop(x, None)

    def _run_effect(self, x: UOp) -> None:
        """An effect whose loops are not running yet: END's ranges and any unbound range."""
        loops = self._unbound(x)
        body: Callable[[], Any] = lambda: self.get(x)
        root = x
        if x.op is Ops.END:
            closed = list(dict.fromkeys(x.src[1:]))
            running = [r for r in closed if r in self.rval]
            if running:
                raise InterpError(f"END closes RANGE {running[0].arg} inside its own loop")
            loops = sorted(set(loops) | set(closed), key=self.k.rank.__getitem__)
            body, root = (lambda: self.get(x.src[0])), x.src[0]
        self._loops(loops, body, root)
        self._set(x, None)

    def _loops(self, rs: list[UOp], fn: Callable[[], Any], root: UOp) -> None:
        if not rs:
            fn()
            return
        self._run_loop(rs[0], lambda: self._loops(rs[1:], fn, root), root)

    def _outside(self, root: UOp) -> None:
        """The body at root of a loop that runs no iteration: run the effects it reaches that lie
        outside the loop (every RANGE they depend on is running), in graph order. They run once
        per iteration of the enclosing loops whether or not this one runs (docs/semantics.md,
        "Placement"): e.g. an accumulator's initial STORE that only an AFTER in the body orders,
        which a non-empty loop runs on demand in its iteration 0."""
        seen: set[UOp] = set()
        stack, todo = [root], []
        while stack:
            x = stack.pop()
            if x in seen or x in self.memo:
                continue
            seen.add(x)
            if x in self.k.void and not self._unbound(x):
                todo.append(x)
            stack.extend(x.src)
        for x in sorted(todo, key=self.k.pos.__getitem__):
            self.get(x)

    def _run_loop(self, r: UOp, fn: Callable[[], Any], root: UOp) -> None:
        bound_v = np.asarray(self.get(r.src[0]))
        if bound_v.size != 1:
            varying = {n for n, a in self.k.axis.items() if bound_v.shape[a] > 1}
            loops = {n for n in varying if n.op is Ops.RANGE}
            if loops and len(loops) == len(varying):
                raise _Conflict(loops)
            raise InterpError(f"RANGE {r.arg}: its bound differs between threads")
        bound = int(bound_v.reshape(()))
        for s in r.src[1:]:
            self.get(s)
        dt = r.dtype.np
        ax = self.k.axis.get(r)
        self.depth[r] = len(self.depth)
        try:
            if bound <= 0:
                self._outside(root)      # zero iterations: the body's effects outside the loop
                return
            if ax is None or bound == 1 or r in self.k.seq:
                for it in range(bound):
                    self._clear(r)
                    self.rval[r] = np.full(self.ones, it, dt)
                    fn()
                return
            self._clear(r)
            shp = list(self.ones)
            shp[ax] = bound
            self.rval[r] = np.arange(bound, dtype=dt).reshape(shp)
            t = self._enter(r, ax, bound)
            try:
                fn()
            except InterpError:
                self._check(t)       # an error after interference is not the program's
                raise
            self._check(t)
            self._leave(t)
        finally:
            self.rval.pop(r, None)
            self.depth.pop(r, None)
            self._clear(r)

    # -- vectorized loops ---------------------------------------------------------------------
    def _regs(self) -> list[_Storage]:
        return [s for s in self.st.values() if s.space is AddrSpace.REG]

    def _enter(self, r: UOp, ax: int, n: int) -> _Tracker:
        t = _Tracker(r, ax, n, self.depth[r])
        for s in self._regs():
            s.data = np.repeat(s.data, n, axis=ax)
            for o in self.trackers:
                if id(s) in o.w:
                    o.w[id(s)] = np.repeat(o.w[id(s)], n, axis=ax)
                    o.ur[id(s)] = np.repeat(o.ur[id(s)], n, axis=ax)
            if s.node in self.k.written:
                t.w[id(s)] = np.zeros(s.data.shape, bool)
                t.ur[id(s)] = np.zeros(s.data.shape, bool)
        self.trackers.append(t)
        return t

    def _check(self, t: _Tracker) -> None:
        if t.bad:
            raise _Conflict({t.r})
        for key, w in t.w.items():
            others = w.sum(axis=t.ax, keepdims=True) - w
            if (t.ur[key] & (others > 0)).any():
                raise _Conflict({t.r})
        for entries in t.log.values():
            if _shared_conflict(entries):
                raise _Conflict({t.r})

    def _leave(self, t: _Tracker) -> None:
        self.trackers.pop()
        ax = t.ax
        for s in self._regs():
            w = t.w.get(id(s))
            if w is not None and w.any():
                last = t.n - 1 - np.argmax(np.flip(w, axis=ax), axis=ax)
                sel = np.where(w.any(axis=ax), last, 0)
                s.data = np.ascontiguousarray(
                    np.take_along_axis(s.data, np.expand_dims(sel, ax), axis=ax))
            else:
                s.data = np.ascontiguousarray(np.take(s.data, [0], axis=ax))
            for o in self.trackers:
                if id(s) in o.w:
                    o.w[id(s)] = o.w[id(s)].any(axis=ax, keepdims=True)
                    o.ur[id(s)] = o.ur[id(s)].any(axis=ax, keepdims=True)

    # -- memory access ------------------------------------------------------------------------
    def _access(self, node: UOp, p: _Place, *others: np.ndarray,
                gate: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, tuple]:
        """Flat positions of an access, its gate (bool, same shape), and the lane shape F.
        A vector access's gate is one for all its elements, or a bool vector of its lanes
        (a LOAD's per-lane gate: lane j gates element j alone)."""
        nax, st = self.k.nax, p.st
        lane_gate = gate is not None and p.n > 0 and gate.ndim > nax
        shapes = [p.idx.shape] + [o.shape[:nax] for o in others]
        if gate is not None:
            shapes.append(gate.shape[:nax] if lane_gate else gate.shape)
        if st.space is not AddrSpace.GLOBAL:
            shapes.append(st.data.shape[:nax])
        F = np.broadcast_shapes(*shapes)
        idx = np.broadcast_to(p.idx.astype(np.int64, copy=False), F)
        width = max(p.n, 1)
        if lane_gate:
            # every element checked alone: a masked-off element may lie outside the buffer
            g = np.broadcast_to(gate, F + (p.n,))
            idx = idx[..., None] + np.arange(p.n, dtype=np.int64)
            bad = g & ((idx < 0) | (idx >= st.size))
        else:
            g = np.ones(F, bool) if gate is None else np.broadcast_to(gate, F)
            bad = g & ((idx < 0) | (idx > st.size - width))
        if bad.any():
            at = np.argwhere(bad)[0]
            lanes = {n.arg if n.op is Ops.SPECIAL else f"RANGE{n.arg}": int(at[a])
                     for n, a in self.k.axis.items() if F[a] > 1}
            raise InterpError(f"{node.op.name} out of bounds: element {int(idx[tuple(at)])}"
                              f"{f' (+{width})' if p.n and not lane_gate else ''} of "
                              f"{st.what()}{f' at {lanes}' if lanes else ''}")
        pos = np.where(g, idx, 0)
        if st.space is not AddrSpace.GLOBAL:
            stride = st.size
            for a in range(nax - 1, -1, -1):
                d = st.data.shape[a]
                if d > 1:
                    shp = [1] * pos.ndim
                    shp[a] = d
                    pos = pos + np.arange(d, dtype=np.int64).reshape(shp) * stride
                stride *= d
        if p.n and not lane_gate:
            pos = pos[..., None] + np.arange(p.n, dtype=np.int64)
            g = np.broadcast_to(g[..., None], pos.shape)
        return pos, g, F

    def _inside(self, node: UOp, t: _Tracker) -> bool:
        """Whether node runs once per iteration of t's loop (it lies inside a loop entered at or
        below it) rather than once for all of them."""
        depth = self.depth
        return any(depth.get(r, -1) >= t.depth for r in self.k.rdeps[node])

    def _track(self, node: UOp, st: _Storage, pos: np.ndarray, g: np.ndarray, F: tuple,
               write: bool, uniq: bool) -> None:
        if st.node not in self.k.written:
            return
        for t in self.trackers:
            inside = self._inside(node, t)
            if st.space is AddrSpace.REG:
                w = t.w[id(st)].reshape(-1)
                if inside:
                    P = pos[g]
                    if write:
                        w[P] = True
                    else:
                        un = ~w[P]
                        t.ur[id(st)].reshape(-1)[P[un]] = True
                elif write:
                    # iteration 0's store reached every private copy: an iteration that
                    # already wrote here lost its value; others see it as a carried value
                    first = np.take(pos, [0], axis=t.ax)[np.take(g, [0], axis=t.ax)]
                    later = np.delete(pos, 0, axis=t.ax)[np.delete(g, 0, axis=t.ax)]
                    if w[later].any():
                        t.bad = True
                    w[first] = True
                continue     # a once-load reads iteration 0's copy: what iteration 0 sees
            P = pos[g]
            if not inside:
                lanes = np.zeros(P.shape, np.int64)      # iteration 0 alone
            elif F[t.ax] > 1:
                shp = [1] * len(pos.shape)
                shp[t.ax] = F[t.ax]
                lanes = np.broadcast_to(np.arange(F[t.ax]).reshape(shp), pos.shape)[g]
            else:
                lanes = np.full(P.shape, -1)
            t.log.setdefault(id(st), []).append((P, lanes, write, uniq))

    def _scalar_pos(self, p: _Place, gate: np.ndarray | None, *others: np.ndarray) -> int | None:
        """Fast path for one element accessed by every lane alike: its flat position, or None
        when the general path is needed (lanes, vectors, a false gate, out of bounds)."""
        st = p.st
        if (p.n or self.trackers or p.idx.size != 1 or st.data.size != st.size
                or (gate is not None and (gate.size != 1 or not gate.reshape(-1)[0]))
                or any(o.size != 1 for o in others)):
            return None
        i = int(p.idx.reshape(-1)[0])
        return i if 0 <= i < st.size else None

    def _load(self, node: UOp, p: _Place, alt: np.ndarray | None,
              gate: np.ndarray | None) -> np.ndarray:
        i = self._scalar_pos(p, gate)
        if i is not None:
            return p.st.data.reshape(-1)[i:i + 1].reshape(self.ones).copy()
        pos, g, F = self._access(node, p, gate=gate)
        vals = p.st.data.reshape(-1)[pos]
        if self.trackers:
            self._track(node, p.st, pos, g, F, False, False)
            if p.st.space is AddrSpace.REG:
                for t in self.trackers:
                    if not self._inside(node, t):       # a once-load: iteration 0's copy
                        vals, g = np.take(vals, [0], axis=t.ax), np.take(g, [0], axis=t.ax)
        if gate is not None:
            vals = np.where(g, vals, alt)
        return vals

    def _store(self, node: UOp, p: _Place, val: np.ndarray, gate: np.ndarray | None) -> None:
        st = p.st
        if not st.writable:
            raise InterpError(f"STORE into {st.what()}, but its array is read-only")
        i = self._scalar_pos(p, gate, val)
        if i is not None:
            st.data.reshape(-1)[i] = val.reshape(-1)[0]
            return
        pos, g, F = self._access(node, p, val, gate=gate)
        val = np.broadcast_to(val, pos.shape)
        P, V = pos[g], val[g]
        uniq = P.size < 2 or bool((P[1:] > P[:-1]).all())
        if not uniq:
            # several lanes write one element: the last in iteration order wins
            _, first_rev = np.unique(P[::-1], return_index=True)
            keep = P.size - 1 - first_rev
            uniq = keep.size == P.size
            P, V = P[keep], V[keep]
        st.data.reshape(-1)[P] = V
        if self.trackers:
            self._track(node, st, pos, g, F, True, uniq)

    # -- one node -----------------------------------------------------------------------------
    def _compute(self, x: UOp) -> Any:
        op, m = x.op, self.memo
        if op is Ops.CONST:
            return nm.const_array(x.arg, x.dtype).reshape(self.ones)
        if op is Ops.PARAM:
            return self.st[x] if x.arg.is_buffer else self.scalars[x]
        if op is Ops.BUFFER:
            return self.st[x]
        if op is Ops.RANGE:
            if x not in self.rval:
                raise InterpError(f"RANGE {x.arg} is used outside its loop")
            return self.rval[x]
        if op is Ops.SPECIAL:
            shp = list(self.ones)
            shp[self.k.axis[x]] = self.special_size[x]
            return np.arange(self.special_size[x], dtype=x.dtype.np).reshape(shp)
        if op is Ops.AFTER:
            return m[x.src[0]]
        if op in (Ops.STORE, Ops.GROUP, Ops.SINK, Ops.BARRIER):
            if op is Ops.STORE:
                val = self._conv(m[x.src[1]], x.src[1].dtype, x.src[0].dtype)
                self._store(x, m[x.src[0]], val, m[x.src[2]] if len(x.src) == 3 else None)
            return None
        if op is Ops.INDEX:
            base = m[x.src[0]]
            if isinstance(base, _Storage):
                return _Place(base, np.asarray(m[x.src[1]]), 0)
            return base[..., const_int(x.src[1])]
        if op is Ops.SHRINK:
            return _Place(m[x.src[0]], np.asarray(m[x.src[1]]), x.shape[0])
        if op is Ops.LOAD:
            p: _Place = m[x.src[0]]
            if len(x.src) == 3:
                alt = self._conv(m[x.src[1]], x.src[1].dtype, p.st.dtype)
                return self._load(x, p, alt, m[x.src[2]])
            return self._load(x, p, None, None)
        if op is Ops.STACK:
            lanes = [self._conv(m[s], s.dtype, x.dtype) for s in x.src]
            return np.stack(np.broadcast_arrays(*lanes), axis=-1)
        if op is Ops.CAST:
            return nm.cast(m[x.src[0]], x.src[0].dtype, x.arg)
        if op is Ops.BITCAST:
            return nm.bitcast(m[x.src[0]], x.src[0].dtype, x.arg)
        if op in ALU:
            return self._alu(x)
        if op is Ops.WMMA:
            return self._wmma(x)
        raise InterpError(f"the interpreter cannot run {op.name}")

    def _wmma(self, x: UOp) -> np.ndarray:
        """One WMMA per warp of the workgroup's lanes (kcc/ir/wmma.py, docs/semantics.md)."""
        lidx = {n.arg: (a, self.special_size[n]) for n, a in self.k.axis.items()
                if n.op is Ops.SPECIAL and n.arg.startswith("lidx")}   # one per name
        try:
            return wmma.on_lane_axes(wmma.shape_of(x), *(self.memo[s] for s in x.src),
                                     [lidx[name] for name in sorted(lidx)])
        except ValueError as e:
            raise InterpError(str(e)) from None

    def _conv(self, v: Any, src: DType, dst: DType) -> np.ndarray:
        return v if src == dst else nm.cast(v, src, dst)

    def _alu(self, x: UOp) -> np.ndarray:
        m, op, srcs = self.memo, x.op, x.src
        if op in COMPARE:
            dt = promote(srcs[0].dtype, srcs[1].dtype)
        elif op is Ops.THREEFRY:
            dt = dtypes.uint64
        else:
            dt = x.dtype
        if op in (Ops.SHL, Ops.SHR):
            args = [m[srcs[0]], m[srcs[1]]]
        elif op is Ops.WHERE:
            args = [m[srcs[0]]] + [self._conv(m[s], s.dtype, dt) for s in srcs[1:]]
        else:
            args = [self._conv(m[s], s.dtype, dt) for s in srcs]
        return nm.alu(op, dt, *args)

    def run(self) -> None:
        self.get(self.k.sink)


def _shared_conflict(entries: list) -> bool:
    """Whether some element of a shared buffer was written by one iteration and touched by
    another (lane -1: every iteration, through a value the same in all of them)."""
    if len(entries) == 1 and entries[0][2] and entries[0][3]:
        lanes = entries[0][1]
        return bool(lanes.size) and bool((lanes == -1).any())
    P = np.concatenate([e[0] for e in entries])
    L = np.concatenate([e[1] for e in entries])
    W = np.concatenate([np.full(e[0].shape, e[2]) for e in entries])
    if not W.any():
        return False
    if (W & (L == -1)).any():
        return True
    o = np.lexsort((L, P))
    P, L, W = P[o], L[o], W[o]
    newk = np.concatenate([[True], P[1:] != P[:-1]])
    gid = np.cumsum(newk) - 1
    ng = int(gid[-1]) + 1
    haswrite = np.bincount(gid, weights=W, minlength=ng) > 0
    chg = (~newk[1:]) & (L[1:] != L[:-1])
    multi = np.bincount(gid[1:][chg], minlength=ng) > 0
    return bool((haswrite & multi).any())


# -- arguments and the entry point -----------------------------------------------------------

def _bind(k: _Kernel, args: list) -> tuple[dict, dict, list]:
    if len(args) != len(k.params):
        raise InterpError(f"kernel {k.sink.arg.name} takes {len(k.params)} arguments "
                          f"(slots 0..{len(k.params) - 1}), got {len(args)}")
    stores: dict[UOp, _Storage] = {}
    scalars: dict[UOp, np.ndarray] = {}
    copy_back: list[tuple[np.ndarray, np.ndarray]] = []
    ones = (1,) * k.nax
    for slot, a in enumerate(args):
        node = k.params[slot]
        pa: ParamArg = node.arg
        if pa.is_buffer:
            if not isinstance(a, np.ndarray):
                raise InterpError(f"argument {slot} is a {pa.dtype} buffer of {pa.size} "
                                  f"elements; got {type(a).__name__}")
            want = pa.dtype.np
            if a.dtype != want:
                carrier = (" (bfloat16 travels as uint16 bits)"
                           if pa.dtype.name == "bfloat16" else "")
                raise InterpError(f"argument {slot}: dtype {a.dtype}, expected {want}{carrier}")
            if a.size != pa.size:
                raise InterpError(f"argument {slot}: {a.size} elements, expected {pa.size}")
            flat = a.reshape(-1) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1)
            if not a.flags.c_contiguous:
                copy_back.append((a, flat))
            stores[node] = _Storage(node, AddrSpace.GLOBAL, pa.dtype, pa.size, flat,
                                    bool(a.flags.writeable))
        else:
            scalars[node] = _scalar(slot, a, pa.dtype).reshape(ones)
    return stores, scalars, copy_back


def _scalar(slot: int, a: Any, dt: DType) -> np.ndarray:
    """A scalar argument as a 0-d carrier array of dt, refusing values that do not fit."""
    if isinstance(a, np.ndarray) and a.shape == () or isinstance(a, np.generic):
        a = np.asarray(a).item()
    if isinstance(a, bool) or dt.is_bool:
        if not isinstance(a, (bool, int)) or a not in (0, 1):
            raise InterpError(f"argument {slot} is a bool scalar; got {a!r}")
        return np.array(bool(a))
    if dt.is_int:
        if not isinstance(a, int) or not dt.min() <= a <= dt.max():
            raise InterpError(f"argument {slot} is a {dt} scalar; got {a!r}")
        return np.array(a, dt.np)
    if not isinstance(a, (int, float)):
        raise InterpError(f"argument {slot} is a {dt} scalar; got {a!r}")
    return nm.from_f64(np.array(float(a)), dt)


def run(sink: UOp, args: list) -> list:
    """Run the kernel `sink` on args (in slot order) and return them, buffers updated in place.

    Buffers are numpy arrays of the PARAM's dtype (bfloat16 as uint16 bit patterns) with the
    PARAM's element count, any shape; scalar PARAMs take Python or numpy numbers (a float for a
    bfloat16 scalar). Raises InterpError (bad arguments, an access out of bounds under a true
    gate) or IRError (an ill-typed graph).
    """
    k = _CACHE.get(sink)
    if k is None:
        k = _analyse(sink)
        _CACHE[sink] = k
    stores, scalars, copy_back = _bind(k, list(args))
    snap = {n: s.data.copy() for n, s in stores.items() if n in k.written}
    with np.errstate(all="ignore"):
        for _ in range(len(k.rank) + 1):
            try:
                _Exec(k, stores, scalars).run()
                break
            except _Conflict as c:
                k.seq |= c.ranges
                for n, d in snap.items():
                    stores[n].data[...] = d
        else:
            raise InterpError("internal: loops still interfere after running them in order")
    for orig, flat in copy_back:
        orig[...] = flat.reshape(orig.shape)
    return list(args)
