"""x86-64's scheduling model for kcc/passes/interleave.py (TargetDesc.sched): the latency of
the instruction each op becomes, and the registers a loop body may keep live."""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.passes.target import SchedModel

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.ir.uop import UOp

# Latencies (cycles) of the x86 instructions an op becomes, rounded (Intel optimization
# manual, Appendix C / uops.info for Skylake-X..Sapphire Rapids): only their relative size
# matters, to find the long chains.
_FLOAT_LAT = {Ops.ADD: 4, Ops.SUB: 4, Ops.MUL: 4, Ops.MULACC: 4, Ops.MAX: 4, Ops.NEG: 1,
              Ops.FDIV: 14, Ops.RECIPROCAL: 14, Ops.SQRT: 18, Ops.EXP2: 20, Ops.LOG2: 20,
              Ops.SIN: 30, Ops.TRUNC: 8}
_INT_LAT = {Ops.MUL: 10, Ops.MULHI: 10, Ops.CDIV: 20, Ops.CMOD: 20}
_OTHER_LAT = {Ops.LOAD: 5, Ops.CAST: 4, Ops.CMPLT: 3, Ops.CMPNE: 3, Ops.CMPEQ: 3,
              Ops.WHERE: 1, Ops.STACK: 3, Ops.BITCAST: 1}

# registers a block's values and its outside values may hold: of x86's 16 GPRs rsp, a frame
# pointer, loop counters and the strength-reduced index sums selection adds leave ~9 (at 12
# sum_remainder_lanes' body spilled one more GPR and ran 1.6% slower, at 10 softmax_rows
# r_64_128_4's max-reduction ran 2.6% slower: bodies this index-heavy gain nothing), and 7
# opmasks (k1-k7; k0 is no write mask) on x86-64-v4
GPRS, OPMASKS = 9, 7


def latency(u: UOp) -> int:
    """The estimated latency of the instruction u becomes."""
    dt = u.dtype
    if dt is None:
        return _OTHER_LAT.get(u.op, 1)
    if dt.is_float and u.op in _FLOAT_LAT:
        return _FLOAT_LAT[u.op]
    if dt.is_int and u.op in _INT_LAT:
        return _INT_LAT[u.op]
    return _OTHER_LAT.get(u.op, 1)


def x86_sched(vector_regs: int, opmasks: bool) -> SchedModel:
    """The model for an arch with these vector registers (and opmasks: x86-64-v4)."""
    return SchedModel(latency, vector_regs, GPRS, OPMASKS if opmasks else 0)
