"""Tests of kcc/passes/unroll_inner.py: a tiny inner loop of constant bound (cumsum's r_32_8_8:
8 iterations, each load gated by a compare of the counter) becomes its iterations inside the
outer loop, the gates folded (true: an ungated load, false: the alternative value); loops it
must not copy are left alone. The oracle is the reference interpreter, on the graph before
and after and on the x86 object."""

from __future__ import annotations

import pytest
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.targets.cuda.desc import CUDA
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unroll_inner import unroll_inner
from kcc.targets.x86.arch import x86_desc

X86 = x86_desc("x86-64-v4")

# out[8i + j] = sum of x[8i + j - c] for c < 3 where j >= c, plus x[8i] where j > 6 (a
# windowed cumsum; that last load, x[8i + 7 - j] gated by j > 6, descends with the counter:
# one widen refuses; read as x[8i], one element under a counter gate, widen_lanes now widens
# the loop, tests/passes/test_widen_lanes_gated.py)
CUMSUM = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 32)
%x = PARAM ParamArg(1, float32, 32)
%i = RANGE(4) (0, WEAK)
%j = RANGE(8, %i) (1, WEAK)
%p = MULACC(%i, 8, %j)
%p1 = ADD(%p, -1)
%p2 = ADD(%p, -2)
%x0p = INDEX(%x, %p)
%x0 = LOAD(%x0p)
%g1 = CMPLT(0, %j)
%x1p = INDEX(%x, %p1)
%x1 = LOAD(%x1p, 0.0, %g1)
%g2 = CMPLT(1, %j)
%x2p = INDEX(%x, %p2)
%x2 = LOAD(%x2p, 0.0, %g2)
%g3 = CMPLT(6, %j)
%r7 = MULACC(%i, 8, 7)
%r0 = SUB(%r7, %j)
%x3p = INDEX(%x, %r0)
%x3 = LOAD(%x3p, 0.0, %g3)
%s0 = ADD(%x3, %x2)
%s1 = ADD(%s0, %x1)
%s = ADD(%s1, %x0)
%op = INDEX(%out, {store})
%st = STORE(%op, %s)
%e1 = END(%st, %j)
%e0 = END(%e1, %i)
SINK(%e0) KernelInfo(name="cumsum")
"""


def _prep(text: str, desc):
    """The graph as unroll sees it in the pipeline (dtypes lowered, simplified)."""
    sink = parse(text, "k.uop")
    return sink, simplify(lower_weak_dtypes(sink, desc), desc)


def _ranges(g) -> list:
    return [u for u in g.toposort() if u.op is Ops.RANGE]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_inner_loop_is_unrolled_and_its_gates_fold(arch: str) -> None:
    sink, s0 = _prep(CUMSUM.format(store="%p"), x86_desc(arch))
    g = unroll_inner(s0, x86_desc(arch))
    assert [const_bound(r) for r in _ranges(g)] == [4]        # the outer loop alone
    loads = [u for u in g.toposort() if u.op is Ops.LOAD]
    assert loads and all(len(u.src) == 1 for u in loads)      # every gate folded
    assert len(loads) == 8 + 7 + 6 + 1                        # j = 0 reads one element
    args = random_inputs(sink, 4)
    assert_same(sink, reference(g, args), reference(sink, args))
    if arch == "x86-64-v3" or HAS_V4:
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def const_bound(r) -> int:
    from kcc.ir.consts import const_int
    return const_int(r.src[0])


def test_overlapping_stores_keep_the_loop() -> None:
    # every j stores out[8i + (j >> 1)]: two iterations write one element (the later wins)
    _, sink = _prep(CUMSUM.format(store="%q").replace(
        "%op = INDEX", "%h = SHR(%j, 1)\n%q = MULACC(%i, 8, %h)\n%op = INDEX"), X86)
    assert unroll_inner(sink, X86) is sink


def test_a_buffer_stored_and_loaded_keeps_the_loop_and_gpus_opt_out() -> None:
    text = CUMSUM.format(store="%p").replace("%x2p = INDEX(%x, %p2)", "%x2p = INDEX(%out, %p2)")
    _, sink = _prep(text, X86)
    assert unroll_inner(sink, X86) is sink
    _, plain = _prep(CUMSUM.format(store="%p"), CUDA)
    assert unroll_inner(plain, CUDA) is plain


FLIP = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 64)
%x = PARAM ParamArg(1, float32, 64)
%i = RANGE(8) (0, WEAK)
%j = RANGE(8, %i) (1, WEAK)
%p = MULACC(%i, 8, %j)
%i8 = MUL(%i, 8)
%q0 = SUB(%i8, %j)
%q = ADD(%q0, 7)
%xp = INDEX(%x, %q)
%v = LOAD(%xp)
%op = INDEX(%out, %p)
%st = STORE(%op, %v)
%e1 = END(%st, %j)
%e0 = END(%e1, %i)
SINK(%e0) KernelInfo(name="flip")
"""


