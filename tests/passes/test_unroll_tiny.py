"""Tests of the full unrolling of tiny elementwise nests (kcc/passes/unroll_tiny.py): which
nests become straight-line code and which are left alone, and that the result computes what
the graph as written computes: the reference interpreter on the graph before and after the
pass (bit for bit), and the x86 object (x86-64-v3 and v4) against the interpreter."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unroll_tiny import unroll_tiny
from kcc.targets.x86.arch import x86_desc
from uop_texts import TRIU_TEXT
from x86_util import assert_same, compile_and_run, random_inputs, reference

# tinygrad's sort step (bench/tinygrad_sweep.py sort, E_2_2_2): 2 x 2 iterations, each two
# loads and two stores at addresses swapped within a row
SORT = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 8)
%1 = PARAM ParamArg(1, float32, 8)
%2 = CAST(2) int32
%3 = CAST(3) int32
%4 = CAST(4) int32
%5 = RANGE(%2) (0, WEAK)
%6 = SHL(%5, %2)
%7 = RANGE(%2, %5) (2, WEAK)
%8 = SUB(%6, %7)
%9 = ADD(%8, %3)
%10 = INDEX(%1, %9)
%11 = LOAD(%10)
%12 = MULACC(%5, %4, %7)
%13 = INDEX(%1, %12)
%14 = LOAD(%13)
%15 = ADD(%12, %2)
%16 = INDEX({out}, %15)
%17 = INDEX(%0, %12)
%18 = STORE(%16, %11)
%19 = STORE(%17, %14)
%20 = GROUP(%19, %18)
%21 = END(%20, %7)
%22 = END(%21, %5)
SINK(%22) KernelInfo(name="E_2_2_2")
"""

