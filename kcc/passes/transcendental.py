"""EXP2, LOG2 and SIN as basic UOps (ADD, SUB, MUL, FDIV, CMPLT, WHERE, CAST, BITCAST, AND, OR,
SHL, SHR, TRUNC) for float32 and float64. The accuracy each meets, and how it was measured, is in
docs/transcendentals.md. No fused multiply-add is used, so a target without MULACC gets the
same results. Polynomial coefficients are Taylor coefficients computed here with Python's
`decimal` at 40 digits and rounded once to the dtype, so they are exact facts, not fitted data.
"""

from __future__ import annotations

import struct

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp
from kcc.record import record

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from decimal import Decimal
    from fractions import Fraction
    from typing import Any


@record(frozen=True)
class FloatFormat:
    """The IEEE-754 binary format facts the algorithms need (IEEE 754-2008, 3.4)."""

    dtype: DType
    itype: DType      # the signed integer of the same width (for BITCAST)
    mant: int         # stored mantissa bits
    bias: int
    emin: int         # exponent of the smallest normal


F32 = FloatFormat(dtypes.float32, dtypes.int32, 23, 127, -126)
F64 = FloatFormat(dtypes.float64, dtypes.int64, 52, 1023, -1022)
FORMATS = {dtypes.float32: F32, dtypes.float64: F64}
_STRUCT = {dtypes.float32: ("<f", "<i"), dtypes.float64: ("<d", "<q")}


def _float_bits(v: float, dt: DType) -> int:
    """The bits of v (a value of float32/float64 dt, so packing rounds nothing) as a signed
    integer of the same width, as BITCAST reads them."""
    f, i = _STRUCT[dt]
    return struct.unpack(i, struct.pack(f, v))[0]


def _bits_float(bits: int, dt: DType) -> float:
    """The float32/float64 value whose bits are the signed integer bits."""
    f, i = _STRUCT[dt]
    return struct.unpack(f, struct.pack(i, bits))[0]


def _round(v: Decimal | Fraction | float, dt: DType) -> float:
    """v rounded once to dt (through an exact Fraction, so float32 is not double-rounded)."""
    from fractions import Fraction
    fr = Fraction(v) if not isinstance(v, Fraction) else v
    if dt == dtypes.float64:
        return float(fr)   # Fraction → float is correctly rounded
    # float32: round the exact value to 24 significant bits, ties to even
    if fr == 0:
        return 0.0
    sign = -1 if fr < 0 else 1
    fr = abs(fr)
    e = fr.numerator.bit_length() - fr.denominator.bit_length()
    while Fraction(2) ** e > fr:
        e -= 1
    while Fraction(2) ** (e + 1) <= fr:
        e += 1
    scale = Fraction(2) ** (23 - e)
    m = fr * scale
    q, rem = divmod(m.numerator, m.denominator)
    if 2 * rem > m.denominator or (2 * rem == m.denominator and q % 2 == 1):
        q += 1
    return sign * float(Fraction(q) / scale)


def _dec(x: int) -> Decimal:
    from decimal import Decimal, getcontext
    getcontext().prec = 40
    return Decimal(x)


# -- the constant tables -----------------------------------------------------------------------
# Each is computed exactly (decimal, fractions) and rounded once; a compile reads them from
# kcc's cache (kcc.startup.cached, rebuilt when this file changes), so neither module is
# imported nor any table recomputed per kernel (~0.4 ms a kernel with EXP2; the imports and
# dataclasses' ~3 ms of a process's first such compile).

_TABLES: dict[str, Any] = {}


def _tables() -> dict[str, Any]:
    """Every constant table of this module, by name (_build_tables)."""
    if not _TABLES:
        from kcc.startup import cached
        _TABLES.update(cached("transcendental-tables", [__file__], _build_tables,
                              lambda t: t, lambda t: dict(t)))
    return _TABLES


def _build_tables() -> dict[str, Any]:
    """The tables computed (marshal's types: lists of floats and ints)."""
    out: dict[str, Any] = {}
    for dt in (dtypes.float32, dtypes.float64):
        out[f"exp2/{dt.name}"] = _exp2_coeffs(dt)
        out[f"log/{dt.name}"] = _log_coeffs(dt)
        out[f"log2/{dt.name}"] = _log2_consts(dt)
    out["pio2_parts"] = _pio2_parts()
    out["sin/odd"] = _sin_coeffs(True)
    out["sin/even"] = _sin_coeffs(False)
    out["pi"] = _pi_consts()
    out["two_over_pi/8"] = _two_over_pi_words(8)
    out[f"two_over_pi/{_TWO_OVER_PI_WORDS}"] = _two_over_pi_words(_TWO_OVER_PI_WORDS)
    return out


