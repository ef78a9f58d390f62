"""round_half (kcc/ir/consts.py): a value rounded to float16 without numpy, bit for bit numpy's
conversion (the oracle), on every float16 value, every midpoint between two (the ties), the
doubles next to each midpoint, random values over float16's range and subnormals, the edge of
its range (a value past it is left to numpy: None), and through _convert, the constant fold."""

from __future__ import annotations

import math
import random

import numpy as np

from kcc.ir import numerics as nm
from kcc.ir.consts import _convert, round_half
from kcc.ir.dtype import dtypes


def _numpy_half(v: float) -> float:
    with np.errstate(all="ignore"):
        return float(np.float16(v))


def _same(a: float, b: float) -> bool:
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _values() -> list[float]:
    bits = np.arange(0, 1 << 16, dtype=np.uint16).view(np.float16).astype(np.float64)
    hs = np.unique(bits[np.isfinite(bits)])
    mids = (hs[:-1] + hs[1:]) / 2
    rng = random.Random(0)
    out = [float(x) for x in (*hs, *mids, *np.nextafter(mids, np.inf),
                              *np.nextafter(mids, -np.inf))]
    out += [rng.uniform(-70000.0, 70000.0) for _ in range(20000)]
    out += [math.ldexp(rng.random(), rng.randint(-40, 17)) * rng.choice((1.0, -1.0))
            for _ in range(20000)]
    return out + [65504.0, 65519.99, 65520.0, 1e6, math.inf, -math.inf, -0.0, 2.0 ** -25]


def test_round_half_is_numpys_rounding() -> None:
    past = 0
    for v in _values():
        got = round_half(v)
        if got is None:         # left to numpy: only past the range (numpy's ±inf)
            assert math.isinf(_numpy_half(v)) and not math.isinf(v)
            past += 1
            continue
        assert _same(got, _numpy_half(v)), v
    assert past > 0
    assert round_half(math.nan) is None


def test_convert_to_half_is_the_interpreters() -> None:
    rng = random.Random(1)
    cases = [(float(v), dtypes.float32) for v in np.float32(
        [rng.uniform(-70000, 70000) for _ in range(3000)])]
    cases += [(rng.uniform(-1e-3, 1e-3), dtypes.float64) for _ in range(3000)]
    cases += [(v, dtypes.int32) for v in range(-70000, 70000, 7)]
    for v, src in cases:
        with np.errstate(all="ignore"):
            want = float(nm.cast(nm.const_array(v, src), src, dtypes.float16))
        assert _same(float(_convert(v, src, dtypes.float16)), want), (v, src)
