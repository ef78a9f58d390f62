"""The interpreter's WMMA: random A, B, C matrices are scattered into each lane's fragments by
the form's lane maps, the kernel runs, and D gathered back from the lanes must equal numpy's
product of the matrices: bit for bit against the sequential float32 chain docs/semantics.md
defines (and within rounding of float64 numpy's matmul), exactly for int8 -> int32."""

from __future__ import annotations

import numpy as np
import pytest
from wmma_graphs import fragment_kernel

from kcc.frontend.parser import parse
from kcc.ir import dtypes
from kcc.ir import numerics as nm
from kcc.ir.interp import InterpError, run
from kcc.ir.wmma import SHAPES, WmmaShape, find

NAMES = [f"{s.device}-{s.dims}-{s.threads}-{s.dtype_in}-{s.dtype_out}" for s in SHAPES]
WARPS, GROUPS = 2, 2


def _random(dt: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A kcc carrier array of dt (bfloat16 as bits)."""
    if dt == "int8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    if dt == "int32":
        return rng.integers(-2**31, 2**31, shape).astype(np.int32)
    return nm.from_f64(rng.standard_normal(shape), dtypes.by_name(dt))


def _scatter(sh: WmmaShape, which: str, mats: np.ndarray) -> np.ndarray:
    """Fragments [warps, threads, per_lane] of matrices [warps, rows, cols], by the maps."""
    at = {"a": sh.a_at, "b": sh.b_at, "c": sh.c_at}[which]
    width = sh.per_lane["abc".index(which)]
    out = np.zeros((mats.shape[0], sh.threads, width), mats.dtype)
    for lane in range(sh.threads):
        for e in range(width):
            out[:, lane, e] = mats[:, at(lane, e)[0], at(lane, e)[1]]
    return out


def _reference(sh: WmmaShape, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D, one warp at a time: k in order from C, float32 sums of exact float64 products."""
    if sh.dtype_out == "int32":
        return (c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    din, dout = dtypes.by_name(sh.dtype_in), dtypes.by_name(sh.dtype_out)
    af, bf = (nm.to_compute(v, din).astype(np.float64) for v in (a, b))
    acc = nm.to_compute(c, dout).astype(np.float32)
    for k in range(sh.k):
        acc = (acc.astype(np.float64) + af[:, :, k:k + 1] * bf[:, k:k + 1, :]).astype(np.float32)
    return nm.from_compute(acc, dout)


def _run(sh: WmmaShape, split: int | None = None, seed: int = 0) -> None:
    n, m, k = sh.dims
    rng = np.random.default_rng(seed)
    w = WARPS * GROUPS
    am, bm, cm = (_random(sh.dtype_in, (w, m, k), rng), _random(sh.dtype_in, (w, k, n), rng),
                  _random(sh.dtype_out, (w, m, n), rng))
    frags = [_scatter(sh, x, v).reshape(-1) for x, v in zip("abc", (am, bm, cm))]
    d = np.zeros_like(frags[2])
    run(parse(fragment_kernel(sh, WARPS, GROUPS, split)), [d, *frags])
    got = d.reshape(w, sh.threads, -1)
    want = _scatter(sh, "c", _reference(sh, am, bm, cm))
    np.testing.assert_array_equal(got, want)
    if sh.dtype_out != "int32":
        din, dout = dtypes.by_name(sh.dtype_in), dtypes.by_name(sh.dtype_out)
        exact = (nm.to_compute(am, din).astype(np.float64) @ nm.to_compute(bm, din).astype(
            np.float64) + nm.to_compute(cm, dout).astype(np.float64))
        close = _scatter(sh, "c", exact)
        tol = 1e-2 if sh.dtype_out == "float16" else 1e-5
        np.testing.assert_allclose(nm.to_compute(got, dout), close, rtol=tol, atol=tol)


@pytest.mark.parametrize("sh", SHAPES, ids=NAMES)
def test_every_form_against_numpy(sh: WmmaShape) -> None:
    _run(sh)


@pytest.mark.parametrize("sh", [SHAPES[0], find("AMD", (16, 16, 16), 64, "float16",
                                                 "float32")], ids=["CUDA", "CDNA3"])
def test_warps_are_formed_from_lidx0_fastest(sh: WmmaShape) -> None:
    _run(sh, split=8, seed=1)


def test_rdna3_replicas_that_differ_are_refused() -> None:
    sh = find("AMD", (16, 16, 16), 32, "float16", "float32")
    assert sh is not None
    a = np.zeros(sh.threads * WARPS * GROUPS * 16, np.float16)
    a[16 * 16] = 1.0            # lane 16's first element, not lane 0's
    args = [np.zeros(sh.threads * WARPS * GROUPS * 8, np.float32), a,
            np.zeros_like(a), np.zeros(sh.threads * WARPS * GROUPS * 8, np.float32)]
    with pytest.raises(InterpError, match="replicate"):
        run(parse(fragment_kernel(sh, WARPS, GROUPS)), args)


def test_a_workgroup_of_part_of_a_warp_is_refused() -> None:
    sh = SHAPES[0]
    text = fragment_kernel(sh, 1, 1).replace('SPECIAL(32) "lidx0"', 'SPECIAL(16) "lidx0"')
    n = 16
    args = [np.zeros(n * 4, np.float32), np.zeros(n * 8, np.float16),
            np.zeros(n * 4, np.float16), np.zeros(n * 4, np.float32)]
    text = text.replace("ParamArg(0, float32, 128)", "ParamArg(0, float32, 64)")
    text = text.replace("ParamArg(1, float16, 256)", "ParamArg(1, float16, 128)")
    text = text.replace("ParamArg(2, float16, 128)", "ParamArg(2, float16, 64)")
    text = text.replace("ParamArg(3, float32, 128)", "ParamArg(3, float32, 64)")
    with pytest.raises(InterpError, match="whole warps of 32"):
        run(parse(text), args)
