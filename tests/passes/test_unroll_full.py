"""Tests of full unrolling (kcc/passes/unroll_full.py): which loops are replaced by their
iterations and which are left alone, and that the result computes what the graph as written
computes: the reference interpreter on the graph before and after the pass (bit for bit), and
the AMD code object in kcc's emulator (gfx1100, gfx942) against the interpreter."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unroll_full import unroll_full
from kcc.targets.amd.desc import AMD
from kcc.targets.manifest import check_launch
from x86_util import assert_same, random_inputs, reference

# tinygrad's GPU row sum: a REG accumulator over a constant-bound loop, the workgroup's
# partial sums through LDS after a BARRIER, and a second loop over them
ROWSUM = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 8)
%x = PARAM ParamArg(1, float32, {nx})
%acc = BUFFER ParamArg(0, float32, 1, addrspace=REG)
%acc2 = BUFFER ParamArg(1, float32, 1, addrspace=REG)
%lds = BUFFER ParamArg(0, float32, 4, addrspace=LOCAL)
%g = SPECIAL(8) "gidx0"
%l = SPECIAL(4) "lidx0"
%p = INDEX(%acc, 0)
%z = STORE(%p, 0.0)
%j = RANGE({n}) (0, REDUCE)
%lm = MUL(%l, {n})
%gm = MUL(%g, {row})
%i0 = ADD(%lm, %j)
%i1 = ADD(%i0, %gm)
%xi = INDEX(%x, %i1)
%v = LOAD(%xi)
%aj = AFTER(%acc, %z, %j)
%q = INDEX(%aj, 0)
%c = LOAD(%q)
%s = ADD(%c, %v)
%w = STORE(%q, %s)
%e = END({body}, %j)
%ae = AFTER(%acc, %e)
%ri = INDEX(%ae, 0)
%r = LOAD(%ri)
%li = INDEX(%lds, %l)
%ls = STORE(%li, %r)
%b = BARRIER(%ls)
%lb = AFTER(%lds, %b)
%p2 = INDEX(%acc2, 0)
%z2 = STORE(%p2, 0.0)
%k = RANGE(4, %e) (1, REDUCE)
%lbi = INDEX(%lb, %k)
%lv = LOAD(%lbi)
%ak = AFTER(%acc2, %z2, %k)
%q2 = INDEX(%ak, 0)
%c2 = LOAD(%q2)
%s2 = ADD(%c2, %lv)
%w2 = STORE(%q2, %s2)
%e2 = END(%w2, %k)
%ae2 = AFTER(%acc2, %e2)
%r2i = INDEX(%ae2, 0)
%r2 = LOAD(%r2i)
%oi = INDEX(%out, %g)
%isz = CMPEQ(%l, 0)
%o = STORE(%oi, %r2, %isz)
SINK(%o) KernelInfo(name="rowsum")
"""


def _kernel(n: int = 16, body: str = "%w", extra: str = "") -> UOp:
    text = ROWSUM.format(n=n, nx=8 * 4 * n, row=4 * n, body=body)
    if extra:
        text = text.replace("%e = END", extra + "%e = END")
    return parse(text, "rowsum.uop")


def _ranges(g: UOp) -> int:
    return sum(1 for n in g.toposort() if n.op is Ops.RANGE)


def _unrolled(sink: UOp, limit: int = 32) -> UOp:
    g = simplify(lower_weak_dtypes(sink))
    u = unroll_full(g, replace(AMD, full_unroll=limit))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, reference(u, args), reference(sink, args))
    return u


def test_short_reduce_loops_are_replaced_by_their_iterations() -> None:
    assert _ranges(_unrolled(_kernel())) == 0


def test_a_bound_past_the_limit_is_left_alone() -> None:
    assert _ranges(_unrolled(_kernel(n=16), limit=8)) == 1   # the 4-iteration loop goes


def test_a_loop_that_stores_global_memory_is_left_alone() -> None:
    u = _unrolled(_kernel(body="%gw", extra="%go = INDEX(%out, %g)\n%gw0 = STORE(%go, %s)\n"
                          "%gw = GROUP(%w, %gw0)\n"))
    assert _ranges(u) == 1


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_unrolled_reduction_runs_in_the_emulator_like_the_interpreter(arch: str) -> None:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    sink = _kernel()
    (code,) = compile_amd_code([sink], arch)
    assert not any("s_cbranch" in line for line in code.asm)
    data = hsaco([code])
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        want = reference(sink, args)
        got = [a.copy() for a in args]
        emulate(data, code.desc, check_launch(code.desc, got))
        assert_same(sink, got, want)


def test_a_loop_inside_another_is_left_alone() -> None:
    """scripts/fuzz_amd.py seed 11: an accumulator set once before an outer loop and carried
    across its iterations; unrolled, the inner loop's first copy read it through an AFTER
    naming no range, and linearize hoisted that read out of the outer loop."""
    sink = parse("""# kcc-uop 1
%0 = PARAM ParamArg(0, float64, 3)
%1 = PARAM ParamArg(1, float64, 6)
%2 = BUFFER ParamArg(0, float64, 1, addrspace=REG)
%3 = INDEX(%2, 0)
%4 = CAST(2) float64
%5 = STORE(%3, %4)
%6 = RANGE(1, %5) (0, LOOP)
%7 = MUL(%6, 3)
%8 = RANGE(3) (1, LOOP)
%9 = ADD(%7, %8)
%10 = INDEX(%0, %9)
%11 = RANGE(2) (2, LOOP)
%12 = AFTER(%2, %5, %11)
%13 = INDEX(%12, 0)
%14 = LOAD(%13)
%15 = MUL(%14, %4)
%16 = MUL(%9, 2)
%17 = ADD(%16, %11)
%18 = INDEX(%1, %17)
%19 = LOAD(%18)
%20 = ADD(%15, %19)
%21 = STORE(%13, %20)
%22 = END(%21, %11)
%23 = AFTER(%2, %22)
%24 = INDEX(%23, 0)
%25 = LOAD(%24)
%26 = STORE(%10, %25)
%27 = END(%26, %6, %8)
SINK(%27) KernelInfo(name="fuzz0115")
""", "fuzz0115.uop")
    assert _ranges(_unrolled(sink)) == 3
