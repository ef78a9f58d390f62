"""kcc/passes/slp_stores.py: stores of the slices of one vector, in lane order at
consecutive places of a kernel argument, become one store of the vector; anything else is left
as it was. The x86 objects of triu_int's unrolled nest (whose row loads slp packs 8 lanes
wide) are checked against the interpreter in tests/passes/test_unroll_tiny.py."""

from __future__ import annotations

from passes_support import param

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.slp_stores import merge_slice_stores
from kcc.passes.unroll_tiny import unroll_tiny
from kcc.targets.x86.arch import x86_desc

C = UOp.const
V4 = x86_desc("x86-64-v4")


def _int(k: int) -> UOp:
    return UOp(Ops.CAST, (C(k),), dtypes.int32)


def _graph(slices: list[tuple[int, int, int]], read_out: bool = False) -> list[UOp]:
    """Stores of lanes [lane, lane + n) of an 8-lane int32 load at out[at …], as
    (lane, n, at) triples; read_out: the kernel also loads out[0]."""
    out, x = param(0, dtypes.int32, 16), param(1, dtypes.int32, 16)
    v = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (x, _int(0), C(8))),))
    effects = []
    for lane, n, at in slices:
        val = UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (v, C(lane + j))) for j in range(n)))
        effects.append(UOp(Ops.STORE, (UOp(Ops.SHRINK, (out, _int(at), C(n))), val)))
    if read_out:
        y = UOp(Ops.LOAD, (UOp(Ops.INDEX, (out, _int(0))),))
        effects.append(UOp(Ops.STORE, (UOp(Ops.INDEX, (x, _int(9))), y)))
    from kcc.ir import KernelInfo
    return toposort([UOp(Ops.SINK, tuple(effects), KernelInfo("k"))])


def test_two_halves_in_lane_order_become_one_store() -> None:
    merged = merge_slice_stores(_graph([(0, 4, 2), (4, 4, 6)]), V4)
    stores = set(merged.values())
    assert len(merged) == 2 and len(stores) == 1
    st = stores.pop()
    assert st.src[0].src[1] == _int(2) and st.src[0].src[2] == C(8)
    assert st.src[1].op is Ops.LOAD and st.src[1].shape == (8,)


def test_anything_else_is_left_alone() -> None:
    assert not merge_slice_stores(_graph([(0, 4, 0), (4, 2, 4)]), V4)      # lanes 6, 7 unstored
    assert not merge_slice_stores(_graph([(4, 4, 0), (0, 4, 4)]), V4)      # halves swapped
    assert not merge_slice_stores(_graph([(0, 4, 0), (4, 4, 5)]), V4)      # a gap between
    assert not merge_slice_stores(_graph([(0, 4, 0), (4, 4, 4)], read_out=True), V4)
    assert not merge_slice_stores(_graph([(0, 8, 0)]), V4)                 # one store already


def test_triu_rows_are_stored_8_lanes_at_a_time() -> None:
    from test_unroll_tiny import TRIU
    g = simplify(lower_weak_dtypes(parse(TRIU, "triu.uop"), V4), V4)
    out = slp(unroll_tiny(g, V4), V4)
    assert [u.src[1].shape for u in toposort([out]) if u.op is Ops.STORE] == [(8,)] * 8
