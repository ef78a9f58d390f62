"""devectorize keeps a STORE of a bool vector whole at a width of TargetDesc.bool_stores
(x86: the mask's 0/1 bytes stored at once) and splits it into scalar stores elsewhere (bool
vectors have no loads, so mem_widths lists none); the interpreter gives the same bytes."""

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
%0 = PARAM ParamArg(0, bool, 8)
%1 = PARAM ParamArg(1, float32, 8)
%2 = CAST(0) int32
%3 = SHRINK(%1, %2, 8)
%4 = LOAD(%3)
%5 = STACK(1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5)
%6 = CMPLT(%5, %4)
%7 = SHRINK(%0, %2, 8)
%8 = STORE(%7, %6)
SINK(%8) KernelInfo(name="bs")
"""

BASE = replace(SCALAR_ALL_NATIVE, alu_widths=widths({dtypes.float32: (8,), dtypes.bool: (8,)}),
               mem_widths=widths({dtypes.float32: (8,)}))


def _stores(sink) -> list:
    return [u for u in sink.toposort() if u.op is Ops.STORE]


def test_a_bool_vector_store_stays_whole_where_the_target_stores_it() -> None:
    sink = parse(SRC)
    target = replace(BASE, bool_stores=(8,))
    assert target.store_legal(8, dtypes.bool) and not target.mem_legal(8, dtypes.bool)
    out = devectorize(sink, target)
    assert [s.src[1].shape for s in _stores(out)] == [(8,)]
    x = np.array([0.0, 2.0, 1.5, np.nan, 3.0, -1.0, np.inf, 1.6], np.float32)
    want = interp_run(sink, [np.zeros(8, np.bool_), x])[0]
    assert np.array_equal(interp_run(out, [np.zeros(8, np.bool_), x])[0], want)
    assert want.tolist() == [False, True, False, False, True, False, True, True]


def test_without_bool_stores_it_is_split_into_scalar_stores() -> None:
    out = devectorize(parse(SRC), BASE)
    assert len(_stores(out)) == 8 and all(not s.src[1].shape for s in _stores(out))
