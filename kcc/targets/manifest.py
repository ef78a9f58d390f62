"""The JSON launch manifest: what a compiled kernel expects, and the launch check every loader runs.

Schema (version 1) is documented for users in docs/manifest.md. A manifest lists, per kernel,
its symbol, its arguments in slot order (buffers: dtype, element count, access; scalars: dtype
and value range), its launch dimensions, and target facts. `check_launch` refuses a launch that
does not match before any target code touches memory.
"""

from __future__ import annotations

import os

from kcc.ir import AddrSpace, Ops, UOp
from kcc.ir.uop import base_buffer, toposort
from kcc.record import field, record
from kcc.targets import jsontext   # json.dumps's text without importing json (start-up)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

MANIFEST_FORMAT = "kcc-manifest"
MANIFEST_VERSION = 1
# what a manifest may state (kcc/targets/manifest_check.py checks it)
from kcc.ir.limits import MAX_BUFFER_ELEMENTS as MAX_ELEMENTS  # noqa: E402,F401


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


# Reading a manifest and the launch check are in kcc/targets/manifest_check.py: a compile never
# calls them, and their code objects cost a `kcc compile` process page faults (docs/
# performance.md, issue 24 item 4). Their names stay importable from here for callers.
_CHECKS = frozenset({"read_manifest", "load_manifest", "check_launch", "_check_schema"})


def __getattr__(name: str) -> Any:
    """read_manifest, load_manifest, check_launch (kcc/targets/manifest_check.py)."""
    if name in _CHECKS:
        from kcc.targets import manifest_check
        return getattr(manifest_check, name)
    raise AttributeError(name)
