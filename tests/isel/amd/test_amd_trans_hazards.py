"""gfx1100's wait after a transcendental (kcc/isel/amd/lower.py ``trans_hazards``): a VALU
instruction that reads a VGPR a TRANS instruction (v_exp/v_log/v_rcp/v_sqrt…) wrote, fewer
than 5 VALU instructions (with at least one TRANS among them) later, gets
``s_waitcnt_depctr 0xfff`` before it, as llc-19 places it for gfx1100 (LLVM's
VALUTransUseHazard); gfx942 has no such hazard."""

from __future__ import annotations

from pathlib import Path

from amd_util import llc_hsaco, needs_decoder, needs_llvm19
from kcc.encode.amd.decode import disassemble
from kcc.encode.amd.operands import SGPR, VGPR, Imm, Inst
from kcc.ir.mir import Label
from kcc.isel.amd.lower import trans_hazards
from kcc.isel.amd.regs import ARCHES

RDNA3, CDNA3 = ARCHES["gfx1100"], ARCHES["gfx942"]
EXP = Inst("v_exp_f32", (VGPR(1), VGPR(2)))
USE = Inst("v_mul_f32", (VGPR(3), VGPR(4), VGPR(1)))


def _names(items: list) -> list[str]:
    return [it.name if isinstance(it, Inst) else f"{it.name}:" for it in items]


def _valu(k: int) -> Inst:
    return Inst("v_add_f32", (VGPR(20 + k), VGPR(30), VGPR(31)))


def test_a_read_right_after_a_transcendental_waits() -> None:
    items = [EXP, USE, Inst("s_endpgm")]
    assert _names(trans_hazards(items, RDNA3)) == [
        "v_exp_f32", "s_waitcnt_depctr", "v_mul_f32", "s_endpgm"]
    assert trans_hazards(items, CDNA3) == items


def test_the_window_needs_five_valu_and_a_transcendental_between() -> None:
    other_trans = Inst("v_rcp_f32", (VGPR(9), VGPR(8)))
    expired = [EXP, other_trans, *(_valu(k) for k in range(4)), USE]
    assert "s_waitcnt_depctr" not in _names(trans_hazards(expired, RDNA3))
    # five plain VALU: not expired (no TRANS between), as llc-19's own placement shows
    plain = [EXP, *(_valu(k) for k in range(5)), USE]
    assert _names(trans_hazards(plain, RDNA3))[-2:] == ["s_waitcnt_depctr", "v_mul_f32"]
    # SALU instructions do not count
    salu = [EXP, *(Inst("s_mov_b32", (SGPR(k), Imm(0))) for k in range(8)), USE]
    assert _names(trans_hazards(salu, RDNA3))[-2:] == ["s_waitcnt_depctr", "v_mul_f32"]


def test_other_registers_and_an_earlier_wait_need_none() -> None:
    unrelated = Inst("v_mul_f32", (VGPR(3), VGPR(4), VGPR(5)))
    assert trans_hazards([EXP, unrelated], RDNA3) == [EXP, unrelated]
    waited = [EXP, Inst("s_waitcnt_depctr", (Imm(0xFFF),)), USE]
    assert trans_hazards(waited, RDNA3) == waited


def test_a_label_inside_the_window_waits_if_any_transcendental_writes_the_source() -> None:
    looped = [Label("top"), USE, EXP, Inst("s_cbranch_scc1", ())]
    assert _names(trans_hazards(looped, RDNA3))[:3] == ["top:", "s_waitcnt_depctr", "v_mul_f32"]
    tuple_read = Inst("global_store_b64", (VGPR(0), VGPR(1, 2), SGPR(2, 2)))
    assert trans_hazards([EXP, tuple_read], RDNA3) == [EXP, tuple_read]   # not a VALU


# fdiv, sqrt, exp2, log2 and a reciprocal in a chain: llc-19 puts 4 waits in this kernel
CHAIN = """target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.sqrt.f32(float)
declare float @llvm.exp2.f32(float)
declare float @llvm.log2.f32(float)
define amdgpu_kernel void @t(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %o) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %tid
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %tid
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %q = fdiv float %x, %y
  %s = call float @llvm.sqrt.f32(float %q)
  %e = call float @llvm.exp2.f32(float %s)
  %l = call float @llvm.log2.f32(float %y)
  %r = fdiv float 1.0, %l
  %m = fmul float %e, %r
  %po = getelementptr float, ptr addrspace(1) %o, i32 %tid
  store float %m, ptr addrspace(1) %po
  ret void
}
"""


@needs_llvm19
@needs_decoder
def test_the_waits_fall_where_llc_puts_them(tmp_path: Path) -> None:
    """llc-19's gfx1100 code with its s_waitcnt_depctr taken out: trans_hazards puts them
    back exactly where llc had them (an oracle for the window, not kcc's own reading)."""
    from kcc.targets.amd.hsaco_read import read_hsaco
    obj = llc_hsaco(tmp_path, "gfx1100", CHAIN, "t")
    insts = [i for _, _, i, _ in disassemble("gfx1100", read_hsaco(obj).code("t"))]
    assert sum(i.name == "s_waitcnt_depctr" for i in insts) == 4
    stripped = [i for i in insts if i.name != "s_waitcnt_depctr"]
    assert trans_hazards(stripped, RDNA3) == insts
