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

The code a module runs from the file has its larger functions as stubs whose body is read
when first called (kcc/lazycode.py: ~40% of the code a small compile loads it never calls);
at exit the functions this process called that way are made whole in the file, so a stub
stays only where no process has called the function. `get_code` gives the code as compiled.
A module of the file is imported by Bundle.load in place of importlib's _find_and_load while
the process runs one thread (_take_find_and_load): the same steps, less the module lock and
the other finders'.

The file follows the bytecode's rules (kcc/startup.py): nothing is written where bytecode is
not (`PYTHONDONTWRITEBYTECODE`, `-B`), an unreadable file, a file cut short or one another
version of kcc wrote is ignored and rebuilt, a module whose source changed is imported the
usual way, and a write is a temporary file renamed into place. The file is an index (marshal)
and the modules' code after it; a process reads the index and then only the code of each
module it imports (`os.pread`: copying the whole file into memory first cost more, in page
faults, than the import machinery it saves). A module it loads has the attributes a `.pyc`
import gives (`__file__`, `__path__`, `__spec__` with the source as origin, a loader with
get_code/get_source/is_package for runpy, tracebacks and linecache). kcc's pytest plugin is
left to the import system: pytest loads it through its own hook, which rewrites its asserts.
"""

from __future__ import annotations

import _imp
import marshal
import os
import sys
from _frozen_importlib import ModuleSpec                 # importlib.machinery's, imported
from _frozen_importlib_external import SourceFileLoader  # at start-up (no importlib package)

CodeType = type((lambda: None).__code__)  # types.CodeType, FunctionType and ModuleType
FunctionType = type(lambda: None)         # (no types module: start-up)
ModuleType = type(sys)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_PREFIX = "kcc."
_SKIP = frozenset({"kcc.pytest_plugin"})    # pytest imports and rewrites it (pyproject.toml)
_MAGIC = b"kccE"           # (kccC: no lazy function bodies, no version; kccB: entries without
_MAX_INDEX = 1 << 20        # the bytecode path) an index larger than this is not read

# name → (source path, (st_mtime_ns, st_size), offset of the module's part of the file, the
# length of its code (the code exec_module runs: kcc/lazycode.py's stubs in it), the module's
# __cached__: its .pyc path as importlib computes it, kept so that each import does not compute
# it again (ModuleSpec.cached's cache_from_source, Python string work), where its code as
# compiled starts in its part, its length, the length of the set of functions it holds whole
# (lazycode.Key), which follows). A module's part: the code with stubs, the stubbed
# functions' code, the code as compiled (the last two absent when nothing is stubbed: the
# code as compiled is the first), the set (marshal; in the part, not the index: every
# process reads the index, and ~450 tuples of a name and a line took 0.7 ms to load).
_Entry = tuple[str, tuple[int, int], int, int, "str | None", int, int, int]

_ACTIVE: list[Bundle] = []  # the installed bundle, which lazy() reads functions from


def _version() -> str:
    return getattr(sys.modules.get("kcc"), "__version__", "")


def lazy(offset: int, length: int) -> Any:
    """The function a stub (kcc/lazycode.py) stands for, its code read now: the function
    object calling it, found in its module's namespace or classes, gets the real code in place
    of the stub's; a function held elsewhere only (a decorator's closure) is called through a
    new function of the same code each time."""
    frame = sys._getframe(1)
    stub, g = frame.f_code, frame.f_globals
    b = _ACTIVE[0]
    real = b.functions.get(stub)
    if real is None:
        name = g["__name__"]
        e = b.entries[name]
        data = os.pread(b.fd, length, b.base + e[2] + offset)
        if len(data) != length:
            raise RuntimeError(f"{name}.{stub.co_qualname}: its code is cut short in {b.path}")
        real = marshal.loads(data)
        _imp._fix_co_filename(real, e[0])
        b.functions[stub] = real
        b.called.setdefault(name, set()).add((stub.co_qualname, stub.co_firstlineno))
        if _patch(g, stub, real):
            return _FOUND[stub]
    elif stub in _FOUND:
        return _FOUND[stub]
    return FunctionType(real, g, real.co_name)


_FOUND: dict[CodeType, Any] = {}    # stub → a function whose code is now the real code


def _patch(g: dict, stub: CodeType, real: CodeType) -> bool:
    """Put real in place of stub on each function of namespace g (its module) and its classes
    that has it; whether any had."""
    module = g.get("__name__")
    todo = list(g.values())
    seen: set[int] = set()
    found = False
    while todo:
        v = todo.pop()
        t = type(v)
        if t is FunctionType:
            if v.__code__ is stub:
                v.__code__ = real
                _FOUND[stub] = v
                found = True
            w = v.__dict__.get("__wrapped__")       # functools.wraps
            if w is not None:
                todo.append(w)
        elif t is staticmethod or t is classmethod:
            todo.append(v.__func__)
        elif t is property:
            todo += (v.fget, v.fset, v.fdel)
        elif isinstance(v, type) and id(v) not in seen and \
                v.__dict__.get("__module__") == module:
            seen.add(id(v))
            todo += v.__dict__.values()
        elif t.__name__ == "_lru_cache_wrapper":
            todo.append(getattr(v, "__wrapped__", None))
    return found


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

    def _code(self, name: str, data: bytes | None, whole: bool = False) -> CodeType:
        if data is None:
            data = self.bundle.read(name, whole)
            if data is None:
                raise ImportError(f"{name}: its code is gone from {self.bundle.path}", name=name)
        code = marshal.loads(data)
        assert isinstance(code, CodeType)
        _imp._fix_co_filename(code, self.bundle.entries[name][0])  # as a .pyc import does
        return code

    def get_code(self, name: str) -> CodeType:
        """The module's code as compiled (runpy, `python -m`; no stubs)."""
        return self._code(name, None, whole=True)

    def get_source(self, name: str) -> str:
        with open(self.bundle.entries[name][0], encoding="utf-8") as f:
            return f.read()

    def is_package(self, name: str) -> bool:
        return os.path.basename(self.bundle.entries[name][0]) == "__init__.py"


