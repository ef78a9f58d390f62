"""Vector bool ops on x86 (kcc/isel/x86/vec.py bool_vec): AND/OR/XOR (and NOT as XOR with
true) of lane masks as single VANDPS/VORPS/VXORPS, masks resized between lane widths by
VPMOVSX / VPACKSS / SHUFPS, against the interpreter on x86-64-v3 and (where the CPU has
AVX-512) x86-64-v4."""

from __future__ import annotations

import io
from pathlib import Path

import capstone
import pytest
from elftools.elf.elffile import ELFFile

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86
from x86_util import (
    ARCHS, assert_same, check_file, compile_and_run, random_inputs, reference)
from paths import DATA

KERNELS = DATA / "kernels"
FILES = ["vector_bool_ops.uop", "vector_bool_ops8.uop", "vector_mask_and.uop"]


def _mnemonics(path: Path, arch: str) -> list[str]:
    obj, _ = compile_x86([parse(path.read_text(), str(path))], arch)
    code = ELFFile(io.BytesIO(obj)).get_section_by_name(".text").data()
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return [i.mnemonic for i in md.disasm(code, 0)]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", FILES)
def test_bool_vector_kernels_match_interpreter(name: str, arch: str) -> None:
    for seed in (0, 1, 2):
        sink = parse((KERNELS / name).read_text(), name)
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("name", FILES)
def test_bool_ops_are_vector_ops_on_masks(name: str) -> None:
    ms = _mnemonics(KERNELS / name, "x86-64-v3")
    assert {"vandps", "vorps", "vxorps"} & set(ms), ms
    # no mask lane is taken apart and rebuilt (vpextr* + neg + vpinsr* per lane), and the
    # constant all-true mask of the NOT is one load, not lanes built from 0/1 bools; the one
    # vpextr left is vector_bool_ops reading lane 2 of its AND as a bool
    assert sum(m.startswith("vpextr") for m in ms) == (name == "vector_bool_ops.uop"), ms
    assert not any(m.startswith("vpinsr") or m == "neg" for m in ms), ms


def test_check_file_runs_the_default_arch() -> None:
    check_file(KERNELS / "vector_bool_ops.uop", 3)
