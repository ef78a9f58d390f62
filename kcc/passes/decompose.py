"""Decompose ops a target does not compute natively (`target.native(op, dtype)` is False).

- EXP2, LOG2, SIN on float32/float64 → polynomials of basic ops (kcc/passes/transcendental.py;
  accuracy in docs/transcendentals.md).
- float16/bfloat16 NEG, WHERE and MAX → operations on the 16-bit pattern (they move a value,
  so a NaN keeps its payload); every other float16/bfloat16 ALU op → CAST the operands to
  float32, the op in float32, CAST back: one
  rounding per op, the IR's semantics (MULACC: one float32 fused multiply-add, then round).
- bfloat16 CASTs, when the target lacks them → bit operations on the float32 pattern (bfloat16
  is the top half of a float32; narrowing rounds to nearest even and keeps NaN a NaN).
- float32 FDIV and SQRT the target lacks (it has float64 fma) → a float64 approximation made
  exact by an exact midpoint test (kcc/passes/division.py); float64 FDIV and SQRT → Newton
  approximations made exact by the signs of fused multiply-add residuals, with exponent
  scaling so that subnormal quotients round once (kcc/passes/division64.py).
- int64 → float32/float16 and float64 → float16 on a target without these conversions →
  round to odd in float64/float32 first, then one rounding.
- RECIPROCAL → FDIV(1, x). MAX on floats → WHERE(CMPLT(a, b), b, a), the IR's definition.
- CMOD → a - CDIV(a, b) * b; CDIV of ≤ 32-bit integers → trunc(float64(a) / float64(b)), exact
  (|a/b| is at least 1/|b| from an integer unless exact, more than the float64 rounding error);
  without a float64 FDIV, a truncated approximation corrected by one exact remainder test;
  by a constant ±2^k (any width) a biased shift; int64/uint64 otherwise → exact unrolled
  shift-subtract long division on uint64 magnitudes (kcc/passes/division.py, cdiv64).
- integer MULACC → MUL then ADD (wrapping, so exact).
- an integer MUL by a bool's 0/1 CAST → WHERE(bool, y, 0) (exact: 1·y = y, 0·y = 0) on a
  target that selects faster than it multiplies (`TargetDesc.select_bool_mul`: x86, where
  VPMULLD is two uops of ten cycles' latency and the select one masked move; argmax's
  `(x == max) * (n - i)` every element); likewise a SHL of such a CAST by a constant k →
  WHERE(bool, 1 << k, 0); a vector MULACC with such a CAST factor → ADD(WHERE(bool, y, 0),
  acc) (bool_mulacc).
- MULHI → the exact product in int64/uint64 shifted down (≤ 32-bit dtypes), or the high half
  assembled from four 32 x 32 → 64-bit products (64-bit dtypes; signed from unsigned by the
  operands' signs).
- THREEFRY → the Threefry-2x32 rounds on uint32 (UOP_FORMAT.md, THREEFRY).
Independent scalar EXP2/LOG2/SIN of one loop are packed into one vector op first
(kcc/passes/pack_lanes.py), so a polynomial is built once, not once a lane.
The rewrite runs to a fixed point (a float16 EXP2 becomes a float32 EXP2, then a polynomial),
and then devectorize runs again so that what a decomposition built has legal vector widths.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import ALU, COMPARE, Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite, rewrites_nothing
from kcc.ir.uop import UOp
from kcc.passes.devectorize import devectorize
from kcc.passes.pack_lanes import pack_lanes
from kcc.passes.simplify import keep_params
from kcc.passes.target import TargetDesc

_HALF = (dtypes.float16, dtypes.bfloat16)


class DecomposeError(Exception):
    """An op the target lacks and kcc has no decomposition for."""


def _scalar_or_stack(c: UOp, shape: tuple[int, ...]) -> UOp:
    return c if shape == () else UOp(Ops.STACK, (c,) * shape[0])


def _const(v: int | float, dt: DType, shape: tuple[int, ...]) -> UOp:
    return _scalar_or_stack(UOp(Ops.CAST, (UOp.const(v),), dt), shape)


def _operand_dtype(x: UOp) -> DType:
    return x.src[0].dtype if x.op in COMPARE else x.dtype


def half_bits(ctx: TargetDesc, x: UOp) -> UOp | None:
    """NEG, WHERE and MAX on float16/bfloat16 the target lacks move a value unchanged
    (docs/semantics.md: NEG flips the sign bit, WHERE and MAX's chosen operand keep the
    bits), so they work on the 16-bit pattern: a float32 round trip would quiet a signalling
    NaN. NEG is an XOR of the sign bit, WHERE a uint16 select, MAX a compare and a WHERE."""
    dt = x.dtype
    if dt not in _HALF or ctx.native(x.op, dt):
        return None
    u16 = dtypes.uint16

    def bits(v: UOp) -> UOp:
        return UOp(Ops.BITCAST, (v,), u16)
    if x.op is Ops.NEG:
        flip = UOp(Ops.XOR, (bits(x.src[0]), _const(0x8000, u16, x.shape)))
        return UOp(Ops.BITCAST, (flip,), dt)
    if x.op is Ops.WHERE:
        c, a, b = x.src
        return UOp(Ops.BITCAST, (UOp(Ops.WHERE, (c, bits(a), bits(b))),), dt)
    a, b = x.src                                            # MAX(a, b) = a < b ? b : a
    return UOp(Ops.WHERE, (UOp(Ops.CMPLT, (a, b)), b, a))


def lift_half(ctx: TargetDesc, x: UOp) -> UOp | None:
    """A float16/bfloat16 ALU op the target lacks → the op in float32, rounded back once."""
    dt = _operand_dtype(x)
    if dt not in _HALF or ctx.native(x.op, dt):
        return None
    f32 = dtypes.float32
    src = tuple(s if s.dtype == dtypes.bool else UOp(Ops.CAST, (s,), f32) for s in x.src)
    y = x.replace(src=src)
    return y if x.op in COMPARE else UOp(Ops.CAST, (y,), dt)


def poly(ctx: TargetDesc, x: UOp) -> UOp | None:
    """EXP2/LOG2/SIN on float32/float64 the target lacks → a polynomial of basic ops."""
    if x.dtype not in (dtypes.float32, dtypes.float64) or ctx.native(x.op, x.dtype):
        return None
    # imported here: its constant tables (decimal, fractions) are start-up time a kernel
    # without EXP2/LOG2/SIN does not need (tests/cli/test_startup.py)
    from kcc.passes import transcendental
    fn = {Ops.EXP2: transcendental.exp2, Ops.LOG2: transcendental.log2,
          Ops.SIN: transcendental.sin}[x.op]
    return fn(x.src[0])


def reciprocal(ctx: TargetDesc, x: UOp) -> UOp | None:
    """RECIPROCAL(x) → FDIV(1, x) (both correctly rounded, so equal)."""
    if ctx.native(Ops.RECIPROCAL, x.dtype) or x.dtype in _HALF:
        return None
    return UOp(Ops.FDIV, (_const(1.0, x.dtype, x.shape), x.src[0]))


def float_max(ctx: TargetDesc, x: UOp) -> UOp | None:
    """MAX(a, b) on floats → WHERE(CMPLT(a, b), b, a), MAX's definition (NaN and -0.0 too)."""
    if not x.dtype.is_float or x.dtype in _HALF or ctx.native(Ops.MAX, x.dtype):
        return None
    a, b = x.src
    return UOp(Ops.WHERE, (UOp(Ops.CMPLT, (a, b)), b, a))


