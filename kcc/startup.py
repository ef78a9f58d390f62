"""Process start-up: what every kcc process would otherwise rebuild, loaded from a cache.

Above the interpreter's own start, a small `kcc compile` is mostly imports, and two parts of
them are work that gives the same result in every process (issue 24, item 4):

- the `__init__` kcc.record generates for each record class (the classes of the compile path;
  kcc/record.py) and, where dataclasses is imported (the other targets, tests, a host
  program), dataclasses compiling the source text of each class's generated methods:
  `cached_keyed_code` (by a key of what the text depends on, the text made only for a new
  key) and `install_dataclass_cache` compile each distinct text once and keep the code
  object (two files: a compile reads only the records');
- typing compiling the text of every forward reference (a NamedTuple's string annotations):
  `typing.compile` is routed through the same code cache;
- tables built at import (the x86 form table: ~1,250 rows from their templates): `cached`
  keeps a table's value and rebuilds it when one of its source files changes; `cached_blobs`
  does so for a table of byte strings read one by one when asked for (the x86 table keeps
  each row's bytes and makes the Row when first asked for: kcc.encode.x86.table).

And one import skipped: dataclasses imports inspect (with ast, dis, tokenize) for a class
without a docstring; it gets a stand-in that imports inspect when first used (dataclasses is
set up when it is imported: _DataclassesHook; a compile imports neither).

Both live in the bytecode's cache folder (kcc/__pycache__, or under PYTHONPYCACHEPREFIX), in
marshal's format, and follow the bytecode's rules: the interpreter version is part of the name,
nothing is written when bytecode is not (`PYTHONDONTWRITEBYTECODE`, `-B`), an unreadable or
stale file is ignored and rebuilt, and a write is a temporary file renamed into place (two
processes may race; either file is whole). What is cached is exactly what would be built:
the same source compiled with the same (no) future flags, the same table values.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys

CodeType = type((lambda: None).__code__)  # types.CodeType and ModuleType (no types
ModuleType = type(sys)                    # module: start-up)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable     # (collections: 7 M instructions at start-up)
    from typing import Any, TypeVar

    T = TypeVar("T")

_TAG = f"{sys.implementation.cache_tag}-{sys.version.split()[0]}"
_MAX_CODES = 4000           # a cache that grew past this (many versions' classes) starts over


def cache_dir() -> str:
    """The folder of kcc's bytecode (what `importlib` writes the .pyc of this module to)."""
    # importlib.util's function, from the import system's own module (importlib.util itself
    # would import the importlib package, contextlib and more at start-up)
    from _frozen_importlib_external import cache_from_source
    return os.path.dirname(cache_from_source(os.path.abspath(__file__)))


def _read(path: str) -> Any:
    """The marshalled value in path, or None if it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            return marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def writable(path: str) -> bool:
    """Whether a file could be written at path: its folder, or the nearest folder above it
    that exists, is writable (a read-only install skips building what it cannot keep)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
    return os.access(folder, os.W_OK)


def _write(path: str, value: Any) -> None:
    """Write value (marshalled) to path: _write_bytes."""
    if sys.dont_write_bytecode:
        return
    try:
        data = marshal.dumps(value)
    except ValueError:              # a value marshal cannot write: no file (never at exit)
        return
    _write_bytes(path, data)


def _write_bytes(path: str, data: bytes) -> None:
    """Write data to path (temporary file, then rename); nothing where bytecode is not
    written, and no error if the folder cannot be written."""
    if sys.dont_write_bytecode:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def cached(name: str, sources: list[str], build: Callable[[], T],
           dump: Callable[[T], Any], load: Callable[[Any], T],
           directory: str | None = None) -> T:
    """build(), or the value a previous process built when no file of sources changed since.

    dump turns the value into what marshal writes (tuples, str, bytes, numbers, None), load
    turns that back; load(dump(build())) must equal build(). The stamp is each source's
    modification time and size, as for bytecode."""
    path = os.path.join(directory or cache_dir(), f"{name}.{_TAG}.bin")
    try:
        stamp = tuple((os.stat(s).st_mtime_ns, os.stat(s).st_size) for s in sources)
    except OSError:
        return build()
    got = _read(path)
    if isinstance(got, tuple) and len(got) == 2 and got[0] == stamp:
        try:
            return load(got[1])
        except (TypeError, ValueError, KeyError, IndexError):
            pass                    # a file of another layout: rebuild it
    value = build()
    _write(path, (stamp, dump(value)))
    return value


