"""A safe start for a masked vector load gated lane by lane (kcc/passes/gates.py plan_masked):
the address a masked-off lane forms must lie on a present page, or the fault suppression is
a microcode assist (kcc/passes/gates.py's docstring; bench/gate_assist.py).

A scalar gate's safe index selects on that gate (gates.py); a per-lane gate has no one bool
to select on.
But a true lane's element is inside the buffer (the IR's rule, docs/semantics.md), so where
`start` lies outside [-(n-1), size-1] every one of the n lanes is outside the buffer and so
masked off: the load then reads nothing and any address will do. So

    start' = WHERE(start + (n-1) <u size + n - 1, start, 0)

(one unsigned compare of a biased start, one select: no gate read) is start wherever a lane
may be true, and 0 (elements [0, n), inside a buffer of at least n) where none is; the lanes'
addresses stay within n-1 elements of the buffer, the small reach `gates.in_bounds` accepts
of scalar loads.

That reach is not harmless where the buffer begins (or ends) a page whose neighbour is absent:
every such load is then a fault-suppression assist (bench/gate_assist.py: cummax's r_8_8_8,
whose loads at `8i - c` under `c - 1 < j` reach 6 elements before its input, 0.07 µs with
present pages, 0.68 µs after a PROT_NONE page). Where the gate is false on the first t lanes
(the last t) and moving the vector's start by t (by -t) puts every lane inside the buffer by
the value ranges, shifted_load reads there, unmasked, and moves the lanes back by a constant
lane rotation (one VPERMPS): `WHERE(gate, STACK(L[(j - t) mod n] …), alt)`. A true lane j
reads L[j - t], the element start + j it asked for; the rotated-in lanes are false ones. The
shifted load is often one the kernel makes anyway (cummax's row `x[8i : 8i+8]`).
"""

from __future__ import annotations

from kcc.ir.consts import peel_offset, plus_int, strong_int
from kcc.ir.dtype import dtypes
from kcc.ir.ops import ALU, Ops
from kcc.ir.ranges import Range, vmin_vmax
from kcc.ir.uop import UOp

_UNSIGNED = {dtypes.int32: dtypes.uint32, dtypes.int64: dtypes.uint64,
             dtypes.uint32: dtypes.uint32, dtypes.uint64: dtypes.uint64}


def lane_safe_load(u: UOp) -> UOp | None:
    """The per-lane-gated LOAD u (of a SHRINK place of n elements) at start' (above), or None
    when its start's dtype has no unsigned twin here or the buffer holds fewer than n."""
    p = u.src[0]
    buf, start = p.src[0], p.src[1]
    n, size = p.shape[0], buf.shape[0]
    ut = _UNSIGNED.get(start.dtype)
    if ut is None or size < n:
        return None
    biased = UOp(Ops.ADD, (start, strong_int(n - 1, start.dtype)))
    if ut is not start.dtype:
        biased = UOp(Ops.BITCAST, (biased,), ut)
    inside = UOp(Ops.CMPLT, (biased, strong_int(size + n - 1, ut)))
    safe = UOp(Ops.WHERE, (inside, start, strong_int(0, start.dtype)))
    return u.replace(src=(p.replace(src=(buf, safe, *p.src[2:])), *u.src[1:]))


def is_lane_safe(start: UOp) -> bool:
    """Whether start is already lane_safe_load's form (a second run of the pass)."""
    if start.op is not Ops.WHERE or start.src[0].op is not Ops.CMPLT:
        return False
    biased = start.src[0].src[0]
    if biased.op is Ops.BITCAST:
        biased = biased.src[0]
    return biased.op is Ops.ADD and biased.src[0] is start.src[1]


def _lane(v: UOp, k: int) -> UOp:
    """Lane k of vector value v as a scalar expression (a STACK's src; an ALU node of lanes)."""
    if not v.shape:
        return v
    if v.op is Ops.STACK:
        return v.src[k]
    if v.op in ALU or v.op is Ops.CAST:
        return UOp(v.op, tuple(_lane(s, k) for s in v.src), v.arg)
    return UOp(Ops.INDEX, (v, UOp.const(k)))


