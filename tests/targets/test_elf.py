"""ELF64 relocatable writer, checked with readelf, objdump, pyelftools and the system cc.

Machine code comes from llvm-mc (``-show-encoding``) at test time, with its fixups turned into
relocations, so neither the bytes nor the relocation offsets come from kcc.
"""

from __future__ import annotations

import io
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from kcc.targets.elf import (
    EM_AMDGPU, R_X86_64_64, R_X86_64_PC32, R_X86_64_PLT32, SHF_ALLOC, SHF_EXECINSTR,
    SHF_INFO_LINK, SHF_WRITE, ElfWriteError, Reloc, Symbol, write_relocatable)

TOOLS = ("llvm-mc", "readelf", "objdump", "cc")
pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                reason=f"needs {', '.join(TOOLS)} on PATH")

TEXT = SHF_ALLOC | SHF_EXECINSTR
RO = SHF_ALLOC

# llvm-mc fixup kinds -> the relocation llvm-mc itself writes for them in an ELF object.
FIXUP_RELOC = {"reloc_riprel_4byte": R_X86_64_PC32, "reloc_branch_4byte_pcrel": R_X86_64_PLT32}
# In the assembly, "POOL" stands for the start of .rodata (the constant pool).
POOL = "POOL"

_ENC = re.compile(r"# encoding: \[([^\]]*)\]")
_FIX = re.compile(r"fixup A - offset: (\d+), value: (.*), kind: (\w+)")
_VALUE = re.compile(r"^([A-Za-z_.][\w.]*)((?:[+-]\d+)*)$")


def llvm_mc_function(asm: str) -> tuple[bytes, list[tuple[int, int, str, int]]]:
    """Assemble Intel-syntax ``asm`` with llvm-mc; return bytes and fixups.

    Fixups are ``(offset in the function, relocation type, symbol, addend)``; ``POOL``
    becomes ``.rodata``.
    """
    out = subprocess.run(["llvm-mc", "-triple=x86_64", "-x86-asm-syntax=intel",
                          "-show-encoding"], input=asm, capture_output=True, text=True,
                         check=True).stdout
    code = bytearray()
    fixups = []
    inst_start = 0
    for line in out.splitlines():
        if m := _ENC.search(line):
            inst_start = len(code)
            for tok in m.group(1).split(","):
                code.append(0 if tok.strip() == "A" else int(tok, 16))
        elif m := _FIX.search(line):
            value = m.group(2).replace("(", "").replace(")", "")
            vm = _VALUE.match(value)
            assert vm, f"unexpected fixup value {value!r}"
            addend = sum(int(t) for t in re.findall(r"[+-]\d+", vm.group(2)))
            symbol = ".rodata" if vm.group(1) == POOL else vm.group(1)
            fixups.append((inst_start + int(m.group(1)), FIXUP_RELOC[m.group(3)], symbol,
                           addend))
    assert code, out
    return bytes(code), fixups


# Pool layout: [0] 1.5f, [4] 3.0f, [8] 0.25f, [32..64) eight floats for an aligned load.
POOL_FLOATS = np.array([1.5, 3.0, 0.25, 0, 0, 0, 0, 0,
                        1, 2, 3, 4, 5, 6, 7.5, -8], dtype=np.float32)

FUNCTIONS = {
    # float kf_const(void)
    "kf_const": "vmovss xmm0, dword ptr [rip + POOL]\nret\n",
    # float kf_axpb(float x) = x * 3 + 0.25
    "kf_axpb": ("vmulss xmm0, xmm0, dword ptr [rip + POOL+4]\n"
                "vaddss xmm0, xmm0, dword ptr [rip + POOL+8]\nret\n"),
    # void kf_store8(float *out): vmovaps faults unless .rodata+32 is 32-byte aligned.
    "kf_store8": ("vmovaps ymm0, ymmword ptr [rip + POOL+32]\n"
                  "vmovups ymmword ptr [rdi], ymm0\nvzeroupper\nret\n"),
    # float kf_call(float x) = kf_axpb(x) + 1.5, through a global symbol (PLT32)
    "kf_call": ("sub rsp, 8\ncall kf_axpb\nadd rsp, 8\n"
                "vaddss xmm0, xmm0, dword ptr [rip + POOL]\nret\n"),
    # float kf_twice(float x) = helper(helper(x)), helper is local: x * 3 + 0.25
    "kf_twice": "push rax\ncall kf_helper\ncall kf_helper\npop rcx\nret\n",
    "kf_helper": ("vmulss xmm0, xmm0, dword ptr [rip + POOL+4]\n"
                  "vaddss xmm0, xmm0, dword ptr [rip + POOL+8]\nret\n"),
}
LOCAL = {"kf_helper"}


