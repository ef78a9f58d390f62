"""A stand-in libcuda (C, built with the system compiler at test time) and the pytest fixture
`fake_driver` that points kcc's CUDA loader at it, so the loader and launchers are tested without
a GPU. The stand-in records every call and argument for the tests to check."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from kcc.targets.cuda import driver as cuda_driver

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
