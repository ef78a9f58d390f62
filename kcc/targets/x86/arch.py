"""The x86-64 arches kcc compiles for: their names, the CPU features each needs (and `native`
resolved from this machine's), and the pass-facing TargetDesc of each (vector widths and ops,
casts, masked loads, vector registers)."""

from __future__ import annotations

from kcc.ir import Ops, dtypes
from kcc.ir.dtype import DType
from kcc.isel.x86.base import SelectError
from kcc.isel.x86.ivec import NARROW_INTS, V4_OPS64, VECTOR_OPS, ZMM_INT_OPS, vector_widths
from kcc.isel.x86.regs import XMM, XMM_HI, reg_class
from kcc.passes.target import (ALWAYS_DECOMPOSED, HALF_DTYPES, POLYNOMIAL_OPS, TargetDesc,
                               widths)
from kcc.record import replace
from kcc.targets.x86.sched import x86_sched

MappingProxyType = type(type.__dict__)  # types.MappingProxyType (no types module: start-up)
TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Mapping

    from kcc.ir.uop import UOp
    from kcc.ir.wmma import WmmaShape


def _native_x86(op: Ops, dtype: DType) -> bool:
    """x86-64 AVX2/FMA: no transcendental instructions, no half-precision arithmetic.

    MAX on floats is native: MAXPS dst = (src1 > src2) ? src1 : src2 (Intel SDM Vol. 2B, MAXPS),
    so MAXPS with the operands swapped is exactly MAX(a, b) = a < b ? b : a, NaN and -0.0 included.
    """
    if op in (Ops.CAST, Ops.BITCAST):
        return dtype != dtypes.bfloat16     # F16C converts float16; bfloat16 is bit work
    if op in POLYNOMIAL_OPS or op in ALWAYS_DECOMPOSED or dtype in HALF_DTYPES:
        return False
    return True


_AVX2 = {dtypes.float32: (8, 4), dtypes.float64: (4, 2), dtypes.int32: (8, 4),
         dtypes.uint32: (8, 4), dtypes.int64: (4, 2), dtypes.uint64: (4, 2),
         dtypes.int16: (16, 8), dtypes.uint16: (16, 8), dtypes.int8: (32, 16),
         dtypes.uint8: (32, 16)}
_AVX512 = {dt: tuple(sorted({2 * w[0], *w}, reverse=True)) for dt, w in _AVX2.items()}

X86_AVX2 = TargetDesc("x86", widths(_AVX2), widths(_AVX2), _native_x86, "select", False,
                      notes="AVX2 + FMA, 256-bit vectors")
X86_AVX512 = TargetDesc("x86", widths(_AVX512), widths(_AVX512), _native_x86, "select", False,
                        notes="AVX-512F/BW/DQ/VL, 512-bit vectors")


# The memory streams an inner loop may read (TargetDesc.load_streams)
X86_LOAD_STREAMS = 8
# The largest packed slab of a strided matmul operand (TargetDesc.pack_bytes): a frame buffer
# per worker; 128 KiB holds a 32-column slab of 1024 rows (passes/pack.py's column widening),
# which stays in L2 (2 MiB a core on the hosts measured, docs/performance.md) and is read
# there contiguously; 256 KiB holds two of them (pack.py's column pairs)
X86_PACK_BYTES = 256 * 1024
# The most frame bytes kcc/passes/stage.py may fill with one copy of loop-invariant loads
X86_STAGE_BYTES = 16384
# The most nodes the copies of a fully unrolled tiny loop nest may have
# (TargetDesc.tiny_unroll, kcc/passes/unroll_tiny.py)
X86_TINY_UNROLL = 96


# x86_desc's answers: a TargetDesc is frozen and its tables read-only mappings, a function of
# the arch alone, so a process builds each once (~20 µs a compile: tinygrad's BEAM compiles
# hundreds of kernels in one process); X86Target replaces fp_contract on its own copy
_DESCS: dict[str, TargetDesc] = {}


def x86_desc(arch: str) -> TargetDesc:
    """The pass-facing description: the vector widths this selector implements (float32 and
    float64 in xmm/ymm, and zmm on x86-64-v4; integers scalar) and what is decomposed."""
    desc = _DESCS.get(arch)
    if desc is None:
        desc = _DESCS[arch] = _x86_desc(arch)
    return desc


