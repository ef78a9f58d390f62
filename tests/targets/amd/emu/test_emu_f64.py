"""The emulator's float64 VALU ops on the full edge set of operand bits (±0, the smallest and
largest subnormals, ±min normal, ±max, ±inf, quiet and signalling NaNs with payloads, values
whose products overflow or underflow) against a correctly rounded reference written here:
exact rationals (fractions.Fraction) rounded to nearest-even by `round_bits` below, not by
Python's or numpy's float arithmetic; sqrt and rsq by exact comparisons with the midpoints
around the result. A NaN result must be a quiet NaN (kcc's semantics leave NaN payloads
unspecified, docs/semantics.md); every other result must have exactly the expected bits.

Found by the fuzzer (issue 20): `_fma64` raised `OverflowError: integer division result too
large for a float` on a product past the binary64 range; the emulator must never raise on
operand bits.
"""

from __future__ import annotations

import itertools
import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from kcc.encode.amd.operands import SGPR, VGPR, Inst, Special
from kcc.targets.amd.emu.core import WAVE, Memory, Wave, Workgroup, execute

ARCHS = ("gfx1100", "gfx942")
M64 = (1 << 64) - 1
EDGE64 = [
    0x0000000000000000, 0x8000000000000000,           # ±0
    0x0000000000000001, 0x8000000000000001,           # ±smallest subnormal
    0x000FFFFFFFFFFFFF, 0x800FFFFFFFFFFFFF,           # ±largest subnormal
    0x0010000000000000, 0x8010000000000000,           # ±min normal
    0x0018000000000000,                               # 1.5 · min normal
    0x3FF0000000000000, 0xBFF0000000000000,           # ±1
    0x3FF0000000000001, 0x3FF8000000000000,           # 1 + ulp, 1.5
    0x3FD5555555555555, 0xC008000000000000,           # 1/3, -3
    0x5FF0000000000000, 0xA000000000000000,           # 2^512, -2^-511
    0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,           # ±max
    0x7FE0000000000000,                               # 2^1023
    0x7FF0000000000000, 0xFFF0000000000000,           # ±inf
    0x7FF8000000000000, 0x7FF8000000000123,           # quiet NaNs (with a payload)
    0xFFF8000000000456,                               # negative quiet NaN
    0x7FF0000000000001, 0xFFF4000000000789,           # signalling NaNs
]
EDGE32 = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000,
          0xBFC00000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
          0x7FA00001, 0xFFC00123, 0x3EAAAAAB]
INTS = [0, 1, -1, 2, 31, 32, -32, 52, 53, -1022, -1074, -1075, 1023, 1024, 2046, -2098,
        2 ** 31 - 1, -2 ** 31]


# -- the reference ---------------------------------------------------------------------------
class Fmt:
    """An IEEE binary format: p significand bits (with the implicit one), exponent field
    width, so emin = 2 - 2^(w-1) and emax = 2^(w-1) - 1."""

    def __init__(self, p: int, w: int):
        self.p, self.w = p, w
        self.bias = (1 << (w - 1)) - 1
        self.emin, self.emax = 1 - self.bias, self.bias
        self.sign = 1 << (p - 1 + w)
        self.inf = ((1 << w) - 1) << (p - 1)


F64, F32 = Fmt(53, 11), Fmt(24, 8)


def is_nan(b: int, f: Fmt = F64) -> bool:
    return (b & ~f.sign) > f.inf


def value(b: int, f: Fmt = F64) -> Fraction:
    """The exact value of finite bits."""
    e = (b & ~f.sign) >> (f.p - 1)
    m = b & ((1 << (f.p - 1)) - 1)
    v = Fraction(m, 1 << (f.p - 1)) * Fraction(2) ** (f.emin if e == 0 else e - f.bias)
    if e:
        v += Fraction(2) ** (e - f.bias)
    return -v if b & f.sign else v


