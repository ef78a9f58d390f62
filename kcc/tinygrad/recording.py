"""Capture: every tinygrad kernel that runs, as `.uop` files with the values tinygrad computed.

    with kcc.tinygrad.capture("out/"):
        y.realize()

writes to out/:

- `kNNN_NAME.uop` — the kernel as tinygrad's CPU path lowers it (the graph `DEV=CPU` compiles),
  and, with `gpu=True` (the default), `kNNN_NAME.ptx.uop` / `kNNN_NAME.hip.uop` — the same
  kernel lowered by tinygrad's PTX and HIP renderers (GPU-style: SPECIAL thread indices, LOCAL
  buffers, WMMA where tinygrad's tensor-core optimization applies), which construct without a
  GPU (`gpu=("ptx", "hip", "cuda", "hip_gfx942")` adds `kNNN_NAME.cuda.uop`, the CUDA C
  renderer for sm_90, and `kNNN_NAME.hip_gfx942.uop`, the HIP renderer for gfx942);
- `kNNN.argS.in.npy` / `kNNN.argS.out.npy` — every buffer argument (kcc slot S) before the
  kernel ran and, for those it writes, after;
- `capture.json` — the kernels in execution order with their arguments (kcc slot, tinygrad
  slot, buffer id, dtype, element count, access, value files, scalar values), the worker count,
  and every buffer seen with its role: `input` (read before any captured kernel wrote it),
  `intermediate` (written, then read by a later kernel) or `output` (written, not read after).

Each `kNNN_NAME.uop` compiles with `kcc compile`, and `kcc run` on the `.in.npy` files (slot
order) reproduces the `.out.npy` files. Hooks (installed only inside the `with`): tinygrad's
`lower_and_compile` (to see each kernel's AST) and the `pm_exec` matcher's `rewrite` (to see
each call run and its buffers). tinygrad itself is not changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tinygrad.device import Buffer
from tinygrad.engine import realize
from tinygrad.helpers import Target
from tinygrad.uop.ops import Ops, UOp

from kcc.frontend.tinygrad_import import TinygradImportError
from kcc.tinygrad.renderer import dtype_name, program_to_uop

FORMAT_VERSION = 1


def lower(ast: UOp, renderer: Any) -> list[UOp]:
    """The linearized program tinygrad makes of a kernel AST for renderer (no compile)."""
    from tinygrad.codegen import full_rewrite_to_sink, line_rewrite, pm_linearize_cleanups
    from tinygrad.codegen.late.linearizer import linearize
    sink = full_rewrite_to_sink(ast, renderer, optimize=ast.tag is None)
    return line_rewrite(linearize(sink), pm_linearize_cleanups)


GPU_STYLES = ("ptx", "hip")          # what `gpu=True` lowers for; "cuda" on request


def gpu_renderers(styles: tuple[str, ...] = GPU_STYLES) -> dict[str, Any]:
    """tinygrad's PTX (sm_80), HIP (gfx1100; `hip_gfx942`: gfx942) and CUDA C (sm_90)
    renderers, by style; they
    construct without a GPU (the HIP and CUDA ones with the offline compilers, which only
    compiling would run)."""
    from tinygrad.renderer.cstyle import CUDARenderer, HIPRenderer
    from tinygrad.renderer.ptx import PTXRenderer
    make = {"ptx": lambda: PTXRenderer(Target(device="CUDA", arch="sm_80")),
            "hip": lambda: HIPRenderer(Target(device="AMD", arch="gfx1100"), use_hipcc=True),
            "cuda": lambda: CUDARenderer(Target(device="CUDA", arch="sm_90"), use_nvcc=True),
            "hip_gfx942": lambda: HIPRenderer(Target(device="AMD", arch="gfx942"),
                                              use_hipcc=True)}
    return {s: make[s]() for s in styles}


def cpu_renderer() -> Any:
    """A renderer that lowers exactly as tinygrad's CPU (clang) path does."""
    from kcc.tinygrad.renderer import KCCRenderer
    return KCCRenderer(Target(device="CPU", arch="x86_64,native"))


def _np(buf: Buffer) -> np.ndarray:
    """A copy of a buffer's contents (bfloat16 as its uint16 bit patterns)."""
    raw = bytes(buf.as_memoryview())
    name = dtype_name(buf.dtype)
    np_dt = {"bfloat16": np.uint16, "bool": np.bool_}.get(name or "", None)
    if np_dt is None:
        np_dt = np.dtype(name)
    return np.frombuffer(raw, dtype=np_dt).copy()


@dataclass
class _Kernel:
    """One captured execution."""

    index: int
    name: str
    uop: str | None
    gpu: dict[str, str | None]
    workers: int
    args: list[dict] = field(default_factory=list)
    error: str | None = None
    key: bytes | None = None          # the PROGRAM's key: one per distinct kernel