def build_kernel_object(pool_align: int = 32) -> tuple[bytes, dict[str, int]]:
    """The functions above, 16-byte aligned in .text, with the float pool in .rodata."""
    text = bytearray()
    symbols, relocs, starts = [], [], {}
    for name, asm in FUNCTIONS.items():
        text += b"\xcc" * (-len(text) % 16)
        code, fixups = llvm_mc_function(asm)
        starts[name] = len(text)
        symbols.append(Symbol(name, ".text", len(text), len(code), "func",
                              "local" if name in LOCAL else "global"))
        relocs += [Reloc(".text", len(text) + off, rtype, sym, add)
                   for off, rtype, sym, add in fixups]
        text += code
    sections = {".text": (bytes(text), 16, TEXT),
                ".rodata": (POOL_FLOATS.tobytes(), pool_align, RO)}
    return write_relocatable(sections, symbols, relocs, file_name="kernels.uop"), starts


@pytest.fixture(scope="module")
def kobj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("elf") / "k.o"
    path.write_bytes(build_kernel_object()[0])
    return path


def _run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def test_readelf_reads_without_warnings(kobj: Path) -> None:
    res = _run("readelf", "-a", "-W", kobj)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert "warning" not in res.stdout.lower()
    out = res.stdout
    assert re.search(r"Type:\s+REL \(Relocatable file\)", out)
    assert re.search(r"Machine:\s+Advanced Micro Devices X86-64", out)
    # [Nr] Name Type Address Off Size ES Flg Lk Inf Al
    heads = {m.group(1): m.groups() for m in re.finditer(
        r"\]\s+(\S+)\s+(\w+)\s+\w+\s+\w+\s+(\w+)\s+(\w+)\s+([A-Z]*)\s+(\d+)\s+(\d+)\s+(\d+)",
        out)}
    index = {name: i for i, name in enumerate(
        re.findall(r"\[\s*\d+\]\s+(\S+)\s+(?:PROGBITS|RELA|SYMTAB|STRTAB|NOBITS)", out), 1)}
    assert heads[".text"][1] == "PROGBITS"
    assert heads[".text"][3:] == ("00", "AX", "0", "0", "16")
    assert heads[".rodata"][4:] == ("A", "0", "0", "32")
    assert int(heads[".rodata"][2], 16) == POOL_FLOATS.nbytes
    rela = heads[".rela.text"]
    assert rela[1] == "RELA" and rela[3] == "18" and rela[4] == "I"
    assert int(rela[5]) == index[".symtab"] and int(rela[6]) == index[".text"]
    assert heads[".note.GNU-stack"][1:3] == ("PROGBITS", "000000")
    assert heads[".note.GNU-stack"][4] == ""
    # Symbol table: locals first, sh_info = number of locals = index of the first global.
    syms = re.findall(r"^\s+(\d+): [0-9a-f]+\s+\d+\s+(\w+)\s+(\w+)\s+\w+\s+\S+\s*(\S*)$",
                      out, re.M)
    binds = [b for _, _, b, _ in syms]
    first_global = binds.index("GLOBAL")
    assert all(b == "LOCAL" for b in binds[:first_global])
    assert all(b == "GLOBAL" for b in binds[first_global:])
    assert int(heads[".symtab"][6]) == first_global
    assert ("SECTION", ".rodata") in {(t, n) for _, t, _, n in syms}
    assert any(t == "FILE" and n == "kernels.uop" for _, t, _, n in syms)
    # Relocations into the pool go through the .rodata section symbol.
    assert re.search(r"R_X86_64_PC32\s+0+\s+\.rodata \+ 1c", out)  # POOL+32 - 4
    assert re.search(r"R_X86_64_PLT32\s+[0-9a-f]+\s+kf_axpb - 4", out)


