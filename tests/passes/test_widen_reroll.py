"""Tests of the rerolling of loops whose body is c shifted copies of one scalar computation
(kcc/passes/widen_reroll.py, run by kcc/passes/widen.py before widen_lanes.py): which loops
become one-lane loops over N*c elements (then widened, with a tail loop) and which are left
alone. The oracle is the reference interpreter, on the graph before and after the pass (bit
for bit) and on the x86 object compiled with the pass in the pipeline."""

from __future__ import annotations

import pytest
from widen_util import range_bounds as _bounds
from widen_util import widen_check as _check
from widen_util import widen_prep as _prep

from kcc.ir import Ops
from kcc.ir.consts import const_int
from x86_util import ARCHS, HAS_V4


# tinygrad's upcast by 3 (E_8547_3): each iteration computes 3 adjacent elements
HEAD = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, {size})
%a = PARAM ParamArg(1, float32, {size})
%b = PARAM ParamArg(2, float32, {size})
%i = RANGE({n}) (0, WEAK)
%p0 = MUL(%i, 3)
%p1 = MULACC(%i, 3, 1)
%p2 = MULACC(%i, 3, 2)
"""
LANE = """%xa{j} = INDEX(%a, %p{j})
%x{j} = LOAD(%xa{j})
%ya{j} = INDEX(%b, %p{j})
%y{j} = LOAD(%ya{j})
%m{j} = MUL(%x{j}, %y{j})
%r{j} = ADD(%m{j}, 1.5)
%oa{j} = INDEX(%out, %p{j})
%s{j} = STORE(%oa{j}, %r{j})
"""
TAIL = """%g = GROUP(%s0, %s1, %s2)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="E_n_3")
"""


def _text(n: int = 11, lane1: str = "") -> str:
    lanes = [LANE.format(j=j) for j in range(3)]
    if lane1:
        lanes[1] = lane1
    return HEAD.format(n=n, size=3 * n) + "".join(lanes) + TAIL


@pytest.mark.parametrize("arch", ARCHS)
def test_three_copies_become_one_widened_loop_and_a_last_block(arch: str) -> None:
    # 33 elements: v3 4 iterations of 8 lanes, v4 2 of 16, then elements 29 … 32 as one more
    # block of 4 lanes (the narrowest float32 vector over the last one, overlapping the
    # loop's last: the output is not loaded; widen_stride.py `_narrow`), no tail
    w = _check(_text(), arch)
    assert _bounds(w) == ([4] if arch == "x86-64-v3" else [2])
    assert {u.shape for u in w.toposort() if u.op is Ops.MUL and u.dtype.is_float} \
        == {(8,) if arch == "x86-64-v3" else (16,), (4,)}


@pytest.mark.parametrize("lane1, why", [
    (LANE.format(j=1).replace("ADD(%m1, 1.5)", "SUB(%m1, 1.5)"), "another op"),
    (LANE.format(j=1).replace("ADD(%m1, 1.5)", "ADD(%m1, 2.5)"), "another constant"),
    (LANE.format(j=1).replace("INDEX(%a, %p1)", "INDEX(%a, %p0)"), "lane 0's element"),
    (LANE.format(j=1).replace("INDEX(%a, %p1)", "INDEX(%out, %p1)"), "reads the output"),
    (LANE.format(j=1).replace("%r1 = ADD(%m1, 1.5)", "%c1 = CAST(%i) float32\n"
                              "%r1 = ADD(%m1, %c1)"), "uses the counter"),
])
def test_lanes_that_are_not_shifted_copies_are_left_alone(lane1: str, why: str) -> None:
    text = _text(lane1=lane1)
    _, g, w = _prep(text)
    assert w is g, why
    _check(text)


def test_store_offsets_with_a_gap_are_left_alone() -> None:
    # lane 2 stores 3 ahead of lane 0 (offsets 0, 1, 3): not c adjacent elements
    text = _text().replace("%p2 = MULACC(%i, 3, 2)", "%p2 = MULACC(%i, 3, 3)")
    text = text.replace("float32, 33)", "float32, 36)")
    _, g, w = _prep(text)
    assert w is g
    _check(text)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 11, 16, 21, 43])
def test_rerolled_loops_of_every_size(arch: str, n: int) -> None:
    # 3n elements: the widened blocks and the tail cover each once
    w = _check(_text(n=n), arch)
    b = _bounds(w)
    assert len(b) <= 2 and (b == [n] or b[0] < n)


# tinygrad's gather E_333_5: c = 5 elements an iteration, each `x[W*i + idx[5*i + o]]` gated
# by `0 <= idx[5*i + o] < W` (a computed place and the counter as the row, module docstring)
def _gather_text(n: int, w: int = 7, lane1: str = "") -> str:
    head = f"""# kcc-uop 1
