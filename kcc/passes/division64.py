"""Correctly rounded float64 FDIV and SQRT from float64 MUL, ADD and fused MULACC, for a target
without a correctly rounded divide or square root (AMD GPUs: v_rcp_f64 and v_rsq_f64 are
approximations). Like the float32 sequences of kcc/passes/division.py, an approximation is made
exact by exact tests rather than by an error bound alone; the tests are signs of fused
multiply-adds, and the sign of RN(x) is the sign of x (zero only for x = 0) when x cannot
underflow to zero, which holds below because every such x is a multiple of 2^-106 or coarser.

FDIV, both operands finite and nonzero. Write |a| = ma·2^ea, |b| = mb·2^eb with ma, mb in
[1, 2) (a subnormal operand is first scaled by 2^64, exactly), Q = ma/mb in (1/2, 2) and
E = ea - eb, clamped to [-1080, 1030] (beyond it the result is 0 resp. inf either way, and both
halves of E then keep every power 2^(E/2) normal).

1. q1 ≈ Q: y ≈ 1/mb (bit-pattern guess, five Newton steps, |y·mb - 1| < 2^-50), q0 = RN(ma·y),
   r = RN(ma - mb·q0), q1 = RN(q0 + r·y). Then q0 + r·y = Q + (Q - q0)·η with |η| < 2^-49 and
   |Q - q0| < Q·2^-49, so q1 = RN(Q + τ) with |τ| < 2^-97 and |q1 - Q| < ulp(q1).
2. c = RN(Q) exactly: r0 = ma - mb·q1 is a multiple of 2^-52·ulp(q1) and smaller than
   2·ulp(q1) in magnitude, so it has at most 53 bits and one MULACC computes it exactly. Q lies
   above the upper midpoint q1 + h (h = ulp/2 there) iff r0 > mb·h, below the lower midpoint
   iff r0 < -mb·h' (mb·h, mb·h' are exact); Q is never a midpoint (an odd 54-bit significand
   times mb's significand has more than 53 bits), so one step up or down gives RN(Q).
3. A normal result is c·2^E, exact (two multiplications by normal powers of two); it overflows
   to inf exactly when RN of the unbounded-exponent quotient, c·2^E, is at least 2^1024.
4. A subnormal result (c·2^E < 2^-1022, tested exactly as c < 2^(-1022-E)) must be rounded
   once from Q·2^E, not from c. d = RN(c·2^E) (c·2^(E/2) is exact, the second product rounds
   once) is within 3/4 of the subnormal step 2^-1074 of Q·2^E, so RN(Q·2^E) is d or a
   neighbour. D = d·2^-E is exact and in Q's scale the step is g = 2^(-1074-E); the midpoints
   D ± g/2 have at most 53 bits (d < 2^-1022; for d = 2^-1022, rounded up, Q lies below D and
   a rounded upper midpoint still compares right), so fma(-mb, D ± g/2, ma) gives the side of
   each midpoint exactly, and an exact tie (possible here) goes to the even neighbour.

SQRT of a positive finite x: x = m·2^(2k) with m in [1, 4) (subnormals scaled by 2^64 first).
s ≈ sqrt(m) by y ≈ 1/sqrt(m) (bit-pattern guess, five Newton steps) and one fused correction,
within one ulp, so RN(sqrt(m)) is s or a neighbour s±. With the midpoints u = (s + s+)/2 and
l = (s + s-)/2: u² = s·s+ + h² and l² = s·s- + h'², where h = (s+ - s)/2, h' = (s - s-)/2, and
m - s·s± is a multiple of at least 4·h² (resp. 4·h'²), so m > u² iff fma(-s, s+, m) > 0 and
m < l² iff fma(-s, s-, m) ≤ 0 (a square root is never a midpoint). The result RN(sqrt(m))·2^k
is exact: square roots of float64 values are never subnormal and never overflow.

Zeros, infinities and NaN take the IEEE result directly (the general path computes on 1.0
there). The sequences are target neutral; tests check them against the reference interpreter
(numpy) on x86 with FDIV/SQRT marked non-native, and in the AMD emulator.
"""

