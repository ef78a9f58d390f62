"""decompose's MULHI for targets without a high multiply (AMD at every width, CUDA below 32
bits): the decomposed graph, run in the reference interpreter, against the high half of the
exact product in Python integers; and the AMD code for it in kcc's emulator."""

from __future__ import annotations

import numpy as np
import pytest
from passes_support import eval_values, op, param

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import toposort
from kcc.passes.decompose import decompose
from kcc.passes.target import TargetDesc

INTS = (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
        dtypes.int64, dtypes.uint64)
NO_MULHI = TargetDesc("t", {}, {}, lambda o, d: o is not Ops.MULHI, "native", True)


def _edges(dt) -> list[int]:
    lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.is_signed else \
        (0, (1 << dt.bits) - 1)
    half = 1 << (dt.bits // 2)
    vals = {lo, lo + 1, lo >> 1, -half, -1, 0, 1, 2, 3, half - 1, half, hi >> 1, hi - 1, hi}
    return sorted(v for v in vals if lo <= v <= hi)


def _inputs(dt, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, then random values over the whole range."""
    npdt = np.dtype(dt.name)
    e = _edges(dt)
    ea = [a for a in e for _ in e]
    eb = [b for _ in e for b in e]
    info = np.iinfo(npdt)
    rs = np.random.default_rng(seed)
    ra = rs.integers(info.min, info.max, n, dtype=npdt, endpoint=True)
    rb = rs.integers(info.min, info.max, n, dtype=npdt, endpoint=True)
    return (np.concatenate([np.array(ea, npdt), ra]), np.concatenate([np.array(eb, npdt), rb]))


def _expected(xa: np.ndarray, xb: np.ndarray, dt) -> list[int]:
    """(a·b) >> bits of the exact product (Python ints: floor, as an arithmetic shift), read
    back in dt's range."""
    out = []
    for a, b in zip(xa.tolist(), xb.tolist()):
        h = (a * b) >> dt.bits
        h &= (1 << dt.bits) - 1
        if dt.is_signed and h >= 1 << (dt.bits - 1):
            h -= 1 << dt.bits
        out.append(h)
    return out


@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
def test_mulhi_decomposed(dt) -> None:
    a, b = param(0, dt), param(1, dt)
    g = decompose(op(Ops.MULHI, a, b), NO_MULHI)
    assert all(u.op is not Ops.MULHI for u in toposort([g]))
    xa, xb = _inputs(dt, 20000, dt.bits)
    got = eval_values(g, {0: xa, 1: xb})
    assert [int(v) for v in got] == _expected(xa, xb, dt)


def test_cuda_keeps_mul_hi_from_32_bits() -> None:
    """mul.hi.{s,u}{32,64} is selected; narrower lanes, in 32-bit registers, decompose."""
    from kcc.targets.cuda.desc import CUDA
    for dt in INTS:
        g = decompose(op(Ops.MULHI, param(0, dt), param(1, dt)), CUDA)
        kept = any(u.op is Ops.MULHI for u in toposort([g]))
        assert kept == (dt.itemsize >= 4), dt
