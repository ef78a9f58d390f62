"""An integer compare with its constant on the left (tinygrad's padding gates: `254 < i`) is one
`cmp x, imm` with the swapped condition (SETG/SETA for c < x; SETNE/SETE as they are) in
kcc/isel/x86/alu.py icompare, not the constant moved into a register first; checked against
the reference interpreter on the edge values of each dtype, both sides of the constant."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from x86_util import assert_same, compile_and_run, reference

SRC = """# kcc-uop 1
%y = PARAM ParamArg(0, bool, NN)
%x = PARAM ParamArg(1, DT, NN)
%i.n = CAST(NN) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%v = LOAD(%px)
%c = CAST(K) DT
%r = OP(%c, %v)
%py = INDEX(%y, %i)
%st = STORE(%py, %r)
SINK(%st) KernelInfo(name="kc")
"""

CASES = [("int32", [0, -1, 254, -2**31, 2**31 - 1]), ("uint32", [0, 1, 254, 2**31 - 1]),
         ("int64", [0, -1, 254, -2**31, 2**31 - 1]), ("uint64", [0, 1, 254, 2**31 - 1])]


def _inputs(dt: str, k: int) -> np.ndarray:
    info = np.iinfo(dt)
    vals = {info.min, info.max, 0, 1, k - 1, k, k + 1, info.min + 1, info.max - 1}
    return np.array(sorted(v for v in vals if info.min <= v <= info.max), dt)


@pytest.mark.parametrize("dt,ks", CASES)
@pytest.mark.parametrize("op", ["CMPLT", "CMPNE", "CMPEQ"])
def test_constant_left_compare(dt: str, ks: list[int], op: str) -> None:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    for k in ks:
        x = _inputs(dt, k)
        src = SRC.replace("DT", dt).replace("OP", op).replace("NN", str(len(x))) \
            .replace("CAST(K)", f"CAST({k})")
        buf = io.StringIO()
        run_pipeline(parse(src), X86Target("x86-64-v3"), dump_after="allocate", out=buf)
        sel = buf.getvalue()
        assert re.search(r"cmp_rm(32|64)_imm", sel), sel            # the constant an immediate
        want = {"CMPNE": "setne", "CMPEQ": "sete",
                "CMPLT": "setg" if dt.startswith("int") else "seta"}[op]
        assert want in sel, sel
        sink = parse(src)
        args = [np.zeros(len(x), bool), x]
        assert_same(sink, compile_and_run(sink, args), reference(sink, args))


CMOV_SRC = """# kcc-uop 1
%y = PARAM ParamArg(0, DT, NN)
%x = PARAM ParamArg(1, DT, NN)
%i.n = CAST(NN) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%v = LOAD(%px)
%c = CAST(K) DT
%r = OP(%c, %v)
%z = CAST(7) DT
%w = WHERE(%r, %v, %z)
%py = INDEX(%y, %i)
%st = STORE(%py, %w)
SINK(%st) KernelInfo(name="kw")
"""


@pytest.mark.parametrize("dt,ks", CASES)
@pytest.mark.parametrize("op", ["CMPLT", "CMPNE", "CMPEQ"])
def test_constant_left_compare_of_a_cmov(dt: str, ks: list[int], op: str) -> None:
    # an integer WHERE on such a compare (kcc/passes/gates.py's safe index WHERE(254 < i, i,
    # k)): the CMOVcc reads the flags of `cmp x, imm` (int_flags), the condition swapped
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    for k in ks:
        x = _inputs(dt, k)
        src = CMOV_SRC.replace("DT", dt).replace("OP", op).replace("NN", str(len(x))) \
            .replace("CAST(K)", f"CAST({k})")
        buf = io.StringIO()
        run_pipeline(parse(src), X86Target("x86-64-v3"), dump_after="allocate", out=buf)
        sel = buf.getvalue()
        cmp = r"test_rm(32|64)_r" if k == 0 and op != "CMPLT" else r"cmp_rm(32|64)_imm"
        assert re.search(cmp, sel), sel             # the constant an immediate (0: TEST)
        # the else arm is the constant 7: it is the CMOVcc source, the load the copy, so
        # the CMOVcc reads the swapped condition's negation (kcc/isel/x86/idioms.py)
        want = {"CMPNE": "cmove", "CMPEQ": "cmovne",
                "CMPLT": "cmovle" if dt.startswith("int") else "cmovbe"}[op]
        assert want + "_" in sel, sel
        sink = parse(src)
        args = [np.zeros(len(x), x.dtype), x]
        assert_same(sink, compile_and_run(sink, args), reference(sink, args))
