"""The x86-64 target: selection with its machine-IR cleanups, allocation and encoding of each
kernel (the phases the pipeline drives), the C prototypes of an object's kernels, the
in-process launch that runs gidx workers on threads, and the registry entry.

The arches and their pass-facing description are in x86_arch, the allocator's register info
in x86_reginfo, the frame and machine code in x86_code, the object file and assembly text in
x86_object.
"""

from __future__ import annotations

import os
import sys

from kcc.encode.x86.table import FORMS
from kcc.ir import UOp, dtypes
from kcc.ir.mir import Inst, Mem, MFunction, format_mir
from kcc.isel.dce import eliminate_dead, eliminate_dead_chains, eliminate_dead_defs
from kcc.isel.flags import drop_repeated_compares
from kcc.isel.licm import hoist_invariants
from kcc.isel.x86.base import PSEUDO_ROLES, writes_memory
from kcc.isel.x86.flagreuse import drop_zero_tests
from kcc.isel.x86.loopexit import exit_on_sums
from kcc.isel.x86.regs import c_type
from kcc.isel.x86.select import ConstPool, SelectError
from kcc.isel.x86.select import select as x86_select
from kcc.isel.x86.prefetch import prefetched_loads
from kcc.isel.x86.stream import streaming_stores
from kcc.record import record, replace
from kcc.regalloc.linear_scan import allocate
from kcc.targets.manifest import KernelDesc, LaunchError, describe_kernel, worker_names
from kcc.targets.registry import Compiled, CompileError, DisasmError, Emit, TargetSpec
from kcc.targets.x86.arch import ARCHES, resolve_arch, x86_desc
from kcc.targets.x86.arch import V4_FLAGS, cpu_flags  # noqa: F401 (importable from here; the
#                                                          launch, in workers.py, uses them)
from kcc.targets.x86.code import FRAME_ALIGN, EncodedKernel, assemble
from kcc.targets.x86.csyms import refusal as c_name_refusal
from kcc.targets.x86.foldconst import fold_constants
from kcc.targets.x86.object import assembly_text, write_object
from kcc.targets.x86.reginfo import X86RegInfo

MappingProxyType = type(type.__dict__)  # types.MappingProxyType (no types module: start-up)
TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def prototype(desc: Any) -> str:
    """The C prototype of a compiled kernel (buffers as pointers, scalars by value, then one
    int per gidx worker index in name order)."""
    params = []
    for a in desc.args:
        dt = dtypes.by_name(a.dtype)
        name = a.name or f"arg{a.slot}"
        if a.kind == "buffer":
            const = "" if "w" in a.access else "const "
            params.append(f"{const}{c_type(dt)} *{name}")
        else:
            params.append(f"{c_type(dt)} {name}")
    params += [f"int {s}" for s in worker_names(desc)]
    return f"void {desc.name}({', '.join(params) or 'void'});"


# -- the target the pipeline drives -------------------------------------------------------------

# the selector's zeroing of a promoted REG buffer cell (kcc/isel/x86/select.py sel_BUFFER)
_ZEROING = frozenset({"vzero", "mov_r32_imm32"})


@record
class Selected:
    """A kernel after selection (or allocation): its machine function, the bytes of frame
    locals below the spill area, and its description for the manifest."""

    fn: MFunction
    locals_bytes: int
    desc: KernelDesc
    # with non-temporal stores in fn: the pointers the entry tests to choose between fn and
    # its ordinary version (kcc/isel/x86/stream.py, kcc/targets/x86/versions.py)
    checks: tuple[tuple[tuple, int], ...] = ()


def _flags_of(inst: Inst) -> str:
    """How a form uses RFLAGS, from its row: "r", "w", "rw" or "" (a pseudo touches none):
    what DCE and LICM both ask (kcc/isel/flags.py)."""
    if inst.op == "sbb_self":
        return "rw"                       # (SBB reads CF and writes the flags)
    row = FORMS.get(inst.op)
    return row.flags if row is not None else ""


