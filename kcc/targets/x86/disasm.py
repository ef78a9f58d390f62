"""Listing x86-64 machine code: raw bytes (capstone, Intel or AT&T syntax) and the functions of
an ELF object, with the relocations that patch each instruction (`kcc disasm`)."""

from __future__ import annotations

from typing import Any

from kcc.targets.elf import SHF_EXECINSTR, X86_64_RELOC_BY_CODE


def disasm_bytes(code: bytes, name: str, att: bool = False, base: int = 0,
                 relocs: dict[int, str] | None = None) -> str:
    """A listing of machine code: address, bytes, instruction (capstone, Intel syntax), and
    after an instruction the relocations (offset → text) that patch its bytes."""
    from capstone import CS_ARCH_X86, CS_MODE_64, CS_OPT_SYNTAX_ATT, Cs
    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    if att:
        cs.syntax = CS_OPT_SYNTAX_ATT
    lines = [f"{name}:"]
    for ins in cs.disasm(code, base):
        text = f"{ins.mnemonic} {ins.op_str}".strip()
        lines.append(f"  {ins.address:6x}:  {ins.bytes.hex(' '):<32} {text}")
        for off in range(ins.address, ins.address + ins.size):
            if relocs and off in relocs:
                lines.append(f"{'':10}{relocs[off]}")
    return "\n".join(lines) + "\n"


def disasm_object(data: bytes, att: bool = False) -> str:
    """Per function symbol of an x86-64 ELF file (a relocatable object, a linked executable or
    a shared object, stripped or not): address, bytes, instruction (capstone), with the
    relocation that applies to an instruction shown after it. Code no symbol covers (a
    stripped file) is listed per executable section; ValueError if there is no code."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    try:
        elf = ELFFile(io.BytesIO(data))
        out = []
        for idx, sec in enumerate(elf.iter_sections()):
            if not sec["sh_flags"] & SHF_EXECINSTR or sec["sh_type"] == "SHT_NOBITS":
                continue
            code, addr = sec.data(), sec["sh_addr"]
            if not code:
                continue
            relocs = _relocations(elf, sec.name)
            funcs = _functions(elf, idx, addr, len(code))
            if not funcs:
                funcs = [(0, len(code), sec.name)]
            for start, size, name in funcs:
                out.append(disasm_bytes(code[start:start + size], name, att, addr + start,
                                        relocs))
    except (ELFError, ValueError, KeyError, AttributeError, IndexError) as e:
        raise ValueError(f"not a readable ELF object: {e}") from None
    if not out:
        raise ValueError("the file has no executable section (no code to list)")
    return "\n".join(out)


def _functions(elf: Any, shndx: int, addr: int, length: int) -> list[tuple[int, int, str]]:
    """(offset in the section, size, name) of the function symbols defined in section shndx,
    from .symtab, else .dynsym; a symbol of size 0 runs to the next one."""
    for table in (".symtab", ".dynsym"):
        symtab = elf.get_section_by_name(table)
        if symtab is None or not hasattr(symtab, "iter_symbols"):
            continue
        found = sorted({(s["st_value"] - addr, s["st_size"], s.name)
                        for s in symtab.iter_symbols()
                        if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] == shndx
                        and 0 <= s["st_value"] - addr < length})
        if found:
            out = []
            for k, (start, size, name) in enumerate(found):
                end = found[k + 1][0] if k + 1 < len(found) else length
                out.append((start, min(size, length - start) if size else end - start, name))
            return out
    return []


def _relocations(elf: Any, section: str) -> dict[int, str]:
    """Offset → text of the relocations that patch section (relocatable objects)."""
    from elftools.elf.relocation import RelocationSection
    rela = elf.get_section_by_name(".rela" + section)
    symtab = elf.get_section_by_name(".symtab")
    relocs: dict[int, str] = {}
    if not isinstance(rela, RelocationSection) or symtab is None:
        return relocs
    for r in rela.iter_relocations():
        sym = symtab.get_symbol(r["r_info_sym"])
        name = sym.name or elf.get_section(sym["st_shndx"]).name
        kind = X86_64_RELOC_BY_CODE.get(r["r_info_type"])
        rtype = kind.name if kind else f"type {r['r_info_type']}"
        relocs[r["r_offset"]] = f"{rtype} {name}{r['r_addend']:+d}"
    return relocs
