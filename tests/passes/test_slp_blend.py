"""slp's two-op lane groups (kcc/passes/slp_blend.py): sort's compare-exchange E_2_2_2 stores
the minimums of (x[0], x[2]) and (x[1], x[3]) to out[0], out[1] and their maximums to out[2],
out[3] (and so on for x[4 …]): no one op packs the 8 lanes and no half does, so both ops are
computed over every lane (their operands lanes of one load of x, its unread elements x[2],
x[3] included: constant places inside the buffer) and blended. Lanes of more than two shapes,
or of a division (it may trap on a lane it does not need), stay scalar. Values: the x86
object vs the reference interpreter, NaNs and signed zeros included (bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.slp_blend import blend
from kcc.passes.unroll import unroll
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, cpu_flags
from x86_util import compile_and_run, reference

# sort's E_2_2_2 (tinygrad): out[4i + j] = min(x[4i + j], x[4i + j + 2]), out[4i + j + 2] max
EXCHANGE = """# kcc-uop 1
%2 = PARAM ParamArg(0, float32, 8)
%3 = PARAM ParamArg(1, float32, 8)
%5 = CAST(2) int32
%7 = CAST(4) int32
%8 = RANGE(%5) (0, WEAK)
%9 = RANGE(%5, %8) (2, WEAK)
%10 = MULACC(%8, %7, %9)
%11 = ADD(%10, %5)
%12 = INDEX(%3, %11)
%13 = LOAD(%12)
%14 = INDEX(%3, %10)
%15 = LOAD(%14)
%16 = INDEX(%2, %11)
%17 = INDEX(%2, %10)
%18 = NEG(%13)
%19 = NEG(%15)
%20 = MAX(%19, %18)
%21 = NEG(%20)
%22 = MAX(%15, %13)
%23 = STORE(%16, %22)
%24 = STORE(%17, %21)
%25 = GROUP(%24, %23)
%26 = END(%25, %9)
%27 = END(%26, %8)
SINK(%27) KernelInfo(name="exchange")
"""


def _packed(src: str, arch: str = "x86-64-v3"):
    desc = x86_desc(arch)
    return slp(unroll(simplify(lower_weak_dtypes(parse(src))), desc), desc)


def _f(k: int) -> UOp:
    return UOp(Ops.CAST, (UOp.const(float(k)),), dtypes.float32)


def test_the_exchange_is_one_blended_store() -> None:
    g = _packed(EXCHANGE)
    stores = [u for u in toposort([g]) if u.op is Ops.STORE]
    assert [u.src[1].shape for u in stores] == [(8,)]
    loads = [u for u in toposort([g]) if u.op is Ops.LOAD]
    assert [u.shape for u in loads] == [(8,)]


def test_three_shapes_or_a_division_do_not_blend() -> None:
    a, b = _f(1), _f(2)
    add, mul, sub = (UOp(op, (a, b)) for op in (Ops.ADD, Ops.MUL, Ops.SUB))
    assert blend((add, mul, sub, add), lambda t: UOp(Ops.STACK, t)) is None
    div = UOp(Ops.FDIV, (a, b))
    assert blend((add, div, add, div), lambda t: UOp(Ops.STACK, t)) is None
    got = blend((add, mul, add, mul), lambda t: UOp(Ops.STACK, t))
    assert got is not None and got.op is Ops.STACK


def _inputs() -> list[np.ndarray]:
    x = np.array([np.nan, 1.0, -0.0, 0.0, 3.0, -np.inf, 2.0, np.float32(-np.nan)], np.float32)
    return [np.zeros(8, np.float32), x]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_matches_the_interpreter_bit_for_bit(arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(EXCHANGE)
    rng = np.random.default_rng(0)
    for args in (_inputs(), [np.zeros(8, np.float32),
                             rng.standard_normal(8).astype(np.float32)]):
        got, want = compile_and_run(sink, args, arch)[0], reference(sink, args)[0]
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)


# sort_rows E_4096_2 (tinygrad, 64 pairs here): out[2i] = min(x[2i], x[2i+1]), out[2i+1] the
# max, read and stored as float2 (slp sees 2 lanes, which no x86 vector holds)
ADJACENT = """# kcc-uop 1
%2 = PARAM ParamArg(0, float32, 128)
%3 = PARAM ParamArg(1, float32, 128)
%5 = CAST(0) int32
%7 = CAST(1) int32
%9 = CAST(2) int32
%11 = CAST(64) int32
%12 = RANGE(%11) (0, WEAK)
%13 = SHL(%12, %7)
%14 = SHRINK(%3, %13, %9)
%15 = LOAD(%14)
%16 = INDEX(%15, %5)
%17 = INDEX(%15, %7)
%18 = NEG(%16)
%19 = NEG(%17)
%20 = MAX(%18, %19)
%21 = NEG(%20)
%22 = MAX(%16, %17)
%23 = STACK(%21, %22)
%24 = SHRINK(%2, %13, %9)
%25 = STORE(%24, %23)
%26 = GROUP(%25)
%27 = END(%26, %12)
SINK(%27) KernelInfo(name="adjacent")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_widened_lanes_of_two_ops_are_a_blend(arch: str) -> None:
    # widening by 8 (16) makes scalar MINs and MAXs of the lanes; blend_stacks computes
    # both ops over whole vectors of shuffled lanes and blends them
    from kcc.passes.slp_blend import blend_stacks
    from kcc.passes.widen import widen
    desc = x86_desc(arch)
    sink = parse(ADJACENT)
    wide = widen(slp(unroll(simplify(lower_weak_dtypes(sink, desc), desc), desc), desc), desc)
    g = blend_stacks(wide, desc)
    assert g is not wide
    nodes = toposort([g])
    assert all(u.shape for u in nodes if u.op is Ops.MAX), "a scalar MAX is left"
    args = [np.zeros(128, np.float32), np.random.default_rng(3).standard_normal(128)
            .astype(np.float32)]
    args[1][:8] = _inputs()[1]
    want = reference(sink, args)[0]
    assert np.array_equal(reference(g, args)[0].view(np.uint32), want.view(np.uint32))
    if arch == "x86-64-v3" or all(f in cpu_flags() for f in V4_FLAGS):
        got = compile_and_run(sink, args, arch)[0]
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)


def test_dropped_lanes_take_the_leaves_that_keep_operands_in_order() -> None:
    # the exchange's minimums read x[0], x[1], x[0], x[1] in their own lanes' order; the
    # maximum lanes' values are dropped, so their leaves reversed (_fill) make the operands
    # the loaded vector itself and one rotation of it: one shuffle STACK beside the blend
    g = _packed(EXCHANGE)
    nodes = toposort([g])
    stacks = [u for u in nodes if u.op is Ops.STACK and u.shape]
    assert len(stacks) == 2, stacks                      # the blend and one rotation
    load = next(u for u in nodes if u.op is Ops.LOAD)
    assert any(load in u.src for u in nodes if u.op in (Ops.NEG, Ops.MAX) and u.shape)
