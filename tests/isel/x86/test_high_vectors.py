"""xmm16-31 on x86-64-v4: allocatable there (never on v3), kept out of VEX-only forms (the
allocator's per-operand restriction, verified by the independent checker), and right against
the interpreter for kernels with more live vectors than 16."""

from __future__ import annotations

import io
import re

import pytest

from kcc.frontend.parser import parse
from kcc.encode.x86.table import FORMS, KINDS
from kcc.ir.mir import Imm, Inst, MFunction, PReg, RegOp, Role
from kcc.regalloc import CheckError, check_allocation
from kcc.targets.x86.target import X86RegInfo, compile_x86, disasm_object
from x86_util import (
    HAS_V4, NEEDS_V4, assert_same, compile_and_run, random_inputs, reference,
    vector_pressure_kernel)

HIGH = re.compile(r"\b[xyz]mm(1[6-9]|2\d|3[01])\b")


def _pressure_step(j: int) -> list[str]:
    """Every third step a compare and a blend (not the MAX pattern WHERE(a < b, b, a)):
    VEX-only vcmpps/vblendvps on v3, a k-mask compare and vblendmps on v4."""
    k = j - 1
    if j % 3 == 0:
        return [f"%c{j} = CMPLT(%t{k}, %v{j})", f"%t{j} = WHERE(%c{j}, %xv, %t{k})"]
    if j % 3 == 1:
        return [f"%t{j} = MUL(%t{k}, %v{j})"]
    return [f"%t{j} = ADD(%t{k}, %v{j})"]


def _pressure_kernel(nvec: int, iters: int = 8) -> str:
    """nvec float32x4 vectors live across the loop, every third through a compare + blend."""
    return vector_pressure_kernel(nvec, iters, 4, "xmm_pressure", _pressure_step)


def _listing(src: str, arch: str) -> str:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
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
    # 28 vectors do not fit in 16 (stored; their reloads may be folded into operands) ...
    assert "; spill" in v3 or "; remat" in v3
    assert "; spill" not in v4 and "; fill" not in v4 and "; remat" not in v4  # ... but in 32
    assert HIGH.search(v4)
    # capstone reads the high registers back from the bytes (EVEX.R'/V'/X decoded)
    obj, _ = compile_x86([parse(src)], "x86-64-v4")
    text = disasm_object(obj)
    assert HIGH.search(text)
    assert "vblendmps" in text and "vblendvps" not in text     # the opmask blend on v4
    for line in text.splitlines():
        if re.search(r"vblendv|vcmp\w* [xyz]mm", line):   # VEX-only: low registers alone
            assert not HIGH.search(line), line


@NEEDS_V4
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


WHERE = """# kcc-uop 1
%y = PARAM ParamArg(0, DT, 192)
%a = PARAM ParamArg(1, DT, 192)
%b = PARAM ParamArg(2, DT, 192)
%i = RANGE(RN) (0, LOOP)
%iL = MUL(%i, L)
%pa = SHRINK(%a, %iL, L)
%va = LOAD(%pa)
%pb = SHRINK(%b, %iL, L)
%vb = LOAD(%pb)
%c = CMP(%va, %vb)
%vn = NEG(%vb)
%r = WHERE(%c, %va, %vn)
%py = SHRINK(%y, %iL, L)
%st = STORE(%py, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="kw")
"""
SPECIAL = [float("nan"), 0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), 3.5, -2.25,
           1e-40, -1e-40, 7.0]