_BLOBS_MAGIC = b"kccT"
_MAX_HEAD = 1 << 22         # a head larger than this is not read (the file is rebuilt)


def cached_blobs(name: str, sources: list[str], build: Callable[[], tuple[Any, list[bytes]]],
                 directory: str | None = None) -> tuple[Any, Callable[[int], bytes]]:
    """(head, blob): build()'s (head, blobs), or what a previous process built when no file of
    sources changed since (the stamp `cached` takes). head is what marshal writes, loaded
    whole; blob(i) is blobs[i], read from the cache file when asked for: a compile reads a few
    dozen of the x86 table's ~1,250 rows, and reading the whole 210 KB file and keeping every
    row's bytes took ~140 fresh pages of memory, each a page fault (~0.5 ms of a small
    compile's process; issue 24, item 4). The file stays open for blob's reads (a newer file
    renamed over it leaves this one's contents to this process)."""
    path = os.path.join(directory or cache_dir(), f"{name}.{_TAG}.bin")
    try:
        stamp = tuple((os.stat(s).st_mtime_ns, os.stat(s).st_size) for s in sources)
    except OSError:
        head, blobs = build()
        return head, blobs.__getitem__
    got = _open_blobs(path, stamp)
    if got is not None:
        return got
    head, blobs = build()
    ends = b"".join(e.to_bytes(4, "little") for e in _ends(blobs))
    try:
        index = marshal.dumps((stamp, head, ends))
    except ValueError:              # a head marshal cannot write: no file
        return head, blobs.__getitem__
    _write_bytes(path, b"".join([_BLOBS_MAGIC, len(index).to_bytes(4, "little"), index,
                                 *blobs]))
    return head, blobs.__getitem__


def _ends(blobs: list[bytes]) -> list[int]:
    """Where each blob ends, from the start of the first."""
    out, end = [], 0
    for b in blobs:
        end += len(b)
        out.append(end)
    return out


def _open_blobs(path: str, stamp: tuple) -> tuple[Any, Callable[[int], bytes]] | None:
    """cached_blobs's (head, blob) from the file at path, if it is whole and of this stamp."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        first = os.pread(fd, 8, 0)
        n = int.from_bytes(first[4:8], "little")
        if first[:4] != _BLOBS_MAGIC or n > _MAX_HEAD:
            raise ValueError("not a blobs file")
        got = marshal.loads(os.pread(fd, n, 8))
        if not (isinstance(got, tuple) and len(got) == 3 and got[0] == stamp and
                isinstance(got[2], bytes) and len(got[2]) % 4 == 0):
            raise ValueError("another stamp or layout")
        ends = got[2]
        base = 8 + n
        size = int.from_bytes(ends[-4:], "little") if ends else 0
        if os.fstat(fd).st_size != base + size:
            raise ValueError("cut short or grown")
    except (OSError, EOFError, ValueError, TypeError):
        os.close(fd)
        return None

    def blob(i: int) -> bytes:
        if not 0 <= i < len(ends) // 4:
            raise IndexError(i)
        start = int.from_bytes(ends[4 * i - 4:4 * i], "little") if i else 0
        end = int.from_bytes(ends[4 * i:4 * i + 4], "little")
        data = os.pread(fd, end - start, base + start)
        if len(data) != end - start:
            raise OSError(f"{path}: cut short while in use")
        return data
    return got[1], blob


def _codes_path(store: str = "dataclass-methods") -> str:
    return os.path.join(cache_dir(), f"{store}.{_TAG}.bin")


class _CodeStore:
    """Code objects compiled from source text, kept in one cache file (marshal): read when
    first asked for, written at exit when this process compiled a new one."""

    def __init__(self, store: str) -> None:
        self.store = store
        self.codes: dict[Any, CodeType] | None = None
        self.dirty = False

    def _table(self) -> dict[Any, CodeType]:
        """The store's table, read from its file the first time."""
        codes = self.codes
        if codes is None:
            got = _read(_codes_path(self.store))
            codes = self.codes = got if isinstance(got, dict) and len(got) < _MAX_CODES else {}
        return codes

    def _add(self, key: Any, source: str, mode: str) -> CodeType:
        # dont_inherit: compiled as the caller's own `compile` compiles it (dataclasses,
        # typing and kcc.record have no `from __future__` imports; this module has, and
        # must not pass them on)
        code = self._table()[key] = compile(source, "<string>", mode, dont_inherit=True)
        if not self.dirty:
            self.dirty = True
            import atexit
            atexit.register(self.save)
        return code

    def code(self, source: str, mode: str = "exec") -> CodeType:
        """source compiled in mode ("exec" or "eval") as a module without `from __future__`
        imports compiles it, once: then from this process's table, or the cache file's."""
        key: Any = source if mode == "exec" else (mode, source)
        code = self._table().get(key)
        return self._add(key, source, mode) if code is None else code

    def keyed(self, key: tuple, make: Callable[[], str]) -> CodeType:
        """The code of the source `make()` returns, compiled in "exec" mode as `code` compiles
        it, looked up by key (a tuple of everything the source depends on): the source is
        made only when the key is new to this process and the cache file."""
        code = self._table().get(key)
        return self._add(key, make(), "exec") if code is None else code

    def save(self) -> None:
        if self.codes:
            _write(_codes_path(self.store), self.codes)


