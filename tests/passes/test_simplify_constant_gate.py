"""simplify's known_gate (kcc/passes/simplify.py) on constant lane gates: a LOAD whose lane
gate is one constant in every lane is the ungated load (all true) or its alternative value
(all false); a mixed or a scalar constant gate stays (slp_gated.py packs runs of scalar-gated
loads into one load at a constant lane mask). The interpreter gives the same values before
and after."""

from __future__ import annotations

import numpy as np
import pytest
from passes_support import param

from kcc.ir import KernelInfo, Ops, UOp, dtypes
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import toposort
from kcc.passes.simplify import simplify

C = UOp.const


def _int(k: int) -> UOp:
    return UOp(Ops.CAST, (C(k),), dtypes.int32)


def _kernel(gate: UOp) -> UOp:
    out, x = param(0, dtypes.float32, 8), param(1, dtypes.float32, 8)
    alt = UOp(Ops.STACK, tuple(UOp(Ops.CAST, (C(1.5),), dtypes.float32) for _ in range(4)))
    ld = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (x, _int(4), C(4))), alt, gate))
    st = UOp(Ops.STORE, (UOp(Ops.SHRINK, (out, _int(0), C(4))), ld))
    return UOp(Ops.SINK, (st,), KernelInfo("k"))


def _lanes(*vals: bool) -> UOp:
    return UOp(Ops.STACK, tuple(C(v) for v in vals))


def _run(sink: UOp) -> list[float]:
    out = np.zeros(8, np.float32)
    interp_run(sink, [out, np.arange(8, dtype=np.float32)])
    return out.tolist()


@pytest.mark.parametrize("value", [True, False])
def test_a_gate_of_one_constant_folds(value: bool) -> None:
    sink = _kernel(_lanes(*[value] * 4))
    out = simplify(sink)
    loads = [u for u in toposort([out]) if u.op is Ops.LOAD]
    assert [len(u.src) for u in loads] == ([1] if value else [])
    assert _run(out) == _run(sink) == ([4.0, 5.0, 6.0, 7.0] if value else [1.5] * 4) + [0.0] * 4


def test_mixed_and_scalar_constant_gates_stay() -> None:
    sink = _kernel(_lanes(False, True, True, True))
    assert simplify(sink) is sink
    # a scalar gate on a scalar load (unroll_tiny's copies of triu: slp_gated packs them)
    out, x = param(0, dtypes.float32, 8), param(1, dtypes.float32, 8)
    ld = UOp(Ops.LOAD, (UOp(Ops.INDEX, (x, _int(3))), UOp(Ops.CAST, (C(0.0),), dtypes.float32),
                        C(False)))
    s2 = UOp(Ops.SINK, (UOp(Ops.STORE, (UOp(Ops.INDEX, (out, _int(0))), ld)),), KernelInfo("k"))
    assert [u for u in toposort([simplify(s2)]) if u.op is Ops.LOAD and len(u.src) == 3]