def _movable(inst: Inst) -> bool:
    """May loop-invariant code motion move inst out of a loop (kcc/isel/licm.py)? A form with
    no implicit registers whose only memory operand, if any, is an address (LEA) or a
    read-only .rodata constant: never a buffer access (a gate may protect it) or a store."""
    if inst.op in PSEUDO_ROLES:
        return inst.op != "sbb_self"      # (it reads the flags: moved with its writer only)
    row = FORMS.get(inst.op)
    if row is None or row.implicit_uses or row.implicit_defs:
        return False
    for o in inst.operands:
        if isinstance(o, Mem) and row.mnemonic != "lea" and not (
                o.base is None and o.index is None and isinstance(inst.arg, dict)
                and "rip" in inst.arg):
            return False
    return True


_WHOLE_LOADS = frozenset({"vmovups", "vmovaps", "vmovupd", "vmovapd", "vmovdqu", "vmovdqa",
                          "vmovdqu8", "vmovdqu16", "vmovdqu32", "vmovdqu64",
                          # a scalar float constant (a clamp's bounds, a compare's operand):
                          # reloaded per lane and per iteration otherwise (any_all r_64_4,
                          # cast_f2i8 E_64_4)
                          "vmovss", "vmovsd"})


def _alone(inst: Inst) -> bool:
    """May LICM move this constant out of a loop by itself (kcc/isel/licm.py `alone`)? An
    unmasked whole-vector or scalar-float load from .rodata: kept in a register, the loop
    reads it there instead of issuing a load each iteration; or a 64-bit immediate that needs
    MOVABS: u64_div's magic multiplier was re-materialized every iteration where clang keeps
    it in a register (under register pressure it is spilled once, its reads fold the slot)."""
    if inst.op == "movabs_r64_imm64" or inst.op == "lea_r64_m" and isinstance(inst.arg, dict):
        return True                   # (a LEA of .rodata: a byte → float table, x86_cast)
    row = FORMS.get(inst.op)
    return (row is not None and row.mnemonic in _WHOLE_LOADS and isinstance(inst.arg, dict)
            and "rip" in inst.arg and len(inst.operands) == 2
            and any(isinstance(o, Mem) for o in inst.operands))


# X86Target's descs: x86_desc's with the target's fp_contract and vector width, by (arch,
# fp_contract, vector_width)
_TARGET_DESCS: dict[tuple[str, bool, str], Any] = {}


