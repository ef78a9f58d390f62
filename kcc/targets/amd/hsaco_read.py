"""AMD HSA code object reader: what a loader learns from an HSACO.

It reads any code object v5 (kcc's own or one LLVM linked): the processor from ``e_flags``,
each kernel's code symbol and 64-byte descriptor ``NAME.kd`` (AMDGPUUsage "Kernel
Descriptor"), and the ``NT_AMDGPU_METADATA`` MessagePack note (argument layout). The
emulator launches kernels from this; ``kcc disasm`` lists the code.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import msgpack
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from kcc.targets.amd.hsaco import NT_AMDGPU_METADATA

# EF_AMDGPU_MACH (the low byte of e_flags) -> processor name (AMDGPUUsage "Processors").
MACH_NAMES = {0x41: "gfx1100", 0x4C: "gfx942"}


class HsacoReadError(ValueError):
    """The input is not a code object kcc can read."""


@dataclass(frozen=True)
class Descriptor:
    """The fields of a kernel descriptor that decide a launch (AMDGPUUsage "Kernel
    Descriptor", "Initial Kernel Execution State")."""

    group_segment_size: int
    private_segment_size: int
    kernarg_size: int
    entry_offset: int
    rsrc1: int
    rsrc2: int
    rsrc3: int
    properties: int

    @classmethod
    def parse(cls, raw: bytes) -> "Descriptor":
        """Decode 64 descriptor bytes."""
        if len(raw) != 64:
            raise HsacoReadError(f"kernel descriptor of {len(raw)} bytes, expected 64")
        grp, priv, karg, _, entry = struct.unpack_from("<IIIIq", raw)
        rsrc3, rsrc1, rsrc2, props = struct.unpack_from("<IIIH", raw, 44)
        return cls(grp, priv, karg, entry, rsrc1, rsrc2, rsrc3, props)

    @property
    def user_sgpr_count(self) -> int:
        """USER_SGPR_COUNT (RSRC2 bits 5:1)."""
        return (self.rsrc2 >> 1) & 0x1F

    def user_sgprs(self) -> list[str]:
        """The enabled user SGPR inputs in the order the hardware loads them, each taking
        its SGPRs from s0 upward: private segment buffer (4), dispatch ptr (2), queue ptr
        (2), kernarg segment ptr (2), dispatch id (2), flat scratch init (2), private
        segment size (1)."""
        names = ("private_segment_buffer", "dispatch_ptr", "queue_ptr",
                 "kernarg_segment_ptr", "dispatch_id", "flat_scratch_init",
                 "private_segment_size")
        return [n for i, n in enumerate(names) if self.properties >> i & 1]

    @property
    def workgroup_ids(self) -> tuple[bool, bool, bool]:
        """ENABLE_SGPR_WORKGROUP_ID_X/Y/Z (RSRC2 bits 7..9)."""
        return tuple(bool(self.rsrc2 >> (7 + i) & 1) for i in range(3))  # type: ignore

    @property
    def workgroup_info(self) -> bool:
        """ENABLE_SGPR_WORKGROUP_INFO (RSRC2 bit 10)."""
        return bool(self.rsrc2 >> 10 & 1)

    @property
    def workitem_ids(self) -> int:
        """ENABLE_VGPR_WORKITEM_ID (RSRC2 bits 12:11): 0 x, 1 x/y, 2 x/y/z."""
        return (self.rsrc2 >> 11) & 3

    @property
    def private_segment(self) -> bool:
        """ENABLE_PRIVATE_SEGMENT (RSRC2 bit 0): the kernel uses its private segment (on
        gfx1100 and gfx942, which have architected flat scratch, the hardware then sets up
        FLAT_SCRATCH; no wave offset SGPR is loaded, AMDGPUUsage "Initial Kernel Execution
        State")."""
        return bool(self.rsrc2 & 1)

    @property
    def wave32(self) -> bool:
        """ENABLE_WAVEFRONT_SIZE32 (kernel code properties bit 10)."""
        return bool(self.properties >> 10 & 1)


@dataclass(frozen=True)
class HsacoKernel:
    """One kernel of a code object."""

    name: str
    code_addr: int
    code_size: int
    descriptor: Descriptor
    metadata: dict


@dataclass(frozen=True)
class Hsaco:
    """A whole code object: its processor, ``.text`` and kernels."""

    arch: str
    text: bytes
    text_addr: int
    kernels: dict[str, HsacoKernel]
    metadata: dict

    def code(self, kernel: str) -> bytes:
        """The bytes of ``kernel``'s code symbol."""
        k = self.kernels[kernel]
        start = k.code_addr - self.text_addr
        return self.text[start:start + k.code_size]


def _metadata(elf: ELFFile) -> dict:
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_NOTE":
            continue
        data, pos = sec.data(), 0
        while pos + 12 <= len(data):
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz]
            desc_at = pos + 12 + (namesz + 3) // 4 * 4
            if name == b"AMDGPU\0" and ntype == NT_AMDGPU_METADATA:
                try:
                    return msgpack.unpackb(data[desc_at:desc_at + descsz])
                except (ValueError, msgpack.UnpackException) as e:
                    raise HsacoReadError(f"bad AMDGPU metadata note: {e}") from None
            pos = desc_at + (descsz + 3) // 4 * 4
    raise HsacoReadError("no NT_AMDGPU_METADATA note")


