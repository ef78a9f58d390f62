"""Tests of kcc/passes/lane_loads.py: a vector load of an unstored argument whose lanes are only
read one by one as scalars becomes one scalar load per lane on x86 (no lane shuffles), and is
left alone where a lane is STACKed, the buffer is stored, the load is gated or the target is a
GPU. The oracle is the reference interpreter (on the graph before and after, and on the x86
object), and the listing (no VSHUFPS left)."""

from __future__ import annotations

import pytest
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.passes.lane_loads import lane_loads
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, compile_x86, cpu_flags, disasm_object


# attention's dot product: two float4 loads a row, their lanes multiplied into one scalar chain
DOT = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 16)
%a = PARAM ParamArg(1, float32, 64)
%b = PARAM ParamArg(2, float32, 64)
%i = RANGE(16) (0, WEAK)
%p = MUL(%i, 4)
%pa = SHRINK(%a, %p, 4)
%va = LOAD(%pa)
%pb = SHRINK(%b, %p, 4)
%vb = LOAD(%pb)
%a0 = INDEX(%va, 0)
%a1 = INDEX(%va, 1)
%a2 = INDEX(%va, 2)
%a3 = INDEX(%va, 3)
%b0 = INDEX(%vb, 0)
%b1 = INDEX(%vb, 1)
%b2 = INDEX(%vb, 2)
%b3 = INDEX(%vb, 3)
%m0 = MUL(%a1, %b1)
%m1 = MULACC(%a0, %b0, %m0)
%m2 = MULACC(%a2, %b2, %m1)
%m3 = MULACC(%a3, %b3, %m2)
%op = INDEX(%out, %i)
%st = STORE(%op, %m3)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="dot")
"""


def _vector_loads(g) -> list:
    return [u for u in g.toposort() if u.op is Ops.LOAD and u.shape]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_lanes_read_alone_are_scalar_loads(arch: str) -> None:
    sink = parse(DOT, "k.uop")
    g = lane_loads(sink, x86_desc(arch))
    assert len(_vector_loads(sink)) == 2 and not _vector_loads(g)
    args = random_inputs(sink, 3)
    assert_same(sink, reference(g, args), reference(sink, args))
    asm = disasm_object(compile_x86([sink], arch)[0])
    assert "vshufps" not in asm and "vextract" not in asm
    if arch == "x86-64-v3" or HAS_V4:
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_a_stacked_lane_keeps_the_vector_load() -> None:
    # lane 3 of a also goes into a vector: a permutation of the loaded register, not loads
    text = DOT.replace("%op = INDEX(%out, %i)",
                       "%sv = STACK(%a3, %a2)\n%o2 = SHRINK(%c, %p, 2)\n"
                       "%st2 = STORE(%o2, %sv)\n%op = INDEX(%out, %i)")
    text = text.replace("%e = END(%st, %i)", "%gr = GROUP(%st, %st2)\n%e = END(%gr, %i)")
    text = text.replace("%i = RANGE", "%c = PARAM ParamArg(3, float32, 64)\n%i = RANGE")
    sink = parse(text, "k.uop")
    g = lane_loads(sink, x86_desc("x86-64-v4"))
    loads = _vector_loads(g)
    assert len(loads) == 1 and loads[0].src[0].src[0].arg.slot == 1     # a's stays


def test_a_stored_buffer_and_the_gpu_are_left_alone() -> None:
    # the kernel stores b (b[0] = ...): its vector load stays one access
    text = DOT.replace("%op = INDEX(%out, %i)", "%bp = INDEX(%b, 0)\n%sb = STORE(%bp, %m3)\n"
                       "%op = INDEX(%out, %i)")
    text = text.replace("%e = END(%st, %i)", "%gr = GROUP(%st, %sb)\n%e = END(%gr, %i)")
    sink = parse(text, "k.uop")
    g = lane_loads(sink, x86_desc("x86-64-v4"))
    assert [u.src[0].src[0].arg.slot for u in _vector_loads(g)] == [2]
    plain = parse(DOT, "k.uop")
    assert lane_loads(plain, CUDA) is plain


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_lanes_split_in_a_remainder_loop_keep_its_range(arch: str) -> None:
    """tinygrad's r_3_5_4_6 (test_ops' test_sum): unroll jams its 5-column loop by 4 and
    orders a remainder loop after it; the lanes split in both loops read each loop's own
    counter. A plain substitute left the remainder's new loads on the RANGE the walk had
    rebuilt ("this RANGE is closed by more than one END" after widen); the values are
    substituted with the graph now."""
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / "data" / "kernels" / "sum_remainder_lanes.uop"
    sink = parse(src.read_text())
    args = random_inputs(sink, 5)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
