"""kcc/isel/x86/flagreuse.py: `cmp x, 0` / `test x, x` after the SUB (ADD, AND, OR, XOR,
NEG) that wrote x goes when every reader asks ZF or SF only; it stays for a reader of L or B
(the compare clears OF and CF, which SUB sets its own way), for another width, when x was
written in between, and after IMUL (its ZF is undefined). End to end: tinygrad's floor
division fix-up `(x % 7 != 0) & (x < 0)` on int64 edge values against the interpreter."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.mir import Imm, Inst, Kind, MFunction, RegOp, Role
from kcc.isel.x86.flagreuse import drop_zero_tests
from kcc.targets.x86.target import _flags_of
from x86_util import assert_same, compile_and_run, reference

D, U, DU = Role.DEF, Role.USE, Role.DEF | Role.USE


def _fn(writer: str, test: str, reader: str, between: bool = False) -> MFunction:
    fn = MFunction("k")
    a, b, c = (fn.new_vreg("gpr") for _ in range(3))
    w = Inst(writer, [RegOp(a, DU), RegOp(b, U)] if "rm" in writer.split("_")[2]
             else [RegOp(a, DU), Imm(3)])
    t = (Inst(test, [RegOp(a, U), Imm(0)]) if test.startswith("cmp")
         else Inst(test, [RegOp(a, U), RegOp(a, U)]))
    fn.insts = [w] + ([Inst("mov_r32_imm32", [RegOp(a, D), Imm(1)])] if between else []) \
        + [t, Inst(reader, [RegOp(c, D)]), Inst("ret", kind=Kind.RET)]
    return fn


@pytest.mark.parametrize("writer", ["sub_r64_rm64", "add_rm64_imm8", "and_r32_rm32",
                                    "xor_r64_rm64", "or_rm32_imm8"])
@pytest.mark.parametrize("reader", ["setne_rm8", "sete_rm8", "sets_rm8"])
def test_a_zero_test_of_a_result_goes(writer: str, reader: str) -> None:
    w = writer.split("_")[1][1:].lstrip("m")
    for test in (f"cmp_rm{w}_imm8", f"test_rm{w}_r{w}"):
        fn = _fn(writer, test, reader)
        assert drop_zero_tests(fn, _flags_of) == 1
        assert [i.op for i in fn.insts] == [writer, reader, "ret"]


@pytest.mark.parametrize("writer,test,reader,between", [
    ("sub_r64_rm64", "cmp_rm64_imm8", "setl_rm8", False),      # L reads OF
    ("sub_r64_rm64", "cmp_rm64_imm8", "setb_rm8", False),      # B reads CF
    ("sub_r64_rm64", "cmp_rm32_imm8", "setne_rm8", False),     # another width
    ("sub_r64_rm64", "test_rm64_r64", "setne_rm8", True),      # x written in between
    ("imul_r64_rm64", "test_rm64_r64", "setne_rm8", False),    # ZF undefined
])
def test_a_zero_test_stays(writer: str, test: str, reader: str, between: bool) -> None:
    fn = _fn(writer, test, reader, between)
    n = len(fn.insts)
    assert drop_zero_tests(fn, _flags_of) == 0 and len(fn.insts) == n


SRC = """# kcc-uop 1
%y = PARAM ParamArg(0, int64, NN)
%x = PARAM ParamArg(1, int64, NN)
%i.n = CAST(NN) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%v = LOAD(%px)
%seven = CAST(7) int64
%zero = CAST(0) int64
%q = CDIV(%v, %seven)
%r = CMOD(%v, %seven)
%nz = CMPNE(%r, %zero)
%neg = CMPLT(%v, %zero)
%fix = AND(%nz, %neg)
%fixi = CAST(%fix) int64
%out = SUB(%q, %fixi)
%py = INDEX(%y, %i)
%st = STORE(%py, %out)
SINK(%st) KernelInfo(name="kf")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_floor_division_fixup_matches_the_interpreter(arch: str) -> None:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    info = np.iinfo(np.int64)
    x = np.array(sorted({info.min, info.min + 1, info.max, -15, -14, -8, -7, -6, -1, 0, 1, 6,
                         7, 8, 14, 15}), np.int64)
    src = SRC.replace("NN", str(len(x)))
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="select", out=buf)
    lines = buf.getvalue().splitlines()
    subs = [k for k, line in enumerate(lines) if "sub_r64_rm64" in line]
    assert subs, buf.getvalue()
    for k in subs:          # the remainder's SUB sets the flags SETNE reads: no zero test
        assert not re.search(r"cmp_rm64_imm8 .*, 0$|test_rm64_r64", lines[k + 1]), lines[k + 1]
    sink = parse(src)
    args = [np.zeros(len(x), np.int64), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
