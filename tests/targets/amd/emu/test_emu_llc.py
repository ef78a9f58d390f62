"""The emulator runs code kcc did not write: small kernels in LLVM IR, compiled by llc-19 and
linked by ld.lld-19 for gfx1100 and gfx942, compared with numpy.

gfx1100 code is compiled without VOPD (amd_util.llc_hsaco): kcc's decoder has no VOPD
(dual-issue) rows, since kcc does not emit VOPD.
"""

from __future__ import annotations

import numpy as np
import pytest

from amd_util import ARCHS, llc_hsaco, needs_decoder, needs_llvm19
from kcc.encode.amd.decode import disassemble
from kcc.targets.amd.emu.core import EmuError, run_hsaco
from kcc.targets.amd.hsaco_read import read_hsaco

pytestmark = [needs_llvm19, needs_decoder]

HEAD = 'target triple = "amdgcn-amd-amdhsa"\n'
DECLS = """
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workitem.id.y()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.fma.f32(float, float, float)
"""

# out[i] = fma(a[i], b[i], 1.0) and maxnum(a[i], b[i]), i = wg * 64 + tid, only i < n stored.
ELEMENTWISE = HEAD + """
define amdgpu_kernel void @ew(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %o,
                              ptr addrspace(1) %m, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 64
  %i = add i32 %base, %tid
  %in = icmp slt i32 %i, %n
  br i1 %in, label %body, label %exit
body:
  %pa = getelementptr float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i32 %i
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %f = call float @llvm.fma.f32(float %x, float %y, float 1.0)
  %mx = call float @llvm.maxnum.f32(float %x, float %y)
  %po = getelementptr float, ptr addrspace(1) %o, i32 %i
  %pm = getelementptr float, ptr addrspace(1) %m, i32 %i
  store float %f, ptr addrspace(1) %po
  store float %mx, ptr addrspace(1) %pm
  br label %exit
exit:
  ret void
}
""" + DECLS

# Integer work with 64-bit math: o[i] = (u64)a[i] * k + i, stored as two words.
INTEGER = HEAD + """
define amdgpu_kernel void @imath(ptr addrspace(1) %a, ptr addrspace(1) %o, i64 %k) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = shl i32 %wg, 6
  %i = add i32 %base, %tid
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %i
  %x = load i32, ptr addrspace(1) %pa
  %xe = zext i32 %x to i64
  %ie = zext i32 %i to i64
  %p = mul i64 %xe, %k
  %s = add i64 %p, %ie
  %sh = lshr i32 %x, 3
  %sx = ashr i32 %x, 29
  %t = xor i32 %sh, %sx
  %r = trunc i64 %s to i32
  %po = getelementptr i64, ptr addrspace(1) %o, i32 %i
  store i64 %s, ptr addrspace(1) %po
  %pt = getelementptr i32, ptr addrspace(1) %a, i32 %i
  store i32 %t, ptr addrspace(1) %pt
  ret void
}
""" + DECLS

# Sum of 256 floats per workgroup: a tree in LDS with a barrier between steps.
REDUCE = HEAD + """
@lds = internal addrspace(3) global [256 x float] undef, align 4
define amdgpu_kernel void @reduce(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %gid = add i32 %base, %tid
  %p = getelementptr float, ptr addrspace(1) %in, i32 %gid
  %v = load float, ptr addrspace(1) %p
  %l = getelementptr [256 x float], ptr addrspace(3) @lds, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %l
  call void @llvm.amdgcn.s.barrier()
  br label %loop
loop:
  %s = phi i32 [128, %entry], [%s2, %next]
  %c = icmp ult i32 %tid, %s
  br i1 %c, label %add, label %next
add:
  %o = add i32 %tid, %s
  %lo = getelementptr [256 x float], ptr addrspace(3) @lds, i32 0, i32 %o
  %x = load float, ptr addrspace(3) %l
  %y = load float, ptr addrspace(3) %lo
  %z = fadd float %x, %y
  store float %z, ptr addrspace(3) %l
  br label %next
next:
  call void @llvm.amdgcn.s.barrier()
  %s2 = lshr i32 %s, 1
  %d = icmp eq i32 %s2, 0
  br i1 %d, label %done, label %loop
done:
  %t0 = icmp eq i32 %tid, 0
  br i1 %t0, label %write, label %exit
write:
  %r = load float, ptr addrspace(3) @lds
  %po = getelementptr float, ptr addrspace(1) %out, i32 %wg
  store float %r, ptr addrspace(1) %po
  br label %exit
exit:
  ret void
}
""" + DECLS

