"""Lane k's store address is lane 0's index register plus a displacement (issue 24 item 2:
tinygrad's upcast stores 4i, 4i+1, 4i+2, 4i+3, each index its own MULACC, an LEA a lane).

kcc/isel/x86/select.py affine_near reads an address's index as an affine sum (kcc/ir/affine.py)
and, when an index of the same terms was addressed before at the same loop path, addresses
through that index's register with the constant difference folded into the displacement. The
oracle of every value is the reference interpreter.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import ARCHS, assert_same, compile_and_run, reference


# out[4i + k] = int16(x[4i + k]) * (300 + k) for k = 3, 1, 0, 2 (the sweep's int16 E_64_4,
# each lane its own factor: the lanes of an int32 x 4 load, cast and multiplied as scalars;
# with one factor for all, widen rerolls the loop and widens it): each store's index a MULACC
# of its own, in an order that does not start with lane 0
KERNEL = """# kcc-uop 1
%o = PARAM ParamArg(0, int16, 256)
%x = PARAM ParamArg(1, int32, 256)
%c2 = CAST(2) int32
%c4 = CAST(4) int32
%n = CAST(64) int32
%i = RANGE(%n) (0, WEAK)
%b = SHL(%i, %c2)
%xp = SHRINK(%x, %b, %c4)
%v = LOAD(%xp)
""" + "".join(f"""%k{k} = CAST({k}) int32
%a{k} = MULACC(%i, %c4, %k{k})
%l{k} = INDEX(%v, %k{k})
%h{k} = CAST(%l{k}) int16
%f{k} = CAST({300 + k}) int16
%w{k} = MUL(%h{k}, %f{k})
%op{k} = INDEX(%o, %a{k})
%s{k} = STORE(%op{k}, %w{k})
""" for k in (3, 1, 0, 2)) + """%g = GROUP(%s3, %s1, %s0, %s2)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="lanes")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_lane_indices_are_displacements(arch: str) -> None:
    """One index register for the four lanes (at most one LEA), the interpreter's values."""
    out = io.StringIO()
    run_pipeline(parse(KERNEL), X86Target(arch), dump_after="select", out=out)
    text = out.getvalue()
    assert text.count("lea_r32_m") <= 1, text
    # int16 lanes 2 bytes apart: lane 1 is 4 bytes below lane 3 (the first addressed)
    assert "*2 + -4]" in text, text
    sink = parse(KERNEL)
    x = (np.arange(256) * 99991 - 12345678).astype(np.int32)
    args = [np.zeros(256, np.int16), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
