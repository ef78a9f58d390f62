"""Code llc-19 wrote with rows the emulator gained, run for gfx1100 and gfx942 against numpy:
16-bit math (f16 arithmetic, fused multiply-add, maxnum, compares; i16 add, shifts, min/max,
zero-extension: kcc/targets/amd/emu/valu16.py), LDS atomics (lds_atomics.py), frexp and
llc's f32/f64 division (v_div_scale / v_div_fmas / v_div_fixup: valu_div.py)."""

from __future__ import annotations

import numpy as np
import pytest

from amd_util import ARCHS, llc_hsaco, needs_decoder, needs_llvm19
from kcc.targets.amd.emu.core import run_hsaco

pytestmark = [needs_llvm19, needs_decoder]

H16 = """target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @h16(ptr addrspace(1) %a, ptr addrspace(1) %b,
                               ptr addrspace(1) %o, ptr addrspace(1) %q) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr half, ptr addrspace(1) %a, i32 %tid
  %pb = getelementptr half, ptr addrspace(1) %b, i32 %tid
  %x = load half, ptr addrspace(1) %pa
  %y = load half, ptr addrspace(1) %pb
  %s = fadd half %x, %y
  %m = fmul half %s, %y
  %f = call half @llvm.fma.f16(half %x, half %y, half %m)
  %mx = call half @llvm.maxnum.f16(half %f, half %x)
  %c = fcmp olt half %x, %y
  %sel = select i1 %c, half %mx, half %s
  %po = getelementptr half, ptr addrspace(1) %o, i32 %tid
  store half %sel, ptr addrspace(1) %po
  %xi = bitcast half %x to i16
  %yi = bitcast half %y to i16
  %ad = add i16 %xi, %yi
  %amt = and i16 %yi, 15
  %sh = lshr i16 %ad, %amt
  %mn = call i16 @llvm.umin.i16(i16 %sh, i16 %xi)
  %ms = call i16 @llvm.smax.i16(i16 %mn, i16 %yi)
  %ci = icmp slt i16 %xi, %yi
  %z = zext i16 %ms to i32
  %sx = sext i16 %ad to i32
  %r = select i1 %ci, i32 %z, i32 %sx
  %pq = getelementptr i32, ptr addrspace(1) %q, i32 %tid
  store i32 %r, ptr addrspace(1) %pq
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare half @llvm.fma.f16(half, half, half)
declare half @llvm.maxnum.f16(half, half)
declare i16 @llvm.umin.i16(i16, i16)
declare i16 @llvm.smax.i16(i16, i16)
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_f16_and_i16_kernel_matches_numpy(tmp_path, arch):
    obj = llc_hsaco(tmp_path, arch, H16, "h16")
    rng = np.random.default_rng(16)
    n = 64
    a = (rng.standard_normal(n) * 4).astype(np.float16)
    b = (rng.standard_normal(n) * 4).astype(np.float16)
    a[:6] = [np.nan, 0.0, -0.0, np.inf, 2048.0, 6e-8]  # NaN, zeros, inf, rounding, denormal
    b[:6] = [1.0, -0.0, 0.0, 1.0, 3.0, 6e-8]
    o = np.zeros(n, np.float16)
    q = np.zeros(n, np.uint32)
    run_hsaco(obj, "h16", [a.copy(), b.copy(), o, q], grid=1, block=n)
    with np.errstate(all="ignore"):
        s = a + b  # binary16 add/mul: numpy rounds the exact binary32 result once more
        m = s * b
        # the product of two halves is exact in binary64 and these sums are too (small
        # exponent span): one rounding to binary16 is the fused result
        f = (a.astype(np.float64) * b + m).astype(np.float16)
    want = np.where(a < b, np.fmax(f, a), s)
    np.testing.assert_array_equal(o.view(np.uint16)[1:], want.view(np.uint16)[1:])
    assert np.isnan(o[0])
    xi, yi = a.view(np.uint16).astype(np.int64), b.view(np.uint16).astype(np.int64)
    ad = (xi + yi) & 0xFFFF
    sh = ad >> (yi & 15)
    ms = np.maximum(np.minimum(sh, xi).astype(np.uint16).view(np.int16), yi.astype(np.uint16)
                    .view(np.int16))
    ci = xi.astype(np.uint16).view(np.int16) < yi.astype(np.uint16).view(np.int16)
    r = np.where(ci, ms.view(np.uint16).astype(np.int64),
                 ad.astype(np.uint16).view(np.int16).astype(np.int64))
    np.testing.assert_array_equal(q, (r & 0xFFFFFFFF).astype(np.uint32))


# LDS atomics llc-19 selects: add without return (ds_add_u32), add and umax with return
# (ds_add_rtn_u32, ds_max_rtn_u32), float add without return (ds_add_f32). 4 slots, each
# lane adds to slot tid % 4; after a barrier lanes 0-3 store the slots.
LDS_ATOMICS = """target triple = "amdgcn-amd-amdhsa"
@acc = internal addrspace(3) global [4 x i32] undef, align 4
@mx = internal addrspace(3) global [4 x i32] undef, align 4
@cnt = internal addrspace(3) global [4 x i32] undef, align 4
@fs = internal addrspace(3) global [4 x float] undef, align 4
define amdgpu_kernel void @ldsat(ptr addrspace(1) %v, ptr addrspace(1) %old,
                                 ptr addrspace(1) %oldmax, ptr addrspace(1) %sums) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %slot = and i32 %tid, 3
  %first = icmp ult i32 %tid, 4
  %pa = getelementptr [4 x i32], ptr addrspace(3) @acc, i32 0, i32 %slot
  %pm = getelementptr [4 x i32], ptr addrspace(3) @mx, i32 0, i32 %slot
  %pc = getelementptr [4 x i32], ptr addrspace(3) @cnt, i32 0, i32 %slot
  %pf = getelementptr [4 x float], ptr addrspace(3) @fs, i32 0, i32 %slot
  br i1 %first, label %init, label %go
