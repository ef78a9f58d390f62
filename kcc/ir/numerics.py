"""Bit-exact scalar semantics of every ALU op and cast, on numpy arrays (docs/semantics.md).

The reference interpreter (kcc/ir/interp.py) calls these on arrays of any shape. A value of
dtype `d` is carried as a numpy array of `d.np` (bfloat16 as its uint16 bit pattern, weakint as
int64, weakfloat as float64). Every function here is elementwise and exact with respect to the
semantics document: float16/bfloat16 ops compute in float32 and round once to the dtype (round
to nearest, ties to even); MULACC is fused (one rounding); ints wrap.
"""

from __future__ import annotations

from contextlib import contextmanager
from fractions import Fraction
from typing import Iterator

import numpy as np

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

# Significand bits after the point and minimum normal exponent of each float format
# (IEEE 754-2008 table 3.5; bfloat16 has float32's exponent range).
_FMT = {"float16": (10, -14, 15), "bfloat16": (7, -126, 127), "float32": (23, -126, 127),
        "float64": (52, -1022, 1023)}


class NumericsError(Exception):
    """An op or cast the semantics do not define for these dtypes."""


# Which value the interpreter gives where docs/semantics.md leaves a result unspecified
# (division by zero, signed MIN / -1, a shift amount outside [0, bits), LOCAL/REG storage
# before its first store). 0 is the documented choice; 1 is another one, so that running a
# kernel under both and comparing finds the elements that depend on an unspecified value
# (`kcc run --check` excludes them from its comparison). Set it with `unspecified_variant`.
UNSPECIFIED = {"variant": 0}


@contextmanager
def unspecified_variant(v: int) -> Iterator[None]:
    """Run the interpreter with choice v (0 or 1) for every unspecified result."""
    old = UNSPECIFIED["variant"]
    UNSPECIFIED["variant"] = v
    try:
        yield
    finally:
        UNSPECIFIED["variant"] = old


# -- float formats ---------------------------------------------------------------------------

def round_f64_to(x: np.ndarray, fmt: str) -> np.ndarray:
    """Round float64 values to the value set of `fmt` (nearest, ties to even), as float64.

    Overflow gives ±inf (a value at or beyond the midpoint between the largest finite and the
    next power of two), subnormals keep their reduced precision; NaN and ±0 pass through.
    """
    frac, emin, emax = _FMT[fmt]
    x = np.asarray(x, F64)
    finite = np.isfinite(x) & (x != 0)
    _, ex = np.frexp(np.where(finite, x, 1.0))
    q = np.maximum(ex - 1, emin) - frac          # exponent of one unit in the last place
    y = np.ldexp(np.rint(np.ldexp(x, -q)), q)    # scaling by 2^k is exact; rint is ties-to-even
    big = (2.0 - 2.0 ** -frac) * 2.0 ** emax
    y = np.where(np.abs(y) > big, np.copysign(np.inf, x), y)
    return np.where(finite, y, x)


def bf16_from_f64(x: np.ndarray) -> np.ndarray:
    """float64 (or float32) values to bfloat16 bit patterns (uint16), rounded once.

    A NaN keeps its sign and top payload bits and gets the quiet bit: (f32 bits >> 16) | 0x40,
    which is what x86 VCVTNEPS2BF16 produces.
    """
    x = np.asarray(x, F64)
    r = round_f64_to(x, "bfloat16").astype(F32)
    bits = (r.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    nan_bits = (x.astype(F32).view(np.uint32) >> np.uint32(16)).astype(np.uint16) | np.uint16(0x40)
    return np.where(np.isnan(x), nan_bits, bits)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns to float32 values (exact)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << np.uint32(16)).view(F32)


def to_compute(x: np.ndarray, dt: DType) -> np.ndarray:
    """A float value in the dtype its ops compute in: float16/bfloat16 in float32."""
    if dt.name == "bfloat16":
        return bf16_to_f32(x)
    if dt.name == "float16":
        return np.asarray(x).astype(F32)
    return np.asarray(x)


