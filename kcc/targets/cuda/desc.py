"""What a pass may ask of the CUDA target (kcc.passes.target.TargetDesc): PTX computes scalars,
loads and stores up to 4 lanes."""

from __future__ import annotations

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.passes.target import (ALWAYS_DECOMPOSED, HALF_DTYPES, POLYNOMIAL_OPS, TargetDesc,
                               widths)


def _native_cuda(op: Ops, dtype: DType) -> bool:
    """PTX: float32 EXP2 is `ex2.approx.ftz.f32` with
    subnormal results scaled around it (NVIDIA documents exp2f, which is that instruction,
    at 2 ulp over the full range: docs/transcendentals.md, CUDA); lg2.approx and sin.approx
    are documented with an *absolute* error bound (PTX ISA, lg2 and sin), which is no ulp bound
    near log2's zero at 1 or for small sin, so LOG2, SIN and float64 EXP2 stay polynomials;
    PTX max.f32 is IEEE maxNum (not MAX's NaN rule); half precision computes in float32."""
    if op in (Ops.CAST, Ops.BITCAST):
        return dtype != dtypes.bfloat16
    if op is Ops.EXP2 and dtype == dtypes.float32:
        return True
    if op in POLYNOMIAL_OPS or op in ALWAYS_DECOMPOSED or dtype in HALF_DTYPES:
        return False
    if op is Ops.MAX and dtype.is_float:
        return False
    if op is Ops.MULHI:     # mul.hi.{s,u}{32,64} (PTX ISA 9.7.1.3); narrower lanes sit in
        return dtype.itemsize >= 4  # 32-bit registers, where mul.hi would read the wrong half
    return True


# float16/bfloat16 pairs and quads are one ld/st.v2/v4.b16 (32/64 bits) when aligned: tinygrad's
# tensor-core matmul reads each A-fragment register as a half2, which scalar b16 loads made two
# LDG.U16 + PRMT (1.5x the loads an iteration; 0.62x tinygrad's own PTX on an H200)
CUDA = TargetDesc("cuda", widths({}),
                  widths({dtypes.float32: (4, 2), dtypes.int32: (4, 2), dtypes.uint32: (4, 2),
                           dtypes.float64: (2,), dtypes.int64: (2,), dtypes.uint64: (2,),
                           dtypes.float16: (4, 2), dtypes.bfloat16: (4, 2)}),
                  _native_cuda, "native", True, notes="PTX: scalar ALU, ld/st.global.v2/v4")
