"""The x86-64 target: register info for the allocator, frame layout, machine code emission, the
ELF64 relocatable object, and the in-process loader that runs gidx workers on threads.

Frame (System V, rbp as frame pointer):

    [rbp + 16 + 8k]   stack-passed arguments
    [rbp + 8]         return address
    [rbp]             saved rbp
    [rbp - 8 ...]     saved callee-saved registers
    ... rsp aligned down to 64 ...
    [rsp + locals]    spill slots (the allocator's frame, offsets from its start; locals is
                      rounded up to 64 so that each slot is aligned to its size)
    [rsp + 0]         locals: the gated-store scratch slot, then REG buffers
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from itertools import product
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kcc.encode.x86 import Assembler, format_intel
from kcc.encode.x86 import Imm as XImm
from kcc.encode.x86 import Label as XLabel
from kcc.encode.x86 import Mem as XMem
from kcc.encode.x86 import Reg as XReg
from kcc.encode.x86_table import FORMS, KINDS
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.dtype import DType
from kcc.ir.mir import (BRANCH_KINDS, Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp, Role,
                        format_mir)
from kcc.isel.dce import eliminate_dead
from kcc.isel.licm import hoist_invariants
from kcc.isel.x86 import ConstPool, SelectError, imm_form
from kcc.isel.x86_base import PSEUDO_ROLES, writes_memory
from kcc.isel.x86 import select as x86_select
from kcc.isel.x86_ivec import VECTOR_OPS, vector_widths
from kcc.isel.x86_stream import streaming_stores
from kcc.isel.x86_regs import (CALLEE_SAVED, GPR_ORDER, KMASK, RSP, XMM, XMM_HI, c_type,
                                reg_class, vec_limits)
from kcc.passes.target import X86_AVX2, TargetDesc
from kcc.regalloc.linear_scan import allocate
from kcc.targets import x86_slots as slots
from kcc.targets.elf import SHF_ALLOC, SHF_EXECINSTR, Reloc, Symbol, write_relocatable
from kcc.targets.facts import NOTE_SECTION, elf_note, read_object_facts
from kcc.targets.manifest import KernelDesc, LaunchError, describe_kernel, worker_names
from kcc.targets.registry import Compiled, CompileError, DisasmError, Emit, TargetSpec
from kcc.targets.x86_disasm import disasm_bytes, disasm_object   # re-exported: kcc disasm

R_X86_64_PC32 = 2
# rsp alignment: 64 so that zmm spill slots and REG buffers (x86-64-v4) are aligned too
FRAME_ALIGN = 64
# The head of every innermost loop starts at a multiple of 32 bytes (NOP padding before it,
# run once per entry), so that a short loop body spans as few instruction-fetch blocks as it
# can. Measured on tinygrad's layernorm normalize loop (docs/performance.md, "Loop heads"):
# kcc's loop at a 32- or 64-byte aligned address ran 1-3% faster than the same bytes at an
# address that is only 16-byte aligned or not aligned. Functions start at a multiple of it.
LOOP_ALIGN = 32
FUNC_ALIGN = 16


class X86RegInfo:
    """What the allocator knows of x86-64: classes, callee-saved registers, copy/spill forms.
    `vbytes` is the widest vector the code uses (32 for ymm, 64 for zmm on x86-64-v4), and
    with 64 (AVX-512) the vector class has xmm16-31 too, which VEX-only forms cannot name."""

    def __init__(self, locals_bytes: int, vbytes: int = 32, high_first: bool = False):
        # high_first (x86-64-v4 only) hands out xmm16-31 before xmm0-15, so that every form
        # with an EVEX twin is encoded as EVEX: the tests run code that way to check the twins
        hi = list(XMM_HI) if vbytes == 64 else []
        vec = hi + list(XMM) if high_first else list(XMM) + hi
        self.classes = {"gpr": list(GPR_ORDER), "vec": vec}
        if vbytes == 64:
            self.classes["mask"] = list(KMASK)     # AVX-512 opmasks (k0 means "no mask")
        self._limits: dict[str, tuple[frozenset[PReg] | None, ...]] = {}
        self.callee_saved = set(CALLEE_SAVED)
        self.locals_bytes = locals_bytes
        self.v = "z" if vbytes == 64 else "y"
        self.vbytes = vbytes
        self._bytes: dict[tuple, int] = {}

    def spill_slot_size(self, cls: str) -> int:
        """The widest slot: 8 bytes for a GPR or an opmask, a whole ymm (or zmm) for a
        vector."""
        return 8 if cls in ("gpr", "mask") else self.vbytes

    def operand_regs(self, inst: Inst, k: int) -> frozenset[PReg] | None:
        """xmm0-15 for a vector operand of a VEX-only form when xmm16-31 are allocatable."""
        if self.vbytes != 64:
            return None
        lim = self._limits.get(inst.op)
        if lim is None:
            lim = self._limits[inst.op] = vec_limits(inst.op)
        return lim[k] if k < len(lim) else None

    def value_bytes(self, inst: Inst, k: int) -> int:
        """The bytes of operand k's register that carry a value (x86_slots.value_bytes,
        memoized by form, operand and operand type: the allocator asks for every operand)."""
        o = inst.operands[k]
        key = (inst.op, k, type(o), o.reg.cls if isinstance(o, RegOp) else None,
               inst.operands[-1] if inst.op.startswith("vinsertps") else None)
        n = self._bytes.get(key)
        if n is None:
            n = self._bytes[key] = slots.value_bytes(inst, k, self.vbytes)
        return n

    def slot_bytes(self, inst: Inst) -> int:
        """The bytes a spill, fill or folded instruction moves from or to its slot."""
        return slots.slot_bytes(inst)

    def fold_fill(self, inst: Inst, k: int, slot_offset: int, size: int) -> Inst | None:
        """inst reading operand k from its slot instead of a reload (x86_slots.fold_fill)."""
        return slots.fold_fill(inst, k, self.slot_mem(slot_offset), size)

    def slot_mem(self, slot_offset: int) -> Mem:
        """The memory operand of a frame slot: rsp-relative, past the locals."""
        return Mem(RSP, None, 1, self.locals_bytes + slot_offset)

    def is_copy(self, inst: Inst) -> bool:
        """A register-to-register copy of the selector's (the allocator may coalesce it)."""
        return inst.op in _COPY_FORMS and len(inst.operands) == 2 and all(
            isinstance(o, RegOp) for o in inst.operands)

    def rematerializable(self, inst: Inst) -> bool:
        """A constant the allocator may re-create at a use instead of spilling it: an
        immediate move, a zeroing, or a load from the read-only constant pool (none of them
        writes the flags)."""
        if inst.op in ("vzero", "mov_r32_imm32", "mov_r64_imm64"):
            return True
        return isinstance(inst.arg, dict) and "rip" in inst.arg and inst.op.startswith(
            ("vmovups_", "vmovaps_", "vmovdqu_", "vmovdqa_", "vmovss_x_m32", "vmovsd_x_m64",
             "vbroadcastss_", "vbroadcastsd_", "vpbroadcast"))

    def make_move(self, cls: str, dst: PReg, src: PReg) -> Inst:
        form = {"gpr": "mov_r64_rm64", "mask": "kmovq_k_km64"}.get(
            cls, f"vmovaps_{self.v}_{self.v}m")
        return Inst(form, [RegOp(dst, Role.DEF), RegOp(src, Role.USE)], kind=Kind.MOVE)

    def make_spill(self, cls: str, src: PReg, slot_offset: int, size: int) -> Inst:
        """A store of the value's own width (x86_slots.SPILL_FORMS)."""
        return Inst(slots.SPILL_FORMS[cls, size], [self.slot_mem(slot_offset),
                                                   RegOp(src, Role.USE)],
                    kind=Kind.SPILL, slot=slot_offset)

    def make_fill(self, cls: str, dst: PReg, slot_offset: int, size: int) -> Inst:
        """A load of the slot's width (x86_slots.FILL_FORMS)."""
        return Inst(slots.FILL_FORMS[cls, size], [RegOp(dst, Role.DEF),
                                                  self.slot_mem(slot_offset)],
                    kind=Kind.FILL, slot=slot_offset)