def round_bits(q: Fraction, f: Fmt = F64, zero_sign: int = 0) -> int:
    """q rounded to nearest, ties to even, in format f: a signed zero when it rounds to
    zero (the sign of q), ±inf past the largest finite number."""
    sign = f.sign if q < 0 else 0
    a = abs(q)
    if a == 0:
        return zero_sign
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, f.emin)                          # subnormals share emin's quantum
    quantum = Fraction(2) ** (e - f.p + 1)
    n = math.floor(a / quantum)
    rest = a / quantum - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2):
        n += 1
    if n == 1 << f.p:                           # rounded up into the next binade
        n, e = n >> 1, e + 1
    if e > f.emax:
        return sign | f.inf
    if n < 1 << (f.p - 1):                      # subnormal (or zero)
        return sign | n
    return sign | ((e + f.bias) << (f.p - 1)) | (n - (1 << (f.p - 1)))


NAN = "nan"   # the expected result is a NaN (quiet)


def ref_add(x: int, y: int) -> int | str:
    if is_nan(x) or is_nan(y):
        return NAN
    xi, yi = (x & ~F64.sign) == F64.inf, (y & ~F64.sign) == F64.inf
    if xi and yi:
        return x if x == y else NAN
    if xi or yi:
        return x if xi else y
    q = value(x) + value(y)
    if q == 0:
        return F64.sign if x == y == F64.sign else 0       # -0 + -0 = -0, else +0
    return round_bits(q)


def _product(x: int, y: int) -> tuple[str, Fraction | int]:
    """('nan',), ('inf', sign) or ('val', exact product) of x·y."""
    sign = (x ^ y) & F64.sign
    xi, yi = (x & ~F64.sign) == F64.inf, (y & ~F64.sign) == F64.inf
    xz, yz = (x & ~F64.sign) == 0, (y & ~F64.sign) == 0
    if (xi and yz) or (yi and xz):
        return "nan", 0
    if xi or yi:
        return "inf", sign
    return "val", value(x) * value(y)


def ref_mul(x: int, y: int) -> int | str:
    if is_nan(x) or is_nan(y):
        return NAN
    kind, p = _product(x, y)
    if kind == "nan":
        return NAN
    sign = (x ^ y) & F64.sign
    if kind == "inf":
        return sign | F64.inf
    return round_bits(p, zero_sign=sign)


def ref_fma(x: int, y: int, z: int) -> int | str:
    if is_nan(x) or is_nan(y) or is_nan(z):
        return NAN
    kind, p = _product(x, y)
    zi = (z & ~F64.sign) == F64.inf
    if kind == "nan":
        return NAN
    if kind == "inf":
        return NAN if zi and (z & F64.sign) != p else p | F64.inf
    if zi:
        return z
    psign = (x ^ y) & F64.sign
    if p == 0:                                  # an exactly zero product
        if (z & ~F64.sign) == 0:
            return F64.sign if psign and z == F64.sign else 0
        return z
    q = p + value(z)
    return 0 if q == 0 else round_bits(q)


def ref_rcp(x: int) -> int | str:
    if is_nan(x):
        return NAN
    if (x & ~F64.sign) == 0:
        return (x & F64.sign) | F64.inf
    if (x & ~F64.sign) == F64.inf:
        return x & F64.sign
    return round_bits(1 / value(x))


def ref_round_int(name: str, x: int) -> int | str:
    if is_nan(x):
        return NAN
    if (x & ~F64.sign) in (0, F64.inf):
        return x
    v = value(x)
    n = {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc,
         "rndne": round}[name](v)               # round(Fraction): half to even
    return round_bits(Fraction(n), zero_sign=x & F64.sign)


def ref_ldexp(x: int, e: int) -> int | str:
    if is_nan(x):
        return NAN
    if (x & ~F64.sign) in (0, F64.inf):
        return x
    e = max(-2300, min(2300, e))                # past these the result is 0 or inf anyway
    return round_bits(value(x) * Fraction(2) ** e, zero_sign=x & F64.sign)


