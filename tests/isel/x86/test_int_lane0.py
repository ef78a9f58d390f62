"""x86 selection of lane 0 of a 4- or 8-byte integer vector read into a GPR (kcc/isel/x86/icast.py
`ivec_lane`): a VMOVD/VMOVQ (one µop), where VPEXTRD/Q imm 0 is two (int16's
E_64_4: four int32 lanes of an xmm load, each narrowed and multiplied as a scalar; clang reads
lane 0 with a move too). Other lanes stay VPEXTR*. Values as the reference interpreter's."""

from __future__ import annotations

import re

import pytest
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object



def _lanes(dt: str, narrow: str, n: int) -> str:
    """out[4i + k] = narrow(x[4i : 4i+4][k]) * 300 for k < 4 (int16's E_64_4 at int32 and
    int16): each lane of a vector load read as a scalar."""
    ks = range(4)
    lines = [f"%l{k} = INDEX(%v, {k})\n%c{k} = CAST(%l{k}) {narrow}\n"
             f"%m{k} = MUL(%c{k}, %k300)\n%a{k} = MULACC(%r, 4, {k})\n"
             f"%p{k} = INDEX(%o, %a{k})\n%s{k} = STORE(%p{k}, %m{k})" for k in ks]
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {narrow}, {4 * n})
%x = PARAM ParamArg(1, {dt}, {4 * n})
%k300 = CAST(300) {narrow}
%r = RANGE({n}) (0, LOOP)
%b = SHL(%r, 2)
%q = SHRINK(%x, %b, 4)
%v = LOAD(%q)
""" + "\n".join(lines) + f"""
%g = GROUP({", ".join(f"%s{k}" for k in ks)})
%e = END(%g, %r)
SINK(%e) KernelInfo(name="lanes")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt,narrow,lane0", [("int32", "int16", r"vmovd\s+e\w+, xmm"),
                                             ("int64", "int64", r"vmovq\s+r\w+, xmm")])
def test_lane0_is_a_move(arch: str, dt: str, narrow: str, lane0: str) -> None:
    sink = parse(_lanes(dt, narrow, 64))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
    text = disasm_object(compile_x86([sink], arch)[0])
    if arch == "x86-64-v4" and dt == "int64":
        # AVX-512 multiplies int64 lanes in place (VPMULLQ): no lane is read into a GPR at all
        assert not re.search(r"vpextrq|vmovq\s+r\w+, xmm", text), text
        return
    assert re.search(lane0, text), text
    assert not re.search(r"vpextr[dq]\s+\w+, xmm\d+, 0\s*$", text, re.M), text
