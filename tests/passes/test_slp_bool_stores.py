"""slp (kcc/passes/slp.py) packs a run of scalar bool STOREs whose values pack into one bool
vector STORE where the target stores bool vectors (TargetDesc.bool_stores: x86 writes the
mask's 0/1 bytes at once), and finds the run when tinygrad writes lane j's index as
`MULACC(i, 4, j)` and lane 0's as `i << 2` (kcc/passes/slp_index.py lane_offset).
isnan_isinf's and cast_f2bool's E_5_4 stored their 4 bool lanes a byte at a time (a shuffle,
compare, move and AND a lane); the x86 objects are checked against the interpreter."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.targets.x86.arch import x86_desc
from x86_util import assert_same, compile_and_run, reference

# tinygrad's isinf (bench/tinygrad_sweep.py isnan_isinf, E_5_4): a float4 per iteration, each
# lane's `x == inf | x == -inf` stored as a bool, lanes 1-3 at MULACC indexes
ISINF = """# kcc-uop 1
%2 = PARAM ParamArg(0, bool, 20)
%3 = PARAM ParamArg(1, float32, 20)
%5 = CAST(0) int32
%7 = CAST(1) int32
%9 = CAST(2) int32
%11 = CAST(3) int32
%13 = CAST(4) int32
%15 = CAST(5) int32
%17 = CAST(-inf) float32
%19 = CAST(inf) float32
%20 = RANGE(%15) (0, WEAK)
%21 = SHL(%20, %9)
%22 = SHRINK(%3, %21, %13)
%23 = LOAD(%22)
%24 = INDEX(%2, %21)
%25 = MULACC(%20, %13, %7)
%26 = INDEX(%2, %25)
%27 = MULACC(%20, %13, %9)
%28 = INDEX(%2, %27)
%29 = MULACC(%20, %13, %11)
%30 = INDEX(%2, %29)
%31 = INDEX(%23, %5)
%32 = INDEX(%23, %7)
%33 = INDEX(%23, %9)
%34 = INDEX(%23, %11)
%35 = CMPEQ(%31, %17)
%36 = CMPEQ(%31, %19)
%37 = CMPEQ(%32, %17)
%38 = CMPEQ(%32, %19)
%39 = CMPEQ(%33, %17)
%40 = CMPEQ(%33, %19)
%41 = CMPEQ(%34, %17)
%42 = CMPEQ(%34, %19)
%43 = OR(%36, %35)
%44 = OR(%38, %37)
%45 = OR(%40, %39)
%46 = OR(%42, %41)
%47 = STORE(%24, %43)
%48 = STORE(%26, %44)
%49 = STORE(%28, %45)
%50 = STORE(%30, %46)
%51 = GROUP(%47, %48, %49, %50)
%52 = END(%51, %20)
SINK(%52) KernelInfo(name="E_5_4")
"""

# cast_f2bool's E_5_4: `x != 0` a lane, lane 0 stored last (tinygrad's order)
F2BOOL = """# kcc-uop 1
%2 = PARAM ParamArg(0, bool, 20)
%3 = PARAM ParamArg(1, float32, 20)
%5 = CAST(0) int32
%7 = CAST(1) int32
%9 = CAST(2) int32
%11 = CAST(3) int32
%13 = CAST(4) int32
%15 = CAST(5) int32
%17 = CAST(0.0) float32
%18 = RANGE(%15) (0, WEAK)
%19 = SHL(%18, %9)
%20 = SHRINK(%3, %19, %13)
%21 = LOAD(%20)
%22 = INDEX(%2, %19)
%23 = MULACC(%18, %13, %7)
%24 = INDEX(%2, %23)
%25 = MULACC(%18, %13, %9)
%26 = INDEX(%2, %25)
%27 = MULACC(%18, %13, %11)
%28 = INDEX(%2, %27)
%29 = INDEX(%21, %5)
%30 = INDEX(%21, %7)
%31 = INDEX(%21, %9)
%32 = INDEX(%21, %11)
%33 = CMPNE(%29, %17)
%34 = CMPNE(%30, %17)
%35 = CMPNE(%31, %17)
%36 = CMPNE(%32, %17)
%37 = STORE(%22, %33)
%38 = STORE(%24, %34)
%39 = STORE(%26, %35)
%40 = STORE(%28, %36)
%41 = GROUP(%37, %38, %39, %40)
%42 = END(%41, %18)
SINK(%42) KernelInfo(name="E_5_4")
"""


def _prep(text: str) -> UOp:
    return simplify(lower_weak_dtypes(parse(text)))


def _bool_stores(g: UOp) -> list[tuple[int, ...]]:
    return [u.src[1].shape for u in toposort([g])
            if u.op is Ops.STORE and u.src[1].dtype.is_bool]


@pytest.mark.parametrize("text", [ISINF, F2BOOL], ids=["isinf", "f2bool"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_bool_lane_stores_become_one_bool_vector_store(text: str, arch: str) -> None:
    out = slp(_prep(text), x86_desc(arch))
    assert _bool_stores(out) == [(4,)]


def test_without_bool_stores_the_lanes_stay_scalar() -> None:
    target = replace(x86_desc("x86-64-v4"), bool_stores=())
    assert _bool_stores(slp(_prep(ISINF), target)) == [()] * 4


@pytest.mark.parametrize("text", [ISINF, F2BOOL], ids=["isinf", "f2bool"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("seed", [0, 1])
def test_bool_lane_stores_on_x86_match_the_interpreter(text: str, arch: str, seed: int) -> None:
    sink = parse(text)
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], np.float32), 20)
    args = [np.zeros(20, np.bool_), x]
    want = reference(sink, args)
    assert_same(sink, compile_and_run(sink, args, arch), want)
    assert want[0].any() and not want[0].all()