def cmod(ctx: TargetDesc, x: UOp) -> UOp | None:
    """CMOD(a, b) → a - CDIV(a, b) * b (C remainder: the sign of a)."""
    if ctx.native(Ops.CMOD, x.dtype):
        return None
    a, b = x.src
    return UOp(Ops.SUB, (a, UOp(Ops.MUL, (UOp(Ops.CDIV, (a, b)), b))))


def cdiv(ctx: TargetDesc, x: UOp) -> UOp | None:
    """CDIV → TRUNC(FDIV) in float64 (≤ 32 bits), a shift (±2^k), long division (64 bits)."""
    if ctx.native(Ops.CDIV, x.dtype):
        return None
    from kcc.passes import division     # (imported by the kernels that divide: start-up)
    d = const_int(x.src[1]) if x.shape == () else None
    if d is not None and d != 0 and abs(d) & (abs(d) - 1) == 0 and \
            abs(d).bit_length() < x.dtype.bits:
        return division.cdiv_pow2(x, abs(d).bit_length() - 1, d < 0)
    if x.dtype.bits > 32:
        return division.cdiv64(x)
    f64 = dtypes.float64
    if not ctx.native(Ops.FDIV, f64):
        return division.cdiv32(x)
    a, b = (UOp(Ops.CAST, (s,), f64) for s in x.src)
    return UOp(Ops.CAST, (UOp(Ops.TRUNC, (UOp(Ops.FDIV, (a, b)),)),), x.dtype)


