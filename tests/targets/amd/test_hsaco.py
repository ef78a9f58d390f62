"""HSACO code objects (code object v5) checked with LLVM 19's tools.

Machine code comes from llvm-mc-19 at test time, so the bytes are not kcc's. The expected
metadata and descriptor values are written out here from the kernels' parameters and the
rules of AMDGPUUsage ("Kernel Descriptor", "Code Object V5 Metadata").
"""

from __future__ import annotations

import dataclasses
import re
import struct
import subprocess
from pathlib import Path

import msgpack
import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from kcc.targets.amd.asm import write_asm
from kcc.targets.elf import ElfWriteError
from kcc.targets.amd.hsaco import AmdKernel, KernelArg, write_hsaco
from amd_util import ARCHS, llvm_link, mc_bytes, needs_decoder, needs_llvm19, parse_yaml

# Two hand-written kernels per arch: c[i] = a[i] + b[i] (one workgroup) and x[i] *= n in
# place, with a dispatch pointer before the kernarg pointer (so kernargs are at s[2:3]), an
# LDS allocation and a by-value argument named `n` (a YAML 1.1 bool word).
ASM = {
    "gfx1100": (
        ("s_load_b128 s[4:7], s[0:1], 0x0", "s_load_b64 s[8:9], s[0:1], 0x10",
         "v_lshlrev_b32 v0, 2, v0", "s_waitcnt lgkmcnt(0)",
         "global_load_b32 v1, v0, s[4:5]", "global_load_b32 v2, v0, s[6:7]",
         "s_waitcnt vmcnt(0)", "v_add_f32 v1, v1, v2", "global_store_b32 v0, v1, s[8:9]",
         "s_endpgm"),
        ("s_load_b64 s[4:5], s[2:3], 0x0", "s_load_b32 s6, s[2:3], 0x8",
         "v_and_b32 v0, 0x3ff, v0", "v_lshlrev_b32 v0, 2, v0", "s_waitcnt lgkmcnt(0)",
         "global_load_b32 v1, v0, s[4:5]", "s_waitcnt vmcnt(0)", "v_mul_f32 v1, s6, v1",
         "v_add_co_u32 v3, vcc_lo, v0, 4", "global_store_b32 v0, v1, s[4:5]", "s_endpgm"),
    ),
    "gfx942": (
        ("s_load_dwordx4 s[4:7], s[0:1], 0x0", "s_load_dwordx2 s[8:9], s[0:1], 0x10",
         "v_lshlrev_b32 v0, 2, v0", "s_waitcnt lgkmcnt(0)",
         "global_load_dword v1, v0, s[4:5]", "global_load_dword v2, v0, s[6:7]",
         "s_waitcnt vmcnt(0)", "v_add_f32 v1, v1, v2", "global_store_dword v0, v1, s[8:9]",
         "s_endpgm"),
        ("s_load_dwordx2 s[4:5], s[2:3], 0x0", "s_load_dword s6, s[2:3], 0x8",
         "v_and_b32 v0, 0x3ff, v0", "v_lshlrev_b32 v0, 2, v0", "s_waitcnt lgkmcnt(0)",
         "global_load_dword v1, v0, s[4:5]", "s_waitcnt vmcnt(0)", "v_mul_f32 v1, s6, v1",
         "v_add_co_u32 v3, vcc, v0, 4", "global_store_dword v0, v1, s[4:5]", "s_endpgm"),
    ),
}


def kernels(arch: str) -> list[AmdKernel]:
    add, scale = ASM[arch]
    ptr = lambda name, off: KernelArg(name, off, 8)  # noqa: E731
    return [
        AmdKernel("vadd", mc_bytes(arch, add), next_free_vgpr=3, next_free_sgpr=10,
                  args=(ptr("a", 0), ptr("b", 8), ptr("c", 16)), kernarg_size=24,
                  uses_vcc=False, max_flat_workgroup_size=256, asm=add),
        AmdKernel("scale", mc_bytes(arch, scale), next_free_vgpr=37, next_free_sgpr=21,
                  args=(ptr("x", 0), KernelArg("n", 8, 4, "by_value", None)),
                  kernarg_size=16, group_segment_size=1024, dispatch_ptr=True,
                  workgroup_ids=(True, True, False), workitem_ids=1, asm=scale),
    ]


