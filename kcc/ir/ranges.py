"""Value-range analysis of integer (and bool) values: the interval every lane can take.

`int_ranges(roots)` walks the graph once (iteratively) and gives every integer, weakint or bool
value node an interval `(lo, hi)` of Python ints, or `None` when nothing is known (an
unbounded weakint). A strong dtype bounds its node: when the exact interval of an op's result
leaves the dtype's range, the op wraps, so the range is the whole dtype.

Sources of ranges: CONST; RANGE is [0, bound-1]; SPECIAL is [0, bound-1]; a scalar int PARAM
has its ParamArg.vmin_vmax, else its dtype's range; a LOAD has its dtype's range. A vector's
range holds all its lanes; one lane read from it (INDEX(v, c)) has lane c's own range where v
is built lane-wise (`_lane_range`).
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.dtype import DType
from kcc.ir.ops import Ops
from kcc.ir.uop import UNKNOWN, UOp, _set_range, _toposort, toposort

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable

Range = tuple[int, int] | None


def _clamp(r: Range, dt: DType) -> Range:
    """An exact interval seen through dtype dt: itself if it fits; wrapped, if every value of
    it wraps by the same multiple of 2**bits (a constant literal cast to a narrower type,
    `CAST(65540) int16` = 4, as tinygrad-style producers may write one); else dt's range."""
    if dt.is_weak:
        return r
    full = (int(dt.min()), int(dt.max()))
    if r is None:
        return full
    if r[0] < full[0] or r[1] > full[1]:
        if not dt.is_int:
            return full
        span = 1 << dt.bits
        k = (r[0] - full[0]) // span
        if (r[1] - full[0]) // span != k:
            return full
        return (r[0] - k * span, r[1] - k * span)
    return r


def _hull(*vals: int) -> tuple[int, int]:
    return (min(vals), max(vals))


def _tdiv(a: int, b: int) -> int:
    """C division: truncate toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _add(a: tuple[int, int], b: tuple[int, int]) -> Range:
    return (a[0] + b[0], a[1] + b[1])


def _sub(a: tuple[int, int], b: tuple[int, int]) -> Range:
    return (a[0] - b[1], a[1] - b[0])


def _mul(a: tuple[int, int], b: tuple[int, int]) -> Range:
    return _hull(a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])


def _cdiv(a: tuple[int, int], b: tuple[int, int]) -> Range:
    if b[0] <= 0 <= b[1]:
        # a divisor range holding 0: |a / b| <= |a| for every nonzero b
        m = max(abs(a[0]), abs(a[1]))
        return (-m, m)
    return _hull(*(_tdiv(x, y) for x in a for y in b))


def _cmod(a: tuple[int, int], b: tuple[int, int]) -> Range:
    m = max(abs(b[0]), abs(b[1])) - 1
    if m < 0:
        return (0, 0)
    lo = 0 if a[0] >= 0 else -min(m, abs(a[0]))
    hi = 0 if a[1] <= 0 else min(m, a[1])
    return (lo, hi)


def _max(a: tuple[int, int], b: tuple[int, int]) -> Range:
    return (max(a[0], b[0]), max(a[1], b[1]))


def _and(a: tuple[int, int], b: tuple[int, int]) -> Range:
    if a[0] >= 0 and b[0] >= 0:
        return (0, min(a[1], b[1]))
    if a[0] >= 0:
        return (0, a[1])
    if b[0] >= 0:
        return (0, b[1])
    return None


def _or_xor(a: tuple[int, int], b: tuple[int, int]) -> Range:
    if a[0] >= 0 and b[0] >= 0:
        return (0, (1 << max(a[1], b[1]).bit_length()) - 1)
    return None


def _shl(a: tuple[int, int], b: tuple[int, int]) -> Range:
    if b[0] < 0 or b[1] > 64:
        return None
    return _hull(a[0] << b[0], a[0] << b[1], a[1] << b[0], a[1] << b[1])


def _shr(a: tuple[int, int], b: tuple[int, int]) -> Range:
    if b[0] < 0 or b[1] > 64 or a[0] < 0:
        return None
    return (a[0] >> b[1], a[1] >> b[0])


_BINARY: dict[Ops, Callable[[tuple[int, int], tuple[int, int]], Range]] = {
    Ops.ADD: _add, Ops.SUB: _sub, Ops.MUL: _mul, Ops.CDIV: _cdiv, Ops.CMOD: _cmod,
    Ops.MAX: _max, Ops.AND: _and, Ops.OR: _or_xor, Ops.XOR: _or_xor, Ops.SHL: _shl,
    Ops.SHR: _shr,
}


def _compare(op: Ops, a: Range, b: Range) -> Range:
    """A compare's (0, 1), or the one value it has when the intervals decide it."""
    if a is None or b is None:
        return (0, 1)
    if op is Ops.CMPLT:
        if a[1] < b[0]:
            return (1, 1)
        return (0, 0) if a[0] >= b[1] else (0, 1)
    if a[1] < b[0] or b[1] < a[0]:             # disjoint: never equal
        return (1, 1) if op is Ops.CMPNE else (0, 0)
    if a[0] == a[1] == b[0] == b[1]:
        return (0, 0) if op is Ops.CMPNE else (1, 1)
    return (0, 1)


