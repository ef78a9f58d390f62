"""kcc/ir/numerics.py `fma` in float64: one rounding of a*b + c, for vectors and for a
scalar MULACC's 0-d operands, including the operands it settles with exact rationals (zeros,
non-finite values, extreme exponents). Regression: a scalar float64 MULACC with a zero
operand stopped the interpreter (np.nonzero of a 0-d array; found by
tests/fuzz/test_fuzz_x86.py's fp-contract test with KCC_FUZZ_EXAMPLES=250, seed 259)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kcc.ir.dtype import dtypes
from kcc.ir.numerics import fma

CASES = [(0.0, 3.0, 1.5), (2.0, 0.0, -0.0), (1e300, 1e300, -np.inf), (np.nan, 1.0, 2.0),
         (1.0 + 2.0 ** -52, 1.0 - 2.0 ** -53, -1.0), (3.0, 7.0, 0.1), (1e-310, 1e10, 0.0)]


def _want(a: float, b: float, c: float) -> float:
    """a*b + c rounded once: exact rationals where finite, else IEEE's special values."""
    if not (np.isfinite(a) and np.isfinite(b)) or a * b == 0 and c == 0:
        return a * b + c            # (signed zeros and non-finite products as IEEE's)
    if not np.isfinite(c):
        return c                    # a finite product, however large, beside ±inf
    return float(Fraction(a) * Fraction(b) + Fraction(c))


@pytest.mark.parametrize("a,b,c", CASES)
def test_scalar_operands(a: float, b: float, c: float) -> None:
    got = fma(np.asarray(a), np.asarray(b), np.asarray(c), dtypes.float64)
    assert np.shape(got) == ()
    want = _want(a, b, c)
    assert (np.isnan(got) and np.isnan(want)) or float(got) == want


def test_vector_operands_keep_their_shape() -> None:
    a, b, c = (np.array(col, np.float64).reshape(7, 1) for col in zip(*CASES))
    got = fma(a, b, c, dtypes.float64)
    assert got.shape == (7, 1)
    for (x, y, z), g in zip(CASES, got.ravel()):
        w = _want(x, y, z)
        assert (np.isnan(g) and np.isnan(w)) or g == w
