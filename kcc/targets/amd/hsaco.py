"""AMD HSA code object (HSACO, code object v5) writer.

An HSACO is an ELF64 shared object (AMDGPUUsage "ELF Code Object"): OSABI 64 (AMDGPU_HSA),
ABI version 3 (code object v5), ``ET_DYN``, ``e_machine`` 224 (EM_AMDGPU) and ``e_flags``
naming the processor. Each kernel has a function symbol ``NAME`` in ``.text`` (256-byte
aligned) and a 64-byte kernel descriptor ``NAME.kd`` in ``.rodata`` (AMDGPUUsage "Kernel
Descriptor"); the ``NT_AMDGPU_METADATA`` note carries MessagePack metadata (AMDGPUUsage
"Code Object V5 Metadata"). kcc's own launch facts, when given, go in a last,
non-allocated ``.note.kcc`` section (kcc.targets.facts), as in kcc's x86 objects. Sections
and segments are laid out as ``ld.lld -shared`` lays them out, so the loader (ROCr) and
LLVM's tools read kcc's objects exactly as LLVM's own.

Output is deterministic: equal input gives equal bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import msgpack

from kcc.targets.elf import (
    EM_AMDGPU, ET_DYN, PF_R, PF_W, PF_X, PT_DYNAMIC, PT_LOAD, PT_NOTE, PT_PHDR, SHF_ALLOC,
    SHF_EXECINSTR, SHF_WRITE, SHT_DYNAMIC, SHT_DYNSYM, SHT_HASH, SHT_NOTE,
    SHT_PROGBITS, SHT_STRTAB, SHT_SYMTAB, STB_GLOBAL, STB_LOCAL, STT_FUNC, STT_NOTYPE,
    STT_OBJECT, STV_DEFAULT, STV_HIDDEN, STV_PROTECTED, SYM_SIZE, ElfBuilder, ElfWriteError,
    Section, Segment, StringTable, build_symtab)
from kcc.targets.facts import NOTE_SECTION

ELFOSABI_AMDGPU_HSA = 64
ELFABIVERSION_AMDGPU_HSA_V5 = 3
NT_AMDGPU_METADATA = 32
KD_SIZE = 64

# Dynamic section tags (gABI chapter 5, "Dynamic Section").
DT_NULL, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT = 0, 4, 5, 6, 10, 11


@dataclass(frozen=True)
class AmdArch:
    """What the code object needs to know of one processor (AMDGPUUsage "Processors").

    ``e_flags``: EF_AMDGPU_MACH plus the xnack/sramecc feature bits (code object v4+
    encoding; "any" for both on gfx942). ``vgpr_granule``: the unit of
    GRANULATED_WORKITEM_VGPR_COUNT. ``sgpr_granule``: of GRANULATED_WAVEFRONT_SGPR_COUNT,
    0 where the field is reserved (GFX10+). ``text_align``/``text_tail``/``fill``: after the
    last kernel LLVM pads ``.text`` to ``text_align`` bytes and appends ``text_tail`` more
    bytes, all of the word ``fill`` (``s_code_end`` on GFX10+, ``s_endpgm`` on GFX9), so
    instruction prefetch never runs past the end of the code.
    """

    name: str
    family: str
    e_flags: int
    wave_size: int
    vgpr_granule: int
    sgpr_granule: int
    text_align: int
    text_tail: int
    fill: int
    nop: int = 0xBF800000  # s_nop 0 (SOPP), the gap filler between kernels in .text

    @property
    def target_id(self) -> str:
        """The target triple and processor as metadata and ``.amdgcn_target`` spell it."""
        return f"amdgcn-amd-amdhsa--{self.name}"

    def extra_sgprs(self, uses_vcc: bool) -> int:
        """SGPRs allocated after the last one the code names: VCC (2) on GFX10+; on GFX9
        with architected flat scratch (gfx940+) six are always reserved (VCC, FLAT_SCRATCH,
        XNACK_MASK), as LLVM counts them."""
        if self.family == "cdna3":
            return 6
        return 2 if uses_vcc else 0


ARCHES: dict[str, AmdArch] = {
    # EF_AMDGPU_MACH_AMDGCN_GFX1100 = 0x41; no xnack/sramecc on RDNA3.
    "gfx1100": AmdArch("gfx1100", "rdna3", 0x41, 32, 8, 0, 128, 384, 0xBF9F0000),
    # EF_AMDGPU_MACH_AMDGCN_GFX942 = 0x4c | FEATURE_XNACK_ANY_V4 0x100 | SRAMECC_ANY_V4 0x400.
    "gfx942": AmdArch("gfx942", "cdna3", 0x54C, 64, 8, 8, 64, 1024, 0xBF810000),
}


def arch_info(arch: str) -> AmdArch:
    """The AmdArch for ``arch`` or a clear error."""
    try:
        return ARCHES[arch]
    except KeyError:
        raise ElfWriteError(f"unknown AMD arch {arch!r}; expected one of "
                            f"{', '.join(ARCHES)}") from None


@dataclass(frozen=True)
class KernelArg:
    """One explicit kernel argument as the metadata ``.args`` lists it.

    ``value_kind``: ``global_buffer`` (a pointer, ``address_space`` global) or
    ``by_value``; hidden arguments use the ``hidden_*`` kinds."""

    name: str
    offset: int
    size: int
    value_kind: str = "global_buffer"
    address_space: str | None = "global"

    def metadata(self) -> dict[str, object]:
        """The argument's metadata map."""
        out: dict[str, object] = {".name": self.name, ".offset": self.offset,
                                  ".size": self.size, ".value_kind": self.value_kind}
        if self.value_kind == "global_buffer" and self.address_space:
            out[".address_space"] = self.address_space
        return out


