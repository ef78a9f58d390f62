"""bench/gpu_captures.py without a GPU: it captures tinygrad programs with their PTX and CUDA C
lowerings, and its interpreter mode runs every lowering on the captured inputs against
tinygrad's CPU values; a wrong value is reported; without a GPU the GPU mode says so and
passes. The GPU numbers themselves come only from a real GPU (docs/performance.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tinygrad")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gpu_captures


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gpucap")
    # any/all: tinygrad's PTX lowering loads its bool LOCAL buffer as uint8 (the importer's
    # bool-load rule); bf16: its PTX lowering keeps bfloat16 in float32
    assert gpu_captures.capture(root, ["sweep_any_all", "sweep_bf16"], 4.0) == 0
    return root


def test_lowerings_run_in_the_interpreter_and_match_tinygrad(captured, capsys) -> None:
    assert gpu_captures.run_all([captured], ["ptx", "cuda"], interp=True) == 0
    out = capsys.readouterr().out
    assert "ptx: 3 kernels ran in the interpreter, 0 mismatch, 0 errors; 1 where" in out
    assert "cuda: 3 kernels ran in the interpreter, 0 mismatch, 0 errors; 0 where" in out
    assert "sweep_bf16/" in out and "lowering differs from tinygrad's CPU values" in out


def test_a_wrong_value_is_reported(captured, capsys) -> None:
    folder = captured / "sweep_any_all"
    k = json.loads((folder / "capture.json").read_text())["kernels"][0]
    a = next(a for a in k["args"] if "out" in a)
    want = np.load(folder / a["out"])
    try:
        np.save(folder / a["out"], ~want)
        gpu_captures.run_all([captured], ["cuda"], interp=True)
    finally:
        np.save(folder / a["out"], want)
    assert "elements differ" in capsys.readouterr().out


def test_gpu_mode_without_a_gpu_says_why(captured, capsys, monkeypatch) -> None:
    from kcc.targets.cuda import driver
    monkeypatch.setattr(driver, "available", lambda: "no libcuda (test)")
    assert gpu_captures.main([str(captured)]) == 0
    assert "nothing to run (no libcuda (test))" in capsys.readouterr().out
