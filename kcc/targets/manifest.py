"""The JSON launch manifest: what a compiled kernel expects, and the launch check every loader runs.

Schema (version 1) is documented for users in docs/manifest.md. A manifest lists, per kernel,
its symbol, its arguments in slot order (buffers: dtype, element count, access; scalars: dtype
and value range), its launch dimensions, and target facts. `check_launch` refuses a launch that
does not match before any target code touches memory.
"""

from __future__ import annotations

import os

from kcc.ir import AddrSpace, Ops, UOp, dtypes
from kcc.ir.uop import base_buffer, toposort
from kcc.record import field, record
from kcc.targets import jsontext   # json.dumps's text without importing json (start-up)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:   # numpy is imported by the launch checks only (compiling needs none)
    from pathlib import Path
    from typing import Any

    import numpy as np

MANIFEST_FORMAT = "kcc-manifest"
MANIFEST_VERSION = 1
from kcc.ir.limits import MAX_BUFFER_ELEMENTS as MAX_ELEMENTS   # what a manifest may state


class LaunchError(Exception):
    """A launch that does not match the manifest (wrong count, dtype, size, value)."""


@record
class ArgDesc:
    """One kernel argument, in slot order."""

    slot: int
    kind: str                    # "buffer" or "scalar"
    dtype: str
    size: int | None = None      # buffers: element count
    access: str = ""             # buffers: "r", "w" or "rw" (what the kernel does to it)
    range: list[Any] | None = None   # scalars: [vmin, vmax] when declared
    name: str | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"slot": self.slot, "kind": self.kind, "dtype": self.dtype}
        if self.name is not None:
            d["name"] = self.name
        if self.kind == "buffer":
            d["size"] = self.size
            d["access"] = self.access
        else:
            d["range"] = self.range
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "ArgDesc":
        return ArgDesc(d["slot"], d["kind"], d["dtype"], d.get("size"), d.get("access", ""),
                       d.get("range"), d.get("name"))


@record
class KernelDesc:
    """What a caller must know of one kernel: name, arguments, launch dimensions, target facts."""

    name: str
    args: list[ArgDesc]
    # per dimension an int, or an expression of scalar arguments (kcc.targets.dims)
    global_size: list[Any] = field(default_factory=lambda: [1, 1, 1])
    local_size: list[Any] = field(default_factory=lambda: [1, 1, 1])
    target: dict[str, Any] = field(default_factory=dict)
    specials: list[str] = field(default_factory=list)   # SPECIAL names in the graph, name order

    @property
    def symbol(self) -> str:
        return self.name

    def launch_dims(self, args: list[Any]) -> tuple[list[int], list[int]]:
        """(global, local) for one launch's arguments (checked by check_launch): symbolic
        dimensions are evaluated from the scalar arguments; LaunchError if one is invalid."""
        from kcc.targets.dims import DimError, launch_dims   # (not at a compile's start-up)
        try:
            return launch_dims(self.global_size, self.local_size, args)
        except DimError as e:
            raise LaunchError(f"kernel {self.name}: {e}") from None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "symbol": self.symbol,
                "args": [a.to_json() for a in self.args],
                "global": self.global_size, "local": self.local_size,
                "specials": self.specials, "target": self.target}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "KernelDesc":
        return KernelDesc(d["name"], [ArgDesc.from_json(a) for a in d["args"]], d["global"],
                          d["local"], d.get("target", {}), d.get("specials", []))



