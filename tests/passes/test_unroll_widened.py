"""Full unrolling of short widened loops (kcc/passes/unroll_widened.py, in the pipeline's
widen step): which loops become straight-line blocks at constant places and which stay loops
(widen alone keeps them, as its own tests expect), and that the x86 object (x86-64-v3 and
v4) computes what the reference interpreter does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.consts import const_int
from kcc.ir.uop import toposort
from kcc.passes.divconst import div_const
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.unroll import unroll
from kcc.passes.unroll_widened import widen_and_unroll
from kcc.passes.widen import widen
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference


def _ew(n: int, op: str = "MUL(%x, 65537)", dt: str = "int32") -> str:
    """out[i] = f(x[i]) for i < n (tinygrad's i32_mul_wrap E_333 at n = 333)."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {n})
%a = PARAM ParamArg(1, {dt}, {n})
%r = RANGE({n}) (0, LOOP)
%p = INDEX(%a, %r)
%x = LOAD(%p)
%m = {op}
%d = INDEX(%o, %r)
%s = STORE(%d, %m)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="ew")
"""


# out[i] = out[i] + x[i]: the loop loads what it stores
INPLACE = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 64)
%a = PARAM ParamArg(1, float32, 64)
%r = RANGE(64) (0, LOOP)
%q = INDEX(%o, %r)
%y = LOAD(%q)
%p = INDEX(%a, %r)
%x = LOAD(%p)
%m = ADD(%y, %x)
%s = STORE(%q, %m)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="inplace")
"""


def _widened(text: str, desc=None):
    """The graph after the pipeline's widen step (widen, then unroll_widened)."""
    desc = desc or x86_desc("x86-64-v3")
    g = simplify(lower_weak_dtypes(parse(text)), desc)
    return widen_and_unroll(slp(div_const(unroll(g, desc), desc), desc), desc)


def _ranges(g) -> int:
    return sum(u.op is Ops.RANGE for u in toposort([g]))


def _stores(g) -> list:
    return [u for u in toposort([g]) if u.op is Ops.STORE]


def test_a_short_widened_loop_is_straight_line_blocks() -> None:
    g = _widened(_ew(333))          # 41 blocks of 8 and an overlapping last one
    assert _ranges(g) == 0
    stores = _stores(g)
    assert len(stores) == 42 and all(u.src[1].shape == (8,) for u in stores)


def test_widen_alone_keeps_its_loop() -> None:
    desc = x86_desc("x86-64-v3")
    g = simplify(lower_weak_dtypes(parse(_ew(333))), desc)
    assert _ranges(widen(slp(unroll(g, desc), desc), desc)) == 1


def test_a_long_loop_stays_a_loop() -> None:
    assert _ranges(_widened(_ew(4096))) == 1


def test_a_loop_that_loads_what_it_stores_stays_a_loop() -> None:
    assert _ranges(_widened(INPLACE)) == 1


def test_no_budget_no_unrolling() -> None:
    desc = replace(x86_desc("x86-64-v3"), tiny_unroll=0)
    assert _ranges(_widened(_ew(333), desc)) == 1


def test_heavy_ops_count_as_sequences() -> None:
    # 16 blocks of 8: a MUL a block is unrolled, an EXP2 (a polynomial a lane once
    # decomposed: unroll_tiny's _HEAVY) a block stays a loop
    assert _ranges(_widened(_ew(128, "MUL(%x, 3.0)", "float32"))) == 0
    assert _ranges(_widened(_ew(128, "EXP2(%x)", "float32"))) == 1


# out[i] = (3i) % 7: a MULHI (div_const) of the counter alone, a constant in every copy
ARANGE = """# kcc-uop 1
%o = PARAM ParamArg(0, int32, 100)
%r = RANGE(100) (0, LOOP)
%m = MUL(%r, 3)
%v = CMOD(%m, 7)
%d = INDEX(%o, %r)
%s = STORE(%d, %v)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="arange")
"""


