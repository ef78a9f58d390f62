"""Two x86 objects compared as programs (tests/encode/x86/test_asm_roundtrip.py): the same
instructions at the same addresses (branches by the instruction they reach, NOP padding left
out), the same relocations and the same constants."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from capstone import CS_ARCH_X86, CS_MODE_64, Cs
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection


@dataclass(frozen=True)
class Obj:
    """What the round trip compares of an object: instructions, relocations, constants."""

    insts: list            # capstone instructions of .text
    relocs: list           # (instruction address, bytes before its end, type, section, offset)
    rodata: bytes
    path: Path


def read_object(path: Path) -> Obj:
    """The instructions, relocations and constants of an x86 object file."""
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    text = elf.get_section_by_name(".text").data()
    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    insts = list(cs.disasm(text, 0))
    assert sum(i.size for i in insts) == len(text), f"{path}: .text does not decode fully"
    ends = {}
    for i in insts:
        for off in range(i.address, i.address + i.size):
            ends[off] = (i.address, i.address + i.size - off)
    relocs = []
    rela = elf.get_section_by_name(".rela.text")
    if isinstance(rela, RelocationSection):
        symtab = elf.get_section(rela["sh_link"])
        for r in rela.iter_relocations():
            sym = symtab.get_symbol(r["r_info_sym"])
            # a label in .rodata (as/llvm-mc) or the section symbol plus addend (kcc): both
            # name the same place, section + offset
            sec = elf.get_section(sym["st_shndx"]).name
            k, before_end = ends[r["r_offset"]]
            relocs.append((k, before_end, r["r_info_type"], sec, sym["st_value"] + r["r_addend"]))
    ro = elf.get_section_by_name(".rodata")
    return Obj(insts, sorted(relocs), ro.data() if ro is not None else b"", path)


def _branch_target(insts: list, k: int) -> int | None:
    """The index of the instruction a jmp/jcc at index k reaches (None if not a branch)."""
    i = insts[k]
    if not (i.mnemonic.startswith("j")):
        return None
    addr = int(i.op_str, 16)
    return next(n for n, t in enumerate(insts) if t.address == addr)


def compare(kcc_obj: Obj, asm_obj: Obj) -> None:
    """Assert the two objects hold the same program (see the module docstring)."""
    ki = [i for i in kcc_obj.insts if i.mnemonic != "nop"]
    ai = [i for i in asm_obj.insts if i.mnemonic != "nop"]
    assert len(ki) == len(ai), (len(ki), len(ai))
    for n, (k, a) in enumerate(zip(ki, ai)):
        where = f"instruction {n} (kcc {k.mnemonic} {k.op_str} / {a.mnemonic} {a.op_str})"
        assert k.address == a.address, f"{where}: at {k.address:#x} / {a.address:#x}"
        tk = _branch_target(ki, n)
        if tk is not None:
            assert (k.mnemonic, tk) == (a.mnemonic, _branch_target(ai, n)), where
        else:
            assert bytes(k.bytes) == bytes(a.bytes), \
                f"{where}: {k.bytes.hex()} vs {a.bytes.hex()}"
    assert kcc_obj.relocs == asm_obj.relocs
    assert kcc_obj.rodata == asm_obj.rodata