def from_f64(y: np.ndarray, dt: DType) -> np.ndarray:
    """Round float64 results once to a float dtype's carrier array."""
    if dt.name == "bfloat16":
        return bf16_from_f64(y)
    return np.asarray(y, F64).astype(dt.np)  # numpy's float64 narrowing is ties-to-even


def from_compute(y: np.ndarray, dt: DType) -> np.ndarray:
    """Round a float32 (or wider) result to float16/bfloat16; identity for other dtypes."""
    if dt.name == "bfloat16":
        return bf16_from_f64(y)
    if dt.name == "float16":
        return np.asarray(y).astype(np.float16)
    return np.asarray(y).astype(dt.np, copy=False)


# -- casts -----------------------------------------------------------------------------------

def _bit_length(v: np.ndarray) -> np.ndarray:
    """Bit length of uint64 values, vectorized."""
    t, bl = v.copy(), np.zeros(v.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        m = (t >> np.uint64(s)) != 0
        t = np.where(m, t >> np.uint64(s), t)
        bl += m * s
    return bl + (t != 0)


def int_to_float(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Integer to float, rounded once to nearest even (exact for every int64/uint64 value)."""
    frac = _FMT[dst.name][0] + 1
    x = np.asarray(x)
    if x.dtype.kind == "u":
        neg, mag = np.zeros(x.shape, bool), x.astype(np.uint64)
    else:
        x64 = x.astype(np.int64)
        neg = x64 < 0
        mag = np.where(neg, (~x64.view(np.uint64)) + np.uint64(1), x64.view(np.uint64))
    shift = np.maximum(_bit_length(mag) - frac, 0).astype(np.uint64)
    q = mag >> shift
    rem = mag - (q << shift)
    half = np.where(shift > 0, np.uint64(1) << (shift - np.uint64(1)), np.uint64(0))
    up = (shift > 0) & ((rem > half) | ((rem == half) & ((q & np.uint64(1)) == 1)))
    val = np.ldexp((q + up).astype(F64), shift.astype(np.int64))  # q + up <= 2^frac: exact
    val = np.where(neg, -val, val)
    return from_f64(val, dst)  # exactly representable unless it overflows to inf


def float_to_int(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Float to integer: truncate toward zero, saturate to the dtype's range, NaN gives 0."""
    t = np.trunc(to_compute(x, src).astype(F64))
    lo, hi = dst.min(), dst.max()
    over, under, nan = t >= float(hi) + 1.0, t < float(lo), np.isnan(t)
    safe = np.where(over | under | nan, 0.0, t)
    base = safe.astype(np.uint64 if dst.kind == "uint" else np.int64)
    res = base.astype(dst.np)
    res = np.where(over, np.array(hi).astype(dst.np), res)
    res = np.where(under, np.array(lo).astype(dst.np), res)
    return np.where(nan, np.zeros((), dst.np), res).astype(dst.np)


def cast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """CAST (and the implicit conversion of a weak operand) from src to dst."""
    x = np.asarray(x)
    if src == dst:
        return x
    if dst.is_bool:
        if src.name == "bfloat16":
            return (x & np.uint16(0x7FFF)) != 0
        return x != 0
    if src.is_bool:
        if dst.name == "bfloat16":
            return np.where(x, np.uint16(0x3F80), np.uint16(0))
        return x.astype(dst.np)
    if src.is_int and dst.is_int:
        return x.astype(dst.np)  # keeps the low bits: sign- or zero-extends, or truncates
    if src.is_int:
        return int_to_float(x, src, dst)
    if dst.is_int:
        return float_to_int(x, src, dst)
    v = to_compute(x, src).astype(F64)  # every float value is exact in float64
    return from_f64(v, dst)


def bitcast(x: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """BITCAST: the same bits read as another dtype of the same width."""
    if src.itemsize != dst.itemsize:
        raise NumericsError(f"BITCAST from {src} to {dst} changes the width")
    # not np.ascontiguousarray: it turns a 0-d value (one lane) into shape (1,), and a STACK of
    # such lanes then has a lane axis too many
    a = np.asarray(x)
    if dst.is_bool != src.is_bool:
        # a bool is 0 or 1: a byte read as a bool is byte != 0, a bool read as a byte 0 or 1
        # (docs/semantics.md, CAST and BITCAST)
        return (a.view(np.uint8) != 0).astype(dst.np)
    return (a if a.flags.c_contiguous else a.copy()).view(dst.np)


# -- fused multiply-add ----------------------------------------------------------------------

def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s + e == a + b exactly, s = fl(a + b) (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _round_odd(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """From s = RN(x) and e = x - s, the float64 round-to-odd of x (sticky last bit)."""
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    nudge = (e != 0) & even
    return np.where(nudge, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp split of float64: a = hi + lo with 26-bit halves."""
    c = a * 134217729.0  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _fma64_exact(a: float, b: float, c: float) -> float:
    """One float64 fma by exact rational arithmetic (CPython's int division rounds correctly)."""
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        if np.isfinite(a) and np.isfinite(b):
            # the exact product is finite, so c (±inf, NaN) is the result; a*b + c would
            # round the product first, and 1e300*1e300 + -inf would be NaN instead of -inf
            return c
        return a * b + c
    v = Fraction(a) * Fraction(b) + Fraction(c)
    if v == 0:
        prod_neg = (np.signbit(a) != np.signbit(b)) and (a == 0 or b == 0)
        return -0.0 if (prod_neg and np.signbit(c) and c == 0) else 0.0
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dt: DType) -> np.ndarray:
    """a*b + c rounded once to dt (float16/bfloat16: one float32 fma, then rounded to dt)."""
    if dt.name in ("float16", "bfloat16", "float32"):
        a64, b64, c64 = (to_compute(v, dt).astype(F64) for v in (a, b, c))
        p = a64 * b64                 # exact: 24 + 24 significand bits fit in 53
        s, e = _two_sum(p, c64)
        r = _round_odd(s, e)          # round to odd at 53 bits, then RN to 24 bits is exact
        r = np.where(np.isfinite(s) & np.isfinite(e), r, p + c64).astype(F32)
        return from_compute(r, dt)
    # flattened (a scalar MULACC's operands are 0-d arrays, which np.nonzero refuses below)
    shape = np.broadcast_shapes(*(np.shape(v) for v in (a, b, c)))
    a, b, c = (np.broadcast_to(np.asarray(v, F64), shape).reshape(-1) for v in (a, b, c))
    ph = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    pl = ((ah * bh - ph) + ah * bl + al * bh) + al * bl   # Dekker: ph + pl == a*b exactly
    # Correctly rounded ph + pl + c: round-to-odd on the low parts, then one rounding.
    uh, ul = _two_sum(pl, c)
    th, tl = _two_sum(ph, uh)
    v_lo, v_err = _two_sum(tl, ul)
    res = th + _round_odd(v_lo, v_err)
    absx = np.abs
    safe = (np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & (a != 0) & (b != 0)
            & (absx(a) < 2.0 ** 500) & (absx(b) < 2.0 ** 500) & (absx(ph) > 2.0 ** -400)
            & (absx(ph) < 2.0 ** 900) & (absx(c) < 2.0 ** 900)
            & ((c == 0) | (absx(c) > 2.0 ** -400)) & (absx(res) > 2.0 ** -400))
    res = np.where(safe, res, 0.0)
    bad = ~safe
    if bad.any():
        # Rare (zeros, non-finite, extreme exponents): exact rationals element by element.
        res = res.copy()
        for i in np.flatnonzero(bad):
            res[i] = _fma64_exact(float(a[i]), float(b[i]), float(c[i]))
    return res.reshape(shape)


# -- threefry --------------------------------------------------------------------------------

_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(x: np.ndarray, key: np.ndarray) -> np.ndarray:
    """THREEFRY(x, key) on uint64 arrays: Threefry-2x32, 20 rounds (UOP_FORMAT.md)."""
    u32, m = np.uint32, np.uint64(0xFFFFFFFF)
    x, key = np.broadcast_arrays(np.asarray(x, np.uint64), np.asarray(key, np.uint64))
    x0, x1 = (x & m).astype(u32), (x >> np.uint64(32)).astype(u32)
    k0, k1 = (key & m).astype(u32), (key >> np.uint64(32)).astype(u32)
    ks = (k1, k0 ^ k1 ^ u32(0x1BD11BDA), k0)
    a, b = x0 + ks[2], x1 + ks[0]
    for i in range(5):
        for r in _ROT[i % 2]:
            a = a + b
            b = a ^ ((b << u32(r)) | (b >> u32(32 - r)))
        a = a + ks[i % 3]
        b = b + ks[(i + 1) % 3] + u32(i + 1)
    return (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)


# -- ALU ops ---------------------------------------------------------------------------------

def _int_div(a: np.ndarray, b: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """C division: quotient truncated toward zero, remainder with the dividend's sign.

    Division by zero gives quotient 0 and remainder 0 (undefined by the semantics); the signed
    MIN / -1 overflow wraps (quotient MIN, remainder 0).
    """
    zero = b == 0
    bs = np.where(zero, np.ones((), b.dtype), b)
    if signed:
        neg1 = bs == -1
        bs2 = np.where(neg1, np.ones((), b.dtype), bs)
        r = np.fmod(a, bs2)
        q = (a - r) // bs2
        q = np.where(neg1, np.negative(a), q)
        r = np.where(neg1, np.zeros((), a.dtype), r)
    else:
        q, r = a // bs, a % bs
    if UNSPECIFIED["variant"]:       # the other choice: x/0 = all ones, x%0 = x, MIN/-1 = MAX
        if signed:
            q = np.where(neg1 & (q == np.negative(q)) & (q != 0), np.invert(q), q)
        return (np.where(zero, np.invert(np.zeros((), q.dtype)), q),
                np.where(zero, a, r))
    q = np.where(zero, np.zeros((), q.dtype), q)
    r = np.where(zero, np.zeros((), r.dtype), r)
    return q, r


def mulhi(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    """MULHI: the high dt.bits of the exact product of a and b (both of dt, signed or not).

    Up to 32 bits the product is exact in int64/uint64. At 64 bits: the unsigned product from
    32-bit halves, hi = ah·bh + carries (every partial sum below 2^64); the signed one from it
    as mulhi_s(a, b) = mulhi_u(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0) mod 2^64 (a value
    read as unsigned is a + 2^64 when negative)."""
    bits = 64 if dt.is_weak else dt.bits
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if bits <= 32:
        wide = np.int64 if dt.is_signed else np.uint64
        p = a.astype(wide) * b.astype(wide)
        return (p >> wide(bits)).astype(a.dtype)
    u64 = np.uint64
    ua, ub = a.astype(u64), b.astype(u64)
    lo32, s32 = u64(0xFFFFFFFF), u64(32)
    al, ah, bl, bh = ua & lo32, ua >> s32, ub & lo32, ub >> s32
    ll, lh, hl = al * bl, al * bh, ah * bl
    mid = (ll >> s32) + (lh & lo32) + (hl & lo32)
    hi = ah * bh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if dt.is_signed:
        hi = hi - np.where(a < 0, ub, u64(0)) - np.where(b < 0, ua, u64(0))
    return hi.astype(a.dtype)


def _shift(op: Ops, a: np.ndarray, n: np.ndarray, dt: DType) -> np.ndarray:
    """SHL/SHR; an amount outside [0, bits) is undefined (here: taken modulo bits)."""
    bits = 64 if dt.is_weak else dt.bits
    wide = np.asarray(n).astype(np.int64)
    amt = (wide & (bits - 1)).astype(a.dtype)
    out = np.left_shift(a, amt) if op is Ops.SHL else np.right_shift(a, amt)
    if UNSPECIFIED["variant"]:       # the other choice for an amount out of range: ~result
        out = np.where((wide < 0) | (wide >= bits), np.invert(out), out)
    return out


_FLOAT_BIN = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply,
              Ops.FDIV: np.divide}
_CMP = {Ops.CMPLT: np.less, Ops.CMPNE: np.not_equal, Ops.CMPEQ: np.equal}
_TRANSC = {Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin}


def alu(op: Ops, dt: DType, *xs: np.ndarray) -> np.ndarray:
    """One ALU op on operands already converted to its operand dtype `dt`.

    Comparisons return bool; every other op returns dt's carrier array. Shifts take an amount
    of any integer dtype as their second operand; THREEFRY takes uint64 (or weakint) operands.
    """
    if op in _CMP:
        a, b = (to_compute(x, dt) if dt.is_float else x for x in xs)
        return _CMP[op](a, b)
    if op is Ops.MAX:
        a, b = xs
        ac, bc = (to_compute(x, dt) if dt.is_float else x for x in xs)
        return np.where(ac < bc, b, a)   # a < b ? b : a, chosen bits kept exactly
    if op is Ops.WHERE:
        return np.where(xs[0], xs[1], xs[2])
    if op is Ops.THREEFRY:
        return threefry2x32(xs[0].astype(np.uint64), xs[1].astype(np.uint64))
    if op in (Ops.SHL, Ops.SHR):
        return _shift(op, xs[0], xs[1], dt)
    if dt.is_float:
        return _float_op(op, dt, xs)
    return _int_op(op, dt, xs)


def _float_op(op: Ops, dt: DType, xs: tuple[np.ndarray, ...]) -> np.ndarray:
    if op is Ops.MULACC:
        return fma(xs[0], xs[1], xs[2], dt)
    if op is Ops.NEG and dt.name == "bfloat16":
        return xs[0] ^ np.uint16(0x8000)
    cs = [to_compute(x, dt) for x in xs]
    if op in _TRANSC:
        return from_f64(_TRANSC[op](cs[0].astype(F64)), dt)
    if op in _FLOAT_BIN:
        return from_compute(_FLOAT_BIN[op](cs[0], cs[1]), dt)
    unary = {Ops.NEG: np.negative, Ops.SQRT: np.sqrt, Ops.TRUNC: np.trunc,
             Ops.RECIPROCAL: lambda v: np.divide(np.ones((), v.dtype), v)}
    if op in unary:
        return from_compute(unary[op](cs[0]), dt)
    raise NumericsError(f"{op.name} is not defined on {dt}")


def _int_op(op: Ops, dt: DType, xs: tuple[np.ndarray, ...]) -> np.ndarray:
    if op is Ops.NEG:
        return np.negative(xs[0]) if not dt.is_bool else xs[0]
    if op is Ops.MULACC:
        return xs[0] * xs[1] + xs[2]
    if op in (Ops.CDIV, Ops.CMOD):
        q, r = _int_div(xs[0], xs[1], dt.is_signed)
        return q if op is Ops.CDIV else r
    if op is Ops.MULHI:
        return mulhi(xs[0], xs[1], dt)
    table = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply,
             Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or, Ops.XOR: np.bitwise_xor}
    if op in table:
        return table[op](xs[0], xs[1])
    raise NumericsError(f"{op.name} is not defined on {dt}")


def const_array(value: int | float | bool, dt: DType) -> np.ndarray:
    """A literal as a 0-d carrier array of dt (weak literals: int64 / float64)."""
    if isinstance(value, bool):
        return cast(np.array(value), dtypes.bool, dt)
    if isinstance(value, int):
        if dt.is_float:
            return int_to_float(np.array(value, np.int64 if value < 2**63 else np.uint64),
                                dtypes.int64, dt)
        big = np.array(value & 0xFFFFFFFFFFFFFFFF, np.uint64)
        return big.astype(dt.np)   # wraps into the dtype (the parser range-checks literals)
    v = np.array(value, F64)
    return v if dt.is_weak else from_f64(v, dt)
