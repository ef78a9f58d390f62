"""Whole programs on the GPU targets: the C launcher `NAME_launch.c` (HIP module API for AMD,
CUDA driver API for CUDA, the vendor library loaded with dlopen so no vendor header is needed to
build it), and running a program manifest launch by launch (`kcc run NAME.json`, on a GPU or,
for AMD, in kcc's emulator). docs/export.md describes both.

The launcher embeds the code object (and, with weights "rodata", the weights) as byte arrays,
keeps one device allocation per program buffer, made on the first call, and per call copies
the inputs in, launches every kernel in order (the kernel argument block laid out as the
manifest's target facts say) and copies the outputs back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcc.targets.manifest import KernelDesc
from kcc.targets.program import C_TYPES, Program, ProgramError

# The stand-in libraries of the loader tests are named by these variables, as for the
# in-process loaders (kcc/targets/gpu_runtime.py load_library).
LIB_ENV = {"amd": "KCC_LIBAMDHIP64", "cuda": "KCC_LIBCUDA"}
LIB_NAMES = {"amd": ("libamdhip64.so", "libamdhip64.so.6", "/opt/rocm/lib/libamdhip64.so"),
             "cuda": ("libcuda.so.1", "libcuda.so")}


@dataclass(frozen=True)
class _Api:
    """The C spelling of one driver API's calls (the prototypes are declared by hand: they
    are the vendors' documented C signatures, hip_runtime_api.h and cuda.h)."""

    decls: tuple[tuple[str, str, str], ...]     # (name, return type, parameter list)
    init: str                                    # statements run once; `fail(...)` on error
    malloc: str                                  # {i}: buffer, {n}: bytes
    htod: str                                    # {dst} device address, {src}, {n}
    dtoh: str
    sync: str
    errfn: str                                   # a statement setting `const char *s`


_HIP = _Api(
    decls=(("hipSetDevice", "int", "int"),
           ("hipModuleLoadData", "int", "void **, const void *"),
           ("hipModuleGetFunction", "int", "void **, void *, const char *"),
           ("hipMalloc", "int", "void **, size_t"),
           ("hipMemcpy", "int", "void *, const void *, size_t, int"),
           ("hipModuleLaunchKernel", "int", "void *, unsigned, unsigned, unsigned, unsigned, "
            "unsigned, unsigned, unsigned, void *, void **, void **"),
           ("hipDeviceSynchronize", "int", "void"),
           ("hipGetErrorString", "const char *", "int")),
    init="CALL(hipSetDevice, (0));\n  CALL(hipModuleLoadData, (&module, image));",
    malloc="CALL(hipMalloc, ((void **)&dev[{i}], {n}));",
    htod="CALL(hipMemcpy, ((void *)(uintptr_t)({dst}), {src}, {n}, 1));",
    dtoh="CALL(hipMemcpy, ({dst}, (const void *)(uintptr_t)({src}), {n}, 2));",
    sync="CALL(hipDeviceSynchronize, ());",
    errfn="s = api.hipGetErrorString ? api.hipGetErrorString(r) : 0;")

_CUDA = _Api(
    decls=(("cuInit", "int", "unsigned"), ("cuDeviceGet", "int", "int *, int"),
           ("cuDevicePrimaryCtxRetain", "int", "void **, int"),
           ("cuCtxSetCurrent", "int", "void *"),
           ("cuModuleLoadData", "int", "void **, const void *"),
           ("cuModuleGetFunction", "int", "void **, void *, const char *"),
           ("cuMemAlloc_v2", "int", "uint64_t *, size_t"),
           ("cuMemcpyHtoD_v2", "int", "uint64_t, const void *, size_t"),
           ("cuMemcpyDtoH_v2", "int", "void *, uint64_t, size_t"),
           ("cuLaunchKernel", "int", "void *, unsigned, unsigned, unsigned, unsigned, "
            "unsigned, unsigned, unsigned, void *, void **, void **"),
           ("cuCtxSynchronize", "int", "void"),
           ("cuGetErrorString", "int", "int, const char **")),
    init="CALL(cuInit, (0));\n  { int d; void *ctx; CALL(cuDeviceGet, (&d, 0));\n"
         "    CALL(cuDevicePrimaryCtxRetain, (&ctx, d)); CALL(cuCtxSetCurrent, (ctx)); }\n"
         "  CALL(cuModuleLoadData, (&module, image));",
    malloc="CALL(cuMemAlloc_v2, (&dev[{i}], {n}));",
    htod="CALL(cuMemcpyHtoD_v2, ({dst}, {src}, {n}));",
    dtoh="CALL(cuMemcpyDtoH_v2, ({dst}, {src}, {n}));",
    sync="CALL(cuCtxSynchronize, ());",
    errfn="if (!api.cuGetErrorString || api.cuGetErrorString(r, &s)) s = 0;")