def _where(dt: str, lanes: int, cmp: str) -> str:
    return (WHERE.replace("DT", dt).replace("RN", str(192 // lanes))
            .replace("L)", f"{lanes})").replace("CMP", cmp))


@pytest.mark.parametrize("dt,lanes", [("float32", 4), ("float32", 8), ("float32", 16),
                                      ("float64", 2), ("float64", 4), ("float64", 8)])
@pytest.mark.parametrize("cmp", ["CMPLT", "CMPEQ", "CMPNE"])
def test_v4_where_is_an_opmask_compare_and_blend(dt: str, lanes: int, cmp: str) -> None:
    """One EVEX VCMPP* into a k register and one VBLENDMP* (zmm too: no halves); the
    vector-mask compare is gone. (The false value is -b: WHERE(a < b, a, b) itself is one
    VMINP*, tests/isel/x86/test_float_min.py.) Run against the interpreter on every pair of
    special values (NaN, signed zeros, infinities, subnormals) where the CPU has AVX-512."""
    import numpy as np
    src = _where(dt, lanes, cmp)
    sel = _listing(src, "x86-64-v4")
    t = dt[-2:] == "32" and "s" or "d"
    assert f"vcmpp{t}_k_" in sel and f"vblendmp{t}_" in sel, sel
    assert "vblendv" not in sel and not re.search(r"vcmpp\w_[xyz]_", sel), sel
    obj, _ = compile_x86([parse(src)], "x86-64-v4")
    text = disasm_object(obj)
    assert re.search(rf"vcmp\w*p{t} k[1-7], [xyz]mm", text), text
    if not HAS_V4:
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(src)
    x, y = np.meshgrid(np.array(SPECIAL, dt), np.array(SPECIAL, dt))
    args = [np.zeros(192, dt), np.resize(x.reshape(-1), 192), np.resize(y.reshape(-1), 192)]
    assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


def _opmask_pressure(n: int) -> str:
    """n loop-invariant compares (hoisted out of the loop with their opmasks) each read by a
    blend in every iteration: more live masks than k1-k7."""
    lines = ["# kcc-uop 1", "%out = PARAM ParamArg(0, float32, 64)",
             "%a = PARAM ParamArg(1, float32, 64)", f"%x = PARAM ParamArg(2, float32, {8 * n})"]
    for j in range(n):
        lines += [f"%xp{j} = SHRINK(%x, {8 * j}, 4)", f"%xv{j} = LOAD(%xp{j})",
                  f"%yp{j} = SHRINK(%x, {8 * j + 4}, 4)", f"%yv{j} = LOAD(%yp{j})",
                  f"%c{j} = CMPLT(%xv{j}, %yv{j})"]
    lines += ["%i = RANGE(16) (0, LOOP)", "%s = MUL(%i, 4)", "%ap = SHRINK(%a, %s, 4)",
              "%av = LOAD(%ap)", "%t0 = ADD(%av, %av)"]
    for j in range(n):
        lines += [f"%s{j} = ADD(%t{j}, %xv{j})", f"%t{j + 1} = WHERE(%c{j}, %s{j}, %av)"]
    last = f"%t{n}"
    lines += ["%op = SHRINK(%out, %s, 4)", f"%st = STORE(%op, {last})", "%e = END(%st, %i)",
              'SINK(%e) KernelInfo(name="kspill")']
    return "\n".join(lines) + "\n"


def test_v4_opmasks_spill_with_kmovq() -> None:
    listing = _listing(_opmask_pressure(10), "x86-64-v4")
    assert "kmovq_m64_k" in listing and "kmovq_k_km64" in listing, listing


@NEEDS_V4
@pytest.mark.parametrize("n", [6, 10])
def test_v4_opmask_pressure_matches_the_interpreter(n: int) -> None:
    sink = parse(_opmask_pressure(n))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


def test_v4_one_compare_feeds_two_blends() -> None:
    """The opmask is selected with its compare: two WHEREs on one compare read one k, and the
    unused vector-mask compare is removed. (Neither WHERE is an arm of the other: simplify
    folds WHERE(c, b, WHERE(c, a, b)) to b; nor a MAX or a MIN.)"""
    src = _where("float32", 8, "CMPLT").replace(
        "%r = WHERE(%c, %va, %vn)",
        "%r0 = WHERE(%c, %va, %vn)\n%s = ADD(%va, %vb)\n%r1 = WHERE(%c, %s, %vb)\n"
        "%r = ADD(%r0, %r1)")
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target("x86-64-v4"), dump_after="allocate", out=buf)
    sel = buf.getvalue()
    # (passes/widen.py runs two of its 8-lane iterations as one: zmm forms; its 12 blocks
    # are straight-line code, passes/unroll_widened.py: one compare and two blends a block)
    k = sel.count("vcmpps_k_z_zm_imm8")
    assert k >= 1 and sel.count("vblendmps_z_k_z_zm") == 2 * k, sel
    assert "vcmpps_z_z_zm_imm8" not in sel and "vcmpps_y_y_ym_imm8" not in sel, sel
    if HAS_V4:
        sink = parse(src)
        args = random_inputs(sink, 3)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))
