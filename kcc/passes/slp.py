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

A second kind of seed is a run of ungated scalar STOREs to consecutive elements of one buffer
(tinygrad's upcast REG accumulators: `acc[j] = acc[j] + …` for each lane j): cut into groups of
the widest lane count the kernel's vectors have, a group whose values pack becomes one STORE of
a SHRINK place, unless one store of the group feeds another's value (merging would be a cycle).

Anything else stays a STACK of its lanes. A scalar that was packed and still has other users
is read back as INDEX(vector, lane), so no lane is computed twice. Each packed node computes
exactly its lanes' values with the same op in the same dtype, so the result is bit-identical to
the scalar graph (IR ops are lane-wise: docs/semantics.md).
"""

from __future__ import annotations

from kcc.ir.ops import ALU, COMPARE, Ops
from kcc.ir.uop import UOp, toposort
from kcc.ir.consts import const_int, is_const
from kcc.passes.simplify import keep_params
from kcc.passes.target import TargetDesc

_PACKABLE = frozenset(ALU | {Ops.CAST, Ops.BITCAST})
_EFFECT_LISTS = frozenset({Ops.GROUP, Ops.AFTER, Ops.SINK})
Lanes = tuple[UOp, ...]


def _offset(idx: UOp) -> tuple[UOp | None, int] | None:
    """idx as (base, k) with idx = base + k (base None for a constant index)."""
    c = const_int(idx)
    if c is not None:
        return None, c
    if idx.op is Ops.ADD:
        k = _offset(idx.src[1])
        if k is not None and k[0] is None:
            return idx.src[0], k[1]
    return idx, 0


class _Packer:
    """Packs lane tuples into vector values; remembers which scalar became which lane."""

    def __init__(self, ctx: TargetDesc) -> None:
        self.ctx = ctx
        self.memo: dict[Lanes, UOp | None] = {}
        self.lane_of: dict[UOp, tuple[UOp, int]] = {}

    def _leaf(self, t: Lanes) -> tuple[UOp | None, bool]:
        """(vector, good) for a tuple that needs no recursion; (None, False) if it needs one."""
        s0 = t[0]
        if all(s.op is Ops.INDEX and s.src[0].kind == "value" and const_int(s.src[1]) is not None
               for s in t):
            v = s0.src[0]
            if v.shape == (len(t),) and all(s.src[0] is v and const_int(s.src[1]) == j
                                            for j, s in enumerate(t)):
                return v, True
            # lanes of one vector are a shuffle; of several (a transpose), at most n inserts
            return UOp(Ops.STACK, t), True
        if all(s is s0 for s in t) or all(is_const(s) for s in t):
            return UOp(Ops.STACK, t), True
        return None, False

    def _load(self, t: Lanes) -> UOp | None:
        """n ungated LOADs of consecutive elements of one buffer → one vector LOAD."""
        if not all(s.op is Ops.LOAD and len(s.src) == 1 and s.src[0].op is Ops.INDEX
                   for s in t):
            return None
        buf = t[0].src[0].src[0]
        if buf.kind != "buffer" or not self.ctx.mem_legal(len(t), t[0].dtype):
            return None
        offs = [_offset(s.src[0].src[1]) for s in t]
        if any(s.src[0].src[0] is not buf for s in t) or any(o is None for o in offs):
            return None
        base, k0 = offs[0]
        if any(o != (base, k0 + j) for j, o in enumerate(offs)):
            return None
        start = t[0].src[0].src[1]
        return UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, start, UOp.const(len(t)))),))

    def _op_ok(self, t: Lanes) -> bool:
        """Whether the lanes are n isomorphic scalar ALU nodes the target has at n lanes."""
        s0 = t[0]
        if s0.op not in _PACKABLE or s0.shape != () or s0.kind != "value":
            return False
        if not all(s.op is s0.op and s.arg == s0.arg and s.dtype == s0.dtype
                   and len(s.src) == len(s0.src) and s.shape == () for s in t):
            return False
        if any(x.shape != () or x.kind != "value" for s in t for x in s.src):
            return False
        n = len(t)
        if s0.op in (Ops.CAST, Ops.BITCAST):
            return self.ctx.cast_legal(s0.op, s0.src[0].dtype, s0.dtype, n)
        dt = s0.src[0].dtype if s0.op in COMPARE else s0.dtype
        return self.ctx.alu_legal(n, dt, s0.op)

    def pack(self, root: Lanes) -> UOp | None:
        """The vector whose lane j is root[j], or None when it would not pay (iterative)."""
        work = [root]
        while work:
            t = work[-1]
            if t in self.memo:
                work.pop()
                continue
            v, _ = self._leaf(t)
            if v is None:
                v = self._load(t)
            if v is not None or not self._op_ok(t):
                self.memo[t] = v
                work.pop()
                continue
            subs = [tuple(s.src[i] for s in t) for i in range(len(t[0].src))]
            todo = [s for s in subs if s not in self.memo and self._leaf(s)[0] is None]
            if todo:
                work.extend(todo)
                continue
            work.pop()
            self.memo[t] = self._build(t, subs)
        return self.memo[root]

    def _build(self, t: Lanes, subs: list[Lanes]) -> UOp | None:
        """The vector op over the packed src tuples (all resolved), or None if none packs."""
        srcs, good = [], False
        for s in subs:
            v, ok = self._leaf(s)
            if v is None:
                v = self.memo[s]
                ok = v is not None
            good |= ok
            srcs.append(v if v is not None else UOp(Ops.STACK, s))
        if not good:
            return None
        vec = t[0].replace(src=tuple(srcs))
        for j, s in enumerate(t):
            self.lane_of.setdefault(s, (vec, j))
        return vec


def _claim_loads(p: _Packer) -> None:
    """Record the lanes of every packed vector LOAD (memo entries that are LOADs)."""
    for t, v in p.memo.items():
        if v is not None and v.op is Ops.LOAD and all(s.op is Ops.LOAD for s in t):
            for j, s in enumerate(t):
                p.lane_of.setdefault(s, (v, j))


def _rebuild(sink: UOp, redirect: dict[UOp, UOp]) -> UOp:
    """sink with every node in redirect replaced (transitively) by its target, rebuilt."""
    memo: dict[UOp, UOp] = {}
    stack: list[tuple[UOp, bool]] = [(sink, False)]
    while stack:
        n, ready = stack.pop()
        if n in memo:
            continue
        r = redirect.get(n)
        if r is not None:
            if r in memo:
                memo[n] = memo[r]
            else:
                stack.extend(((n, True), (r, False)))
            continue
        if not ready:
            stack.append((n, True))
            stack.extend((s, False) for s in n.src if s not in memo)
            continue
        new = tuple(memo[s] for s in n.src)
        if n.op in _EFFECT_LISTS:            # merged STOREs: one src where there were several
            new = tuple(dict.fromkeys(new))
        memo[n] = n if new == n.src else n.replace(src=new)
    return memo[sink]


def _store_runs(order: list[UOp], lanes: int) -> list[tuple[UOp, ...]]:
    """Groups of `lanes` ungated scalar STOREs to consecutive elements of one buffer (each run
    of consecutive offsets cut into aligned groups from its start)."""
    by_base: dict[tuple[UOp, UOp | None], dict[int, UOp]] = {}
    for u in order:
        if u.op is not Ops.STORE or len(u.src) != 2 or u.src[0].op is not Ops.INDEX:
            continue
        if u.src[1].shape != () or u.src[0].src[0].kind != "buffer":
            continue
        off = _offset(u.src[0].src[1])
        if off is not None:
            by_base.setdefault((u.src[0].src[0], off[0]), {}).setdefault(off[1], u)
    groups = []
    for offs in by_base.values():
        for k in sorted(offs):
            if k - 1 in offs:
                continue
            run = []
            while k in offs:
                run.append(offs[k])
                k += 1
            groups += [tuple(run[i:i + lanes]) for i in range(0, len(run) - lanes + 1, lanes)]
    return groups


def _independent(group: tuple[UOp, ...]) -> bool:
    """No store of the group is reached from another's value (merging them would be a cycle)."""
    members = set(group)
    return not any(u in members for u in toposort([s.src[1] for s in group]))


def _pack_stores(p: _Packer, order: list[UOp], redirect: dict[UOp, UOp]) -> None:
    """Consecutive scalar STOREs whose values pack become one vector STORE."""
    widest = max((u.src[0].shape[0] for u in order if u.op is Ops.INDEX and u.src[0].kind == "value"
                  and u.src[0].shape), default=0)
    if widest < 2:
        return
    for group in _store_runs(order, widest):
        dt = group[0].src[1].dtype
        if not p.ctx.mem_legal(len(group), dt) or not _independent(group):
            continue
        v = p.pack(tuple(s.src[1] for s in group))
        if v is None:
            continue
        place = group[0].src[0]
        st = UOp(Ops.STORE, (UOp(Ops.SHRINK, (place.src[0], place.src[1],
                                              UOp.const(len(group)))), v))
        for s in group:
            redirect[s] = st


def slp(sink: UOp, target: TargetDesc) -> UOp:
    """Re-pack per-lane scalar work into vector ops (see the module docstring)."""
    p = _Packer(target)
    redirect: dict[UOp, UOp] = {}
    order = toposort([sink])
    for u in order:
        if u.op is not Ops.STACK or u.kind != "value" or len(u.shape) != 1:
            continue
        if any(s.shape != () for s in u.src):
            continue
        v = p.pack(u.src)
        if v is not None and v is not u:
            redirect[u] = v
    _pack_stores(p, order, redirect)
    if not redirect:
        return sink
    _claim_loads(p)
    for s, (vec, j) in p.lane_of.items():
        redirect.setdefault(s, UOp(Ops.INDEX, (vec, UOp.const(j))))
    return keep_params(sink, _rebuild(sink, redirect))