APIS = {"amd": _HIP, "cuda": _CUDA}


def _bytes_c(data: bytes, per_line: int = 24) -> str:
    rows = [",".join(str(b) for b in data[i:i + per_line])
            for i in range(0, len(data), per_line)]
    return ",\n".join(rows) or "0"


def _launch_c(target: str, k: int, desc: KernelDesc, args: list[int], offs: list[int]) -> str:
    """The statements of one launch: the argument block, the launch call."""
    grid, block = desc.global_size, desc.local_size
    if not all(isinstance(d, int) for d in grid + block):
        raise ProgramError(f"kernel {desc.name}: symbolic launch dimensions are not supported")
    dims = ", ".join(str(d) for d in grid + block)
    ptrs = [f"dev[{b}] + {o}u" for b, o in zip(args, offs)]
    if target == "amd":
        facts = desc.target["amd"]
        size = facts["kernarg_size"]
        lines = [f"  {{ unsigned char karg[{max(size, 8)}]; uint64_t p; "
                 f"size_t ks = {size};", "    memset(karg, 0, sizeof karg);"]
        for p, off in zip(ptrs, facts["kernarg_offsets"]):
            lines.append(f"    p = {p}; memcpy(karg + {off}, &p, 8);")
        lines += ["    void *extra[] = {(void *)1, karg, (void *)2, &ks, (void *)3};",
                  f"    CALL(hipModuleLaunchKernel, (fns[{k}], {dims}, 0, 0, 0, extra)); }}"]
        return "\n".join(lines)
    lines = [f"  {{ uint64_t a[{max(len(ptrs), 1)}]; void *pp[{max(len(ptrs), 1)}];"]
    for j, p in enumerate(ptrs):
        lines.append(f"    a[{j}] = {p}; pp[{j}] = &a[{j}];")
    # static shared memory is in the cubin; 0 bytes of dynamic shared memory
    lines.append(f"    CALL(cuLaunchKernel, (fns[{k}], {dims}, 0, 0, pp, 0)); }}")
    return "\n".join(lines)


