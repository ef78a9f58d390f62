"""Correctly rounded float32 FDIV and SQRT, and integer CDIV (64-bit: long division, at the
end of the module), for a target that has float64 fused multiply-add but no correctly rounded
divide or square root, nor an integer divide instruction (AMD GPUs: CDIV/CMOD; their float32
FDIV/SQRT are selected as hardware sequences around v_rcp_f32/v_sqrt_f32 instead,
kcc/isel/amd/fdiv.py, so fdiv32/sqrt32 serve a target that marks them non-native).

All three start from a float64 approximation built of MUL, ADD and MULACC only (a bit-pattern
first guess refined by Newton-Raphson; relative error below 2^-47), and then make the result
exact by an exact test instead of relying on an error bound alone:

- float32 FDIV/SQRT: c = RN32(approximation) is the correctly rounded result or one of its two
  float32 neighbours. The midpoints m between c and each neighbour have at most 25 significant
  bits, so `m * |b|` (≤ 49 bits) and `m * m` (≤ 50 bits) are exact in float64 and comparing them
  with |a| (resp. x) tells on which side of each midpoint the exact quotient (root) lies. One
  step up or down then gives RN32 of the exact value; an exact tie goes to the even neighbour.
  Above the largest float32 the next "neighbour" is 2^128, so the midpoint is the overflow
  threshold 2^128 - 2^103 and the test decides between FLT_MAX and inf exactly.
- CDIV: t = TRUNC(approximation of |a| / |b|). A quotient that is not an integer is at least
  1/|b| ≥ 2^-32 (relative) away from every integer, far more than the error, so t is exact
  unless |a|/|b| is an integer n and the approximation fell just below it (t = n - 1). Then
  r = |a| - t·|b| (one MULACC: the exact value is an integer below 2^34, so it is exact) equals
  |b|, and t + 1 is taken. The sign is applied last (truncation toward zero).

Special operands (zeros, infinities, NaN) take the IEEE result directly. The sequences are
target neutral; tests check them against the reference interpreter on x86 with these ops
marked non-native.
"""

from __future__ import annotations

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp

F32, F64, U32, U64 = dtypes.float32, dtypes.float64, dtypes.uint32, dtypes.uint64


class _B:
    """Builds nodes of one shape (a scalar, or a vector broadcast with STACK)."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def c(self, v: int | float, dt: DType) -> UOp:
        k = UOp(Ops.CAST, (UOp.const(v),), dt)
        return k if self.shape == () else UOp(Ops.STACK, (k,) * self.shape[0])

    @staticmethod
    def op(op: Ops, *src: UOp, arg: object = None) -> UOp:
        return UOp(op, src, arg) if arg is not None else UOp(op, src)

    def cast(self, x: UOp, dt: DType) -> UOp:
        return UOp(Ops.CAST, (x,), dt)

    def bitcast(self, x: UOp, dt: DType) -> UOp:
        return UOp(Ops.BITCAST, (x,), dt)

    def where(self, c: UOp, a: UOp, b: UOp) -> UOp:
        return UOp(Ops.WHERE, (c, a, b))

    def fabs(self, x: UOp, fdt: DType, udt: DType) -> UOp:
        """|x| by clearing the sign bit (exact for every value, NaN stays NaN)."""
        mask = (1 << (udt.bits - 1)) - 1
        return self.bitcast(self.op(Ops.AND, self.bitcast(x, udt), self.c(mask, udt)), fdt)


def _recip64(b: _B, d: UOp, steps: int = 5) -> UOp:
    """≈ 1/d for a positive normal float64 d, relative error < 2^-52 (plus rounding) with the
    default 5 steps, below 2^-24 (plus rounding) with 3.

    Guess: subtracting d's bit pattern from twice the pattern of 1.0 negates its exponent and
    gives (1 - f/2)/2^e for d = (1 + f)·2^e, within 12.5% of 1/d. Each Newton step
    y += y·(1 - d·y) (two fused multiply-adds) squares the relative error: 2^-3 → 2^-96 in 5."""
    y = b.bitcast(b.op(Ops.SUB, b.c(0x7FE0000000000000, U64), b.bitcast(d, U64)), F64)
    one = b.c(1.0, F64)
    for _ in range(steps):
        e = b.op(Ops.MULACC, b.op(Ops.NEG, d), y, one)
        y = b.op(Ops.MULACC, y, e, y)
    return y


def _div64(b: _B, n: UOp, d: UOp) -> UOp:
    """≈ n/d for a float64 n ≥ 0 and a positive normal d: q = n·y, then one correction
    q' = q + (n - d·q)·y, relative error below 2^-47 (n/d must stay in the normal range).

    y comes from 3 Newton steps (relative error ε ≤ 2^-24 plus rounding): q = n·y is off by
    ε, and the correction leaves (q - n/d)·(1 - d·y), i.e. ε² ≤ 2^-48, plus the roundings of
    the FMAs (a few units of 2^-53). Both users need far less: FDIV's candidate RN32(q') must
    be within one float32 step (2^-24) of the quotient, CDIV's error below 2^-32."""
    y = _recip64(b, d, 3)
    q = b.op(Ops.MUL, n, y)
    r = b.op(Ops.MULACC, b.op(Ops.NEG, d), q, n)
    return b.op(Ops.MULACC, r, y, q)