# -- from allocated MIR to bytes ----------------------------------------------------------------

def _gpr_name(p: str, size: int) -> str:
    """The name of 64-bit register p at a width of size bytes (rax → eax/ax/al, r9 → r9d)."""
    if size == 8:
        return p
    if p[1:].isdigit():                                   # r8 … r15
        return p + {4: "d", 2: "w", 1: "b"}[size]
    base = p[1:]                                          # ax, cx, si, di, sp, bp …
    if size == 4:
        return "e" + base
    if size == 2:
        return base
    return base[0] + "l" if base in ("ax", "cx", "dx", "bx") else base + "l"


_REGS: dict[tuple[str, str, int], XReg] = {}


def _reg(p: PReg, size: int) -> XReg:
    """The encoder's register for p at size bytes (memoized: one per register and width)."""
    key = (p.cls, p.name, size)             # (PReg's own hash is a Python-level call)
    r = _REGS.get(key)
    if r is None:
        r = _REGS[key] = _reg_named(p, size)
    return r


def _reg_named(p: PReg, size: int) -> XReg:
    if p.cls == "gpr":
        return XReg(_gpr_name(p.name, size))
    if p.cls == "mask":
        return XReg(p.name)
    n = p.name[3:]
    return XReg({16: "xmm", 32: "ymm", 64: "zmm"}[size] + n)


