"""Reroll a loop whose body is c copies of one scalar computation on c adjacent elements, so
that kcc/passes/widen_lanes.py can widen it.

tinygrad upcasts an elementwise loop by a factor c that is no vector width (3 for a loop of
25641 = 8547·3 elements): each iteration computes and stores c elements c apart from the
previous iteration's, lane o (0 ≤ o < c) the same ops as lane 0 on elements o further on:

    for i in range(N):
        for o in range(c):              # written out c times in the body
            STORE(INDEX(out, c*i + base + o), f(LOAD(INDEX(a, c*i + base_a + o)), …))

widen_lanes.py refuses it (its places are c apart, not one). When the c copies are the same
graph up to that shift, the loop is the same as one over N*c elements:

    for t in range(N*c):
        STORE(INDEX(out, t + base), f(LOAD(INDEX(a, t + base_a)), …))

element t = c*i + o being lane o of iteration i. The new index is `t + f(0)`, f(0) lane 0's
index expression with the counter replaced by 0: index arithmetic is exact modulo 2^bits
(ADD, SUB, MUL, SHL, MULACC: a ring), so `c*i + f(0) + o ≡ t + f(0)`.

**Computed places and the row.** tinygrad's gather E_333_5 reads, for each of its c = 5
elements, `x[77*i + idx[5*i + o]]` gated by `0 <= idx[5*i + o] < 77`: a place whose index is
not `c*i + base + o` (a *computed* place) and the counter itself. Both are allowed: element
t = c*i + o's row i is `t // c`, computed in the rerolled loop as `SHR(MUL(t, m), s)` with
m = ceil(2^s / c) — exact for 0 <= t < T when (T-1)·(m·c - 2^s) < 2^s (the error term
t·(m·c - 2^s) / (c·2^s) stays below 1/c, and t/c's fraction is at most (c-1)/c), and chosen
only when (T-1)·m fits the dtype below its sign bit (c a power of two: a shift). A computed
place's index is then lane o's own value graph with i replaced by the row (its loads shifted
copies as any other value), and a MULACC whose product reads the counter becomes `a*b + c`
(equal for integers, which wrap; a vector MULACC of int lanes does not exist), so
widen_gather.py reads the load as an index-vector gather. Lane o's graph must still equal
lane 0's with i the same row in both, so every lane computes iteration i's value for its
element.

**Legality** (the loop is left alone otherwise):
- the body is stores and their value graphs only; every node that depends on the counter is
  an INDEX place, a LOAD (gated or not), a lane-wise op over such values, the counter (as the
  row), a STORE or a GROUP;
- every store's place and every place not computed has the index `c*i + base + o`
  (widen_lanes.LaneLoop.affine) with one c > 1 for all;
- there are c stores, to one buffer with one base, at offsets b … b+c-1; lane o is the store
  at b+o, and its value graph equals lane 0's with every place's offset shifted by o and
  every loop-invariant operand the same node;
- no buffer that the loop stores is loaded in it: the c lanes of one iteration then run in
  any order, and so do iterations (each element is stored once, from loads of unstored
  buffers), so running them one element at a time in element order gives the same stores.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, base_buffer, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc
from kcc.passes.widen_lanes import LaneLoop, _LANEWISE

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class _Refuse(Exception):
    """The loop is not c shifted copies of one computation."""


def _walk(lp: LaneLoop, v: UOp, c: int = 0) -> list[UOp]:
    """The nodes below v that depend on the counter, sources first, without entering an
    affine INDEX place's index (that is _place's) or a loop-invariant node (a computed
    place's index is entered when c > 0: its nodes are values of the lane); no recursion."""
    out: list[UOp] = []
    seen: set[UOp] = set()
    stack: list[tuple[UOp, bool]] = [(v, False)]
    while stack:
        x, ready = stack.pop()
        if ready:
            out.append(x)
            continue
        if x in seen or lp.free(x):
            continue
        seen.add(x)
        stack.append((x, True))
        srcs = x.src[:1] if x.op is Ops.INDEX and not _computed(lp, c, x) else x.src
        stack.extend((s, False) for s in reversed(srcs))
    return out


def _sig(lp: LaneLoop, c: int, v: UOp, o: int, ids: dict[tuple, int],
         rows: bool = False) -> Any:
    """A hashable form of value v of lane o, its places' offsets taken relative to o (so
    that two lanes whose graphs are shifted copies have equal forms). A value that reaches
    the counter other than through a place is refused, unless rows (the store reroll's
    computed places, module docstring): the counter is then the row `("ROW",)`, a computed
    place's index a value, and a gated load's alt and gate part of its form.

    Each node's form is interned in ids (shared by the lanes compared): a flat tuple of its
    srcs' ids, itself an int, so forms compare in O(1). (Nested tuples compared by value
    took time exponential in the depth of a shared graph: MUL(x, x) chains, a fuzzed kernel
    whose compile never ended.)"""
    memo: dict[UOp, Any] = {}

    def part(s: UOp) -> Any:
        if lp.free(s):
            return s
        if s not in memo:
            raise _Refuse
        return memo[s]

    def intern(form: tuple) -> int:
        return ids.setdefault(form, len(ids))
    for n in _walk(lp, v, c if rows else 0):
        if n.op is Ops.LOAD:
            if len(n.src) not in ((1, 3) if rows else (1,)) or n.src[0].op is not Ops.INDEX:
                raise _Refuse
            p = n.src[0]
            at = ("AT", p.src[0], part(p.src[1])) if rows and _computed(lp, c, p) \
                else _place(lp, c, p, o)
            memo[n] = intern(("LOAD", n.dtype, at) + tuple(part(s) for s in n.src[1:]))
        elif n.op is Ops.INDEX:
            continue
        elif n is lp.r and rows:
            memo[n] = intern(("ROW",))      # r = t // c in every lane (module docstring)
        elif n.op in _LANEWISE and not n.shape and n.kind == "value" and n is not lp.r:
            memo[n] = intern((n.op, n.dtype, n.arg, tuple(part(s) for s in n.src)))
        else:
            raise _Refuse
    return v if lp.free(v) else memo[v]


def _computed(lp: LaneLoop, c: int, p: UOp) -> bool:
    """Whether INDEX place p's index is not `c*i + base + o` (a gather's `77*i + LOAD(…)`):
    its index is then compared and rewritten as a value (module docstring)."""
    if c == 0 or p.src[0] in lp.inside or lp.free(p.src[1]):
        return False
    a = lp.affine(p.src[1])
    return a is None or a[0].get(lp.r) != c


def _row(t: UOp, c: int, n: int) -> UOp | None:
    """t // c for 0 <= t < n as a multiply and a shift in t's dtype, exact over that range and
    never past its sign bit, or None when no such pair exists (module docstring)."""
    bits = t.dtype.bits - 1
    if c & (c - 1) == 0:
        return UOp(Ops.SHR, (t, strong_int(c.bit_length() - 1, t.dtype)))
    for s in range(1, bits):
        m = -(-(1 << s) // c)               # ceil(2^s / c)
        e = m * c - (1 << s)
        if (n - 1) * e < (1 << s) and (n - 1) * m < (1 << bits):
            return UOp(Ops.SHR, (UOp(Ops.MUL, (t, strong_int(m, t.dtype))),
                                 strong_int(s, t.dtype)))
    return None


def _place(lp: LaneLoop, c: int, p: UOp, o: int) -> tuple:
    """(buffer, base terms, offset - o) of INDEX place p of lane o."""
    a = lp.affine(p.src[1])
    if a is None or a[0].get(lp.r) != c or p.src[0] in lp.inside:
        raise _Refuse
    base = frozenset((t, k) for t, k in a[0].items() if t is not lp.r)
    return p.src[0], base, a[1] - o


def _zeroed(n: UOp, r: UOp, memo: dict[UOp, UOp]) -> UOp:
    """Index expression n with the counter r replaced by 0 (same ops, same dtypes)."""
    stack = [n]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        todo = [s for s in x.src if s not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[x] = strong_int(0, r.dtype) if x is r else \
            x.replace(src=tuple(memo[s] for s in x.src)) if x.src else x
    return memo[n]


def widen_rerolled(lp: LaneLoop, desc: TargetDesc) -> UOp | None:
    """The loop's END rerolled and then widened by widen_lanes (with its tail), or None when
    either step refuses (a rerolled loop left scalar gains nothing)."""
    e2 = reroll(lp)
    if e2 is None:
        return None
    t = e2.src[1]
    dep = range_sets(toposort([e2]))
    region = [n for n in toposort([e2.src[0]]) if t in dep[n]]
    lanes = LaneLoop(t, e2, region, dep)
    return lanes.widen(const_int(t.src[0]), desc) if lanes.check() else None


def reroll(lp: LaneLoop) -> UOp | None:
    """The loop's END rerolled to one lane over N*c iterations (module docstring), or None."""
    r = lp.r
    n_iter = const_int(r.src[0])
    body = lp.end.src[0]
    stores = [s for s in (body.src if body.op is Ops.GROUP else (body,))]
    if n_iter is None or not stores or any(s.op is not Ops.STORE or len(s.src) != 2
                                           or s.src[0].op is not Ops.INDEX for s in stores):
        return None
    for n in lp.region:
        if n is not r and n.op not in (Ops.INDEX, Ops.LOAD, Ops.STORE, Ops.GROUP) \
                and (n.op not in _LANEWISE or n.shape):
            return None
        if n.op is Ops.GROUP and n is not body:
            return None
    c = len(stores)
    if c < 2:
        return None
    try:
        places = [_place(lp, c, s.src[0], 0) for s in stores]
        buf, base = places[0][0], places[0][1]
        b = min(p[2] for p in places)
        if any(p[0] is not buf or p[1] != base for p in places) \
                or sorted(p[2] for p in places) != list(range(b, b + c)):
            return None
        lanes = sorted(zip((p[2] - b for p in places), stores), key=lambda x: x[0])
        ids: dict[tuple, int] = {}
        sigs = [_sig(lp, c, s.src[1], o, ids, rows=True) for o, s in lanes]
        if any(x != sigs[0] for x in sigs[1:]):
            return None
        stored = {base_buffer(buf)}
        if any(base_buffer(n.src[0].src[0]) in stored for n in lp.region
               if n.op is Ops.LOAD):
            return None
    except _Refuse:
        return None
    dt = r.dtype
    t = UOp(Ops.RANGE, (strong_int(n_iter * c, dt),) + r.src[1:], r.arg)
    zero: dict[UOp, UOp] = {}
    new: dict[UOp, UOp] = {}
    st = lanes[0][1]
    order = _walk(lp, st, c)
    if r in order:
        row = _row(t, c, n_iter * c)
        if row is None:
            return None
        new[r] = row
    for x in order:
        if x is r:
            continue
        if x.op is Ops.INDEX and not _computed(lp, c, x):
            new[x] = x.replace(src=(x.src[0], UOp(Ops.ADD, (t, _zeroed(x.src[1], r, zero)))))
        elif x.op is Ops.MULACC and x.dtype.is_int and not (lp.free(x.src[0])
                                                             and lp.free(x.src[1])):
            # a*b + c (wrapping, as MULACC of integers): a counter-dependent product of int
            # lanes has no vector MULACC (widen_gather.py)
            a, b, z = (new.get(s, s) for s in x.src)
            new[x] = UOp(Ops.ADD, (UOp(Ops.MUL, (a, b)), z))
        else:
            new[x] = x.replace(src=tuple(new.get(s, s) for s in x.src))
    return UOp(Ops.END, (new[st], t))
