"""slp's permuted loads and halved column groups (kcc/passes/slp.py `_permuted_load`,
kcc/passes/slp_reg.py `column_groups`): sort's and topk's swaps, unrolled whole by
passes/unroll_tiny.py, store x[0], x[3], x[1], x[2], … to out[0 … 7]: one vector load of the
run, one shuffle and one store instead of eight scalar loads and stores. A compare-exchange
that stores four MINs then four MAXs (E_4_2) does not pack as 8 lanes of one op; its two
halves each do. Loads that leave an element of their span unread stay scalar (a vector load
would read past what the kernel reads). Values: the x86 object vs the reference interpreter."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.consts import const_int, plus_int
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.slp_index import permuted_run
from kcc.passes.unroll import unroll
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference

# sort's E_2_2_2 (tinygrad): out[4i + j + 2] = x[4i - j + 3], out[4i + j] = x[4i + j]
SWAP = """# kcc-uop 1
%2 = PARAM ParamArg(0, float32, 8)
%3 = PARAM ParamArg(1, float32, 8)
%5 = CAST(2) int32
%7 = CAST(3) int32
%9 = CAST(4) int32
%10 = RANGE(%5) (0, WEAK)
%11 = SHL(%10, %5)
%12 = RANGE(%5, %10) (2, WEAK)
%13 = SUB(%11, %12)
%14 = ADD(%13, %7)
%15 = INDEX(%3, %14)
%16 = LOAD(%15)
%17 = MULACC(%10, %9, %12)
%18 = INDEX(%3, %17)
%19 = LOAD(%18)
%20 = ADD(%17, %5)
%21 = INDEX(%2, %20)
%22 = INDEX(%2, %17)
%23 = STORE(%21, %16)
%24 = STORE(%22, %19)
%25 = GROUP(%24, %23)
%26 = END(%25, %12)
%27 = END(%26, %10)
SINK(%27) KernelInfo(name="swap")
"""

# sort's E_4_2: out[i + 4] = max(x[i], x[7 - i]), out[i] = -max(-x[i], -x[7 - i])
EXCHANGE = """# kcc-uop 1
%2 = PARAM ParamArg(0, float32, 8)
%3 = PARAM ParamArg(1, float32, 8)
%5 = CAST(4) int32
%7 = CAST(7) int32
%8 = RANGE(%5) (1, WEAK)
%9 = SUB(%7, %8)
%10 = INDEX(%3, %9)
%11 = LOAD(%10)
%12 = INDEX(%3, %8)
%13 = LOAD(%12)
%14 = ADD(%8, %5)
%15 = INDEX(%2, %14)
%16 = INDEX(%2, %8)
%17 = NEG(%11)
%18 = NEG(%13)
%19 = MAX(%18, %17)
%20 = NEG(%19)
%21 = MAX(%13, %11)
%22 = STORE(%15, %21)
%23 = STORE(%16, %20)
%24 = GROUP(%23, %22)
%25 = END(%24, %8)
SINK(%25) KernelInfo(name="exchange")
"""

# out[k] = x[2k] for k = 0 … 3: the loads' span (x[0 … 6]) has unread elements
STRIDED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 4)
%x = PARAM ParamArg(1, float32, 8)
%r = RANGE(4) (0, WEAK)
%i = MUL(%r, 2)
%p = INDEX(%x, %i)
%v = LOAD(%p)
%d = INDEX(%out, %r)
%s = STORE(%d, %v)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="strided")
"""

KERNELS = {"swap": SWAP, "exchange": EXCHANGE, "strided": STRIDED}


def _packed(src: str, arch: str = "x86-64-v3", reverse: bool = True):
    desc = x86_desc(arch)
    if not reverse:         # a target without lane reversals (TargetDesc.reverse None)
        desc = replace(desc, reverse=None)
    return slp(unroll(simplify(lower_weak_dtypes(parse(src))), desc), desc)


def _stored_shapes(g) -> list:
    return [u.src[1].shape for u in toposort([g]) if u.op is Ops.STORE]


def _loads(g) -> list:
    return [u for u in toposort([g]) if u.op is Ops.LOAD]


def _load(buf: UOp, k: int) -> UOp:
    return UOp(Ops.LOAD, (UOp(Ops.INDEX, (buf, UOp(Ops.CAST, (UOp.const(k),),
                                                         dtypes.int32))),))