def _x86_desc(arch: str) -> TargetDesc:
    """x86_desc, built."""
    if arch == "x86-64-v4":
        widths = {dtypes.float32: (16, 8, 4), dtypes.float64: (8, 4, 2)}
        note = "AVX-512F zmm + AVX2/FMA/F16C"
    else:
        widths = {dtypes.float32: (8, 4), dtypes.float64: (4, 2)}
        note = "AVX2 + FMA + F16C"
    # integer vectors (xmm/ymm) for the ops kcc.isel.x86.ivec selects; others split
    ints = {dt: vector_widths(dt) for dt in VECTOR_OPS}
    wide_ints: dict = {}
    if arch == "x86-64-v4":
        # int32 x 16 and int64 x 8 in a zmm for the lane work with EVEX.512 rows
        # (kcc.isel.x86.ivec); as values only: no zmm integer loads or stores (mem_widths),
        # which would let slp and widen make zmm integer accumulators and memory streams this
        # selector lacks
        for dt in ZMM_INT_OPS:
            ints[dt] = (64 // dt.itemsize, *ints[dt])
            wide_ints[dt, 64 // dt.itemsize] = ZMM_INT_OPS[dt]
        for dt, ops in V4_OPS64.items():       # VPMULLQ on xmm/ymm
            for n in vector_widths(dt):
                wide_ints[dt, n] = ops
    # ... but int32 x 16 is stored whole (VMOVDQU32 m512; TargetDesc.narrow_stores): the loop
    # it widens loads no int32 zmm, so its lanes come from 16 byte or word lanes widened
    # (int8_sum r_37_9: one VPMOVSXBD zmm, a shuffle-port micro-op, a 16 lanes, not two)
    wide_stores = ((dtypes.int32, 16), (dtypes.uint32, 16)) if arch == "x86-64-v4" else ()
    # float16 lanes packed in an xmm (kcc/isel/x86/half.py): 4 or 8, for the ops that lift to
    # float32 (passes/decompose.py lift_half) and the F16C casts (_vector_cast)
    halves = {dtypes.float16: (8, 4)}
    # bool vectors are lane masks (kcc.isel.x86.vec.bool_vec): AND/OR/XOR of them, no loads
    # (stores: bool_stores below)
    bools = {dtypes.bool: (16, 8, 4, 2) if arch == "x86-64-v4" else (8, 4, 2)}
    return replace(X86_AVX2, alu_widths=MappingProxyType({**widths, **ints, **bools,
                                                          **halves}),
                   mem_widths=MappingProxyType({**widths, **halves,
                                                **{dt: vector_widths(dt) for dt in VECTOR_OPS}}),
                   vector_ops_at=MappingProxyType(wide_ints),
                   vector_ops=MappingProxyType({**VECTOR_OPS, dtypes.bool: _BOOL_VECTOR_OPS,
                                                dtypes.float16: _HALF_VECTOR_OPS}),
                   vector_cast=_vector_cast_v4 if arch == "x86-64-v4" else _vector_cast,
                   notes=f"{arch}: {note}",
                   # the registers the allocator gives vectors (xmm16-31 on v4 only)
                   vector_regs=len(XMM) + (len(XMM_HI) if arch == "x86-64-v4" else 0),
                   sched=x86_sched(len(XMM) + (len(XMM_HI) if arch == "x86-64-v4" else 0),
                                   arch == "x86-64-v4"),
                   # measured (docs/performance.md, unroll-and-jam): row reductions jammed to
                   # 16 streams ran slower than with 8 although they ran fewer instructions
                   load_streams=X86_LOAD_STREAMS,
                   pack_bytes=X86_PACK_BYTES,
                   masked_load=_masked_load if arch == "x86-64-v4" else None,
                   lane_gates=_lane_gates if arch == "x86-64-v4" else _lane_gates_v3,
                   permute=_permute if arch == "x86-64-v4" else None,
                   stride2=_stride2 if arch != "x86-64-v4" else _stride2_x,
                   reverse=_reverse,
                   gather=_gather if arch == "x86-64-v4" else None,
                   index_gather=_gather if arch == "x86-64-v4" else None,
                   # no tensor cores: kcc/passes/wmma.py expands every WMMA per lane
                   wmma=_no_tensor_cores,
                   # a staged copy stays in L1d (32-48 KiB) beside what the loop streams
                   stage_bytes=X86_STAGE_BYTES,
                   # IMUL r64 (3 cycles) and MUL/IMUL r/m64 for MULHI, against DIV/IDIV r64
                   # (tens of cycles): division by a constant multiplies (passes/divconst.py)
                   mul_high=(32, 64),
                   # a bool vector stored as its 0/1 bytes (kcc/isel/x86/select.py sel_STORE):
                   # an xmm's low 4 or 8 bytes or the whole xmm (16 lanes: v4's bool vectors)
                   bool_stores=(16, 8, 4) if arch == "x86-64-v4" else (8, 4),
                   # int16/uint16 x 4 stored from an xmm's low qword (VMOVQ m64): a float
                   # x 4 → int16 cast packs its lanes there (x86_ivec.vcast_narrow), one store
                   # where four VPEXTRWs and 2-byte stores were (cast_half2i); stores only: a
                   # 4-lane int16 load would have no ALU op to feed
                   # int8/uint8 x 4 likewise from its low dword (VMOVD m32: cast_f2i8's 4
                   # VPEXTRB + byte stores a float4)
                   narrow_stores=((dtypes.int16, 4), (dtypes.uint16, 4), (dtypes.int8, 4),
                                  (dtypes.uint8, 4), *wide_stores),
                   # VPMULLD: 2 uops, 10 cycles; a 0/1 multiply is a masked move or blend
                   select_bool_mul=True,
                   # tiny constant nests as straight-line code (sort/topk E_2_2_2: one lane
                   # permutation instead of ~20 instructions of loop control)
                   tiny_unroll=X86_TINY_UNROLL,
                   # symbolic-bound reduce loops of a few ops by 4 (sym_sum r_n: 0.96x clang
                   # as a loop; kcc/passes/unroll_runtime.py)
                   runtime_unroll=4,
                   # short widened reduce loops inside a row loop as straight-line copies
                   # (bool_sum r_333_77: 9 blocks a row group; kcc/passes/unroll_reduce.py)
                   reduce_unroll=16,
                   # a lane read alone is a load-port micro-op, not a port-5 shuffle
                   # (kcc/passes/lane_loads.py)
                   lane_loads=True,
                   # VPMULLD: 2 uops, 10 cycles; a leftover iteration of a widened loop that
                   # multiplies int32 runs as scalar IMULs (matmul_int's r_7_5_8, 5 = 4 + 1)
                   slow_vector_mul=(dtypes.int32, dtypes.uint32),
                   # an overlapping last block stores ymm halves, not a zmm (widen_stride.py
                   # last_block; docs/performance.md "Overlapping last blocks in halves")
                   last_block_bytes=32,
                   # the smallest L1d of the hosts measured (32 KiB; this one's 48 KiB)
                   l1d_bytes=32 * 1024,
                   # a kernel of little work without zmm (_narrow_v4)
                   narrow=_narrow_v4 if arch == "x86-64-v4" else None)


# The most element operations (kcc/passes/work.py vector_work) of a kernel x86-64-v4 compiles
# without 512-bit vectors (ymm at most, as clang's prefer-vector-width=256 for these CPUs): a
# core whose zmm units sat idle ~0.1 ms runs its first 512-bit instructions slowly for about
# a microsecond (relu_spec E_5_4, 20 floats: 1.3 ns a call warm, 2.6 ns a call over 1000
# calls after an idle 0.1 ms; its ymm build 1.25 either way), which a kernel of little work
# cannot win back. Measured (bench/sweep_vs_clang.py --tight, the bound set to 0, 128 and
# 30000): relu_spec (work 65) 0.82-1.10x clang with zmm, bimodal, -> 1.14-1.16x steady with
# ymm; cast_f2bool and isnan_isinf E_5_4 (80) even; isnan_isinf's second E_5_4 (120) 1.28x
# -> 1.12-1.22x, and most kernels of 500-30000 lost with ymm (index_rows E_9_77 1.17x ->
# 0.53x, f64_sin 0.97x -> 0.72x): so the bound stays below 120
X86_ZMM_MIN_WORK = 96


def _ymm_only(desc: TargetDesc) -> TargetDesc:
    """desc without any vector of more than 32 bytes (bool lane masks as they are)."""
    def cap(m: Mapping[DType, tuple[int, ...]]) -> Mapping[DType, tuple[int, ...]]:
        return MappingProxyType({dt: tuple(n for n in ws if dt == dtypes.bool or
                                           n * dt.itemsize <= 32)
                                 for dt, ws in m.items()})
    return replace(desc, alu_widths=cap(desc.alu_widths), mem_widths=cap(desc.mem_widths),
                   vector_ops_at=MappingProxyType({k: v for k, v in desc.vector_ops_at.items()
                                                   if k[1] * k[0].itemsize <= 32}),
                   narrow_stores=tuple((dt, n) for dt, n in desc.narrow_stores
                                       if n * dt.itemsize <= 32),
                   narrow=None, notes=desc.notes + " (ymm at most: little work)")


# x86-64-v4's ymm-only descriptions, by the id of the description they narrow (kept beside
# it, so the id names that one while the entry lives): X86Target's descs differ in
# fp_contract, which the narrowed one keeps
_YMM: dict[int, tuple[TargetDesc, TargetDesc]] = {}


# A kernel whose element operations are at most this many times its float SQRTs and FDIVs
# (kcc/passes/work.py work_split) is bound by the divider, which zmm does not widen: VSQRTPS
# and VDIVPS zmm take twice a ymm one's cycles on these cores (Intel's optimization manual,
# Table "Ice Lake / Sapphire Rapids" latencies and throughputs), so at ymm its 8 lanes per
# ~6 cycles already keep pace with ~18 other operations an element on three vector ports.
# var_std's r_64_4 (64 elements, 18 operations and a VSQRTPS each: ratio 19): 4 zmm blocks
# ran 12.4-12.9 ns a call, bimodal (0.93-1.00x clang's ymm loop in the sweep), 8 ymm ones a
# steady 12.4 (a C harness calling the entry, this SPR host); the sweep's layernorm
# E_128_128_4 (work 295168) 1.17x -> 1.20x clang, batchnorm2d 1.17x -> 1.20x. Only up to
# X86_DIVIDER_MAX_WORK: tinygrad's 2048 x 1024 layernorm division (work 9.4M, 0.6 ms, from
# memory) ran 1-2% slower with ymm, its zmm warm-up long paid back
X86_DIVIDER_BOUND = 20
X86_DIVIDER_MAX_WORK = 1 << 22


def _narrow_v4(sink: UOp, desc: TargetDesc) -> TargetDesc | None:
    """x86-64-v4's description for one kernel: desc with ymm at most for a kernel of at most
    X86_ZMM_MIN_WORK element operations or one the divider bounds (X86_DIVIDER_BOUND, up to
    X86_DIVIDER_MAX_WORK), else None (desc, with zmm)."""
    from kcc.passes.work import work_split
    work, divides = work_split(sink)
    if work > X86_ZMM_MIN_WORK and (work > X86_DIVIDER_BOUND * divides
                                    or work > X86_DIVIDER_MAX_WORK):
        return None
    got = _YMM.get(id(desc))
    if got is None:
        got = _YMM[id(desc)] = (desc, _ymm_only(desc))
    return got[1]


def _no_tensor_cores(shape: WmmaShape) -> bool:
    """x86 selects no WMMA form."""
    return False


def _permute(dt: DType, n: int) -> int:
    """x86-64-v4: 16 float32 lanes from two registers are one VPERMI2PS (kcc/isel/x86/shuf.py
    permute)."""
    return 2 if dt == dtypes.float32 and n == 16 else 0


_LANES32 = (dtypes.float32, dtypes.int32, dtypes.uint32)


def _stride2(dt: DType, n: int) -> bool:
    """x86-64-v3: every other lane of two 8-lane float32 registers is VSHUFPS and VPERMPD
    (kcc/isel/x86/shuf.py permute_y); of two 4-lane ones one VSHUFPS (``_stride2_x``)."""
    return dt == dtypes.float32 and n == 8 or _stride2_x(dt, n)


def _stride2_x(dt: DType, n: int) -> bool:
    """Every other lane of two 4-lane float32 registers (xmm) is one VSHUFPS, lanes f, f+2
    of the first and g, g+2 of the second (kcc/isel/x86/shuf.py block_of_lanes; SDM Vol. 2
    "SHUFPS"): a pooling window's row read 4 windows at a time (passes/widen_split.py). On
    x86-64-v4 the only stride-2 width besides ``_permute``'s 16 lanes. SHUFPS moves bits:
    32-bit integer lanes too (maxpool of int32)."""
    return dt in _LANES32 and n == 4


def _reverse(dt: DType, n: int) -> bool:
    """x86: n 32- or 64-bit lanes (float, or integer moved by the float forms) of an xmm or
    ymm, or 16 float32 of a zmm, in reverse order are an in-block SHUFPS/SHUFPD of the
    128-bit blocks swapped (VPERM2F128 / VSHUFF32X4; kcc/isel/x86/shuf.py shuffle)."""
    if dt.itemsize not in (4, 8) or not (dt.is_float or dt.is_int) or dt.is_weak:
        return False
    return dt.itemsize * n in (16, 32) or dt == dtypes.float32 and n == 16


def _gather(dt: DType, n: int) -> bool:
    """x86-64-v4: 16 (or 8) float32 loads at constant offsets (kcc/isel/x86/gather.py) or at
    the lanes of an int32 index vector (kcc/isel/x86/vgather.py) are one VGATHERDPS of a zmm
    (a ymm) {k}."""
    return dt == dtypes.float32 and n in (8, 16)


def _masked_load(dt: DType, n: int) -> bool:
    """x86-64-v4: a gated load of a float scalar or vector or an integer vector is one
    opmask-masked load (kcc/isel/x86/kmask.py kload), which reads nothing where the gate is
    false (SDM Vol. 1 §15.6.1): no safe index needed."""
    return reg_class(dt) == "vec" or (n > 1 and dt in VECTOR_OPS)


def _lane_gates(dt: DType, n: int) -> bool:
    """x86-64-v4: a vector load gated lane by lane is the same masked load, its opmask the
    gate's (a vector compare's k register, kcc/isel/x86/kmask.py kbool), at up to 32 lanes."""
    return 1 < n <= 32 and _masked_load(dt, n)


def _lane_gates_v3(dt: DType, n: int) -> bool:
    """x86-64-v3: VMASKMOVPS/PD, VPMASKMOVD/Q (kcc/isel/x86/vec.py mask_load) load 32- and
    64-bit lanes of an xmm or ymm under a lane mask, reading nothing where it is off."""
    return dt.itemsize in (4, 8) and dt.itemsize * n in (16, 32) \
        and (dt in (dtypes.float32, dtypes.float64) or dt.is_int)


_BOOL_VECTOR_OPS = frozenset({Ops.AND, Ops.OR, Ops.XOR})

# float16 lanes: the arithmetic that passes/decompose.py lift_half turns into float32 lanes
# between two F16C casts (each op rounds to float16 once, as a scalar one does)
_HALF_VECTOR_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MULACC, Ops.FDIV})


