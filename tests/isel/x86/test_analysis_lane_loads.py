"""Float vector loads read lane by lane are read from memory a lane at a time (kcc/isel/x86/
analysis.py lane_loads; issue 24, item 2: the sweep's half_sum r_32_8 ran 0.54x clang, each
lane of its float4 loads taken out by a VSHUFPS, one port's work, where clang adds each lane
from memory: `vaddss x, x, [mem + 4k]`).

The oracle is the reference interpreter (the same adds in the same order)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import ARCHS, assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target


# out[i] = x[4i] + x[4i+1] + x[4i+2] + x[4i+3], the float4 load's lanes summed
SUM4 = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 16)
%x = PARAM ParamArg(1, float32, 64)
%i = RANGE(16) (0, LOOP)
%s = SHL(%i, 2)
%p = SHRINK(%x, %s, 4)
%v = LOAD(%p)
%l0 = INDEX(%v, 0)
%l1 = INDEX(%v, 1)
%l2 = INDEX(%v, 2)
%l3 = INDEX(%v, 3)
%a = ADD(%l0, %l1)
%b = ADD(%a, %l2)
%c = ADD(%b, %l3)
%po = INDEX(%o, %i)
%st = STORE(%po, %c)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="sum4")
"""

# the same sum stored into x[i] (a buffer the kernel stores: the selector's rule, not the pass)
SUM4_STORED = SUM4.replace("%po = INDEX(%o, %i)", "%po = INDEX(%x, %i)")
# SUM4 over 64 rows: a loop (unroll_tiny takes SUM4's 16 rows, whose copies slp then
# transposes: 6.4 ns a call at x86-64-v3 against 9.6 as this module's loop of lane loads)
SUM4_LONG = SUM4.replace("ParamArg(0, float32, 16)", "ParamArg(0, float32, 64)").replace(
    "ParamArg(1, float32, 64)", "ParamArg(1, float32, 256)").replace("RANGE(16)", "RANGE(64)")


@pytest.mark.parametrize("arch", ARCHS)
def test_lanes_read_from_memory_match_the_interpreter(arch: str) -> None:
    sink = parse(SUM4)
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    x[5], x[9] = np.inf, np.nan
    args = [np.zeros(16, np.float32), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_lanes_are_scalar_loads_not_shuffles(arch: str) -> None:
    """The selector's rule, on a buffer the kernel also stores (out[i] written into x[i],
    after the lanes are read): kcc/passes/lane_loads.py leaves loads of stored buffers to
    it. SUM4_LONG as written is the pass's (its lanes scalar loads before widen; on x86-64-v4
    the loop then widens with stride-4 gathers): no shuffle either way."""
    out = io.StringIO()
    run_pipeline(parse(SUM4_STORED), X86Target(arch), dump_after="select", out=out)
    text = out.getvalue()
    assert "vshufps" not in text and "vmovups" not in text, text
    assert text.count("vaddss_x_x_xm32") == 3 and "vmovss_x_m32" in text, text
    out = io.StringIO()
    run_pipeline(parse(SUM4_LONG), X86Target(arch), dump_after="select", out=out)
    assert "vshufps" not in out.getvalue(), out.getvalue()
    for src in (SUM4, SUM4_STORED):
        sink = parse(src)
        x = np.random.default_rng(2).standard_normal(64).astype(np.float32)
        args = [np.zeros(16, np.float32), x]
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_lane_read_twice_is_loaded_once(arch: str) -> None:
    """A lane with several readers is one scalar load where the lane is (the sweep's
    matmul_36x48 r_36_16_3_16_4 was refused when its first reader took the memory operand;
    that schedule is the sweep kernel's, checked by kcc run --check, not this one's)."""
    text = SUM4.replace("%a = ADD(%l0, %l1)", "%a = ADD(%l1, %l0)")
    text = text.replace("%c = ADD(%b, %l3)", "%d = ADD(%b, %l3)\n%c = ADD(%d, %l0)")
    sink = parse(text)
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    args = [np.zeros(16, np.float32), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
