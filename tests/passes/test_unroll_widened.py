"""Full unrolling of short widened loops (kcc/passes/unroll_widened.py, in the pipeline's
widen step): which loops become straight-line blocks at constant places and which stay loops
(widen alone keeps them, as its own tests expect), and that the x86 object (x86-64-v3 and
v4) computes what the reference interpreter does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
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