def fdiv_sqrt(ctx: TargetDesc, x: UOp) -> UOp | None:
    """FDIV/SQRT the target lacks → kcc/passes/division.py (float32) or division64.py."""
    dt = x.dtype
    if dt not in (dtypes.float32, dtypes.float64) or ctx.native(x.op, dt):
        return None
    if dt == dtypes.float64:
        from kcc.passes import division64
        return division64.fdiv64(x) if x.op is Ops.FDIV else division64.sqrt64(x)
    from kcc.passes import division
    return division.fdiv32(x) if x.op is Ops.FDIV else division.sqrt32(x)


def int_mulacc(ctx: TargetDesc, x: UOp) -> UOp | None:
    """Integer MULACC → ADD(MUL(a, b), c); a float MULACC is fused and has no exact split."""
    if ctx.native(Ops.MULACC, x.dtype) or x.dtype in _HALF:
        return None
    if x.dtype.is_float:
        raise DecomposeError(f"target {ctx.name} lacks a fused multiply-add for {x.dtype}")
    a, b, c = x.src
    return UOp(Ops.ADD, (UOp(Ops.MUL, (a, b)), c))


def bool_mul(ctx: TargetDesc, x: UOp) -> UOp | None:
    """Integer MUL(CAST(b), y) of a bool b (either order) → WHERE(b, y, 0) where the target
    asks for it (module docstring) and has the WHERE at the MUL's width."""
    dt = x.dtype
    if not ctx.select_bool_mul or not dt.is_int or dt.is_weak or dt.is_bool:
        return None
    if x.shape and not ctx.alu_legal(x.shape[0], dt, Ops.WHERE):
        return None
    for c, y in (x.src, x.src[::-1]):
        if c.op is Ops.CAST and c.src[0].dtype == dtypes.bool:
            return UOp(Ops.WHERE, (c.src[0], y, _const(0, dt, x.shape)))
    return None


def bool_mulacc(ctx: TargetDesc, x: UOp) -> UOp | None:
    """Integer MULACC(CAST(b), y, c) of a bool b (either factor) → ADD(WHERE(b, y, 0), c),
    bool_mul's WHERE under a native MULACC (exact: both wrap alike; tinygrad's index sums,
    sort's `CAST(x[j] == v & idx[j] == w) * j + acc`, were a 0/1 vector and a VPMULLD).
    Vectors only: a scalar MULACC stays one IMUL and ADD."""
    dt = x.dtype
    if not ctx.select_bool_mul or not dt.is_int or dt.is_weak or dt.is_bool or not x.shape:
        return None
    if not ctx.alu_legal(x.shape[0], dt, Ops.WHERE):
        return None
    a, b, acc = x.src
    for c, y in ((a, b), (b, a)):
        if c.op is Ops.CAST and c.src[0].dtype == dtypes.bool:
            return UOp(Ops.ADD, (UOp(Ops.WHERE, (c.src[0], y, _const(0, dt, x.shape))), acc))
    return None