def _vector_cast(op: Ops, src: DType, dst: DType, n: int) -> bool:
    """int32 ↔ float32 in an xmm/ymm: CVTDQ2PS, CVTTPS2DQ (+ saturation); uint32 → float32
    by 16-bit halves (x86_vec.vcast_u32); float32/float16 x 4/8 → int8/uint8/int16/uint16,
    clamped, converted and packed into an xmm's low lanes (x86_ivec.vcast_narrow); bool lanes to
    integer or float lanes; integer lanes narrowed from a ymm to an xmm or widened back (half
    or twice the lane size); or a BITCAST that
    moves nothing (x86_vec.vcast); and what moves nothing at all in an xmm/ymm: a BITCAST
    between an integer vector and one of the same lane size (integer or float), a CAST
    between integers of one size (the bits are the value modulo 2^bits either way)."""
    if n in (4, 8) and {src, dst} == {dtypes.int32, dtypes.float32}:
        return True
    if op is Ops.CAST and n in (4, 8) and (src, dst) == (dtypes.uint32, dtypes.float32):
        return True                 # VCVTUDQ2PS on v4, else 16-bit halves + FMA (vcast_u32)
    if op is Ops.CAST and n in (4, 8) and ({src, dst} == {dtypes.float16, dtypes.float32}
                                         or (src, dst) == (dtypes.int32, dtypes.float16)):
        return True                 # VCVTPS2PH / VCVTPH2PS (F16C; x86_half.half_vcast)
    if op is Ops.CAST and n in (4, 8) and src in (dtypes.float32, dtypes.float16) \
            and dst in NARROW_INTS:
        return True                 # clamped, CVTTPS2DQ, packed to bytes/words (vcast_narrow)
    if src == dtypes.bool and op is Ops.CAST and n * dst.itemsize in (16, 32) \
            and (dst in VECTOR_OPS or dst in _FLOAT_VEC):
        return True                 # a lane mask shifted or ANDed (x86_ivec.vcast_bool)
    if op is Ops.CAST and src in VECTOR_OPS and dst in VECTOR_OPS \
            and {src.itemsize, dst.itemsize} in ({1, 2}, {2, 4}, {4, 8}) \
            and n * max(src.itemsize, dst.itemsize) == 32:
        return True                 # a ymm ↔ an xmm of half-size lanes (x86_ivec.vcast_int)
    if op is Ops.CAST and n == 8 and src in VECTOR_OPS and dst in VECTOR_OPS \
            and {src.itemsize, dst.itemsize} in ({1, 2}, {1, 4}):
        return True                 # byte lanes x 8 ↔ an xmm of int16 or a ymm of int32
    if src.itemsize != dst.itemsize or n * src.itemsize not in (16, 32):
        return False
    return _moves_nothing(op, src, dst)