# A gated load on a 2-D block: out[y][x] = x < w ? in[y][x] : -1.0 (the load only in bounds).
GATED = HEAD + """
define amdgpu_kernel void @gated(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %w) {
entry:
  %x = call i32 @llvm.amdgcn.workitem.id.x()
  %y = call i32 @llvm.amdgcn.workitem.id.y()
  %row = mul i32 %y, 16
  %i = add i32 %row, %x
  %ok = icmp ult i32 %x, %w
  br i1 %ok, label %load, label %join
load:
  %pi = getelementptr float, ptr addrspace(1) %in, i32 %i
  %v = load float, ptr addrspace(1) %pi
  br label %join
join:
  %r = phi float [ %v, %load ], [ -1.0, %entry ]
  %po = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %r, ptr addrspace(1) %po
  ret void
}
""" + DECLS


# Launch facts through the hidden kernel arguments (code object v5 implicit arguments):
# o[gid] = block_count_x * 65536 + gid with gid = wg * group_size_x + tid.
IDS = HEAD + """
define amdgpu_kernel void @ids(ptr addrspace(1) %o) {
  %ip = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %gp = getelementptr i8, ptr addrspace(4) %ip, i64 12
  %bs = load i16, ptr addrspace(4) %gp
  %bsz = zext i16 %bs to i32
  %cnt = load i32, ptr addrspace(4) %ip
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %b = mul i32 %wg, %bsz
  %gid = add i32 %b, %tid
  %hi = shl i32 %cnt, 16
  %v = add i32 %hi, %gid
  %p = getelementptr i32, ptr addrspace(1) %o, i32 %gid
  store i32 %v, ptr addrspace(1) %p
  ret void
}
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
""" + DECLS


# Integer division by a run-time divisor (llc's reciprocal-based sequence), min, int <->
# float <-> double conversions, fabs/fneg as source modifiers, f64 arithmetic, select.
MISC = HEAD + """
define amdgpu_kernel void @misc(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %o,
                                ptr addrspace(1) %d) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr i32, ptr addrspace(1) %a, i32 %tid
  %pb = getelementptr i32, ptr addrspace(1) %b, i32 %tid
  %x = load i32, ptr addrspace(1) %pa
  %y = load i32, ptr addrspace(1) %pb
  %q = udiv i32 %x, %y
  %r = urem i32 %x, %y
  %mn = call i32 @llvm.smin.i32(i32 %x, i32 %y)
  %f = sitofp i32 %mn to float
  %fa = call float @llvm.fabs.f32(float %f)
  %fn = fneg float %fa
  %dx = fpext float %fn to double
  %dm = fmul double %dx, 0x3FB999999999999A
  %da = fadd double %dm, 1.0
  %fi = fptosi double %da to i32
  %s = add i32 %q, %fi
  %c = icmp ugt i32 %r, 5
  %sel = select i1 %c, i32 %s, i32 %r
  %po = getelementptr i32, ptr addrspace(1) %o, i32 %tid
  store i32 %sel, ptr addrspace(1) %po
  %pd = getelementptr double, ptr addrspace(1) %d, i32 %tid
  store double %da, ptr addrspace(1) %pd
  ret void
}
declare i32 @llvm.smin.i32(i32, i32)
declare float @llvm.fabs.f32(float)
""" + DECLS