# a loop that widens (8 iterations of one float32 lane each: passes/widen.py's vectors)
WIDE = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 8)
%1 = PARAM ParamArg(1, float32, 8)
%2 = RANGE(8) (0, LOOP)
%3 = INDEX(%1, %2)
%4 = LOAD(%3)
%5 = ADD(%4, %4)
%6 = INDEX(%0, %2)
%7 = STORE(%6, %5)
%8 = END(%7, %2)
SINK(%8) KernelInfo(name="E_8")
"""

# tinygrad's triu_int E_8_2_4: 8 x 2 iterations, an int4 store of 4 loads each gated by a
# compare of the counters (`(4*j + 1 < i + 1) != true`): 585 nodes counted lane by lane, of
# which all but the loads, the STACK and the store fold to constants in each copy
TRIU = TRIU_TEXT

V4 = x86_desc("x86-64-v4")


def _ranges(g: UOp) -> int:
    return sum(1 for n in g.toposort() if n.op is Ops.RANGE)


def _unrolled(sink: UOp, budget: int = V4.tiny_unroll) -> UOp:
    desc = replace(V4, tiny_unroll=budget)
    g = simplify(lower_weak_dtypes(sink, desc), desc)
    u = unroll_tiny(g, desc)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, reference(u, args), reference(sink, args))
    return u


def test_x86_asks_for_it_and_other_targets_do_not() -> None:
    from kcc.targets.amd.desc import AMD
    assert V4.tiny_unroll > 0 and x86_desc("x86-64-v3").tiny_unroll > 0
    assert AMD.tiny_unroll == 0


def test_sort_nest_becomes_straight_line_code_at_constant_addresses() -> None:
    u = _unrolled(parse(SORT.format(out="%0"), "sort.uop"))
    assert _ranges(u) == 0
    stores = [n for n in u.toposort() if n.op is Ops.STORE]
    assert len(stores) == 8
    assert all(n.op is not Ops.INDEX or len(n.src) < 2 or n.src[1].op is Ops.CAST
               for n in u.toposort())       # every index folded to a constant


def test_a_nest_past_the_budget_is_left_alone() -> None:
    # its copies' 16 nodes that stay (8 loads, 8 stores) are past twice a budget of 4
    assert _ranges(_unrolled(parse(SORT.format(out="%0"), "sort.uop"), budget=4)) == 2
    assert _ranges(_unrolled(parse(SORT.format(out="%0"), "sort.uop"), budget=8)) == 0


def test_a_nest_over_the_budget_on_its_stores_is_not_analysed(monkeypatch) -> None:
    # the sort nest's 8 stores: over a budget of 6 (2 x 3) on them alone, so _nest leaves
    # it without the folding analysis; at 8 (2 x 4) it asks, and the loads put it over
    import kcc.passes.unroll_tiny as ut
    asked = []
    real = ut._folding
    monkeypatch.setattr(ut, "_folding", lambda order: asked.append(1) or real(order))
    monkeypatch.setattr(ut, "FOLD_CAP", 0)
    assert _ranges(_unrolled(parse(SORT.format(out="%0"), "sort.uop"), budget=3)) == 2
    assert not asked
    assert _ranges(_unrolled(parse(SORT.format(out="%0"), "sort.uop"), budget=4)) == 2
    assert asked


def test_a_nest_over_every_budget_on_one_store_is_not_walked(monkeypatch) -> None:
    # each of sort's 2 stores is made 4 times (its 2 x 2 iterations): over 2 (FOLD_CAP 0:
    # twice a budget of 1, _nest's and _folds' largest) before _nest walks the cone; at a
    # budget of 2 (4 is not over 4) _nest is asked
    import kcc.passes.unroll_tiny as ut
    asked = []
    real = ut._nest
    monkeypatch.setattr(ut, "_nest", lambda *a: asked.append(1) or real(*a))
    monkeypatch.setattr(ut, "FOLD_CAP", 0)
    assert _ranges(_unrolled(parse(SORT.format(out="%0"), "sort.uop"), budget=1)) == 2
    assert not asked
    assert _ranges(_unrolled(parse(SORT.format(out="%0"), "sort.uop"), budget=2)) == 2
    assert asked


def test_a_loop_over_budget_on_its_own_trips_is_refused_before_the_walk(monkeypatch) -> None:
    # _over_budget answers for _nest (this module's and unroll_inner's) without the cone's
    # walk: it may only refuse what the full count refuses, here at every budget around the
    # trips of WIDE's loop (a STORE as the END's body) and SORT's inner loop (a GROUP)
    import kcc.passes.unroll_inner as ui
    import kcc.passes.unroll_tiny as ut
    from kcc.passes.linearize import range_sets
    refused = []
    for text in (WIDE, SORT.format(out="%0")):
        g = lower_weak_dtypes(parse(text, "k.uop"))
        order = g.toposort()
        dep = range_sets(order)
        ends = [n for n in order if n.op is Ops.END]
        for budget in range(12):
            for end in ends:
                early = ut._over_budget(end, dep, budget)
                refused.append(early)
                with monkeypatch.context() as m:   # the full count, without the early answer
                    m.setattr(ut, "_over_budget", lambda *a: False)
                    m.setattr(ui, "_over_budget", lambda *a: False)
                    nest = ut._nest if not dep[end] else ui._nest
                    full = nest(end, dep, budget)
                assert not (early and full is not None), (text[:40], budget)
    assert any(refused) and not all(refused)
    # WIDE's 8 trips: over a budget of 7, not of 8
    g = lower_weak_dtypes(parse(WIDE, "w.uop"))
    dep = range_sets(g.toposort())
    end = g.src[0]
    assert ut._over_budget(end, dep, 7) and not ut._over_budget(end, dep, 8)


def test_index_arithmetic_and_gates_of_counters_are_not_counted(monkeypatch) -> None:
    # triu's copies keep 64 loads, 16 four-lane STACKs and 16 stores: 144 nodes, at most
    # twice a budget of 72; its gates fold to constants in each copy (FOLD_CAP 0: the
    # count of copies as written alone, not of the folded copies `_folds` also tries)
    import kcc.passes.unroll_tiny as ut
    monkeypatch.setattr(ut, "FOLD_CAP", 0)
    u = _unrolled(parse(TRIU, "triu.uop"), budget=72)
    assert _ranges(u) == 0
    assert not [n for n in u.toposort() if n.op in (Ops.CMPLT, Ops.CMPNE, Ops.MULACC)]
    assert _ranges(_unrolled(parse(TRIU, "triu.uop"), budget=71)) == 2


def test_folding_nodes_are_those_of_constants_and_counters() -> None:
    from kcc.passes.unroll_tiny import _folding
    g = simplify(lower_weak_dtypes(parse(TRIU, "triu.uop"), V4), V4)
    order = g.toposort()
    folds = _folding(order)
    assert all(n.op is not Ops.RANGE or n in folds for n in order)
    assert any(n.op is Ops.CMPLT for n in folds) and any(n.op is Ops.MULACC for n in folds)
    assert not any(n.op in (Ops.LOAD, Ops.INDEX, Ops.STACK, Ops.STORE) for n in folds)


def test_a_nest_that_reads_what_it_stores_is_left_alone() -> None:
    # iteration k+1 reads what iteration k stored: the copies would lose that order
    u = _unrolled(parse(SORT.format(out="%1"), "sort.uop"))
    assert _ranges(u) == 2


def test_a_nest_that_stores_one_element_twice_is_left_alone() -> None:
    text = SORT.format(out="%0").replace("%17 = INDEX(%0, %12)", "%17 = INDEX(%0, %2)")
    assert _ranges(_unrolled(parse(text, "sort.uop"))) == 2


def test_a_loop_that_widens_is_left_alone() -> None:
    assert _ranges(_unrolled(parse(WIDE, "wide.uop"))) == 1


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_unrolled_sort_runs_like_the_interpreter(arch: str) -> None:
    sink = parse(SORT.format(out="%0"), "sort.uop")
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def triangle(n: int = 12, stride: int = 8) -> str:
    """cumsum_5000's r_20_20 at n: out[i] = Σ_k (x[stride*(i - k) + stride - 1] where
    i - k >= 0, else 0) for k = n-1 … 0, in that order: n - 1 loads gated by `k - 1 < i`
    and one ungated (k = 0), a triangle of loads."""
    size = n * stride
    t = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {n})",
         f"%x = PARAM ParamArg(1, float32, {size})", "%z = CAST(0.0) float32",
         f"%i = RANGE({n}) (0, WEAK)"]
    terms = []
    for k in range(n - 1, 0, -1):
        t += [f"%o{k} = MULACC(%i, {stride}, {stride - 1 - k * stride})",
              f"%p{k} = INDEX(%x, %o{k})", f"%g{k} = CMPLT({k - 1}, %i)",
              f"%l{k} = LOAD(%p{k}, %z, %g{k})"]
        terms.append(f"%l{k}")
    t += [f"%o0 = MULACC(%i, {stride}, {stride - 1})", "%p0 = INDEX(%x, %o0)",
          "%l0 = LOAD(%p0)"]
    terms.append("%l0")
    acc = terms[0]
    for j, s in enumerate(terms[1:]):
        t.append(f"%a{j} = ADD({acc}, {s})")
        acc = f"%a{j}"
    t += ["%po = INDEX(%out, %i)", f"%st = STORE(%po, {acc})", "%e = END(%st, %i)",
          'SINK(%e) KernelInfo(name="triangle")']
    return "\n".join(t) + "\n"


def test_a_nest_whose_gates_fold_is_counted_folded() -> None:
    """12 copies of 11 gated loads and 11 adds are ~300 nodes, past the budget; folded
    (every gate a constant in every copy, the false ones' zeros summed away, equal prefixes
    one node) they are 12 loads, 12 stores and two chains of 11 adds: copies 0 … 10 start
    with a zero and share one (copy i's sum is copy i-1's plus one element), copy 11 (no
    gate false) its own. Unrolled, no gate left."""
    u = _unrolled(parse(triangle(), "tri.uop"))
    assert _ranges(u) == 0
    loads = [n for n in u.toposort() if n.op is Ops.LOAD]
    assert len(loads) == 12 and all(len(n.src) == 1 for n in loads)
    assert sum(1 for n in u.toposort() if n.op is Ops.ADD and n.dtype.is_float) == 22


def test_a_folding_nest_past_the_budget_or_the_cap_is_left_alone(monkeypatch) -> None:
    import kcc.passes.unroll_tiny as ut
    tri = parse(triangle(), "tri.uop")
    assert _ranges(_unrolled(tri, budget=40)) == 1          # 46 nodes folded
    monkeypatch.setattr(ut, "FOLD_CAP", 2)                  # 288 as copies > 2 * 96
    assert _ranges(_unrolled(tri)) == 1


def test_a_folding_nest_over_the_budget_on_its_stores_is_not_expanded(monkeypatch) -> None:
    # the triangle's 12 stores (one a copy, disjoint elements) stay 12 nodes folded: over a
    # budget of 11 without the expansion, which a budget of 40 makes (46 nodes folded > 40)
    import kcc.passes.unroll_tiny as ut
    tri = parse(triangle(), "tri.uop")
    expanded = []
    real = ut._expand
    monkeypatch.setattr(ut, "_expand", lambda *a: expanded.append(1) or real(*a))
    assert _ranges(_unrolled(tri, budget=11)) == 1
    assert not expanded
    assert _ranges(_unrolled(tri, budget=40)) == 1
    assert expanded
    g = lower_weak_dtypes(tri)
    from kcc.passes.linearize import range_sets
    assert ut._stores_at_least(g.toposort(), range_sets(g.toposort())) == 12


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_folded_triangle_runs_like_the_interpreter(arch: str) -> None:
    sink = parse(triangle(), "tri.uop")
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_unrolled_triu_runs_like_the_interpreter(arch: str) -> None:
    sink = parse(TRIU, "triu.uop")
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_a_loop_that_widens_after_slp_is_left_alone() -> None:
    # isnan_isinf's 4 bool lane stores an iteration: one bool vector store after slp, and
    # then the loop widens to 16 lanes (widened: 3.9 ns; its 5 unrolled copies: 4.3)
    from test_slp_bool_stores import ISINF
    assert _ranges(_unrolled(parse(ISINF, "isinf.uop"))) == 1


# tinygrad's max_nan r_4_8 (bench/tinygrad_sweep.py): 4 rows of 8, each a chain of 7 MAXes of
# two float4 loads' lanes; widen splits those loads into lanes but widens no loop
MAX_ROWS = """# kcc-uop 1
%1 = CAST(4) int32
%2 = PARAM ParamArg(0, float32, 4)
%5 = PARAM ParamArg(1, float32, 32)
%13 = CAST(3) int32
%15 = CAST(8) int32
%16 = RANGE(%1) (1, WEAK)
%17 = SHL(%16, %13)
%18 = SHRINK(%5, %17, %1)
%19 = LOAD(%18)
%20 = MULACC(%16, %15, %1)
%21 = SHRINK(%5, %20, %1)
%22 = LOAD(%21)
%23 = INDEX(%2, %16)
""" + "".join(f"%{24 + k} = INDEX(%{19 if k < 4 else 22}, {k % 4})\n" for k in range(8)) \
    + "%32 = MAX(%24, %25)\n" \
    + "".join(f"%{32 + k} = MAX(%{31 + k}, %{25 + k})\n" for k in range(1, 7)) + """\
%39 = STORE(%23, %38)
%40 = END(%39, %16)
SINK(%40) KernelInfo(name="r_4_8")
"""


def test_a_loop_whose_loads_widen_splits_but_that_does_not_widen_is_unrolled() -> None:
    # (main took any change widen made, here its lane split, for a widened loop: 5.5 ns a
    # call as a loop against clang's 4.9; unrolled, slp transposes the rows: 2.8)
    assert _ranges(_unrolled(parse(MAX_ROWS, "max_rows.uop"))) == 0


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_unrolled_max_rows_with_nans_run_like_the_interpreter(arch: str) -> None:
    sink = parse(MAX_ROWS, "max_rows.uop")
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        x = args[1]
        x[seed::3] = float("nan")           # MAX's NaN order: which operand a NaN wins in
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
