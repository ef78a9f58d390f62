"""CUDA on a real GPU: every example and the op × dtype table run through libcuda and match the
reference interpreter (bit for bit; NaN payloads aside; transcendentals within 1e-5 relative).
Skips with the reason when there is no libcuda, no device or no ptxas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse_file
from kcc.ir.interp import run
from kcc.targets.cuda.target import compile_cuda, find_ptxas, launch_cuda
from kcc.targets.cuda.driver import CudaError, available
from kcc.targets.manifest import LaunchError, check_launch

from cuda_kernels import has_transcendental, mismatch, op_matrix, random_args  # noqa: E402
from paths import DATA

ROOT = Path(__file__).resolve().parents[3]
SHARED = DATA / "kernels" / "shared"   # the shared examples (project copy)
_REASON = available()
pytestmark = [pytest.mark.skipif(_REASON is not None, reason=f"no CUDA GPU: {_REASON}"),
              pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")]


def _arch() -> str:
    from kcc.targets.cuda.driver import Driver
    mj, mn = Driver.get().compute_capability()
    from kcc.targets.cuda.target import ARCHES
    known = [a for a in ARCHES if int(a[3:]) <= mj * 10 + mn]
    return known[-1] if known else ARCHES[0]


def check_against_interp(sinks, seed: int = 0) -> list[str]:
    """Compile sinks into one cubin, run each kernel on the GPU and in the interpreter."""
    data, descs = compile_cuda(sinks, arch=_arch(), emit="cubin")
    rng = np.random.default_rng(seed)
    bad = []
    for sink, d in zip(sinks, descs):
        args = random_args(d, rng)
        want = run(sink, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        launch_cuda(data, d, check_launch(d, got))
        for a, g, w in zip(d.args, got, want):
            if a.kind == "buffer" and "w" in a.access:
                m = mismatch(a.dtype, g, w, has_transcendental(sink))
                if m:
                    bad.append(f"{d.name} arg {a.slot}: {m}")
    return bad


def test_examples_match_interpreter():
    files = sorted(ROOT.glob("examples/*.uop")) + sorted(SHARED.glob("*.uop"))
    assert not check_against_interp([parse_file(f) for f in files])


def test_op_matrix_matches_interpreter():
    assert not check_against_interp(op_matrix())


def test_launch_checks_and_errors():
    sinks = [parse_file(sorted(SHARED.glob("*.uop"))[0])]
    data, descs = compile_cuda(sinks, arch=_arch(), emit="cubin")
    with pytest.raises(LaunchError):
        check_launch(descs[0], [])
    with pytest.raises(CudaError, match="cuModuleLoadData"):
        launch_cuda(b"\x7fELF garbage", descs[0],
                    check_launch(descs[0], random_args(descs[0], np.random.default_rng(1))))
