"""A second verify of a graph that shares nodes with one verified before checks only the nodes
that are new or that a graph-wide rule reads (kcc.ir.verify._Walk.run): the work per walk is
the new nodes plus the PARAM/BUFFER/RANGE/END/SPECIAL/SINK nodes, not every node again."""

from __future__ import annotations

import pytest

from kcc.ir import AxisType, KernelInfo, Ops, ParamArg, UOp, dtypes
from kcc.ir import verify as V

_WIDE = {Ops.SINK, Ops.PARAM, Ops.BUFFER, Ops.END, Ops.RANGE, Ops.SPECIAL}


def _kernel(name: str, chain: int) -> UOp:
    a = UOp(Ops.PARAM, (), ParamArg(0, dtypes.float32, 64))
    b = UOp(Ops.PARAM, (), ParamArg(1, dtypes.float32, 64))
    r = UOp(Ops.RANGE, (UOp.const(64),), (0, AxisType.LOOP))
    x = UOp(Ops.LOAD, (UOp(Ops.INDEX, (a, r)),))
    for k in range(chain):
        x = UOp(Ops.ADD, (x, UOp(Ops.CAST, (UOp.const(k),), dtypes.float32)))
    st = UOp(Ops.STORE, (UOp(Ops.INDEX, (b, r)), x))
    return UOp(Ops.SINK, (UOp(Ops.END, (st, r)),), KernelInfo(name))


def test_second_walk_checks_only_new_and_graph_wide_nodes(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    first = _kernel("k_first", 50)
    V.verify(first)
    seen: list[UOp] = []
    node = V._Walk._node

    def counted(self: V._Walk, n: UOp, fresh: bool) -> bool:
        seen.append(n)
        return node(self, n, fresh)
    monkeypatch.setattr(V._Walk, "_node", counted)
    second = _kernel("k_second", 50)          # a new SINK over the same body
    V.verify(second)
    order = second.toposort()
    assert len(order) > 150
    assert seen == [n for n in order if n.op in _WIDE]   # PARAMs, RANGE, END, the SINK
    assert len(seen) == 5


def test_skipped_nodes_keep_errors() -> None:
    # a graph-wide rule over nodes verified before still fails: two PARAMs of one slot
    ok = _kernel("k_ok", 3)
    V.verify(ok)
    a = UOp(Ops.PARAM, (), ParamArg(0, dtypes.float32, 64))
    dup = UOp(Ops.PARAM, (), ParamArg(0, dtypes.float32, 32))
    bad = UOp(Ops.SINK, (ok.src[0], dup), KernelInfo("k_bad"))
    assert a in ok.toposort()
    with pytest.raises(V.VerifyError, match="PARAM slot 0 is used by two PARAMs"):
        V.verify(bad)


def test_a_verified_sink_is_a_lookup_and_is_not_kept_alive(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """verify remembers a SINK whose walk passed (a second verify of it walks nothing), weakly:
    the memo (ids and weak references, what weakref.WeakSet did) drops it once it is freed."""
    import gc
    import weakref
    sink = _kernel("k_memo", 5)
    V.verify(sink)
    walks: list[UOp] = []
    run = V._Walk.run

    def counted(self: V._Walk, order: list[UOp]) -> None:
        walks.append(self.sink)
        run(self, order)
    monkeypatch.setattr(V._Walk, "run", counted)
    V.verify(sink)
    assert walks == []                          # remembered: no walk
    key = id(sink)
    assert key in V._CLEAN
    alive = weakref.ref(sink)
    del sink
    gc.collect()
    assert alive() is None                      # the memo kept no graph alive
    assert key not in V._CLEAN                  # and its entry went with it
    other = _kernel("k_memo2", 5)               # a SINK not verified yet is walked
    V.verify(other)
    assert len(walks) == 1
