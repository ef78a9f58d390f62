"""The CUDA loader against a stand-in driver library, so it is tested without a GPU.

The stand-in (C, built here with the system compiler and loaded through KCC_LIBCUDA) keeps
"device" memory in host memory, records what the loader passes (the module image, the entry
name, grid and block, every kernel parameter) and, for the entry `saxpy`, computes
y = a*x + y itself from the parameters it was given: if the loader packed a pointer or the
float scalar wrongly, or skipped a copy, the numbers come out wrong. It cannot run PTX: what
PTX computes is checked on a real GPU (tests/test_cuda_gpu.py, bench/gpu_check.py).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.cuda import driver as cuda_driver
from kcc.targets.cuda.target import compile_cuda, launch_cuda
from kcc.targets.manifest import check_launch

REPO = Path(__file__).resolve().parents[1]

FAKE_LIBCUDA = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char image[1 << 20]; static size_t image_len; static char entry[256];
static unsigned dims[6]; static int nparams; static uint64_t ptr_params[16];
static float f32_params[16]; static int fail_load;

int cuInit(unsigned f) { return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = 0; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)1; return 0; }
int cuCtxSetCurrent(void *c) { return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : 0; return 0; }
int cuModuleLoadData(void **m, const void *img) {
    image_len = strlen(img); memcpy(image, img, image_len < sizeof image ? image_len : 0);
    if (fail_load) return 218;                       /* CUDA_ERROR_INVALID_PTX */
    *m = (void *)2; return 0;
}
int cuModuleUnload(void *m) { return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
    strncpy(entry, name, sizeof entry - 1); *f = (void *)3; return 0;
}
int cuMemAlloc_v2(uint64_t *p, size_t n) { *p = (uint64_t)(uintptr_t)malloc(n); return 0; }
int cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
int cuMemcpyHtoD_v2(uint64_t d, const void *h, size_t n) {
    memcpy((void *)(uintptr_t)d, h, n); return 0;
}
int cuMemcpyDtoH_v2(void *h, uint64_t d, size_t n) {
    memcpy(h, (void *)(uintptr_t)d, n); return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    dims[0] = gx; dims[1] = gy; dims[2] = gz; dims[3] = bx; dims[4] = by; dims[5] = bz;
    nparams = 3;
    ptr_params[0] = *(uint64_t *)params[0]; ptr_params[1] = *(uint64_t *)params[1];
    f32_params[2] = *(float *)params[2];
    if (strcmp(entry, "saxpy") == 0) {               /* what examples/saxpy.uop computes */
        float *y = (float *)(uintptr_t)ptr_params[0], *x = (float *)(uintptr_t)ptr_params[1];
        for (int i = 0; i < 1024; i++) y[i] = f32_params[2] * x[i] + y[i];
    }
    return 0;
}
int cuCtxSynchronize(void) { return 0; }
int cuGetErrorString(int r, const char **s) {
    *s = r == 218 ? "a PTX JIT compilation failed" : "unknown error"; return 0;
}
const char *fake_image(void) { return image; }
const char *fake_entry(void) { return entry; }
unsigned *fake_dims(void) { return dims; }
void fake_fail_load(int on) { fail_load = on; }
"""


@pytest.fixture()
def fake_driver(tmp_path, monkeypatch):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the stand-in driver")
    src, lib = tmp_path / "fake_cuda.c", tmp_path / "libfakecuda.so"
    src.write_text(FAKE_LIBCUDA)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", str(src), "-o", str(lib)], check=True)
    monkeypatch.setenv("KCC_LIBCUDA", str(lib))
    monkeypatch.setattr(cuda_driver.Driver, "_instance", None)
    fake = ctypes.CDLL(str(lib))
    fake.fake_image.restype = ctypes.c_char_p
    fake.fake_entry.restype = ctypes.c_char_p
    fake.fake_dims.restype = ctypes.POINTER(ctypes.c_uint * 6)
    yield fake
    monkeypatch.setattr(cuda_driver.Driver, "_instance", None)


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
