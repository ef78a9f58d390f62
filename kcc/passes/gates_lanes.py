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
"""

from __future__ import annotations

from kcc.ir.consts import strong_int
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
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