class Bundle:
    """The finder (importlib's MetaPathFinder protocol) over one bundle file."""

    def __init__(self, path: str, version: str | None = None) -> None:
        self.path = path
        # kcc's version: a file another version wrote is not read (None: any file is read)
        self.version = version
        self.entries: dict[str, _Entry] = {}
        self.loaded: set[str] = set()
        self.functions: dict[CodeType, CodeType] = {}   # stub → its real code, read
        self.called: dict[str, set] = {}    # module → the functions its stubs stood for
        self.fd = -1
        self.base = 0               # where the code starts in the file
        self.size = 0               # the file's size: a module's part past it is not used
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
                if isinstance(got, tuple) and len(got) == 2 and version in (None, got[0]) and \
                        isinstance(got[1], dict):
                    self.entries, self.fd, self.base = got[1], fd, 8 + n
                    self.size = os.fstat(fd).st_size
            except (OSError, EOFError, ValueError, TypeError):
                pass
            if self.fd < 0:
                os.close(fd)
        self.loader = _Loader(self)

    def read(self, name: str, whole: bool = False) -> bytes | None:
        """The marshalled code of module name (with stubs; whole: as compiled), or None if
        the file does not give it whole."""
        e = self.entries[name]
        offset, length = (e[2] + e[5], e[6]) if whole else (e[2], e[3])
        return self._pread(offset, length)

    def _eager(self, name: str) -> frozenset:
        """The functions module name holds whole (lazycode.Key), as its part records them."""
        e = self.entries[name]
        data = self._pread(e[2] + e[5] + e[6], e[7])
        try:
            got = marshal.loads(data) if data is not None else None
        except (EOFError, ValueError, TypeError):
            got = None
        return got if isinstance(got, frozenset) else frozenset()

    def _pread(self, offset: int, length: int) -> bytes | None:
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
        if self.base + e[2] + e[5] + e[6] + e[7] > self.size:
            return None             # a file cut short: its stubs' code may be gone
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

    def load(self, name: str, import_: Any) -> ModuleType | None:
        """Import kcc module name from the bundle as importlib's _find_and_load_unlocked and
        _load_unlocked do, less the steps that are there for other finders and threads (the
        module lock, the walk over sys.meta_path, _init_module_attrs' probes: ~40 K
        instructions a module; issue 24, item 4); None (nothing done) where it cannot."""
        modules = sys.modules
        parent, _, child = name.rpartition(".")
        if parent not in modules:
            import_(parent)
        if name in modules:
            return modules[name]
        parent_module = modules[parent]
        path = getattr(parent_module, "__path__", None)
        spec = self.find_spec(name, path) if path is not None else None
        if spec is None:
            return None
        parent_spec = parent_module.__spec__
        if parent_spec:
            parent_spec._uninitialized_submodules.append(child)
        try:
            loader = self.loader
            module = loader.create_module(spec)
            module.__loader__ = loader      # _init_module_attrs' order (create_module set
            module.__package__ = spec.parent    # __path__, __file__, __cached__)
            module.__spec__ = spec
            spec._initializing = True
            try:
                modules[name] = module
                try:
                    loader.exec_module(module)
                except BaseException:
                    modules.pop(name, None)
                    raise
                module = modules.pop(name)     # to the end of sys.modules, as importlib does
                modules[name] = module
            finally:
                spec._initializing = False
        finally:
            if parent_spec:
                parent_spec._uninitialized_submodules.pop()
        try:
            setattr(modules[parent], child, module)
        except AttributeError:
            pass                    # (importlib warns: a parent that refuses attributes)
        return module

    def save(self) -> None:
        """At exit: add the kcc modules this process imported from their own files, make the
        functions it read through stubs whole, and write the bundle if either changed it."""
        from kcc.startup import writable
        if sys.dont_write_bytecode or not writable(self.path):
            return                  # (and no re-reading every module's code for nothing)
        new: dict[str, tuple[str, tuple[int, int], CodeType, str | None]] = {}
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
                new[name] = (origin, stamp, code, spec.cached)
        called = {n: k for n, k in self.called.items() if n in self.entries and n not in new}
        if not new and not called:
            return
        from kcc.lazycode import split
        index: dict[str, _Entry] = {}
        parts: list[bytes] = []
        offset = 0
        for name in list(self.entries) + [n for n in new if n not in self.entries]:
            if name in new:
                origin, stamp, code, cached = new[name]
                eager: frozenset = frozenset()
            else:
                e = self.entries[name]
                origin, stamp, cached = e[0], e[1], e[4]
                if name in called:
                    data = self.read(name, whole=True) if self.fd >= 0 else None
                    try:        # (a damaged file: the module is left out, read again later)
                        code = marshal.loads(data) if data is not None else None
                    except (EOFError, ValueError, TypeError):
                        code = None
                    eager = self._eager(name) | called[name]
                else:
                    code = None
                    part = self._pread(e[2], e[5] + e[6] + e[7]) if self.fd >= 0 else None
                    if part is None:
                        continue
                    entry = (origin, stamp, offset, e[3], cached, e[5], e[6], e[7])
            if code is not None:
                whole = marshal.dumps(code)
                try:
                    stubbed, blobs = split(code, eager)
                except ValueError:
                    stubbed, blobs = code, b""
                keep = marshal.dumps(eager)
                if stubbed is code:
                    part = whole + keep
                    entry = (origin, stamp, offset, len(whole), cached, 0, len(whole), len(keep))
                else:
                    head = marshal.dumps(stubbed)
                    part = b"".join([head, blobs, whole, keep])
                    entry = (origin, stamp, offset, len(head), cached, len(head) + len(blobs),
                             len(whole), len(keep))
            elif name in called:
                continue
            index[name] = entry
            parts.append(part)
            offset += len(part)
        version = _version() if self.version is None else self.version
        head = marshal.dumps((version, index))
        from kcc.startup import _write_bytes
        _write_bytes(self.path, b"".join([_MAGIC, len(head).to_bytes(4, "little"), head,
                                          *parts]))


