"""exp2's power of two (kcc/passes/transcendental.py): 2**q applied as two integer exponents
read off the bits of xc + magic (floor(q/2) and the rest), with no float q/2, TRUNC or second
magic add — and bit for bit the results of the float split it replaced (trunc(q/2)), which a
numpy model of that split computes here in the dtype's own IEEE arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from passes_support import eval_values, op, param

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import toposort
from kcc.passes.decompose import decompose
from kcc.passes.transcendental import FORMATS, _tables
from kcc.targets.x86.arch import X86_AVX2

F = {dtypes.float32: (np.float32, np.int32), dtypes.float64: (np.float64, np.int64)}


def _graph(dt):
    return decompose(op(Ops.EXP2, param(0, dt)), X86_AVX2)


def _trunc_split(xs: np.ndarray, dt) -> np.ndarray:
    """The former expansion: q = rint(xc), p(r), times 2**trunc(q/2) times 2**(q - that)."""
    f, i = F[dt]
    fmt = FORMATS[dt]
    hi, lo = f(-fmt.emin + 3), f(fmt.emin - fmt.mant - 25)
    with np.errstate(all="ignore"):
        xc = np.where(xs < lo, lo, xs)
        xc = np.where(hi < xc, hi, xc)
        m = f(1.5 * 2.0 ** fmt.mant)
        q = (xc + m) - m
        r = xc - q
        c = [f(v) for v in _tables()[f"exp2/{dt.name}"]]
        p = c[-1]
        for k in reversed(c[:-1]):
            p = p * r + k
        q1 = np.trunc(q * f(0.5))
        q2 = q - q1

        def pow2(k):
            e = np.nan_to_num(k, nan=0.0).astype(i) + fmt.bias
            return (e.astype(i) << fmt.mant).view(f)
        return (p * pow2(q1)) * pow2(q2)


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_exp2_same_bits_as_trunc_split(dt) -> None:
    f, i = F[dt]
    lo = 180 if dt == dtypes.float32 else 1110
    rs = np.random.default_rng(7)
    ints = np.arange(-lo, lo // 4 * 3).astype(f)
    xs = np.concatenate([rs.uniform(-lo, lo, 60_000), rs.uniform(-lo, -lo * 0.65, 60_000),
                         ints, ints + f(0.5), ints - f(0.5),
                         np.nextafter(ints, f(-np.inf)), np.nextafter(ints, f(np.inf)),
                         [np.inf, -np.inf, 0.0, -0.0]]).astype(f)
    got = eval_values(_graph(dt), {0: xs})
    want = _trunc_split(xs, dt)
    assert got.dtype == want.dtype
    # odd negative q (where floor and trunc differ) with subnormal results are among them
    sub = (want != 0) & (np.abs(want) < np.finfo(f).tiny)
    assert sub.sum() > 1000
    assert np.array_equal(got.view(i), want.view(i))


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_exp2_exponents_are_integer_ops(dt) -> None:
    ops = [u.op for u in toposort([_graph(dt)])]
    assert Ops.TRUNC not in ops
    assert ops.count(Ops.SHR) == 1 and ops.count(Ops.SHL) == 2
    assert ops.count(Ops.BITCAST) == 3          # qm's bits, and the two powers of two