def launcher_c(p: Program, target: str, image: bytes, weights: bytes | None) -> str:
    """NAME_launch.c for target ("amd", "cuda"): image the code object (PTX text must end
    in NUL), weights the weights blob to embed (None: NAME_load_weights reads NAME.weights)."""
    api = APIS[target]
    n = p.name
    kernels = [k.name for k in p.kernels]
    kidx = {name: i for i, name in enumerate(kernels)}
    has_w = any(b.role == "weight" for b in p.buffers)
    params = []
    for what, ids in (("in", p.inputs), ("out", p.outputs)):
        for k, i in enumerate(ids):
            const = "const " if what == "in" else ""
            params.append(f"{const}{C_TYPES[p.buffer(i).dtype]} *{what}{k}")
    out: list[str] = [
        f"/* Generated by kcc: the {'HIP' if target == 'amd' else 'CUDA driver API'} launcher "
        f"of the program {n} (docs/export.md).", "   Build: cc -c " + n + "_launch.c; link "
        "with -ldl. The runtime library is opened with dlopen. */",
        "#include <dlfcn.h>", "#include <stdint.h>", "#include <stdio.h>",
        "#include <stdlib.h>", "#include <string.h>", f'#include "{n}.h"', "",
        f"static const unsigned char image[{len(image)}] __attribute__((aligned(64))) = {{",
        _bytes_c(image), "};"]
    if weights is not None and has_w:
        out += [f"static const unsigned char weights[{len(weights)}] = {{", _bytes_c(weights),
                "};"]
    sizes = ", ".join(f"{max(b.nbytes, 1)}u" for b in p.buffers)
    names = ", ".join(f'"{k}"' for k in kernels)
    out += [f"enum {{ NBUF = {len(p.buffers)}, NKERN = {len(kernels)} }};",
            f"static const size_t buf_bytes[NBUF] = {{{sizes}}};",
            f"static const char *const kernel_names[NKERN] = {{{names}}};",
            "static struct {"]
    out += [f"  {ret} (*{name})({args});" for name, ret, args in api.decls]
    out += ["} api;", "static void *lib, *module, *fns[NKERN];",
            "static uint64_t dev[NBUF];", "static int ready;", "static char err[512];",
            "static unsigned char *host_weights;" if weights is None and has_w else "", "",
            "static int fail(const char *what, int r) {", "  const char *s = 0;",
            f"  {api.errfn}",
            f'  snprintf(err, sizeof err, "{n}: %s failed: %s (%d)", what, s ? s : "error", '
            "r);", "  return 1;", "}",
            "#define CALL(f, args) do { int r_ = api.f args; if (r_) return fail(#f, r_); } "
            "while (0)", "",
            f"const char *{n}_error(void) {{ return err; }}", "",
            "static int open_library(void) {",
            f'  const char *names[] = {{getenv("{LIB_ENV[target]}"), '
            + ", ".join(f'"{x}"' for x in LIB_NAMES[target]) + "};",
            "  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)",
            "    if (names[i] && *names[i]) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);",
            "  if (!lib) {",
            f'    snprintf(err, sizeof err, "{n}: cannot open the GPU runtime library '
            f'({LIB_NAMES[target][0]}): %s", dlerror());', "    return 1;", "  }"]
    for name, _, _ in api.decls:
        optional = name in ("hipGetErrorString", "cuGetErrorString")
        out.append(f'  *(void **)&api.{name} = dlsym(lib, "{name}");')
        if not optional:
            out.append(f"  if (!api.{name}) {{ snprintf(err, sizeof err, "
                       f'"{n}: the GPU runtime lacks {name}"); return 1; }}')
    out += ["  return 0;", "}", "", "static int init(void) {", "  if (ready) return 0;",
            "  if (!lib && open_library()) return 1;", f"  {api.init}",
            "  for (int k = 0; k < NKERN; k++)",
            "    CALL(" + ("hipModuleGetFunction" if target == "amd" else "cuModuleGetFunction")
            + ", (&fns[k], module, kernel_names[k]));",
            "  for (int i = 0; i < NBUF; i++) {",
            "    " + api.malloc.format(i="i", n="buf_bytes[i]"), "  }"]
    for b in p.buffers:
        if b.role == "weight":
            src = f"weights + {b.offset}" if weights is not None else f"host_weights + {b.offset}"
            out.append("  " + api.htod.format(dst=f"dev[{b.id}]", src=src, n=b.nbytes))
    out += ["  ready = 1;", "  return 0;", "}", ""]
    if weights is None and has_w:
        out += _load_weights_c(p, api)
    out += [f"int {n}({', '.join(params) or 'void'}) {{"]
    if weights is None and has_w:
        out.append(f'  if (!host_weights) {{ snprintf(err, sizeof err, "{n}: no weights '
                   f'loaded: call {n}_load_weights(path) first"); return 1; }}')
    out.append("  if (init()) return 1;")
    for k, i in enumerate(p.inputs):
        out.append("  " + api.htod.format(dst=f"dev[{i}]", src=f"in{k}",
                                          n=p.buffer(i).nbytes))
    for ln in p.launches:
        out.append(_launch_c(target, kidx[ln.kernel], p.kernel(ln.kernel), ln.args,
                             ln.offsets))
    out.append("  " + api.sync)
    for k, i in enumerate(p.outputs):
        out.append("  " + api.dtoh.format(dst=f"out{k}", src=f"dev[{i}]",
                                          n=p.buffer(i).nbytes))
    out += ["  err[0] = 0;", "  return 0;", "}", ""]
    return "\n".join(line for line in out if line is not None) + "\n"