def build(tmp_path, arch: str, ir: str, name: str) -> bytes:
    return llc_hsaco(tmp_path, arch, ir, name)


@pytest.mark.parametrize("arch", ARCHS)
def test_elementwise_fma_and_maxnum(tmp_path, arch):
    obj = build(tmp_path, arch, ELEMENTWISE, "ew")
    rng = np.random.default_rng(1)
    n = 200  # not a multiple of the 64-item workgroup: the tail is gated
    a = rng.standard_normal(256).astype(np.float32)
    b = rng.standard_normal(256).astype(np.float32)
    a[:4] = [np.nan, 0.0, -0.0, np.inf]
    b[:4] = [2.0, -0.0, 0.0, 1.0]
    o = np.full(256, 7.0, np.float32)
    m = np.full(256, 7.0, np.float32)
    run_hsaco(obj, "ew", [a, b, o, m, np.int32(n)], grid=4, block=64)
    want = (a.astype(np.float64) * b + 1.0).astype(np.float32)  # exact product: one rounding
    np.testing.assert_array_equal(o[:n], want[:n])
    assert (o[n:] == 7.0).all()
    np.testing.assert_array_equal(m[4:n], np.fmax(a, b)[4:n])
    assert m[0] == 2.0  # maxnum(NaN, 2) = 2
    assert not np.signbit(m[1]) and not np.signbit(m[2])  # max(+0, -0) = +0 either way


@pytest.mark.parametrize("arch", ARCHS)
def test_integer_and_64bit_math(tmp_path, arch):
    obj = build(tmp_path, arch, INTEGER, "imath")
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
    orig = a.copy()
    o = np.zeros(128, np.uint64)
    k = np.int64(0x1_2345_6789)
    run_hsaco(obj, "imath", [a, o, k], grid=2, block=64)
    i = np.arange(128, dtype=np.uint64)
    np.testing.assert_array_equal(o, orig.astype(np.uint64) * np.uint64(k) + i)
    want = (orig >> 3) ^ (orig.view(np.int32) >> 29).view(np.uint32)
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("arch", ARCHS)
def test_lds_reduction_with_barriers(tmp_path, arch):
    obj = build(tmp_path, arch, REDUCE, "reduce")
    rng = np.random.default_rng(3)
    # Small integers: every partial sum is exact, so any order gives the same float.
    x = rng.integers(-1000, 1000, 3 * 256).astype(np.float32)
    out = np.zeros(3, np.float32)
    run_hsaco(obj, "reduce", [x, out], grid=3, block=256)
    np.testing.assert_array_equal(out, x.reshape(3, 256).sum(axis=1))


@pytest.mark.parametrize("arch", ARCHS)
def test_gated_load_2d_block(tmp_path, arch):
    obj = build(tmp_path, arch, GATED, "gated")
    src = np.arange(16 * 8, dtype=np.float32)
    # Only the first 10 columns exist in memory order of each row; the buffer is exactly
    # as long as the last in-bounds element, so an ungated load past it would fault.
    src = src[:7 * 16 + 10].copy()
    out = np.zeros(16 * 8, np.float32)
    run_hsaco(obj, "gated", [src, out, np.int32(10)], grid=1, block=(16, 8))
    want = np.where(np.arange(16)[None, :] < 10,
                    np.arange(16 * 8, dtype=np.float32).reshape(8, 16), -1.0)
    np.testing.assert_array_equal(out.reshape(8, 16), want)


@pytest.mark.parametrize("arch", ARCHS)
def test_hidden_arguments_give_block_count_and_size(tmp_path, arch):
    obj = build(tmp_path, arch, IDS, "ids")
    out = np.zeros(3 * 40, np.uint32)
    run_hsaco(obj, "ids", [out], grid=3, block=40)  # partial waves: 40 of 64 / 2x32 lanes
    np.testing.assert_array_equal(out, 3 * 65536 + np.arange(120, dtype=np.uint32))


