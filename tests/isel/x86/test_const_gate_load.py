"""A load gated by constant lanes, 0 in the others, is one VBLENDPS of zero and memory
(kcc/isel/x86/mem.py const_gate_load): triu_int's E_8_2_4, whose 8 x 2 iterations unroll_tiny
makes 7 rows of 8 int32 loads at constant lane masks. The oracle is the reference
interpreter."""

from __future__ import annotations

import io

import numpy as np
import pytest
from uop_texts import TRIU_TEXT
from x86_util import assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target


def _ops(text: str, arch: str) -> list[str]:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return [s.split(":", 1)[1].split()[0] for s in out.getvalue().splitlines()
            if ":" in s and s.strip() and not s.startswith(";")]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_constant_lane_gates_are_a_blend_of_zero(arch: str) -> None:
    # (main: MOV, KMOVW and a zero-masked VMOVDQU32 a row on v4, a mask load and VPMASKMOVD on
    # v3: 3.2 ns a call against clang's 3.1; blended: 2.8)
    ops = _ops(TRIU_TEXT, arch)
    assert ops.count("vblendps_y_y_ym_imm8") == 7, ops
    assert not any(o.startswith(("kmov", "vpmaskmov", "vmovdqu32")) for o in ops), ops


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_blended_rows_run_like_the_interpreter(arch: str) -> None:
    sink = parse(TRIU_TEXT)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_a_gate_of_values_is_not_blended() -> None:
    # a gate that is not constant lanes keeps its masked load (x86-64-v4: an opmask)
    text = """# kcc-uop 1
%o = PARAM ParamArg(0, int32, 8)
%x = PARAM ParamArg(1, int32, 8)
%n = PARAM ParamArg(2, int32, vmin_vmax=(0, 8), addrspace=ALU)
%z = CAST(0) int32
%p = SHRINK(%x, %z, 8)
%g = CMPLT(%z, %n)
%gs = STACK(%g, %g, %g, %g, %g, %g, %g, %g)
%zs = STACK(%z, %z, %z, %z, %z, %z, %z, %z)
%v = LOAD(%p, %zs, %gs)
%po = SHRINK(%o, %z, 8)
%st = STORE(%po, %v)
SINK(%st) KernelInfo(name="gated")
"""
    assert "vblendps_y_y_ym_imm8" not in _ops(text, "x86-64-v4")
    sink = parse(text)
    args = [np.zeros(8, np.int32), np.arange(8, dtype=np.int32), np.int32(3)]
    assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))
