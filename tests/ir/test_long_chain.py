"""A 200,000-node chain runs in the reference interpreter without hitting the recursion limit
(parsing, printing, verifying and every pass are covered by the frontend and pass tests)."""

from __future__ import annotations

import numpy as np

from kcc.ir import AxisType, KernelInfo, Ops, ParamArg, UOp, dtypes
from kcc.ir.interp import run


def test_interpreter_runs_a_200k_chain() -> None:
    out = UOp(Ops.PARAM, (), ParamArg(0, dtypes.int32, 4))
    i = UOp(Ops.RANGE, (UOp.const(4),), (0, AxisType.LOOP))
    one = UOp(Ops.CAST, (UOp.const(1),), dtypes.int32)
    x = UOp(Ops.CAST, (i,), dtypes.int32)
    for _ in range(200_000):
        x = UOp(Ops.ADD, (x, one))
    st = UOp(Ops.STORE, (UOp(Ops.INDEX, (out, i)), x))
    sink = UOp(Ops.SINK, (UOp(Ops.END, (st, i)),), KernelInfo("chain"))
    buf = np.zeros(4, np.int32)
    run(sink, [buf])
    assert buf.tolist() == [200_000, 200_001, 200_002, 200_003]
