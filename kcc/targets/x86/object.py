"""The x86 outputs of assembled kernels: the ELF64 relocatable object (with the constant pool
in .rodata and the launch facts in .note.kcc) and the same kernels as GNU assembler text."""

from __future__ import annotations

from kcc.encode.x86.encoder import format_intel
from kcc.isel.x86.base import ConstPool
from kcc.targets.elf import SHF_ALLOC, SHF_EXECINSTR, Reloc, Symbol, write_relocatable
from kcc.targets.facts import NOTE_SECTION, elf_note
from kcc.targets.manifest import KernelDesc
from kcc.targets.x86.code import FUNC_ALIGN, EncodedKernel

R_X86_64_PC32 = 2


def rodata(pool: ConstPool) -> tuple[bytes, dict[str, int], int]:
    """Lay out the constant pool: each constant aligned to its size (max 64, a zmm's: the
    selector reads whole-vector constants with VMOVAPS, which faults (#GP) on a 64-byte
    operand not 64-byte aligned, SDM Vol. 2 "MOVAPS"), the section to its largest."""
    out = bytearray()
    offsets: dict[str, int] = {}
    align_max = 16
    for data, label in pool.items.items():
        n = len(data)
        align = 64 if n >= 64 else 32 if n >= 32 else 16 if n >= 16 else n
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