def bool_shl(ctx: TargetDesc, x: UOp) -> UOp | None:
    """Integer SHL(CAST(b), k) of a bool b by a constant 0 <= k < bits → WHERE(b, 1 << k, 0)
    (exact: 1 << k wraps as the SHL does, 0 << k is 0) where bool_mul's WHERE is asked for:
    argmax_3d's `(x == m) << 3` was a masked move of 1 and a VPSLLD, now one masked move."""
    dt = x.dtype
    if not ctx.select_bool_mul or not dt.is_int or dt.is_weak or dt.is_bool:
        return None
    if x.shape and not ctx.alu_legal(x.shape[0], dt, Ops.WHERE):
        return None
    c, k = x.src
    if k.shape:
        k = k.src[0] if k.op is Ops.STACK and len(set(k.src)) == 1 else None
    k = None if k is None else const_int(k)
    if c.op is not Ops.CAST or c.src[0].dtype != dtypes.bool or k is None \
            or not 0 <= k < dt.bits:
        return None
    one = (1 << k) - (1 << dt.bits if dt.is_signed and k == dt.bits - 1 else 0)
    return UOp(Ops.WHERE, (c.src[0], _const(one, dt, x.shape), _const(0, dt, x.shape)))


def mulhi(ctx: TargetDesc, x: UOp) -> UOp | None:
    """MULHI the target lacks → the exact product in 64 bits (≤ 32-bit dtypes) or from 32-bit
    halves (64-bit dtypes: docs/semantics.md, MULHI)."""
    dt = x.dtype
    if ctx.native(Ops.MULHI, dt):
        return None
    sh, (a, b) = x.shape, x.src
    if dt.bits <= 32:
        # |a·b| < 2^63 for two ≤ 32-bit values: exact in int64/uint64; narrowing keeps the low
        # bits of the shifted product, which are the high half
        wide = dtypes.int64 if dt.is_signed else dtypes.uint64
        p = UOp(Ops.MUL, tuple(UOp(Ops.CAST, (s,), wide) for s in (a, b)))
        return UOp(Ops.CAST, (UOp(Ops.SHR, (p, _const(dt.bits, wide, sh))),), dt)
    u64 = dtypes.uint64
    au, bu = (s if s.dtype == u64 else UOp(Ops.CAST, (s,), u64) for s in (a, b))
    m32, s32 = _const(0xFFFFFFFF, u64, sh), _const(32, u64, sh)

    def lo(v: UOp) -> UOp:
        return UOp(Ops.AND, (v, m32))

    def hi(v: UOp) -> UOp:
        return UOp(Ops.SHR, (v, s32))

    # a·b = (ah·2^32 + al)(bh·2^32 + bl); every partial product of two 32-bit halves and the
    # middle sum (below 3·2^32) fit in 64 bits, so nothing below carries out unseen
    ll, lh = UOp(Ops.MUL, (lo(au), lo(bu))), UOp(Ops.MUL, (lo(au), hi(bu)))
    hl, hh = UOp(Ops.MUL, (hi(au), lo(bu))), UOp(Ops.MUL, (hi(au), hi(bu)))
    mid = UOp(Ops.ADD, (UOp(Ops.ADD, (hi(ll), lo(lh))), lo(hl)))
    r = UOp(Ops.ADD, (UOp(Ops.ADD, (UOp(Ops.ADD, (hh, hi(lh))), hi(hl))), hi(mid)))
    if dt.is_signed:
        # a negative a reads as a + 2^64 unsigned: the unsigned high half is b too large (and
        # a too large for a negative b), modulo 2^64
        zero, zu = _const(0, dt, sh), _const(0, u64, sh)
        for s, other in ((a, bu), (b, au)):
            neg = UOp(Ops.CMPLT, (s, zero))
            r = UOp(Ops.SUB, (r, UOp(Ops.WHERE, (neg, other, zu))))
        return UOp(Ops.CAST, (r,), dt)
    return r