class X86Target:
    """x86-64: select with kcc.isel.x86, allocate with the linear-scan allocator, assemble."""

    name = "x86"

    def __init__(self, arch: str = "x86-64-v3", fp_contract: str = "off",
                 streaming_stores: str = "auto", prefetch: str = "auto",
                 vector_width: str = "auto"):
        if arch not in ARCHES:
            raise ValueError(f"unknown x86 arch {arch!r} (choose from {', '.join(ARCHES)})")
        if fp_contract not in ("off", "fast"):
            raise ValueError(f"fp_contract is 'off' or 'fast', not {fp_contract!r}")
        self.streaming_stores = streaming_stores     # checked by streaming_stores()
        self.prefetch = prefetch                     # checked by prefetched_loads()
        self.arch = resolve_arch(arch)
        if vector_width not in ("auto", "512"):
            raise ValueError(f"vector_width is 'auto' or '512', not {vector_width!r}")
        key = (self.arch, fp_contract == "fast", vector_width)
        desc = _TARGET_DESCS.get(key)
        if desc is None:        # (a replace is ~15 us: built once a process, as x86_desc)
            desc = replace(x86_desc(self.arch), fp_contract=key[1])
            if vector_width == "512":       # zmm for every kernel (no TargetDesc.narrow)
                desc = replace(desc, narrow=None)
            _TARGET_DESCS[key] = desc
        self.desc = desc
        self.vbytes = 64 if self.arch == "x86-64-v4" else 32
        self.check_alloc = os.environ.get("KCC_CHECK_ALLOC", "") not in ("", "0")
        # tests set this to allocate xmm16-31 first on x86-64-v4 (see X86RegInfo)
        self.vec_high_first = os.environ.get("KCC_X86_HIGH_VEC_FIRST", "") not in ("", "0")
        self.pool = ConstPool()

    def select(self, lin: list[UOp], sink: UOp) -> Selected:
        kd = describe_kernel(sink)
        stream = streaming_stores(lin, self.streaming_stores, self.vbytes)
        ahead = prefetched_loads(lin, self.prefetch)
        fn, locals_bytes, _, checks = x86_select(lin, kd.name, self.pool, kd.specials,
                                                 self.arch == "x86-64-v4", stream, ahead)
        # a compare repeating the one its readers' flags already come from (a gate's mask
        # and its safe index CMP the same operands)
        drop_repeated_compares(fn, _flags_of)
        drop_zero_tests(fn, _flags_of)        # `cmp x, 0` after the SUB that wrote x
        known: dict = {}                      # each instruction's uses and defs, asked once
        # (CMP/TEST only set RFLAGS: one that no CMOVcc/SETcc/Jcc reads goes too)
        eliminate_dead(fn, writes_memory, _flags_of, known, flag_only=True)
        # read-modify-write chains nobody reads (a dead lane of an opmask: KMOVD, SHR, AND)
        if eliminate_dead_chains(fn, writes_memory, _flags_of, known):
            known = {}
            eliminate_dead(fn, writes_memory, _flags_of, known, flag_only=True)
        # the zeroing of promoted REG cells that every read follows a store of
        eliminate_dead_defs(fn, writes_memory, _flags_of, _ZEROING, known)
        if exit_on_sums(fn):                  # a loop ending on a sum's counter, not its own
            known = {}
        hoist_invariants(fn, _movable, _flags_of, known, _alone)
        return Selected(fn, locals_bytes, kd, checks=tuple(checks))

    def allocate(self, s: Selected) -> Selected:
        # the spill slots start 64-byte aligned (rsp is): each slot is then aligned to its
        # size in memory too, so whole-vector spills and fills may use VMOVAPS
        base = -(-s.locals_bytes // FRAME_ALIGN) * FRAME_ALIGN
        constants = {label: data for data, label in self.pool.items.items()}
        info = X86RegInfo(base, self.vbytes, self.vec_high_first, constants)
        fn = allocate(s.fn, info)
        # rematerialized .rodata reloads read in place by their one reader
        fold_constants(fn, constants)
        if self.check_alloc:
            # the independent checker re-executes the allocation symbolically, the folded
            # constants included (tests turn it on with KCC_CHECK_ALLOC=1; it costs about
            # 1 s per 10k instructions)
            from kcc.regalloc.checker import check_allocation
            check_allocation(s.fn, fn, info)
        return Selected(fn, base, s.desc, s.checks)

    def encode(self, s: Selected) -> tuple[EncodedKernel, KernelDesc]:
        if s.checks:
            from kcc.targets.x86.versions import assemble_versions
            k = assemble_versions(s.fn, s.locals_bytes, list(s.checks))
        else:
            k = assemble(s.fn, s.locals_bytes)
        s.desc.target = {"x86": {"arch": self.arch, "workers": [
            s.desc.global_size[int(w[-1])] for w in worker_names(s.desc)],
            "worker_args": worker_names(s.desc),
            "frame_bytes": k.frame}}
        return k, s.desc

    def listing(self, stage: str, state: Any) -> str:
        if stage in ("select", "allocate"):
            return format_mir(state.fn)
        k, _ = state
        from kcc.targets.x86.disasm import disasm_bytes
        return disasm_bytes(k.code, k.name)


def compile_x86(sinks: list[UOp], arch: str = "x86-64-v3", emit: str = "obj",
                dump_after: str | None = None, out: Any = None, fp_contract: str = "off",
                streaming_stores: str = "auto", prefetch: str = "auto",
                vector_width: str = "auto") -> tuple[bytes, list[KernelDesc]]:
    """Compile kernels into one ELF64 relocatable object (emit="obj") or GNU assembler text
    (emit="asm"); returns it and the kernels' descriptions for the manifest. fp_contract
    "fast" fuses float multiply-adds (kcc/passes/contract.py); "off" (default) is exact.
    streaming_stores: "auto" (default), "never" or "always" non-temporal stores
    (kcc/isel/x86/stream.py). prefetch: "auto" (default), "never" or "always" software
    prefetches ahead of a row reduction's streams (kcc/isel/x86/prefetch.py). vector_width:
    "auto" (default: x86-64-v4 compiles a kernel of little work with ymm at most,
    kcc/targets/x86/arch.py `_narrow_v4`) or "512" (zmm wherever legal)."""
    from kcc.targets.pipeline import compile_kernels
    if emit not in ("obj", "asm"):
        raise SelectError(f"x86 emits 'obj' or 'asm', not {emit!r}")
    for sink in sinks:      # its symbol must not take over a C program's function
        why = c_name_refusal(sink.arg.name)
        if why:
            raise CompileError(why, kernel=sink.arg.name)
    target = X86Target(arch, fp_contract, streaming_stores, prefetch, vector_width)
    encoded, descs = compile_kernels(sinks, target, (SelectError,), dump_after, out)
    if emit == "asm":
        return assembly_text(encoded, target.pool).encode(), descs
    return write_object(encoded, target.pool, descs), descs


# -- running: `launch` is kcc.targets.x86.workers.launch (a compile never calls it) -----------

def c_header(descs: list[KernelDesc], guard: str = "KCC_KERNELS_H") -> str:
    """A C header declaring every kernel of an object (`kcc compile --header`), its include
    guard the macro guard."""
    lines = ["/* Generated by kcc: prototypes of the kernels in the object. */",
             f"#ifndef {guard}", f"#define {guard}", "#include <stdint.h>", "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    lines += [prototype(d) for d in descs]
    lines += ["", "#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


# -- the registry entry (kcc.targets.registry) --------------------------------------------------

class X86Spec(TargetSpec):
    """x86-64: ELF64 relocatable objects (or GNU assembler text), run in process."""

    name = "x86"
    summary = "x86-64 ELF64 relocatable .o (System V ABI), run in process"
    arches = ARCHES
    default_arch = "x86-64-v3"
    emits = (Emit("obj", ".o", True), Emit("asm", ".s", False))
    lists = "an x86-64 ELF object"
    options = MappingProxyType({"fp_contract": ("fast",),
                                "streaming_stores": ("never", "always"),
                                "prefetch": ("never", "always"),
                                "vector_width": ("512",)})

    def compile(self, sinks: list[UOp], arch: str, emit: str, dump_after: str | None = None,
                out: Any = None, fp_contract: str = "off", streaming_stores: str = "auto",
                prefetch: str = "auto", vector_width: str = "auto") -> Compiled:
        self.check_arch(arch)
        self.emit(emit)
        try:
            data, descs = compile_x86(sinks, arch, emit, dump_after, out, fp_contract,
                                      streaming_stores, prefetch, vector_width)
        except SelectError as e:
            raise CompileError(str(e)) from None
        if descs:       # "native" is recorded as the arch it resolved to
            arch = descs[0].target["x86"]["arch"]
        return Compiled(data, descs, arch, emit)

    def launch(self, data: bytes, desc: KernelDesc, values: list[Any]) -> None:
        from kcc.targets.x86.objload import LoadedObject, ObjectLoadError
        self.check_facts(data, desc)
        try:
            obj = LoadedObject(data)
        except ObjectLoadError as e:
            raise LaunchError(str(e)) from None
        try:
            # through the module's attribute: `launch` is workers.launch (__getattr__ below)
            # unless a test stands in for it
            sys.modules[__name__].launch(obj, desc, values)
        except LookupError as e:      # the manifest names a symbol the object lacks
            raise LaunchError(str(e).strip("'\"")) from None
        finally:
            obj.close()

    def describe(self, data: bytes) -> list[dict[str, Any]] | None:
        """The launch facts of the object's .note.kcc (FactsError without one)."""
        from kcc.targets.facts_read import read_object_facts   # (running: not a compile's path)
        return read_object_facts(data, "ELF object", "object")

    def claims(self, data: bytes, path: str) -> bool:
        return data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == 62

    def disasm(self, data: bytes, att: bool = False) -> str:
        from kcc.targets.x86.disasm import disasm_object
        try:
            return disasm_object(data, att)
        except ValueError as e:
            raise DisasmError(str(e)) from None

    def header(self, descs: list[KernelDesc], guard: str) -> str | None:
        return c_header(descs, guard)


TARGET = X86Spec()


def __getattr__(name: str) -> Any:
    """disasm_bytes and disasm_object, re-exported from kcc.targets.x86.disasm, and launch
    from kcc.targets.x86.workers, which a compile does not import (tests/cli/test_startup.py)
    or call (its code objects cost the process page faults)."""
    if name in ("disasm_bytes", "disasm_object"):
        from kcc.targets.x86 import disasm
        return getattr(disasm, name)
    if name == "launch":
        from kcc.targets.x86.workers import launch
        return launch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
