"""x86 selection of a float32 STACK of scalars read from memory (kcc/isel/x86/vec.py
`build128`): each lane after the first is VBROADCASTSS m32 (a load-port micro-op) and
VBLENDPS imm8 (ports 0/1/5), where VINSERTPS m32 also took port 5, which F16C conversions
and shuffles queue on (half_softmax r_5_4_77's four strided loads a step). VBLENDPS has no
EVEX form: on x86-64-v4, whose allocator hands out xmm16-31 first, its operands stay in
xmm0-15. Values bit for bit as the reference interpreter's."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import ARCHS, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object


# out[4i + k] = max(a[i + 77k], b[4i + k]): four strided loads a step, one vector MAX (64
# steps: a loop unroll_tiny leaves as it is)
STRIDED = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 256)
%a = PARAM ParamArg(1, float32, 300)
%b = PARAM ParamArg(2, float32, 256)
%r = RANGE(64) (0, LOOP)
%s = SHL(%r, 2)
%pb = SHRINK(%b, %s, 4)
%vb = LOAD(%pb)
""" + "".join(f"""%i{k} = ADD(%r, {77 * k})
%p{k} = INDEX(%a, %i{k})
%l{k} = LOAD(%p{k})
%b{k} = INDEX(%vb, {k})
%y{k} = MAX(%l{k}, %b{k})
""" for k in range(4)) + """%y = STACK(%y0, %y1, %y2, %y3)
%po = SHRINK(%o, %s, 4)
%st = STORE(%po, %y)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="strided_stack")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_strided_lanes_are_broadcasts_and_blends(arch: str) -> None:
    sink = parse(STRIDED, "strided_stack.uop")
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, 300).astype(np.float32)
    a[[0, 78, 160]] = np.nan
    b = rng.uniform(-2, 2, 256).astype(np.float32)
    b[[1, 6]] = np.nan
    args = [np.zeros(256, np.float32), a, b]
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32)), (got[0], want[0])
    text = disasm_object(compile_x86([sink], arch)[0])
    assert text.count("vblendps") == 3 and text.count("vbroadcastss") == 3, text
    assert "vinsertps" not in text, text
