"""Whole tinygrad programs exported for AMD and CUDA (docs/export.md): the AMD program manifest
runs in kcc's emulator on gfx1100 and gfx942 and gives tinygrad's values; the HIP and CUDA
launchers compile with cc and run against a stand-in runtime library that records every call
and argument, which are checked against the program manifest; ptxas accepts the PTX."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from test_tinygrad_export import MODELS, assert_same
from tinygrad_util import needs_tinygrad

pytestmark = needs_tinygrad
CC = shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")

# One stand-in library with both APIs. "Device" memory is host memory; every call is logged
# to $FAKE_LOG, one line each; buffers are logged by an FNV-1a hash of their bytes.
FAKE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static FILE *lg;
static char names[64][128]; static int nfn;
static void open_log(void) { if (!lg) { lg = fopen(getenv("FAKE_LOG"), "w"); } }
static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *b = p; uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}
static void load(const void *im) {       /* the test says how long the image should be */
  open_log();
  size_t n = strtoull(getenv("FAKE_IMAGE_LEN"), 0, 10);
  fprintf(lg, "load %zu %llu\n", n, (unsigned long long)fnv(im, n));
}
static void *func(const char *name) {
  strncpy(names[nfn], name, 127); fprintf(lg, "func %s\n", name); return (void *)(intptr_t)(++nfn);
}
static void alloc(void **p, size_t n) {
  *p = calloc(n, 1); fprintf(lg, "malloc %llu %zu\n", (unsigned long long)(uintptr_t)*p, n);
}
static void copy(const char *kind, void *d, const void *s, size_t n) {
  memcpy(d, s, n);
  fprintf(lg, "%s %llu %llu %zu %llu\n", kind, (unsigned long long)(uintptr_t)d,
          (unsigned long long)(uintptr_t)s, n, (unsigned long long)fnv(s, n));
}
static void dims(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                 unsigned bz, unsigned sh) {
  fprintf(lg, "launch %s %u %u %u %u %u %u %u", names[(intptr_t)f - 1], gx, gy, gz, bx, by, bz,
          sh);
}
/* HIP */
int hipSetDevice(int d) { open_log(); fprintf(lg, "device %d\n", d); return 0; }
int hipModuleLoadData(void **m, const void *im) { load(im); *m = (void *)7; return 0; }
int hipModuleGetFunction(void **f, void *m, const char *n) { *f = func(n); return m != (void *)7; }
int hipMalloc(void **p, size_t n) { alloc(p, n); return 0; }
int hipMemcpy(void *d, const void *s, size_t n, int kind) {
  copy(kind == 1 ? "h2d" : kind == 2 ? "d2h" : "bad", d, s, n); return kind != 1 && kind != 2;
}
int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned sh, void *st, void **params,
                          void **extra) {
  void *buf = 0; size_t size = 0;
  dims(f, gx, gy, gz, bx, by, bz, sh);
  if (params || st) return 1;
  for (int i = 0; extra[i] != (void *)3; i += 2) {
    if (extra[i] == (void *)1) buf = extra[i + 1];
    else if (extra[i] == (void *)2) size = *(size_t *)extra[i + 1];
    else return 1;
  }
  fprintf(lg, " karg %zu", size);
  for (size_t i = 0; i < size; i++) fprintf(lg, " %u", ((unsigned char *)buf)[i]);
  fprintf(lg, "\n"); return 0;
}
int hipDeviceSynchronize(void) { fprintf(lg, "sync\n"); fflush(lg); return 0; }
const char *hipGetErrorString(int r) { return "fake error"; }
/* CUDA */
int cuInit(unsigned f) { open_log(); fprintf(lg, "init %u\n", f); return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)5; return 0; }
int cuCtxSetCurrent(void *c) { return c != (void *)5; }
int cuModuleLoadData(void **m, const void *im) { load(im); *m = (void *)7; return 0; }
int cuModuleGetFunction(void **f, void *m, const char *n) { *f = func(n); return m != (void *)7; }
int cuMemAlloc_v2(uint64_t *p, size_t n) { void *q; alloc(&q, n); *p = (uintptr_t)q; return 0; }
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
  copy("h2d", (void *)(uintptr_t)d, s, n); return 0;
}
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) {
  copy("d2h", d, (void *)(uintptr_t)s, n); return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned sh, void *st, void **params, void **extra) {
  dims(f, gx, gy, gz, bx, by, bz, sh);
  if (extra || st) return 1;
  const char *want = getenv("FAKE_NPARAMS"); int n = 0;          /* "name:n,name:n" */
  const char *at = strstr(want, names[(intptr_t)f - 1]);
  if (at) n = atoi(at + strlen(names[(intptr_t)f - 1]) + 1);
  fprintf(lg, " params %d", n);
  for (int i = 0; i < n; i++) fprintf(lg, " %llu", (unsigned long long)*(uint64_t *)params[i]);
  fprintf(lg, "\n"); return 0;
}
int cuCtxSynchronize(void) { fprintf(lg, "sync\n"); fflush(lg); return 0; }
int cuGetErrorString(int r, const char **s) { *s = "fake error"; return 0; }
"""