def _ceil(n: int, g: int) -> int:
    return -(-max(n, 1) // g) * g


@pytest.fixture(scope="module", params=ARCHS)
def built(request, tmp_path_factory) -> tuple[str, Path, list[AmdKernel]]:
    arch = request.param
    ks = kernels(arch)
    path = tmp_path_factory.mktemp(arch) / "k.hsaco"
    path.write_bytes(write_hsaco(ks, arch))
    return arch, path, ks


def _tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=True)


@needs_llvm19
def test_readelf_reads_without_warning(built):
    arch, path, ks = built
    res = _tool("llvm-readelf-19", "-a", str(path))
    text = res.stdout + res.stderr
    assert "warning" not in text.lower(), text
    assert "OS/ABI:                            AMDGPU - HSA" in text
    assert re.search(r"ABI Version:\s+3\n", text)
    assert "DYN (Shared object file)" in text and "EM_AMDGPU" in text
    flags = {"gfx1100": "0x41, gfx1100", "gfx942": "0x54C, gfx942, xnack, sramecc"}[arch]
    assert f"Flags:                             {flags}" in text
    for seg in ("PHDR", "LOAD", "DYNAMIC", "NOTE"):
        assert re.search(rf"^\s+{seg}\s", text, re.M), seg
    loads = re.findall(r"^\s+LOAD\s.*\s(R|R E|RW)\s+0x1000$", text, re.M)
    assert loads == ["R", "R E", "RW"]
    for k in ks:
        assert re.search(rf"FUNC\s+GLOBAL PROTECTED\s+\d+ {k.name}$", text, re.M)
        assert re.search(rf" 64 OBJECT\s+GLOBAL DEFAULT\s+\d+ {k.name}\.kd$", text, re.M)


@needs_llvm19
def test_sections_and_alignment(built):
    arch, path, ks = built
    elf = ELFFile(path.open("rb"))
    names = [s.name for s in elf.iter_sections()]
    for want in (".note", ".dynsym", ".hash", ".dynstr", ".rodata", ".text", ".dynamic",
                 ".symtab", ".strtab", ".shstrtab"):
        assert want in names
    text = elf.get_section_by_name(".text")
    assert text["sh_addr"] % 256 == 0 and text["sh_addralign"] == 256
    symtab = elf.get_section_by_name(".symtab")
    rodata = elf.get_section_by_name(".rodata")
    for k in ks:
        fn = symtab.get_symbol_by_name(k.name)[0]
        kd = symtab.get_symbol_by_name(k.name + ".kd")[0]
        assert fn["st_value"] % 256 == 0 and kd["st_value"] % 64 == 0
        off = fn["st_value"] - text["sh_addr"]
        assert text.data()[off:off + len(k.code)] == k.code
        kd_bytes = rodata.data()[kd["st_value"] - rodata["sh_addr"]:][:64]
        entry = struct.unpack_from("<q", kd_bytes, 16)[0]
        assert kd["st_value"] + entry == fn["st_value"]
    # LLVM's tail: after the last kernel, fill words to the arch's alignment plus a block.
    fill = {"gfx1100": (0xBF9F0000, 128, 96), "gfx942": (0xBF810000, 64, 256)}[arch]
    last = symtab.get_symbol_by_name(ks[-1].name)[0]
    end = last["st_value"] - text["sh_addr"] + len(ks[-1].code)
    tail = text.data()[end:]
    assert len(tail) == -end % fill[1] + 4 * fill[2]
    assert set(struct.unpack(f"<{len(tail) // 4}I", tail)) == {fill[0]}