def _u32(v: int, shape: tuple[int, ...]) -> UOp:
    return _const(v, dtypes.uint32, shape)


def _rotl(b: UOp, r: int) -> UOp:
    sh = b.shape
    return UOp(Ops.OR, (UOp(Ops.SHL, (b, _u32(r, sh))), UOp(Ops.SHR, (b, _u32(32 - r, sh)))))


def threefry(ctx: TargetDesc, x: UOp) -> UOp | None:
    """THREEFRY(x, key) → Threefry-2x32, 20 rounds, on uint32 halves (UOP_FORMAT.md)."""
    if ctx.native(Ops.THREEFRY, dtypes.uint64):
        return None
    sh = x.shape
    u32, u64 = dtypes.uint32, dtypes.uint64

    def halves(v: UOp) -> tuple[UOp, UOp]:
        lo = UOp(Ops.CAST, (v,), u32)   # narrowing keeps the low 32 bits
        hi = UOp(Ops.CAST, (UOp(Ops.SHR, (v, _const(32, u64, sh))),), u32)
        return lo, hi

    x0, x1 = halves(x.src[0])
    k0, k1 = halves(x.src[1])
    ks = (k1, UOp(Ops.XOR, (UOp(Ops.XOR, (k0, k1)), _u32(0x1BD11BDA, sh))), k0)
    a = UOp(Ops.ADD, (x0, ks[2]))
    b = UOp(Ops.ADD, (x1, ks[0]))
    for i in range(5):
        for r in ((13, 15, 26, 6) if i % 2 == 0 else (17, 29, 16, 24)):
            a = UOp(Ops.ADD, (a, b))
            b = UOp(Ops.XOR, (a, _rotl(b, r)))
        a = UOp(Ops.ADD, (a, ks[i % 3]))
        # b + (k + (i+1)): wrapping, so the same sum as (b + k) + (i+1), and the key's part is
        # one node a loop can hoist when the key is invariant (Tensor.rand's)
        b = UOp(Ops.ADD, (b, UOp(Ops.ADD, (ks[(i + 1) % 3], _u32(i + 1, sh)))))
    hi = UOp(Ops.SHL, (UOp(Ops.CAST, (b,), u64), _const(32, u64, sh)))
    return UOp(Ops.OR, (hi, UOp(Ops.CAST, (a,), u64)))


def bf16_cast(ctx: TargetDesc, x: UOp) -> UOp | None:
    """A CAST to or from bfloat16 the target lacks → float32 bit operations."""
    src_dt, dst = x.src[0].dtype, x.arg
    if dtypes.bfloat16 not in (src_dt, dst) or src_dt == dst or \
            ctx.native(Ops.CAST, dtypes.bfloat16):
        return None
    sh = x.shape
    f32, u32, u16 = dtypes.float32, dtypes.uint32, dtypes.uint16
    if src_dt == dtypes.bfloat16:
        # bfloat16 → float32 is exact: the 16 bits become the top half of a float32
        wide = UOp(Ops.SHL, (UOp(Ops.CAST, (UOp(Ops.BITCAST, (x.src[0],), u16),), u32),
                             _u32(16, sh)))
        f = UOp(Ops.BITCAST, (wide,), f32)
        return f if dst == f32 else UOp(Ops.CAST, (f,), dst)
    v = x.src[0] if src_dt == f32 else _f32_odd(x.src[0])
    bits = UOp(Ops.BITCAST, (v,), u32)
    odd = UOp(Ops.AND, (UOp(Ops.SHR, (bits, _u32(16, sh))), _u32(1, sh)))
    rounded = UOp(Ops.ADD, (UOp(Ops.ADD, (bits, _u32(0x7FFF, sh))), odd))
    top = UOp(Ops.SHR, (rounded, _u32(16, sh)))
    # a NaN keeps its sign and top payload bits and is made quiet (rounding could carry into inf)
    nan = UOp(Ops.OR, (UOp(Ops.SHR, (bits, _u32(16, sh))), _u32(0x40, sh)))
    top = UOp(Ops.WHERE, (UOp(Ops.CMPNE, (v, v)), nan, top))
    return UOp(Ops.BITCAST, (UOp(Ops.CAST, (top,), u16),), dtypes.bfloat16)