def test_a_division_of_loaded_data_counts_as_a_sequence() -> None:
    # uint32_div's E_64_4: 32 blocks of a MULHI sequence stay a loop (its constant's
    # shuffles computed once); a MULHI of the counter alone folds in every copy
    assert _ranges(_widened(_ew(256, "CDIV(%x, 3)", "uint32"))) == 1
    assert _ranges(_widened(ARANGE)) == 0


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("n", [50, 333])
@pytest.mark.parametrize("op", ["MUL(%x, 65537)", "SHR(%x, 3)"])
def test_matches_the_interpreter(arch: str, n: int, op: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_ew(n, op))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _rows(rows: int, cols: int, op: str = "MOV", out: str = "%o") -> str:
    """out[cols*i + j] = y[i] * op(x[cols*i + j]) (shrink_expand's E_35_50 at 35 x 50: a
    row's scalar times the row; out %a: the loop loads what it stores)."""
    n = rows * cols
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {n})
%y0 = PARAM ParamArg(1, float32, {rows})
%a = PARAM ParamArg(2, float32, {n})
%i = RANGE({rows}) (0, LOOP)
%q = INDEX(%y0, %i)
%y = LOAD(%q)
%j = RANGE({cols}, %i) (1, LOOP)
%k = MULACC(%i, {cols}, %j)
%p = INDEX(%a, %k)
%x = LOAD(%p)
{"%w = " + op + "(%x)" if op != "MOV" else ""}
%m = MUL(%y, {"%w" if op != "MOV" else "%x"})
%d = INDEX({out}, %k)
%s = STORE(%d, %m)
%e = END(%s, %j)
%f = END(%e, %i)
SINK(%f) KernelInfo(name="rows")
"""


def _inner_ranges(g) -> list[int]:
    """The bounds of the RANGEs left (the outer loop's, and the inner one's when it stays)."""
    return sorted(const_int(u.src[0]) for u in toposort([g]) if u.op is Ops.RANGE)


def test_a_short_inner_widened_loop_is_blocks_in_the_outer_loop() -> None:
    # E_35_50: 50 floats a row, 6 blocks of 8 (v3) or 3 of 16 (v4), and an overlapping last
    # one: the row's blocks are copies inside the loop of 35 rows
    for arch, blocks in (("x86-64-v3", 7), ("x86-64-v4", 4)):
        g = _widened(_rows(35, 50), x86_desc(arch))
        assert _inner_ranges(g) == [35]
        stores = _stores(g)
        assert len(stores) == blocks and all(u.src[1].shape for u in stores)


def _widen_alone(text: str) -> list[int]:
    """The RANGEs' bounds after passes/widen.py alone (its inner loops kept)."""
    desc = x86_desc("x86-64-v3")
    g = simplify(lower_weak_dtypes(parse(text)), desc)
    return _inner_ranges(widen(slp(div_const(unroll(g, desc), desc), desc), desc))


