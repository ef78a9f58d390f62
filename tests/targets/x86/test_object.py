"""The x86 object as a real object: linked by the system C compiler into a program that calls
three kernels (a float scalar argument, a gidx worker argument), read by readelf/objdump, and
disassembled by `kcc disasm` the same way objdump does."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.x86.target import c_header, compile_x86, disasm_object
from x86_util import REPO, SHARED

SAXPY = (REPO / "examples" / "saxpy.uop").read_text()

C_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "k.h"

int main(void) {
    float y1[1024], x1[1024];
    for (int i = 0; i < 1024; i++) { x1[i] = (float)i * 0.5f; y1[i] = 1.0f - (float)i; }
    saxpy(y1, x1, 2.5f);
    double y[256], x[256];
    for (int i = 0; i < 256; i++) x[i] = (double)i - 100.0;
    for (int g = 0; g < 8; g++) scale_workers(y, x, 2.5, g);
    int32_t o[10], xs[7];
    for (int i = 0; i < 7; i++) xs[i] = 100 + i;
    pad3(o, xs);
    double s1 = 0, s2 = 0; long s3 = 0;
    for (int i = 0; i < 1024; i++) s1 += y1[i];
    for (int i = 0; i < 256; i++) s2 += y[i];
    for (int i = 0; i < 10; i++) s3 += o[i] * (i + 1);
    printf("%.6f %.6f %ld\n", s1, s2, s3);
    return 0;
}
"""


@pytest.fixture(scope="module")
def three_kernels(tmp_path_factory) -> tuple[Path, list]:
    d = tmp_path_factory.mktemp("link")
    sinks = [parse(SAXPY, "saxpy.uop"),
             parse((SHARED / "workers_scale.uop").read_text(), "workers_scale.uop"),
             parse((SHARED / "pad_gated_load.uop").read_text(), "pad_gated_load.uop")]
    obj, descs = compile_x86(sinks)
    (d / "k.o").write_bytes(obj)
    (d / "k.h").write_text(c_header(descs))
    return d, sinks


