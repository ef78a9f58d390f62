"""A bool `(-1 < x) & (x < n)` (a gather's or a padding's index gate) is one unsigned compare
`cmp x, n` read as SETB, or as CMOVB by a WHERE (a gated load's safe index), in
kcc/isel/x86/alu.py (`range_check`), not two compares, two SETcc and an AND; checked against
the reference interpreter on the edge values of int32 and int64 (the sign bit, -1, 0, n - 1,
n), both as a stored bool and as a gate."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from x86_util import assert_same, compile_and_run, reference

BOOL = """# kcc-uop 1
%y = PARAM ParamArg(0, bool, NN)
%x = PARAM ParamArg(1, DT, NN)
%i.n = CAST(NN) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%v = LOAD(%px)
%m1 = CAST(-1) DT
%k = CAST(K) DT
%lo = CMPLT(%m1, %v)
%hi = CMPLT(%v, %k)
%r = AND(%lo, %hi)
%py = INDEX(%y, %i)
%st = STORE(%py, %r)
SINK(%st) KernelInfo(name="rc")
"""

# E_333_5 in small: out[i] = 0 <= idx[i] < K ? table[idx[i]] : 0.0 (the gate's other order)
GATHER = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, NN)
%x = PARAM ParamArg(1, DT, NN)
%t = PARAM ParamArg(2, float32, K)
%i.n = CAST(NN) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%v = LOAD(%px)
%m1 = CAST(-1) DT
%k = CAST(K) DT
%lo = CMPLT(%m1, %v)
%hi = CMPLT(%v, %k)
%g = AND(%hi, %lo)
%z = CAST(0.0) float32
%pt = INDEX(%t, %v)
%e = LOAD(%pt, %z, %g)
%py = INDEX(%y, %i)
%st = STORE(%py, %e)
SINK(%st) KernelInfo(name="rcg")
"""


def _inputs(dt: str, k: int) -> np.ndarray:
    info = np.iinfo(dt)
    vals = {info.min, info.max, -2, -1, 0, 1, k - 1, k, k + 1, 2**31 - 1, -2**31}
    return np.array(sorted(v for v in vals if info.min <= v <= info.max), dt)


def _allocated(src: str, arch: str) -> str:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="allocate", out=buf)
    return buf.getvalue()


@pytest.mark.parametrize("dt", ["int32", "int64"])
@pytest.mark.parametrize("k", [1, 77])
def test_a_range_check_is_one_unsigned_compare(dt: str, k: int) -> None:
    x = _inputs(dt, k)
    src = BOOL.replace("DT", dt).replace("NN", str(len(x))).replace("CAST(K)", f"CAST({k})")
    sel = _allocated(src, "x86-64-v3")
    assert sel.count("cmp_rm") == 1 and "setb_rm8" in sel, sel
    assert "setg" not in sel and "setl" not in sel and "and_r32" not in sel, sel
    sink = parse(src)
    args = [np.zeros(len(x), bool), x]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))


@pytest.mark.parametrize("dt", ["int32", "int64"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_gated_load_reads_one_compare(dt: str, arch: str) -> None:
    k = 77
    x = _inputs(dt, k)
    src = GATHER.replace("DT", dt).replace("NN", str(len(x))).replace("CAST(K)", f"CAST({k})") \
        .replace("ParamArg(2, float32, K)", f"ParamArg(2, float32, {k})")
    sel = _allocated(src, arch)
    # the gate from one compare: its SETB (a bool mask) and/or a CMOVB (the safe index)
    assert ("setb_rm8" in sel or "cmovb_r" in sel) and "setg" not in sel and "setl" not in sel
    assert "test_rm8" not in sel, sel
    sink = parse(src)
    rng = np.random.default_rng(0)
    args = [np.zeros(len(x), np.float32), x, rng.standard_normal(k).astype(np.float32)]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_another_lower_bound_keeps_two_compares() -> None:
    x = _inputs("int32", 77)
    src = BOOL.replace("DT", "int32").replace("NN", str(len(x))).replace("CAST(K)", "CAST(77)") \
        .replace("CAST(-1) int32", "CAST(0) int32")
    sel = _allocated(src, "x86-64-v3")
    assert "setb_rm8" not in sel and sel.count("cmp_rm") == 2, sel     # 0 < x: x = 0 is out
    sink = parse(src)
    args = [np.zeros(len(x), bool), x]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))