def _mem(m: Mem, size: int, arg: Any) -> XMem:
    label = arg.get("rip") if isinstance(arg, dict) else None
    if label is not None:
        return XMem(size, None, None, 1, m.disp, label)
    base = m.base.name if m.base is not None else None
    index = m.index.name if m.index is not None else None
    return XMem(size, base, index, m.scale, m.disp)


def encode_operands(inst: Inst) -> tuple[str, tuple]:
    """The encoder's view of an allocated instruction: form and sized operands."""
    if inst.op == "vzero":
        r = _reg(inst.operands[0].reg, 16)
        return "vxorps_x_x_xm", (r, r, r)
    row = FORMS[inst.op]
    out = []
    for spec, o in zip(row.operands, inst.operands):
        k = KINDS[spec.kind]
        if isinstance(o, RegOp):
            if spec.kind == "cl":
                out.append(XReg("cl"))
            else:
                out.append(_reg(o.reg, k.reg_size))
        elif isinstance(o, Mem):
            out.append(_mem(o, k.mem_size or 0, inst.arg))
        elif isinstance(o, Imm):
            out.append(XImm(int(o.value)))
        elif isinstance(o, Label):
            out.append(XLabel(o.name))
        else:
            raise AssertionError(f"operand {o!r} of {inst.op}")
    return inst.op, tuple(out)


@dataclass
class EncodedKernel:
    """One kernel's machine code and the RIP-relative fixups into the constant pool."""

    name: str
    code: bytes
    fixups: list[Any]
    frame: int
    saved: tuple[PReg, ...]
    items: list[tuple]
    align: int = FUNC_ALIGN     # the code's alignments hold where it starts at a multiple of this