def install(folder: str) -> None:
    """Put a Bundle over folder's bundle file first on sys.meta_path (once per process), and
    save it at exit."""
    if any(isinstance(f, Bundle) for f in sys.meta_path):
        return
    opt = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    b = Bundle(os.path.join(folder, f"modules.{sys.implementation.cache_tag}"
                                    f"-{sys.version.split()[0]}{opt}.bin"), _version())
    _ACTIVE[:] = [b]
    import builtins
    builtins.__kcc_lazy__ = lazy    # type: ignore[attr-defined]  (the stubs' one call)
    sys.meta_path.insert(0, b)
    _take_find_and_load(b)
    import atexit
    atexit.register(b.save)


def _take_find_and_load(b: Bundle) -> None:
    """Route importlib's _find_and_load (what the interpreter calls for a module not yet in
    sys.modules) through Bundle.load for kcc's modules in the bundle, while the process runs
    one thread and the bundle is the first finder that answers for them (kcc's dataclasses
    hook before it answers for dataclasses only); everything else goes to importlib's own."""
    import _frozen_importlib as bootstrap
    import _thread
    inner = bootstrap._find_and_load
    if getattr(inner, "_kcc_bundle", None) is not None:
        return
    entries, modules, meta_path, count = b.entries, sys.modules, sys.meta_path, _thread._count
    from kcc.startup import _DataclassesHook

    def _find_and_load(name: str, import_: Any) -> Any:
        if name in entries and name not in modules and not count() and \
                not sys.flags.verbose and name.startswith(_PREFIX) and name not in _SKIP:
            for f in meta_path:
                if f is b:
                    module = b.load(name, import_)
                    if module is not None:
                        return module
                    break
                if type(f) is not _DataclassesHook:
                    break
        return inner(name, import_)

    _find_and_load._kcc_bundle = b      # type: ignore[attr-defined]
    bootstrap._find_and_load = _find_and_load