def test_c_program_calls_three_kernels(three_kernels) -> None:
    d, sinks = three_kernels
    assert "void saxpy(float *arg0, const float *arg1, float arg2);" in (d / "k.h").read_text()
    (d / "main.c").write_text(C_MAIN)
    exe = d / "main"
    r = subprocess.run(["cc", "-O0", "-Wall", "-Werror", str(d / "main.c"), str(d / "k.o"),
                        "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    # expected values computed here with numpy, independently of kcc
    x1 = np.arange(1024, dtype=np.float32) * np.float32(0.5)
    y1 = np.float32(1.0) - np.arange(1024, dtype=np.float32)
    want_saxpy = np.float32(2.5) * x1 + y1          # MUL then ADD, each rounded to float32
    x = np.arange(256, dtype=np.float64) - 100.0
    xs = np.arange(100, 107)
    o = np.array([0, 0, 0] + list(xs), dtype=np.int64)
    assert float(got[0]) == pytest.approx(float(want_saxpy.astype(np.float64).sum()), abs=1e-4)
    assert float(got[1]) == pytest.approx(float((x * 2.5).sum()), abs=1e-6)
    assert int(got[2]) == int((o * np.arange(1, 11)).sum())


def test_readelf_reads_the_object(three_kernels) -> None:
    d, _ = three_kernels
    r = subprocess.run(["readelf", "-a", "-W", str(d / "k.o")], capture_output=True, text=True)
    assert r.returncode == 0 and "Warning" not in r.stderr and not r.stderr.strip()
    syms = re.findall(r"FUNC\s+GLOBAL\s+DEFAULT\s+\d+\s+(\w+)", r.stdout)
    assert sorted(syms) == ["pad3", "saxpy", "scale_workers"]
    assert ".note.GNU-stack" in r.stdout


def _objdump(path: Path) -> list[tuple[int, list[str], str]]:
    """(address, bytes, mnemonic) of every instruction objdump decodes, int3 padding dropped."""
    r = subprocess.run(["objdump", "-d", "-M", "intel", "--insn-width=16", str(path)],
                       capture_output=True, text=True, check=True)
    out = []
    for m in re.finditer(r"^\s+([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*\t(?:cs )?(\S+)", r.stdout,
                         re.M):
        if m.group(3) != "int3":
            code = m.group(2).split()
            # loop-alignment padding: binutils spells 66 90 "xchg ax,ax", capstone "nop"
            mnem = "nop" if code == ["66", "90"] else m.group(3)
            out.append((int(m.group(1), 16), code, mnem))
    return out


def _kcc_disasm(data: bytes) -> list[tuple[int, list[str], str]]:
    out = []
    for line in disasm_object(data).splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S+)", line + " ")
        if m:
            out.append((int(m.group(1), 16), m.group(2).split(), m.group(3)))
    return out


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump is not installed")
def test_disasm_matches_objdump(three_kernels) -> None:
    """kcc disasm and objdump -d agree instruction for instruction: address, bytes, mnemonic."""
    d, _ = three_kernels
    ours = _kcc_disasm((d / "k.o").read_bytes())
    theirs = _objdump(d / "k.o")
    assert len(ours) > 30
    assert [(a, b) for a, b, _ in ours] == [(a, b) for a, b, _ in theirs]
    # mnemonics: capstone and binutils spell a few differently (the NOP padding: see _objdump)
    assert [m for *_, m in ours] == [m for *_, m in theirs]


def test_disasm_refuses_garbage() -> None:
    with pytest.raises(ValueError, match="ELF"):
        disasm_object(b"\x7fELF" + b"\x00" * 10)


def _innermost_loop_heads(code: bytes) -> list[int]:
    """The targets of the backward branches whose span holds no other backward branch."""
    from capstone import CS_ARCH_X86, CS_MODE_64, Cs
    loops = []
    for i in Cs(CS_ARCH_X86, CS_MODE_64).disasm(code, 0):
        if i.mnemonic.startswith("j") and int(i.op_str, 16) <= i.address:
            loops.append((int(i.op_str, 16), i.address))
    return [h for h, e in loops if not any(h < h2 <= e2 < e for h2, e2 in loops)]


def test_innermost_loop_heads_are_32_byte_aligned() -> None:
    """Every innermost loop starts at a multiple of 32 bytes: in the object (functions placed
    at multiples of 32, .text aligned to 32) and where the loader maps it. Three kernels in one
    object, so the later functions' placement counts too."""
    from elftools.elf.elffile import ELFFile
    import io

    from kcc.targets.x86.objload import LoadedObject
    names = ["softmax_row", "matmul_tiled", "saxpy"]
    sinks = [parse((REPO / "examples" / f"{n}.uop").read_text(), f"{n}.uop") for n in names]
    obj, descs = compile_x86(sinks)
    elf = ELFFile(io.BytesIO(obj))
    text = elf.get_section_by_name(".text")
    assert text["sh_addralign"] >= 32
    syms = {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC"}
    data = text.data()
    heads = 0
    with LoadedObject(obj) as lo:
        for d in descs:
            s = syms[d.name]
            start = s["st_value"]
            assert start % 32 == 0 and lo.address(d.name) % 32 == 0, d.name
            loops = _innermost_loop_heads(data[start:start + s["st_size"]])
            assert loops, f"{d.name} has a loop"
            assert all(h % 32 == 0 for h in loops), (d.name, [hex(h) for h in loops])
            heads += len(loops)
    assert heads >= 3


def test_zmm_constants_are_64_byte_aligned() -> None:
    """A 64-byte constant (a zmm the selector reads with VMOVAPS, which faults on a 64-byte
    operand that is not 64-byte aligned) starts at a multiple of 64 in .rodata, and the
    section is aligned to 64: tinygrad's randn kernels (Box-Muller, test_nn's batchnorm3d
    E_2_4_27) segfaulted at x86-64-v4 with it at offset 32."""
    from kcc.isel.x86.base import ConstPool
    from kcc.targets.x86.object import rodata
    pool = ConstPool()
    pool.label(b"\x01" * 4)
    pool.label(b"\x02" * 32)
    pool.label(b"\x03" * 64)
    pool.label(b"\x04" * 16)
    pool.label(b"\x05" * 64)
    data, offsets, align = rodata(pool)
    assert align == 64
    for raw, label in pool.items.items():
        assert offsets[label] % min(len(raw), 64) == 0, (label, offsets[label])
        assert data[offsets[label]:offsets[label] + len(raw)] == raw


def test_randn_kernel_with_zmm_constants_runs_on_v4() -> None:
    """The kernel itself, compiled and run (its zmm constants read with VMOVAPS)."""
    from x86_util import assert_same, compile_and_run, random_inputs, reference

    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    src = Path(__file__).resolve().parents[2] / "data" / "kernels" / "randn_box_muller.uop"
    sink = parse(src.read_text())
    args = random_inputs(sink, 1)
    args[1][:] = np.random.default_rng(0).random(args[1].shape, np.float32)
    args[2][:] = np.random.default_rng(1).random(args[2].shape, np.float32)
    args[3][:] = np.random.default_rng(2).random(args[3].shape, np.float32)
    assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))
