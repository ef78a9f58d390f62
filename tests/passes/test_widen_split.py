"""Tests of short vector loads split lane by lane for widening (kcc/passes/widen_split.py, run
by kcc/passes/widen.py): tinygrad's 2x2 max/avg pooling reads each window row as one 2-lane
load and takes its lanes apart, one output element an iteration. The split loop is widened by
widen_lanes.py: the window rows of 4 iterations are two 4-element loads per row and one
VSHUFPS per lane (x86 `stride2` at 4 lanes), and a loop of exactly 4 iterations is one 4-lane
copy of its body (no loop of one iteration). The oracle is the reference interpreter, on the
graph before and after the pass (bit for bit; it raises on an element outside a buffer) and
on the compiled x86 object; the source buffer ends at the last element the kernel reads."""

from __future__ import annotations

import pytest
from widen_util import range_bounds as _bounds
from widen_util import widen_check as _check
from widen_util import widen_prep as _prep

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.linearize import range_sets
from kcc.passes.widen_split import REFUSED, not_scalar, split_lane_loads
from x86_util import HAS_V4


# maxpool 2x2 stride 2 over {rows} x {2n} {dt}: out[r*n + i] = max of the window at
# in[2n*2r + 2i + {{0, 1, 2n, 2n+1}}]; rows of 2n elements (the window's second row 2n after)
POOL = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, {osize})
%a = PARAM ParamArg(1, {dt}, {asize})
%r = RANGE({rows}) (2, WEAK)
%i = RANGE({n}, %r) (4, WEAK)
%i2 = SHL(%i, 1)
%base = MULACC(%r, {rstep}, %i2)
%base2 = ADD(%base, {n2})
%p0 = SHRINK(%a, %base, 2)
%v0 = LOAD(%p0)
%p1 = SHRINK(%a, %base2, 2)
%v1 = LOAD(%p1)
%x0 = INDEX(%v0, 0)
%x1 = INDEX(%v0, 1)
%y0 = INDEX(%v1, 0)
%y1 = INDEX(%v1, 1)
%m0 = {op}(%x0, %x1)
%m1 = {op}(%m0, %y0)
%m2 = {op}(%m1, %y1)
%o = MULACC(%r, {n}, %i)
%op = INDEX(%out, %o)
%st = STORE(%op, %m2)
%e = END(%st, %i)
%e2 = END(%e, %r)
SINK(%e2) KernelInfo(name="pool")
"""


def _text(n: int = 4, rows: int = 16, dt: str = "float32", op: str = "MAX") -> str:
    return POOL.format(n=n, rows=rows, dt=dt, op=op, n2=2 * n, rstep=4 * n,
                       osize=n * rows, asize=4 * n * rows)


def _vector_loads(g) -> list:
    return [u for u in g.toposort() if u.op is Ops.LOAD and u.shape]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("op", ["MAX", "ADD"])
def test_pool_window_rows_are_two_loads_a_row(arch: str, op: str) -> None:
    if arch == "x86-64-v4" and not HAS_V4:
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects)")
    w = _check(_text(op=op), arch)
    # the row loop of 4 is gone (one 4-lane copy), the outer loop stays
    assert _bounds(w) == [16]
    loads = _vector_loads(w)
    # each window row: the lanes 0 and 1 share two 4-element loads from the row's start
    assert len(loads) == 4 and {u.shape for u in loads} == {(4,)}
    stores = [u for u in w.toposort() if u.op is Ops.STORE]
    assert len(stores) == 1 and stores[0].src[1].shape == (4,)


@pytest.mark.parametrize("n", [9, 18])
def test_int32_rows_widened_with_a_last_block(n: int) -> None:
    w = _check(_text(n=n, rows=4, dt="int32"), "x86-64-v4" if HAS_V4 else "x86-64-v3")
    assert all(u.shape == (4,) for u in _vector_loads(w)) and _vector_loads(w)


def test_split_is_kept_only_when_the_loop_widens() -> None:
    # float16 has no 4-lane stride-2 shuffle: the loop stays as written (2-lane loads)
    _, g, w = _prep(_text(dt="float16"), "x86-64-v3")
    assert w is g


def _cut(text: str):
    sink = parse(text, "k.uop")
    order = toposort([sink])
    dep = range_sets(order)
    inner = next(u for u in order if u.op is Ops.END)
    r = inner.src[1]
    return split_lane_loads(r, inner, [u for u in toposort([inner.src[0]]) if r in dep[u]])


def test_split_records_each_lane_and_its_vector_width() -> None:
    cut = _cut(_text())
    assert cut is not None
    _, region, _, windows = cut
    assert not any(u.op is Ops.LOAD and u.shape for u in region)
    assert sorted(windows.values()) == [(0, 2), (0, 2), (1, 2), (1, 2)]


def test_a_vector_read_whole_is_not_split() -> None:
    # the second row's load also feeds a vector op: it stays one load, the first is split
    text = _text().replace("%m2 = MAX(%m1, %y1)",
                           "%vv = MAX(%v1, %v1)\n%z = INDEX(%vv, 1)\n%m3 = MAX(%m1, %z)\n"
                           "%m2 = MAX(%m3, %y1)")
    cut = _cut(text)
    assert cut is not None
    _, region, _, windows = cut
    assert [u.shape for u in region if u.op is Ops.LOAD and u.shape] == [(2,)]
    assert sorted(windows.values()) == [(0, 2), (1, 2)]


def test_one_block_folds_its_zero_counter() -> None:
    # the row loop of 4 is one block whose counter is 0: after the pipeline's simplify that
    # follows widen, its index sums hold no 0 operand (an `add r, 0` or a multiply by 0 in
    # every block otherwise; simplify's int_identity and mulacc_int) but a MULACC's zero
    # addend, which x86 selects as the IMUL alone
    _, _, w = _prep(_text())
    from kcc.ir.consts import const_int
    from kcc.passes.simplify import simplify
    w = simplify(w)
    zero = [u for u in w.toposort() if u.op in (Ops.ADD, Ops.MUL, Ops.MULACC, Ops.SHL)
            and u.dtype is not None and u.dtype.is_int and not u.shape
            and any(const_int(s) == 0 for s in u.src[:2])]
    assert not zero



def _cut_refusing(text: str, refuse):
    sink = parse(text, "k.uop")
    order = toposort([sink])
    dep = range_sets(order)
    inner = next(u for u in order if u.op is Ops.END)
    r = inner.src[1]
    return split_lane_loads(r, inner, [u for u in toposort([inner.src[0]]) if r in dep[u]],
                            refuse)


def _kept_vector_text() -> str:
    # the vector MAX of the second row stays as it is after the split
    return _text().replace("%m2 = MAX(%m1, %y1)",
                           "%vv = MAX(%v1, %v1)\n%z = INDEX(%vv, 1)\n%m3 = MAX(%m1, %z)\n"
                           "%m2 = MAX(%m3, %y1)")


def test_a_split_refused_is_the_split_the_test_fails_on() -> None:
    # a loop of scalars once split: refused by nothing, the same split
    cut, only = _cut(_text()), _cut_refusing(_text(), not_scalar)
    assert only and only[0] is cut[0] and only[1] == cut[1] and only[3] == cut[3]
    assert not any(not_scalar(u) for u in only[1] if u is not only[0].src[1])
    # the split loop keeps a vector: refused, and the split made anyway holds that vector
    cut = _cut(_kept_vector_text())
    assert cut and any(not_scalar(u) for u in cut[1] if u is not cut[0].src[1])
    assert _cut_refusing(_kept_vector_text(), not_scalar) == REFUSED


def test_a_vector_only_split_lanes_read_goes_with_the_split() -> None:
    # a vector built from split lanes reads them: the split rebuilds it, so it is not kept
    # as it is, and the split is made (the loop's own check then decides)
    text = _text().replace("%x0 = INDEX(%v0, 0)\n%x1 = INDEX(%v0, 1)",
                           "%x0 = INDEX(%v0, 0)\n%x1 = INDEX(%v0, 1)\n%w = STACK(%x0, %x1)\n"
                           "%w0 = INDEX(%w, 0)").replace("%m0 = MAX(%x0, %x1)",
                                                         "%m0 = MAX(%w0, %x1)")
    cut, only = _cut(text), _cut_refusing(text, not_scalar)
    assert cut and only and only[0] is cut[0]


def test_a_float_accumulator_refuses_the_reroll_split() -> None:
    # reroll_reduction refuses the split of a loop whose REG accumulator is a float: the
    # split loop's ReduceLoop.find fails on that AFTER, as it does on the split made anyway
    from kcc.passes.widen_reduce import ReduceLoop
    from kcc.passes.widen_reroll_reduce import _no_accumulator
    text = _text(op="ADD").replace("%e = END(%st, %i)",
                                   "%acc = AFTER(%reg, %i)\n%ap = INDEX(%acc, 0)\n"
                                   "%al = LOAD(%ap)\n%au = ADD(%al, %m2)\n"
                                   "%st2 = STORE(%ap, %au)\n%g = GROUP(%st, %st2)\n"
                                   "%e = END(%g, %i)").replace(
        "%out = PARAM", "%reg = BUFFER ParamArg(0, float32, 1, addrspace=REG)\n%out = PARAM")
    sink = parse(text, "k.uop")
    order = toposort([sink])
    dep = range_sets(order)
    inner = next(u for u in order if u.op is Ops.END)
    r = inner.src[1]
    region = [u for u in toposort([inner.src[0]]) if r in dep[u]]
    assert any(_no_accumulator(u) for u in region)
    cut = split_lane_loads(r, inner, region)
    assert cut and not ReduceLoop(r, cut[0], cut[1], cut[2], 1).find()
    assert split_lane_loads(r, inner, region, _no_accumulator) == REFUSED


def test_callers_sharing_a_dict_get_the_answers_each_gets_alone() -> None:
    # widen.py asks with not_scalar, then widen_reroll_reduce.py with _no_accumulator, the
    # same loop and one shared dict: the loads and the kept nodes are found once, and each
    # answer is the one that caller gets without the dict (a split made, or REFUSED)
    from kcc.passes.widen_reroll_reduce import _no_accumulator
    for text in (_text(), _kept_vector_text()):
        sink = parse(text, "k.uop")
        order = toposort([sink])
        dep = range_sets(order)
        inner = next(u for u in order if u.op is Ops.END)
        r = inner.src[1]
        region = [u for u in toposort([inner.src[0]]) if r in dep[u]]
        shared: dict = {}
        for refuse in (not_scalar, _no_accumulator, None):
            alone = split_lane_loads(r, inner, region, refuse)
            got = split_lane_loads(r, inner, region, refuse, shared)
            assert (got == REFUSED) == (alone == REFUSED)
            if alone:
                assert got[0] is alone[0] and got[1] == alone[1] and got[3] == alone[3]
        assert "kept" in shared and "split" in shared
    assert _cut_refusing(_kept_vector_text(), not_scalar) == REFUSED