def _load_weights_c(p: Program, api: _Api) -> list[str]:
    """NAME_load_weights(path): the data of NAME.weights (after its safetensors header)."""
    n, size = p.name, p.weights_bytes
    return [
        f"int {n}_load_weights(const char *path) {{",
        '  FILE *f = fopen(path, "rb"); unsigned char h[8]; uint64_t hl = 0;',
        f'  if (!f) {{ snprintf(err, sizeof err, "{n}: cannot open %s", path); return 1; }}',
        "  if (fread(h, 1, 8, f) != 8) goto bad;",
        "  for (int i = 7; i >= 0; i--) hl = hl << 8 | h[i];",
        "  if (fseek(f, (long)hl, SEEK_CUR)) goto bad;",
        f"  free(host_weights); host_weights = malloc({max(size, 1)}u);",
        f"  if (!host_weights || fread(host_weights, 1, {size}u, f) != {size}u) goto bad;",
        "  fclose(f);",
        "  if (ready) {"] + [
        "    " + api.htod.format(dst=f"dev[{b.id}]", src=f"host_weights + {b.offset}",
                                n=b.nbytes)
        for b in p.buffers if b.role == "weight"] + [
        "  }", "  return 0;", "bad:",
        "  fclose(f); free(host_weights); host_weights = 0;",
        f'  snprintf(err, sizeof err, "{n}: %s is not this program\'s weights file", path);',
        "  return 1;", "}", ""]


# -- running a program manifest launch by launch ---------------------------------------------

def run_gpu_program(doc: dict[str, Any], p: Program, folder: Path, ins: list[Any],
                    emulate: bool) -> list[Any]:
    """Run every launch of the program on host-side storage (one array per buffer): in kcc's
    AMD emulator (emulate) or on the GPU through the target's loader, copying per launch."""
    import numpy as np

    from kcc.targets import registry
    from kcc.targets.manifest import LaunchError
    from kcc.targets.manifest_check import check_launch
    from kcc.targets.program import artifact, np_dtype, read_safetensors
    target = doc["target"]
    spec = registry.get(target)
    data = artifact(doc, folder, "object")
    if emulate and target != "amd":
        raise ProgramError("--emulate runs AMD programs; this program is for " + target)
    store = [np.zeros(max(b.nbytes, 1), np.uint8) for b in p.buffers]
    if any(b.role == "weight" for b in p.buffers):
        vals = read_safetensors(artifact(doc, folder, "weights"), p)
        for i, v in vals.items():
            store[i][:len(v)] = np.frombuffer(v, np.uint8)
    for k, i in enumerate(p.inputs):
        store[i][:p.buffer(i).nbytes] = np.frombuffer(ins[k].tobytes(), np.uint8)
    for j, ln in enumerate(p.launches):
        desc = p.kernel(ln.kernel)
        views = []
        for a, b, off in zip(desc.args, ln.args, ln.offsets):
            dt = np_dtype(a.dtype)
            views.append(store[b][off:off + a.size * dt.itemsize].view(dt))
        try:
            vals2 = check_launch(desc, views)
            (spec.emulate if emulate else spec.launch)(data, desc, vals2)
        except LaunchError as e:
            raise ProgramError(f"launch {j} ({ln.kernel}): {e}") from None
        for a, v, w in zip(desc.args, views, vals2):
            if "w" in a.access and not np.shares_memory(v, w):
                v[...] = w
    return [store[i][:p.buffer(i).nbytes].view(np_dtype(p.buffer(i).dtype)).copy()
            for i in p.outputs]
