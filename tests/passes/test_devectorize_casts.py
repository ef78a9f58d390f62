"""devectorize splits a CAST/BITCAST of an illegal width into the widths the target has the
cast at (TargetDesc.cast_legal), not into scalars when the two dtypes' ALU widths differ: a
float64 x 8 BITCAST to int64 on a target with int64 x 4 casts is two 4-lane BITCASTs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kcc.frontend.parser import parse
from kcc.ir.dtype import dtypes
from kcc.ir.interp import run as interp_run
from kcc.ir.ops import Ops
from kcc.passes.devectorize import devectorize
from kcc.passes.target import SCALAR_ALL_NATIVE, widths

SRC = """# kcc-uop 1
%0 = PARAM ParamArg(0, int64, 8)
%1 = PARAM ParamArg(1, float64, 8)
%2 = CAST(0) int32
%3 = SHRINK(%1, %2, 8)
%4 = LOAD(%3)
%5 = BITCAST(%4) int64
%6 = SHRINK(%0, %2, 8)
%7 = STORE(%6, %5)
SINK(%7) KernelInfo(name="bc")
"""


def _casts_at_4(op: Ops, src, dst, n: int) -> bool:
    return n == 4 and {src, dst} == {dtypes.float64, dtypes.int64}


# float64 up to 8 lanes; int64 vectors of 4 lanes for ADD only (no BITCAST in vector_ops),
# the 4-lane BITCAST legal through vector_cast (as x86-64-v4 had it before int64 x 8)
TARGET = replace(SCALAR_ALL_NATIVE,
                 alu_widths=widths({dtypes.float64: (8, 4), dtypes.int64: (4,)}),
                 mem_widths=widths({dtypes.float64: (8, 4), dtypes.int64: (8, 4)}),
                 vector_ops={dtypes.int64: frozenset({Ops.ADD})},
                 vector_cast=_casts_at_4)


def test_bitcast_splits_into_legal_cast_widths() -> None:
    sink = parse(SRC)
    out = devectorize(sink, TARGET)
    casts = [u for u in out.toposort() if u.op is Ops.BITCAST]
    assert [u.shape for u in casts] == [(4,), (4,)]
    x = np.random.default_rng(0).uniform(-1e3, 1e3, 8)
    got, want = [np.zeros(8, np.int64), x.copy()], [np.zeros(8, np.int64), x.copy()]
    interp_run(out, got)
    interp_run(sink, want)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[0], x.view(np.int64))


def test_without_a_vector_cast_the_bitcast_is_scalar() -> None:
    out = devectorize(parse(SRC), replace(TARGET, vector_cast=None))
    casts = [u for u in out.toposort() if u.op is Ops.BITCAST]
    assert len(casts) == 8 and all(u.shape == () for u in casts)
