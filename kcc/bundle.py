"""kcc's own modules loaded from one file of code objects instead of one `.pyc` each.

A `kcc compile` process imports about 100 kcc modules. For each, the import system's path
finder searches the package's folder, builds a spec, stats the source, opens and reads the
`.pyc` and checks its header: Python code in importlib run ~100 times, 5% of a small
compile's instructions (callgrind: 12 M of 256 M; issue 24, item 4). Here one file beside kcc's
bytecode holds, per module, the stamp of its source (modification time and size, the facts a
`.pyc` is checked against) and its marshalled code; a finder first on `sys.meta_path` answers
for a module of that file whose source still has that stamp, and leaves every other module to
the path finder as before. At exit, the modules this process imported the usual way are added
to the file (read back from their own `.pyc` or source by their loader), so the next process
finds them there.

The file follows the bytecode's rules (kcc/startup.py): nothing is written where bytecode is
not (`PYTHONDONTWRITEBYTECODE`, `-B`), an unreadable file is ignored and rebuilt, a module
whose source changed is imported the usual way, and a write is a temporary file renamed into
place. The file is an index (marshal) and the modules' code after it; a process reads the
index and then only the code of each module it imports (`os.pread`: copying the whole file
into memory first cost more, in page faults, than the import machinery it saves). A module
it loads has the attributes a `.pyc` import gives (`__file__`, `__path__`, `__spec__` with the
source as origin, a loader with get_code/get_source/is_package for runpy, tracebacks and
linecache); the code is the same code object the `.pyc` holds. kcc's pytest plugin is left
to the import system: pytest loads it through its own hook, which rewrites its asserts.
"""

from __future__ import annotations

import _imp
import marshal
import os
import sys
from _frozen_importlib import ModuleSpec                 # importlib.machinery's, imported
from _frozen_importlib_external import SourceFileLoader  # at start-up (no importlib package)

CodeType = type((lambda: None).__code__)  # types.CodeType and ModuleType (no types
ModuleType = type(sys)                    # module: start-up)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_PREFIX = "kcc."
_SKIP = frozenset({"kcc.pytest_plugin"})    # pytest imports and rewrites it (pyproject.toml)
_MAGIC = b"kccC"           # (kccB: entries without the bytecode path)
_MAX_INDEX = 1 << 20        # an index larger than this is not read (the file starts over)

# name → (source path, (st_mtime_ns, st_size), offset of its code in the file, its length,
# the module's __cached__: its .pyc path as importlib computes it, kept so that each import
# does not compute it again: ModuleSpec.cached's cache_from_source, Python string work)
_Entry = tuple[str, tuple[int, int], int, int, "str | None"]


