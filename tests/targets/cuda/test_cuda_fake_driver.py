"""The CUDA loader against a stand-in driver library, so it is tested without a GPU.

The stand-in (C, built here with the system compiler and loaded through KCC_LIBCUDA) keeps
"device" memory in host memory, records what the loader passes (the module image, the entry
name, grid and block, every kernel parameter) and, for the entry `saxpy`, computes
y = a*x + y itself from the parameters it was given: if the loader packed a pointer or the
float scalar wrongly, or skipped a copy, the numbers come out wrong. It cannot run PTX: what
PTX computes is checked on a real GPU (tests/targets/cuda/test_cuda_gpu.py, bench/gpu_check.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.cuda import driver as cuda_driver
from kcc.targets.cuda.target import compile_cuda, launch_cuda
from kcc.targets.manifest import check_launch
from fake_cuda import fake_driver  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[3]

def _saxpy():
    path = REPO / "examples" / "saxpy.uop"
    ptx, descs = compile_cuda([parse(path.read_text(), str(path))], "sm_90", "ptx")
    return ptx, descs[0]


def test_loader_copies_packs_and_launches(fake_driver) -> None:
    ptx, desc = _saxpy()
    rng = np.random.default_rng(0)
    y, x = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024)
    x = x.astype(np.float32)
    want = np.float32(2.5) * x + y
    args = check_launch(desc, [y, x, 2.5])
    launch_cuda(ptx, desc, args)
    assert np.array_equal(y, want)                    # copied in, computed, copied back
    assert fake_driver.fake_entry() == b"saxpy"
    assert fake_driver.fake_image() == ptx.rstrip(b"\0")   # the PTX, NUL-terminated for it
    assert list(fake_driver.fake_dims().contents) == desc.global_size + desc.local_size


def test_a_read_only_buffer_is_not_copied_back(fake_driver) -> None:
    ptx, desc = _saxpy()
    y, x = np.ones(1024, np.float32), np.ones(1024, np.float32)
    launch_cuda(ptx, desc, check_launch(desc, [y, x, 1.0]))
    assert x.tolist() == [1.0] * 1024 and y.tolist() == [2.0] * 1024


def test_driver_errors_name_the_call_and_the_message(fake_driver) -> None:
    ptx, desc = _saxpy()
    fake_driver.fake_fail_load(1)
    with pytest.raises(cuda_driver.CudaError, match="cuModuleLoadData.*PTX JIT"):
        launch_cuda(ptx, desc, check_launch(desc, [np.zeros(1024, np.float32),
                                                   np.zeros(1024, np.float32), 1.0]))


def test_missing_driver_is_a_clear_unavailable(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KCC_LIBCUDA", str(tmp_path / "no-such-libcuda.so"))
    monkeypatch.setattr(cuda_driver.Driver, "_instance", None)
    with pytest.raises(cuda_driver.CudaUnavailable, match="libcuda"):
        cuda_driver.Driver.get()
    monkeypatch.setattr(cuda_driver.Driver, "_instance", None)
