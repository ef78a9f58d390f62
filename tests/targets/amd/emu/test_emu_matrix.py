"""The matrix ops in the emulator (kcc/targets/amd/emu/matrix.py) on code llc-19 compiled from
LLVM's intrinsics, independent of kcc: ``llvm.amdgcn.wmma.*`` on gfx1100 (v_wmma_f32 f16 and
bf16, v_wmma_f16 with op_sel, v_wmma_i32 iu8 signed/unsigned with clamp) and
``llvm.amdgcn.mfma.f32.16x16x16{f16,bf16.1k}`` on gfx942. Each lane loads its own fragment
vectors, laid out from numpy matrices as the ISA manuals give the lanes (the module docstring of
matrix.py); the results must be A @ B + C as docs/semantics.md defines it (a binary32 fma chain
over k, computed here with math.fsum), integers exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from amd_util import llc_hsaco, needs_decoder, needs_llvm19
from kcc.targets.amd.emu.core import EmuError, run_hsaco

pytestmark = [needs_llvm19, needs_decoder]


def _kernel(name: str, ta: str, tc: str, call: str) -> str:
    """A kernel: each lane loads <ta> from a and b and <tc> from c, stores call's result."""
    return f"""
define amdgpu_kernel void @{name}(ptr addrspace(1) %a, ptr addrspace(1) %b,
                                 ptr addrspace(1) %c, ptr addrspace(1) %d) #0 {{
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr {ta}, ptr addrspace(1) %a, i32 %tid
  %pb = getelementptr {ta}, ptr addrspace(1) %b, i32 %tid
  %pc = getelementptr {tc}, ptr addrspace(1) %c, i32 %tid
  %pd = getelementptr {tc}, ptr addrspace(1) %d, i32 %tid
  %va = load {ta}, ptr addrspace(1) %pa
  %vb = load {ta}, ptr addrspace(1) %pb
  %vc = load {tc}, ptr addrspace(1) %pc
  %r = call {tc} {call}
  store {tc} %r, ptr addrspace(1) %pd
  ret void
}}
"""


HEAD = 'target triple = "amdgcn-amd-amdhsa"\ndeclare i32 @llvm.amdgcn.workitem.id.x()\n'
WMMA = HEAD + "attributes #0 = { nounwind }\n" + "".join([
    _kernel("wf", "<16 x half>", "<8 x float>", "@llvm.amdgcn.wmma.f32.16x16x16.f16("
            "<16 x half> %va, <16 x half> %vb, <8 x float> %vc)"),
    _kernel("wb", "<16 x i16>", "<8 x float>", "@llvm.amdgcn.wmma.f32.16x16x16.bf16("
            "<16 x i16> %va, <16 x i16> %vb, <8 x float> %vc)"),
    _kernel("wh", "<16 x half>", "<16 x half>", "@llvm.amdgcn.wmma.f16.16x16x16.f16("
            "<16 x half> %va, <16 x half> %vb, <16 x half> %vc, i1 true)"),
    _kernel("wl", "<16 x half>", "<16 x half>", "@llvm.amdgcn.wmma.f16.16x16x16.f16("
            "<16 x half> %va, <16 x half> %vb, <16 x half> %vc, i1 false)"),
    _kernel("wi", "<4 x i32>", "<8 x i32>", "@llvm.amdgcn.wmma.i32.16x16x16.iu8(i1 true, "
            "<4 x i32> %va, i1 false, <4 x i32> %vb, <8 x i32> %vc, i1 true)"),
    _kernel("wu", "<4 x i32>", "<8 x i32>", "@llvm.amdgcn.wmma.i32.16x16x16.iu8(i1 false, "
            "<4 x i32> %va, i1 true, <4 x i32> %vb, <8 x i32> %vc, i1 false)"),
]) + """
declare <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16(<16 x half>, <16 x half>, <8 x float>)
declare <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.bf16(<16 x i16>, <16 x i16>, <8 x float>)
declare <16 x half> @llvm.amdgcn.wmma.f16.16x16x16.f16(<16 x half>, <16 x half>, <16 x half>,
                                                       i1 immarg)
declare <8 x i32> @llvm.amdgcn.wmma.i32.16x16x16.iu8(i1 immarg, <4 x i32>, i1 immarg, <4 x i32>,
                                                     <8 x i32>, i1 immarg)
"""
# "amdgpu-no-agpr" and at most 128 VGPRs a lane: llc selects the MFMA forms with VGPR
# operands (kcc's decoder, like kcc, does not use AGPRs).
MFMA = HEAD + ('attributes #0 = { "amdgpu-no-agpr" "amdgpu-flat-work-group-size"="64,64" '
               '"amdgpu-waves-per-eu"="4,8" }\n') + "".join([
    _kernel("mf", "<4 x half>", "<4 x float>", "@llvm.amdgcn.mfma.f32.16x16x16f16("
            "<4 x half> %va, <4 x half> %vb, <4 x float> %vc, i32 0, i32 0, i32 0)"),
    _kernel("mb", "<4 x i16>", "<4 x float>", "@llvm.amdgcn.mfma.f32.16x16x16bf16.1k("
            "<4 x i16> %va, <4 x i16> %vb, <4 x float> %vc, i32 0, i32 0, i32 0)"),
]) + """
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, i32,
                                                      i32, i32)
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16>, <4 x i16>, <4 x float>,
                                                          i32, i32, i32)
"""


