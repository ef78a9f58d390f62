"""Vector induction variables (kcc/isel/x86/viv.py; issue 24, item 2: argmax r_333_77 made its
index vector `splat(77 - 8r) + [0, -1, …]` every iteration with a scalar SUB, VMOVD and
VPBROADCASTD): one VPADDD at the loop's END instead.

The oracle is the reference interpreter, on rows where the maximum repeats (the first index
wins) and rows of NaN (no lane equals)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.ir import AxisType, Ops, UOp, dtypes
from kcc.isel.x86.viv import affine_in_range
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

HAVE_V4 = "avx512f" in open("/proc/cpuinfo").read()


def _argmax(rows: int, cols: int) -> str:
    """tinygrad's row argmax: out[i] = cols - max_j((x[i, j] == m[i]) * (cols - j))."""
    return f"""# kcc-uop 1
%1 = CAST({rows}) int32
%2 = PARAM ParamArg(0, int32, {rows})
%5 = PARAM ParamArg(1, float32, {rows * cols})
%6 = PARAM ParamArg(2, float32, {rows})
%9 = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%11 = CAST(-2147483648) int32
%13 = CAST(0) int32
%15 = CAST({cols}) int32
%16 = RANGE(%1) (1, WEAK)
%17 = INDEX(%6, %16)
%18 = LOAD(%17)
%19 = AFTER(%9, %16)
%20 = INDEX(%19, %13)
%21 = STORE(%20, %11)
%22 = RANGE(%15, %16) (0, REDUCE)
%23 = AFTER(%9, %21, %22)
%24 = INDEX(%23, %13)
%25 = LOAD(%24)
%26 = MULACC(%16, %15, %22)
%27 = INDEX(%5, %26)
%28 = LOAD(%27)
%29 = CMPEQ(%28, %18)
%30 = CAST(%29) int32
%31 = SUB(%15, %22)
%32 = MUL(%30, %31)
%33 = MAX(%25, %32)
%34 = STORE(%24, %33)
%35 = END(%34, %22)
%36 = AFTER(%9, %35)
%37 = INDEX(%36, %13)
%38 = LOAD(%37)
%39 = INDEX(%2, %16)
%40 = SUB(%15, %38)
%41 = STORE(%39, %40)
%42 = END(%41, %16)
SINK(%42) KernelInfo(name="argmax")
"""


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


def _loop_body(sel: str) -> str:
    """The selected lines of the innermost loop (the last `loop` label up to its branch)."""
    lines = sel.splitlines()
    start = max(k for k, ln in enumerate(lines) if " loop " in ln)
    end = next(k for k in range(start, len(lines)) if "jl_rel32" in lines[k])
    return "\n".join(lines[start:end])


def test_affine_forms() -> None:
    r = UOp(Ops.RANGE, (UOp(Ops.CAST, (UOp(Ops.CONST, (), 9),), dtypes.int32),),
            (0, AxisType.REDUCE))
    a = UOp(Ops.CAST, (UOp(Ops.CONST, (), 77),), dtypes.int32)
    eight = UOp(Ops.CAST, (UOp(Ops.CONST, (), 8),), dtypes.int32)
    m = UOp(Ops.MUL, (r, eight))
    assert affine_in_range(UOp(Ops.SUB, (a, m))) == (r, a, -8)
    assert affine_in_range(UOp(Ops.ADD, (m, a))) == (r, a, 8)
    assert affine_in_range(m) == (r, None, 8)
    assert affine_in_range(UOp(Ops.SUB, (m, a))) is None       # r*c - a: not a + r*c


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("cols", [300, 77, 16, 13])
def test_argmax_index_vector_is_an_induction_variable(arch: str, cols: int) -> None:
    # (77 columns are 9 or 4 blocks, a loop kcc/passes/unroll_reduce.py writes out: each
    # copy's index vector a constant; 300 are 37 or 18, a loop)
    text = _argmax(6, cols)
    sel = _selected(text, arch)
    if cols >= 200:
        body = _loop_body(sel)
        assert "vpbroadcastd" not in body and "vmovd_" not in body, body
        assert "vpaddd_y_y_ym" in body, body
    if arch == "x86-64-v4" and not HAVE_V4:
        return
    sink = parse(text)
    rng = np.random.default_rng(cols)
    x = rng.integers(0, 4, (6, cols)).astype(np.float32)
    x[5] = np.nan
    m = np.r_[x[:5].max(axis=1), np.float32(1.0)].astype(np.float32)
    args = [np.zeros(6, np.int32), x.reshape(-1), m]
    want = reference(sink, args)
    assert_same(sink, compile_and_run(sink, args, arch), want)
    assert list(want[0][:5]) == [int(np.argmax(row)) for row in x[:5]]
