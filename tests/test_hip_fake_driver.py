"""The HIP loader against a stand-in libamdhip64, so it is tested without an AMD GPU.

The stand-in (C, built here with the system compiler, loaded through KCC_LIBAMDHIP64) keeps
"device" memory in host memory, records what the loader passes (the image, the entry name,
grid and block, the kernarg buffer and its size from the `extra` array) and, for the entry
`saxpy`, computes y = a*x + y from the kernarg buffer itself (pointers at offsets 0 and 8, the
float at 16, as the manifest says): if the loader packed an argument wrongly or skipped a copy,
the numbers come out wrong. It cannot run AMD code.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse_file
from kcc.targets.amd import hip_driver
from kcc.targets.amd.target import compile_amd_code, assembly
from kcc.targets.manifest import LaunchError, check_launch

REPO = Path(__file__).resolve().parents[1]

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
