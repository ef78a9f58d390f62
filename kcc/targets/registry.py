"""The target registry: one object per target that the CLI, the benches and the tests drive.

    from kcc.targets import registry
    t = registry.get("x86")                  # imports kcc.targets.x86 on first use
    c = t.compile(sinks, t.default_arch, t.default_emit)
    t.launch(c.data, c.descs[0], check_launch(c.descs[0], args))

A target is one module that defines `TARGET`, an instance of a `TargetSpec` subclass. Built-in
targets are listed by name in `BUILTIN` (name → module) and imported lazily, so listing the
names (`kcc --help`, `kcc --version`) imports no back end. `register(spec)` adds a target at
run time (a test's toy target, a plugin). docs/architecture.md ("Targets") documents the
interface for a new back end.
"""

from __future__ import annotations

import sys

from kcc.record import record

MappingProxyType = type(type.__dict__)  # types.MappingProxyType (no types module: start-up)
TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Mapping, TextIO

# name → module defining TARGET; the order is the order `kcc targets` and --help list them
BUILTIN: dict[str, str] = {"x86": "kcc.targets.x86", "cuda": "kcc.targets.cuda",
                           "amd": "kcc.targets.amd"}

_loaded: dict[str, "TargetSpec"] = {}


def lazy_target(package: str) -> Any:
    """The module `__getattr__` of a target package (`kcc/targets/<t>/__init__.py`): its
    `TARGET` is built by `<package>.target` on first use, so importing one module of the
    package (its arch table, its driver) imports no more of the back end."""
    def __getattr__(name: str) -> Any:
        if name == "TARGET":
            return _module(f"{package}.target").TARGET
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__


def _module(name: str) -> Any:
    """The module of absolute name name, imported if needed: importlib.import_module's answer
    for an absolute name (the importlib package itself is not imported at start-up)."""
    __import__(name)
    return sys.modules[name]


class CompileError(Exception):
    """A kernel (or request) a target refuses on purpose; the message is for the user.

    kernel: the name of the kernel refused (None when the whole request is refused, e.g. an
    unknown arch); source: the file that kernel was read from, set by whoever read it (the
    CLI). str() is `source: kernel NAME: message` with the parts that are known, so a caller
    attributes a refusal by these fields, never by parsing the message."""

    def __init__(self, message: str, kernel: str | None = None, source: str | None = None):
        super().__init__(message)
        self.message = message
        self.kernel = kernel
        self.source = source

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        where += f"kernel {self.kernel}: " if self.kernel else ""
        return where + self.message

    def __reduce__(self) -> tuple:       # the fields survive pickling (worker processes)
        return (type(self), (self.message, self.kernel, self.source))


class DisasmError(Exception):
    """A file a target recognized but cannot list; the message is for the user."""


@record(frozen=True)
class Emit:
    """One output kind of a target: its name (`--emit`), file suffix, and whether the output
    is an object a loader can run (the manifest then records it)."""

    name: str
    suffix: str
    loadable: bool


@record(frozen=True)
class CompileOption:
    """A compile option any target may accept: the flag `kcc compile` takes (`--fp-contract`),
    the keyword `TargetSpec.compile` receives it as, and its values; the first value is the
    default, which every target compiles (and is never passed: a target that takes no options
    needs no keyword)."""

    flag: str
    keyword: str
    values: tuple[str, ...]
    help: str


# the compile options the CLI offers; each target says which non-default values it compiles
# (TargetSpec.options), so the CLI never asks which target it drives
OPTIONS: tuple[CompileOption, ...] = (
    CompileOption("--fp-contract", "fp_contract", ("off", "fast"),
                  "Float multiply-add contraction, as clang's -ffp-contract: off (the default) "
                  "computes every MUL and ADD as written (docs/semantics.md); fast fuses a MUL "
                  "feeding an ADD into one fused multiply-add (targets that list it in `kcc "
                  "targets`)."),
    CompileOption("--streaming-stores", "streaming_stores", ("auto", "never", "always"),
                  "Non-temporal (streaming) vector stores, which write memory without reading "
                  "the lines into the cache first: auto (the default) uses them for stores "
                  "that stream through a write-only buffer (consecutive whole vectors across "
                  "the loop) when the kernel's buffers total at least 32 MiB; always also "
                  "below that; never not at all (targets that list it in `kcc targets`)."),
    CompileOption("--prefetch", "prefetch", ("auto", "never", "always"),
                  "Software prefetches ahead of the loads of a loop that reads 8 or more "
                  "streams and stores to no buffer (a row reduction): auto (the default) when "
                  "the kernel's buffers total at least 4 MiB; always also below that; never "
                  "not at all (targets that list it in `kcc targets`)."),
    CompileOption("--vector-width", "vector_width", ("auto", "512"),
                  "The widest vectors on x86-64-v4: auto (the default) compiles a kernel of at "
                  "most 96 element operations with 256-bit vectors, as clang prefers on these "
                  "CPUs (a zmm unit that sat idle runs its first 512-bit instructions slowly, "
                  "which a kernel of a few nanoseconds cannot win back), and others with "
                  "512-bit ones; 512 uses 512-bit vectors wherever they are legal (targets "
                  "that list it in `kcc targets`)."),
)


@record
class Compiled:
    """What `TargetSpec.compile` returns: the output bytes, one KernelDesc per kernel (the
    manifest's entries) and the arch actually compiled for (e.g. what `native` resolved to)."""

    data: bytes
    descs: list[Any]
    arch: str
    emit: str


