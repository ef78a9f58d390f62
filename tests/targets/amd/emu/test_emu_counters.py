"""The emulator's optional instruction counters (kcc.targets.amd.emu.counters) on a tiny
hand-written gfx1100 kernel whose dynamic counts are worked out by reading it."""

from __future__ import annotations

import numpy as np
import pytest
from amd_util import llvm_link, needs_decoder, needs_llvm19

from kcc.targets.amd.emu import counters
from kcc.targets.amd.emu.core import run_hsaco

pytestmark = [needs_llvm19, needs_decoder]

# out[tid] = tid + 3: the +1 in a loop of three trips. Per wave: SMEM 1 (s_load_b64), VALU 1 + 3
# (lshl, add x3), SALU 1 + 3 * 2 (s_mov, s_sub + s_cmp x3), branch 3 (s_cbranch x3), waitcnt 1,
# VMEM 1 (global_store), other 1 (s_endpgm): 18.
ASM = """
.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"
.text
.globl k
.p2align 8
.type k,@function
k:
  s_load_b64 s[2:3], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  s_mov_b32 s4, 3
.Lloop:
  v_add_nc_u32 v0, 1, v0
  s_sub_u32 s4, s4, 1
  s_cmp_lg_u32 s4, 0
  s_cbranch_scc1 .Lloop
  s_waitcnt lgkmcnt(0)
  global_store_b32 v1, v0, s[2:3]
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_user_sgpr_count 2
  .amdhsa_kernarg_size 8
  .amdhsa_next_free_vgpr 2
  .amdhsa_next_free_sgpr 8
  .amdhsa_wavefront_size32 1
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.kernels:
  - .name: k
    .symbol: k.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 32
    .sgpr_count: 8
    .vgpr_count: 2
    .max_flat_workgroup_size: 64
    .args:
      - .offset: 0
        .size: 8
        .value_kind: global_buffer
        .address_space: global
.end_amdgpu_metadata
"""

PER_WAVE = {"VALU": 4, "SALU": 7, "VMEM": 1, "SMEM": 1, "LDS": 0, "waitcnt": 1, "branch": 3,
            "other": 1}


def test_counts_by_class_on_a_hand_written_loop(tmp_path):
    data = llvm_link(tmp_path, "gfx1100", ASM)
    out = np.zeros(64, np.int32)
    with counters.counting() as counts:
        run_hsaco(data, "k", [out], 1, 64)          # one workgroup of two wave32 waves
    np.testing.assert_array_equal(out, np.arange(64) + 3)
    assert {c: counts[c] for c in counters.CLASSES} == {c: 2 * n for c, n in PER_WAVE.items()}
    assert counts["total"] == 2 * 18


def test_counting_is_off_by_default_and_nests(tmp_path):
    data = llvm_link(tmp_path, "gfx1100", ASM)
    out = np.zeros(32, np.int32)
    assert counters.active is None
    with counters.counting() as outer:
        run_hsaco(data, "k", [out], 1, 32)
        with counters.counting() as inner:
            run_hsaco(data, "k", [out], 2, 32)
    assert counters.active is None
    assert inner["total"] == 2 * 18 and outer["total"] == 3 * 18
    run_hsaco(data, "k", [out], 1, 32)              # uncounted: nothing changes
    assert outer["total"] == 3 * 18


@pytest.mark.parametrize("name,kind", [
    ("v_add_f32_e32", "VALU"), ("v_cmp_lt_f32_e64", "VALU"), ("s_add_u32", "SALU"),
    ("s_and_saveexec_b32", "SALU"), ("global_load_b128", "VMEM"), ("buffer_load_dword", "VMEM"),
    ("flat_store_dword", "VMEM"), ("scratch_load_b32", "VMEM"), ("s_load_b64", "SMEM"),
    ("s_load_dwordx2", "SMEM"), ("s_buffer_load_dword", "SMEM"), ("ds_load_b32", "LDS"),
    ("ds_bpermute_b32", "LDS"), ("s_waitcnt", "waitcnt"), ("s_waitcnt_vscnt", "waitcnt"),
    ("s_branch", "branch"), ("s_cbranch_execz", "branch"), ("s_setpc_b64", "branch"),
    ("s_endpgm", "other"), ("s_barrier", "other"), ("s_delay_alu", "other"),
    ("s_nop", "other")])
def test_classify(name, kind):
    assert counters.classify(name) == kind
