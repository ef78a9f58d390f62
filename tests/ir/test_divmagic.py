"""kcc.ir.divmagic against Python's exact integer division (C truncation for signed)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcc.ir.divmagic import is_pow2, magic, mulhi, plan, run_plan


def tdiv(n: int, d: int) -> int:
    """C division: truncate toward zero."""
    q = abs(n) // abs(d)
    return q if (n >= 0) == (d >= 0) else -q


def _divisors(limit: int) -> list[int]:
    return [d for d in range(3, limit) if not is_pow2(d)]


@pytest.mark.parametrize("bits", [8, 12])
def test_magic_exhaustive_small_widths(bits):
    """Every divisor and every dividend of magnitude below 2^bits: the floor identity for
    n >= 0 and floor + 1 = trunc for n < 0."""
    m = (1 << bits) - 1
    for d in _divisors(1 << bits):
        mul, p = magic(d, m)
        assert mul.bit_length() <= bits + 1
        for n in range(-m, m + 1):
            got = (n * mul) >> p
            assert (got if n >= 0 else got + 1) == tdiv(n, d), (d, n, mul, p)


@pytest.mark.parametrize("width,signed", [(32, False), (32, True), (64, False), (64, True)])
def test_plan_small_ranges_exhaustive(width, signed):
    """Plans for small dividend ranges at full width, every dividend of the range."""
    for d in _divisors(300):
        lo, hi = (-700, 700) if signed else (0, 1400)
        pl = plan(d, lo, hi, width, signed)
        assert pl is not None and pl.kind == "wide"
        for n in range(lo, hi + 1):
            assert run_plan(pl, n) == tdiv(n, d), (d, n, pl)


def _edges(width: int, signed: bool) -> list[int]:
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    base = [lo, lo + 1, lo + 2, -2, -1, 0, 1, 2, hi - 2, hi - 1, hi]
    return [v for v in base if lo <= v <= hi]


def _full(width: int, signed: bool) -> tuple[int, int]:
    if signed:
        return -(1 << (width - 1)), (1 << (width - 1)) - 1
    return 0, (1 << width) - 1


@pytest.mark.parametrize("width,signed", [(32, False), (32, True), (64, False), (64, True)])
def test_plan_full_range_divisors(width, signed):
    """Full-range plans exist and are exact for many divisors (small, near powers of two,
    large), on the edge dividends, multiples of d and their neighbours, and random ones."""
    lo, hi = _full(width, signed)
    rnd = random.Random(width * 2 + signed)
    ds = _divisors(70) + [641, 1000, 6700417, (1 << 31) - 1, (1 << 31) + 1, 10**9 + 7]
    ds += [(1 << k) + j for k in range(3, width - 1, 5) for j in (-1, 1)]
    ds += [rnd.randrange(3, hi) for _ in range(40)]
    ds += [hi if hi % 2 else hi - 1]
    kinds = set()
    for d in ds:
        if is_pow2(d) or d > hi:
            continue
        pl = plan(d, lo, hi, width, signed)
        assert pl is not None, d
        kinds.add(pl.kind)
        ns = _edges(width, signed) + [rnd.randint(lo, hi) for _ in range(60)]
        for k in (1, 2, rnd.randrange(1, max(2, hi // d))):
            ns += [v for v in (k * d - 1, k * d, k * d + 1, -k * d - 1, -k * d, -k * d + 1)
                   if lo <= v <= hi]
        for n in ns:
            assert run_plan(pl, n) == tdiv(n, d), (d, n, pl)
    want = {(32, False): {"wide", "wide_add"}, (32, True): {"wide"},
            (64, False): {"hi", "hi_add"}, (64, True): {"hi"}}[width, signed]
    assert want <= kinds


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_plan_random_64(data):
    """Random divisor, random range [lo, hi] and a dividend in it (64-bit, both signs)."""
    signed = data.draw(st.booleans())
    flo, fhi = _full(64, signed)
    d = data.draw(st.integers(3, fhi))
    if is_pow2(d):
        d += 1
    a = data.draw(st.integers(flo, fhi))
    b = data.draw(st.integers(flo, fhi))
    lo, hi = min(a, b), max(a, b)
    n = data.draw(st.integers(lo, hi))
    pl = plan(d, lo, hi, 64, signed)
    assert pl is not None
    assert run_plan(pl, n) == tdiv(n, d)


@settings(max_examples=300, deadline=None)
@given(st.integers(3, (1 << 32) - 1), st.integers(-(1 << 31), (1 << 32) - 1), st.booleans(),
       st.booleans())
def test_plan_random_32(d, n, signed, wide):
    """Random 32-bit divisor and dividend, full-range plans (wide, and high-half only)."""
    lo, hi = _full(32, signed)
    if is_pow2(d) or d > hi:
        return
    n = max(lo, min(hi, n))
    pl = plan(d, lo, hi, 32, signed, wide)
    assert pl is not None
    assert run_plan(pl, n) == tdiv(n, d)


@pytest.mark.parametrize("signed", [False, True])
def test_plan_high_half_32_lanes(signed):
    """The high-half-only plans of 32-bit lanes (no 64-bit multiply) for many divisors, edge,
    multiple and random dividends, full range and a small non-negative range."""
    rnd = random.Random(5 + signed)
    lo, hi = _full(32, signed)
    ds = _divisors(300) + [641, 6700417, (1 << 31) - 1, 10 ** 9 + 7]
    ds += [rnd.randrange(3, hi) for _ in range(40)]
    kinds = set()
    for d in ds:
        if is_pow2(d):
            continue
        for rlo, rhi in ((lo, hi), (0, 5000)):
            pl = plan(d, rlo, rhi, 32, signed, wide=False)
            assert pl is not None and pl.kind in ("hi", "hi_add"), (d, pl)
            kinds.add(pl.kind)
            ns = [v for v in _edges(32, signed) if rlo <= v <= rhi]
            ns += [rnd.randint(rlo, rhi) for _ in range(40)]
            ns += [v for v in (d - 1, d, d + 1, -d, -d - 1, -d + 1) if rlo <= v <= rhi]
            for n in ns:
                assert run_plan(pl, n) == tdiv(n, d), (d, n, pl)
    assert kinds == ({"hi"} if signed else {"hi", "hi_add"})


def test_mulhi_model():
    """The high half of the product, signed and unsigned, at a few widths."""
    assert mulhi(-1, -1, 64, True) == 0
    assert mulhi(-1, 1, 64, True) == -1
    assert mulhi((1 << 64) - 1, (1 << 64) - 1, 64, False) == (1 << 64) - 2
    assert mulhi(-(1 << 63), -(1 << 63), 64, True) == 1 << 62
    for a in range(-128, 128):
        for b in (-128, -77, -1, 0, 1, 3, 127):
            assert mulhi(a, b, 8, True) == (a * b) >> 8
            assert mulhi(a & 255, b & 255, 8, False) == ((a & 255) * (b & 255)) >> 8


def test_plan_refuses():
    """Powers of two, 0, 1 and negative divisors are the caller's."""
    for d in (0, 1, 2, 4, 1 << 40, -3):
        assert plan(d, 0, 100, 64, False) is None