def read_hsaco(data: bytes) -> Hsaco:
    """Parse an HSACO; a clear :class:`HsacoReadError` for anything else."""
    try:
        elf = ELFFile(io.BytesIO(data))
        if elf["e_machine"] != "EM_AMDGPU":
            raise HsacoReadError(f"not an AMDGPU object (e_machine {elf['e_machine']})")
        mach = elf["e_flags"] & 0xFF
        if mach not in MACH_NAMES:
            raise HsacoReadError(f"unsupported AMDGPU processor (EF_AMDGPU_MACH {mach:#x})")
        text = elf.get_section_by_name(".text")
        symtab = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
        if text is None or symtab is None:
            raise HsacoReadError("code object without .text or symbol table")
        meta = _metadata(elf)
        syms = {s.name: s for s in symtab.iter_symbols()}
        kernels: dict[str, HsacoKernel] = {}
        for km in meta.get("amdhsa.kernels", []):
            name, kd_name = km.get(".name"), km.get(".symbol")
            if kd_name not in syms:
                raise HsacoReadError(f"kernel {name!r}: descriptor symbol {kd_name!r} missing")
            kd = syms[kd_name]
            sec = elf.get_section(kd["st_shndx"])
            raw = sec.data()[kd["st_value"] - sec["sh_addr"]:][:64]
            desc = Descriptor.parse(raw)
            entry = kd["st_value"] + desc.entry_offset
            fn = syms.get(name)
            size = fn["st_size"] if fn is not None and fn["st_value"] == entry else \
                text["sh_addr"] + text["sh_size"] - entry
            if not text["sh_addr"] <= entry < text["sh_addr"] + text["sh_size"]:
                raise HsacoReadError(f"kernel {name!r}: entry {entry:#x} is outside .text")
            kernels[name] = HsacoKernel(name, entry, size, desc, km)
    except ELFError as e:
        raise HsacoReadError(f"not a readable ELF file: {e}") from None
    except (struct.error, KeyError, TypeError) as e:
        raise HsacoReadError(f"malformed code object: {e}") from None
    return Hsaco(MACH_NAMES[mach], text.data(), text["sh_addr"], kernels, meta)


def is_hsaco(data: bytes) -> bool:
    """Whether data looks like an AMDGPU HSA code object (ELF64, OSABI 64, EM_AMDGPU)."""
    return (len(data) >= 20 and data[:4] == b"\x7fELF" and data[4] == 2 and data[7] == 64
            and struct.unpack_from("<H", data, 18)[0] == 224)


def listing(data: bytes) -> str:
    """``kcc disasm`` of a code object: per kernel its descriptor's launch facts, then each
    instruction's address, dwords and LLVM-syntax text from kcc's decoder. A word the
    decoder does not know ends that kernel's listing with a line naming it."""
    from kcc.encode.amd import disassemble
    obj = read_hsaco(data)
    out = [f"; {obj.arch} code object, {len(obj.kernels)} kernel(s)"]
    for k in sorted(obj.kernels.values(), key=lambda k: k.code_addr):
        d = k.descriptor
        out.append(f"\n{k.name}:  ; kernarg {d.kernarg_size} B, LDS {d.group_segment_size} B,"
                   f" vgprs {k.metadata.get('.vgpr_count')}, sgprs "
                   f"{k.metadata.get('.sgpr_count')}, wave{32 if d.wave32 else 64}"
                   + (f", scratch {d.private_segment_size} B" if d.private_segment_size
                      else ""))
        code = obj.code(k.name)
        try:
            for addr, size, _, text in disassemble(obj.arch, code, k.code_addr):
                raw = code[addr - k.code_addr:addr - k.code_addr + size]
                words = " ".join(f"{w:08x}" for w in struct.unpack(f"<{size // 4}I", raw))
                out.append(f"  {addr:6x}:  {words:<26} {text}")
        except ValueError as e:
            out.append(f"  ; cannot decode further: {e}")
    return "\n".join(out) + "\n"