class Capture:
    """The context manager behind `kcc.tinygrad.capture(out_dir)`.

    gpu: also write each kernel lowered by tinygrad's PTX and HIP renderers; a tuple of
    styles ("ptx", "hip", "cuda": CUDA C for sm_90, "hip_gfx942") picks the renderers.
    values: save the buffers' values (.npy) before and after each kernel."""

    def __init__(self, out_dir: str | Path, gpu: bool | tuple[str, ...] = True,
                 values: bool = True):
        self.out = Path(out_dir)
        self.gpu, self.values = bool(gpu), values
        self.styles = GPU_STYLES if gpu is True else tuple(gpu or ())
        self.kernels: list[_Kernel] = []
        self.asts: dict[bytes, UOp] = {}          # PROGRAM key -> the kernel's AST
        # PROGRAM key -> (.uop file, GPU-style files, error, the imported kernel)
        self.files: dict[bytes, tuple[str | None, dict, str | None, Any]] = {}
        self.buffers: list[Buffer] = []            # kept alive so ids stay unique
        self.buf_ids: dict[int, int] = {}
        self.events: list[tuple[int, str]] = []    # (buffer id, "r" / "w") in order
        self._saved: dict[str, Any] = {}
        self._renderers: dict[str, Any] | None = None
        # (PROGRAM key, "ptx" / "hip") -> the GPU-style lowering, imported (for export)
        self.gpu_imported: dict[tuple[bytes, str], Any] = {}
        self._cpu: Any = None

    # -- hooks -----------------------------------------------------------------------------

    def __enter__(self) -> Capture:
        self.out.mkdir(parents=True, exist_ok=True)
        lac, rewrite = realize.lower_and_compile, realize.pm_exec.rewrite
        self._saved = {"lower_and_compile": lac, "rewrite": rewrite}

        def lower_and_compile(linear: UOp) -> UOp:
            todo = [a for c in linear.toposort() if c.op is Ops.CALL
                    and (a := realize._get_call_to_compile(c)) is not None]
            ret = lac(linear)
            for ast, ren in todo:
                prg = realize.to_program_cache.get(realize.to_program_key(ast, ren))
                if prg is not None:
                    self.asts.setdefault(prg.key, ast)
            return ret

        def exec_rewrite(call: UOp, ctx: Any = None) -> Any:
            if call.op is Ops.CALL and call.src[0].op is Ops.PROGRAM:
                return self._run(call, ctx, rewrite)
            return rewrite(call, ctx)

        realize.lower_and_compile = lower_and_compile
        realize.pm_exec.rewrite = exec_rewrite     # an instance attribute shadows the method
        return self

    def __exit__(self, *exc: Any) -> None:
        realize.lower_and_compile = self._saved["lower_and_compile"]
        del realize.pm_exec.rewrite
        self.write_manifest()

    # -- one kernel ---------------------------------------------------------------------------

    def _id(self, buf: Buffer) -> int:
        if id(buf) not in self.buf_ids:
            self.buf_ids[id(buf)] = len(self.buffers)
            self.buffers.append(buf)
        return self.buf_ids[id(buf)]

    def _run(self, call: UOp, ctx: Any, rewrite: Any) -> Any:
        prg = call.src[0]
        info = prg.arg
        try:
            resolved = realize.resolve_params(call, ctx.input_uops)
            bufs = {slot: resolved[slot].buffer for slot in info.globals}
            if not all(isinstance(b, Buffer) for b in bufs.values()):
                raise TinygradImportError("a multi-device buffer (not captured)")
        except TinygradImportError as e:
            self.kernels.append(_Kernel(len(self.kernels), info.function_name, None, {}, 1,
                                        error=str(e)))
            return rewrite(call, ctx)
        k = self._describe(prg, len(self.kernels))
        self.kernels.append(k)
        vals = dict(zip((v.arg.slot for v in info.vars), info.vals(ctx.var_vals)))
        before: dict[int, np.ndarray] = {}
        for slot, b in bufs.items():
            b.ensure_allocated()
            if self.values:
                before[slot] = _np(b)
        ret = rewrite(call, ctx)
        ins, outs = set(info.ins), set(info.outs)
        for a in k.args:
            ts = a["tinygrad_slot"]
            if a["kind"] == "scalar":
                a["value"] = vals.get(ts)
                continue
            b = bufs[ts]
            a["buffer"] = self._id(b)
            a["access"] = ("r" if ts in ins else "") + ("w" if ts in outs else "")
            if ts in ins or ts not in outs:
                self.events.append((a["buffer"], "r"))
            if ts in outs:
                self.events.append((a["buffer"], "w"))
            if self.values:
                stem = f"k{k.index:03d}.arg{a['slot']}"
                np.save(self.out / f"{stem}.in.npy", before[ts])
                a["in"] = f"{stem}.in.npy"
                if ts in outs:
                    np.save(self.out / f"{stem}.out.npy", _np(b))
                    a["out"] = f"{stem}.out.npy"
        return ret

    def _describe(self, prg: UOp, index: int) -> _Kernel:
        """The kernel's .uop files (written once per distinct program) and its arguments."""
        info = prg.arg
        if prg.key not in self.files:
            self.files[prg.key] = self._write_uops(prg, index)
        uop, gpu, error, imported = self.files[prg.key]
        k = _Kernel(index, info.function_name, uop, gpu, 1, error=error, key=prg.key)
        params = {u.arg.slot: u for u in prg.src[0].toposort() if u.op is Ops.PARAM}
        if imported is not None:
            k.workers = imported.workers
            for kslot, ts in enumerate(imported.slots):
                u = params[ts]
                kind = "scalar" if u.arg.addrspace.name == "ALU" else "buffer"
                a: dict[str, Any] = {"slot": kslot, "tinygrad_slot": ts, "kind": kind,
                                     "dtype": dtype_name(u.dtype)}
                if kind == "buffer":
                    a["size"] = int(u.max_numel())
                else:
                    a["name"] = u.arg.name
                    if imported.worker_param and ts == imported.worker_slot:
                        a["worker"] = True      # core_id: one call per worker, no one value
                k.args.append(a)
        return k

    def _cpu_program(self, prg: UOp) -> list[UOp]:
        """The CPU-path linearized program: the PROGRAM's own if a C-style CPU renderer made it,
        else lowered again from the AST."""
        lin = prg.src[1] if len(prg.src) > 1 else None
        if lin is not None and lin.op is Ops.LINEAR and \
                not any(u.op is Ops.INS for u in lin.src) and prg.arg.target.device == "CPU" \
                and prg.arg.target.renderer in ("", "CLANG", "KCC"):
            return list(lin.src)
        if self._cpu is None:
            self._cpu = cpu_renderer()
        return lower(self.asts[prg.key], self._cpu)

    def _write_uops(self, prg: UOp, index: int) -> tuple[str | None, dict, str | None, Any]:
        stem = f"k{index:03d}_{prg.arg.function_name}"
        uop, error, imported = None, None, None
        try:
            imported = program_to_uop(self._cpu_program(prg))
            (self.out / f"{stem}.uop").write_text(imported.text)
            uop = f"{stem}.uop"
        except TinygradImportError as e:
            error = str(e)
        except KeyError:
            error = "the kernel was compiled before the capture began by a renderer whose " \
                "program is not tinygrad's CPU path, and its AST was not seen"
        gpu: dict[str, str | None] = {}
        if self.gpu and prg.key in self.asts:
            if self._renderers is None:
                self._renderers = gpu_renderers(self.styles)
            for style, ren in self._renderers.items():
                try:
                    imp = program_to_uop(lower(self.asts[prg.key], ren))
                    self.gpu_imported[(prg.key, style)] = imp
                    text = imp.text
                    (self.out / f"{stem}.{style}.uop").write_text(text)
                    gpu[style] = f"{stem}.{style}.uop"
                except TinygradImportError as e:
                    gpu[style] = None
                    gpu[f"{style}_error"] = str(e)
        return uop, gpu, error, imported

    # -- the manifest ----------------------------------------------------------------------

    def roles(self) -> dict[int, str]:
        """Each buffer's role from the order of reads and writes (module docstring)."""
        written: set[int] = set()
        role: dict[int, str] = {}
        for b, rw in self.events:
            if rw == "r":
                if b not in written:
                    role[b] = "input"
                elif role.get(b) == "output":
                    role[b] = "intermediate"
            else:
                written.add(b)
                role.setdefault(b, "output")
        return role

    def write_manifest(self) -> None:
        """Write capture.json (see the module docstring)."""
        roles = self.roles()
        doc = {
            "format": "kcc-tinygrad-capture", "version": FORMAT_VERSION,
            "buffers": [{"id": i, "dtype": dtype_name(b.dtype), "size": b.size,
                         "role": roles.get(i, "unused")} for i, b in enumerate(self.buffers)],
            "kernels": [{"index": k.index, "name": k.name, "uop": k.uop, "gpu": k.gpu,
                         "workers": k.workers, "args": k.args, "error": k.error}
                        for k in self.kernels],
        }
        (self.out / "capture.json").write_text(json.dumps(doc, indent=1) + "\n")
