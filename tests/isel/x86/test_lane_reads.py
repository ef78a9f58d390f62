"""x86 selection of a float32 lane read as a scalar (kcc/isel/x86/vec.py `lane`): lane 0 is
the vector's own register (a scalar reads only the low lane), lane 1 a VPSRLQ by 32 (ports
0/1), where every lane used to be a VSHUFPS (port 5 only): half_max_nan's MAX over the 8 lanes
of two converted vectors queued on port 5. Lanes 2 and 3 stay one VSHUFPS each.
Values bit for bit as the reference interpreter's (MAX's NaN and signed-zero order)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from x86_util import ARCHS, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object


# out[0] = max(v[0], v[1], v[2], v[3]) in this order, v = a[0:4] * 2 (a vector value; no
# loop, which widen would turn into lanes of four rows)
LANES = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 1)
%a = PARAM ParamArg(1, float32, 4)
%p = SHRINK(%a, 0, 4)
%l = LOAD(%p)
%two = CAST(2.0) float32
%t = STACK(%two, %two, %two, %two)
%v = MUL(%l, %t)
%x0 = INDEX(%v, 0)
%x1 = INDEX(%v, 1)
%x2 = INDEX(%v, 2)
%x3 = INDEX(%v, 3)
%m1 = MAX(%x0, %x1)
%m2 = MAX(%m1, %x2)
%m3 = MAX(%m2, %x3)
%po = INDEX(%o, 0)
%st = STORE(%po, %m3)
SINK(%st) KernelInfo(name="lane_reads")
"""
NAN = float("nan")
# NaN first (it sticks), NaN later (skipped), signed zeros (the first kept), -inf
CASES = [[NAN, 1.0, 2.0, 3.0], [1.0, NAN, -1.0, 0.5], [-0.0, 0.0, -0.0, 0.0],
         [0.0, -0.0, -np.inf, 0.0], [-np.inf, 4.0, NAN, 3.0]]


@pytest.mark.parametrize("arch", ARCHS)
def test_lanes_without_shuffles(arch: str) -> None:
    sink = parse(LANES, "lane_reads.uop")
    for a in CASES:
        args = [np.zeros(1, np.float32), np.array(a, np.float32)]
        want = reference(sink, args)
        got = compile_and_run(sink, args, arch)
        assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32)), (a, got[0])
    text = disasm_object(compile_x86([sink], arch)[0])
    assert len(re.findall(r"vpsrlq\s+xmm\d+, xmm\d+, 0x20", text)) == 1, text   # lane 1
    assert len(re.findall(r"vshufps", text)) == 2, text                          # lanes 2, 3