# For gfx1100 llc puts an s_waitcnt_depctr (a hazard wait, no effect in a functional model) in
# this kernel; the decoder has that row, so LLVM's code runs as it is.
@pytest.mark.parametrize("arch", ARCHS)
def test_division_conversions_and_f64(tmp_path, arch):
    obj = build(tmp_path, arch, MISC, "misc")
    if arch == "gfx1100":
        code = read_hsaco(obj).code("misc")
        assert "s_waitcnt_depctr" in {i.name for _, _, i, _ in disassemble(arch, code)}
    rng = np.random.default_rng(4)
    n = 64
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b[:8] = [1, 2, 3, 7, 0xFFFFFFFF, 0x80000000, 65537, 10]
    o = np.zeros(n, np.uint32)
    d = np.zeros(n, np.float64)
    run_hsaco(obj, "misc", [a.copy(), b.copy(), o, d], grid=1, block=n)
    q, r = a // b, a % b
    mn = np.minimum(a.view(np.int32), b.view(np.int32))
    da = -np.abs(mn.astype(np.float32)).astype(np.float64) * 0.1 + 1.0
    np.testing.assert_array_equal(d, da)
    s = (q.astype(np.int64) + np.trunc(da).astype(np.int64)) & 0xFFFFFFFF
    np.testing.assert_array_equal(o, np.where(r > 5, s, r).astype(np.uint32))


def test_wrong_argument_count_is_refused(tmp_path):
    obj = build(tmp_path, "gfx942", GATED, "gated")
    with pytest.raises(ValueError, match="takes 3 arguments, got 2"):
        run_hsaco(obj, "gated", [np.zeros(4, np.float32), np.zeros(4, np.float32)], 1, 16)
    with pytest.raises(ValueError, match="no kernel 'nope'"):
        run_hsaco(obj, "nope", [], 1, 16)


def test_memory_fault_is_an_error(tmp_path):
    obj = build(tmp_path, "gfx1100", GATED, "gated")
    with pytest.raises(EmuError, match="outside every buffer"):
        # w = 16: every column is loaded, but the input holds only 100 floats.
        run_hsaco(obj, "gated", [np.zeros(100, np.float32), np.zeros(128, np.float32),
                                 np.int32(16)], 1, (16, 8))


def _objdump(path) -> list[tuple[int, str, str]]:
    """(address, dwords, text) per instruction of llvm-objdump-19 -d."""
    import re
    import subprocess
    out = subprocess.run(["llvm-objdump-19", "-d", str(path)], capture_output=True, text=True,
                         check=True).stdout
    rows = []
    line = r"^\s+(\S.*?)\s*// ([0-9A-F]+): ((?:[0-9A-F]{8} ?)+)(?:\s*<[^>]*>)?$"
    for m in re.finditer(line, out, re.M):
        rows.append((int(m.group(2), 16), m.group(3).strip().lower(),
                     " ".join(m.group(1).split())))
    return rows


@pytest.mark.parametrize("arch", ARCHS)
def test_disasm_listing_matches_llvm_objdump(tmp_path, arch):
    """`kcc disasm` of code llc wrote: every instruction's address, words and text as
    llvm-objdump-19 prints them (up to the padding after each kernel)."""
    import re
    from kcc.targets.amd.hsaco_read import listing
    obj = build(tmp_path, arch, REDUCE, "reduce")
    mine = []
    for m in re.finditer(r"^\s+([0-9a-f]+):\s+((?:[0-9a-f]{8} )+)\s*(.*)$", listing(obj), re.M):
        mine.append((int(m.group(1), 16), m.group(2).strip(), " ".join(m.group(3).split())))
    theirs = _objdump(tmp_path / "reduce.hsaco")[:len(mine)]
    assert len(mine) > 20 and mine == theirs


