"""kcc/passes/simplify.py folds float32/float64 ALU ops on constants without numpy
(_py_float_op): every result it gives is numpy's, bit for bit (the sign of a zero, the
rounding of a float32 result computed in float64), and what it leaves to numpy (NaNs, zero
divisors, overflow) is still numpy's."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.passes.simplify import _NUMPY, _float_op, _numpy_float_op, _py_float_op

OPS2 = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]
OPS1 = [Ops.NEG, Ops.SQRT, Ops.TRUNC, Ops.RECIPROCAL]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.4028234663852886e38,
           -3.4028234663852886e38, 1.401298464324817e-45, 1.1754943508222875e-38,
           float("inf"), float("-inf"), float("nan"), 1e300, 5e-324, 2.0 ** 24 + 1, 1e10]
VALUES = st.one_of(st.sampled_from(SPECIAL), st.floats(width=32), st.floats(width=64),
                   st.floats(-1e6, 1e6))


def _same(got, want) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return struct.pack("<d", got) == struct.pack("<d", want)
    return type(got) is type(want) and got == want


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(OPS2 + OPS1), st.sampled_from([dtypes.float32, dtypes.float64]),
       VALUES, VALUES)
def test_folds_without_numpy_are_numpys_bit_for_bit(op, dt, p: float, q: float) -> None:
    a = [p] if op in OPS1 else [p, q]
    want = _numpy_float_op(op, a, dt)
    got = _py_float_op(op, a, dt)
    assert got is _NUMPY or _same(got, want), (op, dt, a, got, want)
    assert _same(_float_op(op, a, dt), want)


def test_the_common_folds_need_no_numpy() -> None:
    f32 = dtypes.float32
    assert _py_float_op(Ops.MUL, [0.1, 3.0], f32) == _numpy_float_op(Ops.MUL, [0.1, 3.0], f32)
    assert _py_float_op(Ops.ADD, [1.0, 2.0], f32) == 3.0
    assert _py_float_op(Ops.TRUNC, [-0.5], f32) == 0.0
    assert struct.pack("<d", _py_float_op(Ops.TRUNC, [-0.5], f32))[-1] & 0x80   # -0.0
    assert _py_float_op(Ops.FDIV, [1.0, 0.0], f32) is _NUMPY
    assert _py_float_op(Ops.ADD, [float("inf"), float("-inf")], f32) is _NUMPY   # NaN bits
    assert _py_float_op(Ops.ADD, [1.0, 2.0], dtypes.float16) is _NUMPY
