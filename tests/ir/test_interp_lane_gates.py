"""Per-lane gates (a LOAD's gate a bool vector of its place's shape): the type rule and the
reference interpreter, against numpy's own reading of a padded buffer."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.ir.dtype import dtypes
from kcc.ir.interp import InterpError, run
from kcc.ir.ops import Ops
from kcc.ir.rules import IRError
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp

I32 = dtypes.int32


def i32(v: int) -> UOp:
    return UOp(Ops.CAST, (UOp(Ops.CONST, (), v),), I32)


def vec(vals, dt=I32) -> UOp:
    return UOp(Ops.STACK, tuple(UOp(Ops.CAST, (UOp(Ops.CONST, (), v),), dt) for v in vals))


def padded_kernel(n: int, out_n: int, off: int, lanes: int, alt: float,
                  all_true: bool = False) -> UOp:
    """out[lanes*i + j] = x[lanes*i + j + off] where 0 <= that < n, else alt: one SHRINK load
    of `lanes` elements a step, lane j gated by its own element's bounds."""
    out = UOp(Ops.PARAM, (), ParamArg(0, dtypes.float32, out_n))
    x = UOp(Ops.PARAM, (), ParamArg(1, dtypes.float32, n))
    i = UOp(Ops.RANGE, (i32(out_n // lanes),), (0, AxisType.LOOP))
    base = UOp(Ops.MUL, (i, i32(lanes)))
    start = UOp(Ops.ADD, (base, i32(off)))
    idx = UOp(Ops.ADD, (UOp(Ops.STACK, (start,) * lanes), vec(range(lanes))))
    gate = UOp(Ops.AND, (UOp(Ops.CMPLT, (vec([-1] * lanes), idx)),
                         UOp(Ops.CMPLT, (idx, vec([n] * lanes)))))
    if all_true:
        gate = UOp(Ops.STACK, (UOp(Ops.CONST, (), True),) * lanes)
    v = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (x, start, UOp(Ops.CONST, (), lanes))),
                       vec([alt] * lanes, dtypes.float32), gate))
    st = UOp(Ops.STORE, (UOp(Ops.SHRINK, (out, base, UOp(Ops.CONST, (), lanes))), v))
    return UOp(Ops.SINK, (UOp(Ops.END, (st, i)),), KernelInfo("lane_gates"))


@pytest.mark.parametrize("n,out_n,off,lanes", [(10, 16, -3, 4), (5, 16, -6, 8),
                                               (7, 8, 2, 4), (3, 4, -1, 2)])
def test_per_lane_gate_reads_only_its_lanes(n: int, out_n: int, off: int, lanes: int) -> None:
    x = np.arange(1, n + 1, dtype=np.float32)
    o = np.zeros(out_n, np.float32)
    run(padded_kernel(n, out_n, off, lanes, -2.5), [o, x])
    want = np.full(out_n, -2.5, np.float32)
    for e in range(out_n):
        if 0 <= e + off < n:
            want[e] = x[e + off]
    assert o.tolist() == want.tolist()


def test_a_true_lane_out_of_bounds_is_an_error() -> None:
    # every lane true: element -3 is read under a true gate
    bad = padded_kernel(10, 16, -3, 4, 0.0, all_true=True)
    with pytest.raises(InterpError, match=r"LOAD out of bounds: element -3 of PARAM slot 1"):
        run(bad, [np.zeros(16, np.float32), np.zeros(10, np.float32)])


def test_gate_shape_rule() -> None:
    x = UOp(Ops.PARAM, (), ParamArg(0, dtypes.float32, 8))
    place = UOp(Ops.SHRINK, (x, i32(0), UOp(Ops.CONST, (), 4)))
    alt = vec([0.0] * 4, dtypes.float32)
    t = UOp(Ops.CONST, (), True)
    assert UOp(Ops.LOAD, (place, alt, UOp(Ops.STACK, (t,) * 4))).shape == (4,)
    assert UOp(Ops.LOAD, (place, alt, t)).shape == (4,)
    with pytest.raises(IRError, match="bool vector of the place's shape"):
        UOp(Ops.LOAD, (place, alt, UOp(Ops.STACK, (t,) * 2))).utype
    with pytest.raises(IRError, match="a gate must be a scalar bool"):
        UOp(Ops.LOAD, (UOp(Ops.INDEX, (x, i32(0))), UOp(Ops.CONST, (), 0.0),
                       UOp(Ops.STACK, (t,) * 2))).utype
    # a STORE's gate stays one for the whole access
    with pytest.raises(IRError, match="a gate must be a scalar bool, not"):
        UOp(Ops.STORE, (place, alt, UOp(Ops.STACK, (t,) * 4))).utype


def test_reg_buffer_lane_gate() -> None:
    """A per-lane gate on a REG (private, per-lane copy) buffer reads the right copy."""
    out = UOp(Ops.PARAM, (), ParamArg(0, dtypes.float32, 16))
    reg = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, 4, addrspace=AddrSpace.REG))
    i = UOp(Ops.RANGE, (i32(4),), (0, AxisType.LOOP))
    base = UOp(Ops.MUL, (i, i32(4)))
    fi = UOp(Ops.CAST, (i,), dtypes.float32)
    w = UOp(Ops.STORE, (UOp(Ops.SHRINK, (reg, i32(0), UOp(Ops.CONST, (), 4))),
                        UOp(Ops.ADD, (UOp(Ops.STACK, (fi,) * 4),
                                      vec([10.0, 20.0, 30.0, 40.0], dtypes.float32)))))
    lane = UOp(Ops.CMPLT, (vec([0, 1, 2, 3]), UOp(Ops.STACK, (i,) * 4)))
    r = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (UOp(Ops.AFTER, (reg, w)), i32(0),
                                        UOp(Ops.CONST, (), 4))),
                       vec([-1.0] * 4, dtypes.float32), lane))
    st = UOp(Ops.STORE, (UOp(Ops.SHRINK, (out, base, UOp(Ops.CONST, (), 4))), r))
    o = np.zeros(16, np.float32)
    run(UOp(Ops.SINK, (UOp(Ops.END, (st, i)),), KernelInfo("reg_lanes")), [o])
    want = [[10 + 10 * j + i if j < i else -1.0 for j in range(4)] for i in range(4)]
    assert o.reshape(4, 4).tolist() == want