# dataclasses' and typing's generated code, and kcc.record's in a file of its own, so that a
# compile, which makes no dataclass, does not read the dataclasses' (tests and the other
# targets fill that one)
_DATACLASS_CODES = _CodeStore("dataclass-methods")
_RECORD_CODES = _CodeStore("record-methods")
_cached_code = _DATACLASS_CODES.code


def cached_keyed_code(key: tuple, make: Callable[[], str]) -> CodeType:
    """kcc.record's generated methods by key: `make()`'s source compiled once (_CodeStore)."""
    return _RECORD_CODES.keyed(key, make)


def _dataclass_exec(source: Any, globals: dict | None = None,
                    locals: dict | None = None) -> None:
    """`exec` for the dataclasses module: a string is compiled once, then its code object is
    reused (in this process and, through the cache file, in later ones)."""
    if type(source) is str:
        source = _cached_code(source, "exec")
    if globals is None:             # as if called from dataclasses: its namespace, not ours
        globals = sys.modules["dataclasses"].__dict__
    builtins.exec(source, globals, locals)  # noqa: S102  (dataclasses' own exec, cached)


def _typing_compile(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
    """`compile` for the typing module, which compiles the text of every forward reference
    (`ForwardRef`: each string annotation of a NamedTuple's fields, ~1.5 ms of a compile's
    start-up): `compile(text, "<string>", "eval")` is cached as the dataclasses' methods
    are; any other call is the builtin's."""
    if type(source) is str and filename == "<string>" and mode == "eval" and not args \
            and not kwargs:
        return _cached_code(source, "eval")
    return builtins.compile(source, filename, mode, *args, **kwargs)



# -- compiled regular expressions ---------------------------------------------------------------

_regexes: dict[tuple[str, int], tuple] | None = None
_regexes_dirty = False


def _regex_path() -> str:
    import _sre
    return os.path.join(cache_dir(), f"regex.{_TAG}-sre{_sre.MAGIC}.bin")


def regex(pattern: str, flags: int = 0) -> Any:
    """re.compile(pattern, flags), with re's parsing and code generation (0.1–0.5 ms a
    pattern: 1.5 ms of a small compile's start-up for 13 patterns) loaded from the cache
    folder: the same `_sre.compile` call with the same program re's compiler makes (its
    arguments kept per pattern, in marshal's format; the file is named after the
    interpreter's version and `_sre.MAGIC`, the version of that program). Any failure
    compiles as re.compile does. The re module itself is imported only then, or to
    compile a pattern the first time (a compile's start-up imports no re: issue 24, item 4)."""
    global _regexes, _regexes_dirty
    key = (pattern, int(flags))    # plain ints for marshal (re's flags are an IntFlag)
    try:
        import _sre
        if _regexes is None:
            got = _read(_regex_path())
            _regexes = got if isinstance(got, dict) and len(got) < _MAX_CODES else {}
        args = _regexes.get(key)
        if args is None:
            from re import _compiler, _parser
            p = _parser.parse(pattern, flags)
            code = _compiler._code(p, flags)
            indexgroup = [None] * p.state.groups
            for k, i in p.state.groupdict.items():
                indexgroup[i] = k
            # as re._compiler.compile calls it (CPython 3.11)
            # the program's opcodes are int subclasses (re._constants): plain ints for marshal
            args = _regexes[key] = (int(flags | p.state.flags), [int(c) for c in code],
                                    p.state.groups - 1,
                                    dict(p.state.groupdict), tuple(indexgroup))
            if not _regexes_dirty:
                _regexes_dirty = True
                import atexit
                atexit.register(_save_regexes)
        return _sre.compile(pattern, args[0], args[1], args[2], args[3], args[4])
    except Exception:                   # another interpreter, a bad file: re's own way
        import re
        return re.compile(pattern, flags)


def _save_regexes() -> None:
    if _regexes:
        _write(_regex_path(), _regexes)


class _Deferred(ModuleType):
    """A stand-in for a module that imports the real one on the first use of an attribute it
    lacks, and forwards every such use to it."""

    def __getattr__(self, name: str) -> Any:
        import importlib
        return getattr(importlib.import_module(self.__name__), name)


class _DataclassesLoader:
    """dataclasses' own loader, which imports it with a stand-in for its `import inspect`
    (with ast, dis and tokenize, ~1.5 ms of a process: dataclasses uses inspect in one place,
    the `inspect.signature` of a class without a docstring) and gives it the cached `exec`.
    Only dataclasses holds the stand-in, which imports the real inspect on first use; any other
    `import inspect`, before or after, is the real module. (importlib's LazyLoader does not
    help: the `import` statement itself reads the module's `__spec__`, which loads it.)"""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)    # get_code, get_source, … for runpy and tracebacks

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        stand_in = None
        if "inspect" not in sys.modules:
            stand_in = sys.modules["inspect"] = _Deferred("inspect")
        try:
            self.inner.exec_module(module)
        finally:
            if stand_in is not None and sys.modules.get("inspect") is stand_in:
                del sys.modules["inspect"]
        module.exec = _dataclass_exec      # type: ignore[attr-defined]


