"""tinygrad's CPU device through kcc's x86 back end: the `KCC` renderer and its compiler.

`KCCRenderer` subclasses tinygrad's `ClangRenderer`, so tinygrad lowers every kernel exactly as
for `DEV=CPU` (same ops, dtypes, vector widths, threads). `render()` writes the linearized
program as `.uop` v1 text (kcc.frontend.tinygrad_import); `KCCCompiler.compile()` compiles that
text in-process with kcc's x86 back end to an ELF relocatable object, which tinygrad's
`CPUProgram` loads itself.

The calling convention. tinygrad calls the object at `.text+0` once per `core_id` with every
argument as a 64-bit integer: buffer addresses in slot order, then the integer variables in slot
order, `core_id` among them at its slot. kcc's x86 kernels are System V functions taking the
buffers, then the scalar PARAMs (integers in GPRs, read at their own width: the low bits of the
64-bit value tinygrad passes), then `int gidx0`. When `core_id` is the last variable the importer
maps it to `gidx0`, and the two conventions agree argument for argument; when tinygrad numbers a
variable after it (a JIT's bound Variable can be), `core_id` stays a scalar PARAM at its slot, so
they agree again. `render()` refuses a float scalar argument (tinygrad passes none) and a
SPECIAL (tinygrad's CPU device passes no thread index but `core_id`). No entry shim is needed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from tinygrad.device import CompileError, Compiler
from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.renderer import Renderer
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.uop.ops import Ops, UOp

from kcc.frontend.tinygrad_import import (WORKER_VAR, ImportedKernel, TgNode, TgParam,
                                          TinygradImportError, import_program)

DUMP_ENV = "KCC_TINYGRAD_DUMP"
ARCH_ENV = "KCC_TINYGRAD_ARCH"
NATIVE_ENV = "KCC_TINYGRAD_NATIVE"

# Ops kcc implements itself (docs/semantics.md, docs/transcendentals.md), declared to tinygrad
# so it hands them over instead of expanding them: EXP2/LOG2/SIN into float polynomials,
# RECIPROCAL into a division, MAX into CMPLT+WHERE, MULACC into MUL+ADD, THREEFRY into its
# 32-bit rounds. `KCC_TINYGRAD_NATIVE=0` keeps ClangRenderer's own set, so tinygrad produces
# exactly the graphs DEV=CPU compiles. The values are never called: render() writes .uop.
NATIVE_OPS = (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.RECIPROCAL, Ops.MAX, Ops.MULACC, Ops.THREEFRY)


def _kcc_op(*args: Any) -> str:
    raise AssertionError("KCCRenderer renders .uop itself; code_for_op only declares support")


def code_for_op(native: bool) -> dict:
    """ClangRenderer's op table, plus kcc's native ops when native."""
    table = dict(ClangRenderer.code_for_op)
    if native:
        table.update({op: _kcc_op for op in NATIVE_OPS})
    return table

# tinygrad dtype -> kcc dtype name
DTYPE_NAMES: dict[Any, str] = {
    dtypes.bool: "bool", dtypes.int8: "int8", dtypes.uint8: "uint8", dtypes.int16: "int16",
    dtypes.uint16: "uint16", dtypes.int32: "int32", dtypes.uint32: "uint32",
    dtypes.int64: "int64", dtypes.uint64: "uint64", dtypes.float16: "float16",
    dtypes.bfloat16: "bfloat16", dtypes.float32: "float32", dtypes.float64: "float64",
    dtypes.weakint: "weakint", dtypes.weakfloat: "weakfloat",
}
_SPACES = {AddrSpace.GLOBAL: "GLOBAL", AddrSpace.LOCAL: "LOCAL", AddrSpace.REG: "REG",
           AddrSpace.ALU: "ALU"}


def dtype_name(dt: Any) -> str | None:
    """The kcc name of a tinygrad dtype's scalar (None for void or one kcc lacks)."""
    if dt is None or dt == dtypes.void:
        return None
    base = dt.scalar() if hasattr(dt, "scalar") else dt
    return DTYPE_NAMES.get(base, str(base))


def _param(u: UOp) -> TgParam:
    a = u.arg
    space = _SPACES.get(a.addrspace, str(a.addrspace))
    size = None
    if space != "ALU":
        size = int(u.max_numel())
    vv = tuple(int(v) for v in a.vmin_vmax) if a.vmin_vmax is not None else None
    return TgParam(a.slot, dtype_name(u.dtype) or "void", size, space, vv, a.name,
                   bool(a.volatile))


