"""The target description a target-neutral pass asks: legal vector widths and native ops.

A pass never imports a target; the target module builds a `TargetDesc` and the pipeline hands it
to every pass. Each target describes itself beside its code (kcc.targets.x86.arch,
kcc.targets.cuda.desc, kcc.targets.amd.desc); `SCALAR_ALL_NATIVE` below is the tests' target of
one pass.
"""

from __future__ import annotations

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.record import field, record

MappingProxyType = type(type.__dict__)  # types.MappingProxyType (no types module: start-up)
TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable, Mapping
    from kcc.ir.uop import UOp
    from kcc.ir.wmma import WmmaShape


@record(frozen=True)
class SchedModel:
    """A CPU target's facts for passes/interleave.py, the list scheduler of a long loop body.

    latency(u): the cycles until the result of the instruction u becomes is ready (only the
      relative sizes matter: they find the long chains).
    vector_regs: the vector registers the allocator gives values.
    gprs: the general registers a loop body's values and the values from outside it may hold
      (what the stack and frame pointers, loop counters and index sums leave).
    opmasks: the opmask registers a vector of bools takes (0: such a vector is a vector).
    """

    latency: Callable[[UOp], int] = field(compare=False)
    vector_regs: int
    gprs: int
    opmasks: int = 0


@record(frozen=True)
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
    lane_gates(dtype, n): a LOAD of n lanes of dtype whose gate is a bool vector (lane j gates
      element j alone) that the target does as one node (x86-64-v4: an opmask-masked load,
      kcc/isel/x86/kmask.py kload); None (the default): none, passes/devectorize.py splits such
      a load into scalar loads gated by their lanes.
    load_streams: the memory streams (global loads advancing with a loop, each a different
      region of memory) an innermost loop may read before the hardware prefetchers stop
      keeping up; passes/unroll.py jams no more copies than keep it within this (0: no limit).
    full_unroll: innermost REDUCE-style loops with a constant bound up to this are replaced by
      their iterations (passes/unroll_full.py; 0, the default: none): a GPU pays a compare and
      a branch per iteration.
    reduce_unroll: a short reduce loop of vector work inside another loop, with a constant
      bound up to this, is replaced by its iterations (passes/unroll_reduce.py; 0, the
      default: none): a CPU mispredicts a short inner loop's exit once an outer iteration.
    runtime_unroll: a small scalar reduce loop whose bound is a runtime value runs as a loop
      of this many chained copies of its body and a remainder loop (passes/unroll_runtime.py;
      0, the default: none): a CPU pays an add, a compare and a branch per iteration.
    tiny_unroll: an outermost elementwise loop nest with constant bounds whose copies would
      have at most twice this many nodes (those that do not fold to constants) is replaced by
      its iterations (passes/unroll_tiny.py; 0, the default: none): the lane packer then sees
      every element at a constant address.
    sched: a CPU target's scheduling model (SchedModel): linearize interleaves a long loop
      body's independent chains by it (passes/interleave.py); None (the default): linearize
      keeps its depth-first order.
    permute(dtype, n): how many source registers one lane permutation of n lanes of dtype may
      read (an n-lane vector whose every lane is any lane of those: x86-64-v4's VPERMI2PS
      takes 2 at 16 float32 lanes); 0 (the default None): none beyond the in-block shuffles.
    stride2(dtype, n): whether every other lane of two n-lane registers of dtype, in order (a
      stride-2 load's lanes), is a short shuffle where ``permute`` allows no two-register
      permutation (x86-64-v3: VSHUFPS and VPERMPD of 8 float32 lanes); passes/widen_stride.py
      reads a stride-2 load so. None (the default): no.
    reverse(dtype, n): whether n lanes of dtype in reverse order is a short shuffle of one
      register (x86: in-block shuffles and a 128-bit block swap); passes/widen_stride.py reads
      a load whose index falls by one per iteration so. None (the default): no.
    gather(dtype, n): whether n scalar loads of dtype at constant offsets from one address
      are one instruction (x86-64-v4: VGATHERDPS of 16 float32; passes/widen_stride.py reads a
      load at a large stride so); None (the default): no.
    index_gather(dtype, n): whether n scalar loads of dtype, gated or not, at the lanes of one
      int32 index vector are one instruction (x86-64-v4: VGATHERDPS zmm {k} of 16 float32;
      passes/widen_gather.py reads a load at a computed index so); None (the default): no.
    wmma(shape): whether the target selects this tensor-core form (kcc.ir.wmma.WmmaShape) as
      its own instructions; passes/wmma.py expands every other WMMA into per-lane arithmetic.
      None (the default): the selector takes every WMMA (and refuses a form it lacks by name).
    stage_bytes: the most bytes of one REG scratch buffer that passes/stage.py may fill with a
      copy of loop-invariant loads in lane order (0, the default: none; a GPU has no frame).
    vector_ops_at: for a (dtype, n) listed here, only these ops are legal on n lanes of dtype
      (instead of vector_ops[dtype]): x86-64-v4 has int32 x 16 for the arithmetic, bitwise
      ops and shifts only.
    pack_bytes: the largest scratch buffer passes/pack.py may give a strided operand of a
      reduction tile (a per-worker copy, kept in the stack frame on x86); 0 (the default):
      no packing.
    bool_stores: the lane counts n at which a STORE of a bool vector (n bytes of 0 or 1 from
      a lane mask) is one node though bool vectors have no loads (mem_widths lists none):
      x86 makes the bytes from the mask and stores them whole (VMOVQ of 8); () (the default):
      devectorize splits such a store into scalar ones.
    narrow_stores: (dtype, n) pairs at which a STORE of n lanes is one node though no load or
      ALU op has that width (mem_widths lists none): x86 stores int16/uint16 x 4 from an
      xmm's low qword (VMOVQ), where a float → int16 cast packs them; () (the default).
    mul_high: the integer widths (32, 64) whose CDIV/CMOD by a constant passes/divconst.py
      turns into multiplies: 32 by a 64-bit MUL of the extended dividend, 64 by MULHI (the
      high half of the 128-bit product), which the target then selects; () (the default):
      none, the target divides as before.
    lane_loads: whether a vector load of an unstored argument whose lanes are only read one
      by one as scalars is better as a scalar load per lane (passes/lane_loads.py; x86: a
      load micro-op instead of a lane shuffle); False (the default): loads stay as written.
    select_bool_mul: whether passes/decompose.py turns an integer MUL by a bool's 0/1 CAST
      into a WHERE (x86: a masked move or CMOVcc, not a multiply); False (the default): no.
    last_block_bytes: the widest store (bytes) of a widened loop's overlapping last block
      (passes/widen_stride.py last_block): a block whose stores are wider runs as blocks of
      half the lanes over the same last iterations, where the loop's stored buffers exceed
      l1d_bytes and it does little arithmetic (x86-64-v4: 32; measured: a 64-byte store at
      the end of each row of an L2-resident output cost log_softmax_axis0 E_111_77_3 ~20%);
      0 (the default): no limit.
    l1d_bytes: a core's level-1 data cache (bytes; 0, the default: not described).
    slow_vector_mul: the integer dtypes whose vector MUL costs about two scalar ones a lane
      group (x86: VPMULLD is two micro-ops and 10 cycles, IMUL one and 3): a widened loop
      that multiplies them runs one leftover iteration as a scalar tail, not as an
      overlapping last block (passes/widen_tail.py lone_tail); () (the default): none.
    narrow(sink, desc): given a kernel (after the first simplify) and this description, the
      one the passes after it compile that kernel with, or None to keep this one (x86-64-v4:
      no 512-bit vectors for a kernel of little work, kcc/targets/x86/arch.py); None (the
      default): no hook.
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
    lane_gates: Callable[[DType, int], bool] | None = field(default=None, compare=False)
    load_streams: int = 0
    permute: Callable[[DType, int], int] | None = field(default=None, compare=False)
    gather: Callable[[DType, int], bool] | None = field(default=None, compare=False)
    index_gather: Callable[[DType, int], bool] | None = field(default=None, compare=False)
    stride2: Callable[[DType, int], bool] | None = field(default=None, compare=False)
    reverse: Callable[[DType, int], bool] | None = field(default=None, compare=False)
    wmma: Callable[[WmmaShape], bool] | None = field(default=None, compare=False)
    vector_ops_at: Mapping[tuple[DType, int], frozenset[Ops]] = field(default_factory=dict,
                                                                      compare=False)
    full_unroll: int = 0
    reduce_unroll: int = 0
    runtime_unroll: int = 0
    sched: SchedModel | None = field(default=None, compare=False)
    tiny_unroll: int = 0
    pack_bytes: int = 0
    stage_bytes: int = 0
    mul_high: tuple[int, ...] = ()
    bool_stores: tuple[int, ...] = ()
    narrow_stores: tuple[tuple[DType, int], ...] = ()
    lane_loads: bool = False
    select_bool_mul: bool = False
    last_block_bytes: int = 0
    l1d_bytes: int = 0
    slow_vector_mul: tuple[DType, ...] = ()
    narrow: Callable[[UOp, TargetDesc], TargetDesc | None] | None = field(default=None,
                                                                      compare=False)

    def __post_init__(self) -> None:
        if self.gated_load not in ("select", "native"):
            raise ValueError(f"gated_load is 'select' or 'native', not {self.gated_load!r}")

    def alu_legal(self, n: int, dtype: DType, op: Ops | None = None) -> bool:
        """Whether an ALU op (op, when given) on n lanes of dtype is legal as one node."""
        if n == 1:
            return True
        if n not in self.alu_widths.get(dtype, ()):
            return False
        allowed = self.vector_ops_at.get((dtype, n)) or self.vector_ops.get(dtype)
        return allowed is None or op is None or op in allowed

    def cast_legal(self, op: Ops, src: DType, dst: DType, n: int) -> bool:
        """Whether a CAST/BITCAST of n lanes from src to dst is legal as one node."""
        if self.alu_legal(n, src, op) and self.alu_legal(n, dst, op):
            return True
        return self.vector_cast is not None and self.vector_cast(op, src, dst, n)

    def permute_sources(self, dtype: DType, n: int) -> int:
        """How many source registers one permutation of n lanes of dtype may read (0: none)."""
        return self.permute(dtype, n) if self.permute is not None else 0

    def stride_sources(self, dtype: DType, n: int) -> int:
        """How many source registers a strided load's n lanes of dtype may be permuted from:
        ``permute_sources``, or 2 where the target shuffles every other lane (``stride2``)."""
        k = self.permute_sources(dtype, n)
        return k if k or self.stride2 is None or not self.stride2(dtype, n) else 2

    def reverses(self, dtype: DType, n: int) -> bool:
        """Whether n lanes of dtype in reverse order are one short shuffle (`reverse`)."""
        return self.reverse is not None and self.reverse(dtype, n)

    def lane_gate_legal(self, n: int, dtype: DType) -> bool:
        """Whether a LOAD of n contiguous elements of dtype may have a per-lane gate."""
        return n > 1 and self.mem_legal(n, dtype) and self.lane_gates is not None \
            and self.lane_gates(dtype, n)

    def gathers(self, dtype: DType, n: int) -> bool:
        """Whether n scalar loads of dtype at constant offsets are one gather (`gather`)."""
        return self.gather is not None and self.gather(dtype, n)

    def mem_legal(self, n: int, dtype: DType) -> bool:
        """Whether a LOAD/STORE of n contiguous elements of dtype is legal as one node."""
        return n == 1 or n in self.mem_widths.get(dtype, ())

    def store_legal(self, n: int, dtype: DType) -> bool:
        """Whether a STORE of n contiguous elements of dtype is legal as one node (mem_legal,
        or a bool vector at a width of `bool_stores`, or a pair of `narrow_stores`)."""
        return self.mem_legal(n, dtype) or dtype == dtypes.bool and n in self.bool_stores \
            or (dtype, n) in self.narrow_stores


# What every target's `native` shares (kcc.targets.<t>: the descriptions of the real targets)
HALF_DTYPES = (dtypes.float16, dtypes.bfloat16)
# Transcendentals are polynomials on every target (kcc owns their accuracy: docs/transcendentals.md)
POLYNOMIAL_OPS = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN})
ALWAYS_DECOMPOSED = frozenset({Ops.THREEFRY, Ops.RECIPROCAL})


def widths(table: dict[DType, tuple[int, ...]]) -> Mapping[DType, tuple[int, ...]]:
    """A read-only lane-width table (TargetDesc.alu_widths / mem_widths)."""
    return MappingProxyType(dict(table))


# A target that computes everything natively and has no vectors: handy for tests of one pass.
SCALAR_ALL_NATIVE = TargetDesc("scalar", widths({}), widths({}), lambda op, dt: True,
                               "native", False, notes="test target")
