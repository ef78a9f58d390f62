"""Exact value ranges of small index expressions, by evaluating them at every loop index.

Interval arithmetic (kcc.ir.ranges) loses what a select knows: tinygrad's interpolate clamps an
index as `x < 8 ? 0 : 16*r - 8` and then `224 < y ? 224 : y`, whose hulls are [-8, 232], so
`(y + 31) >> 5 < 8` (always true: y is in [0, 224]) stays a gate of every load, and the loads'
starts seem to pass the buffer's end. clang proves these gates true by its range analysis and
loads unmasked; kcc asks this module at a WHERE: when the select depends only on loop indices
(RANGE, SPECIAL) of few trips and on constants, its values at every combination of them give
its exact range. The walk and the evaluation are bounded (MAX_NODES, MAX_WORK), so a large
subgraph or many trips costs nothing more than the walk's first MAX_NODES nodes.

Values follow docs/semantics.md: integers wrap to their dtype, SHR is arithmetic on signed
dtypes, bools are 0 and 1. What the semantics leave unspecified (a shift amount outside
[0, bits), a division by zero, INT_MIN / -1) gives up (None), as does any other op.
"""

from __future__ import annotations

from itertools import product

from kcc.ir.consts import _wrap, const_value
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.ir.dtype import DType

MAX_NODES = 40          # nodes of the subgraph (constants and loop indices included)
MAX_WORK = 4096         # evaluated nodes times combinations of loop indices

_LEAVES = (Ops.RANGE, Ops.SPECIAL)
_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MULACC, Ops.NEG, Ops.SHL, Ops.SHR, Ops.AND,
                  Ops.OR, Ops.XOR, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.WHERE,
                  Ops.CAST, Ops.CDIV, Ops.CMOD})


def _int_like(u: UOp) -> bool:
    dt = u.dtype
    return u.kind == "value" and dt is not None and u.shape == () and (dt.is_int or dt.is_bool)


def _subgraph(root: UOp) -> tuple[list[UOp], list[UOp], dict[UOp, int]] | None:
    """(nodes in topological order, the loop-index leaves, constants' values) under root, or
    None when it holds anything else or more than MAX_NODES nodes."""
    order: list[UOp] = []
    leaves: list[UOp] = []
    consts: dict[UOp, int] = {}
    seen: set[UOp] = {root}
    stack: list[tuple[UOp, bool]] = [(root, False)]
    while stack:
        u, expanded = stack.pop()
        if expanded:
            order.append(u)
            continue
        if len(seen) > MAX_NODES or not _int_like(u):
            return None
        cv = const_value(u)
        if cv is not None:
            consts[u] = int(cv[0])
            continue
        if u.op in _LEAVES:
            n = const_value(u.src[0])
            if n is None or int(n[0]) < 1:
                return None
            leaves.append(u)
            continue
        if u.op not in _OPS:
            return None
        stack.append((u, True))
        for s in u.src:
            if s not in seen:
                seen.add(s)
                stack.append((s, False))
    return order, leaves, consts


def exact_range(root: UOp) -> tuple[int, int] | None:
    """The exact (min, max) of scalar integer or bool node root over every combination of the
    loop indices it depends on, or None (too large, or not a function of loop indices)."""
    sub = _subgraph(root)
    if sub is None:
        return None
    order, leaves, consts = sub
    trips = [int(const_value(v.src[0])[0]) for v in leaves]   # type: ignore[index]
    combos = 1
    for t in trips:
        combos *= t
    if combos * max(1, len(order)) > MAX_WORK:
        return None
    vals: dict[UOp, list[int]] = {c: [v] * combos for c, v in consts.items()}
    cols = list(zip(*product(*(range(t) for t in trips)))) if leaves else []
    for v, col in zip(leaves, cols):
        vals[v] = list(col)
    for u in order:
        got = _eval(u, [vals[s] for s in u.src], u.dtype)
        if got is None:
            return None
        vals[u] = got
    out = vals[root]
    return (min(out), max(out)) if out else None


def _fit(r: list[int], dt: DType) -> list[int]:
    """r wrapped to dt (a bool stays 0/1; only values outside dt's range are wrapped)."""
    if dt.is_bool or not r:
        return r
    lo, hi = _limits(dt)
    if lo <= min(r) and max(r) <= hi:
        return r
    return [_wrap(x, dt) for x in r]


def _limits(dt: DType) -> tuple[int, int]:
    """dt's range (weakint: 64 bits, signed, as consts._wrap wraps it)."""
    if dt.is_weak:
        return -(1 << 63), (1 << 63) - 1
    return int(dt.min()), int(dt.max())


def _eval(u: UOp, a: list[list[int]], dt: DType) -> list[int] | None:
    """u's values from its srcs' (one list per src, one value per combination)."""
    op = u.op
    if op is Ops.CAST:
        if not (u.src[0].dtype.is_int or u.src[0].dtype.is_bool):
            return None
        return [int(x != 0) for x in a[0]] if dt.is_bool else _fit(a[0], dt)
    if op is Ops.WHERE:
        return [y if c else z for c, y, z in zip(*a)]
    if op is Ops.CMPLT:
        return [int(x < y) for x, y in zip(*a)]
    if op is Ops.CMPNE:
        return [int(x != y) for x, y in zip(*a)]
    if op is Ops.CMPEQ:
        return [int(x == y) for x, y in zip(*a)]
    if op is Ops.NEG:
        return _fit([-x for x in a[0]], dt)
    if op is Ops.MULACC:
        return _fit([x * y + z for x, y, z in zip(*a)], dt)
    if op in (Ops.SHL, Ops.SHR):
        bits = 64 if dt.is_weak else dt.bits
        if dt.is_bool or any(not 0 <= s < bits for s in a[1]):
            return None
        if op is Ops.SHL:
            return _fit([x << s for x, s in zip(*a)], dt)
        return [x >> s for x, s in zip(*a)]     # in range: arithmetic for a negative x
    if op in (Ops.CDIV, Ops.CMOD):
        lo = _limits(dt)[0] if dt.is_signed else None
        if any(y == 0 or (x == lo and y == -1) for x, y in zip(*a)):
            return None
        q = [abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1) for x, y in zip(*a)]
        if op is Ops.CDIV:
            return q
        return [x - d * y for x, y, d in zip(a[0], a[1], q)]
    fn = _BINARY.get(op)
    if fn is None:
        return None
    return _fit([fn(x, y) for x, y in zip(*a)], dt)


_BINARY = {Ops.ADD: lambda x, y: x + y, Ops.SUB: lambda x, y: x - y,
           Ops.MUL: lambda x, y: x * y, Ops.MAX: max,
           Ops.AND: lambda x, y: x & y, Ops.OR: lambda x, y: x | y,
           Ops.XOR: lambda x, y: x ^ y}
