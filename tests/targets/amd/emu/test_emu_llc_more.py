"""Rows LLVM 19 emits for tinygrad kernels that kcc itself does not select: v_add_lshl_u32
(gfx1100, gfx942), v_pack_b32_f16 (both), v_mad_u16 (gfx1100) and v_mad_legacy_u16 (gfx942),
in llc-19 -O2 code run in kcc's emulator and compared with numpy (RDNA3 ISA §15.10 / CDNA3
ISA §13.4 VOP3 pseudocode: V_ADD_LSHL_U32 D = (S0 + S1) << S2[4:0]; V_PACK_B32_F16
D = {S1.f16, S0.f16}; V_MAD_U16 D.u16 = S0.u16 * S1.u16 + S2.u16). The 16-bit store reads
only the low half of the multiply-add's register.
"""

from __future__ import annotations

import numpy as np
import pytest

from amd_util import llc_hsaco, needs_decoder, needs_llvm19
from kcc.encode.amd.decode import disassemble
from kcc.targets.amd.emu.core import run_hsaco
from kcc.targets.amd.hsaco_read import read_hsaco

# Per work item i: o[i] = (a[i] + b[i]) << 3; ho[2i], ho[2i+1] = x + y, x * y for halves x, y
# from two buffers (the adjacent results: llc packs them into one dword; adjacent inputs would
# be read through gfx942 SDWA, which kcc has no rows for); so[i] = s[2i] * 3 + s[2i+1] in 16
# bits.
MORE = '''target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @more(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %ha,
                                ptr addrspace(1) %hb, ptr addrspace(1) %sa, ptr addrspace(1) %o,
                                ptr addrspace(1) %ho, ptr addrspace(1) %so) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr i32, ptr addrspace(1) %b, i32 %i
  %x = load i32, ptr addrspace(1) %pa
  %y = load i32, ptr addrspace(1) %pb
  %s = add i32 %x, %y
  %sh = shl i32 %s, 3
  %po = getelementptr i32, ptr addrspace(1) %o, i32 %i
  store i32 %sh, ptr addrspace(1) %po
  %i2 = mul i32 %i, 2
  %ph = getelementptr half, ptr addrspace(1) %ha, i32 %i
  %h0 = load half, ptr addrspace(1) %ph
  %ph1 = getelementptr half, ptr addrspace(1) %hb, i32 %i
  %h1 = load half, ptr addrspace(1) %ph1
  %r0 = fadd half %h0, %h1
  %r1 = fmul half %h0, %h1
  %pho = getelementptr half, ptr addrspace(1) %ho, i32 %i2
  store half %r0, ptr addrspace(1) %pho
  %pho1 = getelementptr half, ptr addrspace(1) %pho, i32 1
  store half %r1, ptr addrspace(1) %pho1
  %ps = getelementptr i16, ptr addrspace(1) %sa, i32 %i2
  %s0 = load i16, ptr addrspace(1) %ps
  %ps1 = getelementptr i16, ptr addrspace(1) %ps, i32 1
  %s1 = load i16, ptr addrspace(1) %ps1
  %m = mul i16 %s0, 3
  %ma = add i16 %m, %s1
  %pso = getelementptr i16, ptr addrspace(1) %so, i32 %i
  store i16 %ma, ptr addrspace(1) %pso
  ret void
}
'''

FORMS = {"gfx1100": {"v_add_lshl_u32", "v_pack_b32_f16", "v_mad_u16"},
         "gfx942": {"v_add_lshl_u32", "v_pack_b32_f16", "v_mad_legacy_u16"}}


@needs_llvm19
@needs_decoder
@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_llc_add_lshl_pack_mad16_against_numpy(tmp_path, arch):
    obj = llc_hsaco(tmp_path, arch, MORE, "more")
    names = {inst.name for _, _, inst, _ in disassemble(arch, read_hsaco(obj).code("more"))}
    assert FORMS[arch] <= names
    n = 64
    rng = np.random.default_rng(37)
    a, b = (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    h0, h1 = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    h0[:2], h1[:2] = [np.nan, -0.0], [1.0, 0.0]             # NaN + 1, -0 + 0, -0 * 0
    s = rng.integers(0, 2**16, 2 * n, dtype=np.uint32).astype(np.uint16)
    o = np.zeros(n, np.uint32)
    ho = np.zeros(2 * n, np.float16)
    so = np.zeros(n, np.uint16)
    run_hsaco(obj, "more", [a, b, h0, h1, s, o, ho, so], grid=1, block=n)
    np.testing.assert_array_equal(o, (a + b) << np.uint32(3))          # both wrap mod 2^32
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(ho, np.stack([h0 + h1, h0 * h1], 1).reshape(-1))
    assert ho[2] == 0 and not np.signbit(ho[2]) and np.signbit(ho[3])  # +0 sum, -0 product
    np.testing.assert_array_equal(so, (s[0::2] * np.uint16(3) + s[1::2]).astype(np.uint16))