init:
  store i32 0, ptr addrspace(3) %pa
  store i32 0, ptr addrspace(3) %pm
  store i32 0, ptr addrspace(3) %pc
  store float 0.0, ptr addrspace(3) %pf
  br label %go
go:
  call void @llvm.amdgcn.s.barrier()
  %pv = getelementptr i32, ptr addrspace(1) %v, i32 %tid
  %x = load i32, ptr addrspace(1) %pv
  %o = atomicrmw add ptr addrspace(3) %pa, i32 %x monotonic
  %om = atomicrmw umax ptr addrspace(3) %pm, i32 %x monotonic
  %u = atomicrmw add ptr addrspace(3) %pc, i32 1 monotonic
  %xf = uitofp i32 %x to float
  %uf = atomicrmw fadd ptr addrspace(3) %pf, float %xf monotonic
  %po = getelementptr i32, ptr addrspace(1) %old, i32 %tid
  store i32 %o, ptr addrspace(1) %po
  %pom = getelementptr i32, ptr addrspace(1) %oldmax, i32 %tid
  store i32 %om, ptr addrspace(1) %pom
  call void @llvm.amdgcn.s.barrier()
  br i1 %first, label %out, label %done
out:
  %s = load i32, ptr addrspace(3) %pa
  %c = load i32, ptr addrspace(3) %pc
  %f = load float, ptr addrspace(3) %pf
  %fi = fptoui float %f to i32
  %ps = getelementptr i32, ptr addrspace(1) %sums, i32 %tid
  %t = add i32 %s, %c
  store i32 %t, ptr addrspace(1) %ps
  %tid4 = add i32 %tid, 4
  %ps2 = getelementptr i32, ptr addrspace(1) %sums, i32 %tid4
  store i32 %fi, ptr addrspace(1) %ps2
  br label %done
