"""What a pass may ask of the AMD target (kcc.passes.target.TargetDesc): per-lane scalar ALU,
global loads and stores up to 128 bits."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.passes.target import (ALWAYS_DECOMPOSED, HALF_DTYPES, POLYNOMIAL_OPS, TargetDesc,
                               widths)


def _native_amd(op: Ops, dtype: DType) -> bool:
    """AMD GPUs (RDNA3 gfx1100, CDNA3 gfx942), per lane: no integer divide instruction; v_rcp,
    v_sqrt, v_sin are approximations (RDNA3 ISA §7.x, VOP1 transcendental ops) whose error
    kcc's contracts do not allow alone, so CDIV/CMOD, SIN and float64 FDIV/SQRT are
    decomposed; float32 FDIV/SQRT are native: the selector makes them correctly rounded
    around v_rcp_f32 / v_sqrt_f32 as LLVM 19 does (kcc/isel/amd/fdiv.py); float32 EXP2
    and LOG2 are native: v_exp_f32 / v_log_f32 are documented at 1 ulp (LLVM AMDGPUUsage,
    llvm.exp2/llvm.log2), within docs/transcendentals.md's 2 ulp, with the selector scaling
    the inputs whose results or arguments are subnormal (kcc/isel/amd/alu.py); float64 ones
    stay polynomials (the hardware has no float64 exp/log); v_max_f32 is IEEE maxNum,
    not MAX; half precision computes in float32; integer MULACC is MUL then ADD; MULHI
    is decomposed (64-bit products). CAST from
    int64/uint64/float64 (asked with the source dtype) is native only where a v_cvt does it
    with one rounding: to float32/float16 kcc rounds to odd first (decompose.odd_cast)."""
    if op is Ops.CAST:
        return dtype not in (dtypes.bfloat16, dtypes.int64, dtypes.uint64, dtypes.float64)
    if op is Ops.BITCAST:
        return dtype != dtypes.bfloat16
    if op in (Ops.EXP2, Ops.LOG2) and dtype == dtypes.float32:
        return True
    if op in POLYNOMIAL_OPS or op in ALWAYS_DECOMPOSED or dtype in HALF_DTYPES:
        return False
    if op in (Ops.FDIV, Ops.SQRT):
        return dtype == dtypes.float32
    if op in (Ops.CDIV, Ops.CMOD):
        return False
    if op is Ops.MAX and dtype.is_float:
        return False
    if op is Ops.MULACC and not dtype.is_float:
        return False
    if op is Ops.MULHI:     # not selected (v_mul_hi_u32/i32 would do 32 bits): decomposed
        return False
    return True


_AMD_MEM = {dtypes.float32: (4, 2), dtypes.int32: (4, 2), dtypes.uint32: (4, 2),
            dtypes.float64: (2,), dtypes.int64: (2,), dtypes.uint64: (2,)}
# full_unroll: tinygrad's per-work-item reduce loops (16-32 iterations at its GPU opts) run
# straight-line, as LLVM's loop unroller makes them (bench/gpu_vs_llvm.py, issue 25)
AMD = TargetDesc("amd", widths({}), widths(_AMD_MEM), _native_amd, "native", True,
                 notes="AMD GPU: per-lane scalar ALU, global_load/store_b64/b128",
                 full_unroll=32)


def _selects(family: str, shape: Any) -> bool:
    """Whether the family has the tensor-core form as one instruction (kcc/isel/amd/matrix.py:
    gfx1100's v_wmma_* on 32 lanes, gfx942's v_mfma_* on 64); kcc/passes/wmma.py expands any
    other form (another arch's, CUDA's) into per-lane arithmetic."""
    from kcc.isel.amd.matrix import instructions
    return instructions().get(shape.name) == family


def desc_for(family: str) -> TargetDesc:
    """The TargetDesc of one AMD family ("rdna3", "cdna3"): AMD's, with its WMMA forms."""
    return replace(AMD, wmma=partial(_selects, family))
