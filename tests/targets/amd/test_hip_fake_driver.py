"""The HIP loader against a stand-in libamdhip64, so it is tested without an AMD GPU.

The stand-in (C, built here with the system compiler, loaded through KCC_LIBAMDHIP64) keeps
"device" memory in host memory, records what the loader passes (the image, the entry name,
grid and block, the kernarg buffer and its size from the `extra` array) and, for the entry
`saxpy`, computes y = a*x + y from the kernarg buffer itself (pointers at offsets 0 and 8, the
float at 16, as the manifest says): if the loader packed an argument wrongly or skipped a copy,
the numbers come out wrong. It cannot run AMD code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse_file
from kcc.targets.amd import hip_driver
from kcc.targets.amd.target import compile_amd_code, assembly
from kcc.targets.manifest import LaunchError, check_launch
from fake_hip import fake_hip  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[3]

def _saxpy():
    (code,) = compile_amd_code([parse_file(REPO / "examples" / "saxpy.uop")], "gfx1100")
    return assembly([code]).encode(), code.desc


def test_loader_packs_kernargs_copies_and_launches(fake_hip) -> None:
    image, desc = _saxpy()
    rng = np.random.default_rng(0)
    y = rng.standard_normal(1024).astype(np.float32)
    x = rng.standard_normal(1024).astype(np.float32)
    want = np.float32(2.5) * x + y
    hip_driver.launch_hip(image, desc, check_launch(desc, [y, x, 2.5]))
    assert np.array_equal(y, want)
    assert fake_hip.fake_entry() == b"saxpy"
    assert fake_hip.fake_karg_len() == desc.target["amd"]["kernarg_size"] == 24
    assert list(fake_hip.fake_dims().contents) == desc.global_size + desc.local_size


def test_hip_errors_name_the_call_and_the_message(fake_hip) -> None:
    image, desc = _saxpy()
    fake_hip.fake_fail_load(1)
    with pytest.raises(hip_driver.HipError, match="hipModuleLoadData.*invalid kernel image"):
        hip_driver.launch_hip(image, desc, check_launch(desc, [np.zeros(1024, np.float32),
                                                              np.zeros(1024, np.float32), 1.0]))


def test_a_bad_launch_is_refused_before_the_runtime(fake_hip) -> None:
    _, desc = _saxpy()
    with pytest.raises(LaunchError):
        check_launch(desc, [np.zeros(10, np.float32), np.zeros(1024, np.float32), 1.0])


def test_missing_runtime_is_a_clear_unavailable(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KCC_LIBAMDHIP64", str(tmp_path / "no-such-libamdhip64.so"))
    monkeypatch.setattr(hip_driver.Runtime, "_instance", None)
    with pytest.raises(hip_driver.HipUnavailable, match="libamdhip64"):
        hip_driver.Runtime.get()
    assert "libamdhip64" in (hip_driver.available() or "")
    monkeypatch.setattr(hip_driver.Runtime, "_instance", None)