def sha256_hex(data: bytes) -> str:
    """SHA-256 of data, in hex. CPython's built-in SHA-256 module where it has one: hashlib
    loads OpenSSL first (2 ms of a small compile's start-up) for the same digest."""
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # CPython 3.12 and later
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def describe_kernel(sink: UOp) -> KernelDesc:
    """The argument list and launch dimensions of a kernel graph (before any pass)."""
    # one walk sorts out the nodes this reads (Ops members bound once: a local is read
    # faster than a class attribute, per node)
    param, special, load, store = Ops.PARAM, Ops.SPECIAL, Ops.LOAD, Ops.STORE
    found: list[UOp] = []
    spec_nodes: list[UOp] = []
    loaded: set[UOp] = set()
    stored: set[UOp] = set()
    for n in toposort([sink]):
        op = n.op
        if op is param:
            found.append(n)
        elif op is special:
            spec_nodes.append(n)
        elif op is load:
            loaded.add(_buffer_of(n.src[0]))
        elif op is store:
            stored.add(_buffer_of(n.src[0]))
    params = sorted(found, key=lambda n: n.arg.slot)
    args = []
    for p in params:
        a = p.arg
        if a.addrspace is AddrSpace.ALU:
            rng = list(a.vmin_vmax) if a.vmin_vmax is not None else None
            args.append(ArgDesc(a.slot, "scalar", a.dtype.name, range=rng, name=a.name))
        else:
            acc = ("r" if p in loaded else "") + ("w" if p in stored else "")
            args.append(ArgDesc(a.slot, "buffer", a.dtype.name, a.size, acc, name=a.name))
    glob: list[Any] = [1, 1, 1]
    loc: list[Any] = [1, 1, 1]
    specials = sorted({n.arg for n in spec_nodes})
    if spec_nodes:
        from kcc.targets.dims import dim_json   # (a kernel without SPECIALs: not imported)
    for n in spec_nodes:
        dims = glob if n.arg.startswith("gidx") else loc
        # a constant, or the expression of scalar arguments a loader evaluates per launch
        dims[int(n.arg[-1])] = dim_json(n.src[0])
    return KernelDesc(sink.arg.name, args, glob, loc, specials=specials)


def duplicate_name(sinks: list[UOp]) -> str | None:
    """A kernel name two of the sinks share (symbols in one object must be unique)."""
    names = [s.arg.name for s in sinks]
    return next((n for n in sorted(set(names)) if names.count(n) > 1), None)


def _buffer_of(place: UOp) -> UOp:
    """The PARAM/BUFFER under an INDEX/SHRINK place (through AFTERs)."""
    return base_buffer(place.src[0])


def worker_names(desc: KernelDesc) -> list[str]:
    """The gidx SPECIAL names a CPU target passes as extra int arguments, in name order."""
    return [s for s in desc.specials if s.startswith("gidx")]


# -- manifest files ---------------------------------------------------------------------------

def manifest_doc(path: str | Path, target: str, arch: str, kernels: list[KernelDesc],
                 object_path: str | Path | None, object_data: bytes | None = None
                 ) -> dict[str, Any]:
    """The manifest for kernels compiled into object_path (whose bytes are object_data, read
    from the file when None), to be written at path: the object is named relative to it."""
    doc: dict[str, Any] = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION,
                           "target": target, "arch": arch,
                           "kernels": [k.to_json() for k in kernels]}
    if object_path is not None:
        from kcc.targets import pathtext    # pathlib's answers (no pathlib at start-up)
        data = object_data
        if data is None:
            with open(object_path, "rb") as f:
                data = f.read()
        obj = pathtext.resolve(os.fspath(object_path))
        # relative to the manifest's folder where it is inside it, else absolute
        rel = pathtext.relative_to(obj, os.path.dirname(pathtext.resolve(os.fspath(path))))
        doc["object"] = {"file": obj if rel is None else rel, "sha256": sha256_hex(data)}
    return doc


def manifest_text(doc: dict[str, Any]) -> str:
    """The JSON text of a manifest document, as kcc writes it."""
    return jsontext.dumps(doc, indent=2) + "\n"     # json.dumps(doc, indent=2)