from __future__ import annotations

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp
from kcc.passes.division import _B, QuotientCases, _not, _recip64, _rsqrt64

F64, U64, U32, I32 = dtypes.float64, dtypes.uint64, dtypes.uint32, dtypes.int32
_MANT = (1 << 52) - 1


def _pow2(b: _B, k: UOp) -> UOp:
    """2^k as a float64 for an int32 k in [-1022, 1023] (the biased exponent field)."""
    return b.bitcast(b.op(Ops.SHL, b.cast(b.op(Ops.ADD, k, b.c(1023, I32)), U64),
                          b.c(52, U64)), F64)


def _split(b: _B, v: UOp, even: bool) -> tuple[UOp, UOp]:
    """A positive finite float64 v as (m, e) with v = m·2^e, m in [1, 2) (even: e even and
    m in [1, 4)); a subnormal v is scaled by 2^64 first (exact)."""
    sub = b.op(Ops.CMPLT, v, b.c(2.0 ** -1022, F64))
    v = b.where(sub, b.op(Ops.MUL, v, b.c(2.0 ** 64, F64)), v)
    bits = b.bitcast(v, U64)
    hi = b.cast(b.op(Ops.SHR, bits, b.c(32, U64)), U32)
    field = b.cast(b.op(Ops.SHR, hi, b.c(20, U32)), I32)
    e = b.op(Ops.SUB, field, b.where(sub, b.c(1023 + 64, I32), b.c(1023, I32)))
    top = b.c(1023, I32)
    if even:
        odd = b.op(Ops.AND, e, b.c(1, I32))
        e = b.op(Ops.SUB, e, odd)
        top = b.op(Ops.ADD, top, odd)
    expo = b.op(Ops.SHL, b.cast(top, U64), b.c(52, U64))
    m = b.bitcast(b.op(Ops.OR, b.op(Ops.AND, bits, b.c(_MANT, U64)), expo), F64)
    return m, e


def _step(b: _B, x: UOp, k: int) -> UOp:
    """The float64 whose bit pattern is x's plus k (a neighbour of a positive x)."""
    return b.bitcast(b.op(Ops.ADD, b.bitcast(x, U64), b.c(k % (1 << 64), U64)), F64)


def _fma(b: _B, x: UOp, y: UOp, z: UOp) -> UOp:
    return b.op(Ops.MULACC, x, y, z)


def _clamp(b: _B, v: UOp, lo: int, hi: int) -> UOp:
    v = b.where(b.op(Ops.CMPLT, v, b.c(lo, I32)), b.c(lo, I32), v)
    return b.where(b.op(Ops.CMPLT, b.c(hi, I32), v), b.c(hi, I32), v)


def _quotient(b: _B, ma: UOp, mb: UOp) -> UOp:
    """RN(ma/mb) for ma, mb in [1, 2) (steps 1 and 2 of the module docstring)."""
    y = _recip64(b, mb)
    nb = b.op(Ops.NEG, mb)
    q0 = b.op(Ops.MUL, ma, y)
    q1 = _fma(b, _fma(b, nb, q0, ma), y, q0)
    r0 = _fma(b, nb, q1, ma)                               # exact (|q1 - Q| < ulp(q1))
    up, dn = _step(b, q1, 1), _step(b, q1, -1)
    half = b.c(0.5, F64)
    h_up = b.op(Ops.MUL, b.op(Ops.MUL, b.op(Ops.SUB, up, q1), half), mb)    # exact
    h_dn = b.op(Ops.MUL, b.op(Ops.MUL, b.op(Ops.SUB, q1, dn), half), mb)
    go_up = b.op(Ops.CMPLT, h_up, r0)
    go_dn = b.op(Ops.CMPLT, r0, b.op(Ops.NEG, h_dn))
    return b.where(go_up, up, b.where(go_dn, dn, q1))


