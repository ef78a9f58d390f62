"""kcc/isel/x86/loopexit.py: a loop whose counter nothing but its own step reads ends on a
strength-reduced sum instead (`cmp n, B*step`; the counter's MOV and ADD go); a counter the
body reads stays. End to end on u64_div-like and strided loops against the interpreter."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, RegOp, Role
from kcc.isel.x86.loopexit import exit_on_sums
from x86_util import assert_same, compile_and_run, reference

D, U, DU = Role.DEF, Role.USE, Role.DEF | Role.USE


def _loop(read_counter: bool) -> tuple[MFunction, list]:
    fn = MFunction("k")
    p, i, n, t = (fn.new_vreg("gpr") for _ in range(4))
    body = [Inst("mov_r32_rm32", [RegOp(t, D), Mem(p, n, 4)])]
    if read_counter:
        body.append(Inst("mov_rm32_r32", [Mem(p, i, 4), RegOp(t, U)]))
    fn.insts = [Inst("mov_r32_imm32", [RegOp(i, D), Imm(0)]),
                Inst("mov_r32_imm32", [RegOp(n, D), Imm(0)]),
                Inst("label", [Label(".L")], kind=Kind.LOOP_BEGIN), *body,
                Inst("mov_rm32_r32", [Mem(p, n, 4, 4), RegOp(t, U)]),
                Inst("add_rm32_imm8", [RegOp(n, DU), Imm(5)]),
                Inst("add_rm32_imm8", [RegOp(i, DU), Imm(1)]),
                Inst("cmp_rm32_imm8", [RegOp(i, U), Imm(10)]),
                Inst("jl_rel32", [Label(".L")], kind=Kind.LOOP_END),
                Inst("ret", kind=Kind.RET)]
    return fn, [p, i, n, t]


def test_the_loop_ends_on_its_sum() -> None:
    fn, (p, i, n, t) = _loop(False)
    assert exit_on_sums(fn) == 1
    ops = [x.op for x in fn.insts]
    # the sum's step is a 64-bit ADD now that the loop ends on it (loopexit.step_form: n
    # stays in [0, 50)); its compare stays 32-bit
    assert ops.count("mov_r32_imm32") == 1 and ops.count("add_rm32_imm8") == 0
    assert ops.count("add_rm64_imm8") == 1 and fn.insts[-4].operands[0].reg is n
    cmp = fn.insts[-3]
    assert cmp.operands[0].reg is n and cmp.operands[1] == Imm(50)
    assert not any(i in x.uses() or i in x.defs() for x in fn.insts)


def test_a_counter_the_body_reads_stays() -> None:
    fn, _ = _loop(True)
    n = len(fn.insts)
    assert exit_on_sums(fn) == 0 and len(fn.insts) == n


SRC = """# kcc-uop 1
%y = PARAM ParamArg(0, DT, 50)
%x = PARAM ParamArg(1, DT, 50)
%n = CAST(50) int32
%r = RANGE(%n) (0, WEAK)
%px = INDEX(%x, %r)
%v = LOAD(%px)
%k = CAST(1000003) DT
%q = CDIV(%v, %k)
%py = INDEX(%y, %r)
%st = STORE(%py, %q)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="kd")
"""


@pytest.mark.parametrize("dt", ["uint64", "int64", "int32"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_division_loops_match_the_interpreter(dt: str, arch: str) -> None:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    src = SRC.replace("DT", dt)
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="allocate", out=buf)
    rng = np.random.default_rng(0)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, 50, dtype=dt, endpoint=True)
    sink = parse(src)
    args = [np.zeros(50, dt), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
    if dt == "uint64":              # an unrolled loop over sums: one add for its counter
        text = buf.getvalue()
        assert text.count("add_rm32_imm8") + text.count("add_rm64_imm8") == 1, text
