"""Whole tinygrad programs through DEV=CPU:KCC (tests/support/tinygrad_whole_programs.py:
training steps with SGD and Adam, a CNN with BatchNorm in train and eval mode, masked attention,
sort/topk, pads, pooling, interpolate, integer and half programs, symbolic shapes, TinyJit, BEAM).

Oracle: the same program, in the same process, on tinygrad's default DEV=CPU (clang).
Integer results must match bit for bit; float32 results to 1e-4 relative (a few steps of
training carry clang's FMA contractions forward: docs/tinygrad.md), float16 to 2e-2 (clang
keeps _Float16 expressions in float, kcc rounds every op)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tinygrad_util import HAVE_TINYGRAD, needs_tinygrad

pytestmark = needs_tinygrad

# programs expected to fail through DEV=CPU:KCC, with the reason (strict: reported when fixed)
XFAIL: dict[str, Any] = {}


def _params() -> list[Any]:
    if not HAVE_TINYGRAD:
        return []
    from tinygrad_whole_programs import PROGRAMS
    return [pytest.param(n, marks=XFAIL[n]) if n in XFAIL else n for n in PROGRAMS]


def _run(dev: str, name: str) -> list[np.ndarray]:
    from tinygrad_whole_programs import PROGRAMS
    from tinygrad.helpers import Context
    with Context(DEV=dev, PARALLEL=0):
        return PROGRAMS[name](np.random.default_rng(0))


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    tol = 2e-2 if got.dtype == np.float16 else 1e-4
    fin = np.abs(want[np.isfinite(want)]).astype(np.float64)
    scale = max(1.0, float(fin.max())) if fin.size else 1.0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 0.1 * scale, err_msg=what)


@pytest.mark.parametrize("name", _params())
def test_program_matches_dev_cpu(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import kcc.tinygrad  # noqa: F401  (registers the KCC renderer)
    from kcc.tinygrad.renderer import KCCCompiler
    from tinygrad import Device
    from tinygrad.helpers import Context
    want = _run("CPU", name)
    calls = [0]
    compile_ = KCCCompiler.compile

    def counting(self: KCCCompiler, src: str) -> bytes:
        calls[0] += 1
        return compile_(self, src)
    monkeypatch.setattr(KCCCompiler, "compile", counting)
    got = _run("CPU:KCC", name)
    with Context(DEV="CPU:KCC"):
        assert type(Device["CPU"].renderer).__name__ == "KCCRenderer"
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"{name} result {i}")
    if name == "beam_searched":
        # the search compiled and timed candidates with kcc, not one kernel per computation
        assert calls[0] > 4, calls[0]
