"""gfx942 packed-f32 VOP3P ops (v_pk_add_f32, v_pk_mul_f32, v_pk_fma_f32 and their op_sel /
op_sel_hi / neg modifiers) in code llc-19 writes for <2 x float> IR, compared with numpy; and
v_pk_mov_b32, which llc-19 emits only for 64-bit register copies, as a hand-built Inst with
its result worked out from the CDNA3 ISA manual's pseudocode.
"""

from __future__ import annotations

import numpy as np
import pytest

from amd_util import llc_hsaco, needs_decoder, needs_llvm19
from kcc.encode.amd.operands import VGPR, FloatImm, Inst
from kcc.targets.amd.emu.core import WAVE, EmuError, Memory, Wave, Workgroup, execute, run_hsaco

# Per work item i: x, y, z = a[i], b[i], c[i] (each <2 x float>); out[7i .. 7i+6] = x+y, x*y,
# fma(x,y,z), x*swap(y), fma(x,swap(y),-z), x+1, (x.hi, y.lo)*z. llc-19 -O2 for gfx942 makes
# these v_pk_add/mul/fma_f32 with op_sel:[0,1] op_sel_hi:[1,0] (the swap), neg_lo/neg_hi
# (the -z) and an inline constant read through op_sel_hi:[1,0].
PACKED = '''target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare <2 x float> @llvm.fma.v2f32(<2 x float>, <2 x float>, <2 x float>)
define amdgpu_kernel void @pk(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c,
                              ptr addrspace(1) %o) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = shl i32 %wg, 6
  %i = add i32 %base, %tid
  %pa = getelementptr <2 x float>, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr <2 x float>, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr <2 x float>, ptr addrspace(1) %c, i32 %i
  %x = load <2 x float>, ptr addrspace(1) %pa
  %y = load <2 x float>, ptr addrspace(1) %pb
  %z = load <2 x float>, ptr addrspace(1) %pc
  %s = fadd <2 x float> %x, %y
  %m = fmul <2 x float> %x, %y
  %f = call <2 x float> @llvm.fma.v2f32(<2 x float> %x, <2 x float> %y, <2 x float> %z)
  %ys = shufflevector <2 x float> %y, <2 x float> poison, <2 x i32> <i32 1, i32 0>
  %w = fmul <2 x float> %x, %ys
  %nz = fneg <2 x float> %z
  %g = call <2 x float> @llvm.fma.v2f32(<2 x float> %x, <2 x float> %ys, <2 x float> %nz)
  %h = fadd <2 x float> %x, <float 1.0, float 1.0>
  %xy = shufflevector <2 x float> %x, <2 x float> %y, <2 x i32> <i32 1, i32 2>
  %v = fmul <2 x float> %xy, %z
  %o0 = mul i32 %i, 7
  %p0 = getelementptr <2 x float>, ptr addrspace(1) %o, i32 %o0
  store <2 x float> %s, ptr addrspace(1) %p0
  %p1 = getelementptr <2 x float>, ptr addrspace(1) %p0, i32 1
  store <2 x float> %m, ptr addrspace(1) %p1
  %p2 = getelementptr <2 x float>, ptr addrspace(1) %p0, i32 2
  store <2 x float> %f, ptr addrspace(1) %p2
  %p3 = getelementptr <2 x float>, ptr addrspace(1) %p0, i32 3
  store <2 x float> %w, ptr addrspace(1) %p3
  %p4 = getelementptr <2 x float>, ptr addrspace(1) %p0, i32 4
  store <2 x float> %g, ptr addrspace(1) %p4
  %p5 = getelementptr <2 x float>, ptr addrspace(1) %p0, i32 5
  store <2 x float> %h, ptr addrspace(1) %p5
  %p6 = getelementptr <2 x float>, ptr addrspace(1) %p0, i32 6
  store <2 x float> %v, ptr addrspace(1) %p6
  ret void
}
'''


@needs_llvm19
@needs_decoder
def test_llc_packed_f32_against_numpy(tmp_path):
    obj = llc_hsaco(tmp_path, "gfx942", PACKED, "pk")
    rng = np.random.default_rng(25)
    n = 128
    a, b, c = (rng.standard_normal((n, 2)).astype(np.float32) for _ in range(3))
    a[0], b[0], c[0] = [np.nan, np.inf], [1.0, -np.inf], [0.0, 0.0]  # NaN in, inf - inf
    a[1], b[1], c[1] = [1 + 2.0**-23, 3.0], [1 - 2.0**-23, 0.0], [-1.0, -0.0]  # fused only
    o = np.full((7 * n, 2), 7.0, np.float32)
    run_hsaco(obj, "pk", [a, b, c, o], grid=2, block=64)
    a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c))
    sw = b64[:, ::-1]
    def fma(p, q, r):   # exact f64 product, as test_emu_llc
        return (p * q + r).astype(np.float32)
    with np.errstate(invalid="ignore"):
        want = np.stack([(a + b), (a * b), fma(a64, b64, c64), (a * b[:, ::-1]),
                         fma(a64, sw, -c64), (a + np.float32(1.0)),
                         np.stack([a[:, 1], b[:, 0]], 1) * c], 1).reshape(7 * n, 2)
    np.testing.assert_array_equal(o, want)
    assert o[2, 0] != o[2, 0] and o[0, 1] != o[0, 1]          # NaN stays NaN, inf-inf is NaN
    assert o[7 + 2, 0] == np.float32(-(2.0**-46))             # one rounding, not two


def _wave() -> Wave:
    w = Wave("gfx942", 16, WAVE["gfx942"])
    w.set_exec((1 << 64) - 1)
    return w


def _run(w: Wave, inst: Inst) -> None:
    w.pc = 0x1000
    execute(w, inst, Workgroup(np.zeros(256, np.uint8), Memory()))


def test_pk_mov_b32_op_sel_picks_each_half():
    w = _wave()
    w.v[2], w.v[3], w.v[4], w.v[5] = 0x11, 0x22, 0x33, 0x44
    _run(w, Inst("v_pk_mov_b32", (VGPR(0, 2), VGPR(2, 2), VGPR(4, 2)), (("op_sel", (1, 0)),)))
    assert (w.v[0] == 0x22).all() and (w.v[1] == 0x44).all()   # lo: S0 hi; hi: S1 hi
    _run(w, Inst("v_pk_mov_b32", (VGPR(0, 2), VGPR(2, 2), VGPR(4, 2)), (("op_sel", (0, 1)),)))
    assert (w.v[0] == 0x11).all() and (w.v[1] == 0x44).all()   # the 64-bit copy LLVM writes


def test_pk_constant_high_half_is_refused():
    w = _wave()
    w.v[2:4] = 0x3F800000
    with pytest.raises(EmuError):
        _run(w, Inst("v_pk_add_f32", (VGPR(0, 2), VGPR(2, 2), FloatImm(1.0)), ()))
    _run(w, Inst("v_pk_add_f32", (VGPR(0, 2), VGPR(2, 2), FloatImm(1.0)),
                 (("op_sel_hi", (1, 0)),)))
    assert (w.v[0:2] == 0x40000000).all()                       # 1 + 1 in both lanes
