"""A stand-in libamdhip64 (C, built with the system compiler at test time) and the pytest
fixture `fake_hip` that points kcc's HIP loader at it, so the loader and launchers are tested
without an AMD GPU. The stand-in records every call and argument for the tests to check."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from kcc.targets.amd import hip_driver

FAKE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static char image[1 << 20]; static size_t image_len; static char entry[256];
static unsigned dims[6]; static unsigned char karg[4096]; static size_t karg_len;
static int fail_load;
int hipGetDeviceCount(int *n) { *n = 1; return 0; }
int hipSetDevice(int d) { return 0; }
int hipModuleLoadData(void **m, const void *img) {
    image_len = strlen(img); memcpy(image, img, image_len < sizeof image ? image_len : 0);
    if (fail_load) return 200;                       /* hipErrorInvalidImage */
    *m = (void *)2; return 0;
}
int hipModuleUnload(void *m) { return 0; }
int hipModuleGetFunction(void **f, void *m, const char *name) {
    strncpy(entry, name, sizeof entry - 1); *f = (void *)3; return 0;
}
int hipMalloc(void **p, size_t n) { *p = malloc(n); return 0; }
int hipFree(void *p) { free(p); return 0; }
int hipMemcpy(void *d, const void *s, size_t n, int kind) { memcpy(d, s, n); return 0; }
int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned lds, void *stream, void **params,
                          void **extra) {
    void *buf = 0; size_t size = 0;
    dims[0] = gx; dims[1] = gy; dims[2] = gz; dims[3] = bx; dims[4] = by; dims[5] = bz;
    if (params) return 1;
    for (int i = 0; extra[i] != (void *)3; i += 2) {
        if (extra[i] == (void *)1) buf = extra[i + 1];
        else if (extra[i] == (void *)2) size = *(size_t *)extra[i + 1];
        else return 1;
    }
    karg_len = size; memcpy(karg, buf, size);
    if (strcmp(entry, "saxpy") == 0) {
        float *y, *x, a;
        memcpy(&y, karg, 8); memcpy(&x, karg + 8, 8); memcpy(&a, karg + 16, 4);
        for (int i = 0; i < 1024; i++) y[i] = a * x[i] + y[i];
    }
    return 0;
}
int hipDeviceSynchronize(void) { return 0; }
const char *hipGetErrorString(int r) { return r == 200 ? "invalid kernel image" : "error"; }
const char *fake_entry(void) { return entry; }
unsigned *fake_dims(void) { return dims; }
size_t fake_karg_len(void) { return karg_len; }
void fake_fail_load(int on) { fail_load = on; }
"""


@pytest.fixture()
def fake_hip(tmp_path, monkeypatch):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the stand-in HIP runtime")
    src, lib = tmp_path / "fake_hip.c", tmp_path / "libfakehip.so"
    src.write_text(FAKE)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", str(src), "-o", str(lib)], check=True)
    monkeypatch.setenv("KCC_LIBAMDHIP64", str(lib))
    monkeypatch.setattr(hip_driver.Runtime, "_instance", None)
    fake = ctypes.CDLL(str(lib))
    fake.fake_entry.restype = ctypes.c_char_p
    fake.fake_dims.restype = ctypes.POINTER(ctypes.c_uint * 6)
    fake.fake_karg_len.restype = ctypes.c_size_t
    yield fake
    monkeypatch.setattr(hip_driver.Runtime, "_instance", None)
