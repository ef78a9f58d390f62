"""Small AMDGPU kernels written in LLVM IR, for tests that need code kcc did not write.

``llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=<gfx> -O2`` + ``ld.lld-19 -shared`` turn them into
code objects (see :func:`build_hsaco`): an elementwise f32 add/mul, a reduction through LDS
with a barrier, and a gated (bounds-checked) load. Each kernel's meaning, for numpy:

* ``add_mul(a, b, c)``: ``c[i] = (a[i] + b[i]) * b[i]`` for i = group*256 + lane.
* ``reduce(inp, out)``: ``out[group] = sum(inp[group*256 : group*256+256])`` (lane 0 sums
  the 256 values the workgroup stored to LDS, after ``s_barrier``).
* ``gated(inp, out, n)``: ``out[i] = 2 * (inp[i] if i < n else 0)`` for i = group*64 + lane.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

KERNELS_LL = r"""
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()

define amdgpu_kernel void @add_mul(ptr addrspace(1) %a, ptr addrspace(1) %b,
                                   ptr addrspace(1) %c) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %i = add i32 %base, %tid
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %pc = getelementptr float, ptr addrspace(1) %c, i32 %i
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %s = fadd float %x, %y
  %m = fmul float %s, %y
  store float %m, ptr addrspace(1) %pc
  ret void
}

@lds = internal addrspace(3) global [256 x float] undef, align 4

define amdgpu_kernel void @reduce(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %i = add i32 %base, %tid
  %p = getelementptr float, ptr addrspace(1) %in, i32 %i
  %x = load float, ptr addrspace(1) %p
  %l = getelementptr [256 x float], ptr addrspace(3) @lds, i32 0, i32 %tid
  store float %x, ptr addrspace(3) %l
  call void @llvm.amdgcn.s.barrier()
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %sum, label %done
sum:
  br label %loop
loop:
  %j = phi i32 [ 0, %sum ], [ %jn, %loop ]
  %acc = phi float [ 0.0, %sum ], [ %accn, %loop ]
  %lj = getelementptr [256 x float], ptr addrspace(3) @lds, i32 0, i32 %j
  %v = load float, ptr addrspace(3) %lj
  %accn = fadd float %acc, %v
  %jn = add i32 %j, 1
  %c = icmp ult i32 %jn, 256
  br i1 %c, label %loop, label %st
st:
  %po = getelementptr float, ptr addrspace(1) %out, i32 %wg
  store float %accn, ptr addrspace(1) %po
  br label %done
done:
  ret void
}

define amdgpu_kernel void @gated(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 64
  %i = add i32 %base, %tid
  %ok = icmp slt i32 %i, %n
  br i1 %ok, label %ld, label %join
ld:
  %p = getelementptr float, ptr addrspace(1) %in, i32 %i
  %x = load float, ptr addrspace(1) %p
  br label %join
join:
  %v = phi float [ %x, %ld ], [ 0.0, %0 ]
  %m = fmul float %v, 2.0
  %po = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %m, ptr addrspace(1) %po
  ret void
}
"""

LLC = shutil.which("llc-19")
LLD = shutil.which("ld.lld-19")


def build_hsaco(arch: str, tmp: Path, ll: str = KERNELS_LL) -> Path:
    """Compile LLVM IR with llc-19 and link it with ld.lld-19; return the code object path."""
    assert LLC and LLD, "llc-19 and ld.lld-19 are required"
    src, obj, out = tmp / f"k_{arch}.ll", tmp / f"k_{arch}.o", tmp / f"k_{arch}.hsaco"
    src.write_text(ll)
    subprocess.run([LLC, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-O2",
                    "-filetype=obj", str(src), "-o", str(obj)], check=True)
    subprocess.run([LLD, "-shared", str(obj), "-o", str(out)], check=True)
    return out
