"""MULHI (the high half of a double-width product): interpreter arithmetic, type rule, ranges."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kcc.ir import numerics as nm
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.ranges import vmin_vmax
from kcc.ir.rules import IRError, utype_of
from kcc.ir.uop import AxisType, UOp

CASES = [(dtypes.int64, True, 64), (dtypes.uint64, False, 64), (dtypes.int32, True, 32),
         (dtypes.uint32, False, 32), (dtypes.int16, True, 16), (dtypes.uint8, False, 8)]


@pytest.mark.parametrize("dt,signed,bits", CASES, ids=lambda c: str(c))
def test_numerics_mulhi_exact(dt, signed, bits):
    """numpy MULHI equals (a*b) >> bits on Python ints, edges and random operands."""
    rnd = random.Random(bits)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    edge = [lo, lo + 1, hi, hi - 1, 0, 1, 2] + ([-1, -2] if signed else [])
    xs = edge * len(edge) + [rnd.randint(lo, hi) for _ in range(2000)]
    ys = [e for e in edge for _ in edge] + [rnd.randint(lo, hi) for _ in range(2000)]
    got = nm.alu(Ops.MULHI, dt, np.array(xs, dt.np), np.array(ys, dt.np))
    assert got.dtype == dt.np
    assert [int(g) for g in got] == [(x * y) >> bits for x, y in zip(xs, ys)]


def _c(v, dt):
    return UOp(Ops.CAST, (UOp.const(v),), dt)


def test_mulhi_type_rule_integers_only():
    """MULHI types like MUL on integers and refuses floats and bools."""
    a = _c(3, dtypes.uint64)
    assert utype_of(Ops.MULHI, (a, a), None).dtype == dtypes.uint64
    with pytest.raises(IRError, match="integers"):
        utype_of(Ops.MULHI, (_c(1.0, dtypes.float32), _c(2.0, dtypes.float32)), None)


def test_mulhi_range():
    """The range of MULHI is the floor of the product's range over 2^bits."""
    i = UOp(Ops.RANGE, (_c(1000, dtypes.int32),), (0, AxisType.LOOP))
    x = UOp(Ops.CAST, (i,), dtypes.uint64)
    y = UOp(Ops.MULHI, (x, _c(3 << 62, dtypes.uint64)))
    assert vmin_vmax(y) == (0, (999 * (3 << 62)) >> 64)
