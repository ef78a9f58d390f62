"""Whole programs: an ordered list of kernel launches over named buffers, its JSON manifest
(`NAME.json`, format `kcc-program`, docs/manifest.md "Program manifests"), its C header, the
safetensors-compatible weights file, and the consistency check every runner does first.

A program is target-neutral: the target's packager (kcc/targets/x86/program.py) turns it into
an artifact, and `run_program` runs a manifest on the target it names. Producers (the tinygrad
export, kcc/tinygrad/exporting.py) build a Program from what they captured.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcc.targets.manifest import MAX_ELEMENTS, KernelDesc, LaunchError

PROGRAM_FORMAT = "kcc-program"
PROGRAM_VERSION = 1
ROLES = ("input", "output", "weight", "intermediate")
ALIGN = 64                  # every workspace and weight buffer starts at a multiple of this
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
DTYPE_BYTES = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2,
               "bfloat16": 2, "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8,
               "float64": 8}
C_TYPES = {"bool": "bool", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t",
           "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t",
           "uint64": "uint64_t", "float16": "uint16_t", "bfloat16": "uint16_t",
           "float32": "float", "float64": "double"}
# safetensors dtype names ("dtype" of each tensor in the header)
ST_DTYPES = {"bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16",
             "float16": "F16", "bfloat16": "BF16", "int32": "I32", "uint32": "U32",
             "float32": "F32", "int64": "I64", "uint64": "U64", "float64": "F64"}


class ProgramError(ValueError):
    """A program or program manifest that is inconsistent or cannot be packaged."""


# names a program may not take: C and C++ keywords, `main`, and the libc functions the x86
# runtime calls (a program named `free` would call itself)
RESERVED = frozenset("""auto bool break case char const continue default do double else enum
extern float for goto if inline int long register restrict return short signed sizeof static
struct switch typedef union unsigned void volatile while class delete new namespace private
protected public template this throw try catch virtual operator friend using typename main
aligned_alloc free sysconf pthread_create pthread_join pthread_mutex_init pthread_mutex_lock
pthread_mutex_unlock pthread_mutex_destroy pthread_barrier_init pthread_barrier_wait
pthread_barrier_destroy fopen fread fseek fclose malloc""".split())


def is_identifier(name: str) -> bool:
    """Is name a C identifier that a program may take (the prefix of every symbol)?"""
    return bool(_IDENT.match(name)) and name not in RESERVED


@dataclass
class ProgBuffer:
    """One buffer of a program. offset: a weight's byte offset in the weights blob, an
    intermediate's in the workspace (None for inputs and outputs)."""

    id: int
    name: str
    role: str
    dtype: str
    size: int
    shape: list[int] = field(default_factory=list)
    offset: int | None = None

    @property
    def nbytes(self) -> int:
        return self.size * DTYPE_BYTES[self.dtype]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "role": self.role, "dtype": self.dtype,
                "size": self.size, "shape": list(self.shape), "offset": self.offset}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "ProgBuffer":
        return ProgBuffer(d["id"], d["name"], d["role"], d["dtype"], d["size"],
                          list(d.get("shape") or []), d.get("offset"))


@dataclass
class Launch:
    """One kernel launch: the kernel's name, the buffer id of each argument slot and the byte
    offset into it (tinygrad's memory planner places intermediates in shared buffers)."""

    kernel: str
    args: list[int]
    offsets: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.offsets:
            self.offsets = [0] * len(self.args)

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "args": list(self.args), "offsets": list(self.offsets)}


@dataclass
class Program:
    """A whole program. inputs/outputs: buffer ids in the entry point's argument order."""

    name: str
    buffers: list[ProgBuffer]
    kernels: list[KernelDesc]
    launches: list[Launch]
    inputs: list[int]
    outputs: list[int]

    def buffer(self, i: int) -> ProgBuffer:
        return self.buffers[i]

    def kernel(self, name: str) -> KernelDesc:
        for k in self.kernels:
            if k.name == name:
                return k
        raise ProgramError(f"no kernel named {name!r}")

    @property
    def workspace_bytes(self) -> int:
        return max([b.offset + b.nbytes for b in self.buffers
                    if b.role == "intermediate" and b.offset is not None] + [0])

    @property
    def weights_bytes(self) -> int:
        return max([b.offset + b.nbytes for b in self.buffers
                    if b.role == "weight" and b.offset is not None] + [0])