%out = PARAM ParamArg(0, float32, {5 * n})
%idx = PARAM ParamArg(1, int32, {5 * n})
%x = PARAM ParamArg(2, float32, {w * n})
%i = RANGE({n}) (0, WEAK)
"""
    lane = """%p{j} = MULACC(%i, 5, {j})
%ia{j} = INDEX(%idx, %p{j})
%v{j} = LOAD(%ia{j})
%q{j} = MULACC(%i, {w}, %v{j})
%xa{j} = INDEX(%x, %q{j})
%lt{j} = CMPLT(%v{j}, {w})
%gt{j} = CMPLT(-1, %v{j})
%g{j} = AND(%gt{j}, %lt{j})
%l{j} = LOAD(%xa{j}, 0.0, %g{j})
%oa{j} = INDEX(%out, %p{j})
%s{j} = STORE(%oa{j}, %l{j})
"""
    lanes = [lane.format(j=j, w=w) for j in range(5)]
    if lane1:
        lanes[1] = lane1
    tail = """%grp = GROUP(%s0, %s1, %s2, %s3, %s4)
%e = END(%grp, %i)
SINK(%e) KernelInfo(name="E_n_5")
"""
    return head + "".join(lanes) + tail


@pytest.mark.parametrize("n", [2, 13, 333])
def test_a_gather_at_loaded_indexes_is_rerolled_with_its_row(n: int) -> None:
    # x86-64-v4 (VGATHERDPS {k}): 5n elements in one loop of 8 lanes (and its last block), the
    # row i = t // 5 a multiply and a shift of the new counter (no CDIV), the gathered loads
    # k scalar loads at an index vector's lanes; results bit for bit the interpreter's
    text = _gather_text(n)
    _, g, w = _prep(text, "x86-64-v4")
    assert w is not g
    nodes = w.toposort()
    assert [const_int(u.src[0]) for u in nodes if u.op is Ops.RANGE] == [5 * n // 8] \
        if 5 * n > 8 else True
    assert sum(u.op is Ops.STORE for u in nodes) == (1 if 5 * n % 8 == 0 else 2)
    assert not any(u.op is Ops.CDIV for u in nodes) and any(u.op is Ops.SHR for u in nodes)
    assert any(u.op is Ops.STACK and len(u.src) == 8 and all(s.op is Ops.LOAD for s in u.src)
               for u in nodes)
    if HAS_V4:
        for seed in (0, 1, 3):
            _check(text, "x86-64-v4", seed=seed)


@pytest.mark.parametrize("n", [2, 333])
def test_a_gather_without_a_vector_gather_is_left_alone(n: int) -> None:
    # x86-64-v3 selects no index-vector gather: a rerolled loop left scalar gains nothing
    text = _gather_text(n)
    _, g, w = _prep(text)
    assert w is g
    _check(text)


def test_gather_lanes_with_another_row_length_are_left_alone() -> None:
    # lane 1 reads x[8*i + idx[…]] where the others read x[7*i + …]: not shifted copies
    lane1 = _gather_text(13).split("%p1 = ", 1)[1].split("%oa1", 1)[0]
    lane1 = "%p1 = " + lane1.replace("MULACC(%i, 7, %v1)", "MULACC(%i, 8, %v1)") \
        + "%oa1 = INDEX(%out, %p1)\n%s1 = STORE(%oa1, %l1)\n"
    text = _gather_text(13, lane1=lane1).replace("float32, 91)", "float32, 104)")
    _, g, w = _prep(text)
    assert w is g
    _check(text)


@pytest.mark.parametrize("c", [3, 5, 6, 7, 12, 77])
@pytest.mark.parametrize("total", [1, 7, 1665, 25641, 40000])
def test_row_is_the_exact_quotient_over_the_whole_range(c: int, total: int) -> None:
    # t // c for every 0 <= t < total, the product t*m never past int32's sign bit
    import numpy as np

    from kcc.ir.consts import const_int, strong_int
    from kcc.ir.dtype import dtypes
    from kcc.passes.widen_reroll import _row
    row = _row(strong_int(0, dtypes.int32), c, total)
    assert row is not None and row.op is Ops.SHR and row.src[0].op is Ops.MUL
    s, m = const_int(row.src[1]), const_int(row.src[0].src[1])
    ts = np.arange(total, dtype=np.int64)
    assert s is not None and m is not None and int(ts[-1]) * m < (1 << 31)
    assert ((ts * m) >> s == ts // c).all()


def test_row_of_a_range_too_long_for_a_multiply_is_refused() -> None:
    from kcc.ir.consts import strong_int
    from kcc.ir.dtype import dtypes
    from kcc.passes.widen_reroll import _row
    assert _row(strong_int(0, dtypes.int32), 5, 1 << 30) is None
    assert _row(strong_int(0, dtypes.int32), 8, 1 << 30) is not None     # a shift


# tinygrad's int16 E_64_4: an int4 load a step, each lane cast to int16 and multiplied by a
# constant, stored at 4*i + o (int16 x 4 has no vector MUL on x86, so slp leaves the lanes)
VECTOR_LOAD = """# kcc-uop 1
%o = PARAM ParamArg(0, int16, 256)
%a = PARAM ParamArg(1, int32, 256)
%k = CAST(300) int16
%i = RANGE(64) (0, WEAK)
%p = SHL(%i, 2)
%pa = SHRINK(%a, %p, 4)
%v = LOAD(%pa)
""" + "".join(f"""%x{j} = INDEX(%v, {j})
%c{j} = CAST(%x{j}) int16
%m{j} = MUL(%c{j}, %k)
%q{j} = ADD(%p, {j})
%op{j} = INDEX(%o, %q{j})
%st{j} = STORE(%op{j}, %m{j})
""" for j in range(4)) + """%g = GROUP(%st0, %st1, %st2, %st3)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="vload")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_lanes_of_a_short_vector_load_are_split_then_rerolled(arch: str) -> None:
    # the load's lanes split into scalar loads (widen_split.py), then the 4 shifted copies
    # rerolled to one loop of 256 and widened: int16 MULs of 8 or more lanes, none scalar
    w = _check(VECTOR_LOAD, arch)
    muls = {u.shape for u in w.toposort() if u.op is Ops.MUL and u.dtype.itemsize == 2}
    assert muls and all(s and s[0] >= 8 for s in muls), muls