done:
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_lds_atomics_kernel_matches_numpy(tmp_path, arch):
    obj = llc_hsaco(tmp_path, arch, LDS_ATOMICS, "ldsat")
    n = 128
    rng = np.random.default_rng(6)
    v = rng.integers(0, 1000, n).astype(np.uint32)
    old, oldmax, sums = (np.zeros(n, np.uint32), np.zeros(n, np.uint32),
                         np.zeros(8, np.uint32))
    run_hsaco(obj, "ldsat", [v.copy(), old, oldmax, sums], grid=1, block=n)
    slot = np.arange(n) % 4
    want = np.array([v[slot == s].sum() for s in range(4)], np.int64)
    # the add slot plus the count slot (32 lanes each); the float sums are exact integers
    np.testing.assert_array_equal(sums[:4], want + n // 4)
    np.testing.assert_array_equal(sums[4:], want)
    for s in range(4):
        # whatever the lane order, each returned old value is the sum of the values added
        # before it: sorted by old value they chain; the max atomic's old values are the
        # running maximum in that same order (the emulator runs both in lane order)
        lanes = np.nonzero(slot == s)[0]
        order = lanes[np.argsort(old[lanes], kind="stable")]
        np.testing.assert_array_equal(old[order], np.concatenate(
            [[0], np.cumsum(v[order].astype(np.int64))[:-1]]))
        np.testing.assert_array_equal(oldmax[order], np.concatenate(
            [[0], np.maximum.accumulate(v[order])[:-1]]))


# llvm.frexp: llc-19 selects v_frexp_mant_f32 / v_frexp_exp_i32_f32 with no fix-up, so LLVM
# relies on them being C frexp() for finite inputs (0 -> (0, 0), denormals normalized).
FREXP = """target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @fx(ptr addrspace(1) %a, ptr addrspace(1) %m, ptr addrspace(1) %e) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %tid
  %x = load float, ptr addrspace(1) %pa
  %r = call { float, i32 } @llvm.frexp.f32.i32(float %x)
  %mm = extractvalue { float, i32 } %r, 0
  %ee = extractvalue { float, i32 } %r, 1
  %pm = getelementptr float, ptr addrspace(1) %m, i32 %tid
  store float %mm, ptr addrspace(1) %pm
  %pe = getelementptr i32, ptr addrspace(1) %e, i32 %tid
  store i32 %ee, ptr addrspace(1) %pe
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare { float, i32 } @llvm.frexp.f32.i32(float)
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_frexp_kernel_matches_numpy(tmp_path, arch):
    obj = llc_hsaco(tmp_path, arch, FREXP, "fx")
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(64) * 10.0 ** rng.integers(-30, 30, 64)).astype(np.float32)
    a[:4] = [0.0, -0.0, 1e-40, -3e-45]  # zeros and denormals
    m, e = np.zeros(64, np.float32), np.zeros(64, np.int32)
    run_hsaco(obj, "fx", [a.copy(), m, e], grid=1, block=64)
    wm, we = np.frexp(a)
    np.testing.assert_array_equal(m.view(np.uint32), wm.view(np.uint32))
    np.testing.assert_array_equal(e, we)


# fdiv float and double: llc-19's macro v_div_scale (numerator and denominator), v_rcp, fma
# Newton-Raphson steps, v_div_fmas, v_div_fixup. With the emulator's exactly rounded v_rcp
# the macro gives the correctly rounded quotient; special operands go through v_div_fixup.
FDIV = """target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @dv(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %o,
                              ptr addrspace(1) %da, ptr addrspace(1) %db, ptr addrspace(1) %do) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %tid
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %tid
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %q = fdiv float %x, %y
  %po = getelementptr float, ptr addrspace(1) %o, i32 %tid
  store float %q, ptr addrspace(1) %po
  %pda = getelementptr double, ptr addrspace(1) %da, i32 %tid
  %pdb = getelementptr double, ptr addrspace(1) %db, i32 %tid
  %dx = load double, ptr addrspace(1) %pda
  %dy = load double, ptr addrspace(1) %pdb
  %dq = fdiv double %dx, %dy
  %pdo = getelementptr double, ptr addrspace(1) %do, i32 %tid
  store double %dq, ptr addrspace(1) %pdo
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_fdiv_macro_matches_numpy(tmp_path, arch):
    obj = llc_hsaco(tmp_path, arch, FDIV, "dv")
    rng = np.random.default_rng(8)
    n = 64
    # quotients within 2^+-96 and no tiny operand: the cases valu_div.py emulates
    a = rng.standard_normal(n) * 10.0 ** rng.integers(-10, 10, n)
    b = rng.standard_normal(n) * 10.0 ** rng.integers(-10, 10, n)
    special = [(0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (np.inf, np.inf), (np.inf, 2.0),
               (3.0, np.inf), (0.0, -5.0), (np.nan, 1.0), (1.0, np.nan), (1.0, 3.0)]
    for i, (x, y) in enumerate(special):
        a[i], b[i] = x, y
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    o = np.zeros(n, np.float32)
    do = np.zeros(n, np.float64)
    run_hsaco(obj, "dv", [a32.copy(), b32.copy(), o, a.copy(), b.copy(), do], grid=1, block=n)
    with np.errstate(all="ignore"):
        w32, w64 = a32 / b32, a / b
    nan32, nan64 = np.isnan(w32), np.isnan(w64)
    np.testing.assert_array_equal(np.isnan(o), nan32)
    np.testing.assert_array_equal(o.view(np.uint32)[~nan32], w32.view(np.uint32)[~nan32])
    np.testing.assert_array_equal(np.isnan(do), nan64)
    np.testing.assert_array_equal(do.view(np.uint64)[~nan64], w64.view(np.uint64)[~nan64])
