"""simplify's BITCAST of a scalar constant (fold_bitcast) equals numpy's view of the same bits
for every pair of same-size strong dtypes, and leaves NaNs, bool and bfloat16 alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp
from kcc.passes.simplify import const_value, fold_bitcast, make_const

SIZED = {2: [dtypes.float16, dtypes.int16, dtypes.uint16],
         4: [dtypes.float32, dtypes.int32, dtypes.uint32],
         8: [dtypes.float64, dtypes.int64, dtypes.uint64],
         1: [dtypes.int8, dtypes.uint8]}
PAIRS = [(a, b) for group in SIZED.values() for a in group for b in group if a != b]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PAIRS), st.binary(min_size=8, max_size=8))
def test_fold_bitcast_is_numpys_view(pair, raw: bytes) -> None:
    src, dst = pair
    v = np.frombuffer(raw[:src.itemsize], src.np.type)[0]
    if src.is_float and v != v:
        v = src.np.type(1.5)
    c = make_const(float(v) if src.is_float else int(v), src)
    got = fold_bitcast(UOp(Ops.BITCAST, (c,), dst), c)
    want = np.array(v, src.np.type).view(dst.np.type)[()]
    if dst.is_float and want != want:
        assert got is None
        return
    assert got is not None
    gv = const_value(got)[0]
    assert np.array(gv, dst.np.type).tobytes() == np.array(want).tobytes()


def test_nan_bool_and_bfloat16_are_left_alone() -> None:
    nan = make_const(float("nan"), dtypes.float32)
    assert fold_bitcast(UOp(Ops.BITCAST, (nan,), dtypes.int32), nan) is None
    one = make_const(1.0, dtypes.bfloat16)
    assert fold_bitcast(UOp(Ops.BITCAST, (one,), dtypes.int16), one) is None
