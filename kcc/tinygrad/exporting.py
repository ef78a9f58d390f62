"""Whole tinygrad programs ahead of time: `kcc.tinygrad.export(fn, *inputs, out=…)`.

    import kcc.tinygrad
    kcc.tinygrad.export(model, np.zeros((4, 32), np.float32), out="net/", name="net")
    # net/net.h, net/net.o, net/net.json: cc main.c net/net.o -lpthread -lm

How the program is captured: `fn` runs once on the example inputs under kcc's capture
(kcc/tinygrad/recording.py) — the schedule of one call, not TinyJit: every kernel that runs,
in order, with the buffers it reads and writes. A buffer read before any kernel wrote it is an
input (one of the example inputs) or else a weight (its value at capture time goes into the
artifact); a buffer the call returns is an output; every other buffer is an intermediate in
the workspace. Parameters of `fn` (or of the object a bound method belongs to, and of the
objects a function names: its closure, the globals it uses) are realized first, so that
initializing them is not part of the program. docs/export.md has the details.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from kcc.targets.program import (
    Launch, ProgBuffer, Program, ProgramError, c_header, is_identifier, lay_out, program_doc,
    safetensors_bytes, weights_blob)

TARGETS = ("x86", "amd", "cuda")
# the tinygrad renderer whose lowering each target compiles (None: the CPU path's)
STYLES = {"x86": None, "amd": "hip", "cuda": "ptx"}
WEIGHTS = ("rodata", "external")


class ExportError(Exception):
    """A program that cannot be exported; the message says which kernel or buffer, and why."""


@dataclass
class Exported:
    """What export wrote: the folder, the files by kind, the program, and tinygrad's own
    outputs of the captured call (numpy, in return order) with the inputs it ran on."""

    out: Path
    name: str
    target: str
    files: dict[str, str]
    program: Program
    inputs: list[np.ndarray] = field(default_factory=list)
    outputs: list[np.ndarray] = field(default_factory=list)

    def path(self, kind: str) -> Path:
        return self.out / self.files[kind]


@dataclass
class _Run:
    """One kernel run of the capture, resolved to program buffers."""

    name: str
    key: bytes
    args: list[int]                 # program buffer id per kcc slot (the CPU graph)
    offsets: list[int]              # the byte offset into it
    tg_args: dict[int, tuple[int, int]]   # tinygrad slot -> (program buffer id, offset)


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ExportError(f"{out} is not empty; export into a new or empty folder, or force "
                          "(force=True, --force) to replace the files there")


def _tensors(example_inputs: tuple) -> list[Any]:
    from tinygrad import Tensor
    ts = []
    for k, x in enumerate(example_inputs):
        if not isinstance(x, Tensor):
            try:
                x = Tensor(np.ascontiguousarray(x))
            except Exception as e:       # tinygrad's own refusal of a value, shown as ours
                raise ExportError(f"input {k}: not a Tensor or an array ({e})") from None
        ts.append(x.contiguous())
    Tensor.realize(*ts)
    return ts


def _realize_parameters(fn: Callable) -> None:
    """Realize the parameters of fn (and of the object of a bound method)."""
    from tinygrad import Tensor
    from tinygrad.nn.state import get_parameters
    params = []
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
             if not isinstance(getattr(c, "cell_contents", None), (int, float, str))]
    code, glob = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    named = [glob[n] for n in (code.co_names if code else ()) if n in glob
             and not isinstance(glob[n], (type, types.ModuleType, types.FunctionType, int,
                                          float, str))]
    for obj in (fn, getattr(fn, "__self__", None), *cells, *named):
        if obj is not None:
            try:
                params += get_parameters(obj)
            except Exception:            # an object tinygrad cannot walk has none we know of
                pass
    if params:
        Tensor.realize(*params)


def _capture(fn: Callable, ts: list[Any], gpu: bool, tmp: str) -> tuple[Any, list[Any]]:
    from tinygrad import Tensor

    from kcc.tinygrad.recording import Capture
    cap = Capture(tmp, gpu=gpu, values=False)
    with cap:
        try:
            res = fn(*ts)
        except Exception as e:
            raise ExportError(f"the function raised {type(e).__name__}: {e}") from None
        outs = [res] if isinstance(res, Tensor) else list(res) \
            if isinstance(res, (tuple, list)) else None
        if not outs or not all(isinstance(o, Tensor) for o in outs):
            raise ExportError("the function must return a Tensor or a tuple of Tensors, not "
                              f"{type(res).__name__}")
        outs = [o.contiguous() for o in outs]
        Tensor.realize(*outs)
    return cap, outs


def _buffer_of(t: Any) -> Any:
    return t.uop.base.buffer


def _np_bytes(buf: Any) -> bytes:
    return bytes(buf.as_memoryview())


class _Builder:
    """The Program of one capture (module docstring: roles). Program buffers are storage
    roots: a captured buffer that is a view (tinygrad's memory planner packs intermediates
    into shared buffers) is its base at a byte offset."""

    def __init__(self, name: str, cap: Any, ins: list[Any], outs: list[Any]):
        from kcc.tinygrad.renderer import dtype_name
        self.name, self.cap, self.dtype_name = name, cap, dtype_name
        self.buffers: list[ProgBuffer] = []
        self.of_root: dict[int, int] = {}              # capture root id -> program id
        self.values: dict[int, bytes] = {}
        in_ids = [self._root(cap._id(_buffer_of(t))) for t in ins]
        out_ids = [self._root(cap._id(_buffer_of(t))) for t in outs]
        first: dict[int, str] = {}                     # root -> "r" / "w": its first access
        written: set[int] = set()
        for k in cap.kernels:
            acc = [(self._root(a["buffer"])[0], a.get("access", "")) for a in k.args
                   if a["kind"] == "buffer"]
            for root, rw in acc:                       # reads before writes in one kernel
                first.setdefault(root, "r" if "r" in rw or not rw else "w")
            written |= {root for root, rw in acc if "w" in rw}
        for what, ids, t in (("output", out_ids, outs), ("input", in_ids, ins)):
            for k, (root, off) in enumerate(ids):
                if off or cap.buffers[root].nbytes != _buffer_of(t[k]).nbytes:
                    raise ExportError(f"{what} {k} is a part of a larger buffer, which export "
                                      "does not support")
        in_roots, out_roots = [r for r, _ in in_ids], [r for r, _ in out_ids]
        for k, root in enumerate(out_roots):
            if root in in_roots:
                raise ExportError(f"output {k} is input {in_roots.index(root)} itself; return "
                                  "a computed tensor")
            if root not in written:
                raise ExportError(f"output {k} is not computed by any kernel of the call")
            if out_roots.index(root) != k:
                raise ExportError(f"outputs {out_roots.index(root)} and {k} are one tensor")
        for k, root in enumerate(in_roots):
            if root in written:
                raise ExportError(f"input {k} is written by the call (an in-place update); "
                                  "the program's inputs are read-only")
            if in_roots.index(root) != k:
                raise ExportError(f"inputs {in_roots.index(root)} and {k} are one buffer")
        for k, (t, root) in enumerate(zip(ins, in_roots)):
            self._add(root, f"in{k}", "input", list(t.shape))
        for k, (t, root) in enumerate(zip(outs, out_roots)):
            self._add(root, f"out{k}", "output", list(t.shape))
        for k in cap.kernels:
            for a in k.args:
                if a["kind"] != "buffer":
                    continue
                root = self._root(a["buffer"])[0]
                if root in self.of_root:
                    continue
                if first.get(root) == "r":
                    if root in written:
                        raise ExportError(
                            f"kernel {k.name} writes a buffer that the call read first (a "
                            "state update: BatchNorm's running mean in training, or random "
                            "numbers, e.g. parameters not realized before export); export a "
                            "pure function")
                    self._add(root, f"w{len(self.values)}", "weight", [])
                    self.values[self.of_root[root]] = _np_bytes(cap.buffers[root])
                else:
                    self._add(root, f"t{len(self.buffers)}", "intermediate", [])
        self.inputs = [self.of_root[r] for r in in_roots]
        self.outputs = [self.of_root[r] for r in out_roots]

    def _root(self, cid: int) -> tuple[int, int]:
        """(capture id of the storage root, byte offset) of captured buffer cid."""
        buf = self.cap.buffers[cid]
        base = getattr(buf, "_base", None)
        if base is None:
            return cid, 0
        return self.cap._id(base), buf.offset

    def _add(self, root: int, name: str, role: str, shape: list[int]) -> None:
        buf = self.cap.buffers[root]
        dt = self.dtype_name(buf.dtype)
        if dt is None:
            raise ExportError(f"buffer {name}: dtype {buf.dtype} has no kcc name")
        self.of_root[root] = len(self.buffers)
        self.buffers.append(ProgBuffer(len(self.buffers), name, role, dt, buf.size,
                                       shape or [buf.size]))

    def runs(self) -> list[_Run]:
        out = []
        for k in self.cap.kernels:
            if k.error or k.uop is None:
                raise ExportError(f"kernel {k.name} (launch {k.index}): tinygrad's kernel "
                                  f"cannot be imported: {k.error}")
            args, offs, tg = [], [], {}
            for a in sorted(k.args, key=lambda a: a["slot"]):
                if a["kind"] != "buffer":
                    raise ExportError(f"kernel {k.name} (launch {k.index}) takes scalar "
                                      f"{a.get('name')!r} (a symbolic shape); export needs "
                                      "fixed shapes")
                root, off = self._root(a["buffer"])
                args.append(self.of_root[root])
                offs.append(off)
                tg[a["tinygrad_slot"]] = (self.of_root[root], off)
            out.append(_Run(k.name, k.key, args, offs, tg))
        return out


def _gpu_kernel(cap: Any, r: _Run, style: str) -> Any:
    """The kernel as tinygrad's PTX or HIP renderer lowers it (imported), or ExportError."""
    imp = cap.gpu_imported.get((r.key, style))
    if imp is None:
        why = next((k.gpu.get(f"{style}_error") for k in cap.kernels if k.key == r.key), None)
        raise ExportError(f"kernel {r.name}: tinygrad's {style.upper()} lowering cannot be "
                          f"imported: {why or 'not captured'}")
    missing = [ts for ts in imp.slots if ts not in r.tg_args]
    if missing:
        raise ExportError(f"kernel {r.name}: its {style.upper()} lowering takes tinygrad "
                          f"slots {missing} that the CPU kernel does not (scalars?)")
    return imp