@pytest.fixture(scope="module")
def wmma_obj(tmp_path_factory) -> bytes:
    return llc_hsaco(tmp_path_factory.mktemp("wmma"), "gfx1100", WMMA, "wmma")


@pytest.fixture(scope="module")
def mfma_obj(tmp_path_factory) -> bytes:
    return llc_hsaco(tmp_path_factory.mktemp("mfma"), "gfx942", MFMA, "mfma")


def _bf16(x: np.ndarray) -> np.ndarray:
    """binary32 values truncated to bf16 bit patterns (exact values, kept as uint16)."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _bf16_value(h: np.ndarray) -> np.ndarray:
    return (h.astype(np.uint32) << 16).view(np.float32)


def _want(a: np.ndarray, b: np.ndarray, c: np.ndarray, out) -> np.ndarray:
    """A @ B + C as docs/semantics.md defines it: per (m, n), acc = C in binary32, then for
    k = 0 .. 15 acc = fma(A[m][k], B[k][n], acc) in binary32 (math.fsum of the exact binary64
    product and acc, rounded to binary32), then rounded to ``out``."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    d = np.empty((16, 16), np.float64)
    with np.errstate(all="ignore"):
        for m in range(16):
            for n in range(16):
                acc = np.float32(c[m, n])
                for k in range(16):
                    p = a64[m, k] * b64[k, n]
                    exact = math.isfinite(p) and math.isfinite(acc)
                    acc = np.float32(math.fsum([p, float(acc)]) if exact else p + acc)
                d[m, n] = acc
        return d.astype(np.float32).astype(out)


def _mats(rng, dtype):
    a = (rng.standard_normal((16, 16)) * 2).astype(np.float16)
    b = (rng.standard_normal((16, 16)) * 2).astype(np.float16)
    c = (rng.standard_normal((16, 16)) * 8).astype(dtype)
    return a, b, c


