"""VGPR tuples built from 32-bit values (a vector store's data, a 64-bit pair, a 64-bit
multiply's result) under spilling, on gfx1100 and gfx942 (kcc/isel/amd/base.py ``Base.pack``).

A regression: these were one multi-register pseudo instruction (``.pack``, ``.mul64``) whose
expansion writes the tuple's first registers before it has read every source, kept apart from
its sources by a ``.keep`` after it. A spilled source is filled into a fresh temporary just
before its use, and that temporary's life ends there, so the allocator could give its register
to the tuple: with few VGPRs, 95 to 379 of the outputs of these kernels were wrong in the
emulator. Now the tuple is written one register at a time by real instructions (``DPart``: the
tuple is DEF | USE, so live together with, and apart from, every source), and the allocation
checker rejects an instruction whose expansion writes before it reads (the target's
``early_clobber``) when a result shares a register with a source.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kcc.ir.mir import Inst, Kind, MFunction, PReg, RegOp, Role, VReg
from kcc.isel.amd import regs
from kcc.regalloc import CheckError, check_allocation

ARCHS = ("gfx1100", "gfx942")


@pytest.mark.parametrize("arch", ARCHS)
def test_checker_rejects_a_result_over_a_source_of_an_early_clobber(arch: str) -> None:
    """The old packing's failure, by hand: ``.pack`` (an expansion that writes d[0] before it
    reads its second source) with its second source filled into d[0]'s register. The checker
    follows values only, so it saw the right values read; the target's ``early_clobber``
    makes it reject the overlap."""
    a, b, t = VReg(0, "v"), VReg(1, "v"), VReg(2, "v2")
    before = MFunction("k", insts=[
        Inst("v_mov_b32", [RegOp(a, Role.DEF)], arg=((0, 1), ())),
        Inst("v_mov_b32", [RegOp(b, Role.DEF)], arg=((0, 2), ())),
        Inst(".pack", [RegOp(t, Role.DEF), RegOp(a, Role.USE), RegOp(b, Role.USE)],
             arg=((0, 1, 2), ())),
        Inst(".keep", [RegOp(t, Role.USE)], arg=((0,), ()))])
    v = regs.preg("v", 0, 1)
    info = regs.AmdRegInfo(regs.ARCHES[arch], "k")

    def allocated(a_reg: PReg, b_reg: PReg) -> MFunction:
        ts = regs.preg("v", 4, 2)
        return replace(before, insts=[
            Inst("v_mov_b32", [RegOp(a_reg, Role.DEF)], arg=((0, 1), ())),
            Inst("v_mov_b32", [RegOp(b_reg, Role.DEF)], arg=((0, 2), ())),
            Inst(".pack", [RegOp(ts, Role.DEF), RegOp(a_reg, Role.USE),
                           RegOp(b_reg, Role.USE)], arg=((0, 1, 2), ())),
            Inst(".keep", [RegOp(ts, Role.USE)], arg=((0,), ()))])
    check_allocation(before, allocated(v, regs.preg("v", 1, 1)), info)
    with pytest.raises(CheckError, match="reads a source"):
        check_allocation(before, allocated(v, regs.preg("v", 4, 1)), info)
    assert info.early_clobber(Inst(".pack", [])) and not info.early_clobber(
        Inst(".add64", [])) and not info.early_clobber(Inst("v_mov_b32", []))
    assert Kind.OP is before.insts[0].kind