class _B:
    """Small builder: strong constants and ops in one float format."""

    def __init__(self, fmt: FloatFormat, shape: tuple[int, ...] = ()):
        self.f = fmt
        self.dt = fmt.dtype
        self.shape = shape

    def _bcast(self, c: UOp) -> UOp:
        """A scalar constant, or a STACK of it for a vector computation."""
        return c if self.shape == () else UOp(Ops.STACK, (c,) * self.shape[0])

    def c(self, v: float) -> UOp:
        return self._bcast(UOp(Ops.CAST, (UOp.const(float(v)),), self.dt))

    def ci(self, v: int) -> UOp:
        return self._bcast(UOp(Ops.CAST, (UOp.const(int(v)),), self.f.itype))

    def magic(self) -> float:
        """1.5 * 2**mant: adding it to |v| < 2**(mant-1) leaves rint(v) in the low bits."""
        return 1.5 * 2.0 ** self.f.mant

    def to_float(self, i: UOp) -> UOp:
        """A small int (|i| < 2**(mant-1)) as a float: i + magic's bits, less magic."""
        m = self.magic()
        mbits = _float_bits(m, self.dt)
        return self.sub(self.from_bits(self.add(i, self.ci(mbits))), self.c(m))

    @staticmethod
    def op(op: Ops, *src: UOp) -> UOp:
        return UOp(op, tuple(src))

    def add(self, a: UOp, b: UOp) -> UOp:
        return UOp(Ops.ADD, (a, b))

    def sub(self, a: UOp, b: UOp) -> UOp:
        return UOp(Ops.SUB, (a, b))

    def mul(self, a: UOp, b: UOp) -> UOp:
        return UOp(Ops.MUL, (a, b))

    def where(self, c: UOp, a: UOp, b: UOp) -> UOp:
        return UOp(Ops.WHERE, (c, a, b))

    def lt(self, a: UOp, b: UOp) -> UOp:
        return UOp(Ops.CMPLT, (a, b))

    def horner(self, x: UOp, coeffs: list[float]) -> UOp:
        """c0 + x*(c1 + x*(c2 + …)) with separate MUL and ADD (no fused multiply-add)."""
        acc = self.c(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.add(self.mul(acc, x), self.c(c))
        return acc

    def bits(self, x: UOp) -> UOp:
        return UOp(Ops.BITCAST, (x,), self.f.itype)

    def from_bits(self, i: UOp) -> UOp:
        return UOp(Ops.BITCAST, (i,), self.dt)


# -- EXP2 --------------------------------------------------------------------------------------

def _exp2_coeffs(dt: DType) -> list[float]:
    """Taylor coefficients of 2**r = sum (ln 2)**k / k! r**k, rounded once to dt."""
    from decimal import Decimal
    deg = 7 if dt == dtypes.float32 else 13
    ln2 = _dec(2).ln()
    out, term = [], Decimal(1)
    for k in range(deg + 1):
        out.append(_round(term, dt))
        term = term * ln2 / (k + 1)
    return out


def exp2(x: UOp) -> UOp:
    """2**x: x = q + r with q = rint(x), |r| <= 1/2; 2**r by a Taylor polynomial; times 2**q
    applied as two exact powers of two so a subnormal result is rounded once."""
    fmt = FORMATS[x.dtype]
    b = _B(fmt, x.shape)
    hi = float(-fmt.emin + 3)                  # 129 / 1025: past overflow
    lo = float(fmt.emin - fmt.mant - 25)       # -174 / -1099: past underflow to 0
    xc = b.where(b.lt(x, b.c(lo)), b.c(lo), x)
    xc = b.where(b.lt(b.c(hi), xc), b.c(hi), xc)
    # adding K = magic + 2*bias rounds to an integer (ties to even: K is even) and leaves
    # bits(xc + K) = bits(magic) + 2*bias + q, which _exp2_scales splits into 2**q1, 2**q2
    k = 1.5 * 2.0 ** fmt.mant + 2 * fmt.bias
    qm = b.add(xc, b.c(k))
    q = b.sub(qm, b.c(k))                      # exact: xc + K and K lie in one binade
    r = b.sub(xc, q)                           # exact: q is the integer nearest xc
    p = b.horner(r, _tables()[f"exp2/{x.dtype.name}"])
    e1, e2 = _exp2_scales(b, qm)
    return b.mul(b.mul(p, e1), e2)


def _exp2_scales(b: _B, qm: UOp) -> tuple[UOp, UOp]:
    """2**q1 and 2**q2 with q1 + q2 = q, q1 = floor(q/2), from qm = q + K (exp2), in unsigned
    integer ops (vector-legal on AVX2, unlike signed 64-bit shifts).

    qm's bits are t = M + 2*bias + q (M = bits(magic), |q| far below 2**(mant-1)), and
    M + 2*bias is even, so h = t >> 1 is M/2 + bias + floor(q/2) and t - h is
    M/2 + bias + ceil(q/2). M/2's low (width - mant) bits are zero, so M/2 << mant vanishes
    modulo 2**width: h << mant is the bits of 2**q1 and (t - h) << mant those of 2**q2. Both
    are normal for the clamped q (exp2's range), so p * 2**q1 is exact and the second product
    rounds p * 2**q once, the same value as any other split (four integer ops where a
    TRUNC-and-two-pow2 split took twelve)."""
    f = b.f
    ut = dtypes.uint64 if f.dtype == dtypes.float64 else dtypes.uint32
    width = ut.itemsize * 8
    mbits = _float_bits(b.magic(), f.dtype)
    assert mbits % 2 == 0 and ((mbits >> 1) << f.mant) % (1 << width) == 0

    def cu(v: int) -> UOp:
        return b._bcast(UOp(Ops.CAST, (UOp.const(int(v)),), ut))
    t = UOp(Ops.BITCAST, (qm,), ut)
    h = UOp(Ops.SHR, (t, cu(1)))
    e1 = UOp(Ops.SHL, (h, cu(f.mant)))
    e2 = UOp(Ops.SHL, (UOp(Ops.SUB, (t, h)), cu(f.mant)))
    return b.from_bits(e1), b.from_bits(e2)


# -- LOG2 --------------------------------------------------------------------------------------

def _log_coeffs(dt: DType) -> list[float]:
    """2/3, 2/5, 2/7, …: log((1+s)/(1-s)) = 2s + s*z*(2/3 + 2z/5 + …) with z = s*s."""
    from fractions import Fraction
    n = 4 if dt == dtypes.float32 else 10
    return [_round(Fraction(2, 2 * k + 3), dt) for k in range(n)]


def _log2_consts(dt: DType) -> list[float]:
    """[sqrt(2), 1/ln 2's head (its low bits cleared: _log_clear), 1/ln 2's tail], in dt."""
    from decimal import Decimal
    clear = _log_clear(dt)
    inv_ln2 = 1 / _dec(2).ln()
    ih = _round(inv_ln2, dt)
    ih_bits = _float_bits(ih, dt) & -(1 << clear)
    ivln2hi = _bits_float(ih_bits, dt)
    ivln2lo = _round(inv_ln2 - Decimal(ivln2hi), dt)
    return [_round(_dec(2).sqrt(), dt), ivln2hi, ivln2lo]


def _log_clear(dt: DType) -> int:
    """The low bits log2 clears in its head, so that head * ivln2hi is exact (21+21 <= 53,
    12+12 <= 24)."""
    return 32 if dt == dtypes.float64 else 12


def log2(x: UOp) -> UOp:
    """log2(x) = e + log2(m), m in [sqrt(1/2), sqrt(2)); log(m) = f - f*f/2 + s*(f*f/2 + R(z))
    with f = m-1, s = f/(2+f); the leading part is split into a few-bit head (exact products
    with a split 1/ln 2) and a tail, and e is added last with its rounding error recovered."""
    fmt = FORMATS[x.dtype]
    b = _B(fmt, x.shape)
    dt = x.dtype
    k = 64
    sub = b.lt(x, b.c(2.0 ** fmt.emin))
    xs = b.where(sub, b.mul(x, b.c(2.0 ** k)), x)
    bits = UOp(Ops.AND, (b.bits(xs), b.ci((1 << (fmt.itype.bits - 1)) - 1)))
    e_i = b.sub(UOp(Ops.SHR, (bits, b.ci(fmt.mant))), b.ci(fmt.bias))
    mbits = UOp(Ops.OR, (UOp(Ops.AND, (bits, b.ci((1 << fmt.mant) - 1))),
                         b.ci(fmt.bias << fmt.mant)))
    m = b.from_bits(mbits)
    sqrt2, ivln2hi, ivln2lo = _tables()[f"log2/{dt.name}"]
    big = b.lt(b.c(sqrt2), m)
    m = b.where(big, b.mul(m, b.c(0.5)), m)
    e = b.add(b.sub(b.to_float(e_i), b.where(sub, b.c(k), b.c(0.0))),
              b.where(big, b.c(1.0), b.c(0.0)))
    f = b.sub(m, b.c(1.0))
    s = UOp(Ops.FDIV, (f, b.add(b.c(2.0), f)))
    z = b.mul(s, s)
    r = b.mul(z, b.horner(z, _tables()[f"log/{dt.name}"]))
    hfsq = b.mul(b.mul(b.c(0.5), f), f)
    # head: clear the low bits so that head * ivln2hi is exact (21+21 <= 53, 12+12 <= 24)
    mask = b.ci(-(1 << _log_clear(dt)))
    hi = b.from_bits(UOp(Ops.AND, (b.bits(b.sub(f, hfsq)), mask)))
    lo = b.add(b.sub(b.sub(f, hi), hfsq), b.mul(s, b.add(hfsq, r)))
    val_hi = b.mul(hi, b.c(ivln2hi))
    val_lo = b.add(b.mul(b.add(lo, hi), b.c(ivln2lo)), b.mul(lo, b.c(ivln2hi)))
    w = b.add(e, val_hi)
    val_lo = b.add(val_lo, b.add(b.sub(e, w), val_hi))
    res = b.add(val_lo, w)
    inf = b.c(float("inf"))
    res = b.where(UOp(Ops.CMPEQ, (x, inf)), inf, res)
    res = b.where(UOp(Ops.CMPEQ, (x, b.c(0.0))), b.c(float("-inf")), res)
    bad = UOp(Ops.OR, (b.lt(x, b.c(0.0)), UOp(Ops.CMPNE, (x, x))))
    return b.where(bad, b.c(float("nan")), res)


# -- SIN ---------------------------------------------------------------------------------------

_PI = "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863"
SIN_RANGE = 2.0 ** 30 * 1.5707963267948966   # |x| up to which the stated ulp bound holds


def _pio2_parts() -> list[float]:
    """pi/2 as 23-bit pieces C1 + C2 + C3 and a float64 tail C4 (each q*Ci exact for q < 2**30)."""
    from decimal import Decimal, getcontext
    from fractions import Fraction
    getcontext().prec = 60
    pi = Decimal(_PI)
    rest = Fraction(pi / 2)
    parts = []
    for _ in range(3):
        e = 0
        while Fraction(2) ** (e + 1) <= abs(rest):
            e += 1
        while Fraction(2) ** e > abs(rest):
            e -= 1
        scale = Fraction(2) ** (22 - e)
        piece = Fraction(int(rest * scale)) / scale    # 23 significant bits, truncated
        parts.append(float(piece))
        rest -= piece
    parts.append(float(rest))
    return parts


def _sin_coeffs(odd: bool) -> list[float]:
    """Taylor coefficients of sin (odd) or cos in z = r*r, rounded to float64."""
    from fractions import Fraction
    out = []
    for k in range(9):
        n = 2 * k + 1 if odd else 2 * k
        out.append(float(Fraction((-1) ** k, _fact(n))))
    return out


def _pi_consts() -> list[float]:
    """[2/pi, pi/2, pi/2's float64 tail (pi/2 - float(pi/2))], each rounded once to float64."""
    from decimal import Decimal
    from fractions import Fraction
    pio2 = Fraction(Decimal(_PI)) / 2
    p1 = float(pio2)
    return [float(Fraction(2) / Fraction(Decimal(_PI))), p1, float(pio2 - Fraction(p1))]


def _fact(n: int) -> int:
    r = 1
    for i in range(2, n + 1):
        r *= i
    return r


def _two_sum(b: _B, x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """s + e == x + y exactly (Knuth's TwoSum, no magnitude precondition)."""
    s = b.add(x, y)
    bb = b.sub(s, x)
    e = b.add(b.sub(x, b.sub(s, bb)), b.sub(y, bb))
    return s, e


def _cody_waite(b: _B, x: UOp) -> tuple[UOp, UOp, UOp]:
    """x - q*pi/2 = rh + rl with |rh| <= pi/4 and q mod 4, for |x| <= SIN_RANGE: pi/2 in four
    parts (three of 23 bits, so q*Ci is exact for |q| < 2^30, and a float64 tail)."""
    c1, c2, c3, c4 = (b.c(v) for v in _tables()["pio2_parts"])
    magic = b.c(b.magic())
    two_over_pi = _tables()["pi"][0]
    qm = b.add(b.mul(x, b.c(two_over_pi)), magic)
    q = b.sub(qm, magic)
    t1 = b.sub(x, b.mul(q, c1))
    s1, e1 = _two_sum(b, t1, UOp(Ops.NEG, (b.mul(q, c2),)))
    s2, e2 = _two_sum(b, s1, UOp(Ops.NEG, (b.mul(q, c3),)))
    lo = b.sub(b.add(e1, e2), b.mul(q, c4))
    rh = b.add(s2, lo)
    rl = b.sub(lo, b.sub(rh, s2))
    return rh, rl, UOp(Ops.AND, (b.bits(qm), b.ci(3)))    # q mod 4: low bits of q + magic


def _sin_poly(b: _B, rh: UOp, rl: UOp, n: UOp, x: UOp) -> UOp:
    """sin(x) from x = rh + rl + n*pi/2: the sin or cos Taylor polynomial of the quadrant."""
    z = b.mul(rh, rh)
    sin_c, cos_c = _tables()["sin/odd"], _tables()["sin/even"]
    # sin(rh + rl) ~ rh + (rh*z*S(z) + rl*(1 - z/2))
    s_tail = b.mul(b.mul(rh, z), b.horner(z, sin_c[1:]))
    sin_r = b.add(rh, b.add(s_tail, b.mul(rl, b.sub(b.c(1.0), b.mul(z, b.c(0.5))))))
    # cos(rh + rl) ~ 1 - z/2 + (z*z*C(z) - rh*rl), with 1 - z/2 rounding error recovered
    hz = b.mul(z, b.c(0.5))
    w = b.sub(b.c(1.0), hz)
    c_tail = b.sub(b.mul(b.mul(z, z), b.horner(z, cos_c[2:])), b.mul(rh, rl))
    cos_r = b.add(w, b.add(b.sub(b.sub(b.c(1.0), w), hz), c_tail))
    odd = UOp(Ops.CMPEQ, (UOp(Ops.AND, (n, b.ci(1))), b.ci(1)))
    neg = UOp(Ops.CMPEQ, (UOp(Ops.AND, (n, b.ci(2))), b.ci(2)))
    res = b.where(odd, cos_r, sin_r)
    res = b.where(neg, UOp(Ops.NEG, (res,)), res)
    return b.where(UOp(Ops.CMPEQ, (x, b.c(0.0))), x, res)   # sin(±0) = ±0


def sin64(x: UOp) -> UOp:
    """sin(x) for float64: Cody-Waite reduction by pi/2 into rh + rl, |r| <= pi/4, then the
    sin or cos Taylor polynomial of the quadrant."""
    b = _B(F64, x.shape)
    rh, rl, n = _cody_waite(b, x)
    return _sin_poly(b, rh, rl, n, x)


_TWO_OVER_PI_WORDS = 40    # 1280 bits of 2/pi: float64 windows reach bit 971 + 192


def _two_over_pi_words(n: int) -> list[int]:
    """The first 32*n bits after the binary point of 2/pi, as 32-bit words (exact integers:
    pi from Machin's formula in fixed point with 64 guard bits)."""
    bits = 32 * n + 64

    def arctan_inv(k: int) -> int:        # arctan(1/k) * 2^bits
        total, term, i, sign = 0, (1 << bits) // k, 1, 1
        while term:
            total += sign * (term // i)
            term //= k * k
            i += 2
            sign = -sign
        return total
    pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)          # pi * 2^bits
    t = (2 << (2 * bits)) // pi                             # (2/pi) * 2^bits
    t >>= 64                                                # 32*n bits, guard bits dropped
    return [(t >> (32 * (n - 1 - k))) & 0xFFFFFFFF for k in range(n)]


_BLOCK = 8         # _U64.words: the table in blocks of 8 (a power of two: a shift and a mask)


class _U64:
    """uint64 constants and ops of one shape (the integer side of Payne-Hanek)."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def k(self, v: int) -> UOp:
        c = UOp(Ops.CAST, (UOp.const(v),), dtypes.uint64)
        return c if self.shape == () else UOp(Ops.STACK, (c,) * self.shape[0])

    @staticmethod
    def op(o: Ops, *a: UOp) -> UOp:
        return UOp(o, tuple(a))

    def lo32(self, v: UOp) -> UOp:
        return self.op(Ops.AND, v, self.k(0xFFFFFFFF))

    def hi32(self, v: UOp) -> UOp:
        return self.op(Ops.SHR, v, self.k(32))

    def words(self, j: UOp, count: int, table: list[int]) -> list[UOp]:
        """table[j], table[j+1], … table[j+count-1] for a uint64 index j (0 past the table's
        end), by select chains in two levels: j = 8a + b, first r[t] = table[8a + t] for
        t < 8 + count - 1 by a chain over a, then word i = r[b + i] by a chain over b. For
        float64's 42-word table and 7 words: at most 133 selects and 13 compares, where one
        chain per word over every j took 273 and 42 (exact either way: the same entry)."""
        blocks = -(-len(table) // _BLOCK)
        pad = table + [0] * (blocks * _BLOCK + _BLOCK + count - len(table))
        a = self.op(Ops.SHR, j, self.k(_BLOCK.bit_length() - 1))
        b = self.op(Ops.AND, j, self.k(_BLOCK - 1))
        rows = []
        for t in range(_BLOCK + count - 1):
            acc = self.k(0)                       # a >= blocks: j is past the table
            for i in range(blocks):
                acc = self.op(Ops.WHERE, self.op(Ops.CMPEQ, a, self.k(i)),
                              self.k(pad[_BLOCK * i + t]), acc)
            rows.append(acc)
        out = []
        for i in range(count):
            acc = rows[i]                         # b == 0
            for k in range(1, _BLOCK):
                acc = self.op(Ops.WHERE, self.op(Ops.CMPEQ, b, self.k(k)), rows[k + i], acc)
            out.append(acc)
        return out

    def window(self, hi: UOp, lo: UOp, rsh: UOp) -> UOp:
        """32 bits of the 64-bit hi:lo starting rsh bits below its top (rsh in 1..32)."""
        return self.lo32(self.op(Ops.SHR, self.op(Ops.OR, self.op(Ops.SHL, hi, self.k(32)),
                                                  lo), rsh))


def _window_words(u: _U64, off: UOp, count: int, table: list[int]) -> list[UOp]:
    """count 32-bit words of the table's bit string from bit `off` on, most significant
    first."""
    j, sh = u.op(Ops.SHR, off, u.k(5)), u.op(Ops.AND, off, u.k(31))
    w = u.words(j, count + 1, table)
    rsh = u.op(Ops.SUB, u.k(32), sh)          # 1..32: a valid 64-bit shift
    return [u.window(w[i], w[i + 1], rsh) for i in range(count)]


def _exponent(u: _U64, bits: UOp, lo: int, hi: int, shift: int) -> UOp:
    """The biased exponent field of float64 bits, clamped to [lo, hi], minus shift: the
    clamp keeps inputs whose result is not selected (small or non-finite) in the table."""
    expo = u.op(Ops.AND, u.op(Ops.SHR, bits, u.k(52)), u.k(0x7FF))
    expo = u.op(Ops.MAX, expo, u.k(lo))
    expo = u.op(Ops.WHERE, u.op(Ops.CMPLT, expo, u.k(hi)), expo, u.k(hi))
    return u.op(Ops.SUB, expo, u.k(shift))


def _payne_hanek32(x: UOp) -> tuple[UOp, UOp, UOp]:
    """(r, 0, q mod 4) with |x| = q*pi/2 + r, |r| <= pi/4, for a float32 value x held in
    float64, any magnitude (Payne & Hanek): |x| = m*2^e with a 24-bit integer m, and
    (m * 2^e * 2/pi) mod 4 = (m * W mod 2^96) / 2^94, W the 96 bits of 2/pi from bit e-2 on."""
    u = _U64(x.shape)
    bits = UOp(Ops.BITCAST, (x, ), dtypes.uint64)
    m = u.op(Ops.SHR, u.op(Ops.OR, u.op(Ops.AND, bits, u.k((1 << 52) - 1)), u.k(1 << 52)),
             u.k(29))
    # e = expo - 1046 is >= 7 where used (|x| > SIN_RANGE); clamped into [2, 104]
    off = u.op(Ops.SUB, _exponent(u, bits, 1046 + 2, 1046 + 104, 1046), u.k(2))
    w2, w1, w0 = _window_words(u, off, 3, _tables()["two_over_pi/8"])
    p0, p1, p2 = (u.op(Ops.MUL, m, w) for w in (w0, w1, w2))
    t1 = u.op(Ops.ADD, u.hi32(p0), u.lo32(p1))
    l1 = u.lo32(t1)
    l2 = u.lo32(u.op(Ops.ADD, u.op(Ops.ADD, u.hi32(t1), u.hi32(p1)), u.lo32(p2)))
    q = u.op(Ops.SHR, l2, u.k(30))
    frac = u.op(Ops.OR, u.op(Ops.SHL, u.op(Ops.AND, l2, u.k((1 << 30) - 1)), u.k(32)), l1)
    b = _B(F64, x.shape)
    f = b.mul(UOp(Ops.CAST, (frac,), dtypes.float64), b.c(2.0 ** -62))       # [0, 1)
    up = b.lt(b.c(0.5), f)
    f = b.where(up, b.sub(f, b.c(1.0)), f)                                    # [-1/2, 1/2]
    q = u.op(Ops.ADD, q, UOp(Ops.CAST, (up,), dtypes.uint64))
    r = b.mul(f, b.c(_tables()["pi"][1]))
    return r, b.c(0.0), UOp(Ops.CAST, (u.op(Ops.AND, q, u.k(3)),), dtypes.int64)


def _split(b: _B, a: UOp) -> tuple[UOp, UOp]:
    """Dekker's split: a = ah + al, each with at most 26 significant bits."""
    t = b.mul(a, b.c(134217729.0))             # 2^27 + 1
    ah = b.sub(t, b.sub(t, a))
    return ah, b.sub(a, ah)


def _two_prod(b: _B, a: UOp, c: UOp) -> tuple[UOp, UOp]:
    """p + e == a*c exactly (Dekker's TwoProduct, no fused multiply-add needed)."""
    p = b.mul(a, c)
    ah, al = _split(b, a)
    ch, cl = _split(b, c)
    e = b.add(b.add(b.add(b.sub(b.mul(ah, ch), p), b.mul(ah, cl)), b.mul(al, ch)),
              b.mul(al, cl))
    return p, e


def _payne_hanek64(x: UOp) -> tuple[UOp, UOp, UOp]:
    """(rh, rl, q mod 4) with |x| = q*pi/2 + rh + rl for a float64 x of any magnitude:
    |x| = m*2^e with a 53-bit m (split 21 + 32 bits so every partial product fits 64 bits),
    W = the 192 bits of 2/pi from bit e-2 on (two zero words in front for negative e), and
    (m*W mod 2^192) / 2^190 holds the quadrant and a 126-bit fraction, turned into a
    double-double and multiplied by pi/2 in double-double."""
    u = _U64(x.shape)
    bits = UOp(Ops.BITCAST, (x,), dtypes.uint64)
    m = u.op(Ops.OR, u.op(Ops.AND, bits, u.k((1 << 52) - 1)), u.k(1 << 52))
    mh, ml = u.op(Ops.SHR, m, u.k(32)), u.lo32(m)
    # e = expo - 1075 >= -22 where used; offset e - 2 + 64 (past the two zero words) >= 40
    off = u.op(Ops.SUB, _exponent(u, bits, 1075 - 22, 2046, 1075), u.k(2 - 64))
    table = [0, 0] + _tables()[f"two_over_pi/{_TWO_OVER_PI_WORDS}"]
    w = list(reversed(_window_words(u, off, 6, table)))      # w[0] least significant
    lo = [u.op(Ops.MUL, ml, wi) for wi in w]                 # < 2^64 each
    hi = [u.op(Ops.MUL, mh, wi) for wi in w]                 # < 2^53 each
    limbs, carry = [], u.k(0)
    for col in range(6):                                     # m*W mod 2^192, base 2^32
        terms = [u.lo32(lo[col]), carry]
        if col >= 1:
            terms += [u.hi32(lo[col - 1]), u.lo32(hi[col - 1])]
        if col >= 2:
            terms.append(u.hi32(hi[col - 2]))
        acc = terms[0]
        for t in terms[1:]:
            acc = u.op(Ops.ADD, acc, t)
        limbs.append(u.lo32(acc))
        carry = u.hi32(acc)
    l5, l4, l3, l2 = limbs[5], limbs[4], limbs[3], limbs[2]
    q = u.op(Ops.SHR, l5, u.k(30))
    a = u.op(Ops.OR, u.op(Ops.SHL, u.op(Ops.AND, l5, u.k((1 << 30) - 1)), u.k(32)), l4)
    c = u.op(Ops.OR, u.op(Ops.SHL, l3, u.k(32)), l2)         # fraction = a/2^62 + c/2^126
    # at or past one half: take 1 - fraction (as a 126-bit integer) and round q up
    up = u.op(Ops.CMPLT, u.k((1 << 61) - 1), a)
    c_neg = u.op(Ops.SUB, u.k(0), c)
    a_neg = u.op(Ops.SUB, u.op(Ops.SUB, u.k(1 << 62), a),
                 UOp(Ops.CAST, (u.op(Ops.CMPNE, c, u.k(0)),), dtypes.uint64))
    a = u.op(Ops.WHERE, up, a_neg, a)
    c = u.op(Ops.WHERE, up, c_neg, c)
    q = u.op(Ops.ADD, q, UOp(Ops.CAST, (up,), dtypes.uint64))
    b = _B(F64, x.shape)
    fa = UOp(Ops.CAST, (a,), dtypes.float64)                 # a rounded; its error exactly:
    ea = u.op(Ops.SUB, a, UOp(Ops.CAST, (fa,), dtypes.uint64))          # (wraps if negative)
    ea_f = UOp(Ops.CAST, (UOp(Ops.BITCAST, (ea,), dtypes.int64),), dtypes.float64)
    fh = b.mul(fa, b.c(2.0 ** -62))
    fl = b.mul(b.add(ea_f, b.mul(UOp(Ops.CAST, (c,), dtypes.float64), b.c(2.0 ** -64))),
               b.c(2.0 ** -62))
    _, p1, p2 = _tables()["pi"]
    ph, pe = _two_prod(b, fh, b.c(p1))
    tail = b.add(pe, b.add(b.mul(fh, b.c(p2)), b.mul(fl, b.c(p1))))
    rh = b.add(ph, tail)
    rl = b.sub(tail, b.sub(rh, ph))
    sign = b.where(up, b.c(-1.0), b.c(1.0))
    return (b.mul(rh, sign), b.mul(rl, sign),
            UOp(Ops.CAST, (u.op(Ops.AND, q, u.k(3)),), dtypes.int64))


def sin(x: UOp) -> UOp:
    """sin(x) for float32 (through float64, one rounding at the end) and float64: Cody-Waite
    reduction up to SIN_RANGE, Payne-Hanek beyond, so every finite input is reduced exactly
    enough (docs/transcendentals.md)."""
    wide = x if x.dtype == dtypes.float64 else UOp(Ops.CAST, (x,), dtypes.float64)
    b = _B(F64, x.shape)
    rh, rl, n = _cody_waite(b, wide)
    hh, hl, hn = (_payne_hanek64 if x.dtype == dtypes.float64 else _payne_hanek32)(wide)
    # Payne-Hanek reduced |x|: sin(-x) = -sin(|x|), i.e. r → -r and q → -q (mod 4)
    neg = b.lt(wide, b.c(0.0))
    hh = b.where(neg, UOp(Ops.NEG, (hh,)), hh)
    hl = b.where(neg, UOp(Ops.NEG, (hl,)), hl)
    hn = b.where(neg, UOp(Ops.AND, (b.sub(b.ci(4), hn), b.ci(3))), hn)
    absx = b.where(neg, UOp(Ops.NEG, (wide,)), wide)
    huge = UOp(Ops.AND, (b.lt(b.c(SIN_RANGE), absx), b.lt(absx, b.c(float("inf")))))
    res = _sin_poly(b, b.where(huge, hh, rh), b.where(huge, hl, rl), b.where(huge, hn, n), wide)
    return res if x.dtype == dtypes.float64 else UOp(Ops.CAST, (res,), x.dtype)