def _node_range(u: UOp, rng: dict[UOp, Range]) -> Range:
    """The range of u from the ranges of its srcs (exact interval, before the dtype clamp)."""
    op, dt = u.op, u.dtype
    s = [rng.get(x) for x in u.src]
    if op is Ops.CONST:
        return (int(u.arg), int(u.arg)) if not isinstance(u.arg, float) else None
    if op in (Ops.RANGE, Ops.SPECIAL):
        if s[0] is None:
            return None
        return (0, max(0, s[0][1] - 1))
    if op is Ops.PARAM:
        vr = u.arg.vmin_vmax
        return (int(vr[0]), int(vr[1])) if vr is not None else None
    if op is Ops.CAST:
        src_dt = u.src[0].dtype
        if dt.is_bool:
            return (0, 1)
        if src_dt.is_int or src_dt.is_bool:
            return s[0]
        return None
    if op in (Ops.AFTER,):
        return s[0]
    if op is Ops.INDEX and u.kind == "value":
        return _lane_range(u, rng) if u.src[0].op in _LANEWISE else s[0]
    if op is Ops.STACK:
        if any(r is None for r in s):
            return None
        return _hull(*(v for r in s for v in r))
    if op is Ops.WHERE:
        if s[0] == (1, 1) or s[0] == (0, 0):
            return s[1] if s[0][0] else s[2]
        if s[1] is None or s[2] is None:
            return None
        hull = _hull(s[1][0], s[1][1], s[2][0], s[2][1])
        if u.shape:
            return hull
        # a select knows its condition, the hull does not (a clamp `x < 8 ? 0 : x - 8`):
        # exact where it is a function of a few loop indices (kcc/ir/range_enum.py)
        from kcc.ir.range_enum import exact_range
        return exact_range(u) or hull
    if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
        return _compare(op, s[0], s[1])
    if op in (Ops.AND, Ops.OR) and dt.is_bool and s[0] is not None and s[1] is not None:
        return _max(s[0], s[1]) if op is Ops.OR else (min(s[0][0], s[1][0]),
                                                     min(s[0][1], s[1][1]))
    if op is Ops.NEG:
        return None if s[0] is None else (-s[0][1], -s[0][0])
    if op is Ops.MULACC:
        if any(r is None for r in s):
            return None
        m = _mul(s[0], s[1])
        return None if m is None else _add(m, s[2])
    if op is Ops.MULHI:     # floor(a·b / 2^bits): monotone in the exact product
        if s[0] is None or s[1] is None:
            return None
        m = _mul(s[0], s[1])
        return None if m is None or dt.is_weak else (m[0] >> dt.bits, m[1] >> dt.bits)
    fn = _BINARY.get(op)
    if fn is not None and s[0] is not None and s[1] is not None:
        return fn(s[0], s[1])
    return None


# ops whose lane j is the op of their srcs' lanes j (docs/semantics.md: ALU ops and WHERE
# lane by lane, CAST lane-wise; BITCAST may regroup lanes and is not one of them)
_LANEWISE = frozenset({*_BINARY, Ops.NEG, Ops.MULACC, Ops.MULHI, Ops.CMPLT, Ops.CMPNE,
                       Ops.CMPEQ, Ops.WHERE, Ops.CAST, Ops.STACK})
_LANE_WALK = 64     # the srcs _lane_range enters per lane read, at most


