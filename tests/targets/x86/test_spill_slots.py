"""x86 spill slots as wide as the value: a float32 scalar spills with VMOVSS to a 4-byte slot,
an xmm vector with VMOVAPS to a 16-byte slot (also on x86-64-v4, whose widest vector is a zmm),
a ymm to 32 bytes and a zmm to 64.  Kernels with more live values than registers run against
the reference interpreter, with the independent allocation checker on (tests/conftest.py sets
KCC_CHECK_ALLOC); the spill and fill forms' bytes are checked against llvm-mc by the golden
cases (tests/encode/x86/test_x86_encode.py), which include each form at [rsp + disp8/disp32]."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from kcc.encode.x86.table import FORMS
from kcc.frontend.parser import parse
from kcc.ir.mir import Imm, Inst, Mem, PReg, RegOp, Role, VReg
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86RegInfo, X86Target, compile_x86
from kcc.targets.x86.slots import FILL_FORMS, SPILL_FORMS
from x86_util import NEEDS_V4, assert_same, compile_and_run, random_inputs, reference

GOLDEN = Path(__file__).resolve().parents[3] / "golden" / "x86"


def _pressure(lanes: int, n: int = 40, iters: int = 7) -> str:
    """n float32 values of `lanes` lanes loaded before a loop, all used in every iteration
    (more than the 16 or 32 vector registers). x is read with a gap between iterations (every
    other vector; every third scalar: a stride 2 is 4 lanes and a shuffle since
    passes/widen_split.py), so passes/widen.py leaves the loop at its own width (it widens
    consecutive accesses only; a bound no factor divides would get a widened loop and a
    tail)."""
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {lanes * iters})",
             f"%a = PARAM ParamArg(1, float32, {lanes * n})",
             f"%x = PARAM ParamArg(2, float32, {3 * lanes * iters})"]
    for j in range(n):
        if lanes == 1:
            lines += [f"%p{j} = INDEX(%a, {j})", f"%v{j} = LOAD(%p{j})"]
        else:
            lines += [f"%p{j} = SHRINK(%a, {lanes * j}, {lanes})", f"%v{j} = LOAD(%p{j})"]
    if lanes == 1:
        lines += [f"%i = RANGE({iters}) (0, LOOP)", "%i2 = MUL(%i, 3)", "%xp = INDEX(%x, %i2)"]
    else:
        lines += [f"%i = RANGE({iters}) (0, LOOP)", f"%s = MUL(%i, {lanes})",
                  f"%s2 = MUL(%i, {2 * lanes})", f"%xp = SHRINK(%x, %s2, {lanes})"]
    lines += ["%xv = LOAD(%xp)", "%t0 = MUL(%xv, %v0)"]
    for j in range(1, n):
        op = "MULACC(%xv, %v{j}, %t{k})" if j % 2 else "ADD(%t{k}, %v{j})"
        lines.append(f"%t{j} = " + op.format(j=j, k=j - 1))
    lines += ["%op = INDEX(%out, %i)" if lanes == 1 else f"%op = SHRINK(%out, %s, {lanes})",
              f"%st = STORE(%op, %t{n - 1})", "%e = END(%st, %i)",
              'SINK(%e) KernelInfo(name="spill_widths")']
    return "\n".join(lines) + "\n"


def _spill_forms(src: str, arch: str) -> set[str]:
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="allocate", out=buf)
    return {m.group(1) for m in re.finditer(r"(\S+) \[rsp \+ \d+\], \S+\s+slot=\d+  ; spill",
                                            buf.getvalue())}


@pytest.mark.parametrize("arch,lanes,form", [
    ("x86-64-v3", 1, "vmovss_m32_x"), ("x86-64-v3", 4, "vmovaps_m128_x"),
    ("x86-64-v3", 8, "vmovaps_m256_y"),
    pytest.param("x86-64-v4", 1, "vmovss_m32_x", marks=NEEDS_V4),
    pytest.param("x86-64-v4", 4, "vmovaps_m128_x", marks=NEEDS_V4),
    pytest.param("x86-64-v4", 16, "vmovaps_m512_z", marks=NEEDS_V4)])
def test_vector_values_spill_at_their_width_and_run_right(arch: str, lanes: int,
                                                         form: str) -> None:
    src = _pressure(lanes)
    forms = _spill_forms(src, arch)
    assert forms and {f for f in forms if "_r" not in f} == {form}
    sink = parse(src)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_frame_shrinks_to_the_values_widths() -> None:
    # 40 scalars: 4-byte slots, where the widest slot (the old size of every vector slot)
    # would be a ymm's 32 bytes; slots of values that do not overlap are shared too
    _, descs = compile_x86([parse(_pressure(1))], "x86-64-v3")
    assert descs[0].target["x86"]["frame_bytes"] <= 64 + 40 * 4
    _, descs = compile_x86([parse(_pressure(4))], "x86-64-v3")
    assert descs[0].target["x86"]["frame_bytes"] <= 64 + 40 * 16


def _vr(cls: str = "vec") -> RegOp:
    return RegOp(VReg(0, cls), Role.DEF)


def _vu(cls: str = "vec") -> RegOp:
    return RegOp(VReg(1, cls), Role.USE)


@pytest.mark.parametrize("inst,want", [
    (Inst("vaddss_x_x_xm32", [_vr(), _vu(), _vu()]), [4, 4, 4]),
    (Inst("vaddsd_x_x_xm64", [_vr(), _vu(), _vu()]), [8, 8, 8]),
    (Inst("vaddps_x_x_xm", [_vr(), _vu(), _vu()]), [16, 16, 16]),
    (Inst("vaddps_y_y_ym", [_vr(), _vu(), _vu()]), [32, 32, 32]),
    (Inst("vcvtss2sd_x_x_xm32", [_vr(), _vu(), _vu()]), [8, 8, 4]),
    (Inst("vcvtsd2ss_x_x_xm64", [_vr(), _vu(), _vu()]), [4, 4, 8]),
    # VINSERTPS reads lane imm[7:6] of a register source
    (Inst("vinsertps_x_x_xm32_imm8", [_vr(), _vu(), _vu(), Imm(0x10)]), [16, 16, 4, None]),
    (Inst("vinsertps_x_x_xm32_imm8", [_vr(), _vu(), _vu(), Imm(0x50)]), [16, 16, 16, None]),
    (Inst("vbroadcastss_y_xm32", [_vr(), _vu()]), [32, 4]),
    (Inst("vmovq_x_r64", [_vr(), _vu("gpr")]), [8, 8]),
    (Inst("vmovss_x_x_x", [_vr(), _vu(), _vu()]), [16, 16, 16]),   # the merge keeps lanes
    (Inst("add_r32_rm32", [RegOp(VReg(0, "gpr"), Role.DEF | Role.USE), _vu("gpr")]), [4, 4]),
    (Inst("movzx_r32_rm8", [_vr("gpr"), _vu("gpr")]), [4, 4]),
    (Inst("mov_r64_rm64", [_vr("gpr"), Mem(VReg(2, "gpr"), VReg(3, "gpr"), 4, 8)]), [8, 8]),
    (Inst("vmovss_x_m32", [_vr(), Mem(VReg(2, "gpr"))]), [4, 8]),
])
def test_value_bytes(inst: Inst, want: list[int | None]) -> None:
    info = X86RegInfo(0, 64)
    got = [info.value_bytes(inst, k) if not isinstance(o, Imm) else None
           for k, o in enumerate(inst.operands)]
    assert got == want


def test_spill_and_fill_forms_match_their_slot() -> None:
    info = X86RegInfo(64, 64)
    assert set(SPILL_FORMS) == set(FILL_FORMS)
    for (cls, size) in SPILL_FORMS:
        p = {"gpr": PReg("rax", "gpr"), "mask": PReg("k1", "mask")}.get(cls, PReg("xmm3", "vec"))
        s, f = info.make_spill(cls, p, 2 * size, size), info.make_fill(cls, p, 2 * size, size)
        assert info.slot_bytes(s) == info.slot_bytes(f) == size
        for i in (s, f):
            m = next(o for o in i.operands if isinstance(o, Mem))
            assert m.disp == 64 + 2 * size and m.disp % size == 0
        assert FORMS[s.op].mnemonic == FORMS[f.op].mnemonic


def test_golden_has_every_spill_and_fill_form_at_rsp() -> None:
    text = "".join(p.read_text() for p in GOLDEN.glob("*.s"))
    for form in {*SPILL_FORMS.values(), *FILL_FORMS.values()}:
        cases = re.findall(rf"; form: {form}\n([^\n]*)\n", text)
        assert any(re.search(r"\[rsp \+ \d+\]", c) for c in cases), \
            f"no golden case of {form} at [rsp + disp] (run scripts/regen_golden.py)"


def _fold(inst: Inst, k: int, size: int) -> Inst | None:
    return X86RegInfo(64, 64).fold_fill(inst, k, 16, size)


def test_fold_fill_only_where_the_form_reads_memory_like_the_register() -> None:
    v = [RegOp(VReg(j, "vec"), Role.USE) for j in range(3)]
    dst = RegOp(VReg(9, "vec"), Role.DEF)
    andps = Inst("vandps_x_x_xm", [dst, v[0], v[1]])
    got = _fold(andps, 2, 16)
    assert got is not None and got.operands[2] == Mem(PReg("rsp", "gpr"), None, 1, 80)
    assert got.operands[:2] == andps.operands[:2]
    assert _fold(andps, 1, 16) is None               # vvvv takes no memory
    assert _fold(andps, 2, 4) is None                # a 16-byte read of a 4-byte slot
    assert _fold(Inst("vaddss_x_x_xm32", [dst, v[0], v[1]]), 2, 4) is not None
    ins = [dst, v[0], v[1]]
    assert _fold(Inst("vinsertps_x_x_xm32_imm8", [*ins, Imm(0x10)]), 2, 16) is not None
    # the memory form reads the first float, the register form lane imm[7:6]
    assert _fold(Inst("vinsertps_x_x_xm32_imm8", [*ins, Imm(0x90)]), 2, 16) is None
    g = [RegOp(VReg(j, "gpr"), Role.USE) for j in range(3)]
    gd = RegOp(VReg(8, "gpr"), Role.DEF | Role.USE)
    assert _fold(Inst("and_r32_rm32", [gd, g[0]]), 1, 4) is not None
    assert _fold(Inst("add_r64_rm64", [gd, g[0]]), 1, 4) is None    # 8 bytes of 4
    assert _fold(Inst("add_rm64_r64", [gd, g[0]]), 1, 8) is None    # the reg operand
    # one memory operand an instruction
    assert _fold(Inst("vaddps_x_x_xm", [dst, v[0], Mem(VReg(5, "gpr"))]), 1, 16) is None


def test_reloads_fold_into_alu_operands_and_run_right() -> None:
    src = _pressure(4)
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target("x86-64-v3"), dump_after="allocate", out=buf)
    text = buf.getvalue()
    folded = [ln for ln in text.splitlines() if "[rsp + " in ln and "slot=" in ln
              and "; spill" not in ln and "; fill" not in ln]
    assert folded and all(re.search(r"v(mul|add|fmadd231)ps", ln) for ln in folded), folded
    sink = parse(src)
    args = random_inputs(sink, 3)
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))