def ref_minmax(name: str, x: int, y: int) -> int | str:
    """IEEE mode (compute kernels): a signalling NaN operand gives a NaN, a quiet NaN the
    other operand; -0 < +0."""
    def snan(b: int) -> bool:
        return is_nan(b) and not b >> 51 & 1
    if snan(x) or snan(y) or (is_nan(x) and is_nan(y)):
        return NAN
    if is_nan(x):
        return y
    if is_nan(y):
        return x

    def key(b: int) -> tuple:
        if (b & ~F64.sign) == F64.inf:
            return (1 if not b & F64.sign else -1, 0, 0)
        return (0, value(b), 0 if b & F64.sign else 1)
    lo, hi = sorted([x, y], key=key)
    return hi if name == "max" else lo


# -- running one op in the emulator ------------------------------------------------------------
def emulate(arch: str, name: str, cols: list[list[int]], wide: list[bool], dst_wide: bool,
            mods: tuple = ()) -> list[int]:
    """Run `name` on every row of the operand columns (bit patterns; wide: a VGPR pair),
    a wave at a time; the destination's bits per row."""
    lanes = WAVE[arch]
    n = len(cols[0])
    out: list[int] = []
    for start in range(0, n, lanes):
        k = min(lanes, n - start)
        w = Wave(arch, 16, lanes)
        w.set_exec((1 << k) - 1)
        ops: list = [VGPR(0, 2 if dst_wide else 1)]
        reg = 2
        for col, wd in zip(cols, wide):
            vals = np.array(col[start:start + k], np.uint64)
            w.v[reg, :k] = (vals & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            if wd:
                w.v[reg + 1, :k] = (vals >> np.uint64(32)).astype(np.uint32)
            ops.append(VGPR(reg, 2 if wd else 1))
            reg += 2
        execute(w, Inst(name, tuple(ops), tuple(mods)), Workgroup(np.zeros(4, np.uint8),
                                                                  Memory()))
        lo = w.v[0, :k].astype(np.uint64)
        hi = w.v[1, :k].astype(np.uint64) if dst_wide else np.zeros(k, np.uint64)
        out += (lo | hi << np.uint64(32)).tolist()
    return out


def check(rows: list[tuple], got: list[int], want: list, f: Fmt = F64, what: str = "") -> None:
    bad = []
    for r, g, e in zip(rows, got, want):
        if e == NAN:
            ok = is_nan(g, f) and (g >> (f.p - 2)) & 1        # a quiet NaN
        else:
            ok = g == e
        if not ok:
            bad.append(f"{[hex(v) for v in r]} -> {g:#x}, want {e if e == NAN else hex(e)}")
    assert not bad, f"{what}: {len(bad)} of {len(rows)} wrong, e.g.\n" + "\n".join(bad[:8])


def _cols(rows: list[tuple]) -> list[list[int]]:
    return [list(c) for c in zip(*rows)]


# -- the tests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ARCHS)
def test_regression_fma64_never_raises_and_rounds_once_on_every_edge_triple(arch: str) -> None:
    """v_fma_f64 over all 27^3 edge triples: before the fix a product past binary64's range
    (2^1023 · 2^512, say) raised OverflowError from float(Fraction)."""
    rows = list(itertools.product(EDGE64, repeat=3))
    got = emulate(arch, "v_fma_f64", _cols(rows), [True] * 3, True)
    check(rows, got, [ref_fma(*r) for r in rows], what="v_fma_f64")


@pytest.mark.parametrize("arch", ARCHS)
def test_fma64_rounds_sums_near_the_overflow_and_underflow_thresholds(arch: str) -> None:
    """Exact sums just past max (round down to max or up to inf) and half an ulp of the
    smallest subnormal (ties to even: 0, or up when the product makes it more than half)."""
    big = [0x7FEFFFFFFFFFFFFF, 0x7CA0000000000000, 0x7C9FFFFFFFFFFFFF, 0x3FF0000000000001,
           0x3FEFFFFFFFFFFFFF, 0x0000000000000001, 0x3CA0000000000000, 0x3C9FFFFFFFFFFFFF,
           0x1FF0000000000000, 0x1FEFFFFFFFFFFFFF, 0x2000000000000001, 0x8000000000000001]
    rows = list(itertools.product(big, repeat=3))
    got = emulate(arch, "v_fma_f64", _cols(rows), [True] * 3, True)
    check(rows, got, [ref_fma(*r) for r in rows], what="v_fma_f64 thresholds")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["v_add_f64", "v_mul_f64", "v_max_f64", "v_min_f64"])