def _round_exact(b: _B, c: UOp, above: object) -> UOp:
    """The correctly rounded float32 from a candidate c ≥ 0 within one float32 step of it.

    ``above(m)`` returns (exact > m, exact == m) for a float64 midpoint m (built exactly)."""
    inf32 = b.c(float("inf"), F32)
    bits = b.bitcast(c, U32)
    is_inf = b.op(Ops.CMPEQ, c, inf32)
    is_zero = b.op(Ops.CMPEQ, bits, b.c(0, U32))
    c64 = b.where(is_inf, b.c(2.0 ** 128, F64), b.cast(c, F64))
    up = b.bitcast(b.op(Ops.ADD, bits, b.c(1, U32)), F32)
    up64 = b.where(b.op(Ops.CMPEQ, up, inf32), b.c(2.0 ** 128, F64), b.cast(up, F64))
    dn = b.bitcast(b.op(Ops.SUB, bits, b.c(1, U32)), F32)
    dn64 = b.where(is_zero, b.c(0.0, F64), b.cast(dn, F64))
    half = b.c(0.5, F64)
    m_hi = b.op(Ops.MUL, b.op(Ops.ADD, c64, up64), half)    # 25 bits: exact
    m_lo = b.op(Ops.MUL, b.op(Ops.ADD, c64, dn64), half)
    odd = b.op(Ops.CMPEQ, b.op(Ops.AND, bits, b.c(1, U32)), b.c(1, U32))
    gt_hi, eq_hi = above(m_hi)
    gt_lo, eq_lo = above(m_lo)
    go_up = b.op(Ops.AND, b.op(Ops.OR, gt_hi, b.op(Ops.AND, eq_hi, odd)), _not(b, is_inf))
    stay_lo = b.op(Ops.OR, gt_lo, b.op(Ops.AND, eq_lo, _not(b, odd)))
    go_dn = b.op(Ops.AND, _not(b, stay_lo), _not(b, is_zero))
    return b.where(go_up, up, b.where(go_dn, dn, c))


def _not(b: _B, x: UOp) -> UOp:
    return b.op(Ops.CMPNE, x, b.c(True, dtypes.bool))


class QuotientCases:
    """The IEEE special cases of a float quotient a / d: |a|, |d|, which operand is NaN, inf or
    zero, and the quotient's value for them (NaN for NaN, 0/0 and inf/inf; 0 for 0/x and x/inf;
    inf for inf/x and x/0; the sign the XOR of the operands' signs)."""

    def __init__(self, b: "_B", a: UOp, d: UOp, fdt: DType, udt: DType):
        self.b, self.a, self.d, self.fdt, self.udt = b, a, d, fdt, udt
        self.aa, self.ad = b.fabs(a, fdt, udt), b.fabs(d, fdt, udt)
        inf, zero = b.c(float("inf"), fdt), b.c(0.0, fdt)
        self.a_nan, self.d_nan = b.op(Ops.CMPNE, a, a), b.op(Ops.CMPNE, d, d)
        self.a_inf, self.d_inf = b.op(Ops.CMPEQ, self.aa, inf), b.op(Ops.CMPEQ, self.ad, inf)
        self.a_zero, self.d_zero = (b.op(Ops.CMPEQ, self.aa, zero),
                                    b.op(Ops.CMPEQ, self.ad, zero))
        self.special = b.op(Ops.OR, b.op(Ops.OR, b.op(Ops.OR, self.a_nan, self.d_nan),
                                         b.op(Ops.OR, self.a_inf, self.d_inf)),
                            b.op(Ops.OR, self.a_zero, self.d_zero))

    def result(self, mag: UOp) -> UOp:
        """The quotient from the magnitude of the general path (ignored for a special case)."""
        b, fdt, udt = self.b, self.fdt, self.udt
        nan = b.op(Ops.OR, b.op(Ops.OR, self.a_nan, self.d_nan),
                   b.op(Ops.OR, b.op(Ops.AND, self.a_zero, self.d_zero),
                        b.op(Ops.AND, self.a_inf, self.d_inf)))
        mag = b.where(b.op(Ops.OR, self.a_zero, self.d_inf), b.c(0.0, fdt), mag)
        mag = b.where(b.op(Ops.OR, self.a_inf, self.d_zero), b.c(float("inf"), fdt), mag)
        mag = b.where(nan, b.c(float("nan"), fdt), mag)
        sign = b.op(Ops.AND, b.op(Ops.XOR, b.bitcast(self.a, udt), b.bitcast(self.d, udt)),
                    b.c(1 << (fdt.bits - 1), udt))
        return b.bitcast(b.op(Ops.OR, b.bitcast(mag, udt), sign), fdt)