def test_objdump_disassembles_with_relocations(kobj: Path) -> None:
    res = _run("objdump", "-d", "-r", "-M", "intel", kobj)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    out = res.stdout
    for name in FUNCTIONS:
        assert re.search(rf"^[0-9a-f]+ <{name}>:$", out, re.M), name
    assert "vmovaps ymm0,YMMWORD PTR [rip+0x0]" in out
    assert re.search(r"R_X86_64_PC32\s+\.rodata\+0x1c", out)
    assert re.search(r"R_X86_64_PLT32\s+kf_axpb-0x4", out)
    # The local helper is reached through the .text section symbol plus its offset.
    start = build_kernel_object()[1]["kf_helper"]
    assert re.search(rf"R_X86_64_PLT32\s+\.text\+0x{start - 4:x}", out)


def test_pyelftools_structure() -> None:
    data, starts = build_kernel_object(pool_align=64)
    elf = ELFFile(io.BytesIO(data))
    assert elf["e_type"] == "ET_REL" and elf["e_machine"] == "EM_X86_64"
    text, rodata = elf.get_section_by_name(".text"), elf.get_section_by_name(".rodata")
    assert text["sh_addralign"] == 16 and text["sh_flags"] == TEXT
    assert rodata["sh_addralign"] == 64 and rodata["sh_flags"] == RO
    assert rodata["sh_offset"] % 64 == 0
    assert rodata.data() == POOL_FLOATS.tobytes()
    symtab = elf.get_section_by_name(".symtab")
    rela = elf.get_section_by_name(".rela.text")
    assert rela["sh_flags"] & SHF_INFO_LINK
    assert elf.get_section(rela["sh_link"]).name == ".symtab"
    assert elf.get_section(rela["sh_info"]).name == ".text"
    syms = list(symtab.iter_symbols())
    funcs = {s.name: s for s in syms if s["st_info"]["type"] == "STT_FUNC"}
    assert {n: s["st_value"] for n, s in funcs.items()} == starts
    assert funcs["kf_helper"]["st_info"]["bind"] == "STB_LOCAL"
    assert funcs["kf_call"]["st_info"]["bind"] == "STB_GLOBAL"
    assert elf.get_section_by_name(".note.GNU-stack").data_size == 0
    targets = {syms[r["r_info_sym"]].name or elf.get_section(
        syms[r["r_info_sym"]]["st_shndx"]).name for r in rela.iter_relocations()}
    assert targets == {".rodata", ".text", "kf_axpb"}


def test_deterministic() -> None:
    a, b = build_kernel_object()[0], build_kernel_object()[0]
    assert a == b
    assert build_kernel_object(pool_align=64)[0] != a


C_MAIN = r"""
#include <stdio.h>
float kf_const(void); float kf_axpb(float); void kf_store8(float *);
float kf_call(float); float kf_twice(float);
int main(void) {
    float v[8];
    kf_store8(v);
    printf("%.9g %.9g %.9g %.9g\n", kf_const(), kf_axpb(2.0f), kf_call(2.0f), kf_twice(2.0f));
    for (int i = 0; i < 8; i++) printf("%.9g ", v[i]);
    printf("\n");
    return 0;
}
"""


@pytest.mark.parametrize("pie", ["-pie", "-no-pie"])
def test_links_with_cc_and_runs(kobj: Path, tmp_path: Path, pie: str) -> None:
    main = tmp_path / "main.c"
    main.write_text(C_MAIN)
    exe = tmp_path / "prog"
    res = _run("cc", pie, "-O1", main, kobj, "-o", exe)
    # No linker warnings (e.g. "missing .note.GNU-stack section implies executable stack").
    assert res.returncode == 0 and res.stderr == "", res.stderr
    stack = re.search(r"GNU_STACK.*", _run("readelf", "-lW", exe).stdout)
    assert stack and "RWE" not in stack.group(0) and " RW " in stack.group(0)
    run = _run(exe)
    assert run.returncode == 0, run.stderr
    line1, line2 = run.stdout.splitlines()
    f = np.float32
    axpb = lambda x: f(f(x) * f(3.0)) + f(0.25)  # noqa: E731
    assert [f(t) for t in line1.split()] == [f(1.5), axpb(2.0), axpb(2.0) + f(1.5),
                                             axpb(axpb(2.0))]
    assert [f(t) for t in line2.split()] == list(POOL_FLOATS[8:])


