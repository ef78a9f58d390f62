"""A static estimate of a kernel's vector work: how many element operations one launch runs.

Used by a target's per-kernel description hook (`TargetDesc.narrow`): x86-64-v4 compiles a
kernel of little work without 512-bit vectors (kcc/targets/x86/arch.py). An AVX-512 core
whose zmm units sat idle (the upper lanes powered down after ~0.1 ms without a 512-bit
instruction) runs its first 512-bit instructions slowly for a microsecond or so, so a kernel
of a few nanoseconds that uses zmm pays more than it gains, as clang's default for these CPUs
(prefer-vector-width=256) says (relu_spec's E_5_4: 1.3 ns a call warm, 2.6 ns after 0.1 ms
of idle; docs/performance.md, issue 24 item 2).
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp
from kcc.passes.target import POLYNOMIAL_OPS

# the element operations a transcendental op stands for once decomposed (passes/decompose.py:
# a range reduction and a polynomial, ~20-40 operations)
_POLY_WEIGHT = 30
# ops that do no element work of their own
_FREE = frozenset({Ops.PARAM, Ops.CONST, Ops.RANGE, Ops.END, Ops.SINK, Ops.GROUP, Ops.INDEX,
                   Ops.SHRINK, Ops.STACK, Ops.AFTER, Ops.CAST})
# the float ops a CPU's divider unit runs (work_split)
_DIVIDER = frozenset({Ops.SQRT, Ops.FDIV})
# a loop bound that is not a constant counts as this many iterations (unknown: large)
_UNKNOWN_TRIPS = 1 << 20


def vector_work(sink: UOp) -> int:
    """The element operations of one launch: for every value node with a dtype (ALU, LOAD,
    STORE), its lanes times the trip counts of the loops it depends on (a transcendental
    counts _POLY_WEIGHT); a loop of a runtime bound counts _UNKNOWN_TRIPS. One walk."""
    return work_split(sink)[0]


def work_split(sink: UOp) -> tuple[int, int]:
    """(vector_work, the part of it that is float SQRT and FDIV): the element operations a
    CPU's divider runs, which is no wider than 256 bits on the x86 cores measured (a zmm
    VSQRTPS or VDIVPS takes twice a ymm one's cycles), so a wider vector does not speed
    them. One walk."""
    from kcc.passes.linearize import range_sets
    order = sink.toposort()
    deps = range_sets(order)
    trips: dict[UOp, int] = {}
    total = divides = 0
    for n in order:
        if n.op is Ops.RANGE:
            b = const_int(n.src[0])
            trips[n] = b if b is not None and b > 0 else _UNKNOWN_TRIPS
            continue
        if n.op in _FREE or (n.dtype is None and n.op is not Ops.STORE):
            continue
        w = _POLY_WEIGHT if n.op in POLYNOMIAL_OPS else 1
        shape = n.src[1].shape if n.op is Ops.STORE and len(n.src) > 1 else n.shape
        k = w * (shape[0] if shape else 1)
        for r in deps.get(n, ()):
            k *= trips.get(r, _UNKNOWN_TRIPS)
        total += k
        if n.op in _DIVIDER and n.dtype is not None and n.dtype.is_float:
            divides += k
    return total, divides