def _unique_names(prefix: str, runs: list[_Run]) -> dict[bytes, str]:
    """One symbol per distinct kernel: PREFIX_tinygradname, made unique with _2, _3…"""
    names: dict[bytes, str] = {}
    used: set[str] = set()
    for r in runs:
        if r.key in names:
            continue
        base = f"{prefix}_{r.name}"
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}_{n}"
        used.add(name)
        names[r.key] = name
    return names


def _renamed(text: str, name: str, where: str) -> Any:
    from kcc.frontend.parser import parse
    from kcc.ir.uop import KernelInfo
    sink = parse(text, where)
    return sink.replace(arg=KernelInfo(name))


def export(fn: Callable, *example_inputs: Any, out: str | os.PathLike = "export",
           name: str = "net", target: str = "x86", arch: str | None = None,
           weights: str = "rodata", force: bool = False) -> Exported:
    """Export the tinygrad computation fn (Tensors → a Tensor or a tuple of Tensors), run once
    on example_inputs (Tensors or arrays), as one ahead-of-time artifact for target in the
    folder out: NAME.h, NAME.json and (x86) NAME.o. weights: "rodata" (in the object) or
    "external" (NAME.weights, loaded by NAME_load_weights). Refuses a non-empty out unless
    force; leaves nothing behind on error. See docs/export.md."""
    if not is_identifier(name):
        raise ExportError(f"name {name!r} is not a C identifier a program may take (C and "
                          "C++ keywords, main and the libc functions the runtime calls are "
                          "refused)")
    if target not in TARGETS:
        raise ExportError(f"target {target!r}: export writes {', '.join(TARGETS)}")
    if weights not in WEIGHTS:
        raise ExportError(f"weights is one of {', '.join(WEIGHTS)}, not {weights!r}")
    outp = Path(out)
    _check_out(outp, force)
    ts = _tensors(example_inputs)
    _realize_parameters(fn)
    with tempfile.TemporaryDirectory(prefix="kcc-export-") as tmp:
        cap, outs = _capture(fn, ts, target != "x86", tmp)
        b = _Builder(name, cap, ts, outs)
        runs = b.runs()
        names = _unique_names(name, runs)
        lay_out(b.buffers, "intermediate")
        lay_out(b.buffers, "weight")
        style = STYLES[target]
        launches, sinks, seen = [], [], set()
        for r in runs:
            imp = cap.files[r.key][3] if style is None else _gpu_kernel(cap, r, style)
            if style is None:
                launches.append(Launch(names[r.key], r.args, r.offsets))
            else:
                where = [r.tg_args[ts] for ts in imp.slots]
                launches.append(Launch(names[r.key], [w for w, _ in where],
                                       [o for _, o in where]))
            if r.key not in seen:
                seen.add(r.key)
                sinks.append(_renamed(imp.text, names[r.key], f"{names[r.key]}.uop"))
        prog = Program(name, b.buffers, [], launches, b.inputs, b.outputs)
        res = Exported(outp, name, target, {}, prog,
                       [t.numpy() for t in ts], [o.numpy() for o in outs])
        _write(res, sinks, b.values, arch, weights)
    return res


