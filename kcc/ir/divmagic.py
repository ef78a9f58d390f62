"""Integer division by a constant as a multiply by a "magic" reciprocal and shifts.

Pure functions on Python ints; kcc/passes/divconst.py builds UOps from a `DivPlan`.

Facts used (Granlund & Montgomery, "Division by invariant integers using multiplication",
PLDI 1994; Warren, "Hacker's Delight", 2nd ed., chapter 10), restated for a dividend known
to lie in [lo, hi] and a divisor d >= 2 that is not a power of two:

- Let M = ceil(2^p / d) and e = M·d - 2^p (0 < e < d). For 0 <= n <= m with e·m < 2^p,
  floor(n·M / 2^p) = floor(n / d): write n = q·d + r (0 <= r < d); then
  n·M / 2^p = n/d + n·e/(d·2^p) and r + n·e/2^p < r + 1 <= d.
- For -m <= n < 0 with e·m < 2^p, floor(n·M / 2^p) + 1 = trunc(n / d): with k = -n,
  k·M / 2^p = k/d + k·e/(d·2^p) lies strictly above k/d (e > 0) and at most
  floor(k/d) + (r + 1)/d <= floor(k/d) + 1, so its ceiling is floor(k/d) + 1 and the floor
  of its negation is -(floor(k/d) + 1).
- The smallest p with e·m < 2^p gives the smallest multiplier; M has at most
  bit_length(m) + 1 bits (p = bit_length(m) + ceil(log2 d) always qualifies, as e < d).

The quotient of a w-bit dividend then needs the product n·M of up to 2w + 1 bits. A plan says
how to compute floor(n·M / 2^p) from w-bit and 2w-bit (or high-half) operations that wrap:

- "wide": (X(n) · M) >> p in a 64-bit type X (X = uint64, or int64 for a signed dividend
  with arithmetic shift), the product bounded by 2^64 (unsigned) or 2^63 (signed) so nothing
  wraps. A 32-bit dividend always fits when M < 2^32; a 64-bit one only for a small range.
- "wide_add" (unsigned 32-bit, 2^32 <= M < 2^33): with M' = M - 2^32,
  t = (uint64(n)·M') >> 32 and q = (t + n) >> (p - 32) (t + n < 2^33: no wrap).
- "hi" (64-bit, or 32-bit vector lanes; w the width): t = mulhi(n, M·2^(w-p) or M) — the
  high w bits of the 2w-bit product, unsigned or signed — then t >> (p - w). A signed
  multiplier in [2^(w-1), 2^w) is used as M - 2^w and n added back
  (mulhi_s(n, M - 2^w) = floor(n·M / 2^w) - n; the sum wraps but the exact value fits). An
  unsigned multiplier in [2^w, 2^(w+1)) ("hi_add") is used as M - 2^w and the add done without
  overflow as ((n - t) >> 1) + t, which is floor((n + t) / 2) as t <= n.
- A signed dividend that may be negative adds 1 where n < 0: q - (n >> (w - 1)).
"""

from __future__ import annotations

from kcc.record import record

KINDS = ("wide", "wide_add", "hi", "hi_add")


def is_pow2(d: int) -> bool:
    """d is a positive power of two."""
    return d > 0 and d & (d - 1) == 0


