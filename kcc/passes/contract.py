"""Opt-in floating-point contraction (`fp_contract="fast"`, named like clang's -ffp-contract).

By default kcc computes every float op exactly as written, each rounded once (docs/semantics.md),
so `a*b + c` rounds twice. With contraction on (TargetDesc.fp_contract), a float ADD whose
operand is a float MUL used nowhere else becomes MULACC(a, b, c): one fused multiply-add,
rounded once — the result may differ from the exact-as-written one in the last bits, which is
why it is never the default. Vector and scalar alike; integer ops are never touched (their
MULACC is exact either way, but there is nothing to gain).
"""

from __future__ import annotations

from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort, users
from kcc.passes.target import TargetDesc


def contract(sink: UOp, target: TargetDesc) -> UOp:
    """ADD(MUL(a, b), c) → MULACC(a, b, c) for floats when target.fp_contract is set."""
    if not target.fp_contract:
        return sink
    order = toposort([sink])
    use = users(order)
    memo: dict[UOp, UOp] = {}
    for u in order:
        src = tuple([memo[s] for s in u.src])
        new = u if src == u.src else u.replace(src=src)
        if u.op is Ops.ADD and u.dtype is not None and u.dtype.is_float:
            for k in (0, 1):
                m, other = u.src[k], src[1 - k]
                if m.op is Ops.MUL and len(use[m]) == 1 and m.dtype == u.dtype:
                    mm = memo[m]
                    new = UOp(Ops.MULACC, (mm.src[0], mm.src[1], other))
                    break
        memo[u] = new
    return memo[sink]