def odd_cast(ctx: TargetDesc, x: UOp) -> UOp | None:
    """int64/uint64 → float32/float16 and float64 → float16 on a target that converts these
    only through a wider float (`native(CAST, source)` False): round to odd in the wider float
    first (float64 for a 64-bit integer, float32 for float64), so the last conversion is the
    only rounding (p' ≥ p + 2: Boldo & Melquiond)."""
    src_dt, dst = x.src[0].dtype, x.arg
    if ctx.native(Ops.CAST, src_dt) or src_dt == dst:
        return None
    sh = x.shape
    f32, f64 = dtypes.float32, dtypes.float64
    if src_dt in (dtypes.int64, dtypes.uint64) and dst in (f32, dtypes.float16):
        wide = _i64_f64_odd(x.src[0])
        mid = UOp(Ops.CAST, (wide,), f32)
        if dst == f32:
            return mid
        return UOp(Ops.CAST, (_round_odd(wide, mid, f32, dtypes.uint32, sh),), dst)
    if src_dt == f64 and dst == dtypes.float16:
        v = x.src[0]
        odd = _round_odd(v, UOp(Ops.CAST, (v,), f32), f32, dtypes.uint32, sh)
        return UOp(Ops.CAST, (odd,), dst)
    return None


def _f32_odd(x: UOp) -> UOp:
    """x (any float or integer dtype) as a float32 rounded to odd (truncate, then set the last
    bit if inexact). Rounding that once more to bfloat16 (8 bits, 24 >= 8 + 2) equals one
    rounding of x (Boldo & Melquiond's round-to-odd), so the CAST rounds only once."""
    dt, sh = x.dtype, x.shape
    f32, f64 = dtypes.float32, dtypes.float64
    if dt == f32 or (dt.itemsize <= 2 and not dt.is_float) or dt.is_bool:
        return UOp(Ops.CAST, (x,), f32)         # exact in float32
    if dt == dtypes.float16:
        return UOp(Ops.CAST, (x,), f32)         # exact
    if dt.itemsize == 8 and not dt.is_float:
        x64 = _i64_f64_odd(x)
    elif dt == f64:
        x64 = x
    else:
        x64 = UOp(Ops.CAST, (x,), f64)          # 32-bit integers are exact in float64
    return _round_odd(x64, UOp(Ops.CAST, (x64,), f32), f32, dtypes.uint32, sh)


def _round_odd(x: UOp, t: UOp, fdt: DType, udt: DType, sh: tuple[int, ...]) -> UOp:
    """t = x rounded to nearest in fdt → x rounded to odd in fdt: when t != x, step t one
    ulp toward zero if it was rounded away from zero, then set its last bit."""
    back = UOp(Ops.CAST, (t,), x.dtype) if t.dtype != x.dtype else t
    bits = UOp(Ops.BITCAST, (t,), udt)
    absx = UOp(Ops.WHERE, (UOp(Ops.CMPLT, (x, _const(0.0, x.dtype, sh))),
                           UOp(Ops.NEG, (x,)), x))
    absb = UOp(Ops.WHERE, (UOp(Ops.CMPLT, (back, _const(0.0, x.dtype, sh))),
                           UOp(Ops.NEG, (back,)), back))
    away = UOp(Ops.CMPLT, (absx, absb))
    rz = UOp(Ops.SUB, (bits, UOp(Ops.CAST, (away,), udt)))
    odd = UOp(Ops.OR, (rz, _const(1, udt, sh)))
    inexact = UOp(Ops.AND, (UOp(Ops.CMPNE, (back, x)), UOp(Ops.CMPEQ, (x, x))))
    return UOp(Ops.BITCAST, (UOp(Ops.WHERE, (inexact, odd, bits)),), fdt)