def machine_code(fn: MFunction, locals_bytes: int) -> tuple[list[tuple], tuple[PReg, ...], int]:
    """The final instruction list of an allocated function: prologue, body, epilogue.

    Items are ("label", name), ("align", bytes) or (form, operands…) in encoder terms."""
    items: list[tuple] = []
    loops = fn.loops()
    inner = {b for b, e in loops if not any(b < b2 < e for b2, _ in loops)}
    saved = tuple(p for p in GPR_ORDER if p in fn.callee_saved_used)
    frame = -(-(locals_bytes + fn.frame_size) // FRAME_ALIGN) * FRAME_ALIGN
    items.append(("push_r64", XReg("rbp")))
    items.append(("mov_r64_rm64", XReg("rbp"), XReg("rsp")))
    for p in saved:
        items.append(("push_r64", XReg(p.name)))
    items.append((imm_form("sub", "64", frame), XReg("rsp"), XImm(frame)))
    # 64-byte alignment for vector spill slots and REG buffers
    items.append(("and_rm64_imm8", XReg("rsp"), XImm(-FRAME_ALIGN)))
    OP, RET, LABELS = Kind.OP, Kind.RET, (Kind.LABEL, Kind.LOOP_BEGIN)   # (bound once)
    for k, inst in enumerate(fn.insts):
        kind = inst.kind
        if kind is OP and inst.op not in _COPY_FORMS:
            items.append(_flat(encode_operands(inst)))      # (the common case first)
        elif kind in LABELS:
            if k in inner:
                items.append(("align", LOOP_ALIGN))
            items.append(("label", inst.label()))
        elif kind is RET:
            items.append(("lea_r64_m", XReg("rsp"), XMem(0, "rbp", None, 1, -8 * len(saved))))
            for p in reversed(saved):
                items.append(("pop_r64", XReg(p.name)))
            items.append(("pop_r64", XReg("rbp")))
            items.append(("vzeroupper",))      # no AVX→SSE transition stalls in the caller
            items.append(("ret",))
        elif _is_self_move(inst):
            continue
        else:
            items.append(_flat(encode_operands(inst)))
    return items, saved, frame


def assemble(fn: MFunction, locals_bytes: int) -> EncodedKernel:
    """Prologue, the allocated body, epilogue → bytes (branches relaxed by the assembler)."""
    items, saved, frame = machine_code(fn, locals_bytes)
    return assemble_items(fn.name, items, frame, saved)


def assemble_items(name: str, items: list[tuple], frame: int, saved: list) -> EncodedKernel:
    """Machine-code items (labels, alignments, instructions) → the kernel's bytes."""
    asm = Assembler()
    for it in items:
        if it[0] == "label":
            asm.label(it[1])
        elif it[0] == "align":
            asm.align(it[1])
        else:
            asm.emit(*it)
    code, fixups = asm.finish()
    return EncodedKernel(name, code, fixups, frame, saved, items,
                         max(FUNC_ALIGN, asm.max_align))


def _flat(x: tuple[str, tuple]) -> tuple:
    return (x[0], *x[1])


# Register-to-register copies that change nothing when source and destination coincide.
# (Not mov r32, r32: that one zero-extends, and the selector uses it to.)
_COPY_FORMS = frozenset({"mov_r64_rm64", "vmovaps_x_xm", "vmovaps_y_ym", "vmovaps_z_zm"})


def _is_self_move(inst: Inst) -> bool:
    """A copy of a register onto itself (after allocation): nothing to emit."""
    if inst.op not in _COPY_FORMS or len(inst.operands) != 2:
        return False
    a, b = inst.operands
    return isinstance(a, RegOp) and isinstance(b, RegOp) and a.reg == b.reg


# -- the object file ----------------------------------------------------------------------------

def rodata(pool: ConstPool) -> tuple[bytes, dict[str, int], int]:
    """Lay out the constant pool: each constant aligned to its size (max 32)."""
    out = bytearray()
    offsets: dict[str, int] = {}
    align_max = 16
    for data, label in pool.items.items():
        align = 32 if len(data) >= 32 else (16 if len(data) >= 16 else len(data))
        align_max = max(align_max, align)
        out += bytes(-len(out) % align)
        offsets[label] = len(out)
        out += data
    return bytes(out), offsets, align_max


def write_object(kernels: list[EncodedKernel], pool: ConstPool,
                 descs: list[KernelDesc] | None = None) -> bytes:
    """An ELF64 relocatable object: every kernel a global function in .text (first, the first
    kernel at .text+0), constants in .rodata reached through R_X86_64_PC32 relocations, and
    the kernels' launch facts (descs) in the non-allocated note section .note.kcc
    (kcc.targets.facts)."""
    text = bytearray()
    symbols: list[Symbol] = []
    relocs: list[Reloc] = []
    data, offsets, align = rodata(pool)
    for k in kernels:
        text += b"\xcc" * (-len(text) % k.align)    # int3 padding between functions
        base = len(text)
        text += k.code
        symbols.append(Symbol(k.name, ".text", base, len(k.code), "func", "global"))
        for f in k.fixups:
            if f.kind != "pc32" or f.target not in offsets:
                raise AssertionError(f"unresolved fixup {f}")
            relocs.append(Reloc(".text", base + f.offset, R_X86_64_PC32, ".rodata",
                                offsets[f.target] + f.addend))
    text_align = max([FUNC_ALIGN] + [k.align for k in kernels])
    sections = {".text": (bytes(text), text_align, SHF_ALLOC | SHF_EXECINSTR)}
    if data:
        sections[".rodata"] = (data, align, SHF_ALLOC)
    if descs is not None:
        sections[NOTE_SECTION] = (elf_note(descs), 4, 0)
    return write_relocatable(sections, symbols, relocs)


def assembly_text(kernels: list[EncodedKernel], pool: ConstPool) -> str:
    """GNU assembler source (Intel syntax) for the kernels and their constants: `as` or
    `llvm-mc` assemble it to the same instructions kcc encodes."""
    lines = ["\t.intel_syntax noprefix", "\t.text"]
    for k in kernels:
        lines += ["", f"\t.p2align {k.align.bit_length() - 1}", f"\t.globl {k.name}",
                  f"\t.type {k.name}, @function", f"{k.name}:"]
        for it in k.items:
            if it[0] == "label":
                lines.append(f"{it[1]}:")
            elif it[0] == "align":
                lines.append(f"\t.p2align {it[1].bit_length() - 1}")
            else:
                lines.append("\t" + format_intel(it[0], *it[1:]))
        lines.append(f"\t.size {k.name}, .-{k.name}")
    data, offsets, align = rodata(pool)
    if pool.items:
        lines += ["", "\t.section .rodata", f"\t.p2align {align.bit_length() - 1}"]
        pos = 0
        for blob, label in pool.items.items():
            if offsets[label] > pos:
                lines.append(f"\t.zero {offsets[label] - pos}")
            lines.append(f"{label}:")
            lines.append("\t.byte " + ", ".join(f"0x{b:02x}" for b in blob))
            pos = offsets[label] + len(blob)
    lines += ["", '\t.section .note.GNU-stack,"",@progbits', ""]
    return "\n".join(lines)


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

# The memory streams an inner loop may read (TargetDesc.load_streams)
X86_LOAD_STREAMS = 8


def x86_desc(arch: str) -> TargetDesc:
    """The pass-facing description: the vector widths this selector implements (float32 and
    float64 in xmm/ymm, and zmm on x86-64-v4; integers scalar) and what is decomposed."""
    if arch == "x86-64-v4":
        widths = {dtypes.float32: (16, 8, 4), dtypes.float64: (8, 4, 2)}
        note = "AVX-512F zmm + AVX2/FMA/F16C"
    else:
        widths = {dtypes.float32: (8, 4), dtypes.float64: (4, 2)}
        note = "AVX2 + FMA + F16C"
    # integer vectors (xmm/ymm) for the ops kcc.isel.x86_ivec selects; others split
    ints = {dt: vector_widths(dt) for dt in VECTOR_OPS}
    # bool vectors are lane masks (kcc.isel.x86_vec.bool_vec): AND/OR/XOR of them, no memory
    bools = {dtypes.bool: (16, 8, 4, 2) if arch == "x86-64-v4" else (8, 4, 2)}
    return replace(X86_AVX2, alu_widths=MappingProxyType({**widths, **ints, **bools}),
                   mem_widths=MappingProxyType({**widths, **ints}),
                   vector_ops=MappingProxyType({**VECTOR_OPS, dtypes.bool: _BOOL_VECTOR_OPS}),
                   vector_cast=_vector_cast, notes=f"{arch}: {note}",
                   # the registers the allocator gives vectors (xmm16-31 on v4 only)
                   vector_regs=len(XMM) + (len(XMM_HI) if arch == "x86-64-v4" else 0),
                   # measured (docs/performance.md, unroll-and-jam): row reductions jammed to
                   # 16 streams ran slower than with 8 although they ran fewer instructions
                   load_streams=X86_LOAD_STREAMS,
                   masked_load=_masked_load if arch == "x86-64-v4" else None)


def _masked_load(dt: DType, n: int) -> bool:
    """x86-64-v4: a gated load of a float scalar or vector or an integer vector is one
    opmask-masked load (kcc/isel/x86_kmask.py kload), which reads nothing where the gate is
    false (SDM Vol. 1 §15.6.1): no safe index needed."""
    return reg_class(dt) == "vec" or (n > 1 and dt in VECTOR_OPS)


_BOOL_VECTOR_OPS = frozenset({Ops.AND, Ops.OR, Ops.XOR})


def _vector_cast(op: Ops, src: DType, dst: DType, n: int) -> bool:
    """int32 ↔ float32 in an xmm/ymm: CVTDQ2PS, CVTTPS2DQ (+ saturation), or a BITCAST that
    moves nothing (x86_vec.vcast)."""
    return n in (4, 8) and {src, dst} == {dtypes.int32, dtypes.float32}


ARCHES = ("x86-64-v3", "x86-64-v4", "native")
V3_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe")
V4_FLAGS = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")


def cpu_flags() -> set[str]:
    """The CPU feature flags of this machine (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def resolve_arch(arch: str) -> str:
    """native → x86-64-v4 when this CPU has AVX-512 (F/BW/CD/DQ/VL), else x86-64-v3."""
    if arch != "native":
        return arch
    flags = cpu_flags()
    if all(f in flags for f in V4_FLAGS):
        return "x86-64-v4"
    if all(f in flags for f in V3_FLAGS):
        return "x86-64-v3"
    raise SelectError("this CPU lacks x86-64-v3 (AVX2, FMA, F16C, BMI2), the least kcc targets")


@dataclass
class Selected:
    """A kernel after selection (or allocation): its machine function, the bytes of frame
    locals below the spill area, and its description for the manifest."""

    fn: MFunction
    locals_bytes: int
    desc: KernelDesc
    # with non-temporal stores in fn: the pointers the entry tests to choose between fn and
    # its ordinary version (kcc/isel/x86_stream.py, kcc/targets/x86_versions.py)
    checks: tuple[tuple[tuple, int], ...] = ()


def _reads_flags(inst: Inst) -> bool:
    """Branches, CMOVcc, SETcc, ADC/SBB read RFLAGS (Intel SDM Vol. 1, 3.4.3)."""
    return inst.kind in BRANCH_KINDS or inst.op.startswith(("cmov", "set", "adc", "sbb", "j"))


def _flags_of(inst: Inst) -> str:
    """How a form uses RFLAGS, from its row: "r", "w" or "" (a pseudo touches none)."""
    row = FORMS.get(inst.op)
    return row.flags if row is not None else ""


def _movable(inst: Inst) -> bool:
    """May loop-invariant code motion move inst out of a loop (kcc/isel/licm.py)? A form with
    no implicit registers whose only memory operand, if any, is an address (LEA) or a
    read-only .rodata constant: never a buffer access (a gate may protect it) or a store."""
    if inst.op in PSEUDO_ROLES:
        return True
    row = FORMS.get(inst.op)
    if row is None or row.implicit_uses or row.implicit_defs:
        return False
    for o in inst.operands:
        if isinstance(o, Mem) and row.mnemonic != "lea" and not (
                o.base is None and o.index is None and isinstance(inst.arg, dict)
                and "rip" in inst.arg):
            return False
    return True


class X86Target:
    """x86-64: select with kcc.isel.x86, allocate with the linear-scan allocator, assemble."""

    name = "x86"

    def __init__(self, arch: str = "x86-64-v3", fp_contract: str = "off",
                 streaming_stores: str = "auto"):
        if arch not in ARCHES:
            raise ValueError(f"unknown x86 arch {arch!r} (choose from {', '.join(ARCHES)})")
        if fp_contract not in ("off", "fast"):
            raise ValueError(f"fp_contract is 'off' or 'fast', not {fp_contract!r}")
        self.streaming_stores = streaming_stores     # checked by streaming_stores()
        self.arch = resolve_arch(arch)
        self.desc = replace(x86_desc(self.arch), fp_contract=fp_contract == "fast")
        self.vbytes = 64 if self.arch == "x86-64-v4" else 32
        self.check_alloc = os.environ.get("KCC_CHECK_ALLOC", "") not in ("", "0")
        # tests set this to allocate xmm16-31 first on x86-64-v4 (see X86RegInfo)
        self.vec_high_first = os.environ.get("KCC_X86_HIGH_VEC_FIRST", "") not in ("", "0")
        self.pool = ConstPool()

    def select(self, lin: list[UOp], sink: UOp) -> Selected:
        kd = describe_kernel(sink)
        stream = streaming_stores(lin, self.streaming_stores, self.vbytes)
        fn, locals_bytes, _, checks = x86_select(lin, kd.name, self.pool, kd.specials,
                                                 self.arch == "x86-64-v4", stream)
        eliminate_dead(fn, writes_memory, _reads_flags)
        hoist_invariants(fn, _movable, _flags_of)
        return Selected(fn, locals_bytes, kd, checks=tuple(checks))

    def allocate(self, s: Selected) -> Selected:
        # the spill slots start 64-byte aligned (rsp is): each slot is then aligned to its
        # size in memory too, so whole-vector spills and fills may use VMOVAPS
        base = -(-s.locals_bytes // FRAME_ALIGN) * FRAME_ALIGN
        info = X86RegInfo(base, self.vbytes, self.vec_high_first)
        fn = allocate(s.fn, info)
        if self.check_alloc:
            # the independent checker re-executes the allocation symbolically (tests turn
            # it on with KCC_CHECK_ALLOC=1; it costs about 1 s per 10k instructions)
            from kcc.regalloc.checker import check_allocation
            check_allocation(s.fn, fn, info)
        return Selected(fn, base, s.desc, s.checks)

    def encode(self, s: Selected) -> tuple[EncodedKernel, KernelDesc]:
        if s.checks:
            from kcc.targets.x86_versions import assemble_versions
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
        return disasm_bytes(k.code, k.name)


def compile_x86(sinks: list[UOp], arch: str = "x86-64-v3", emit: str = "obj",
                dump_after: str | None = None, out: Any = None, fp_contract: str = "off",
                streaming_stores: str = "auto") -> tuple[bytes, list[KernelDesc]]:
    """Compile kernels into one ELF64 relocatable object (emit="obj") or GNU assembler text
    (emit="asm"); returns it and the kernels' descriptions for the manifest. fp_contract
    "fast" fuses float multiply-adds (kcc/passes/contract.py); "off" (default) is exact.
    streaming_stores: "auto" (default), "never" or "always" non-temporal stores
    (kcc/isel/x86_stream.py)."""
    from kcc.targets.pipeline import compile_kernels
    if emit not in ("obj", "asm"):
        raise SelectError(f"x86 emits 'obj' or 'asm', not {emit!r}")
    target = X86Target(arch, fp_contract, streaming_stores)
    encoded, descs = compile_kernels(sinks, target, SelectError, (SelectError,), dump_after,
                                     out)
    if emit == "asm":
        return assembly_text(encoded, target.pool).encode(), descs
    return write_object(encoded, target.pool, descs), descs


# -- running ------------------------------------------------------------------------------------

def _ctype(dt_name: str) -> Any:
    import ctypes
    return {"float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_bool,
            "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16,
            "uint16": ctypes.c_uint16, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
            "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "float16": ctypes.c_uint16,
            "bfloat16": ctypes.c_uint16}[dt_name]


def launch(obj: Any, desc: Any, args: list[Any], threads: int | None = None) -> None:
    """Call a loaded kernel once per gidx worker (in parallel on a thread pool); args are
    already checked and normalized by manifest.check_launch."""
    # ctypes and the thread pool only when running (compiling needs neither: start-up)
    import ctypes
    from concurrent.futures import ThreadPoolExecutor
    arch = desc.target.get("x86", {}).get("arch")
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        raise LaunchError(f"kernel {desc.name} was compiled for x86-64-v4 (AVX-512) and this "
                          "CPU lacks it; recompile with --arch x86-64-v3")
    argtypes = [ctypes.c_void_p if a.kind == "buffer" else _ctype(a.dtype) for a in desc.args]
    workers = worker_names(desc)
    argtypes += [ctypes.c_int] * len(workers)
    fn = obj.function(desc.name, None, argtypes)
    base = []
    for a, v in zip(desc.args, args):
        if a.kind == "buffer":
            base.append(v.ctypes.data)
        elif a.dtype == "float16":            # passed as its bit pattern (a uint16_t in C)
            import numpy as np
            base.append(int(np.float16(v).view(np.uint16)))
        else:
            base.append(v.item())
    glob, _ = desc.launch_dims(args)      # symbolic sizes: evaluated for these arguments
    dims = [range(glob[int(w[-1])]) for w in workers]
    ids = list(product(*dims))
    if len(ids) == 1:
        fn(*base, *ids[0])
        return
    # ctypes releases the GIL during the call, so workers run in parallel.
    with ThreadPoolExecutor(max_workers=threads) as ex:
        for f in [ex.submit(fn, *base, *i) for i in ids]:
            f.result()




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
                                "streaming_stores": ("never", "always")})

    def compile(self, sinks: list[UOp], arch: str, emit: str, dump_after: str | None = None,
                out: Any = None, fp_contract: str = "off", streaming_stores: str = "auto"
                ) -> Compiled:
        self.check_arch(arch)
        self.emit(emit)
        try:
            data, descs = compile_x86(sinks, arch, emit, dump_after, out, fp_contract,
                                      streaming_stores)
        except SelectError as e:
            raise CompileError(str(e)) from None
        if descs:       # "native" is recorded as the arch it resolved to
            arch = descs[0].target["x86"]["arch"]
        return Compiled(data, descs, arch, emit)

    def launch(self, data: bytes, desc: KernelDesc, values: list[Any]) -> None:
        from kcc.targets.objload import LoadedObject, ObjectLoadError
        self.check_facts(data, desc)
        try:
            obj = LoadedObject(data)
        except ObjectLoadError as e:
            raise LaunchError(str(e)) from None
        try:
            launch(obj, desc, values)
        except LookupError as e:      # the manifest names a symbol the object lacks
            raise LaunchError(str(e).strip("'\"")) from None
        finally:
            obj.close()

    def describe(self, data: bytes) -> list[dict[str, Any]] | None:
        """The launch facts of the object's .note.kcc (FactsError without one)."""
        return read_object_facts(data, "ELF object", "object")

    def claims(self, data: bytes, path: str) -> bool:
        return data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == 62

    def disasm(self, data: bytes, att: bool = False) -> str:
        try:
            return disasm_object(data, att)
        except ValueError as e:
            raise DisasmError(str(e)) from None

    def header(self, descs: list[KernelDesc], guard: str) -> str | None:
        return c_header(descs, guard)


TARGET = X86Spec()