def test_binary_f64_ops_on_every_edge_pair(arch: str, name: str) -> None:
    rows = list(itertools.product(EDGE64, repeat=2))
    got = emulate(arch, name, _cols(rows), [True, True], True)
    ref = {"v_add_f64": ref_add, "v_mul_f64": ref_mul,
           "v_max_f64": lambda x, y: ref_minmax("max", x, y),
           "v_min_f64": lambda x, y: ref_minmax("min", x, y)}[name]
    check(rows, got, [ref(*r) for r in rows], what=name)


@pytest.mark.parametrize("arch", ARCHS)
def test_v_add_f64_with_a_negated_operand_subtracts(arch: str) -> None:
    """kcc's float64 SUB: v_add_f64 with neg on src1 (the sign bit flipped, NaNs too)."""
    rows = list(itertools.product(EDGE64, repeat=2))
    got = emulate(arch, "v_add_f64", _cols(rows), [True, True], True, (("neg", (0, 1, 0)),))
    check(rows, got, [ref_add(x, y ^ F64.sign) for x, y in rows], what="v_add_f64 -src1")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["v_rcp_f64", "v_floor_f64", "v_ceil_f64", "v_trunc_f64",
                                  "v_rndne_f64"])
def test_unary_f64_ops_on_every_edge_value(arch: str, name: str) -> None:
    rows = [(x,) for x in EDGE64 + [0x3FE0000000000000, 0xBFE0000000000000, 0x4004000000000000,
                                    0xC00C000000000000, 0x4330000000000001, 0xC32FFFFFFFFFFFFF]]
    got = emulate(arch, name, _cols(rows), [True], True)
    op = name[2:-4]
    want = [ref_rcp(x) if op == "rcp" else ref_round_int(op, x) for (x,) in rows]
    check(rows, got, want, what=name)


def _midpoint_ok(name: str, x: int, g: int) -> bool:
    """Whether g is sqrt(x) (or 1/sqrt(x)) rounded to nearest, by exact comparisons of the
    squares of the midpoints between g and its neighbours with x."""
    if is_nan(x) or (x & F64.sign and x & ~F64.sign):
        return is_nan(g) and bool(g >> 51 & 1)
    if (x & ~F64.sign) == 0:
        return g == (x if name == "sqrt" else (x & F64.sign) | F64.inf)
    if x == F64.inf:
        return g == (F64.inf if name == "sqrt" else 0)
    if is_nan(g) or (g & ~F64.sign) in (0, F64.inf) or g & F64.sign:
        return False
    v, r = value(x), value(g)
    up, down = value(g + 1), value(g - 1)
    lo, hi = (r + down) / 2, (r + up) / 2
    if name == "sqrt":
        return lo * lo <= v <= hi * hi
    return lo * lo * v <= 1 <= hi * hi * v


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["sqrt", "rsq"])
def test_sqrt_and_rsq_f64_are_correctly_rounded(arch: str, name: str) -> None:
    """v_rsq_f64 was 1/np.sqrt(a), two roundings (off by an ulp on 3.0, 1/3, 2^-1074...)."""
    extra = [0x4008000000000000, 0x4000000000000000, 0x3FF0000000000003, 0x7FE1234567890ABC,
             0x0000000000000003, 0x4059000000000000, 0x3FB999999999999A]
    xs = EDGE64 + extra + [struct.unpack("<Q", struct.pack("<d", float(k)))[0]
                           for k in range(2, 200)]
    got = emulate(arch, f"v_{name}_f64", [xs], [True], True)
    bad = [hex(x) for x, g in zip(xs, got) if not _midpoint_ok(name, x, g)]
    assert not bad, f"v_{name}_f64 not correctly rounded for {bad[:8]}"


