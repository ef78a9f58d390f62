"""Innermost scalar loops unrolled (the part of passes/unroll.py for loops no vector form
takes: 64-bit integer division), their copies one body through unroll-and-jam's `_jam`."""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort
from kcc.passes.target import TargetDesc
from kcc.passes.unroll import _analyze, _jam, _Loops


# unroll factors of an innermost scalar loop (`scalar_loops`), dividing ones first
SCALAR_FACTORS = (4, 5, 3, 2)
# the most nodes one copy of such a loop's body may have
SCALAR_MAX_COPIED = 64


def _divides64(n: UOp) -> bool:
    """n is a scalar 64-bit integer CDIV/CMOD (by a constant: passes/divconst.py's multiply
    and shifts; else DIV/IDIV), which no x86 vector form takes."""
    return n.op in (Ops.CDIV, Ops.CMOD) and not n.shape and n.dtype.is_int \
        and n.dtype.bits == 64


def _divides_anywhere(sink: UOp) -> bool:
    """Whether the graph has a `_divides64` node. Sufficient to refuse every loop when not:
    a loop is taken only when its cone (part of the graph) has one."""
    return any(map(_divides64, toposort([sink])))


def scalar_loops(sink: UOp, desc: TargetDesc, done: set[UOp],
                 loops: _Loops | None = None) -> UOp:
    """Innermost loops that stay scalar because they divide 64-bit integers unrolled by a
    factor of SCALAR_FACTORS (dividing the bound first, else with a remainder loop), their
    copies one body (`_jam` with nothing to privatize). u64_div E_50, `x // 1000003` per
    element: one division a trip ran 42.5 ns a call, two a trip 28.8 ns, clang's five 23.3
    (its loop overhead and the multiply's scheduling shared by the copies; docs/performance.md,
    "64-bit integer loops"). Legality is unroll-and-jam's (`_analyze`, elementwise).
    loops: the graph's loop structure if the caller has it (unroll's last reading, with
    the loop cones it sorted)."""
    if not _divides_anywhere(sink):
        return sink         # (no loop divides: most kernels, no loop structure asked)
    while True:
        if loops is None or loops.order[-1] is not sink:
            loops = _Loops(sink)
        plan = None
        for r, end in loops.end_of.items():
            cone = loops.cone(end)
            if r in done or any(n in done for n in cone) or not any(map(_divides64, cone)) \
                    or any(n.op is Ops.BUFFER for n in cone):
                continue
            plan = _analyze(loops, r, desc, factors=SCALAR_FACTORS, tail=True,
                            max_copied=SCALAR_MAX_COPIED, elementwise=True)
            if plan is not None:
                break
        if plan is None:
            return sink
        sink, made = _jam(sink, loops, plan)
        done |= made