def _i64_f64_odd(x: UOp) -> UOp:
    """An int64/uint64 as a float64 rounded to odd: hi·2^32 and lo are exact in float64, their
    rounded sum's error is exact by Fast2Sum (|hi·2^32| >= |lo| whenever hi != 0)."""
    sh, f64, u64 = x.shape, dtypes.float64, dtypes.uint64
    hi_int = UOp(Ops.SHR, (x, _const(32, x.dtype, sh)))   # arithmetic for int64
    hi = UOp(Ops.MUL, (UOp(Ops.CAST, (hi_int,), f64), _const(2.0 ** 32, f64, sh)))
    lo = UOp(Ops.CAST, (UOp(Ops.CAST, (x,), dtypes.uint32),), f64)
    s = UOp(Ops.ADD, (hi, lo))
    err = UOp(Ops.SUB, (lo, UOp(Ops.SUB, (s, hi))))
    bits = UOp(Ops.BITCAST, (s,), u64)
    # inexact and even: move one ulp toward the exact value (s + err)
    toward_up = UOp(Ops.CMPEQ, (UOp(Ops.CMPLT, (_const(0.0, f64, sh), err)),
                                UOp(Ops.CMPLT, (_const(0.0, f64, sh), s))))
    step = UOp(Ops.WHERE, (toward_up, _const(1, u64, sh), _const((1 << 64) - 1, u64, sh)))
    even = UOp(Ops.CMPEQ, (UOp(Ops.AND, (bits, _const(1, u64, sh))), _const(0, u64, sh)))
    fix = UOp(Ops.AND, (UOp(Ops.CMPNE, (err, _const(0.0, f64, sh))), even))
    moved = UOp(Ops.ADD, (bits, step))
    return UOp(Ops.BITCAST, (UOp(Ops.WHERE, (fix, moved, bits)),), f64)


_HALF_OPS = tuple(op for op in ALU if op is not Ops.THREEFRY)

DECOMPOSE = PatternMatcher([
    (UPat(Ops.CAST, name="x"), bf16_cast),
    (UPat(Ops.CAST, name="x"), odd_cast),
    (UPat((Ops.NEG, Ops.WHERE, Ops.MAX), name="x"), half_bits),
    (UPat(_HALF_OPS, name="x"), lift_half),
    (UPat((Ops.EXP2, Ops.LOG2, Ops.SIN), name="x"), poly),
    (UPat(Ops.RECIPROCAL, name="x"), reciprocal),
    (UPat(Ops.MAX, name="x"), float_max),
    (UPat(Ops.CMOD, name="x"), cmod),
    (UPat(Ops.CDIV, name="x"), cdiv),
    (UPat((Ops.FDIV, Ops.SQRT), name="x"), fdiv_sqrt),
    (UPat(Ops.MULACC, name="x"), int_mulacc),
    (UPat(Ops.MULACC, name="x"), bool_mulacc),
    (UPat(Ops.MUL, name="x"), bool_mul),
    (UPat(Ops.SHL, name="x"), bool_shl),
    (UPat(Ops.MULHI, name="x"), mulhi),
    (UPat(Ops.THREEFRY, name="x"), threefry),
])


def decompose(sink: UOp, target: TargetDesc) -> UOp:
    """Rewrite every op the target lacks into ops it has (see the module docstring)."""
    # independent scalar EXP2/LOG2/SIN of one loop first become one vector op: decomposed
    # once instead of once a lane (kcc/passes/pack_lanes.py)
    out = pack_lanes(sink, target)
    done: dict[UOp, UOp] = {}
    if not rewrites_nothing(out, DECOMPOSE, target, done):   # (nothing to decompose: most)
        out = graph_rewrite(out, DECOMPOSE, ctx=target, memo=done)
    return keep_params(sink, devectorize(out, target)) if out is not sink else sink