@pytest.mark.parametrize("text", [
    _rows(35, 80),              # 10 blocks of 8 a row: over INNER_TRIPS (30 nodes)
    _rows(35, 50, "EXP2"),      # an EXP2 a block (counted as a sequence): over INNER_BUDGET
    _rows(35, 50, out="%a"),    # the row loads what it stores
], ids=["long", "large", "inplace"])
def test_an_inner_loop_it_must_not_copy_stays_a_loop(text: str) -> None:
    alone = _widen_alone(text)
    assert len(alone) >= 2 and _inner_ranges(_widened(text)) == alone


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("cols", [50, 24])
def test_inner_blocks_match_the_interpreter(arch: str, cols: int) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_rows(35, cols))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# repeat_roll's E_2_8_6_4 as tinygrad captured it: out[192i + 24j + 4k : +4] = (x[8j + 4((k+1)&1)
# + 1], x[… + 2], x[… + 3], x[8j + 4(k&1)]) for i < 2, j < 8, k < 6 (unroll_inner copies k's
# loop; a row j is then an slp vector of four loads stored six times, which widen leaves alone)
REPEAT = """# kcc-uop 1
%2 = PARAM ParamArg(0, float32, 384)
%5 = PARAM ParamArg(1, float32, 64)
%24 = RANGE(2) (0, 0, LOOP)
%25 = RANGE(ROWS, %24) (0, 1, LOOP)
%26 = MUL(%25, 24)
%27 = SHL(%25, 3)
%28 = MULACC(%24, 192, %26)
%29 = RANGE(6, %25) (1, LOOP)
%30 = ADD(%29, 1)
%31 = AND(%30, 1)
%32 = MULACC(%31, 4, %27)
%33 = ADD(%32, 1)
%34 = INDEX(%5, %33)
%35 = LOAD(%34)
%36 = AND(%29, 1)
%37 = MULACC(%36, 4, %27)
%38 = INDEX(%5, %37)
%39 = LOAD(%38)
%40 = ADD(%32, 2)
%41 = SHRINK(%5, %40, 2)
%42 = LOAD(%41)
%43 = INDEX(%42, 0)
%44 = INDEX(%42, 1)
%45 = STACK(%35, %43, %44, %39)
%46 = MULACC(%29, 4, %28)
%47 = SHRINK(%2, %46, 4)
%48 = STORE(%47, %45)
%49 = GROUP(%48)
%50 = END(%49, %29)
%51 = END(%50, %25)
%52 = END(%51, %24)
SINK(%52) KernelInfo(name="E_2_8_6_4")
"""


def _repeat(rows: int) -> str:
    """REPEAT with `rows` rows (8: tinygrad's; the buffers sized for 8)."""
    return REPEAT.replace("ROWS", str(rows))


def _before_widen(text: str):
    """The graph the pipeline's widen step receives."""
    desc = x86_desc("x86-64-v3")
    g = simplify(lower_weak_dtypes(parse(text)), desc)
    return slp(div_const(unroll(g, desc), desc), desc)


def test_an_unwidened_short_inner_loop_of_vectors_is_copied() -> None:
    # 8 rows of a STACK of four loads stored six times (11 nodes a row, GROUPs not
    # counted: 88): copies in the loop of 2, as widen_and_unroll gives them when widen
    # changes nothing; 7 rows as well, and a loop of 9 (over INNER_TRIPS) stays
    desc = x86_desc("x86-64-v3")
    for rows in (8, 7):
        g = _before_widen(_repeat(rows))
        assert widen(g, desc) is g and len(_inner_ranges(g)) == 2
        out = widen_and_unroll(g, desc)
        assert _inner_ranges(out) == [2] and len(_stores(out)) == 6 * rows
    g = _before_widen(_repeat(9).replace("384", "432").replace("64)", "72)"))
    assert len(_inner_ranges(widen_and_unroll(g, desc))) == 2


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_copied_rows_match_the_interpreter(arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_repeat(8))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# out[4i:4i+4] = 0 for i < 8: a constant vector stored through the loop (scatter's zero fill
# E_8_4), no vector value that depends on the loop, only the stores' places
FILL = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 32)
%z = CAST(0.0) float32
%v = STACK(%z, %z, %z, %z)
%r = RANGE(8) (0, LOOP)
%b = SHL(%r, 2)
%d = SHRINK(%o, %b, 4)
%s = STORE(%d, %v)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="fill")
"""


def test_a_loop_of_constant_vector_stores_is_blocks() -> None:
    # x86-64-v3: 4 ymm stores at constant places, not a loop of 4 (counter, compare, branch)
    g = _widened(FILL)
    assert _ranges(g) == 0
    stores = _stores(g)
    assert len(stores) == 4 and all(u.src[1].shape == (8,) for u in stores)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_constant_vector_stores_match_the_interpreter(arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    import numpy as np
    sink = parse(FILL)
    args = [np.full(32, 3.0, np.float32)]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
