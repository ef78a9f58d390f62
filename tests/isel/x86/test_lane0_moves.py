"""Lane 0 of an int32/int64 vector into a GPR is VMOVD/VMOVQ (one µop), not VPEXTRD/Q with
index 0 (two; kcc/isel/x86/ivec.py ivec_lane; issue 24, item 2: every row reduction's last
lane read). The oracle is the reference interpreter."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

HAVE_V4 = "avx512f" in open("/proc/cpuinfo").read()


def _kernel(dt: str, n: int) -> str:
    """out[0] = x[0] + x[1] + … + x[n-1] (n lanes of one vector load), out[1] = x[2]."""
    lanes = "\n".join(f"%l{j} = INDEX(%v, {j})" for j in range(n))
    chain, prev = [], "%l0"
    for j in range(1, n):
        chain.append(f"%a{j} = ADD({prev}, %l{j})")
        prev = f"%a{j}"
    body = "\n".join(chain)
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, 2)
%x = PARAM ParamArg(1, {dt}, {n})
%p = SHRINK(%x, 0, {n})
%v = LOAD(%p)
{lanes}
{body}
%o0 = INDEX(%o, 0)
%s0 = STORE(%o0, {prev})
%o1 = INDEX(%o, 1)
%s1 = STORE(%o1, %l2)
%g = GROUP(%s0, %s1)
SINK(%g) KernelInfo(name="lane0")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt,n,form", [("int32", 8, "vmovd_rm32_x"),
                                       ("int64", 4, "vmovq_r64_x")])
def test_lane0_is_a_move(arch: str, dt: str, n: int, form: str) -> None:
    text = _kernel(dt, n)
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    sel = out.getvalue()
    assert form in sel, sel
    assert not any("vpextr" in ln and ln.rstrip().endswith(", 0") for ln in sel.splitlines()), sel
    if arch == "x86-64-v4" and not HAVE_V4:
        return
    sink = parse(text)
    info = np.iinfo(np.dtype(dt))
    x = np.array([info.max, info.min, -3, 7, 1 << 20, -(1 << 30), 5, -1][:n], np.dtype(dt))
    args = [np.zeros(2, np.dtype(dt)), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