@pytest.mark.parametrize("arch", ARCHS)
def test_v_ldexp_f64_on_edge_values_and_exponents(arch: str) -> None:
    rows = [(x, e & 0xFFFFFFFF) for x in EDGE64 for e in INTS]
    got = emulate(arch, "v_ldexp_f64", _cols(rows), [True, False], True)
    want = [ref_ldexp(x, e - (1 << 32) if e >> 31 else e) for x, e in rows]
    check(rows, got, want, what="v_ldexp_f64")


@pytest.mark.parametrize("arch", ARCHS)
def test_f64_conversions_on_edge_values(arch: str) -> None:
    rows = [(x,) for x in EDGE64]
    got = emulate(arch, "v_cvt_f32_f64", _cols(rows), [True], False)
    want = []
    for (x,) in rows:
        if is_nan(x):
            want.append(NAN)
        elif (x & ~F64.sign) == F64.inf:
            want.append(F32.inf | (F32.sign if x & F64.sign else 0))
        else:
            want.append(round_bits(value(x), F32, F32.sign if x & F64.sign else 0))
    check(rows, got, want, F32, "v_cvt_f32_f64")
    rows32 = [(x,) for x in EDGE32]
    got = emulate(arch, "v_cvt_f64_f32", _cols(rows32), [False], True)
    want = [NAN if is_nan(x, F32) else
            (F64.inf | (F64.sign if x & F32.sign else 0)) if (x & ~F32.sign) == F32.inf else
            round_bits(value(x, F32), zero_sign=F64.sign if x & F32.sign else 0)
            for (x,) in rows32]
    check(rows32, got, want, what="v_cvt_f64_f32")
    ints = [(v & 0xFFFFFFFF,) for v in INTS + [2 ** 32 - 1, 2 ** 31]]
    for name, signed in (("v_cvt_f64_i32", True), ("v_cvt_f64_u32", False)):
        got = emulate(arch, name, _cols(ints), [False], True)
        want = [round_bits(Fraction(v - (1 << 32) if signed and v >> 31 else v))
                for (v,) in ints]
        check(ints, got, want, what=name)
    for name, lo, hi in (("v_cvt_i32_f64", -2 ** 31, 2 ** 31 - 1),
                         ("v_cvt_u32_f64", 0, 2 ** 32 - 1)):
        got = emulate(arch, name, _cols(rows), [True], False)
        want = []
        for (x,) in rows:
            if is_nan(x):
                want.append(0)
            elif (x & ~F64.sign) == F64.inf:
                want.append((lo if x & F64.sign else hi) & 0xFFFFFFFF)
            else:
                want.append(max(lo, min(hi, math.trunc(value(x)))) & 0xFFFFFFFF)
        check(rows, got, want, what=name)


CMP = {"f": lambda o, a, b: False, "lt": lambda o, a, b: o and a < b,
       "eq": lambda o, a, b: o and a == b, "le": lambda o, a, b: o and a <= b,
       "gt": lambda o, a, b: o and a > b, "lg": lambda o, a, b: o and a != b,
       "ge": lambda o, a, b: o and a >= b, "o": lambda o, a, b: o,
       "u": lambda o, a, b: not o, "nge": lambda o, a, b: not (o and a >= b),
       "nlg": lambda o, a, b: not (o and a != b), "ngt": lambda o, a, b: not (o and a > b),
       "nle": lambda o, a, b: not (o and a <= b), "neq": lambda o, a, b: not (o and a == b),
       "nlt": lambda o, a, b: not (o and a < b), "t": lambda o, a, b: True}


def _ordered_key(b: int) -> Fraction | float:
    if (b & ~F64.sign) == F64.inf:
        return -math.inf if b & F64.sign else math.inf
    return value(b)