def fdiv32(x: UOp) -> UOp:
    """FDIV of float32 → the exactly tested float64 approximation (module docstring)."""
    b = _B(x.shape)
    a, d = x.src
    q = QuotientCases(b, a, d, F32, U32)
    A, D = b.cast(q.aa, F64), b.cast(q.ad, F64)
    special = q.special
    # the general path sees 1.0 for a special divisor so that its intermediate values stay
    # ordinary (the result is replaced below)
    Ds = b.where(special, b.c(1.0, F64), D)
    c = b.cast(_div64(b, A, Ds), F32)

    def above(m: UOp) -> tuple[UOp, UOp]:
        p = b.op(Ops.MUL, m, Ds)
        return b.op(Ops.CMPLT, p, A), b.op(Ops.CMPEQ, p, A)
    return q.result(_round_exact(b, c, above))


def _rsqrt64(b: _B, v: UOp) -> UOp:
    """≈ 1/sqrt(v) for a positive normal float64 v: the classic bit-pattern guess (within 3.5%)
    and 5 Newton steps y·(1.5 - 0.5·v·y²), each squaring the relative error."""
    y = b.bitcast(b.op(Ops.SUB, b.c(0x5FE6EB50C7B537A9, U64),
                       b.op(Ops.SHR, b.bitcast(v, U64), b.c(1, U64))), F64)
    hv = b.op(Ops.MUL, v, b.c(0.5, F64))
    for _ in range(5):
        t = b.op(Ops.MUL, b.op(Ops.MUL, hv, y), y)
        y = b.op(Ops.MUL, y, b.op(Ops.SUB, b.c(1.5, F64), t))
    return y


def sqrt32(x: UOp) -> UOp:
    """SQRT of float32 → the exactly tested float64 approximation (module docstring)."""
    b = _B(x.shape)
    v = x.src[0]
    zero, inf = b.c(0.0, F32), b.c(float("inf"), F32)
    general = b.op(Ops.AND, b.op(Ops.CMPLT, zero, v), b.op(Ops.CMPLT, v, inf))
    V = b.where(general, b.cast(v, F64), b.c(1.0, F64))
    y = _rsqrt64(b, V)
    s = b.op(Ops.MUL, V, y)
    s = b.op(Ops.MULACC, b.op(Ops.MUL, b.op(Ops.MULACC, b.op(Ops.NEG, s), s, V), y),
             b.c(0.5, F64), s)
    c = b.cast(s, F32)

    def above(m: UOp) -> tuple[UOp, UOp]:
        p = b.op(Ops.MUL, m, m)
        return b.op(Ops.CMPLT, p, V), b.op(Ops.CMPEQ, p, V)
    r = _round_exact(b, c, above)
    # sqrt(±0) = ±0, sqrt(+inf) = +inf, sqrt(NaN) = NaN: v itself; sqrt(x < 0) = NaN
    neg = b.op(Ops.CMPLT, v, zero)
    return b.where(general, r, b.where(neg, b.c(float("nan"), F32), v))


def cdiv32(x: UOp) -> UOp:
    """CDIV of ≤ 32-bit integers → truncated float64 approximation, corrected (docstring)."""
    b = _B(x.shape)
    dt = x.dtype
    a, d = (b.cast(s, F64) for s in x.src)
    A, D = b.fabs(a, F64, U64), b.fabs(d, F64, U64)
    # a zero divisor is unspecified (no trap): divide by 1 instead so nothing is NaN
    d_zero = b.op(Ops.CMPEQ, D, b.c(0.0, F64))
    Ds = b.where(d_zero, b.c(1.0, F64), D)
    t = b.op(Ops.TRUNC, _div64(b, A, Ds))
    r = b.op(Ops.MULACC, b.op(Ops.NEG, t), Ds, A)
    t = b.where(b.op(Ops.CMPLT, r, Ds), t, b.op(Ops.ADD, t, b.c(1.0, F64)))
    neg = b.op(Ops.CMPNE, b.op(Ops.CMPLT, a, b.c(0.0, F64)), b.op(Ops.CMPLT, d, b.c(0.0, F64)))
    q = b.where(neg, b.op(Ops.NEG, t), t)
    # INT_MIN / -1 (unspecified) saturates instead of wrapping; nothing else leaves the range
    return b.cast(q, dt)