@dataclass(frozen=True)
class AmdKernel:
    """One kernel to package: its code and the launch state it needs.

    ``asm`` holds the instructions as LLVM-syntax lines (for the assembly writer); ``code``
    their bytes. User SGPRs are enabled in the hardware's order (private segment buffer,
    dispatch ptr, queue ptr, kernarg segment ptr, dispatch id, flat scratch init, private
    segment size); ``workgroup_ids`` enables the system SGPRs for x, y, z; ``workitem_ids``
    is the VGPR work-item id count minus one (0: x, 1: x and y, 2: x, y and z).
    ``private_segment_size`` is the scratch bytes per work-item (nonzero sets
    ENABLE_PRIVATE_SEGMENT: gfx1100 and gfx942 have architected flat scratch, so nothing else
    is set up); ``sgpr_spill_count``/``vgpr_spill_count`` go to the metadata as they are.
    """

    name: str
    code: bytes
    next_free_vgpr: int
    next_free_sgpr: int
    args: tuple[KernelArg, ...] = ()
    kernarg_size: int = 0
    kernarg_align: int = 8
    group_segment_size: int = 0
    private_segment_size: int = 0
    uses_vcc: bool = True
    dispatch_ptr: bool = False
    queue_ptr: bool = False
    kernarg_segment_ptr: bool = True
    dispatch_id: bool = False
    workgroup_ids: tuple[bool, bool, bool] = (True, False, False)
    workitem_ids: int = 0
    max_flat_workgroup_size: int = 1024
    sgpr_spill_count: int = 0
    vgpr_spill_count: int = 0
    asm: tuple[str, ...] = field(default=(), compare=False)

    @property
    def user_sgpr_count(self) -> int:
        """User SGPRs the descriptor enables (AMDGPUUsage "Initial Kernel Execution State")."""
        return (2 * self.dispatch_ptr + 2 * self.queue_ptr + 2 * self.kernarg_segment_ptr
                + 2 * self.dispatch_id)


def _granules(count: int, granule: int) -> int:
    """The GRANULATED_* encoding: ceil(max(count, 1) / granule) - 1."""
    return (max(count, 1) + granule - 1) // granule - 1