def test_bss_undefined_and_data_relocs() -> None:
    data = write_relocatable(
        {".text": (b"\xe8\0\0\0\0\xc3", 16, TEXT), ".data": (bytes(8), 8, SHF_ALLOC | SHF_WRITE),
         ".bss": (bytes(64), 32, SHF_ALLOC | SHF_WRITE)},
        [Symbol("f", ".text", 0, 6), Symbol("counter", ".bss", 0, 64, "object", "local"),
         Symbol("fp", ".data", 0, 8, "object", "global")],
        [Reloc(".text", 1, R_X86_64_PLT32, "memset", -4), Reloc(".data", 0, R_X86_64_64, "f")])
    elf = ELFFile(io.BytesIO(data))
    bss = elf.get_section_by_name(".bss")
    assert bss["sh_type"] == "SHT_NOBITS" and bss["sh_size"] == 64
    syms = {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols()}
    assert syms["memset"]["st_shndx"] == "SHN_UNDEF"
    assert syms["memset"]["st_info"]["bind"] == "STB_GLOBAL"
    rela = elf.get_section_by_name(".rela.data")
    (r,) = rela.iter_relocations()
    assert r["r_info_type"] == R_X86_64_64 and r["r_offset"] == 0


def test_bss_object_reads_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "b.o"
    path.write_bytes(write_relocatable(
        {".text": (b"\xc3", 16, TEXT), ".bss": (bytes(64), 32, SHF_ALLOC | SHF_WRITE)},
        [Symbol("f", ".text", 0, 1), Symbol("buf", ".bss", 0, 64, "object")], []))
    res = _run("readelf", "-a", "-W", path)
    assert res.returncode == 0 and res.stderr == "" and "warning" not in res.stdout.lower()
    assert re.search(r"\.bss\s+NOBITS\s+0+\s+\w+\s+000040\s+00\s+WA\s+0\s+0\s+32", res.stdout)
    assert ".rela" not in res.stdout


def test_non_x86_machine_header() -> None:
    data = write_relocatable({".text": (b"\0" * 8, 256, TEXT)}, [Symbol("k", ".text", 0, 8)],
                             [], machine=EM_AMDGPU)
    assert struct.unpack_from("<HH", data, 16) == (1, EM_AMDGPU)


GOOD = {".text": (b"\x90" * 16, 16, TEXT), ".rodata": (bytes(16), 16, RO)}


@pytest.mark.parametrize("sections,symbols,relocs,message", [
    ({".text": (b"", 3, TEXT)}, [], [], "not a power of 2"),
    ({".symtab": (b"", 8, 0)}, [], [], "created by the writer"),
    ({".rela.text": (b"", 8, 0)}, [], [], "created by the writer"),
    ({".text": b"\x90"}, [], [], "expected \\(bytes, align, flags\\)"),
    ({".bss": (b"\1", 8, SHF_ALLOC)}, [], [], "must be zero"),
    (GOOD, [Symbol("f", ".data", 0, 1)], [], "unknown section '.data'"),
    (GOOD, [Symbol("f", ".text", 8, 9)], [], "outside section '.text'"),
    (GOOD, [Symbol("f", ".text", 0, 1), Symbol("f", ".text", 1, 1)], [], "defined twice"),
    (GOOD, [Symbol(".rodata", ".text", 0, 1)], [], "name of a section"),
    (GOOD, [Symbol("f", ".text", 0, 1, kind="tls")], [], "kind 'tls'"),
    (GOOD, [Symbol("f", ".text", 0, 1, binding="extern")], [], "binding 'extern'"),
    (GOOD, [], [Reloc(".text", 14, R_X86_64_PC32, "g")], "outside section"),
    (GOOD, [], [Reloc(".text", 0, 42, "g")], "unsupported x86-64 relocation type 42"),
    (GOOD, [], [Reloc(".data", 0, R_X86_64_PC32, "g")], "unknown section '.data'"),
    (GOOD, [], [Reloc(".text", 0, R_X86_64_PC32, "g"), Reloc(".text", 2, R_X86_64_PC32, "g")],
     "overlap"),
    (GOOD, [Symbol("a\0b", ".text", 0, 1)], [], "NUL byte"),
])
def test_bad_input_is_refused(sections: dict[str, tuple[bytes, int, int]],
                              symbols: list[Symbol], relocs: list[Reloc], message: str) -> None:
    with pytest.raises(ElfWriteError, match=message):
        write_relocatable(sections, symbols, relocs)
