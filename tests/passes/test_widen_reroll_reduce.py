"""kcc/passes/widen_reroll_reduce.py: a reduction whose term is c shifted copies of one
computation (tinygrad's upcast reductions, any_all's r_64_4) is rerolled to one term an
iteration and widened by widen_reduce.py; anything else is left to the other rules. The
graphs and the x86 objects (x86-64-v3 and v4, seeds 0 and 1) are checked against the
reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.uop import toposort
from kcc.passes.linearize import range_sets
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.widen import widen
from kcc.passes.widen_reroll_reduce import reroll_reduction
from kcc.targets.x86.arch import x86_desc
from x86_util import assert_same, compile_and_run, reference

# any_all's r_64_4: `acc = acc OP (k < v[0]) OP (k < v[1]) OP (k < v[2]) OP (k < v[3])`
# (OP, the dtype of the input, the compare's constant, the accumulator's first value);
# {lanes} the four lanes read, in order
ANY = """# kcc-uop 1
%1 = CAST(1) int32
%2 = PARAM ParamArg(0, bool, 1)
%5 = PARAM ParamArg(1, float32, 256)
%6 = BUFFER ParamArg(0, bool, 1, addrspace=REG)
%8 = CAST(0) int32
%9 = INDEX(%6, %8)
%11 = CAST({init}) bool
%13 = CAST(2) int32
%15 = CAST(3) int32
%17 = CAST(4) int32
%19 = CAST(64) int32
%21 = CAST({k}) float32
%22 = STORE(%9, %11)
%23 = RANGE(%19) (0, REDUCE)
%24 = AFTER(%6, %22, %23)
%25 = INDEX(%24, %8)
%26 = LOAD(%25)
%27 = SHL(%23, %13)
%28 = SHRINK(%5, %27, %17)
%29 = LOAD(%28)
%30 = INDEX(%29, {l0})
%31 = INDEX(%29, {l1})
%32 = INDEX(%29, {l2})
%33 = INDEX(%29, {l3})
%34 = CMPLT(%21, %30)
%35 = CMPLT(%21, %31)
%36 = CMPLT(%21, %32)
%37 = CMPLT(%21, %33)
%38 = {op}(%34, %35)
%39 = {op}(%38, %36)
%40 = {op}(%39, %37)
%41 = {op}(%26, %40)
%42 = STORE(%25, %41)
%43 = END(%42, %23)
%44 = AFTER(%6, %43)
%45 = INDEX(%44, %8)
%46 = LOAD(%45)
%47 = INDEX(%2, %8)
%48 = STORE(%47, %46)
SINK(%48) KernelInfo(name="r_64_4")
"""

LANES = {"l0": "%8", "l1": "%1", "l2": "%13", "l3": "%15"}
ANY_TEXT = ANY.format(op="OR", k="1.0", init="false", **LANES)
ALL_TEXT = ANY.format(op="AND", k="-9.0", init="true", **LANES)

# an int32 sum of 4 lanes an iteration (wraps: the regrouping is exact on a ring)
ISUM = """# kcc-uop 1
%2 = PARAM ParamArg(0, int32, 1)
%5 = PARAM ParamArg(1, int32, 256)
%6 = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%8 = CAST(0) int32
%9 = INDEX(%6, %8)
%13 = CAST(2) int32
%17 = CAST(4) int32
%19 = CAST(64) int32
%22 = STORE(%9, %8)
%23 = RANGE(%19) (0, REDUCE)
%24 = AFTER(%6, %22, %23)
%25 = INDEX(%24, %8)
%26 = LOAD(%25)
%27 = SHL(%23, %13)
%28 = SHRINK(%5, %27, %17)
%29 = LOAD(%28)
%30 = INDEX(%29, 0)
%31 = INDEX(%29, 1)
%32 = INDEX(%29, 2)
%33 = INDEX(%29, 3)
%38 = ADD(%30, %31)
%39 = ADD(%38, %32)
%40 = ADD(%39, %33)
%41 = ADD(%26, %40)
%42 = STORE(%25, %41)
%43 = END(%42, %23)
%44 = AFTER(%6, %43)
%45 = INDEX(%44, %8)
%46 = LOAD(%45)
%47 = INDEX(%2, %8)
%48 = STORE(%47, %46)
SINK(%48) KernelInfo(name="r_64_4")
"""

V4 = x86_desc("x86-64-v4")


def _prep(text: str) -> UOp:
    return simplify(lower_weak_dtypes(parse(text), V4), V4)


def _rerolled(text: str):
    g = _prep(text)
    order = toposort([g])
    dep = range_sets(order)
    end = next(n for n in order if n.op is Ops.END)
    r = end.src[1]
    return reroll_reduction(r, end, [n for n in order if r in dep[n]], dep, 1)


@pytest.mark.parametrize("text", [ANY_TEXT, ALL_TEXT, ISUM], ids=["or", "and", "isum"])
def test_an_upcast_reduction_is_rerolled_to_one_term_an_iteration(text: str) -> None:
    got = _rerolled(text)
    assert got is not None
    e3, red = got
    assert const_bound(e3) == 256 and len(red.accs) == 1
    assert not [n for n in toposort([e3]) if n.op is Ops.LOAD and n.shape]


def const_bound(end: UOp) -> int:
    from kcc.ir.consts import const_int
    return const_int(end.src[1].src[0])


def test_terms_that_are_not_shifted_copies_are_left_alone() -> None:
    # lanes 0, 1, 3, 3: not one computation shifted by 0, 1, 2, 3
    assert _rerolled(ANY.format(op="OR", k="1.0", init="false",
                                **{**LANES, "l2": "%15"})) is None
    # a float sum: widen_reduce regroups no float OP
    text = ISUM.replace("(0, int32, 1", "(0, float32, 1").replace("int32, 256)", "float32, 256)") \
        .replace("%22 = STORE(%9, %8)", "%22 = STORE(%9, 0.0)")
    assert _rerolled(text) is None


@pytest.mark.parametrize("text", [ANY_TEXT, ALL_TEXT, ISUM], ids=["or", "and", "isum"])
def test_the_widened_loop_reads_whole_vectors(text: str) -> None:
    out = widen(_prep(text), V4)
    shapes = {n.shape for n in toposort([out]) if n.op is Ops.LOAD and n.src[0].op is Ops.SHRINK
              and n.src[0].src[0].op is Ops.PARAM}
    assert shapes and all(s[0] >= 8 for s in shapes)


def _inputs(text: str, seed: int) -> list[list]:
    rng = np.random.default_rng(seed)
    if text is ISUM:
        x = rng.integers(-2**31, 2**31, 256).astype(np.int32)
        return [[np.zeros(1, np.int32), x]]
    out = []
    for hit in (None, 0, 131, 255):       # no lane past the constant, or one at hit
        x = rng.uniform(-8.0, 0.5, 256).astype(np.float32)
        if hit is not None:
            x[hit] = 2.0 if text is ANY_TEXT else -10.0
        out.append([np.zeros(1, np.bool_), x])
    return out


@pytest.mark.parametrize("text", [ANY_TEXT, ALL_TEXT, ISUM], ids=["or", "and", "isum"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("seed", [0, 1])
def test_rerolled_reductions_on_x86_match_the_interpreter(text: str, arch: str,
                                                           seed: int) -> None:
    sink = parse(text)
    for args in _inputs(text, seed):
        want = reference(sink, args)
        assert_same(sink, reference(widen(_prep(text), x86_desc(arch)), args), want)
        assert_same(sink, compile_and_run(sink, args, arch), want)
