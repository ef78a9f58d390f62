"""EXP2's scaling by 2**q (kcc/passes/transcendental.py `_exp2_scales`): the two powers of two
come from the bits of qm = q + K (K = 1.5*2**mant + 2*bias) in four unsigned integer ops, and
must be exactly 2**floor(q/2) and 2**ceil(q/2) for every q the clamped exp2 can produce; the
oracle is numpy's ldexp. Also: the decomposed EXP2 keeps no TRUNC and no more integer ops than
those four (the twelve-op split it replaced is what made float64 r_4_8_8 0.78x clang's time)."""

from __future__ import annotations

import numpy as np
import pytest
from passes_support import eval_values, op, param

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import toposort
from kcc.passes.decompose import decompose
from kcc.passes.transcendental import F32, F64, _B, _exp2_scales
from kcc.targets.x86.arch import X86_AVX2

FMT = {dtypes.float32: (F32, np.float32, np.int32), dtypes.float64: (F64, np.float64, np.int64)}


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_scales_are_the_two_halves_of_q(dt) -> None:
    fmt, npdt, _ = FMT[dt]
    lo, hi = fmt.emin - fmt.mant - 25, -fmt.emin + 3          # exp2's clamp
    q = np.arange(lo, hi + 1)
    k = 1.5 * 2.0 ** fmt.mant + 2 * fmt.bias
    qm = (q.astype(np.float64) + k).astype(npdt)
    assert np.array_equal(qm.astype(np.float64) - k, q)       # exact in the dtype
    e1, e2 = _exp2_scales(_B(fmt), param(0, dt))
    got1, got2 = eval_values(e1, {0: qm}), eval_values(e2, {0: qm})
    q1 = np.floor_divide(q, 2)
    assert np.array_equal(got1, np.ldexp(npdt(1), q1).astype(npdt))
    assert np.array_equal(got2, np.ldexp(npdt(1), q - q1).astype(npdt))


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_exp2_scaling_is_four_integer_ops(dt) -> None:
    g = decompose(op(Ops.EXP2, param(0, dt)), X86_AVX2)
    nodes = toposort([g])
    assert not any(u.op is Ops.TRUNC for u in nodes)
    ints = [u for u in nodes if u.dtype.is_int and u.op in (Ops.ADD, Ops.SUB, Ops.SHL, Ops.SHR)]
    assert len(ints) == 4, [u.op for u in ints]


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_exp2_rounds_a_subnormal_result_once(dt) -> None:
    """Results below the smallest normal: p * 2**q1 exact, the second product rounds once, so
    they equal the correctly rounded long-double exp2 within the 2 ulp bound of the normal
    range scaled down (here: exactly for integer x, whose polynomial is 1)."""
    fmt, npdt, _ = FMT[dt]
    x = np.arange(fmt.emin - fmt.mant - 1, fmt.emin + 1).astype(npdt)
    got = eval_values(decompose(op(Ops.EXP2, param(0, dt)), X86_AVX2), {0: x})
    assert np.array_equal(got, np.ldexp(npdt(1), x.astype(np.int64)).astype(npdt))
