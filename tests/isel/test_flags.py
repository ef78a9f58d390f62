"""Tests of kcc/isel/flags.py drop_repeated_compares on hand-built machine functions: a
compare that repeats the one its readers' flags already come from goes; one whose operand
was written in between, one past a label, or one with other operands stays."""

from __future__ import annotations

from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, RegOp, Role
from kcc.isel.flags import drop_repeated_compares
from kcc.targets.x86.target import _flags_of

D, U, DU = Role.DEF, Role.USE, Role.DEF | Role.USE


def _fn(n: int = 4) -> tuple[MFunction, list]:
    fn = MFunction("k")
    return fn, [fn.new_vreg("gpr") for _ in range(n)]


def _cmp(r, k: int = 8) -> Inst:
    return Inst("cmp_rm32_imm8", [RegOp(r, U), Imm(k)])


def test_a_repeated_compare_goes() -> None:
    fn, v = _fn()
    fn.insts = [_cmp(v[0]),
                Inst("setl_rm8", [RegOp(v[1], D)]),
                Inst("lea_r32_m", [RegOp(v[2], D), Mem(v[0], None, 1, 4)]),   # no flags
                _cmp(v[0]),
                Inst("cmovl_r32_rm32", [RegOp(v[3], DU), RegOp(v[2], U)]),
                Inst("ret", kind=Kind.RET)]
    assert drop_repeated_compares(fn, _flags_of) == 1
    assert [i.op for i in fn.insts].count("cmp_rm32_imm8") == 1


def test_a_compare_after_its_operand_changed_stays() -> None:
    fn, v = _fn()
    fn.insts = [_cmp(v[0]),
                Inst("setl_rm8", [RegOp(v[1], D)]),
                Inst("mov_r32_imm32", [RegOp(v[0], D), Imm(3)]),   # v0 written in between
                _cmp(v[0]),
                Inst("cmovl_r32_rm32", [RegOp(v[3], DU), RegOp(v[2], U)]),
                Inst("ret", kind=Kind.RET)]
    assert drop_repeated_compares(fn, _flags_of) == 0
    assert len(fn.insts) == 6


def test_other_operands_a_flag_writer_or_a_label_between_keep_it() -> None:
    fn, v = _fn()
    fn.insts = [_cmp(v[0]), _cmp(v[0], 9),                               # another immediate
                Inst("add_rm32_imm8", [RegOp(v[1], DU), Imm(1)]), _cmp(v[0], 9),   # ADD
                Inst("label", [Label(".L1")], kind=Kind.LABEL), _cmp(v[0], 9),     # a label
                Inst("setl_rm8", [RegOp(v[2], D)]),
                Inst("ret", kind=Kind.RET)]
    assert drop_repeated_compares(fn, _flags_of) == 0
