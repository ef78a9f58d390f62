"""xmm16-31 on x86-64-v4: allocatable there (never on v3), kept out of VEX-only forms (the
allocator's per-operand restriction, verified by the independent checker), and right against
the interpreter for kernels with more live vectors than 16."""

from __future__ import annotations

import io
import re

import pytest

from kcc.frontend.parser import parse
from kcc.encode.x86_table import FORMS, KINDS
from kcc.ir.mir import Imm, Inst, MFunction, PReg, RegOp, Role
from kcc.regalloc import CheckError, check_allocation
from kcc.targets.x86 import V4_FLAGS, X86RegInfo, compile_x86, cpu_flags, disasm_object
from x86_util import assert_same, compile_and_run, random_inputs, reference

HAS_V4 = all(f in cpu_flags() for f in V4_FLAGS)
needs_v4 = pytest.mark.skipif(not HAS_V4, reason="this CPU has no AVX-512 (x86-64-v4 objects "
                              "cannot run here)")
HIGH = re.compile(r"\b[xyz]mm(1[6-9]|2\d|3[01])\b")


def _pressure_kernel(nvec: int, iters: int = 8) -> str:
    """nvec float32x4 vectors loaded before the loop and all used in every iteration, every
    third one through a compare and a blend (vcmpps/vblendvps, VEX-only forms)."""
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {4 * iters})",
             f"%a = PARAM ParamArg(1, float32, {4 * nvec})",
             f"%x = PARAM ParamArg(2, float32, {4 * iters})"]
    for j in range(nvec):
        lines += [f"%p{j} = SHRINK(%a, {4 * j}, 4)", f"%v{j} = LOAD(%p{j})"]
    lines += [f"%i = RANGE({iters}) (0, LOOP)", "%s = MUL(%i, 4)", "%xp = SHRINK(%x, %s, 4)",
              "%xv = LOAD(%xp)", "%t0 = MUL(%xv, %v0)"]
    for j in range(1, nvec):
        k = j - 1
        if j % 3 == 0:
            lines += [f"%c{j} = CMPLT(%t{k}, %v{j})", f"%t{j} = WHERE(%c{j}, %v{j}, %t{k})"]
        elif j % 3 == 1:
            lines.append(f"%t{j} = MUL(%t{k}, %v{j})")
        else:
            lines.append(f"%t{j} = ADD(%t{k}, %v{j})")
    lines += ["%op = SHRINK(%out, %s, 4)", f"%st = STORE(%op, %t{nvec - 1})",
              "%e = END(%st, %i)", 'SINK(%e) KernelInfo(name="xmm_pressure")']
    return "\n".join(lines) + "\n"


def _listing(src: str, arch: str) -> str:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86 import X86Target
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="allocate", out=buf)
    return buf.getvalue()


def test_v3_never_names_xmm16_31() -> None:
    src = _pressure_kernel(28)
    assert not HIGH.search(_listing(src, "x86-64-v3"))
    obj, _ = compile_x86([parse(src)], "x86-64-v3")
    assert not HIGH.search(disasm_object(obj))


def test_v4_keeps_28_vectors_in_registers() -> None:
    src = _pressure_kernel(28)
    v3, v4 = _listing(src, "x86-64-v3"), _listing(src, "x86-64-v4")
    assert "; fill" in v3 or "; remat" in v3         # 28 vectors do not fit in 16 ...
    assert "; fill" not in v4 and "; remat" not in v4  # ... but do in 32
    assert HIGH.search(v4)
    # capstone reads the high registers back from the bytes (EVEX.R'/V'/X decoded)
    obj, _ = compile_x86([parse(src)], "x86-64-v4")
    text = disasm_object(obj)
    assert HIGH.search(text)
    for line in text.splitlines():
        if re.search(r"vblendvps|vcmp\w*ps", line):      # VEX-only: low registers alone
            assert not HIGH.search(line), line


@needs_v4
@pytest.mark.parametrize("nvec", [20, 28, 40])
def test_v4_pressure_kernels_match_the_interpreter(nvec: int) -> None:
    sink = parse(_pressure_kernel(nvec))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


def _alloc(form: str, regs: list[str], imm: list[int]) -> tuple[MFunction, MFunction]:
    """``vzero`` then one ``form`` instruction reading its value, and a hand allocation of it
    with ``regs`` (the vzero's register first, then the form's result)."""
    before = MFunction("h")
    z, r = before.new_vreg("vec"), before.new_vreg("vec")
    nsrc = sum(KINDS[o.kind].cls == "vec" for o in FORMS[form].operands) - 1
    before.insts = [Inst("vzero", [RegOp(z, Role.DEF)]),
                    Inst(form, [RegOp(r, Role.DEF), *[RegOp(z, Role.USE)] * nsrc,
                                *map(Imm, imm)])]
    src, dst = PReg(regs[0], "vec"), PReg(regs[1], "vec")
    after = MFunction("h", [Inst("vzero", [RegOp(src, Role.DEF)]),
                            Inst(form, [RegOp(dst, Role.DEF), *[RegOp(src, Role.USE)] * nsrc,
                                        *map(Imm, imm)])])
    return before, after


def test_checker_refuses_xmm16_in_a_vex_only_operand() -> None:
    info = X86RegInfo(0, 64)
    # vaddps has an EVEX twin: xmm16 is fine there
    check_allocation(*_alloc("vaddps_x_x_xm", ["xmm16", "xmm1"], []), info)
    # vblendvps (a /is4 register mask) is VEX only: the same allocation is wrong
    with pytest.raises(CheckError, match="cannot be xmm16"):
        check_allocation(*_alloc("vblendvps_x_x_xm_x", ["xmm16", "xmm1"], []), info)
    # a VEX compare's vector result (EVEX compares write a k mask)
    check_allocation(*_alloc("vcmpps_x_x_xm_imm8", ["xmm2", "xmm3"], [1]), info)
    with pytest.raises(CheckError, match="cannot be xmm17"):
        check_allocation(*_alloc("vcmpps_x_x_xm_imm8", ["xmm2", "xmm17"], [1]), info)


def test_reg_info_has_high_registers_on_v4_only() -> None:
    v3, v4 = X86RegInfo(0, 32), X86RegInfo(0, 64)
    assert [p.name for p in v3.classes["vec"]] == [f"xmm{i}" for i in range(16)]
    assert [p.name for p in v4.classes["vec"]] == [f"xmm{i}" for i in range(32)]
    blend = Inst("vblendvps_x_x_xm_x", [])
    assert v3.operand_regs(blend, 3) is None
    assert {p.name for p in v4.operand_regs(blend, 3)} == {f"xmm{i}" for i in range(16)}
    assert v4.operand_regs(Inst("vaddps_y_y_ym", []), 0) is None
    assert v4.operand_regs(Inst("vcvttss2si_r64_xm32", []), 0) is None    # a GPR