class _Loader:
    """The loader of the modules the bundle holds (importlib's Loader protocol)."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        """The module importlib would make (its _init_module_attrs), with `__path__` (a
        package's), `__file__` and `__cached__` set here, in its order: importlib sets each
        only where `getattr(module, name, None)` is None, and on CPython 3.11 each such miss
        formats two AttributeError messages (the generic one, then the module's), four a
        module, ~1 M instructions a compile (issue 24, item 4)."""
        module = ModuleType(spec.name)
        if spec.submodule_search_locations is not None:
            module.__path__ = spec.submodule_search_locations
        module.__file__ = spec.origin
        if spec.cached is not None:
            module.__cached__ = spec.cached
        return module

    def exec_module(self, module: ModuleType) -> None:
        spec = module.__spec__
        data = None
        if spec is not None:        # the code read by find_spec, not kept once used: holding
            data, spec.loader_state = spec.loader_state, None   # it costs memory, page faults
        code = self._code(module.__name__, data)
        exec(code, module.__dict__)  # noqa: S102  (the module's own code, as importlib runs it)

    def _code(self, name: str, data: bytes | None) -> CodeType:
        if data is None:
            data = self.bundle.read(name)
            if data is None:
                raise ImportError(f"{name}: its code is gone from {self.bundle.path}", name=name)
        code = marshal.loads(data)
        assert isinstance(code, CodeType)
        _imp._fix_co_filename(code, self.bundle.entries[name][0])  # as a .pyc import does
        return code

    def get_code(self, name: str) -> CodeType:
        return self._code(name, None)

    def get_source(self, name: str) -> str:
        with open(self.bundle.entries[name][0], encoding="utf-8") as f:
            return f.read()

    def is_package(self, name: str) -> bool:
        return os.path.basename(self.bundle.entries[name][0]) == "__init__.py"


class Bundle:
    """The finder (importlib's MetaPathFinder protocol) over one bundle file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: dict[str, _Entry] = {}
        self.loaded: set[str] = set()
        self.fd = -1
        self.base = 0               # where the code starts in the file
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                head = os.pread(fd, 8, 0)
                n = int.from_bytes(head[4:8], "little")
                got = marshal.loads(os.pread(fd, n, 8)) \
                    if head[:4] == _MAGIC and n <= _MAX_INDEX else None
                if isinstance(got, dict):
                    self.entries, self.fd, self.base = got, fd, 8 + n
            except (OSError, EOFError, ValueError, TypeError):
                pass
            if self.fd < 0:
                os.close(fd)
        self.loader = _Loader(self)

    def read(self, name: str) -> bytes | None:
        """The marshalled code of module name, or None if the file does not give it whole."""
        _, _, offset, length, _ = self.entries[name]
        try:
            data = os.pread(self.fd, length, self.base + offset)
        except OSError:
            return None
        return data if len(data) == length else None

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        e = self.entries.get(name)
        if e is None or not name.startswith(_PREFIX) or name in _SKIP:
            return None
        try:
            st = os.stat(e[0])
        except OSError:
            return None
        if (st.st_mtime_ns, st.st_size) != e[1]:
            return None             # the source changed: the path finder imports it
        data = self.read(name)
        if data is None:
            return None
        package = os.path.basename(e[0]) == "__init__.py"
        spec = ModuleSpec(name, self.loader, origin=e[0], is_package=package)
        spec.has_location = True    # __file__ = origin, as for a source file
        spec.cached = e[4]          # __cached__, as importlib computed it (saved in the index)
        spec.loader_state = data
        if package:
            spec.submodule_search_locations = [os.path.dirname(e[0])]
        self.loaded.add(name)
        return spec

    def invalidate_caches(self) -> None:
        """importlib.invalidate_caches() asks every finder; nothing here to drop."""

    def save(self) -> None:
        """Add the kcc modules this process imported from their own files, and write the
        bundle if any was added (at exit)."""
        from kcc.startup import writable
        if sys.dont_write_bytecode or not writable(self.path):
            return                  # (and no re-reading every module's code for nothing)
        new: dict[str, tuple[str, tuple[int, int], bytes, str | None]] = {}
        for name, module in list(sys.modules.items()):
            if not name.startswith(_PREFIX) or name in self.loaded or name in _SKIP:
                continue
            spec = getattr(module, "__spec__", None)
            loader = getattr(spec, "loader", None)
            origin = getattr(spec, "origin", None)
            if spec is None or not getattr(spec, "has_location", False) or \
                    type(loader) is not SourceFileLoader or not origin:
                continue            # only plain source modules (not zip, not extension)
            try:
                st = os.stat(origin)
                stamp = (st.st_mtime_ns, st.st_size)
                e = self.entries.get(name)
                if e is not None and e[0] == origin and e[1] == stamp:
                    continue        # held already (kcc and this module import before it)
                code = loader.get_code(name)
            except (OSError, ImportError, SyntaxError):
                continue
            if code is not None:
                new[name] = (origin, stamp, marshal.dumps(code), spec.cached)
        if not new:
            return
        index: dict[str, _Entry] = {}
        blobs: list[bytes] = []
        offset = 0
        for name in list(self.entries) + [n for n in new if n not in self.entries]:
            if name in new:
                origin, stamp, data, cached = new[name]
            else:
                data = self.read(name) if self.fd >= 0 else None
                if data is None:
                    continue
                origin, stamp, _, _, cached = self.entries[name]
            index[name] = (origin, stamp, offset, len(data), cached)
            blobs.append(data)
            offset += len(data)
        head = marshal.dumps(index)
        from kcc.startup import _write_bytes
        _write_bytes(self.path, b"".join([_MAGIC, len(head).to_bytes(4, "little"), head,
                                          *blobs]))


def install(folder: str) -> None:
    """Put a Bundle over folder's bundle file first on sys.meta_path (once per process), and
    save it at exit."""
    if any(isinstance(f, Bundle) for f in sys.meta_path):
        return
    opt = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    b = Bundle(os.path.join(folder, f"modules.{sys.implementation.cache_tag}"
                                    f"-{sys.version.split()[0]}{opt}.bin"))
    sys.meta_path.insert(0, b)
    import atexit
    atexit.register(b.save)