def _write(res: Exported, sinks: list[Any], values: dict[int, bytes], arch: str | None,
           weights: str) -> None:
    """Compile and write every file into a staging folder, then move them into place."""
    from kcc.targets.registry import CompileError
    p, outp = res.program, res.out
    outp.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{outp.name}.kcc-", dir=outp.parent))
    try:
        files: dict[str, str] = {}
        if res.target == "x86":
            from kcc.targets.x86.program import compile_program_x86
            blob = weights_blob(p, values) if weights == "rodata" else None
            try:
                obj, _, arch = compile_program_x86(p, sinks, blob, arch or "x86-64-v3",
                                                   weights)
            except (CompileError, ProgramError, ValueError) as e:
                raise ExportError(_compile_message(str(e), p)) from None
            (stage / f"{p.name}.o").write_bytes(obj)
            files["object"] = f"{p.name}.o"
        else:
            arch = _write_gpu(p, res.target, sinks, values, arch, weights, stage, files)
        # GPU programs always carry NAME.weights: `kcc run` reads the weights from it
        if values and (weights == "external" or res.target != "x86"):
            (stage / f"{p.name}.weights").write_bytes(safetensors_bytes(p, values))
            files["weights"] = f"{p.name}.weights"
        extra = [f"int {p.name}_load_weights(const char *path);"] \
            if weights == "external" and values else []
        (stage / f"{p.name}.h").write_text(c_header(p, extra, gpu=res.target != "x86"))
        files["header"] = f"{p.name}.h"
        import json
        doc = program_doc(p, res.target, arch or "", stage, files, weights)
        (stage / f"{p.name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        outp.mkdir(exist_ok=True)
        for f in [*files.values(), f"{p.name}.json"]:
            os.replace(stage / f, outp / f)
        res.files = {**files, "manifest": f"{p.name}.json"}
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _write_gpu(p: Program, target: str, sinks: list[Any], values: dict[int, bytes],
               arch: str | None, weights: str, stage: Path, files: dict[str, str]) -> str:
    """NAME.hsaco or NAME.cubin (NAME.ptx without ptxas) and NAME_launch.c; the arch."""
    from kcc.targets import registry
    from kcc.targets.gpu_program import launcher_c
    from kcc.targets.program import check_program
    from kcc.targets.registry import CompileError
    spec = registry.get(target)
    emit = "hsaco" if target == "amd" else "cubin" if shutil.which("ptxas") else "ptx"
    arch = arch or spec.default_arch
    try:
        if target == "amd":
            from kcc.targets.amd.program import compile_program_amd
            spec.check_arch(arch)
            data, p.kernels = compile_program_amd(p, sinks, arch)
        else:
            from kcc.targets.cuda.program import compile_program_cuda
            spec.check_arch(arch)
            data, p.kernels = compile_program_cuda(p, sinks, arch, emit)
        check_program(p)
        image = data + (b"\0" if emit == "ptx" else b"")
        text = launcher_c(p, target, image,
                          weights_blob(p, values) if weights == "rodata" else None)
    except (CompileError, ProgramError, ValueError) as e:
        raise ExportError(_compile_message(str(e), p)) from None
    (stage / f"{p.name}.{emit}").write_bytes(data)
    (stage / f"{p.name}_launch.c").write_text(text)
    files["object"] = f"{p.name}.{emit}"
    files["launcher"] = f"{p.name}_launch.c"
    return arch


def _compile_message(msg: str, p: Program) -> str:
    """A compile refusal, naming the kernel (kcc's message names the node and op)."""
    return f"kcc cannot compile program {p.name}: {msg}"


# -- the command line (`kcc tinygrad-export`) ---------------------------------------------------

def example_input(spec: str, seed: int = 0) -> np.ndarray:
    """An example input from `4x32:float32` (shape, dtype; a scalar is `:float32`): seeded
    normal values for floats, small integers for integers, alternating for bool."""
    shape_s, sep, dtype = spec.partition(":")
    if not sep:
        raise ExportError(f"--input {spec!r}: expected SHAPE:DTYPE, e.g. 4x32:float32")
    try:
        shape = tuple(int(d) for d in shape_s.split("x")) if shape_s else ()
        dt = np.dtype(dtype)
    except (ValueError, TypeError):
        raise ExportError(f"--input {spec!r}: expected SHAPE:DTYPE, e.g. 4x32:float32"
                          ) from None
    if any(d < 0 for d in shape) or dt.kind not in "biuf":
        raise ExportError(f"--input {spec!r}: a non-negative shape and a bool, integer or "
                          "float dtype")
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        return rng.normal(size=shape).astype(dt)
    if dt.kind == "b":
        return (np.arange(int(np.prod(shape))) % 2 == 0).reshape(shape)
    return rng.integers(0, 100, size=shape).astype(dt)


def load_function(spec: str) -> Callable:
    """The function `fn` of `script.py:fn` (the script runs as a module, not as __main__)."""
    import runpy
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise ExportError(f"{spec!r}: expected SCRIPT.py:FUNCTION")
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such file")
    try:
        ns = runpy.run_path(path, run_name="kcc_export")
    except Exception as e:           # the script's own error, shown as the script's
        raise ExportError(f"{path} raised {type(e).__name__}: {e}") from None
    fn = ns.get(name)
    if not callable(fn):
        raise ExportError(f"{path} defines no function {name!r}")
    return fn
