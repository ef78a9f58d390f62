"""v_fmaak_f32/v_fmamk_f32 (gfx1100, gfx942) and v_fmaak_f16/v_fmamk_f16 (gfx1100): the VOP2
forms whose third operand is a mandatory literal K. llc-19 -O2 writes them for an fma with a
constant addend (D = S0*S1 + K) or a constant factor (D = S0*K + S1); the code runs in kcc's
emulator and must match numpy's fused results, one rounding each (RDNA3 ISA §15.2, CDNA3
ISA §13.2 V_FMAAK/V_FMAMK pseudocode).
"""

from __future__ import annotations

import numpy as np
import pytest

from amd_util import llc_hsaco, needs_decoder, needs_llvm19
from kcc.encode.amd.decode import disassemble
from kcc.targets.amd.emu.core import run_hsaco
from kcc.targets.amd.hsaco_read import read_hsaco

K0, K1 = np.float32(0.3), np.float32(0.7)            # 0x3e99999a, 0x3f333333: no inline
H0, H1 = np.uint16(0x3555).view(np.float16), np.uint16(0x39A0).view(np.float16)

# Per work item i: o[2i] = fma(x, y, K0), o[2i+1] = fma(x, K1, y) * y; the same in half
# precision with H0/H1 into two buffers (adjacent halves would be packed by v_pack_b32_f16).
# The product by y keeps y alive, so llc cannot use v_fmac (which overwrites its addend) and
# picks v_fmamk.
FMAK = f'''target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.fma.f32(float, float, float)
declare half @llvm.fma.f16(half, half, half)
define amdgpu_kernel void @fm(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %o,
                              ptr addrspace(1) %ha, ptr addrspace(1) %hb, ptr addrspace(1) %ho,
                              ptr addrspace(1) %hp) {{
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %f0 = call float @llvm.fma.f32(float %x, float %y, float {float(K0).hex()})
  %f1a = call float @llvm.fma.f32(float %x, float {float(K1).hex()}, float %y)
  %f1 = fmul float %f1a, %y
  %o0 = mul i32 %i, 2
  %p0 = getelementptr float, ptr addrspace(1) %o, i32 %o0
  store float %f0, ptr addrspace(1) %p0
  %p1 = getelementptr float, ptr addrspace(1) %p0, i32 1
  store float %f1, ptr addrspace(1) %p1
  %qa = getelementptr half, ptr addrspace(1) %ha, i32 %i
  %qb = getelementptr half, ptr addrspace(1) %hb, i32 %i
  %hx = load half, ptr addrspace(1) %qa
  %hy = load half, ptr addrspace(1) %qb
  %g0 = call half @llvm.fma.f16(half %hx, half %hy, half 0xH3555)
  %g1a = call half @llvm.fma.f16(half %hx, half 0xH39A0, half %hy)
  %g1 = fmul half %g1a, %hy
  %q0 = getelementptr half, ptr addrspace(1) %ho, i32 %i
  store half %g0, ptr addrspace(1) %q0
  %q1 = getelementptr half, ptr addrspace(1) %hp, i32 %i
  store half %g1, ptr addrspace(1) %q1
  ret void
}}
'''.replace("0x1.3333340000000p-2", "0x3FD3333340000000").replace(
    "0x1.6666660000000p-1", "0x3FE6666660000000")

# the forms each arch's code must contain (llc-19 on gfx942 keeps f16 fma in VOP3 v_fma_f16)
FORMS = {"gfx1100": {"v_fmaak_f32", "v_fmamk_f32", "v_fmaak_f16", "v_fmamk_f16"},
         "gfx942": {"v_fmaak_f32", "v_fmamk_f32"}}


def _fused32(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """fma in float32: the float64 product of two float32 values is exact."""
    return (p.astype(np.float64) * q.astype(np.float64) + r.astype(np.float64)).astype(
        np.float32)


def _fused16(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """fma in float16: product and sum of float16 values are exact in float64, and numpy
    rounds float64 to float16 once."""
    return (p.astype(np.float64) * q.astype(np.float64) + r.astype(np.float64)).astype(
        np.float16)


@needs_llvm19
@needs_decoder
@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_llc_fmaak_fmamk_against_numpy(tmp_path, arch):
    obj = llc_hsaco(tmp_path, arch, FMAK, "fm")
    names = {inst.name for _, _, inst, _ in disassemble(arch, read_hsaco(obj).code("fm"))}
    assert FORMS[arch] <= names
    n = 64
    rng = np.random.default_rng(31)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    # fused only: x*y + K0 = -K0*2^-23 exactly (rounding x*y first gives -2^-25), and
    # x*K1 + y = K1*2^-23
    a[0], b[0] = -K0, np.float32(1 + 2.0**-23)
    a[1], b[1] = np.float32(1 + 2.0**-23), -K1
    a[2], b[2] = np.nan, 1.0
    a[3], b[3] = np.inf, -np.inf
    ha, hb = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    ha[0], hb[0] = -H0, np.float16(1 + 2.0**-10)           # fused only, as above
    ha[1], hb[1] = np.float16(1 + 2.0**-10), -H1
    o = np.full(2 * n, 7.0, np.float32)
    ho, hp = np.full(n, 7.0, np.float16), np.full(n, 7.0, np.float16)
    run_hsaco(obj, "fm", [a, b, o, ha, hb, ho, hp], grid=1, block=n)
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.stack([_fused32(a, b, np.full(n, K0)),
                         _fused32(a, np.full(n, K1), b) * b], 1).reshape(-1)
        hwant = _fused16(ha, hb, np.full(n, H0))
        pwant = _fused16(ha, np.full(n, H1), hb) * hb
    np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(ho, hwant)
    np.testing.assert_array_equal(hp, pwant)
    assert o[0] == np.float32(-K0 * 2.0**-23) and o[0] != (a[0] * b[0]) + K0
    assert ho[0] == _fused16(ha[:1], hb[:1], np.full(1, H0))[0] != (ha[0] * hb[0]) + H0
    assert np.isnan(o[4]) and o[6] == -np.inf and np.isnan(o[7])   # NaN in; inf*0.7 - inf