def _fnv(data: bytes) -> int:
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & (2**64 - 1)
    return h


def _small_attention() -> tuple[Any, list[np.ndarray]]:
    """The transformer block of the x86 tests at a size the emulator runs in seconds."""
    from tinygrad import nn
    rng = np.random.default_rng(6)
    d, heads = 16, 2
    ln1, ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
    qkv, proj, up, down = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Linear(d, 2 * d), \
        nn.Linear(2 * d, d)

    def f(x: Any) -> Any:
        b, t, _ = x.shape
        q, k, v = qkv(ln1(x)).reshape(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        a = q.scaled_dot_product_attention(k, v, is_causal=True)
        x = x + proj(a.transpose(1, 2).reshape(b, t, d))
        return x + down(up(ln2(x)).gelu())
    return f, [rng.normal(size=(1, 4, d)).astype(np.float32)]


def _small_mlp() -> tuple[Any, list[np.ndarray]]:
    from tinygrad import nn
    rng = np.random.default_rng(7)
    l1, l2 = nn.Linear(32, 48), nn.Linear(48, 10)

    def f(x: Any) -> Any:
        return l2(l1(x).relu()).softmax()
    return f, [rng.normal(size=(4, 32)).astype(np.float32)]


GPU_MODELS = {"cnn": MODELS["cnn"], "mlp": _small_mlp, "attention": _small_attention,
              "ints": MODELS["ints"], "half": MODELS["half"]}


def _export(make: Any, out: Path, target: str, arch: str | None, **kw: Any) -> Any:
    import kcc.tinygrad as ktg
    f, ins = make()
    return ktg.export(f, *ins, out=out, name="net", target=target, arch=arch, **kw)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
@pytest.mark.parametrize("model", list(GPU_MODELS))
def test_amd_program_in_the_emulator_gives_tinygrads_values(model, arch, tmp_path):
    from kcc.targets.program import run_program
    ex = _export(GPU_MODELS[model], tmp_path / "p", "amd", arch)
    assert ex.files["object"] == "net.hsaco"
    got = run_program(ex.path("manifest"), ex.inputs, emulate=True)
    if model == "ints":                 # the HSACO carries the program: an edit is refused
        import json

        from kcc.targets.program import ProgramError
        doc = json.loads(ex.path("manifest").read_text())
        doc["launches"].reverse()
        ex.path("manifest").write_text(json.dumps(doc))
        with pytest.raises(ProgramError, match="'launches' is not the object's"):
            run_program(ex.path("manifest"), ex.inputs, emulate=True)
    if model == "half":
        assert_same(got, ex.outputs, 2e-2, 1e-2)
    else:
        assert_same(got, ex.outputs)


def _launcher_log(ex: Any, tmp_path: Path, env_var: str, extra_env: dict[str, str],
                  setup: str) -> list:
    """Build the stand-in library and main.c + NAME_launch.c with cc, run, return the log."""
    import os

    from test_tinygrad_export import c_main
    lib = tmp_path / "libfake.so"
    (tmp_path / "fake.c").write_text(FAKE)
    subprocess.run([CC, "-shared", "-fPIC", "-O1", str(tmp_path / "fake.c"), "-o", str(lib)],
                   check=True)
    (tmp_path / "main.c").write_text(c_main(ex, setup))
    subprocess.run([CC, "-Wall", "-Werror", f"-I{ex.out}", str(tmp_path / "main.c"),
                    str(ex.path("launcher")), "-ldl", "-o", str(tmp_path / "main")], check=True)
    for k, a in enumerate(ex.inputs):
        (tmp_path / f"in{k}.bin").write_bytes(np.ascontiguousarray(a).tobytes())
    size = len(ex.path("object").read_bytes()) + ex.files["object"].endswith(".ptx")
    env = {**os.environ, env_var: str(lib), "FAKE_LOG": str(tmp_path / "log"),
           "FAKE_IMAGE_LEN": str(size), **extra_env}
    res = subprocess.run([str(tmp_path / "main")], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return [line.split() for line in (tmp_path / "log").read_text().splitlines()]


def _check_log(ex: Any, log: list, arg_pointers: Any) -> None:
    """Every call of the launcher against the manifest: the image, the kernels, one
    allocation per buffer, the weights and inputs copied in, each launch's kernel, dims and
    argument pointers (buffer base + offset), the outputs copied out."""
    p = ex.program
    image = ex.path("object").read_bytes()
    calls = iter(log)
    head = next(calls)
    while head[0] in ("device", "init"):
        head = next(calls)
    assert head[0] == "load"
    if ex.files["object"].endswith(".ptx"):
        image += b"\0"
    assert head[1:] == [str(len(image)), str(_fnv(image))]
    assert [next(calls) for _ in p.kernels] == [["func", k.name] for k in p.kernels]
    base = {}
    for b in p.buffers:
        c = next(calls)
        assert c[0] == "malloc" and int(c[2]) == max(b.nbytes, 1)
        base[b.id] = int(c[1])
    wvals = {}
    if "weights" in ex.files:
        from kcc.targets.program import read_safetensors
        wvals = read_safetensors(ex.path("weights").read_bytes(), p)
    for b in p.buffers:
        if b.role == "weight":
            c = next(calls)
            assert c[0] == "h2d" and int(c[1]) == base[b.id] and int(c[3]) == b.nbytes
            assert int(c[4]) == _fnv(wvals[b.id])
    for k, i in enumerate(p.inputs):
        c = next(calls)
        assert c[0] == "h2d" and int(c[1]) == base[i]
        assert int(c[4]) == _fnv(np.ascontiguousarray(ex.inputs[k]).tobytes())
    for ln in p.launches:
        c = next(calls)
        desc = p.kernel(ln.kernel)
        assert c[:2] == ["launch", ln.kernel]
        assert [int(v) for v in c[2:8]] == desc.global_size + desc.local_size
        assert c[8] == "0"
        assert arg_pointers(desc, c[9:]) == [base[b] + o for b, o in zip(ln.args, ln.offsets)]
    assert next(calls) == ["sync"]
    for i in p.outputs:
        c = next(calls)
        assert c[0] == "d2h" and int(c[2]) == base[i] and int(c[3]) == p.buffer(i).nbytes
    assert next(calls, None) is None


def _hip_pointers(desc: Any, rest: list[str]) -> list[int]:
    facts = desc.target["amd"]
    assert rest[0] == "karg" and int(rest[1]) == facts["kernarg_size"]
    karg = bytes(int(v) for v in rest[2:])
    return [struct.unpack_from("<Q", karg, off)[0] for off in facts["kernarg_offsets"]]


def _cuda_pointers(desc: Any, rest: list[str]) -> list[int]:
    assert rest[0] == "params" and int(rest[1]) == len(desc.args)
    return [int(v) for v in rest[2:]]


@needs_cc
@pytest.mark.parametrize("weights", ["rodata", "external"])
def test_hip_launcher_calls_the_runtime_as_the_manifest_says(tmp_path, weights):
    ex = _export(GPU_MODELS["cnn"], tmp_path / "p", "amd", "gfx1100", weights=weights)
    setup = "  (void)argc; (void)argv;"
    if weights == "external":       # main.c loads the weights first
        setup += (f'\n  if (net_load_weights("{ex.path("weights")}")) '
                  '{ fprintf(stderr, "%s\\n", net_error()); return 1; }')
    log = _launcher_log(ex, tmp_path, "KCC_LIBAMDHIP64", {}, setup)
    _check_log(ex, log, _hip_pointers)


@needs_cc
@pytest.mark.parametrize("ptxas", [True, False])
def test_cuda_launcher_calls_the_driver_as_the_manifest_says(tmp_path, monkeypatch, ptxas):
    """With ptxas the launcher embeds the cubin; without it, the PTX (NUL-terminated), which
    the driver compiles when it loads the module."""
    if not ptxas:
        import kcc.tinygrad.exporting as exporting
        real = shutil.which
        monkeypatch.setattr(exporting.shutil, "which",
                            lambda name, *a, **k: None if name == "ptxas" else real(name))
    ex = _export(GPU_MODELS["ints"], tmp_path / "p", "cuda", None)
    want = "net.cubin" if ptxas and shutil.which("ptxas") else "net.ptx"
    assert ex.files["object"] == want
    nparams = ",".join(f"{k.name}:{len(k.args)}" for k in ex.program.kernels)
    log = _launcher_log(ex, tmp_path, "KCC_LIBCUDA", {"FAKE_NPARAMS": nparams},
                        "  (void)argc; (void)argv;")
    _check_log(ex, log, _cuda_pointers)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
@pytest.mark.parametrize("model", ["cnn", "attention", "half"])
def test_ptxas_accepts_every_kernel_of_a_cuda_program(model, tmp_path):
    """With ptxas on PATH the export assembles a cubin (ptxas accepted every kernel's PTX)."""
    ex = _export(GPU_MODELS[model], tmp_path / "p", "cuda", None)
    assert ex.files["object"] == "net.cubin"
    assert ex.path("object").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.parametrize("ptxas", [True, False])
def test_an_edited_cuda_manifest_is_refused(tmp_path, monkeypatch, ptxas):
    """The CUDA module carries the program's facts (`__kcc_program`, in the cubin's
    `.nv.global.init` or the PTX text), so a manifest edited after export is refused before
    anything launches, as for x86 and AMD."""
    import json

    from kcc.targets.program import (ProgramError, check_object_program, read_program,
                                     run_program)
    if not ptxas:
        import kcc.tinygrad.exporting as exporting
        real = shutil.which
        monkeypatch.setattr(exporting.shutil, "which",
                            lambda name, *a, **k: None if name == "ptxas" else real(name))
    ex = _export(GPU_MODELS["ints"], tmp_path / "p", "cuda", None)
    m = ex.path("manifest")
    _, p = read_program(m)
    check_object_program(p, ex.path("object").read_bytes(), "cuda")     # as exported: agrees
    doc = json.loads(m.read_text())
    assert len(doc["launches"]) > 1
    doc["launches"].reverse()           # consistent in itself, but not the module's program
    m.write_text(json.dumps(doc))
    with pytest.raises(ProgramError, match="manifest's 'launches' is not the object's"):
        run_program(m, ex.inputs)
