"""AMD branches farther than a SOPP offset reaches (issue 20: nothing in the AMD path refuses a
valid kernel for its size). A branch's 16-bit offset reaches 128 KiB; a longer loop body or
forward jump once stopped the encoder ("outside [-32768, 32767]"). `relax_branches` routes
them through inverted conditions and islands; the code runs in kcc's emulator and llvm-mc-19
assembles the same listing."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from amd_util import needs_llvm19
from kcc.encode.amd import parse_inst
from kcc.encode.amd.operands import Inst
from kcc.ir.mir import Label
from kcc.isel.amd.lower import listing
from kcc.isel.amd.regs import ARCHES
from kcc.targets.amd.target import machine_code, relax_branches
from kcc.targets.amd.emu.core import run_hsaco
from kcc.targets.amd.hsaco import AmdKernel, KernelArg, write_hsaco

NOPS = 33_000          # 132 000 bytes of s_nop: past the 131 068 a branch reaches


def _program(arch: str) -> list:
    """out[0] = 3 after a loop of three iterations whose body is NOPS s_nops (a far backward
    conditional branch), then a far forward s_branch over NOPS more."""
    gfx9 = arch == "gfx942"
    text = [("s_load_dwordx2 s[2:3], s[0:1], 0x0" if gfx9 else "s_load_b64 s[2:3], s[0:1], 0x0"),
            "s_mov_b32 s4, 0", "LOOP", "s_add_u32 s4, s4, 1", *["s_nop 0"] * NOPS,
            "s_cmp_lt_u32 s4, 3", "BRANCH s_cbranch_scc1 loop", "BRANCH s_branch end",
            *["s_nop 0"] * NOPS, "s_mov_b32 s4, 99", "END", "WAIT",
            "v_mov_b32 v1, s4", "v_mov_b32 v0, 0",
            ("global_store_dword v0, v1, s[2:3]" if gfx9 else "global_store_b32 v0, v1, s[2:3]"),
            "s_endpgm"]
    items: list = []
    for line in text:
        if line in ("LOOP", "END"):
            items.append(Label(line.lower()))
        elif line == "WAIT":                      # as kcc.isel.amd.lower.insert_waits makes it
            items.append(Inst("s_waitcnt", (), (("lgkmcnt", 0),)))
        elif line.startswith("BRANCH"):
            _, name, target = line.split()
            items.append(Inst(name, (), (("target", target),)))
        else:
            items.append(parse_inst(arch, line))
    return items


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_far_branches_are_relaxed_and_run(arch: str) -> None:
    items = relax_branches(_program(arch), arch)
    names = [it.name for it in items if not isinstance(it, Label)]
    assert "s_cbranch_scc0" in names               # the far conditional, inverted
    code = SimpleNamespace(arch=ARCHES[arch], items=items)
    data = machine_code(code)                     # every offset fits (it raised before)
    k = AmdKernel("far", data, next_free_vgpr=2, next_free_sgpr=5,
                  args=(KernelArg("out", 0, 8),), kernarg_size=8, uses_vcc=False,
                  max_flat_workgroup_size=1, asm=tuple(listing(items)))
    out = np.zeros(1, np.uint32)
    run_hsaco(write_hsaco([k], arch), "far", [out], 1, 1)
    assert out[0] == 3


def test_near_branches_are_left_alone() -> None:
    items = _program("gfx1100")[:10] + _program("gfx1100")[-8:]
    assert relax_branches(items, "gfx1100") is items


@needs_llvm19
@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_relaxed_listing_assembles_with_llvm_mc(arch: str) -> None:
    text = "\n".join(listing(relax_branches(_program(arch), arch))) + "\n"
    r = subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}",
                        "-filetype=obj", "-o", "/dev/null"], input=text, capture_output=True,
                       text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr[:2000]


def test_an_unrelaxed_far_branch_is_never_encoded_wrapped() -> None:
    """The assembler's parser wraps an offset to 16 bits (-33010 became 32526, a silent jump
    elsewhere); the layout refuses one out of reach instead."""
    code = SimpleNamespace(arch=ARCHES["gfx942"], items=_program("gfx942"))
    with pytest.raises(ValueError, match="out of reach"):
        machine_code(code)
