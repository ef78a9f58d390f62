""".rodata constants read in place after allocation (kcc/targets/x86/foldconst.py).

A loop that needs more vector constants than x86-64-v3 has registers gets each constant
rematerialized before its use (a VMOVUPS from .rodata into a register read once); the pass
folds such a reload into its reader as a RIP-relative operand, swapping commutable sources
(and mirroring a compare's predicate) where the constant is the VEX.vvvv source, and drops
constant loads whose register is written before it is read. What is checked: the folded
shapes on hand-made allocated code (and what must not fold: a register still read later, a
NaN constant under a float add, a non-commutable reader), the loop of a kernel with 24
constants, and its values against the reference interpreter at x86-64-v3 and v4. The pass
runs before the allocation checker (KCC_CHECK_ALLOC=1 in every test), which catches a fold
that drops a load still read (tests/regalloc/test_checker_constants.py: the checker's side).
"""

from __future__ import annotations

import re

import pytest

from kcc.frontend.parser import parse
from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp, Role
from kcc.regalloc import CheckError
from kcc.targets.x86 import foldconst
from kcc.targets.x86.foldconst import fold_constants
from kcc.targets.x86.target import compile_x86
from x86_util import assert_same, compile_and_run, random_inputs, reference

X = [PReg(f"xmm{k}", "vec") for k in range(4)]
ONES = b"\x00\x00\x80\x3f" * 8          # eight float32 1.0
NANS = b"\x00\x00\xc0\x7f" * 8          # eight float32 quiet NaNs
POOL = {".LC0": ONES, ".LC1": NANS}


def _load(r: PReg, label: str = ".LC0", kind: Kind = Kind.REMAT) -> Inst:
    return Inst("vmovups_y_ym", [RegOp(r, Role.DEF), Mem()], kind=kind, arg={"rip": label},
                slot=0 if kind is Kind.REMAT else None)


def _op(form: str, d: PReg, a: PReg, b: PReg, *imm: int) -> Inst:
    return Inst(form, [RegOp(d, Role.DEF), RegOp(a), RegOp(b), *[Imm(v) for v in imm]])


def _ret() -> Inst:
    return Inst("ret", [], kind=Kind.RET)


def _fold(*insts: Inst) -> list[Inst]:
    fn = MFunction("f", list(insts))
    fold_constants(fn, POOL)
    return fn.insts


def test_a_reload_read_at_rm_folds() -> None:
    got = _fold(_load(X[1]), _op("vsubps_y_y_ym", X[0], X[0], X[1]), _ret())
    assert len(got) == 2
    sub = got[0]
    assert sub.op == "vsubps_y_y_ym" and isinstance(sub.operands[2], Mem)
    assert sub.arg == {"rip": ".LC0"} and sub.operands[1] == RegOp(X[0])


def test_a_constant_first_add_is_swapped() -> None:
    got = _fold(_load(X[1]), _op("vaddps_y_y_ym", X[0], X[1], X[0]), _ret())
    assert len(got) == 2 and got[0].operands[1] == RegOp(X[0])
    assert isinstance(got[0].operands[2], Mem)


def test_a_constant_first_compare_mirrors_its_predicate() -> None:
    # c < x is x > c: LT_OS (1) becomes GT_OS (0x0E), SDM Vol. 2 "CMPPS" Table 3-1
    got = _fold(_load(X[1]), _op("vcmpps_y_y_ym_imm8", X[2], X[1], X[0], 1), _ret())
    assert len(got) == 2 and got[0].operands[3] == Imm(0x0E)
    assert got[0].operands[1] == RegOp(X[0]) and isinstance(got[0].operands[2], Mem)


def test_a_nan_constant_is_not_swapped_under_a_float_add() -> None:
    # with both sources NaN the first one's payload is the result: the order matters
    insts = [_load(X[1], ".LC1"), _op("vaddps_y_y_ym", X[0], X[1], X[0]), _ret()]
    assert _fold(*insts) == insts


def test_a_non_commutable_reader_keeps_its_reload() -> None:
    insts = [_load(X[1]), _op("vdivps_y_y_ym", X[0], X[1], X[0]), _ret()]
    assert _fold(*insts) == insts


def test_a_register_read_again_keeps_its_reload() -> None:
    insts = [_load(X[1]), _op("vsubps_y_y_ym", X[0], X[0], X[1]),
             _op("vmulps_y_y_ym", X[2], X[0], X[1]), _ret()]
    assert _fold(*insts) == insts


def test_a_register_read_after_the_loop_end_keeps_its_reload() -> None:
    loop = Label("L")
    insts = [Inst("loop", [loop], kind=Kind.LOOP_BEGIN), _load(X[1]),
             _op("vsubps_y_y_ym", X[0], X[0], X[1]), Inst("jl", [loop], kind=Kind.LOOP_END),
             _op("vmulps_y_y_ym", X[2], X[0], X[1]), _ret()]
    assert _fold(*insts) == insts