def test_a_counter_only_in_addresses_keeps_the_loop() -> None:
    # flip_cat's E_8_8_2: j reaches nothing but the addresses (no shift, clamp or gate to
    # fold), so copies would only trade the loop's counter for an address sum each
    _, sink = _prep(FLIP, X86)
    assert unroll_inner(sink, X86) is sink
    _, gated = _prep(FLIP.replace("%v = LOAD(%xp)", "%g = CMPLT(2, %j)\n%v = LOAD(%xp, 0.0, %g)"),
                     X86)
    assert unroll_inner(gated, X86) is not gated


def test_a_two_iteration_reversed_read_is_unrolled_and_packed() -> None:
    # sort_rows E_2048_2_2: out[4i + j] = x[4i + j], out[4i + 2 + j] = x[4i + 3 - j], j < 2;
    # too short to widen (no 2-lane float32 vectors), its copies are one 4-lane (8-lane)
    # load and a shuffle per outer iteration (_reversed_read)
    text = FLIP.replace("ParamArg(0, float32, 64)", "ParamArg(0, float32, 16)").replace(
        "ParamArg(1, float32, 64)", "ParamArg(1, float32, 16)").replace(
        "RANGE(8) (0", "RANGE(4) (0").replace("RANGE(8, %i)", "RANGE(2, %i)").replace(
        "MULACC(%i, 8, %j)", "MULACC(%i, 4, %j)").replace("MUL(%i, 8)", "MUL(%i, 4)").replace(
        "ADD(%q0, 7)", "ADD(%q0, 3)").replace(
        "%op = INDEX(%out, %p)\n%st = STORE(%op, %v)",
        "%p2 = ADD(%p, 2)\n%op = INDEX(%out, %p2)\n%st0 = STORE(%op, %v)\n"
        "%xp1 = INDEX(%x, %p)\n%v1 = LOAD(%xp1)\n%op1 = INDEX(%out, %p)\n"
        "%st1 = STORE(%op1, %v1)\n%st = GROUP(%st0, %st1)")
    sink, s0 = _prep(text, X86)
    g = unroll_inner(s0, X86)
    assert [const_bound(r) for r in _ranges(g)] == [4]        # the outer loop alone
    args = random_inputs(sink, 4)
    assert_same(sink, reference(g, args), reference(sink, args))
    for arch in ("x86-64-v3", "x86-64-v4"):
        if arch == "x86-64-v3" or HAS_V4:
            assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# sort_rows E_2048_2_2's compare-exchange at distance 2 (16 outer iterations here):
# out[4i + j] = min(x[4i + j], x[4i + j + 2]), out[4i + j + 2] = the max, j < 2
EXCHANGE2 = """# kcc-uop 1
%2 = PARAM ParamArg(0, float32, 64)
%3 = PARAM ParamArg(1, float32, 64)
%5 = CAST(2) int32
%7 = CAST(4) int32
%9 = CAST(16) int32
%10 = RANGE(%9) (0, WEAK)
%11 = RANGE(%5, %10) (10, WEAK)
%12 = MULACC(%10, %7, %11)
%13 = ADD(%12, %5)
%14 = INDEX(%3, %13)
%15 = LOAD(%14)
%16 = INDEX(%3, %12)
%17 = LOAD(%16)
%18 = INDEX(%2, %13)
%19 = INDEX(%2, %12)
%20 = NEG(%15)
%21 = NEG(%17)
%22 = MAX(%21, %20)
%23 = NEG(%22)
%24 = MAX(%17, %15)
%25 = STORE(%18, %24)
%26 = STORE(%19, %23)
%27 = GROUP(%26, %25)
%28 = END(%27, %11)
%29 = END(%28, %10)
SINK(%29) KernelInfo(name="exchange2")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_stores_whose_gaps_the_copies_fill_are_unrolled(arch: str) -> None:
    # one iteration stores elements 0 and 2 of a run of 4 that the other fills
    # (_gaps_filled): its copies pack into one blended 4-lane store (passes/slp_blend.py)
    sink, s0 = _prep(EXCHANGE2, x86_desc(arch))
    g = unroll_inner(s0, x86_desc(arch))
    assert [const_bound(r) for r in _ranges(g)] == [16]       # the outer loop alone
    args = random_inputs(sink, 4)
    assert_same(sink, reference(g, args), reference(sink, args))
    if arch == "x86-64-v3" or HAS_V4:
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
    # stores 3 apart (elements 0 and 3 of each 6): the copies leave gaps, the loop stays
    _, s1 = _prep(EXCHANGE2.replace("%13 = ADD(%12, %5)", "%13 = ADD(%12, 3)").replace(
        "CAST(4) int32", "CAST(6) int32").replace("CAST(16) int32", "CAST(10) int32"),
        x86_desc(arch))
    assert unroll_inner(s1, x86_desc(arch)) is s1