def _arg(u: UOp) -> Any:
    if u.op in (Ops.PARAM, Ops.BUFFER):
        return _param(u)
    if u.op in (Ops.CAST, Ops.BITCAST):
        return dtype_name(u.arg)
    if u.op is Ops.RANGE:
        return (*u.arg[:-1], u.arg[-1].name)
    if u.op is Ops.SINK:
        return None
    if u.op is Ops.WMMA:
        # ((N, M, K), dtype_in, device, threads, upcast axes): the dtype by its kcc name
        return (tuple(u.arg[0]), dtype_name(u.arg[1]), *u.arg[2:])
    if u.op is Ops.CONST:
        # tinygrad wraps float constants (ConstFloat); the importer wants plain Python values
        v = u.arg
        return bool(v) if isinstance(v, bool) else int(v) if isinstance(v, int) else \
            float(v) if isinstance(v, float) else v
    return u.arg


def to_nodes(uops: list[UOp]) -> list[TgNode]:
    """tinygrad's linearized program as the importer's neutral node list."""
    pos = {u: i for i, u in enumerate(uops)}
    nodes = []
    for u in uops:
        if any(s not in pos for s in u.src) and u.op not in (Ops.PARAM, Ops.BUFFER):
            missing = next(s for s in u.src if s not in pos)
            raise TinygradImportError(f"{u.op.name} uses a {missing.op.name} that is not in "
                                      "the linearized program")
        src = tuple(pos[s] for s in u.src if s in pos)
        nodes.append(TgNode(u.op.name, dtype_name(u.dtype), _arg(u), src))
    return nodes


def kernel_name(uops: list[UOp]) -> str:
    """The kernel's C name (tinygrad's function_name, without terminal colors)."""
    sink = uops[-1]
    info = sink.arg
    return getattr(info, "function_name", None) or "kernel"


def program_to_uop(uops: list[UOp]) -> ImportedKernel:
    """A linearized tinygrad program as a kcc kernel (text and its argument facts)."""
    name = kernel_name(uops)
    try:
        return import_program(to_nodes(uops), name)
    except TinygradImportError as e:
        msg = str(e) if str(e).startswith("kernel ") else f"kernel {name}: {e}"
        raise TinygradImportError(msg) from None


def _check_abi(uops: list[UOp], k: ImportedKernel) -> None:
    """Refuse what tinygrad's CPU calling convention and kcc's would disagree on."""
    for u in uops:
        if u.op is Ops.PARAM and u.arg.addrspace == AddrSpace.ALU and \
                not dtypes.is_int(u.dtype):
            raise TinygradImportError(f"kernel {k.name}: a {u.dtype} scalar argument (tinygrad "
                                      "passes every argument as a 64-bit integer)")
        if u.op is Ops.SPECIAL:
            raise TinygradImportError(f"kernel {k.name}: a SPECIAL thread index {u.arg!r} "
                                      "(tinygrad's CPU device passes no thread index but "
                                      f"{WORKER_VAR})")


def dump(name: str, suffix: str, text: str) -> str | None:
    """Write text to $KCC_TINYGRAD_DUMP/name.suffix when it is set; returns the path."""
    d = os.environ.get(DUMP_ENV)
    if not d:
        return None
    path = Path(d) / f"{name}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def _listing(uops: list[UOp]) -> str:
    pos = {u: i for i, u in enumerate(uops)}
    return "".join(f"{i} {u.op.name} {u.dtype} {u.arg!r} {[pos.get(s) for s in u.src]}\n"
                   for i, u in enumerate(uops))


# Environment switches that change the object kcc writes for the same .uop (kcc/targets/x86.py):
# part of the cache key so that a cached object is never one compiled under other settings
_CODE_ENVS = ("KCC_X86_HIGH_VEC_FIRST", "KCC_CHECK_ALLOC")


