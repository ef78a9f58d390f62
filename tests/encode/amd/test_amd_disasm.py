"""kcc's AMD decoder against llvm-objdump-19, instruction by instruction, on code objects kcc
did not build: every golden case assembled by llvm-mc-19 and linked by ld.lld-19, and the
small LLVM IR kernels of tests/support/amd_llvm_kernels.py compiled by llc-19 (so every instruction
llc emits for them has a row). Skipped, with the reason, where llvm-19 is not installed.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from amd_llvm_kernels import build_hsaco
from kcc.encode.amd.decode import disassemble
from kcc.encode.amd.table import ARCHES
from test_amd_encode import CASES, MATTR

TOOLS = {t: shutil.which(t) for t in ("llvm-mc-19", "ld.lld-19", "llvm-objdump-19", "llc-19")}
pytestmark = pytest.mark.skipif(not all(TOOLS.values()),
                                reason="llvm-19/lld-19 not installed (apt-get install llvm-19 "
                                       "lld-19)")
_LINE = re.compile(r"^\s+(\S.*?)\s*// ([0-9A-F]+):")


def _objdump(arch: str, path: Path) -> list[tuple[int, str]]:
    out = subprocess.run([TOOLS["llvm-objdump-19"], "-d", f"--mattr={MATTR[arch]}", str(path)],
                         check=True, capture_output=True, text=True).stdout
    return [(int(m.group(2), 16), m.group(1)) for m in map(_LINE.match, out.splitlines()) if m]


def _text(path: Path) -> tuple[int, bytes]:
    with path.open("rb") as f:
        sec = ELFFile(f).get_section_by_name(".text")
        return sec["sh_addr"], sec.data()


def _compare(arch: str, path: Path) -> int:
    addr, data = _text(path)
    want = _objdump(arch, path)
    got = [(off, text) for off, _, _, text in disassemble(arch, data, base=addr)]
    bad = [f"{o:#x}: llvm-objdump {w!r}\n{'':8}kcc          {g!r}"
           for (o, w), (_, g) in zip(want, got) if w != g]
    assert not bad, f"{len(bad)} of {len(want)} instructions differ:\n" + "\n".join(bad[:25])
    assert [o for o, _ in got] == [o for o, _ in want], "instruction boundaries differ"
    return len(got)


@pytest.mark.parametrize("arch", ARCHES)
def test_golden_code_object_matches_objdump(arch: str, tmp_path: Path) -> None:
    src = tmp_path / "golden.s"
    src.write_text(".text\n" + "\n".join(c.text for c in CASES[arch]) + "\n")
    obj, so = tmp_path / "golden.o", tmp_path / "golden.so"
    subprocess.run([TOOLS["llvm-mc-19"], "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}",
                    f"-mattr={MATTR[arch]}", "-filetype=obj", str(src), "-o", str(obj)],
                   check=True)
    subprocess.run([TOOLS["ld.lld-19"], "-shared", str(obj), "-o", str(so)], check=True)
    assert _compare(arch, so) >= len(CASES[arch])


@pytest.mark.parametrize("arch", ARCHES)
def test_llc_kernels_match_objdump(arch: str, tmp_path: Path) -> None:
    assert _compare(arch, build_hsaco(arch, tmp_path)) > 20