def accum_offset(kernel: AmdKernel) -> int:
    """gfx90a+ ACCUM_OFFSET: where the AGPRs start in the unified register file, a multiple
    of 4 (no AGPRs are used, so just past the VGPRs)."""
    return max(4, (kernel.next_free_vgpr + 3) // 4 * 4)


def kernel_descriptor(kernel: AmdKernel, arch: AmdArch, entry_offset: int) -> bytes:
    """The 64-byte kernel descriptor (AMDGPUUsage "Kernel Descriptor" code object v5).

    ``entry_offset`` is KERNEL_CODE_ENTRY_BYTE_OFFSET, the entry address minus the
    descriptor's address. Float modes are LLVM's defaults for compute kernels: round to
    nearest even, denormals kept (FLOAT_DENORM_MODE 3), DX10_CLAMP and IEEE_MODE on.
    """
    vgprs = kernel.next_free_vgpr
    if arch.family == "cdna3":
        vgprs = accum_offset(kernel)  # unified VGPR+AGPR count (no AGPRs)
    rsrc1 = _granules(vgprs, arch.vgpr_granule)
    if arch.sgpr_granule:
        sgprs = kernel.next_free_sgpr + arch.extra_sgprs(kernel.uses_vcc)
        rsrc1 |= _granules(sgprs, arch.sgpr_granule) << 6
    rsrc1 |= 3 << 16 | 3 << 18  # FLOAT_DENORM_MODE_32 / _16_64: flush none
    rsrc1 |= 1 << 21 | 1 << 23  # ENABLE_DX10_CLAMP, ENABLE_IEEE_MODE
    if arch.family == "rdna3":
        rsrc1 |= 1 << 29 | 1 << 30  # WGP_MODE, MEM_ORDERED (GFX10+)
    rsrc2 = 1 if kernel.private_segment_size else 0  # ENABLE_PRIVATE_SEGMENT
    rsrc2 |= kernel.user_sgpr_count << 1
    for i, on in enumerate(kernel.workgroup_ids):
        rsrc2 |= int(on) << (7 + i)  # ENABLE_SGPR_WORKGROUP_ID_X/Y/Z
    rsrc2 |= kernel.workitem_ids << 11  # ENABLE_VGPR_WORKITEM_ID
    # GRANULATED_LDS_SIZE stays 0: the packet processor takes it from the dispatch packet.
    rsrc3 = 0
    if arch.family == "cdna3":
        rsrc3 = accum_offset(kernel) // 4 - 1  # ACCUM_OFFSET, TG_SPLIT 0
    props = (kernel.dispatch_ptr << 1 | kernel.queue_ptr << 2
             | kernel.kernarg_segment_ptr << 3 | kernel.dispatch_id << 4)
    if arch.wave_size == 32:
        props |= 1 << 10  # ENABLE_WAVEFRONT_SIZE32
    return struct.pack("<IIIIq20xIIIHHI", kernel.group_segment_size,
                       kernel.private_segment_size, kernel.kernarg_size, 0, entry_offset,
                       rsrc3, rsrc1, rsrc2, props, 0, 0)


def kernel_metadata(kernel: AmdKernel, arch: AmdArch) -> dict[str, object]:
    """One entry of ``amdhsa.kernels`` (AMDGPUUsage "Code Object V5 Metadata")."""
    return {
        ".args": [a.metadata() for a in kernel.args],
        ".group_segment_fixed_size": kernel.group_segment_size,
        ".kernarg_segment_align": kernel.kernarg_align,
        ".kernarg_segment_size": kernel.kernarg_size,
        ".max_flat_workgroup_size": kernel.max_flat_workgroup_size,
        ".name": kernel.name,
        ".private_segment_fixed_size": kernel.private_segment_size,
        ".sgpr_count": kernel.next_free_sgpr + arch.extra_sgprs(kernel.uses_vcc),
        ".sgpr_spill_count": kernel.sgpr_spill_count,
        ".symbol": kernel.name + ".kd",
        ".uses_dynamic_stack": False,
        ".vgpr_count": kernel.next_free_vgpr,
        ".vgpr_spill_count": kernel.vgpr_spill_count,
        ".wavefront_size": arch.wave_size,
    }


def code_object_metadata(kernels: list[AmdKernel], arch: AmdArch) -> dict[str, object]:
    """The whole metadata map: kernels, target id and metadata version 1.2 (v5)."""
    return {"amdhsa.kernels": [kernel_metadata(k, arch) for k in kernels],
            "amdhsa.target": arch.target_id, "amdhsa.version": [1, 2]}


def _note(name: bytes, ntype: int, desc: bytes) -> bytes:
    """One ELF note (gABI "Note Section"): name and desc each padded to 4 bytes."""
    name = name + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)  # noqa: E731
    return struct.pack("<III", len(name), len(desc), ntype) + pad(name) + pad(desc)