# --- gfx1100 lane layouts --------------------------------------------------------------------
def _rdna3_ab(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-lane A and B vectors (lane l: row / column l % 16, K elements)."""
    lanes = np.arange(32) % 16
    return np.ascontiguousarray(a[lanes]), np.ascontiguousarray(b.T[lanes])


def _rdna3_c(c: np.ndarray) -> np.ndarray:
    """Per-lane C vectors [32, 8]: element i of lane l is C[2i + l // 16, l % 16]."""
    lanes = np.arange(32)
    return np.stack([c[2 * i + lanes // 16, lanes % 16] for i in range(8)], axis=1)


def _rdna3_d(d: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_rdna3_c`."""
    out = np.empty((16, 16), d.dtype)
    for lane in range(32):
        for i in range(8):
            out[2 * i + lane // 16, lane % 16] = d[lane, i]
    return out


def _f32_case(rng: np.random.Generator, kind: str) -> tuple[np.ndarray, ...]:
    """Random A, B, C of a float32-accumulator case and A, B as the instruction reads them
    (float16 values, or bfloat16 bit patterns whose values A and B then are)."""
    a, b, c = _mats(rng, np.float32)
    if kind == "bf16":
        ha, hb = _bf16(a.astype(np.float32)), _bf16(b.astype(np.float32))
        return _bf16_value(ha), _bf16_value(hb), c, ha, hb
    return a, b, c, a, b


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_wmma_f32(wmma_obj, kind) -> None:
    rng = np.random.default_rng(23)
    a, b, c, ha, hb = _f32_case(rng, kind)
    la, lb = _rdna3_ab(ha, hb)
    lc = _rdna3_c(c)
    d = np.zeros_like(lc)
    run_hsaco(wmma_obj, "wf" if kind == "f16" else "wb", [la, lb, lc, d], grid=1, block=32)
    np.testing.assert_array_equal(_rdna3_d(d), _want(a, b, c, np.float32))


@pytest.mark.parametrize("high", [True, False])
def test_wmma_f16_op_sel(wmma_obj, high) -> None:
    """op_sel true: C and D in the high halves (odd elements of the <16 x half>)."""
    rng = np.random.default_rng(24)
    a, b, c = _mats(rng, np.float16)
    la, lb = _rdna3_ab(a, b)
    lc = np.full((32, 16), np.float16(-7.0))          # the halves not used
    lc[:, 1 if high else 0::2] = _rdna3_c(c)
    d = np.zeros_like(lc)
    run_hsaco(wmma_obj, "wh" if high else "wl", [la, lb, lc, d], grid=1, block=32)
    got = _rdna3_d(d[:, 1 if high else 0::2])
    np.testing.assert_array_equal(got.view(np.uint16), _want(a, b, c, np.float16).view(np.uint16))


@pytest.mark.parametrize("kernel,sa,sb,clamp", [("wi", True, False, True),
                                                 ("wu", False, True, False)])
def test_wmma_iu8(wmma_obj, kernel, sa, sb, clamp) -> None:
    rng = np.random.default_rng(25)
    a = rng.integers(0, 256, (16, 16)).astype(np.uint8)
    b = rng.integers(0, 256, (16, 16)).astype(np.uint8)
    c = rng.integers(-2**31, 2**31, (16, 16)).astype(np.int64)
    c[0, :] = 2**31 - 5                                 # overflow: saturate or wrap
    c[1, :] = -2**31 + 3
    la, lb = _rdna3_ab(a, b)
    lc = _rdna3_c(c.astype(np.int32))
    d = np.zeros_like(lc)
    run_hsaco(wmma_obj, kernel, [la.view(np.uint32).copy(), lb.view(np.uint32).copy(), lc, d],
              grid=1, block=32)
    av = a.view(np.int8).astype(np.int64) if sa else a.astype(np.int64)
    bv = b.view(np.int8).astype(np.int64) if sb else b.astype(np.int64)
    want = c + av @ bv
    want = np.clip(want, -2**31, 2**31 - 1) if clamp else (want + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(_rdna3_d(d), want.astype(np.int32))


def test_wmma_nan_and_inf_propagate(wmma_obj) -> None:
    a, b, c = _mats(np.random.default_rng(26), np.float32)
    a[3, 5] = np.nan
    b[2, 7] = np.inf
    la, lb = _rdna3_ab(a, b)
    lc = _rdna3_c(c)
    d = np.zeros_like(lc)
    run_hsaco(wmma_obj, "wf", [la, lb, lc, d], grid=1, block=32)
    got, want = _rdna3_d(d), _want(a, b, c, np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    assert np.isnan(got[3]).all() and np.isinf(got[:, 7]).sum() == 15


def test_wmma_refuses_differing_lane_copies_and_partial_exec(wmma_obj) -> None:
    a, b, c = _mats(np.random.default_rng(27), np.float32)
    la, lb = _rdna3_ab(a, b)
    lc = _rdna3_c(c)
    bad = la.copy()
    bad[20, 3] += np.float16(1)                         # lane 20's copy of row 4
    with pytest.raises(EmuError, match="lanes 16-31 of A differ"):
        run_hsaco(wmma_obj, "wf", [bad, lb, lc, np.zeros_like(lc)], grid=1, block=32)
    with pytest.raises(EmuError, match="EXEC all ones"):
        run_hsaco(wmma_obj, "wf", [la, lb, lc, np.zeros_like(lc)], grid=1, block=16)


# --- gfx942 lane layouts ---------------------------------------------------------------------
def _cdna3_ab(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-lane A and B [64, 4]: lane i + 16g holds A[i, 4g:4g+4] and B[4g:4g+4, i]."""
    la = np.concatenate([a[:, 4 * g:4 * g + 4] for g in range(4)])
    lb = np.concatenate([b[4 * g:4 * g + 4, :].T for g in range(4)])
    return np.ascontiguousarray(la), np.ascontiguousarray(lb)


def _cdna3_c(c: np.ndarray) -> np.ndarray:
    """Per-lane C [64, 4]: lane j + 16g holds C[4g:4g+4, j]."""
    return np.ascontiguousarray(np.concatenate([c[4 * g:4 * g + 4, :].T for g in range(4)]))


def _cdna3_d(d: np.ndarray) -> np.ndarray:
    out = np.empty((16, 16), d.dtype)
    for g in range(4):
        out[4 * g:4 * g + 4, :] = d[16 * g:16 * g + 16].T
    return out


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_mfma_f32(mfma_obj, kind) -> None:
    rng = np.random.default_rng(42)
    a, b, c, ha, hb = _f32_case(rng, kind)
    la, lb = _cdna3_ab(ha, hb)
    lc = _cdna3_c(c)
    d = np.zeros_like(lc)
    run_hsaco(mfma_obj, "mf" if kind == "f16" else "mb", [la, lb, lc, d], grid=1, block=64)
    np.testing.assert_array_equal(_cdna3_d(d), _want(a, b, c, np.float32))
