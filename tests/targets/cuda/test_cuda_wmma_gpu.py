"""WMMA on a real GPU: the kernel where each lane loads its fragments, runs one WMMA and stores D
(tests/support/wmma_graphs.py), for every CUDA form of the IR, against the IR's meaning
(kcc.ir.wmma.warp_apply, written from tinygrad's definition).

On small-integer data every product and partial sum is exact, so the tensor core's summation
order cannot show and D must equal the IR's bit for bit: that checks the fragment layout on the
hardware. On random data the hardware's order and rounding inside the mma are its own (the PTX
ISA does not fix them), so D is compared within a relative tolerance.

And tinygrad's own tensor-core kernels (tests/data/wmma_tinygrad: its PTX and CUDA C renderers'
lowerings) give tinygrad's captured values, within 4 units in the last place of the output
dtype at the output's largest magnitude (the bound tests/e2e/test_wmma_tinygrad.py uses for the
interpreter: tinygrad's CPU kernel adds in another order).
Skips with the reason when there is no libcuda, no device or no ptxas."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from paths import DATA
from wmma_graphs import fragment_kernel

from kcc.frontend.parser import parse
from kcc.ir import numerics as nm
from kcc.ir import wmma
from kcc.ir.dtype import dtypes
from kcc.targets.cuda.driver import available
from kcc.targets.cuda.target import compile_cuda, find_ptxas, launch_cuda
from kcc.targets.manifest import check_launch

_REASON = available()
pytestmark = [pytest.mark.skipif(_REASON is not None, reason=f"no CUDA GPU: {_REASON}"),
              pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")]
CUDA_SHAPES = [s for s in wmma.SHAPES if s.device == "CUDA"]
IDS = [f"k{s.k}-{s.dtype_in}-{s.dtype_out}" for s in CUDA_SHAPES]
WARPS, GROUPS = 2, 2


def _arch() -> str:
    from kcc.targets.cuda.driver import Driver
    from kcc.targets.cuda.target import ARCHES
    mj, mn = Driver.get().compute_capability()
    known = [a for a in ARCHES if int(a[3:]) <= mj * 10 + mn]
    return known[-1]


def _run(sh: wmma.WmmaShape, vals: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(the GPU's D, the IR's D) for A, B, C given as float64 [warps, threads, per_lane]."""
    din, dout = dtypes.by_name(sh.dtype_in), dtypes.by_name(sh.dtype_out)
    a, b, c = (nm.from_f64(v, dt) for v, dt in zip(vals, (din, din, dout)))
    data, descs = compile_cuda([parse(fragment_kernel(sh, WARPS, GROUPS))], _arch(), "cubin")
    d = np.zeros_like(c)
    args = [d.reshape(-1), a.reshape(-1).copy(), b.reshape(-1).copy(), c.reshape(-1).copy()]
    launch_cuda(data, descs[0], check_launch(descs[0], args))
    want, ok = wmma.warp_apply(sh, a, b, c)
    assert ok.all()
    return args[0].reshape(d.shape), want


def _vals(sh: wmma.WmmaShape, draw) -> list[np.ndarray]:
    return [draw((WARPS * GROUPS, sh.threads, n)) for n in sh.per_lane]


@pytest.mark.parametrize("sh", CUDA_SHAPES, ids=IDS)
def test_wmma_on_small_integers_is_exact(sh: wmma.WmmaShape) -> None:
    rng = np.random.default_rng(1)
    got, want = _run(sh, _vals(sh, lambda s: rng.integers(-4, 5, s).astype(np.float64)))
    # bit for bit (as bytes: a view needs contiguous arrays; the IR's D may be a strided one)
    assert np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                          np.ascontiguousarray(want).view(np.uint8))


@pytest.mark.parametrize("sh", CUDA_SHAPES, ids=IDS)
def test_wmma_on_random_data_is_close(sh: wmma.WmmaShape) -> None:
    rng = np.random.default_rng(2)
    got, want = _run(sh, _vals(sh, lambda s: rng.standard_normal(s)))
    dout = dtypes.by_name(sh.dtype_out)
    g, w = nm.to_compute(got, dout), nm.to_compute(want, dout)
    tol = 1e-2 if sh.dtype_out == "float16" else 1e-4
    assert np.allclose(g, w, rtol=tol, atol=tol)


CAPTURED = DATA / "wmma_tinygrad"
CAPTURES = [(k, f) for k in json.loads((CAPTURED / "capture.json").read_text())["kernels"]
            for style, f in k["gpu"].items()
            if style in ("ptx", "cuda") and f and "WMMA(" in (CAPTURED / f).read_text()]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23}


@pytest.mark.parametrize("k, name", CAPTURES, ids=[f for _, f in CAPTURES])
def test_tinygrad_tensor_core_kernel_gives_tinygrads_values(k: dict, name: str) -> None:
    data, descs = compile_cuda([parse((CAPTURED / name).read_text(), name)], _arch(), "cubin")
    args: list[Any] = [np.load(CAPTURED / a["in"]).copy() if a["kind"] == "buffer"
                       else a["value"] for a in k["args"]]
    launch_cuda(data, descs[0], check_launch(descs[0], args))
    for a in (a for a in k["args"] if "out" in a):
        dt = dtypes.by_name(a["dtype"])
        got = nm.to_compute(args[a["slot"]], dt).astype(np.float64)
        want = nm.to_compute(np.load(CAPTURED / a["out"]), dt).astype(np.float64)
        assert np.abs(got - want).max() <= 4 * EPS[a["dtype"]] * np.abs(want).max()