@pytest.mark.parametrize("arch", ARCHS)
def test_f64_compares_and_class_on_every_edge_pair(arch: str) -> None:
    rows = list(itertools.product(EDGE64, repeat=2))
    lanes = WAVE[arch]
    mask = Special("vcc_lo" if lanes == 32 else "vcc")
    for c, pred in CMP.items():
        got: list[bool] = []
        for start in range(0, len(rows), lanes):
            chunk = rows[start:start + lanes]
            w = Wave(arch, 8, lanes)
            w.set_exec((1 << len(chunk)) - 1)
            for reg, col in ((2, [r[0] for r in chunk]), (4, [r[1] for r in chunk])):
                vals = np.array(col, np.uint64)
                w.v[reg, :len(chunk)] = (vals & np.uint64(0xFFFFFFFF)).astype(np.uint32)
                w.v[reg + 1, :len(chunk)] = (vals >> np.uint64(32)).astype(np.uint32)
            execute(w, Inst(f"v_cmp_{c}_f64", (mask, VGPR(2, 2), VGPR(4, 2))),
                    Workgroup(np.zeros(4, np.uint8), Memory()))
            m = w.sread(mask, 2 if lanes == 64 else 1)
            got += [bool(m >> k & 1) for k in range(len(chunk))]
        want = [pred(not (is_nan(x) or is_nan(y)), *( (_ordered_key(x), _ordered_key(y))
                                                       if not (is_nan(x) or is_nan(y))
                                                       else (0, 0)))
                for x, y in rows]
        bad = [(hex(x), hex(y)) for (x, y), g, e in zip(rows, got, want) if g != e]
        assert not bad, f"v_cmp_{c}_f64 wrong on {bad[:6]}"
    classes = [0 if is_nan(x) and not x >> 51 & 1 else 1 if is_nan(x) else
               (2 if x & F64.sign else 9) if (x & ~F64.sign) == F64.inf else
               (5 if x & F64.sign else 6) if (x & ~F64.sign) == 0 else
               (4 if x & F64.sign else 7) if (x & ~F64.sign) < 1 << 52 else
               (3 if x & F64.sign else 8) for x in EDGE64]
    sdst = SGPR(8, 2) if lanes == 64 else SGPR(8)
    for bit in range(10):
        w = Wave(arch, 8, lanes)
        w.set_exec((1 << len(EDGE64)) - 1)
        vals = np.array(EDGE64, np.uint64)
        w.v[2, :len(EDGE64)] = (vals & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        w.v[3, :len(EDGE64)] = (vals >> np.uint64(32)).astype(np.uint32)
        w.v[4, :len(EDGE64)] = 1 << bit
        execute(w, Inst("v_cmp_class_f64_e64", (sdst, VGPR(2, 2), VGPR(4))),
                Workgroup(np.zeros(4, np.uint8), Memory()))
        m = w.sread(sdst, 2 if lanes == 64 else 1)
        assert [bool(m >> k & 1) for k in range(len(EDGE64))] == [c == bit for c in classes]


def _any_bits(t: str, n: int, rng: np.random.Generator) -> list[int]:
    """n operand values of type letter t: the edge patterns first, then random bits."""
    wide = t in "FQq"
    edge = (EDGE64 if t == "F" else EDGE32 if t in "fh" else
            [v & M64 for v in INTS] if wide else [v & 0xFFFFFFFF for v in INTS])
    rand = rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + \
        rng.integers(0, 2, n, dtype=np.uint64)
    if not wide:
        rand &= np.uint64(0xFFFFFFFF)
    return [int(v) for v in (edge + [int(r) for r in rand])[:n]]


@pytest.mark.parametrize("arch", ARCHS)
def test_every_valu_op_accepts_any_operand_bits(arch: str) -> None:
    """No VALU op of the emulator raises on operand bits (NaN payloads, subnormals, ±inf,
    INT_MIN, shift amounts past the width...): every op vop() defines, on edge values and
    random bits in every source."""
    from kcc.targets.amd.emu.valu import SIGNATURES
    rng = np.random.default_rng(20)
    lanes = WAVE[arch]
    for name, sig in sorted(SIGNATURES.items()):
        dst, srcs = sig.split(":")
        n = 3 * lanes
        cols = [_any_bits(t, n, rng) for t in srcs]
        if len(srcs) > 1:                       # edge values against each other too
            cols = [c[k:] + c[:k] for k, c in enumerate(cols)]
        emulate(arch, name, cols, [t in "FQq" for t in srcs], dst in "FQq")