class _DataclassesHook:
    """A finder (first on `sys.meta_path` until dataclasses is imported) that hands
    dataclasses' spec, found by the finders after it, with _DataclassesLoader: a compile
    makes no dataclass (kcc.record), so dataclasses is set up when something imports it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "dataclasses":
            return None
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is not self and find is not None:
                spec = find(name, path, target)
                if spec is not None:
                    break
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if spec is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _DataclassesLoader(spec.loader)
        return spec

    def invalidate_caches(self) -> None:
        """importlib.invalidate_caches() asks every finder; nothing here to drop."""


def install_dataclass_cache() -> None:
    """Route the `exec` calls of the dataclasses module through _dataclass_exec (its
    generated methods are the only source text it executes): now if dataclasses is imported,
    else when it is (_DataclassesHook)."""
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is not None:
        if getattr(dataclasses, "exec", None) is not _dataclass_exec:
            dataclasses.exec = _dataclass_exec      # type: ignore[attr-defined]
    elif not any(isinstance(f, _DataclassesHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _DataclassesHook())
    # typing's forward references too, where typing is imported already: kcc's own modules
    # do not import it at run time (a NamedTuple is collections' namedtuple), so a compile
    # does not pay for typing; a host program that has it gets the cache
    typing = sys.modules.get("typing")
    if typing is not None and getattr(typing, "compile", None) is not _typing_compile:
        typing.compile = _typing_compile        # type: ignore[attr-defined]
