"""Tests of the unrolling of reduce loops of runtime bound (kcc/passes/unroll_runtime.py):
which loops become a main loop of chained copies and a remainder loop, and that the result is
bit for bit what the graph as written computes (the reference interpreter before and after the
pass, and the x86 object against the interpreter), for bounds that leave every remainder."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unroll_runtime import MAX_WORK, unroll_runtime
from kcc.targets.x86.arch import x86_desc
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference, \
    selected_text

# tinygrad's sym_sum r_n (the sweep's symbolic shapes): acc = 2*x[i] + acc + 1 for i < n
SUM = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 1)
%x = PARAM ParamArg(1, float32, 100)
%n = PARAM ParamArg(2, int32, vmin_vmax=(0, 100), name="n", addrspace=ALU)
%acc = BUFFER ParamArg(0, float32, 1, addrspace=REG)
%p = INDEX(%acc, 0)
%z = STORE(%p, 0.0)
%i = RANGE({bound}) (0, REDUCE)
%xi = INDEX(%x, %i)
%v = LOAD(%xi)
%a = AFTER(%acc, %z, %i)
%q = INDEX(%a, 0)
%c = LOAD(%q)
%m = MULACC(%v, 2.0, %c)
%s = ADD(%m, {one})
%w = STORE(%q, %s)
%e = END({body}, %i)
%ae = AFTER(%acc, %e)
%ri = INDEX(%ae, 0)
%r = LOAD(%ri)
%oi = INDEX(%out, 0)
%o = STORE(%oi, %r)
SINK(%o) KernelInfo(name="r_n")
"""
BOUNDS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 37, 100]


def _kernel(bound: str = "%n", body: str = "%w", one: str = "1.0", extra: str = "",
            at: str = "%e = END") -> UOp:
    text = SUM.format(bound=bound, body=body, one=one)
    if extra:
        text = text.replace(at, extra + at)
    return parse(text, "r_n.uop")


def _ranges(g: UOp) -> int:
    return sum(1 for n in g.toposort() if n.op is Ops.RANGE)


def _args(sink: UOp, n: int, seed: int) -> list:
    args = random_inputs(sink, seed)
    args[2] = type(args[2])(n)
    return args


def _unrolled(sink: UOp, k: int = 4) -> UOp:
    g = simplify(lower_weak_dtypes(sink))
    u = unroll_runtime(g, replace(x86_desc("x86-64-v3"), runtime_unroll=k))
    for n in BOUNDS:
        args = _args(sink, n, n)
        assert_same(sink, reference(u, args), reference(sink, args))
    return u


@pytest.mark.parametrize("k", [2, 4, 8])
def test_a_runtime_bound_reduce_loop_is_a_main_and_a_remainder_loop(k: int) -> None:
    assert _ranges(_unrolled(_kernel(), k)) == 2


def test_a_constant_bound_is_left_alone() -> None:
    assert _ranges(_unrolled(_kernel(bound="37"))) == 1


def test_a_loop_that_stores_global_memory_is_left_alone() -> None:
    u = _unrolled(_kernel(body="%g", extra="%gi = INDEX(%out, 0)\n%gw = STORE(%gi, %s)\n"
                          "%g = GROUP(%w, %gw)\n"))
    assert _ranges(u) == 1


def test_a_body_past_max_work_is_left_alone() -> None:
    # one more op than MAX_WORK allows: a chain of adds of the loaded value
    ops, prev = [], "%m"
    for j in range(MAX_WORK - 4):
        ops.append(f"%t{j} = ADD({prev}, %v)\n")
        prev = f"%t{j}"
    assert _ranges(_unrolled(_kernel(one=prev, extra="".join(ops), at="%s = "))) == 1
    ops.pop()       # MAX_WORK ops: unrolled
    assert _ranges(_unrolled(_kernel(one=f"%t{MAX_WORK - 6}", extra="".join(ops),
                                     at="%s = "))) == 2


def test_no_factor_no_unrolling() -> None:
    assert _ranges(_unrolled(_kernel(), k=0)) == 1


@pytest.mark.parametrize("arch", ARCHS)
def test_unrolled_sum_runs_like_the_interpreter(arch: str) -> None:
    """Bit for bit: one accumulator chain, the additions in the original order (the values
    are of mixed signs and magnitudes, so any reassociation would show)."""
    sink = _kernel()
    assert selected_text(SUM.format(bound="%n", body="%w", one="1.0"), arch).count("loop .") == 2
    for n in BOUNDS:
        for seed in (0, 1):
            args = _args(sink, n, seed)
            assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