def test_a_dead_constant_load_goes() -> None:
    loop = Label("L")
    insts = [_load(X[1], kind=Kind.OP), Inst("loop", [loop], kind=Kind.LOOP_BEGIN),
             _load(X[1], kind=Kind.OP), _op("vmulps_y_y_ym", X[0], X[0], X[1]),
             _op("vmulps_y_y_ym", X[0], X[0], X[1]), Inst("jl", [loop], kind=Kind.LOOP_END),
             _ret()]
    got = _fold(*insts)
    assert got == insts[1:]        # the first is written again in the loop before any read


def const_chain_kernel(n: int = 24, iters: int = 37, lanes: int = 8) -> str:
    """t = x*x, then n steps t = c_j + t*x (odd j, the constant first) or t*x - c_j (even
    j): n distinct vector constants live across the loop."""
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {lanes * iters})",
             f"%x = PARAM ParamArg(1, float32, {lanes * iters})",
             f"%i = RANGE({iters}) (0, LOOP)", f"%s = MUL(%i, {lanes})",
             f"%xp = SHRINK(%x, %s, {lanes})", "%xv = LOAD(%xp)", "%t0 = MUL(%xv, %xv)"]
    for j in range(1, n + 1):
        lines += [f"%c{j} = CAST({1.0 + j / 8}) float32",
                  f"%v{j} = STACK({', '.join([f'%c{j}'] * lanes)})",
                  f"%m{j} = MUL(%t{j - 1}, %xv)",
                  f"%t{j} = ADD(%v{j}, %m{j})" if j % 2 else f"%t{j} = SUB(%m{j}, %v{j})"]
    lines += [f"%op = SHRINK(%out, %s, {lanes})", f"%st = STORE(%op, %t{n})",
              "%e = END(%st, %i)", 'SINK(%e) KernelInfo(name="const_chain")']
    return "\n".join(lines) + "\n"


def test_the_loop_reads_its_constants_in_place_at_v3() -> None:
    text, _ = compile_x86([parse(const_chain_kernel())], "x86-64-v3", emit="asm")
    asm = text.decode()
    loop = asm[re.search(r"ymmword ptr \[rsi", asm).start():]     # from the loop's x load
    loads = re.findall(r"vmovups ymm\d+, ymmword ptr \[rip", loop)
    in_place = re.findall(r"v(?:add|sub)ps ymm\d+, ymm\d+, ymmword ptr \[rip", loop)
    assert not loads                    # every reload folded (13 constants stay in registers)
    assert len(in_place) == 24 - 13


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("seed", [0, 1])
def test_objects_match_the_interpreter(arch: str, seed: int) -> None:
    sink = parse(const_chain_kernel())
    args = random_inputs(sink, seed=seed)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_the_allocation_checker_catches_a_live_load_dropped(monkeypatch) -> None:
    # the pass with its liveness test broken: every constant load counts as dead
    monkeypatch.setattr(foldconst, "_dead_after", lambda *a, **k: True)
    with pytest.raises(CheckError, match=r"reads xmm\d+ holding"):
        compile_x86([parse(const_chain_kernel())], "x86-64-v3")


def test_register_keys_answer_as_touches() -> None:
    """The walks test an instruction's registers by (name, class) keys (``_regs``, no PReg
    ``==``); on random allocated instructions that answers as ``_touches``, which compares
    registers one by one: reads and writes of operands, memory bases and indices, clobbers
    and a form's implicit registers."""
    import random
    rng = random.Random(18)
    gprs = [PReg(n, "gpr") for n in ("rax", "rcx", "rdx", "rsp")]
    regs = [*X, *gprs, PReg("xmm0", "gpr")]      # (same name, another class: not equal)
    forms = ["vaddps_x_x_xm", "vmovups_x_xm", "mul_rm64", "vmovups_m128_x", "label"]
    roles = [Role.USE, Role.DEF, Role.DEF | Role.USE]
    both = 0
    for _ in range(3000):
        ops: list = []
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.7:
                ops.append(RegOp(rng.choice(regs), rng.choice(roles)))
            else:
                ops.append(Mem(rng.choice([None, *gprs]), rng.choice([None, *gprs])))
        inst = Inst(rng.choice(forms), ops, tuple(rng.sample(regs, rng.randint(0, 2))))
        r = rng.choice(regs)
        t = foldconst._regs(inst)
        key = (r.name, r.cls)
        got = (key in t[0] or r.name in t[2], key in t[1])
        assert got == foldconst._touches(inst, r), (inst, r)
        both += got == (True, True)
    assert both > 50