def write_manifest(path: Path, target: str, arch: str, kernels: list[KernelDesc],
                   object_path: Path | None) -> dict[str, Any]:
    """Write the manifest JSON for kernels compiled into object_path; return the dict."""
    doc = manifest_doc(path, target, arch, kernels, object_path)
    from pathlib import Path
    Path(path).write_text(manifest_text(doc))
    return doc


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and check a manifest; LaunchError with a clear message if it is not one."""
    return load_manifest(path)[0]


def load_manifest(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """Read and check a manifest and the object it names (None for a manifest of no object,
    e.g. --emit asm): the bytes whose sha256 was checked, so a caller never reads the object
    a second time. LaunchError with a clear message if either cannot be used. Only regular
    files are read, up to kcc.ir.limits' sizes; a JSON nested too deeply is refused."""
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_MANIFEST_BYTES, MAX_OBJECT_BYTES
    import json                 # (not at a compile's start-up: kcc/targets/jsontext.py)
    try:
        doc = json.loads(read_regular(path, MAX_MANIFEST_BYTES).decode("utf-8"))
    except FileError as e:
        raise LaunchError(f"{path}: cannot read manifest: {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LaunchError(f"{path}: cannot read manifest: {e}") from None
    except RecursionError:       # the json module recurses once per nesting level
        raise LaunchError(f"{path}: cannot read manifest: JSON nested too deeply") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise LaunchError(f"{path}: not a kcc manifest")
    if doc.get("version") != MANIFEST_VERSION:
        raise LaunchError(f"{path}: manifest version {doc.get('version')} is not supported "
                          f"(this kcc reads version {MANIFEST_VERSION})")
    # a hand-edited or truncated manifest must fail here with a message, not later with a
    # KeyError/TypeError deep in the loader
    _check_schema(doc, str(path))
    obj = doc.get("object")
    data = None
    if obj is not None:
        from pathlib import Path
        opath = Path(path).parent / obj["file"]
        try:
            data = read_regular(opath, MAX_OBJECT_BYTES)
        except FileError as e:
            raise LaunchError(f"{path}: object {opath}: {e}") from None
        if sha256_hex(data) != obj["sha256"]:
            raise LaunchError(f"{path}: object {opath} does not match the manifest's sha256 "
                              "(recompile, or the object was changed)")
    return doc, data


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise LaunchError(f"{where}: {what}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_schema(doc: dict[str, Any], path: str) -> None:
    """The version-1 fields a loader relies on (docs/manifest.md), with their types."""
    from kcc.targets.dims import check_dim      # (reading a manifest: not a compile's path)
    _need(isinstance(doc.get("target"), str) and isinstance(doc.get("arch"), str), path,
          "manifest needs string fields 'target' and 'arch'")
    obj = doc.get("object")
    _need(obj is None or (isinstance(obj, dict) and isinstance(obj.get("file"), str)
                          and isinstance(obj.get("sha256"), str)), path,
          "manifest 'object' needs string fields 'file' and 'sha256'")
    kernels = doc.get("kernels")
    _need(isinstance(kernels, list) and len(kernels) > 0
          and all(isinstance(k, dict) for k in kernels), path,
          "manifest 'kernels' must be a non-empty list of objects")
    for i, k in enumerate(kernels):
        where = f"{path}: kernels[{i}]"
        _need(isinstance(k.get("name"), str) and isinstance(k.get("args"), list), where,
              "needs a string 'name' and a list 'args'")
        _need(k["name"].isidentifier(), where, f"'name' {k['name']!r} is not a symbol name")
        _need(k.get("symbol", k["name"]) == k["name"], where,
              f"'symbol' {k.get('symbol')!r} must be the kernel's name {k['name']!r}")
        for key in ("global", "local"):
            dims = k.get(key)
            _need(isinstance(dims, list) and len(dims) == 3, where,
                  f"{key!r} must be a list of three launch dimensions")
            for d in dims:       # an int, or an expression of scalar arguments
                why = check_dim(d, len(k["args"]))
                _need(why is None, where, f"{key!r}: {why}")
        _need(isinstance(k.get("specials", []), list) and all(
            isinstance(s, str) for s in k.get("specials", [])), where,
            "'specials' must be a list of names")
        tgt = k.get("target", {})
        _need(isinstance(tgt, dict) and all(isinstance(v, dict) for v in tgt.values()), where,
              "'target' must be an object of per-target objects")
        for j, a in enumerate(k["args"]):
            _check_arg(a, j, f"{where} ({k['name']}): argument {j}")


def _check_arg(a: Any, j: int, where: str) -> None:
    _need(isinstance(a, dict) and a.get("slot") == j, where, f"needs 'slot': {j}")
    _need(a.get("kind") in ("buffer", "scalar"), where, "'kind' must be buffer or scalar")
    _need(a.get("name") is None or isinstance(a["name"], str), where, "'name' must be a string")
    _need(isinstance(a.get("dtype"), str) and dtypes.by_name(a["dtype"]) is not None, where,
          f"unknown dtype {a.get('dtype')!r}")
    if a["kind"] == "buffer":
        _need(_is_int(a.get("size")) and 0 <= a["size"] <= MAX_ELEMENTS, where,
              f"'size' must be an integer in [0, {MAX_ELEMENTS}]")
        _need(a.get("access", "") in ("", "r", "w", "rw"), where,
              "'access' must be r, w, rw or empty")
    else:
        rng = a.get("range")
        _need(rng is None or (isinstance(rng, list) and len(rng) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in rng)), where,
            "'range' must be null or [vmin, vmax]")


# -- the launch check -------------------------------------------------------------------------

def _np_dtype(name: str) -> np.dtype:
    return dtypes.by_name(name).np


def check_launch(desc: KernelDesc, args: list[Any]) -> list[Any]:
    """Check args against the kernel's manifest entry; return them normalized.

    Buffers become C-contiguous flat numpy views of the caller's arrays (the kernel writes
    into them); scalars become numpy scalars of the declared dtype. Nothing is launched here.
    """
    import numpy as np
    if len(args) != len(desc.args):
        raise LaunchError(f"kernel {desc.name} takes {len(desc.args)} arguments, got {len(args)}")
    out: list[Any] = []
    for a, v in zip(desc.args, args):
        label = f"argument {a.slot}" + (f" ({a.name})" if a.name else "")
        want = _np_dtype(a.dtype)
        if a.kind == "buffer":
            if not isinstance(v, np.ndarray):
                raise LaunchError(f"{label}: expected a {a.dtype} buffer of {a.size} elements, "
                                  f"got {type(v).__name__}")
            if v.dtype != want:
                raise LaunchError(f"{label}: expected dtype {a.dtype}, got {v.dtype}")
            if v.size != a.size:
                raise LaunchError(f"{label}: expected {a.size} elements, got {v.size}")
            if not v.flags.c_contiguous:
                raise LaunchError(f"{label}: the buffer must be C-contiguous")
            if "w" in a.access and not v.flags.writeable:
                raise LaunchError(f"{label}: the kernel writes this buffer but it is read-only")
            out.append(v.reshape(-1))
        else:
            out.append(_check_scalar(a, v, label, want))
    return out


def _check_scalar(a: ArgDesc, v: Any, label: str, want: np.dtype) -> Any:
    import numpy as np
    if isinstance(v, np.ndarray):
        if v.size != 1:
            raise LaunchError(f"{label}: expected a {a.dtype} scalar, got an array")
        v = v.reshape(-1)[0]
    if isinstance(v, (bool, np.bool_)) and a.dtype != "bool":
        raise LaunchError(f"{label}: expected a {a.dtype} scalar, got bool")
    dt = dtypes.by_name(a.dtype)
    if dt.is_int or dt.is_bool:
        if isinstance(v, (float, np.floating)) and not float(v).is_integer():
            raise LaunchError(f"{label}: expected an integer ({a.dtype}), got {v}")
        try:
            iv = int(v)
        except (TypeError, ValueError):
            raise LaunchError(f"{label}: expected a {a.dtype} scalar, got {v!r}") from None
        if not dt.min() <= iv <= dt.max():
            raise LaunchError(f"{label}: {iv} is out of range for {a.dtype}")
        if a.range is not None and not a.range[0] <= iv <= a.range[1]:
            raise LaunchError(f"{label}: {iv} is outside the declared range {a.range}")
        return want.type(iv)
    try:
        fv = float(v)
    except (TypeError, ValueError):
        raise LaunchError(f"{label}: expected a {a.dtype} scalar, got {v!r}") from None
    if a.range is not None and not a.range[0] <= fv <= a.range[1]:
        raise LaunchError(f"{label}: {fv} is outside the declared range {a.range}")
    if a.dtype == "bfloat16":
        # a number is rounded once to bfloat16 (nearest even) and passed as its bit pattern
        from kcc.ir.numerics import bf16_from_f64
        bits = bf16_from_f64(np.array([fv]))[0]
        if not np.isinf(fv) and (int(bits) & 0x7FFF) == 0x7F80:
            raise LaunchError(f"{label}: {fv} is out of range for bfloat16")
        return np.uint16(bits)
    with np.errstate(over="ignore"):
        cv = want.type(fv)
    if np.isinf(cv) and not np.isinf(fv):     # a finite value the dtype cannot hold
        raise LaunchError(f"{label}: {fv} is out of range for {a.dtype}")
    return cv
