"""Scalar bool logic on lanes of two opmasks is one KAND/KOR/KXOR (issue 24 item 2: logical
and bool_xor E_64_4, 0.55x and 0.8x clang).

tinygrad's `(0 < x[j]) | (y[j] < -1)` per upcast lane j, each lane then stored as a bool:
the two compares are vector compares into opmasks (x86-64-v4), and the OR of lane j was two
lane reads (KMOVD, SHR, AND each) and a GPR OR. kcc/isel/x86/kmask.py klane_logic makes the
KOR once per loop nest and reads lane j of it; kcc/isel/dce.py eliminate_dead_chains removes
the lane reads nothing reads any more. The oracle of every value is the reference interpreter.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import NEEDS_V4, assert_same, compile_and_run, reference


# elements: 4 * 512 (a loop; 64 float4s, 8 widened blocks, would be straight-line code,
# passes/unroll_widened.py, and the counts below per block)
N = 2048


def _kernel(op: str, gap: int = 1) -> str:
    """out[gap*(4i + j)] = (0 < x[4i + j]) OP (y[4i + j] < -1) for j < 4, lanes of float4
    loads. gap 1: the stores are consecutive, and slp packs them into one bool vector store;
    gap 2: each lane is stored alone."""
    head = f"""# kcc-uop 1
%o = PARAM ParamArg(0, bool, {N * gap})
%cg = CAST({4 * gap}) int32"""
    head += """
%x = PARAM ParamArg(1, float32, NN)
%y = PARAM ParamArg(2, float32, NN)
%c2 = CAST(2) int32
%c4 = CAST(4) int32
%n = CAST(NQ) int32
%z = CAST(0.0) float32
%m1 = CAST(-1.0) float32
%i = RANGE(%n) (0, WEAK)
%b = SHL(%i, %c2)
%xp = SHRINK(%x, %b, %c4)
%xv = LOAD(%xp)
%yp = SHRINK(%y, %b, %c4)
%yv = LOAD(%yp)
"""
    lanes = "".join(f"""%k{j} = CAST({j}) int32
%kg{j} = CAST({gap * j}) int32
%a{j} = MULACC(%i, %cg, %kg{j})
%x{j} = INDEX(%xv, %k{j})
%y{j} = INDEX(%yv, %k{j})
%p{j} = CMPLT(%z, %x{j})
%q{j} = CMPLT(%y{j}, %m1)
%r{j} = {op}(%p{j}, %q{j})
%op{j} = INDEX(%o, %a{j})
%s{j} = STORE(%op{j}, %r{j})
""" for j in range(4))
    head = head.replace("NN", str(N)).replace("NQ", str(N // 4))
    return head + lanes + """%g = GROUP(%s0, %s1, %s2, %s3)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="logic")
"""


@NEEDS_V4
@pytest.mark.parametrize("op,kop", [("OR", "korb"), ("AND", "kandb"), ("XOR", "kxorb")])
def test_lane_logic_is_one_opmask_op(op: str, kop: str) -> None:
    """One KOR/KAND/KXOR an iteration, one KMOVD of it and one lane read a stored lane (lanes
    stored apart); the interpreter's values. Stored consecutively, the lanes are one bool
    vector store: one opmask op, no lane read."""
    for gap in (2, 1):
        text = _kernel(op, gap)
        out = io.StringIO()
        run_pipeline(parse(text), X86Target("x86-64-v4"), dump_after="select", out=out)
        sel = out.getvalue()
        if gap == 2:
            # one KMOVD of the KOR's bits (kmask.kbits), one lane read (AND 1) a lane
            assert sel.count(kop) == 1 and sel.count("kmovd_r32_k") == 1, sel
            assert sel.count("and_rm32_imm8") == 4, sel
        else:
            assert sel.count(kop[:-1]) == 1 and "kmovd_r32_k" not in sel, sel
        sink = parse(text)
        rng = np.random.default_rng(5)
        x = rng.uniform(-3, 3, N).astype(np.float32)
        y = rng.uniform(-3, 3, N).astype(np.float32)
        x[:4], y[:4] = [np.nan, 0.0, -0.0, np.inf], [-1.0, np.nan, -np.inf, -2.0]
        args = [np.zeros(N * gap, np.bool_), x, y]
        assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))
