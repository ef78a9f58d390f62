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
from kcc.ir.consts import const_int
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
