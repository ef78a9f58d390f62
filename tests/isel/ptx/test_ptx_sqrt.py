"""kcc's float32 SQRT on CUDA (kcc/isel/ptx/rounded.py) is the correctly rounded sqrt(x) for
every float32, whatever `rsqrt.approx.ftz.f32` returns within 1 ulp (the ISA documents a
relative 2^-22.9, less): the numpy model of the sequence (rcp_model.py, independent of kcc)
against numpy's float32 sqrt (IEEE: correctly rounded), the approximation 1 ulp low, exact and
1 ulp high. Fast by default; KCC_EXHAUSTIVE=1 (or `--exhaustive` / `--binades 0,1,254` when
run as a script) walks all 2^32 inputs. Also: kcc's PTX is that sequence, ptxas accepts it,
and its SASS has no CALL."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from ptx_util import needs_ptxas, ptx_of, sass_of
from rcp_model import bits, sqrt_seq, wrong
from rounded_inputs import EXHAUSTIVE, all_inputs, fast_inputs, walk
from test_ptx_rcp import _kernel, body_ops

F32 = np.float32


def reference(a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.sqrt(a).astype(F32)


def count_wrong(a: np.ndarray) -> tuple[int, list[str]]:
    bad, ex = 0, []
    want = reference(a)
    for kk in (-1, 0, 1):
        w = wrong(sqrt_seq(a, kk), want)
        bad += int(w.sum())
        ex += [f"k={kk} {int(x):#010x}" for x in bits(a[w])[:3]]
    return bad, ex


@pytest.mark.parametrize("kk", [-1, 0, 1])
def test_specials(kk: int) -> None:
    a = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -(2.0 ** -149), 2.0 ** -149,
                  2.0 ** -126, 2.0 ** -96, 2.0 ** 127, 3.4028235e38, 2.0, 4.0], F32)
    got, want = sqrt_seq(a, kk), reference(a)
    assert not wrong(got, want).any(), (got, want)
    assert bits(got)[0] == 0 and bits(got)[1] == 0x80000000 and got[2] == np.inf  # ±0, inf
    assert np.isnan(got[3:7]).all()                                           # NaN, x < 0


def test_all_exponents_boundaries_and_subnormals() -> None:
    bad, ex = count_wrong(fast_inputs())
    assert bad == 0, ex


def test_the_model_can_fail_without_the_tiny_scaling() -> None:
    """For a just above 2^-126 the residual as - y1² would be subnormal and lose bits: the
    same sequence without the 2^64 scaling is wrong there (so the check can fail)."""
    from rcp_model import fma, from_bits, mul, rsqrt_approx_ftz
    a = from_bits(np.arange(1 << 16, dtype=np.uint32) | np.uint32(1 << 23))
    rs = rsqrt_approx_ftz(a, 0)
    y, h = mul(a, rs), mul(rs, F32(0.5))
    r = fma(-h, y, F32(0.5))
    y1, h1 = fma(y, r, y), fma(h, r, h)
    y2 = fma(fma(-y1, y1, a), h1, y1)
    assert wrong(y2, reference(a)).any()
    assert not wrong(sqrt_seq(a, 0), reference(a)).any()


@pytest.mark.skipif(not EXHAUSTIVE, reason="all 2^32 inputs: set KCC_EXHAUSTIVE=1 (minutes)")
def test_exhaustive() -> None:
    total = 0
    for a in all_inputs():
        bad, ex = count_wrong(a)
        assert bad == 0, ex
        total += a.size
    assert total == 1 << 32


SQRT_OPS = ["setp.lt.f32", "mov.f32", "mul.rn.f32", "rsqrt.approx.ftz.f32", "mul.rn.f32",
            "mul.rn.f32", "neg.f32", "fma.rn.f32", "fma.rn.f32", "fma.rn.f32", "neg.f32",
            "fma.rn.f32", "fma.rn.f32", "mul.rn.f32", "setp.eq.f32", "setp.eq.f32", "or.pred",
            "mov.f32"]


def test_ptx_is_the_modelled_sequence() -> None:
    ptx = ptx_of(_kernel("SQRT"), "sm_80")
    assert "\tsqrt." not in ptx and "call" not in ptx
    assert body_ops(ptx, "setp.lt.f32", len(SQRT_OPS)) == SQRT_OPS
    for c in ("0f0F800000", "0f5F800000", "0f2F800000", "0f7F800000"):
        assert c in ptx                        # 2^-96, 2^64, 2^-32, inf


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_accepts_it_and_sass_has_no_call(tmp_path: Path, arch: str) -> None:
    sass = sass_of(_kernel("SQRT"), tmp_path, arch)
    assert "MUFU.RSQ" in sass and "CALL" not in sass and "RET" not in sass


if __name__ == "__main__":
    walk(count_wrong, sys.argv, "sqrt")