def test_permuted_run_reads_lanes_of_one_run() -> None:
    x = next(u for u in toposort([parse(SWAP)]) if u.op is Ops.PARAM and u.arg.slot == 1)
    run = permuted_run(tuple(_load(x, k) for k in (4, 7, 5, 6)))
    assert run is not None and run[0] is x and const_int(run[1]) == 4 and run[2] == 4 \
        and run[3] == (0, 3, 1, 2)
    assert permuted_run(tuple(_load(x, k) for k in (0, 3, 1, 3))) is None   # x[2] unread


def test_swap_is_one_load_and_one_store() -> None:
    g = _packed(SWAP)
    assert _stored_shapes(g) == [(8,)]
    assert [u.shape for u in _loads(g)] == [(8,)]


def test_min_max_halves_are_two_stores() -> None:
    # where widen reverses the falling load's lanes (passes/widen_stride.py) the tiny loop is
    # left to it (unroll_tiny's _widens: one 4-lane iteration, the same instructions); the
    # copies slp packs are those of a target without lane reversals
    g = _packed(EXCHANGE, reverse=False)
    assert sorted(_stored_shapes(g)) == [(4,), (4,)]


def test_unread_elements_stay_scalar_loads() -> None:
    g = _packed(STRIDED)
    assert all(u.shape == () for u in _loads(g))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("which", sorted(KERNELS))
def test_matches_the_interpreter(arch: str, which: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(KERNELS[which])
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_a_blend_operand_of_two_elements_loads_the_run_the_kernel_reads() -> None:
    # sort_rows E_2048_2_2 unrolled (passes/unroll_inner.py `_gaps_filled`): the minimums'
    # operand x[4i], x[4i+1], x[4i], x[4i+1] reads 2 elements (no 2-lane float32 load); the
    # kernel reads x[4i] … x[4i+3] anyway, so one 4-lane load (slp_index `_read_window`),
    # the same node as the maximums' operand's; not where an element goes unread
    from kcc.passes.slp import _Packer
    from kcc.passes.slp_index import permuted_load, read_elements
    desc = x86_desc("x86-64-v3")
    g = parse("""# kcc-uop 1
%o = PARAM ParamArg(0, float32, 64)
%x = PARAM ParamArg(1, float32, 64)
%i = RANGE(16) (0, WEAK)
%b = MULACC(%i, 4, 0)
%st = STORE(INDEX(%o, %b), 0.0)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
""".replace("STORE(INDEX(%o, %b), 0.0)", "STORE(%ob, 0.0)").replace(
        "%st =", "%ob = INDEX(%o, %b)\n%st ="))
    nodes = toposort([g])
    buf = [u for u in nodes if u.op is Ops.PARAM][1]
    base = next(u for u in nodes if u.op is Ops.MULACC)

    def ld(k: int) -> UOp:
        at = plus_int(base, k)
        return UOp(Ops.LOAD, (UOp(Ops.INDEX, (buf, at)),))
    mins, maxs = (ld(0), ld(1), ld(0), ld(1)), (ld(2), ld(3), ld(2), ld(3))
    p = _Packer(desc, blends=True)
    assert permuted_load(p, mins) is None                    # reads unknown
    p.reads = read_elements(toposort([UOp(Ops.GROUP, mins + maxs)]))
    a, b = permuted_load(p, mins), permuted_load(p, maxs)
    assert a is not None and b is not None
    assert [const_int(s.src[1]) for s in a.src] == [0, 1, 0, 1]
    assert [const_int(s.src[1]) for s in b.src] == [2, 3, 2, 3]
    assert a.src[0].src[0] is b.src[0].src[0] and a.src[0].src[0].shape == (4,)
    p = _Packer(desc, blends=True)
    p.reads = read_elements(toposort([UOp(Ops.GROUP, mins + maxs[:1])]))   # x[4i+3] unread
    assert permuted_load(p, mins) is None


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_the_distance_two_exchange_loop_is_one_load_and_store(arch: str) -> None:
    from test_unroll_inner import EXCHANGE2
    from kcc.passes.unroll_inner import unroll_inner
    desc = x86_desc(arch)
    sink = parse(EXCHANGE2)
    g = slp(unroll_inner(simplify(lower_weak_dtypes(sink, desc), desc), desc), desc)
    nodes = toposort([g])
    assert [u.src[1].shape for u in nodes if u.op is Ops.STORE] == [(4,)]
    assert [u.shape for u in nodes if u.op is Ops.LOAD] == [(4,)]
    args = random_inputs(sink, 1)
    assert_same(sink, reference(g, args), reference(sink, args))
    if arch == "x86-64-v3" or all(f in cpu_flags() for f in V4_FLAGS):
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