def _lane_range(u: UOp, rng: dict[UOp, Range]) -> Range:
    """The range of u = INDEX(v, c), lane c of an integer vector v built lane-wise: lane c of
    each lane-wise node from its srcs' lanes c, down to the STACKs whose lane c is a scalar
    (whose range rng holds). The hull of v's lanes is wider: a widened loop's indices
    `STACK(i, i, i, i) + STACK(7, 8, 9, 10)` read one lane each, INDEX(…, 1) a SHRINK start
    in 8..44 of 48 elements where the hull 7..46 would reach past the end. A vector node of
    another op (a LOAD) answers its hull, which holds every lane."""
    vec = u.src[0]
    c = const_int(u.src[1])
    if c is None or not 0 <= c < vec.shape[0]:
        return rng.get(vec)
    shape = vec.shape

    def lanewise(x: UOp) -> bool:
        return x.shape == shape and x.op in _LANEWISE and x.dtype is not None and (
            x.dtype.is_int or x.dtype.is_bool) and (
            x.op is Ops.STACK or all(s.shape in (shape, ()) for s in x.src))

    if not lanewise(vec):
        return rng.get(vec)
    budget = [_LANE_WALK]

    def enter(x: UOp) -> bool:
        # (a bounded walk per lane read: past the budget a vector answers its hull, a wider
        # range still true of every lane, so the widened loops' many lane reads stay linear)
        budget[0] -= 1
        return budget[0] >= 0 and lanewise(x)

    view = _LaneView(rng)
    for x in toposort([vec], enter):
        if x.op is Ops.STACK:
            view.lanes[x] = rng.get(x.src[c])
            continue
        r = _range_of(x, view)      # type: ignore[arg-type]
        view.lanes[x] = None if r is _NOT_INT else r
    return view.lanes[vec]


class _LaneView:
    """The ranges _lane_range reads: lane c's of the vectors it walked (`lanes`), else rng's
    (a scalar's range, or the hull of a vector not built lane-wise)."""

    def __init__(self, rng: dict[UOp, Range]):
        self.rng = rng
        self.lanes: dict[UOp, Range] = {}

    def get(self, x: UOp) -> Range:
        lanes = self.lanes
        return lanes[x] if x in lanes else self.rng.get(x)


def int_ranges(roots: list[UOp]) -> dict[UOp, Range]:
    """The range of every integer, weakint or bool value node reachable from roots."""
    rng: dict[UOp, Range] = {}
    for u in toposort(roots):
        # a node's range is a function of its subgraph: kept on the node (UOp._range), so the
        # passes and the selector that ask again about a mostly unchanged graph read it
        r = u._range
        if r is UNKNOWN:
            r = _range_of(u, rng)
            _set_range(u, r)
        if r is not _NOT_INT:
            rng[u] = r
    return rng


_NOT_INT: Any = object()    # UOp._range of a node int_ranges gives no entry


class _Kept:
    """int_ranges' dict of ranges read from the nodes' memos (`_range_of` asks it for srcs
    whose memo is set: a src without an entry is one whose range is None)."""

    @staticmethod
    def get(u: UOp) -> Range:
        r = u._range
        return None if r is _NOT_INT else r


_KEPT = _Kept()


def _unranged(u: UOp) -> bool:
    return u._range is UNKNOWN


def ranges_of(roots: list[UOp]) -> list[Range]:
    """int_ranges(roots)'s entries of the roots themselves (None for a root without one) --
    its ranges kept on the nodes too -- in one walk that enters only the nodes whose range is
    not kept yet (the frontend's bound check asks the indices of a graph, most of whose
    nodes, its float arithmetic, no index reads)."""
    for u in _toposort(roots, _unranged):
        if u._range is UNKNOWN:                   # (a root is entered, kept or not)
            _set_range(u, _range_of(u, _KEPT))    # type: ignore[arg-type]
    return [_KEPT.get(u) for u in roots]


def _range_of(u: UOp, rng: dict[UOp, Range]) -> Range:
    """u's entry in int_ranges (rng holds its srcs'), or _NOT_INT."""
    if u.kind != "value" or u.dtype is None:
        return _NOT_INT
    dt = u.dtype
    if not (dt.is_int or dt.is_bool):
        return _NOT_INT
    r = _node_range(u, rng)
    if dt.is_bool:
        r = (0, 1) if r is None else (max(0, r[0]), min(1, r[1]))
    return _clamp(r, dt)


def vmin_vmax(u: UOp) -> Range:
    """The range of one integer value node (analysing the graph under it; a node asked before
    answers from its memo without walking its graph again: simplify's known_gate asks each
    gate in every run)."""
    r = u._range
    if r is not UNKNOWN:
        return None if r is _NOT_INT else r
    return int_ranges([u]).get(u)


def never_negative(u: UOp) -> bool:
    """Whether the integer value u is known never to be negative (its range from vmin_vmax)."""
    r = vmin_vmax(u)
    return r is not None and r[0] >= 0


def fits(r: Range, dt: DType) -> bool:
    """Whether every value of range r is representable in dtype dt."""
    return r is not None and int(dt.min()) <= r[0] and r[1] <= int(dt.max())