# Every work-item adds 1 to one counter; llc elects one lane per wave (v_mbcnt, s_bcnt1)
# to add the wave's count with a global atomic.
ATOMIC = HEAD + """
define amdgpu_kernel void @atom(ptr addrspace(1) %o) {
  %old = atomicrmw add ptr addrspace(1) %o, i32 1 monotonic
  ret void
}
""" + DECLS


@pytest.mark.parametrize("arch", ARCHS)
def test_global_atomic_counter(tmp_path, arch):
    obj = build(tmp_path, arch, ATOMIC, "atom")
    out = np.array([5], np.uint32)
    run_hsaco(obj, "atom", [out], grid=3, block=100)
    assert out[0] == 5 + 300


# A float atomic with its old value returned: not emulated (no return form is decoded or run).
ATOMIC_RET = HEAD + """
define amdgpu_kernel void @atomret(ptr addrspace(1) %o, ptr addrspace(1) %r) {
  %old = atomicrmw xchg ptr addrspace(1) %o, i32 7 monotonic
  store i32 %old, ptr addrspace(1) %r
  ret void
}
""" + DECLS


@pytest.mark.parametrize("arch", ARCHS)
def test_unemulated_instruction_is_an_error_naming_it_and_its_address(tmp_path, arch):
    """An instruction the emulator lacks stops the run at its address instead of giving a
    wrong result."""
    obj = build(tmp_path, arch, ATOMIC_RET, "atomret")
    with pytest.raises(EmuError, match=r"at 0x[0-9a-f]+: (instruction \w+ is not supported "
                                       r"by the emulator|cannot decode)"):
        run_hsaco(obj, "atomret", [np.zeros(1, np.uint32), np.zeros(1, np.uint32)], 1, 1)


# Private memory (scratch): each work-item stores to and reloads from an array of its own at
# indices that depend on the lane; llc-19 selects scratch_store/scratch_load (volatile: kept in
# memory), with the private segment size in the descriptor.
PRIVATE = HEAD + """
define amdgpu_kernel void @priv(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %a = alloca [64 x i32], align 4, addrspace(5)
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 64
  %i = add i32 %base, %tid
  %pi = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %x = load i32, ptr addrspace(1) %pi
  %t = and i32 %tid, 63
  %u = sub i32 63, %t
  %x3 = mul i32 %x, 3
  %pt = getelementptr [64 x i32], ptr addrspace(5) %a, i32 0, i32 %t
  %pu = getelementptr [64 x i32], ptr addrspace(5) %a, i32 0, i32 %u
  store volatile i32 %x, ptr addrspace(5) %pt
  store volatile i32 %x3, ptr addrspace(5) %pu
  %y = load volatile i32, ptr addrspace(5) %pt
  %z = load volatile i32, ptr addrspace(5) %pu
  %y10 = mul i32 %y, 10
  %r = add i32 %y10, %z
  %po = getelementptr i32, ptr addrspace(1) %out, i32 %i
  store i32 %r, ptr addrspace(1) %po
  ret void
}
""" + DECLS


@pytest.mark.parametrize("arch", ARCHS)
def test_private_memory_is_per_work_item(tmp_path, arch):
    """Every lane writes the same array offsets (its own t and 63 - t) in its private
    segment; were the segment shared, lanes would read each other's values."""
    obj = build(tmp_path, arch, PRIVATE, "priv")
    from kcc.targets.amd.hsaco_read import read_hsaco
    d = read_hsaco(obj).kernels["priv"].descriptor
    assert d.private_segment and d.private_segment_size >= 256
    x = np.arange(128, dtype=np.int32) * 7 - 300
    out = np.zeros(128, np.int32)
    run_hsaco(obj, "priv", [x, out], grid=2, block=64)
    np.testing.assert_array_equal(out, x * 10 + x * 3)