def _tiny(b: _B, d: UOp, e: UOp, e1: UOp, e2: UOp, ma: UOp, mb: UOp) -> UOp:
    """RN(Q·2^E) on the subnormal grid from a candidate d within one step of it (step 4)."""
    big = b.op(Ops.MUL, b.op(Ops.MUL, d, _pow2(b, b.op(Ops.NEG, e2))),
               _pow2(b, b.op(Ops.NEG, e1)))                # D = d·2^-E, exact
    g2 = _pow2(b, _clamp(b, b.op(Ops.SUB, b.c(-1075, I32), e), -1022, 1023))   # g/2
    nb = b.op(Ops.NEG, mb)
    s_hi = _fma(b, nb, b.op(Ops.ADD, big, g2), ma)         # sign of Q - (D + g/2)
    s_lo = _fma(b, nb, b.op(Ops.SUB, big, g2), ma)         # sign of Q - (D - g/2)
    zero = b.c(0.0, F64)
    odd = b.op(Ops.CMPEQ, b.op(Ops.AND, b.bitcast(d, U64), b.c(1, U64)), b.c(1, U64))
    go_up = b.op(Ops.OR, b.op(Ops.CMPLT, zero, s_hi),
                 b.op(Ops.AND, b.op(Ops.CMPEQ, s_hi, zero), odd))
    stay = b.op(Ops.OR, b.op(Ops.CMPLT, zero, s_lo),
                b.op(Ops.AND, b.op(Ops.CMPEQ, s_lo, zero), _not(b, odd)))
    return b.where(go_up, _step(b, d, 1), b.where(_not(b, stay), _step(b, d, -1), d))


def fdiv64(x: UOp) -> UOp:
    """FDIV of float64 → the exactly tested sequence of the module docstring."""
    b = _B(x.shape)
    a, d = x.src
    q = QuotientCases(b, a, d, F64, U64)
    aa, ad, special = q.aa, q.ad, q.special
    one = b.c(1.0, F64)
    ma, ea = _split(b, b.where(special, one, aa), False)
    mb, eb = _split(b, b.where(special, one, ad), False)
    e = _clamp(b, b.op(Ops.SUB, ea, eb), -1080, 1030)
    e1 = b.op(Ops.SHR, e, b.c(1, I32))                     # floor(E/2): |e1|, |E - e1| ≤ 540
    e2 = b.op(Ops.SUB, e, e1)
    c = _quotient(b, ma, mb)
    n = b.op(Ops.MUL, b.op(Ops.MUL, c, _pow2(b, e1)), _pow2(b, e2))
    tiny = b.op(Ops.CMPLT, c, _pow2(b, _clamp(b, b.op(Ops.SUB, b.c(-1022, I32), e), -60, 60)))
    return q.result(b.where(tiny, _tiny(b, n, e, e1, e2, ma, mb), n))


def sqrt64(x: UOp) -> UOp:
    """SQRT of float64 → the exactly tested sequence of the module docstring."""
    b = _B(x.shape)
    v = x.src[0]
    zero, inf = b.c(0.0, F64), b.c(float("inf"), F64)
    general = b.op(Ops.AND, b.op(Ops.CMPLT, zero, v), b.op(Ops.CMPLT, v, inf))
    m, e = _split(b, b.where(general, v, b.c(1.0, F64)), True)
    y = _rsqrt64(b, m)
    s = b.op(Ops.MUL, m, y)
    s = _fma(b, b.op(Ops.MUL, _fma(b, b.op(Ops.NEG, s), s, m), y), b.c(0.5, F64), s)
    up, dn = _step(b, s, 1), _step(b, s, -1)
    ns = b.op(Ops.NEG, s)
    go_up = b.op(Ops.CMPLT, zero, _fma(b, ns, up, m))
    go_dn = _not(b, b.op(Ops.CMPLT, zero, _fma(b, ns, dn, m)))
    r = b.where(go_up, up, b.where(go_dn, dn, s))
    r = b.op(Ops.MUL, r, _pow2(b, b.op(Ops.SHR, e, b.c(1, I32))))
    # sqrt(±0) = ±0, sqrt(+inf) = +inf, sqrt(NaN) = NaN: v itself; sqrt(x < 0) = NaN
    neg = b.op(Ops.CMPLT, v, zero)
    return b.where(general, r, b.where(neg, b.c(float("nan"), F64), v))