@functools.cache
def source_hash(root: str | None = None) -> str:
    """A hash of kcc's own source files (every .py under the kcc package, path and bytes),
    computed once per process (about 4 ms): the compile cache's key changes with kcc's code,
    not only with its version number, so an edited checkout never reuses a stale object."""
    import kcc
    base = Path(root) if root else Path(kcc.__file__).parent
    h = hashlib.sha256()
    for p in sorted(base.rglob("*.py")):
        h.update(p.relative_to(base).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cache_key(arch: str) -> str:
    """The table of tinygrad's compile cache (helpers.diskcache_put, keyed there by the .uop
    text) that holds kcc's objects: kcc's version, a hash of its source, the resolved target
    arch and the environment switches that change the code. Only [A-Za-z0-9_.-] characters:
    tinygrad quotes it as an SQL table name."""
    import kcc
    from kcc.targets.x86.arch import resolve_arch
    envs = "".join("1" if os.environ.get(e, "") not in ("", "0") else "0" for e in _CODE_ENVS)
    try:
        arch = resolve_arch(arch)
    except Exception:       # a CPU below x86-64-v3: compile() reports it, kernel by kernel
        pass
    return f"compile_kcc_{kcc.__version__}_{source_hash()}_{arch}_{envs}"


class KCCCompiler(Compiler):
    """Compiles `.uop` text with kcc's x86 back end, in-process, to an ELF relocatable object.

    Objects go through tinygrad's compile cache (`Compiler.compile_cached`, the sqlite file
    `CACHEDB`) under `cache_key(arch)`, as clang's objects do under theirs, so a second process
    compiles nothing; `CCACHE=0` (or `CACHELEVEL=0`) turns the cache off."""

    def __init__(self, arch: str | None = None):
        # `native` by default, as tinygrad's clang path compiles with -march=native: the two
        # devices then use the same instruction set (x86-64-v4 on an AVX-512 CPU, else v3)
        self.arch = arch or os.environ.get(ARCH_ENV, "native")
        try:                # resolved once, not per kernel (it reads /proc/cpuinfo)
            from kcc.targets.x86.arch import resolve_arch
            self.arch = resolve_arch(self.arch)
        except Exception:   # a CPU below x86-64-v3: compile() reports it, kernel by kernel
            pass
        super().__init__(cache_key(self.arch))

    def compile(self, src: str) -> bytes:
        from kcc.frontend.errors import SourceError
        from kcc.frontend.parser import parse_result
        from kcc.targets.x86.target import compile_x86
        name = _name_of(src)
        try:
            sink = parse_result(src, f"{name}.uop").sink
            obj, _ = compile_x86([sink], self.arch)
            return obj
        except SourceError as e:
            reason = e.render()
        except Exception as e:                      # any refusal: name it, never crash
            reason = f"{type(e).__name__}: {e}"
        saved = dump(name, ".uop", src)
        where = f" (the .uop is saved as {saved})" if saved else \
            f" (set {DUMP_ENV}=dir to save the .uop)"
        raise CompileError(f"kcc cannot compile tinygrad kernel {name}{where}: {reason}")


def _name_of(src: str) -> str:
    for line in src.splitlines()[:3]:
        if line.startswith("# tinygrad kernel "):
            return line.split()[-1]
    return "kernel"


def _in_beam_try_compile() -> bool:
    """Whether tinygrad's BEAM search (`search._try_compile`) is lowering this program."""
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if code.co_name == "_try_compile" and code.co_filename.endswith(
                os.path.join("codegen", "opt", "search.py")):
            return True
        f = f.f_back
    return False


def _beam_discards(uops: list[UOp]) -> bool:
    """Whether tinygrad's BEAM search would discard this candidate after compiling it.

    tinygrad 0.14's `search._try_compile` lowers a candidate (kernel name "test") through
    `to_program` -- render, then compile -- and only then raises `RuntimeError("too many
    uops")` when the linearized program has `>= BEAM_UOPS_MAX` uops (getenv, default 3000; 0
    or less turns the check off), which `_try_compile` itself catches: the candidate is
    dropped. Raising the same error from render() drops it the same way, before kcc spends a
    compile on it (and before tinygrad's compile cache stores an object nobody loads). One
    difference, in time only: tinygrad keeps a lowered program in `to_program_cache` when
    to_program returns, so a candidate seen again (the same AST by another order of opts)
    is lowered once; a refused one is lowered again and refused again, with the same outcome.
    tests/tinygrad/test_beam_uops_max.py."""
    from tinygrad.helpers import getenv
    uops_max = getenv("BEAM_UOPS_MAX", 3000)
    if not (len(uops) >= uops_max > 0) or kernel_name(uops) != "test":
        return False
    if not _in_beam_try_compile():
        return False
    if getenv("BEAM_LOG_SURPASS_MAX"):
        print(f"too many uops. len(uops)={len(uops)}, uops_max={uops_max}")
    return True


class KCCRenderer(ClangRenderer):
    """tinygrad's CPU renderer whose kernels kcc compiles (`DEV=CPU:KCC`)."""

    code_for_op = code_for_op(os.environ.get(NATIVE_ENV, "1") != "0")
    # tinygrad keys its BEAM search cache by (kernel, device, renderer suffix): without a suffix
    # of its own, a search made for DEV=CPU's clang would be reused for kcc's code, and one made
    # with kcc's native ops for a run without them
    suffix = "KCC" if NATIVE_OPS[0] in code_for_op else "KCC_CLANGOPS"

    def __init__(self, target: Any):
        Renderer.__init__(self, target)   # not ClangRenderer's: that one sets up clang
        self.compiler = KCCCompiler()

    def render(self, uops: list[UOp]) -> str:
        if _beam_discards(uops):
            raise RuntimeError("too many uops")
        try:
            k = program_to_uop(uops)
            _check_abi(uops, k)
        except TinygradImportError as e:
            name = kernel_name(uops)
            saved = dump(name, ".tinygrad.txt", _listing(uops))
            where = f" (the program is saved as {saved})" if saved else ""
            raise CompileError(f"kcc cannot import tinygrad kernel {name}{where}: {e}") from None
        return k.text