def cdiv_pow2(x: UOp, k: int, negative: bool) -> UOp:
    """CDIV by ±2^k (any integer width): a shift, with the truncation bias 2^k - 1 added to a
    negative dividend first (a >> (bits-1) is all ones exactly then; shifted right logically
    by bits - k it is 2^k - 1), negated for a negative divisor. Exact, wrapping like CDIV
    (INT_MIN / -1 wraps to INT_MIN, as the interpreter)."""
    dt, a = x.dtype, x.src[0]
    b = _B(x.shape)
    if k == 0:
        q = a
    elif not dt.is_signed:
        q = b.op(Ops.SHR, a, b.c(k, dt))
    else:
        udt = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}[dt.bits]
        sign = b.cast(b.op(Ops.SHR, a, b.c(dt.bits - 1, dt)), udt)
        bias = b.cast(b.op(Ops.SHR, sign, b.c(dt.bits - k, udt)), dt)
        q = b.op(Ops.SHR, b.op(Ops.ADD, a, bias), b.c(k, dt))
    return b.op(Ops.NEG, q) if negative else q


# -- 64-bit integer CDIV: restoring shift-subtract division --------------------------------
#
# No float64 estimate is exact enough for 64-bit operands (53 bits), so CDIV of int64/uint64
# by anything but a constant ±2^k is long division in base 2, unrolled over the 64 dividend
# bits with uint64 SHL/SHR/AND/OR/SUB/CMPLT/WHERE only (a target builds them from 32-bit
# pairs). Invariant: before step i (i = 63 … 0) the partial remainder r < d and r ≤ n >> (i+1),
# so r·2 + bit_i(n) ≤ n >> i < 2^64 never overflows; subtracting d when it fits gives quotient
# bit i and keeps r < d. After step 0, q = n // d exactly and r = n % d.
# Signed operands divide their magnitudes (as uint64, so |INT64_MIN| = 2^63 is exact) and
# negate the quotient when the signs differ: INT64_MIN / -1 = 2^63 → INT64_MIN, the
# interpreter's wrap (remainder 0). A zero divisor (unspecified, docs/semantics.md) takes
# every subtraction, so the unsigned quotient is all ones; nothing traps.


def _udiv64(b: _B, n: UOp, d: UOp) -> UOp:
    """n // d for uint64 n, d (d ≠ 0), exact: 64 restoring shift-subtract steps.

    The dividend register shifts left one bit a step and takes in, at the bottom, the
    complement of the quotient bit (r < d: no subtraction); after 64 steps it holds ~q. The
    next step reads its top bit, so each step depends on the one before and a schedule never
    keeps the 64 compare results live at once."""
    one = b.c(1, U64)
    r = b.c(0, U64)
    for _ in range(64):
        r = b.op(Ops.OR, b.op(Ops.SHL, r, one), b.op(Ops.SHR, n, b.c(63, U64)))
        lt = b.op(Ops.CMPLT, r, d)
        r = b.where(lt, r, b.op(Ops.SUB, r, d))
        n = b.op(Ops.OR, b.op(Ops.SHL, n, one), b.cast(lt, U64))
    return b.op(Ops.XOR, n, b.c((1 << 64) - 1, U64))


def cdiv64(x: UOp) -> UOp:
    """CDIV of int64/uint64 by any divisor → exact long division (see above)."""
    b = _B(x.shape)
    a, d = x.src
    if x.dtype == U64:
        return _udiv64(b, a, d)
    i64 = dtypes.int64
    zero = b.c(0, i64)

    def mag(v: UOp) -> tuple[UOp, UOp]:
        neg = b.op(Ops.CMPLT, v, zero)
        return b.bitcast(b.where(neg, b.op(Ops.NEG, v), v), U64), neg
    ua, na = mag(a)
    ud, nd = mag(d)
    q = b.bitcast(_udiv64(b, ua, ud), i64)
    return b.where(b.op(Ops.CMPNE, na, nd), b.op(Ops.NEG, q), q)
