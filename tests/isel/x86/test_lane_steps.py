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
from uop_texts import TRIU_TEXT
from x86_util import ARCHS, assert_same, compile_and_run, reference


# tinygrad's triu on an 8 x 8 int32 matrix (the sweep's triu_int E_8_2_4)
TRIU = TRIU_TEXT


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


# the same nest over 40 rows of 8 (the rows' gates the same `4j + k < row + 1`): 8 rows are
# unrolled by kcc/passes/unroll_tiny.py (each copy's gates constants, no index vector left)
TRIU40 = TRIU.replace("int32, 64)", "int32, 320)").replace(
    "%18 = RANGE(%17) (0, WEAK)", "%18 = RANGE(40) (0, WEAK)")


@pytest.mark.parametrize("arch", ARCHS)
def test_triu_index_vector_is_broadcast_plus_steps(arch: str, monkeypatch) -> None:
    """No lane insert builds the gate's index vector; the values match the interpreter.
    (FOLD_CAP 0: passes/unroll_tiny.py's folded copies would copy the nest out, its gates
    constants and no index vector left; INNER_TRIPS 0 likewise for passes/unroll_widened.py's
    copies of the loop of 2 in each row, whose index vectors are then .rodata constants.)"""
    import kcc.passes.unroll_tiny as unroll_tiny
    import kcc.passes.unroll_widened as unroll_widened
    monkeypatch.setattr(unroll_tiny, "FOLD_CAP", 0)
    monkeypatch.setattr(unroll_widened, "INNER_TRIPS", 0)
    text = _selected(TRIU40, arch)
    assert "vpinsrd" not in text and "vpaddd_x_x_xm" in text, text
    rng = np.random.default_rng(0)
    for src, n in ((TRIU40, 320), (TRIU, 64)):
        sink = parse(src)
        args = [np.zeros(n, np.int32), rng.integers(-1000, 1000, n, dtype=np.int32)]
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ARCHS)
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
