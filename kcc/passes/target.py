"""The target description a target-neutral pass asks: legal vector widths and native ops.

A pass never imports a target; the target module builds a `TargetDesc` and the pipeline hands it
to every pass. The constants below describe the targets kcc knows; a target module may build
its own (e.g. AVX-512 when the CPU has it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops


@dataclass(frozen=True)
class TargetDesc:
    """What a target can do, in the terms a pass needs.

    alu_widths: legal vector lane counts of an ALU op per dtype (1, a scalar, is always legal).
    mem_widths: legal lane counts of a vector LOAD/STORE (a SHRINK place) per dtype.
    native(op, dtype): whether the target computes op on dtype directly; False → decompose.
    gated_load: "select" (a safe-index load and a WHERE) or "native" (a predicated load).
    gpu: whether lidx SPECIALs, LOCAL buffers and BARRIER are allowed.
    vector_ops: for a dtype listed here, only these ops are legal on vectors of it (the rest
      are split to scalars); a dtype not listed allows every op at its alu_widths.
    fp_contract: fuse a float MUL feeding an ADD into one MULACC (opt-in, passes/contract.py).
    vector_cast(op, src, dst, n): a CAST/BITCAST of n lanes the target has although vector_ops
      does not list it for one side (x86: int32 ↔ float32); None: none beyond vector_ops.
    vector_regs: the vector registers the allocator gives values; passes/unroll.py sizes its
      unroll factor by them (0: loops are not unrolled).
    masked_load(dtype, n): with gated_load "select", a gated LOAD of n lanes of dtype that the
      target does natively all the same (a masked load that reads nothing where the gate is
      false: x86-64-v4's opmasks); None: none.
    load_streams: the memory streams (global loads advancing with a loop, each a different
      region of memory) an innermost loop may read before the hardware prefetchers stop
      keeping up; passes/unroll.py jams no more copies than keep it within this (0: no limit).
    permute(dtype, n): how many source registers one lane permutation of n lanes of dtype may
      read (an n-lane vector whose every lane is any lane of those: x86-64-v4's VPERMI2PS
      takes 2 at 16 float32 lanes); 0 (the default None): none beyond the in-block shuffles.
    """

    name: str
    alu_widths: Mapping[DType, tuple[int, ...]]
    mem_widths: Mapping[DType, tuple[int, ...]]
    native: Callable[[Ops, DType], bool]
    gated_load: str
    gpu: bool
    notes: str = field(default="", compare=False)
    vector_ops: Mapping[DType, frozenset[Ops]] = field(default_factory=dict, compare=False)
    fp_contract: bool = False
    vector_cast: Callable[[Ops, DType, DType, int], bool] | None = field(default=None,
                                                                         compare=False)
    vector_regs: int = 0
    masked_load: Callable[[DType, int], bool] | None = field(default=None, compare=False)
    load_streams: int = 0
    permute: Callable[[DType, int], int] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.gated_load not in ("select", "native"):
            raise ValueError(f"gated_load is 'select' or 'native', not {self.gated_load!r}")

    def alu_legal(self, n: int, dtype: DType, op: Ops | None = None) -> bool:
        """Whether an ALU op (op, when given) on n lanes of dtype is legal as one node."""
        if n == 1:
            return True
        if n not in self.alu_widths.get(dtype, ()):
            return False
        allowed = self.vector_ops.get(dtype)
        return allowed is None or op is None or op in allowed

    def cast_legal(self, op: Ops, src: DType, dst: DType, n: int) -> bool:
        """Whether a CAST/BITCAST of n lanes from src to dst is legal as one node."""
        if self.alu_legal(n, src, op) and self.alu_legal(n, dst, op):
            return True
        return self.vector_cast is not None and self.vector_cast(op, src, dst, n)

    def permute_sources(self, dtype: DType, n: int) -> int:
        """How many source registers one permutation of n lanes of dtype may read (0: none)."""
        return self.permute(dtype, n) if self.permute is not None else 0

    def mem_legal(self, n: int, dtype: DType) -> bool:
        """Whether a LOAD/STORE of n contiguous elements of dtype is legal as one node."""
        return n == 1 or n in self.mem_widths.get(dtype, ())


_HALF = (dtypes.float16, dtypes.bfloat16)
# Transcendentals are polynomials on every target (kcc owns their accuracy: docs/transcendentals.md)
_POLY = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN})
_ALWAYS_DECOMPOSED = frozenset({Ops.THREEFRY, Ops.RECIPROCAL})


def _native_x86(op: Ops, dtype: DType) -> bool:
    """x86-64 AVX2/FMA: no transcendental instructions, no half-precision arithmetic.

    MAX on floats is native: MAXPS dst = (src1 > src2) ? src1 : src2 (Intel SDM Vol. 2B, MAXPS),
    so MAXPS with the operands swapped is exactly MAX(a, b) = a < b ? b : a, NaN and -0.0 included.
    """
    if op in (Ops.CAST, Ops.BITCAST):
        return dtype != dtypes.bfloat16     # F16C converts float16; bfloat16 is bit work
    if op in _POLY or op in _ALWAYS_DECOMPOSED or dtype in _HALF:
        return False
    return True


def _native_cuda(op: Ops, dtype: DType) -> bool:
    """PTX: ex2.approx/lg2.approx/sin.approx are not accurate enough, so polynomials; PTX max.f32
    is IEEE maxNum (not MAX's NaN rule); half precision computes in float32."""
    if op in (Ops.CAST, Ops.BITCAST):
        return dtype != dtypes.bfloat16
    if op in _POLY or op in _ALWAYS_DECOMPOSED or dtype in _HALF:
        return False
    if op is Ops.MAX and dtype.is_float:
        return False
    return True


def _native_amd(op: Ops, dtype: DType) -> bool:
    """AMD GPUs (RDNA3 gfx1100, CDNA3 gfx942), per lane: no integer divide instruction; v_rcp,
    v_sqrt, v_exp, v_log, v_sin are approximations (RDNA3 ISA §7.x, VOP1 transcendental ops),
    so FDIV/SQRT, CDIV/CMOD and the transcendentals are decomposed; v_max_f32 is IEEE maxNum,
    not MAX; half precision computes in float32; integer MULACC is MUL then ADD. CAST from
    int64/uint64/float64 (asked with the source dtype) is native only where a v_cvt does it
    with one rounding: to float32/float16 kcc rounds to odd first (decompose.odd_cast)."""
    if op is Ops.CAST:
        return dtype not in (dtypes.bfloat16, dtypes.int64, dtypes.uint64, dtypes.float64)
    if op is Ops.BITCAST:
        return dtype != dtypes.bfloat16
    if op in _POLY or op in _ALWAYS_DECOMPOSED or dtype in _HALF:
        return False
    if op in (Ops.FDIV, Ops.SQRT, Ops.CDIV, Ops.CMOD):
        return False
    if op is Ops.MAX and dtype.is_float:
        return False
    if op is Ops.MULACC and not dtype.is_float:
        return False
    return True


def _widths(table: dict[DType, tuple[int, ...]]) -> Mapping[DType, tuple[int, ...]]:
    return MappingProxyType(dict(table))


_AVX2 = {dtypes.float32: (8, 4), dtypes.float64: (4, 2), dtypes.int32: (8, 4),
         dtypes.uint32: (8, 4), dtypes.int64: (4, 2), dtypes.uint64: (4, 2),
         dtypes.int16: (16, 8), dtypes.uint16: (16, 8), dtypes.int8: (32, 16),
         dtypes.uint8: (32, 16)}
_AVX512 = {dt: tuple(sorted({2 * w[0], *w}, reverse=True)) for dt, w in _AVX2.items()}

X86_AVX2 = TargetDesc("x86", _widths(_AVX2), _widths(_AVX2), _native_x86, "select", False,
                      notes="AVX2 + FMA, 256-bit vectors")
X86_AVX512 = TargetDesc("x86", _widths(_AVX512), _widths(_AVX512), _native_x86, "select", False,
                        notes="AVX-512F/BW/DQ/VL, 512-bit vectors")
CUDA = TargetDesc("cuda", _widths({}),
                  _widths({dtypes.float32: (4, 2), dtypes.int32: (4, 2), dtypes.uint32: (4, 2),
                           dtypes.float64: (2,), dtypes.int64: (2,), dtypes.uint64: (2,)}),
                  _native_cuda, "native", True, notes="PTX: scalar ALU, ld/st.global.v2/v4")
# A target that computes everything natively and has no vectors: handy for tests of one pass.
SCALAR_ALL_NATIVE = TargetDesc("scalar", _widths({}), _widths({}), lambda op, dt: True,
                               "native", False, notes="test target")
_AMD_MEM = {dtypes.float32: (4, 2), dtypes.int32: (4, 2), dtypes.uint32: (4, 2),
            dtypes.float64: (2,), dtypes.int64: (2,), dtypes.uint64: (2,)}
AMD = TargetDesc("amd", _widths({}), _widths(_AMD_MEM), _native_amd, "native", True,
                 notes="AMD GPU: per-lane scalar ALU, global_load/store_b64/b128")
