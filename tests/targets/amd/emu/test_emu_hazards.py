"""The emulator's gfx942 store-data hazard check (kcc/targets/amd/emu/core.py): a VALU write
of the data VGPRs of the >8-byte VMEM store just before it is an EmuError on gfx942 (the
store may not have read them yet on hardware), fine with a wait state between and on
gfx1100."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.encode.amd.operands import SGPR, VGPR, Imm, Inst
from kcc.targets.amd.emu.core import WAVE, EmuError, Memory, Wave, Workgroup, execute


def _run(arch: str, *insts: Inst) -> Wave:
    mem = Memory()
    out = np.zeros(4 * WAVE[arch], np.uint32)
    addr = mem.alloc(out)
    w = Wave(arch, 16, WAVE[arch])
    w.set_exec((1 << WAVE[arch]) - 1)
    w.s[2], w.s[3] = addr & 0xFFFFFFFF, addr >> 32
    w.v[1] = np.arange(WAVE[arch]) * 16
    wg = Workgroup(np.zeros(16, np.uint8), mem)
    for inst in insts:
        w.pc, w.next_pc = 0x1000, 0x1008
        execute(w, inst, wg)
    return w


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_valu_write_of_wide_store_data_right_after_it(arch: str) -> None:
    name = "global_store_dwordx4" if arch == "gfx942" else "global_store_b128"
    store = Inst(name, (VGPR(1), VGPR(4, 4), SGPR(2, 2)))
    clobber = Inst("v_mov_b32", (VGPR(7), Imm(1)))
    if arch == "gfx942":
        with pytest.raises(EmuError, match="gfx942 hazard"):
            _run(arch, store, clobber)
    else:
        _run(arch, store, clobber)
    _run(arch, store, Inst("s_nop", (Imm(0),)), clobber)           # a wait state between
    _run(arch, store, Inst("v_mov_b32", (VGPR(8), Imm(1))))       # another register