def _false_lanes(gate: UOp, lanes: range) -> int:
    """How many of `lanes` (in that order) the value ranges prove gate false in, from the
    first one on."""
    k = 0
    for j in lanes:
        if vmin_vmax(_lane(gate, j)) != (0, 0):
            break
        k += 1
    return k


def shifted_load(u: UOp, ranges: dict[UOp, Range]) -> UOp | None:
    """The per-lane-gated LOAD u (of a SHRINK place of n elements) whose start's value range
    reaches before the buffer (past its end) as an unmasked load t elements later (earlier),
    every lane inside the buffer, and a lane rotation (module docstring); None when the
    range reaches both ways, or the gate is not provably false on t leading (trailing)
    lanes, or the moved vector is not inside the buffer."""
    p, alt, gate = u.src
    if p.op is not Ops.SHRINK:
        return None
    buf, start = p.src[0], p.src[1]
    n, size = p.shape[0], buf.shape[0]
    r = ranges.get(start)
    if r is None or n > size:
        return None
    below, above = max(0, -r[0]), max(0, r[1] + n - size)
    if below and above or not below and not above:
        return None
    t = below if below else -above
    if not 0 <= r[0] + t <= r[1] + t <= size - n:
        return None
    lanes = range(n) if t > 0 else range(n - 1, -1, -1)
    if _false_lanes(gate, lanes) < abs(t):
        return None
    e, c = peel_offset(start)
    moved_start = plus_int(e, c + t) if e is not None else strong_int(c + t, start.dtype)
    whole = UOp(Ops.LOAD, (p.replace(src=(buf, moved_start, *p.src[2:])),))
    moved = UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (whole, UOp.const((j - t) % n)))
                                 for j in range(n)))
    return UOp(Ops.WHERE, (gate, moved, alt))


def _lane_holds(c: UOp, k: int) -> bool:
    """Whether lane k of bool vector c is true by the value ranges."""
    return vmin_vmax(_lane(c, k)) == (1, 1)


def _either(h: UOp, g: UOp, k: int) -> bool:
    """Whether lane k of h or of g is always true: by the value ranges, or as `x < a` and
    `a - 1 < x` of one int x (tinygrad's padding pair `j < c`, `c - 1 < j`)."""
    hk, gk = _lane(h, k), _lane(g, k)
    if vmin_vmax(hk) == (1, 1) or vmin_vmax(gk) == (1, 1):
        return True
    if hk.op is not Ops.CMPLT or gk.op is not Ops.CMPLT or hk.src[0] is not gk.src[1] \
            or not hk.src[0].dtype.is_int:
        return False
    a, b = vmin_vmax(hk.src[1]), vmin_vmax(gk.src[0])
    return a is not None and b is not None and a[0] == a[1] and b == (a[0] - 1, a[0] - 1)


def fold_outer_where(w: UOp, moved: UOp) -> UOp | None:
    """w = WHERE(h, a, u) (or WHERE(h, u, a)) over a load u that shifted_load made `moved` =
    WHERE(g, m, alt): where h's lanes that pick u all have g true, w is WHERE(h, a, m) (or
    WHERE(h, m, a)): the gate's select is the outer one's (cummax's `j < c ? -inf : x`), no
    second blend."""
    h, y, n = w.src
    g, m = moved.src[0], moved.src[1]
    lanes = range(w.shape[0]) if w.shape else range(0)
    if not lanes or g.shape != h.shape:
        return None
    if n.op is Ops.LOAD and all(_either(h, g, k) for k in lanes):
        return w.replace(src=(h, y, m))
    if y.op is Ops.LOAD:
        nh = UOp(Ops.XOR, (h, UOp(Ops.STACK, (UOp.const(True),) * len(lanes))))
        if all(_either(nh, g, k) for k in lanes):
            return w.replace(src=(h, m, n))
    return None