def _deep_text(depth: int, n: int = 11) -> str:
    """E_n_3 whose three lanes each double their load `depth` times: ADD(x, x) chains, a
    graph of `depth` nodes a lane whose unshared tree has 2**depth leaves."""
    lines = [HEAD.format(n=n, size=3 * n)]
    for j in range(3):
        lines.append(f"%xa{j} = INDEX(%a, %p{j})\n%v{j}_0 = LOAD(%xa{j})\n")
        lines += [f"%v{j}_{k + 1} = ADD(%v{j}_{k}, %v{j}_{k})\n" for k in range(depth)]
        lines.append(f"%oa{j} = INDEX(%out, %p{j})\n%s{j} = STORE(%oa{j}, %v{j}_{depth})\n")
    return "".join(lines) + TAIL


def test_lane_forms_of_a_shared_graph_compare_in_linear_time() -> None:
    """Regression (a fuzzed kernel whose compile never ended): each lane's form was a nested
    tuple compared by value, exponential in the depth of a shared graph. Forms are interned
    ids now: one per distinct node form, equal for shifted copies."""
    from kcc.frontend.parser import parse
    from kcc.ir.uop import toposort
    from kcc.passes.linearize import range_sets
    from kcc.passes.widen_lanes import LaneLoop
    from kcc.passes.widen_reroll import _sig
    depth = 80
    sink = parse(_deep_text(depth))
    e = next(u for u in sink.toposort() if u.op is Ops.END)
    r = e.src[1]
    dep = range_sets(toposort([e]))
    lp = LaneLoop(r, e, [u for u in toposort([e.src[0]]) if r in dep[u]], dep)
    ids: dict[tuple, int] = {}
    # the GROUP's stores are lanes 0, 1, 2 (places 3i, 3i + 1, 3i + 2)
    sigs = [_sig(lp, 3, s.src[1], o, ids, rows=True) for o, s in enumerate(e.src[0].src)]
    assert all(isinstance(x, int) for x in sigs) and len(set(sigs)) == 1
    assert len(ids) <= depth + 2            # one form a node of lane 0, the rest the same


@pytest.mark.parametrize("arch", ARCHS)
def test_deep_shared_lanes_compile_and_match(arch: str) -> None:
    _check(_deep_text(40), arch)