def align_up(n: int, a: int = ALIGN) -> int:
    return -(-n // a) * a


def lay_out(bufs: list[ProgBuffer], role: str) -> None:
    """Give every buffer of role its offset: one after the other, each ALIGN-aligned."""
    pos = 0
    for b in bufs:
        if b.role == role:
            b.offset = pos
            pos = align_up(pos + b.nbytes)


def worker_count(desc: KernelDesc) -> int:
    """How many worker calls an x86 launch makes (the gidx0 bound; 1 without workers)."""
    ws = desc.target.get("x86", {}).get("workers", [])
    n = 1
    for w in ws:
        n *= w
    return n


# -- checks --------------------------------------------------------------------------------

def check_program(p: Program) -> None:
    """Refuse a program whose buffers, kernels and launches disagree (ProgramError)."""
    if not is_identifier(p.name):
        raise ProgramError(f"program name {p.name!r} is not a C identifier")
    for i, b in enumerate(p.buffers):
        where = f"buffer {i} ({b.name})"
        if b.id != i:
            raise ProgramError(f"{where}: id {b.id}, expected {i}")
        if b.role not in ROLES:
            raise ProgramError(f"{where}: role {b.role!r} is not one of {', '.join(ROLES)}")
        if b.dtype not in DTYPE_BYTES:
            raise ProgramError(f"{where}: unknown dtype {b.dtype!r}")
        if not isinstance(b.size, int) or not 0 <= b.size <= MAX_ELEMENTS:
            raise ProgramError(f"{where}: size {b.size!r} is not an element count")
        if b.role in ("weight", "intermediate") and (not isinstance(b.offset, int)
                                                     or b.offset < 0 or b.offset % ALIGN):
            raise ProgramError(f"{where}: a {b.role} needs an offset, a multiple of {ALIGN}")
    for what, ids, role in (("inputs", p.inputs, "input"), ("outputs", p.outputs, "output")):
        if sorted(ids) != [b.id for b in p.buffers if b.role == role] or \
                len(set(ids)) != len(ids):
            raise ProgramError(f"'{what}' must list every {role} buffer once")
    names = [k.name for k in p.kernels]
    if len(set(names)) != len(names):
        raise ProgramError("two kernels share a name; kernel names in a program are unique")
    kernels = {k.name: k for k in p.kernels}
    for j, ln in enumerate(p.launches):
        where = f"launch {j} ({ln.kernel})"
        k = kernels.get(ln.kernel)
        if k is None:
            raise ProgramError(f"{where}: no such kernel in the program")
        if len(ln.args) != len(k.args) or len(ln.offsets) != len(k.args):
            raise ProgramError(f"{where}: {len(ln.args)} arguments and {len(ln.offsets)} "
                               f"offsets, the kernel takes {len(k.args)}")
        for a, bid, off in zip(k.args, ln.args, ln.offsets):
            if a.kind != "buffer":
                raise ProgramError(f"{where}: argument {a.slot} is a scalar; programs pass "
                                   "buffers only")
            if not isinstance(bid, int) or not 0 <= bid < len(p.buffers):
                raise ProgramError(f"{where}: argument {a.slot} names buffer {bid!r}, which "
                                   "the program does not have")
            b = p.buffers[bid]
            whole = off == 0 and b.dtype == a.dtype and b.size == a.size
            part = b.role in ("intermediate", "weight") and isinstance(off, int) and \
                0 <= off and off + (a.size or 0) * DTYPE_BYTES.get(a.dtype, 1) <= b.nbytes
            if not (whole or part):
                raise ProgramError(f"{where}: argument {a.slot} is {a.dtype}[{a.size}] at "
                                   f"byte {off} but buffer {bid} ({b.name}) is "
                                   f"{b.dtype}[{b.size}]")
            if "w" in a.access and b.role in ("input", "weight"):
                raise ProgramError(f"{where}: argument {a.slot} writes {b.role} buffer {bid} "
                                   f"({b.name})")


# -- the manifest ----------------------------------------------------------------------------

def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def program_doc(p: Program, target: str, arch: str, folder: Path, files: dict[str, str],
                weights: str) -> dict[str, Any]:
    """The manifest of p packaged for target in folder; files names the artifacts by kind
    ("object", "launcher", "weights"), each relative to folder."""
    return {
        "format": PROGRAM_FORMAT, "version": PROGRAM_VERSION, "name": p.name,
        "target": target, "arch": arch,
        "files": {kind: {"file": f, "sha256": _sha(folder / f)} for kind, f in files.items()},
        "weights": weights, "workspace_bytes": p.workspace_bytes,
        "inputs": p.inputs, "outputs": p.outputs,
        "buffers": [b.to_json() for b in p.buffers],
        "kernels": [k.to_json() for k in p.kernels],
        "launches": [ln.to_json() for ln in p.launches],
    }


def is_program_manifest(path: str | Path) -> bool:
    """Does the JSON file at path say it is a program manifest?"""
    from kcc.frontend.files import FileError, check_regular
    try:
        check_regular(path)         # never open a FIFO or a device (it could block or not end)
        with open(path, "rb") as f:
            head = f.read(4096)
    except (OSError, FileError):
        return False
    return b'"kcc-program"' in head


def read_program(path: Path) -> tuple[dict[str, Any], Program]:
    """A program manifest and its Program, checked (ProgramError)."""
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_MANIFEST_BYTES
    try:
        doc = json.loads(read_regular(path, MAX_MANIFEST_BYTES).decode())
    except (FileError, OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ProgramError(f"{path}: cannot read the program manifest: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != PROGRAM_FORMAT:
        raise ProgramError(f"{path}: not a program manifest (format {PROGRAM_FORMAT!r})")
    if doc.get("version") != PROGRAM_VERSION:
        raise ProgramError(f"{path}: program manifest version {doc.get('version')!r}; this "
                           f"kcc reads version {PROGRAM_VERSION}")
    from kcc.targets.manifest_check import _check_schema
    if doc.get("target") not in ("x86", "amd", "cuda"):
        raise ProgramError(f"{path}: unknown target {doc.get('target')!r}")
    try:                # the kernel entries as a kernel manifest's (docs/manifest.md)
        _check_schema({"target": doc.get("target"), "arch": doc.get("arch"),
                       "kernels": doc.get("kernels")}, str(path))
    except LaunchError as e:
        raise ProgramError(str(e)) from None
    try:
        p = Program(doc["name"], [ProgBuffer.from_json(b) for b in doc["buffers"]],
                    [KernelDesc.from_json(k) for k in doc["kernels"]],
                    [Launch(ln["kernel"], list(ln["args"]), list(ln.get("offsets") or []))
                     for ln in doc["launches"]],
                    list(doc["inputs"]), list(doc["outputs"]))
        files = doc["files"]
        if not isinstance(files, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("file"), str) for v in files.values()):
            raise TypeError("'files' maps each kind to {file, sha256}")
    except (KeyError, TypeError, AttributeError) as e:
        raise ProgramError(f"{path}: malformed program manifest ({type(e).__name__}: {e})"
                           ) from None
    try:
        check_program(p)
        for b in p.buffers:
            if not all(isinstance(d, int) and d >= 0 for d in b.shape) or \
                    int(np_prod(b.shape)) != b.size:
                raise ProgramError(f"buffer {b.id} ({b.name}): shape {b.shape} does not hold "
                                   f"{b.size} elements")
    except ProgramError as e:
        raise ProgramError(f"{path}: {e}") from None
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise ProgramError(f"{path}: malformed program manifest ({type(e).__name__}: {e})"
                           ) from None
    return doc, p


def np_prod(xs: list[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def artifact(doc: dict[str, Any], folder: Path, kind: str) -> bytes:
    """The bytes of the manifest's artifact of kind, refused when changed since export."""
    ent = doc["files"].get(kind)
    if ent is None:
        raise ProgramError(f"the program manifest names no {kind} file")
    path = folder / ent["file"]
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_OBJECT_BYTES
    try:
        data = read_regular(path, MAX_OBJECT_BYTES)
    except (FileError, OSError) as e:
        raise ProgramError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    if hashlib.sha256(data).hexdigest() != ent.get("sha256"):
        raise ProgramError(f"{path} was changed since the program was exported (its SHA-256 "
                           "differs from the manifest's)")
    return data


# -- the program's own facts, in its object -----------------------------------------------------

def program_facts(p: Program) -> dict[str, Any]:
    """What the object records of its program (ELF note NT_KCC_PROGRAM in `.note.kcc`): the
    name, every buffer's role, dtype, size and offset, the inputs, outputs and launches."""
    return {"name": p.name, "inputs": p.inputs, "outputs": p.outputs,
            "buffers": [[b.role, b.dtype, b.size, b.offset] for b in p.buffers],
            "launches": [[ln.kernel, ln.args, ln.offsets] for ln in p.launches]}


def program_json(p: Program) -> bytes:
    """program_facts(p) as compact JSON bytes, keys sorted."""
    return json.dumps(program_facts(p), sort_keys=True, separators=(",", ":")).encode()


def program_note(p: Program) -> bytes:
    """The NT_KCC_PROGRAM note of p (x86 object, HSACO)."""
    from kcc.targets.facts import NT_KCC_PROGRAM, raw_note
    return raw_note(NT_KCC_PROGRAM, program_json(p))


def _module_program(data: bytes) -> Any:
    """The program facts of a CUDA module (cubin or PTX text: its __kcc_program array)."""
    from kcc.targets.facts import PTX_PROGRAM_SYMBOL, FactsError
    from kcc.targets.facts_read import cubin_bytes, ptx_bytes
    if data[:4] == b"\x7fELF":
        blob = cubin_bytes(data, PTX_PROGRAM_SYMBOL)
    else:
        try:
            blob = ptx_bytes(data.decode(), PTX_PROGRAM_SYMBOL)
        except UnicodeDecodeError:
            raise FactsError("not PTX text (not UTF-8) and not a cubin") from None
    if blob is None:
        return None
    try:
        return json.loads(blob)
    except ValueError as e:
        raise FactsError(f"the module's program facts are not JSON: {e}") from None


def check_object_program(p: Program, data: bytes, target: str = "x86") -> None:
    """ProgramError unless the object carries p's own facts: the ELF note of an x86 object or
    HSACO, the __kcc_program array of a CUDA module (cubin or PTX)."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    from kcc.targets.facts import NOTE_SECTION, NT_KCC_PROGRAM, FactsError
    from kcc.targets.facts_read import read_elf_note
    try:
        if target == "cuda":
            have = _module_program(data)
        else:
            sec = ELFFile(io.BytesIO(data)).get_section_by_name(NOTE_SECTION)
            have = read_elf_note(sec.data(), NT_KCC_PROGRAM) if sec is not None else None
    except (ELFError, ValueError, KeyError, AttributeError, IndexError, FactsError) as e:
        raise ProgramError(f"the program's object is not readable: {e}") from None
    if not isinstance(have, dict):
        raise ProgramError("the object carries no program facts: it was not exported by "
                           "this kcc")
    want = json.loads(json.dumps(program_facts(p)))
    for key in sorted(set(want) | set(have)):
        if want.get(key) != have.get(key):
            raise ProgramError(f"the program manifest's {key!r} is not the object's (the "
                               "manifest was edited or belongs to another program)")


# -- the C header ------------------------------------------------------------------------------

def c_header(p: Program, extra: list[str] = (), gpu: bool = False) -> str:
    """NAME.h: the entry point and its helpers; valid C and C++ (docs/export.md). gpu: the
    launcher's (NAME and NAME_error: the device keeps its own workspace, no threads)."""
    n, guard = p.name, f"KCC_PROGRAM_{p.name.upper()}_H"
    lines = [f"/* Generated by kcc: the program {n} (docs/export.md). */",
             f"#ifndef {guard}", f"#define {guard}", "#include <stddef.h>",
             "#include <stdint.h>"]
    if any(p.buffer(i).dtype == "bool" for i in p.inputs + p.outputs):
        lines += ["#ifndef __cplusplus", "#include <stdbool.h>", "#endif"]
    lines += ["", "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    params = []
    for what, ids in (("IN", p.inputs), ("OUT", p.outputs)):
        for k, i in enumerate(ids):
            b = p.buffer(i)
            shape = "x".join(str(s) for s in b.shape) or "scalar"
            lines.append(f"#define {n}_{what}{k}_ELEMENTS {b.size}  "
                         f"/* {b.dtype}, shape {shape} */")
            const = "const " if what == "IN" else ""
            params.append(f"{const}{C_TYPES[b.dtype]} *{what.lower()}{k}")
    lines.append(f"#define {n}_WORKSPACE_BYTES {p.workspace_bytes}")
    plist = ", ".join(params) or "void"
    lines += ["",
              "/* Runs the program: 0 on success, else non-zero and " + n + "_error() says why."
              " Buffers are row-major, contiguous; float16/bfloat16 as their uint16_t bits. */",
              f"int {n}({plist});"]
    if gpu:
        lines += [f"const char *{n}_error(void);", *extra, "", "#ifdef __cplusplus", "}",
                  "#endif", f"#endif /* {guard} */", ""]
        return "\n".join(lines)
    lines += [
              f"/* The same with a caller's workspace of {n}_workspace_bytes() bytes, "
              "64-byte aligned. */",
              f"int {n}_with_workspace(void *workspace{', ' if params else ''}"
              f"{', '.join(params)});",
              f"size_t {n}_workspace_bytes(void);",
              "/* Threads for the kernels' worker indices; 0 (default): the machine's "
              "cores. */",
              f"void {n}_set_threads(int n);",
              "/* The worker threads stay between calls; this stops and joins them (the next "
              "call starts them again). */",
              f"void {n}_release(void);",
              f"const char *{n}_error(void);", *extra,
              "", "#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


# -- weights -----------------------------------------------------------------------------------

def safetensors_bytes(p: Program, values: dict[int, bytes]) -> bytes:
    """The weights in a safetensors-compatible file: an 8-byte little-endian header length,
    the JSON header (padded with spaces so the data starts at a multiple of 64), then each
    weight's bytes at its offset (the gaps between them zero bytes, listed as `__pad_N`
    tensors so that the data is fully indexed, as safetensors requires)."""
    header: dict[str, Any] = {"__metadata__": {"format": "kcc", "program": p.name}}
    ws = sorted((b for b in p.buffers if b.role == "weight"), key=lambda b: b.offset)
    pos = 0
    for b in ws:
        if b.offset > pos:
            header[f"__pad_{pos}"] = {"dtype": "U8", "shape": [b.offset - pos],
                                      "data_offsets": [pos, b.offset]}
        header[b.name] = {"dtype": ST_DTYPES[b.dtype], "shape": list(b.shape) or [b.size],
                          "data_offsets": [b.offset, b.offset + b.nbytes]}
        pos = b.offset + b.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % ALIGN)
    data = bytearray(pos)
    for b in ws:
        data[b.offset:b.offset + b.nbytes] = values[b.id]
    return struct.pack("<Q", len(text)) + text + bytes(data)


def weights_blob(p: Program, values: dict[int, bytes]) -> bytes:
    """The weights laid out at their offsets (the .rodata contents)."""
    data = bytearray(p.weights_bytes)
    for b in p.buffers:
        if b.role == "weight":
            data[b.offset:b.offset + b.nbytes] = values[b.id]
    return bytes(data)


def read_safetensors(data: bytes, p: Program) -> dict[int, bytes]:
    """Each weight's bytes from a weights file written by safetensors_bytes."""
    if len(data) < 8:
        raise ProgramError("the weights file is too short for a safetensors header")
    n = struct.unpack("<Q", data[:8])[0]
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise ProgramError(f"the weights file's header is not JSON: {e}") from None
    body = data[8 + n:]
    out: dict[int, bytes] = {}
    for b in p.buffers:
        if b.role != "weight":
            continue
        ent = header.get(b.name)
        if not isinstance(ent, dict) or ent.get("dtype") != ST_DTYPES[b.dtype] or \
                ent.get("data_offsets") != [b.offset, b.offset + b.nbytes] or \
                b.offset + b.nbytes > len(body):
            raise ProgramError(f"the weights file does not hold weight {b.name} as the "
                               f"manifest says ({b.dtype}[{b.size}] at {b.offset})")
        out[b.id] = body[b.offset:b.offset + b.nbytes]
    return out


# -- running -----------------------------------------------------------------------------------

def np_dtype(name: str) -> Any:
    import numpy as np
    return np.dtype({"bfloat16": "uint16", "bool": "bool"}.get(name, name))


def check_inputs(p: Program, arrays: list[Any]) -> list[Any]:
    """The inputs as contiguous arrays of the program's dtypes and sizes (LaunchError)."""
    import numpy as np
    if len(arrays) != len(p.inputs):
        n = len(p.inputs)
        raise LaunchError(f"the program takes {n} input{'s' if n != 1 else ''}, "
                          f"{len(arrays)} given")
    out = []
    for k, (i, a) in enumerate(zip(p.inputs, arrays)):
        b = p.buffer(i)
        want = np_dtype(b.dtype)
        if a.dtype != want:
            raise LaunchError(f"input {k} ({b.name}): dtype {a.dtype}, the program takes "
                              f"{b.dtype}")
        if a.size != b.size:
            raise LaunchError(f"input {k} ({b.name}): {a.size} elements, the program takes "
                              f"{b.size}")
        out.append(np.ascontiguousarray(a).reshape(-1))
    return out


def run_program(path: Path, arrays: list[Any], emulate: bool = False,
                arch: str | None = None) -> list[Any]:
    """Run the program manifest at path on arrays (its inputs, in order); returns the
    outputs, shaped. x86 calls the object's own entry point in this process."""
    doc, p = read_program(path)
    target = doc["target"]
    if arch is not None and arch != doc.get("arch"):
        raise ProgramError(f"the program was exported for {doc.get('arch')}, not {arch}; "
                           "export it again with that arch")
    ins = check_inputs(p, arrays)
    check_object_program(p, artifact(doc, path.parent, "object"), target)
    if target == "x86":
        if emulate:
            raise ProgramError("--emulate runs AMD programs; this program is for x86")
        from kcc.targets.x86.program_run import run_x86_program
        outs = run_x86_program(doc, p, path.parent, ins)
    else:
        from kcc.targets.gpu_program import run_gpu_program
        outs = run_gpu_program(doc, p, path.parent, ins, emulate)
    return [o.reshape(p.buffer(i).shape or [p.buffer(i).size])
            for o, i in zip(outs, p.outputs)]


def run_program_files(source: str, args: tuple[str, ...], outdir: str, emulate: bool = False,
                      arch: str | None = None) -> list[Path]:
    """`kcc run NAME.json in0.npy … -o OUT`: run a program manifest on .npy inputs and save
    OUT/out{k}.npy; returns the files written (ProgramError / LaunchError on refusal)."""
    import numpy as np
    arrays = []
    for a in args:
        try:
            arrays.append(np.load(a, allow_pickle=False))
        except (OSError, ValueError) as e:
            raise ProgramError(f"{a}: cannot read a .npy array ({e})") from None
    outs = run_program(Path(source), arrays, emulate, arch)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, o in enumerate(outs):
        np.save(out / f"out{k}.npy", o)
        paths.append(out / f"out{k}.npy")
    return paths