def magic(d: int, m: int) -> tuple[int, int]:
    """(M, p): the smallest p and M = ceil(2^p / d) with e·m < 2^p (module docstring), so
    that floor(n·M / 2^p) = floor(n / d) for 0 <= n <= m (and +1 gives trunc for -m <= n < 0).

    d >= 2 and not a power of two; m >= 1."""
    if d < 2 or is_pow2(d):
        raise ValueError(f"magic: divisor {d} is below 2 or a power of two")
    m = max(m, 1)
    p = 0
    while True:
        mul = -(-(1 << p) // d)
        if (mul * d - (1 << p)) * m < (1 << p):
            return mul, p
        p += 1


@record(frozen=True)
class DivPlan:
    """How to compute trunc(n / d) for d >= 2 not a power of two (module docstring).

    kind: "wide", "wide_add", "hi" or "hi_add"; mul: the multiplier as the operation takes it
    (a non-negative int below 2^64: for "hi" with signed, the caller reinterprets it as int64);
    shift: the right shift after the multiply (for "wide": of the 64-bit product; "wide_add":
    of t + n; "hi": of the high half; "hi_add": of ((n - t) >> 1) + t); add_n: (signed "hi")
    add n to the high half; fix_sign: subtract n >> (w - 1) at the end."""

    kind: str
    mul: int
    shift: int
    width: int
    signed: bool
    add_n: bool = False
    fix_sign: bool = False


def plan(d: int, lo: int, hi: int, width: int, signed: bool,
         wide: bool = True) -> DivPlan | None:
    """The plan for trunc(n / d), n in [lo, hi] of a `width`-bit type (32 or 64), or None when
    none of the forms applies (the caller keeps its division). wide=False: only the high-half
    forms at `width` ("hi", "hi_add": vector lanes, which have no wider multiply)."""
    if d < 2 or is_pow2(d) or width not in (32, 64):
        return None
    if not signed:
        lo = max(lo, 0)
    neg = lo < 0
    m = max(hi, -lo, 1)
    mul, p = magic(d, m)
    limit = (1 << 63) if signed else (1 << 64)
    if wide and m * mul < limit:  # the exact product fits a 64-bit value: one MUL, one shift
        return DivPlan("wide", mul, p, width, signed, fix_sign=neg)
    if wide and width == 32:
        if not signed and mul < (1 << 33) and p >= 32:
            return DivPlan("wide_add", mul - (1 << 32), p - 32, width, signed)
        return None
    w = width
    if p < w:                     # scale to a high-half multiply (exact: a left shift)
        mul, p = mul << (w - p), w
    if signed:
        if mul >= (1 << w):
            return None
        return DivPlan("hi", mul, p - w, width, signed, add_n=mul >= (1 << (w - 1)),
                       fix_sign=neg)
    if mul < (1 << w):
        return DivPlan("hi", mul, p - w, width, signed)
    if mul < (1 << (w + 1)) and p >= w + 1:
        return DivPlan("hi_add", mul - (1 << w), p - w - 1, width, signed)
    return None


# -- an exact model of the plans with wrapping operations (the tests' oracle side) ----------

def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def mulhi(a: int, b: int, bits: int, signed: bool) -> int:
    """The high `bits` of the exact 2·bits-bit product of a and b read as `bits`-bit values
    (signed or unsigned), as a `bits`-bit value of the same signedness."""
    a, b = _wrap(a, bits, signed), _wrap(b, bits, signed)
    return _wrap((a * b) >> bits, bits, signed)


def run_plan(pl: DivPlan, n: int) -> int:
    """trunc(n / d) by the plan's sequence of wrapping operations (n a width-bit value)."""
    w, s = pl.width, pl.signed
    if pl.kind == "wide":
        # the wide type is 64 bits; a 64-bit dividend has no wider type: the product must fit
        prod = _wrap(n * pl.mul, 64, s)
        q = _wrap(prod >> pl.shift, w, s)
    elif pl.kind == "wide_add":
        t = _wrap(n * pl.mul, 64, False) >> 32
        q = _wrap((t + n) >> pl.shift, w, False)
    elif pl.kind == "hi":
        t = mulhi(n, pl.mul, w, s)
        if pl.add_n:
            t = _wrap(t + n, w, s)
        q = t >> pl.shift
    else:   # hi_add
        t = mulhi(n, pl.mul, w, False)
        q = (((n - t) >> 1) + t) >> pl.shift
    if pl.fix_sign:
        q = _wrap(q - (n >> (w - 1)), w, s)
    return q
