"""kcc/passes/slp_index.py lane_offset: an element index as a base node plus a constant, the
base hash-consed so that consecutive lanes' indexes share it."""

from __future__ import annotations

from passes_support import param, rng

from kcc.ir import Ops, UOp, dtypes
from kcc.passes.slp_index import consecutive_runs, lane_offset

C = UOp.const


def _int(k: int) -> UOp:
    return UOp(Ops.CAST, (C(k),), dtypes.int32)


def _range(axis: int = 0) -> UOp:
    return rng(_int(5 + axis), axis)


def test_a_mulacc_with_a_constant_addend_is_lane_k_of_its_shifted_base() -> None:
    # tinygrad's upcast lanes: lane 0 at `i << 2`, lane j at MULACC(i, 4, j)
    i = _range()
    lane0 = UOp(Ops.SHL, (i, _int(2)))
    assert lane_offset(lane0) == (lane0, 0)
    for j in (1, 2, 3):
        assert lane_offset(UOp(Ops.MULACC, (i, _int(4), _int(j)))) == (lane0, j)


def test_a_non_power_of_two_scale_is_a_multiply() -> None:
    i = _range()
    base, k = lane_offset(UOp(Ops.MULACC, (i, _int(3), _int(2))))
    assert k == 2 and base == UOp(Ops.MUL, (i, _int(3)))


def test_nested_mulaccs_keep_the_outer_terms() -> None:
    i, j = _range(), _range(1)
    inner = UOp(Ops.MULACC, (i, _int(8), _int(5)))
    base, k = lane_offset(UOp(Ops.MULACC, (j, _int(64), inner)))
    assert k == 5 and base == UOp(Ops.MULACC, (j, _int(64), UOp(Ops.SHL, (i, _int(3)))))


def test_stores_at_shl_and_mulacc_indexes_form_one_run() -> None:
    buf = param(0, dtypes.int32, 20)
    i = _range()
    idx = [UOp(Ops.SHL, (i, _int(2)))] + [UOp(Ops.MULACC, (i, _int(4), _int(j)))
                                          for j in (1, 2, 3)]
    stores = [UOp(Ops.STORE, (UOp(Ops.INDEX, (buf, x)), _int(7))) for x in reversed(idx)]
    assert consecutive_runs(stores) == [tuple(reversed(stores))]