@needs_llvm19
def test_notes_decode_the_metadata(built):
    arch, path, ks = built
    out = _tool("llvm-readobj-19", "--notes", str(path)).stdout
    assert "NT_AMDGPU_METADATA" in out
    yaml = out[out.index("---"):out.index("...") + 3]
    meta = parse_yaml(yaml)
    assert meta["amdhsa.version"] == [1, 2]
    assert meta["amdhsa.target"] == f"amdgcn-amd-amdhsa--{arch}"
    got = {k[".name"]: k for k in meta["amdhsa.kernels"]}
    wave = {"gfx1100": 32, "gfx942": 64}[arch]
    # sgpr_count: next free SGPR plus VCC (gfx11, when used) or the six gfx940 reserves.
    extra = {"gfx1100": (0, 2), "gfx942": (6, 6)}[arch]
    vadd, scale = got["vadd"], got["scale"]
    assert vadd[".args"] == [
        {".address_space": "global", ".name": n, ".offset": o, ".size": 8,
         ".value_kind": "global_buffer"} for n, o in (("a", 0), ("b", 8), ("c", 16))]
    assert scale[".args"][1] == {".name": "n", ".offset": 8, ".size": 4,
                                 ".value_kind": "by_value"}
    for k, ks_, ka, grp, sg, vg, mfw in ((vadd, "vadd.kd", 24, 0, 10 + extra[0], 3, 256),
                                         (scale, "scale.kd", 16, 1024, 21 + extra[1], 37,
                                          1024)):
        assert k[".symbol"] == ks_
        assert k[".kernarg_segment_size"] == ka and k[".kernarg_segment_align"] == 8
        assert k[".group_segment_fixed_size"] == grp
        assert k[".private_segment_fixed_size"] == 0
        assert k[".wavefront_size"] == wave
        assert k[".sgpr_count"] == sg and k[".vgpr_count"] == vg
        assert k[".max_flat_workgroup_size"] == mfw


@needs_llvm19
def test_objdump_disassembles_text(built):
    arch, path, ks = built
    out = _tool("llvm-objdump-19", "-d", f"--mcpu={arch}", str(path)).stdout
    for k in ks:
        body = out[out.index(f"<{k.name}>:"):].split("\n\n")[0].splitlines()[1:]
        mnems = [ln.split()[0] for ln in body][:len(k.asm)]
        assert [m.replace("_e32", "").replace("_e64", "") for m in mnems] == \
            [a.split()[0] for a in k.asm]
        words = "".join(w for ln in body[:len(k.asm)] for w in ln.split(":")[-1].split())
        want = "".join(f"{w:08X}" for w in struct.unpack(f"<{len(k.code) // 4}I", k.code))
        assert words == want


def _kd_values(path: Path, arch: str, name: str) -> dict[str, int]:
    out = _tool("llvm-objdump-19", "-D", f"--mcpu={arch}", f"--disassemble-symbols={name}.kd",
                str(path)).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\.amdhsa_(\w+) (\d+)", out)}


@needs_llvm19
def test_descriptor_decodes_to_the_intended_values(built):
    arch, path, ks = built
    for k in ks:
        got = _kd_values(path, arch, k.name)
        want = {
            "group_segment_fixed_size": k.group_segment_size,
            "private_segment_fixed_size": 0, "kernarg_size": k.kernarg_size,
            "user_sgpr_dispatch_ptr": int(k.dispatch_ptr), "user_sgpr_queue_ptr": 0,
            "user_sgpr_kernarg_segment_ptr": 1, "user_sgpr_dispatch_id": 0,
            "system_sgpr_workgroup_id_x": 1,
            "system_sgpr_workgroup_id_y": int(k.workgroup_ids[1]),
            "system_sgpr_workgroup_id_z": 0, "system_vgpr_workitem_id": k.workitem_ids,
            "enable_private_segment": 0, "float_denorm_mode_32": 3,
            "float_denorm_mode_16_64": 3, "dx10_clamp": 1, "ieee_mode": 1,
        }
        if arch == "gfx1100":
            # Wave32: VGPRs in granules of 8; the SGPR granule field is reserved (0).
            want |= {"next_free_vgpr": _ceil(k.next_free_vgpr, 8), "wavefront_size32": 1,
                     "workgroup_processor_mode": 1, "memory_ordered": 1}
        else:
            acc = _ceil(k.next_free_vgpr, 4)
            want |= {"next_free_vgpr": _ceil(acc, 8), "accum_offset": acc,
                     "next_free_sgpr": _ceil(k.next_free_sgpr + 6, 8), "tg_split": 0}
        assert {key: got.get(key) for key in want} == want