class TargetSpec:
    """The interface every target implements (defaults: the optional parts are absent)."""

    name: str = ""
    summary: str = ""                     # one line: what the target writes
    arches: tuple[str, ...] = ()
    default_arch: str = ""
    emits: tuple[Emit, ...] = ()          # the first is the default
    lists: str = ""                       # what `kcc disasm` lists, e.g. "an x86-64 ELF object"
    # CompileOption keyword → the values beyond its default this target compiles
    options: Mapping[str, tuple[str, ...]] = MappingProxyType({})

    @property
    def default_emit(self) -> str:
        """The emit kind used without --emit."""
        return self.emits[0].name

    def emit(self, name: str) -> Emit:
        """The Emit called name; CompileError naming the choices if there is none."""
        for e in self.emits:
            if e.name == name:
                return e
        raise CompileError(f"-t {self.name} emits {' or '.join(e.name for e in self.emits)}, "
                           f"not {name!r}")

    def check_arch(self, arch: str) -> None:
        """CompileError unless arch is one this target compiles for."""
        if arch not in self.arches:
            raise CompileError(f"unknown {self.name} --arch {arch!r} (choose from "
                               f"{', '.join(self.arches)})")

    def compile_options(self, given: dict[str, str]) -> dict[str, str]:
        """The keywords to pass to compile for options given by keyword (a default value is
        left out); CompileError for a value this target does not compile."""
        kw = {}
        for opt in OPTIONS:
            value = given.get(opt.keyword, opt.values[0])
            if value not in opt.values:
                raise CompileError(f"{opt.flag} is {' or '.join(opt.values)}, not {value!r}")
            if value == opt.values[0]:
                continue
            if value not in self.options.get(opt.keyword, ()):
                able = [t.name for t in all_targets() if value in t.options.get(opt.keyword, ())]
                also = "".join(f"; -t {n} does" for n in able[:1])
                raise CompileError(f"-t {self.name} does not compile {opt.flag}={value} (only "
                                   f"{opt.flag}={opt.values[0]}){also}")
            kw[opt.keyword] = value
        return kw

    def compile(self, sinks: list[Any], arch: str, emit: str, dump_after: str | None = None,
                out: TextIO | None = None, **options: str) -> Compiled:
        """Compile kernel graphs (one object, one symbol each); CompileError for a kernel the
        target refuses on purpose, any other exception is an internal error. options: the
        non-default compile options (`OPTIONS`) among those the target lists in `options`."""
        raise NotImplementedError

    def launch(self, data: bytes, desc: Any, values: list[Any]) -> None:
        """Run one kernel of a compiled object on values (checked by manifest.check_launch);
        buffers are written in place. manifest.LaunchError when it cannot run here (no
        device, a CPU lacking the arch, an object the loader refuses)."""
        from kcc.targets.manifest import LaunchError
        raise LaunchError(f"target {self.name} has no loader")

    def emulate(self, data: bytes, desc: Any, values: list[Any]) -> None:
        """As launch, in a software model of the device (`kcc run --emulate`);
        manifest.LaunchError when the target has none or the model refuses the kernel."""
        from kcc.targets.manifest import LaunchError
        raise LaunchError(f"target {self.name} has no emulator")

    def describe(self, data: bytes) -> list[Any] | None:
        """The launch facts embedded in a compiled object (KernelDescs), or None when the
        target embeds none; ValueError if the object's facts are unreadable."""
        return None

    def check_facts(self, data: bytes, desc: Any) -> None:
        """manifest.LaunchError unless desc has the object's own launch facts (describe): the
        object, not the caller's description, decides what a launch may be."""
        from kcc.targets.facts import FactsError
        from kcc.targets.facts_read import check_manifest
        from kcc.targets.manifest import LaunchError
        try:
            check_manifest(desc.to_json(), self.describe(data), f"kernel {desc.name}")
        except FactsError as e:
            raise LaunchError(str(e)) from None

    def claims(self, data: bytes, path: str) -> bool:
        """True if data (read from path) is an output of this target `kcc disasm` can list."""
        return False

    def disasm(self, data: bytes, att: bool = False) -> str:
        """The listing of an output this target claims; DisasmError if it cannot be listed."""
        raise DisasmError(f"target {self.name} has no disassembler")

    def header(self, descs: list[Any], guard: str) -> str | None:
        """A C header declaring the kernels (`--header`), or None if the target has none."""
        return None


def names() -> tuple[str, ...]:
    """Every target name, built-in first (imports nothing)."""
    return tuple(dict.fromkeys([*BUILTIN, *_loaded]))


def register(spec: TargetSpec) -> TargetSpec:
    """Add (or replace) a target; returns it. Built-in modules need not call this."""
    if not spec.name:
        raise ValueError("a target needs a name")
    _loaded[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a target added with register (tests use it to clean up)."""
    _loaded.pop(name, None)


def get(name: str) -> TargetSpec:
    """The target called name, importing its module on first use; KeyError if unknown."""
    if name not in _loaded:
        if name not in BUILTIN:
            raise KeyError(name)
        spec = _module(BUILTIN[name]).TARGET
        _loaded.setdefault(name, spec)
    return _loaded[name]


def all_targets() -> list[TargetSpec]:
    """Every target, imported (for `kcc disasm` and `kcc targets`)."""
    return [get(n) for n in names()]
