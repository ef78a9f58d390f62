"""An integer vector whose lanes are one sum plus lane constants is a broadcast and one add
(issue 24 item 2: triu_int's E_8_2_4, 0.11x clang).

tinygrad's upcast gates compare lane indices [4j, 4j+1, 4j+2, 4j+3] with the row; the STACK
of those four sums was four VPINSRD, a dependent chain each iteration. kcc/isel/x86/ivec.py
lane_steps reads each lane as an affine sum (kcc/ir/affine.py): the same terms, constants
c_k, so the vector is broadcast(lane 0) + [c_k - c_0] (one VPADDD of a .rodata constant).
The oracle of every value is the reference interpreter.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.isel.x86.ivec import lane_steps
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import assert_same, compile_and_run, reference

ARCHES = ["x86-64-v3", pytest.param("x86-64-v4", marks=pytest.mark.skipif(
    "avx512f" not in open("/proc/cpuinfo").read(), reason="no AVX-512 here"))]

# tinygrad's triu on an 8 x 8 int32 matrix (the sweep's triu_int E_8_2_4)
TRIU = """# kcc-uop 1
%2 = PARAM ParamArg(0, int32, 64)
%3 = PARAM ParamArg(1, int32, 64)
%5 = CAST(true) bool
%7 = CAST(0) int32
%9 = CAST(1) int32
%11 = CAST(2) int32
%13 = CAST(3) int32
%15 = CAST(4) int32
%17 = CAST(8) int32
%18 = RANGE(%17) (0, WEAK)
%19 = ADD(%18, %9)
%20 = RANGE(%11, %18) (1, WEAK)
%21 = SHL(%20, %11)
%22 = MULACC(%18, %17, %21)
%23 = ADD(%22, %9)
%24 = INDEX(%3, %23)
%25 = MULACC(%20, %15, %9)
%26 = CMPLT(%25, %19)
%27 = CMPNE(%26, %5)
%28 = LOAD(%24, %7, %27)
%29 = ADD(%22, %11)
%30 = INDEX(%3, %29)
%31 = MULACC(%20, %15, %11)
%32 = CMPLT(%31, %19)
%33 = CMPNE(%32, %5)
%34 = LOAD(%30, %7, %33)
%35 = ADD(%22, %13)
%36 = INDEX(%3, %35)
%37 = MULACC(%20, %15, %13)
%38 = CMPLT(%37, %19)
%39 = CMPNE(%38, %5)
%40 = LOAD(%36, %7, %39)
%41 = INDEX(%3, %22)
%42 = CMPLT(%21, %19)
%43 = CMPNE(%42, %5)
%44 = LOAD(%41, %7, %43)
%45 = STACK(%44, %28, %34, %40)
%46 = SHRINK(%2, %22, %15)
%47 = STORE(%46, %45)
%48 = GROUP(%47)
%49 = END(%48, %20)
%50 = END(%49, %18)
SINK(%50) KernelInfo(name="E_8_2_4")
"""


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


# the same nest over 40 rows of 8 (the rows' gates the same `4j + k < row + 1`): 8 rows are
# unrolled by kcc/passes/unroll_tiny.py (each copy's gates constants, no index vector left)
TRIU40 = TRIU.replace("int32, 64)", "int32, 320)").replace(
    "%18 = RANGE(%17) (0, WEAK)", "%18 = RANGE(40) (0, WEAK)")


@pytest.mark.parametrize("arch", ARCHES)
def test_triu_index_vector_is_broadcast_plus_steps(arch: str, monkeypatch) -> None:
    """No lane insert builds the gate's index vector; the values match the interpreter.
    (FOLD_CAP 0: passes/unroll_tiny.py's folded copies would copy the nest out, its gates
    constants and no index vector left.)"""
    import kcc.passes.unroll_tiny as unroll_tiny
    monkeypatch.setattr(unroll_tiny, "FOLD_CAP", 0)
    text = _selected(TRIU40, arch)
    assert "vpinsrd" not in text and "vpaddd_x_x_xm" in text, text
    rng = np.random.default_rng(0)
    for src, n in ((TRIU40, 320), (TRIU, 64)):
        sink = parse(src)
        args = [np.zeros(n, np.int32), rng.integers(-1000, 1000, n, dtype=np.int32)]
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ARCHES)
def test_triu_copied_out_matches_the_interpreter(arch: str) -> None:
    """As the pipeline compiles it (its folded copies, no loop), the same values."""
    assert "jl" not in _selected(TRIU, arch)
    sink = parse(TRIU)
    rng = np.random.default_rng(1)
    args = [np.zeros(64, np.int32), rng.integers(-1000, 1000, 64, dtype=np.int32)]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_lane_steps_reads_sums() -> None:
    """Steps of v, v+1, v-3 (v a loaded value) are [0, 1, -3]; 2*v beside v gives None."""
    sink = parse("""# kcc-uop 1
%o = PARAM ParamArg(0, int32, 4)
%x = PARAM ParamArg(1, int32, 1)
%c0 = CAST(0) int32
%xp = INDEX(%x, %c0)
%v = LOAD(%xp)
%a = ADD(%v, 1)
%b = SUB(%v, 3)
%d = MUL(%v, 2)
%s = STACK(%v, %a, %b, %d)
%op = SHRINK(%o, %c0, 4)
%st = STORE(%op, %s)
SINK(%st) KernelInfo(name="steps")
""")
    stack = next(u for u in sink.toposort() if u.op is Ops.STACK)
    v, a, b, d = stack.src
    assert lane_steps((v, a, b)) == [0, 1, -3]
    assert lane_steps((a, v, b)) == [0, -1, -4]
    assert lane_steps((v, d)) is None