def _vector_cast_v4(op: Ops, src: DType, dst: DType, n: int) -> bool:
    """x86-64-v4: _vector_cast, and the same on int32 x 16 in a zmm (ZMM_INT_OPS); bool
    lanes → 16 int32 or float32 lanes through an opmask (x86_ivec.vcast_bool); int64/uint64
    lanes → float64 (VCVTQQ2PD/VCVTUQQ2PD) and float64 → uint64 (VCVTTPD2UQQ); 16 byte or
    word lanes widened to int32 x 16 (VPMOVSX/ZXBD/WD zmm, x86_ivec.vcast_int)."""
    if op is Ops.CAST and n == 16 and src in _NARROW_SRC and dst in (dtypes.int32,
                                                                    dtypes.uint32):
        return True
    if src == dtypes.bool and op is Ops.CAST and n == 16 and dst in (dtypes.int32,
                                                                       dtypes.uint32,
                                                                       dtypes.float32):
        return True
    if src == dtypes.bool and op is Ops.CAST and n == 8 and dst in (dtypes.int64,
                                                                      dtypes.uint64):
        return True     # VMOVDQU64 zmm {k}{z}: f64_sin's carries from a zmm VPCMPUQ
    if op is Ops.CAST and n in (2, 4, 8) and (
            src in (dtypes.int64, dtypes.uint64) and dst == dtypes.float64
            or src == dtypes.float64 and dst == dtypes.uint64):
        return True                 # VCVTQQ2PD, VCVTUQQ2PD, VCVTTPD2UQQ (x86_vec.vcast)
    if n * src.itemsize == 64 and src.itemsize == dst.itemsize and \
            all(d in ZMM_INT_OPS or d in _FLOAT_VEC for d in (src, dst)):
        return _moves_nothing(op, src, dst)
    return _vector_cast(op, src, dst, n)


