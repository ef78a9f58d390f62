"""Payne-Hanek's table lookup (kcc/passes/transcendental.py `_U64.words`, two levels of select
chains): words i = 0 … count-1 are table[j + i], 0 past the table's end, for every uint64 j
(in range, just past it, and huge), checked in the reference interpreter against Python's
indexing of the same table."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.ir import AxisType, KernelInfo, Ops, UOp, dtypes
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import ParamArg
from kcc.passes.transcendental import _TWO_OVER_PI_WORDS, _two_over_pi_words, _U64

N = 64


@pytest.mark.parametrize("table,count", [([0, 0] + _two_over_pi_words(_TWO_OVER_PI_WORDS), 7),
                                         (_two_over_pi_words(8), 4), ([5, 6, 7], 2)])
def test_words_index_the_table(table: list[int], count: int) -> None:
    u = _U64(())
    out = UOp(Ops.PARAM, (), ParamArg(0, dtypes.uint64, N * count))
    src = UOp(Ops.PARAM, (), ParamArg(1, dtypes.uint64, N))
    i = UOp(Ops.RANGE, (UOp(Ops.CAST, (UOp.const(N),), dtypes.int32),), (0, AxisType.LOOP))
    j = UOp(Ops.LOAD, (UOp(Ops.INDEX, (src, i)),))
    stores = []
    for k, w in enumerate(u.words(j, count, table)):
        place = UOp(Ops.INDEX, (out, UOp(Ops.ADD, (UOp(Ops.MUL, (
            i, UOp(Ops.CAST, (UOp.const(count),), dtypes.int32))),
            UOp(Ops.CAST, (UOp.const(k),), dtypes.int32)))))
        stores.append(UOp(Ops.STORE, (place, w)))
    end = UOp(Ops.END, (UOp(Ops.GROUP, tuple(stores)), i))
    sink = UOp(Ops.SINK, (end,), KernelInfo("words"))
    js = np.concatenate([np.arange(len(table) + 10, dtype=np.uint64),
                         np.array([2 ** 63, 2 ** 64 - 1, 8 * 1000 + 3], np.uint64)])
    js = np.resize(js, N)
    got = np.zeros(N * count, np.uint64)
    interp_run(sink, [got, js.copy()])
    want = [table[x + k] if x + k < len(table) else 0 for x in js.tolist() for k in range(count)]
    assert got.tolist() == want


def test_float64_lookup_takes_two_short_levels() -> None:
    """7 words of float64's 42-word table: 14 rows by 6 blocks, then 7 words by 7 more
    offsets (one chain per word over every index took 273 selects)."""
    from kcc.ir.uop import toposort
    j = UOp(Ops.PARAM, (), ParamArg(0, dtypes.uint64, 1))
    words = _U64(()).words(UOp(Ops.LOAD, (UOp(Ops.INDEX, (j, UOp.const(0))),)), 7,
                           [0, 0] + _two_over_pi_words(_TWO_OVER_PI_WORDS))
    nodes = toposort(list(words))
    assert sum(n.op is Ops.WHERE for n in nodes) <= 14 * 6 + 7 * 7