def _sysv_hash(name: bytes) -> int:
    """The System V ABI ELF hash function (gABI chapter 5, "Hash Table")."""
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def _hash_table(names: list[bytes]) -> bytes:
    """A ``.hash`` section for dynamic symbols 1..n (symbol 0 is the null symbol)."""
    nsym = len(names) + 1
    nbucket = max(1, nsym)
    buckets = [0] * nbucket
    chains = [0] * nsym
    for i, name in enumerate(names, start=1):
        b = _sysv_hash(name) % nbucket
        chains[i] = buckets[b]
        buckets[b] = i
    return struct.pack(f"<II{nbucket}I{nsym}I", nbucket, nsym, *buckets, *chains)


def pad_text(kernels: list[AmdKernel], arch: AmdArch) -> tuple[bytes, list[int]]:
    """``.text`` contents and each kernel's offset: kernels 256-byte aligned with ``s_nop 0``
    between them, then LLVM's tail of ``fill`` words (see :class:`AmdArch`)."""
    text = bytearray()
    offsets = []
    for k in kernels:
        if len(k.code) % 4:
            raise ElfWriteError(f"kernel {k.name!r}: code of {len(k.code)} bytes is not a "
                                "whole number of dwords")
        text += struct.pack("<I", arch.nop) * ((-len(text) % 256) // 4)
        offsets.append(len(text))
        text += k.code
    word = struct.pack("<I", arch.fill)
    text += word * ((-len(text) % arch.text_align) // 4) + word * (arch.text_tail // 4)
    return bytes(text), offsets


def _check(kernels: list[AmdKernel]) -> None:
    if not kernels:
        raise ElfWriteError("a code object needs at least one kernel")
    seen: set[str] = set()
    for k in kernels:
        if not k.name or not k.name.isidentifier():
            raise ElfWriteError(f"kernel name {k.name!r} is not an identifier")
        if k.name in seen:
            raise ElfWriteError(f"kernel {k.name!r} is defined twice")
        seen.add(k.name)
        if k.kernarg_align not in (4, 8, 16) or k.kernarg_size % k.kernarg_align:
            # LLVM's metadata verifier refuses a segment size that is not a multiple of
            # the segment alignment.
            raise ElfWriteError(f"kernel {k.name!r}: kernarg size {k.kernarg_size} is not a "
                                f"multiple of its alignment {k.kernarg_align}")
        for a in k.args:
            if a.offset < 0 or a.offset + a.size > k.kernarg_size:
                raise ElfWriteError(f"kernel {k.name!r}: argument {a.name!r} lies outside "
                                    f"its kernarg segment of {k.kernarg_size} bytes")
        if not 0 <= k.workitem_ids <= 2:
            raise ElfWriteError(f"kernel {k.name!r}: workitem_ids {k.workitem_ids} not 0..2")


def write_hsaco(kernels: list[AmdKernel], arch: str, facts: bytes | None = None) -> bytes:
    """Build an HSACO holding ``kernels`` for ``arch`` ("gfx1100" or "gfx942"); ``facts``, when
    given, are the contents of a ``.note.kcc`` section (kcc.targets.facts.elf_note: the
    kernels' launch facts), written last and not allocated, so no segment and no loader that
    maps the image sees it."""
    info = arch_info(arch)
    _check(kernels)
    text, text_offsets = pad_text(kernels, info)
    note = _note(b"AMDGPU", NT_AMDGPU_METADATA,
                 msgpack.packb(code_object_metadata(kernels, info)))
    # Dynamic and static symbols: per kernel NAME (func) then NAME.kd (object), as lld does.
    names = [n for k in kernels for n in (k.name, k.name + ".kd")]
    dynstr = StringTable()
    for n in names:
        dynstr.add(n)
    segments = (
        Segment(PT_PHDR, PF_R, 8),
        Segment(PT_LOAD, PF_R, 0x1000, (".note", ".dynsym", ".hash", ".dynstr", ".rodata")),
        Segment(PT_LOAD, PF_R | PF_X, 0x1000, (".text",)),
        Segment(PT_LOAD, PF_R | PF_W, 0x1000, (".dynamic",)),
        Segment(PT_DYNAMIC, PF_R | PF_W, 8, (".dynamic",)),
        Segment(PT_NOTE, PF_R, 4, (".note",)),
    )
    b = ElfBuilder(EM_AMDGPU, ET_DYN, ELFOSABI_AMDGPU_HSA, ELFABIVERSION_AMDGPU_HSA_V5,
                   info.e_flags, segments)
    b.add(Section(".note", note, SHT_NOTE, SHF_ALLOC, 4))
    s_dynsym = b.add(Section(".dynsym", bytes(SYM_SIZE * (len(names) + 1)), SHT_DYNSYM,
                             SHF_ALLOC, 8, SYM_SIZE, info=1))
    s_hash = b.add(Section(".hash", _hash_table([n.encode() for n in names]), SHT_HASH,
                           SHF_ALLOC, 4, 4))
    s_dynstr = b.add(Section(".dynstr", dynstr.data(), SHT_STRTAB, SHF_ALLOC, 1))
    s_rodata = b.add(Section(".rodata", bytes(KD_SIZE * len(kernels)), SHT_PROGBITS,
                             SHF_ALLOC, 64))
    s_text = b.add(Section(".text", text, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 256))
    s_dynamic = b.add(Section(".dynamic", bytes(16 * 6), SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE,
                              8, 16))
    s_dynsym.link = s_dynamic.link = s_dynstr.index
    s_hash.link = s_dynsym.index
    b.layout()

    kds = bytearray()
    entries: list[tuple[str, int, int, int, int, int, int]] = []
    for k, toff in zip(kernels, text_offsets):
        kd_addr = s_rodata.addr + len(kds)
        code_addr = s_text.addr + toff
        kds += kernel_descriptor(k, info, code_addr - kd_addr)
        entries.append((k.name, STB_GLOBAL, STT_FUNC, s_text.index, code_addr, len(k.code),
                        STV_PROTECTED))
        entries.append((k.name + ".kd", STB_GLOBAL, STT_OBJECT, s_rodata.index, kd_addr,
                        KD_SIZE, STV_DEFAULT))
    s_rodata.data = bytes(kds)
    s_dynsym.data, _ = build_symtab(entries, dynstr)
    s_dynamic.data = struct.pack(
        "<12Q", DT_SYMTAB, s_dynsym.addr, DT_SYMENT, SYM_SIZE, DT_STRTAB, s_dynstr.addr,
        DT_STRSZ, s_dynstr.size, DT_HASH, s_hash.addr, DT_NULL, 0)

    strtab = StringTable()
    static = [("_DYNAMIC", STB_LOCAL, STT_NOTYPE, s_dynamic.index, s_dynamic.addr, 0,
               STV_HIDDEN), *entries]
    symdata, first_global = build_symtab(static, strtab)
    s_symtab = b.add(Section(".symtab", symdata, SHT_SYMTAB, 0, 8, SYM_SIZE,
                             info=first_global))
    s_strtab = b.add(Section(".strtab", strtab.data(), SHT_STRTAB, 0, 1))
    s_symtab.link = s_strtab.index
    if facts is not None:
        b.add(Section(NOTE_SECTION, facts, SHT_NOTE, 0, 4))
    return b.to_bytes()