def _moves_nothing(op: Ops, src: DType, dst: DType) -> bool:
    """A BITCAST between an integer vector and a vector of the same lane size, or a CAST
    between integer vectors of one lane size."""
    ints = sum(d in VECTOR_OPS for d in (src, dst))
    if op is Ops.CAST:
        return ints == 2
    return ints == 2 or ints == 1 and (src in _FLOAT_VEC or dst in _FLOAT_VEC)


_FLOAT_VEC = frozenset({dtypes.float32, dtypes.float64})
# the byte and word lanes that one VPMOVSX/ZX widens to the 16 dwords of a zmm
_NARROW_SRC = frozenset({dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16})


ARCHES = ("x86-64-v3", "x86-64-v4", "native")
V3_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe")
V4_FLAGS = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")


def cpu_flags() -> set[str]:
    """The CPU feature flags of this machine (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:     # Path.read_text's reading
            text = f.read()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def resolve_arch(arch: str) -> str:
    """native → x86-64-v4 when this CPU has AVX-512 (F/BW/CD/DQ/VL), else x86-64-v3."""
    if arch != "native":
        return arch
    flags = cpu_flags()
    if all(f in flags for f in V4_FLAGS):
        return "x86-64-v4"
    if all(f in flags for f in V3_FLAGS):
        return "x86-64-v3"
    raise SelectError("this CPU lacks x86-64-v3 (AVX2, FMA, F16C, BMI2), the least kcc targets")