@needs_llvm19
def test_independent_build_from_assembly(built, tmp_path):
    """kcc's assembly, built by llvm-mc-19 + ld.lld-19, gives the same .text, descriptors
    (but for the layout-dependent entry offset) and metadata as kcc's own HSACO."""
    arch, path, ks = built
    theirs = llvm_link(tmp_path, arch, write_asm(ks, arch))

    def parts(data: bytes) -> tuple[bytes, dict, dict]:
        import io
        elf = ELFFile(io.BytesIO(data))
        text, rodata = elf.get_section_by_name(".text"), elf.get_section_by_name(".rodata")
        symtab = elf.get_section_by_name(".symtab")
        kds = {}
        for k in ks:
            kd, fn = (symtab.get_symbol_by_name(n)[0] for n in (k.name + ".kd", k.name))
            raw = rodata.data()[kd["st_value"] - rodata["sh_addr"]:][:64]
            assert kd["st_value"] + struct.unpack_from("<q", raw, 16)[0] == fn["st_value"]
            kds[k.name] = raw[:16] + raw[24:]
        note = elf.get_section_by_name(".note").data()
        namesz, descsz, ntype = struct.unpack_from("<III", note)
        assert (namesz, ntype) == (7, 32) and note[12:19] == b"AMDGPU\0"
        meta = msgpack.unpackb(note[20:20 + descsz])
        return text.data(), kds, meta

    mine_text, mine_kds, mine_meta = parts(path.read_bytes())
    their_text, their_kds, their_meta = parts(theirs)
    assert mine_text == their_text
    assert mine_kds == their_kds
    assert mine_meta == their_meta


@needs_llvm19
@needs_llvm19
@needs_decoder
@pytest.mark.parametrize("arch", ARCHS)
def test_hand_built_kernels_run_in_the_emulator(arch):
    """kcc's own HSACO, read back and run by the emulator (decoding kcc's .text)."""
    from kcc.targets.amd.emu.core import run_hsaco
    obj = write_hsaco(kernels(arch), arch)
    a = np.arange(64, dtype=np.float32)
    b = np.full(64, 0.25, np.float32)
    c = np.zeros(64, np.float32)
    run_hsaco(obj, "vadd", [a, b, c], grid=1, block=64)
    np.testing.assert_array_equal(c, a + b)
    x = np.linspace(-2, 2, 128, dtype=np.float32)
    want = x * np.float32(2.5)
    run_hsaco(obj, "scale", [x, np.float32(2.5)], grid=1, block=(128, 1))
    np.testing.assert_array_equal(x, want)


def test_same_input_same_bytes():
    for arch in ARCHS:
        assert write_hsaco(kernels(arch), arch) == write_hsaco(kernels(arch), arch)


def _one(**kw) -> AmdKernel:
    base = dict(name="k", code=b"\0\0\xb0\xbf", next_free_vgpr=1, next_free_sgpr=2)
    return AmdKernel(**(base | kw))


@pytest.mark.parametrize("ks,arch,msg", [
    ([_one(), _one()], "gfx1100", "defined twice"),
    ([_one()], "gfx90a", "unknown AMD arch"),
    ([_one(code=b"\0\0\0")], "gfx942", "whole number of dwords"),
    ([_one(kernarg_size=12)], "gfx942", "not a multiple of its alignment"),
    ([_one(args=(KernelArg("a", 8, 8),), kernarg_size=8)], "gfx1100", "outside"),
    ([], "gfx1100", "at least one kernel"),
])
def test_bad_input_is_refused(ks, arch, msg):
    with pytest.raises(ElfWriteError, match=msg):
        write_hsaco(ks, arch)


def test_asm_writer_needs_instruction_text():
    with pytest.raises(ValueError, match="no instruction text"):
        write_asm([dataclasses.replace(_one(), asm=())], "gfx1100")
