"""Pieces of AMD WMMA selection (kcc/isel/amd/matrix.py) the end-to-end tests
(tests/targets/amd/test_amd_wmma.py) do not reach: a spilled fragment tuple (v8, 32 bytes)
moves as two 16-byte scratch accesses that encode; the v8 class is even-aligned; the
instruction table matches kcc.ir.wmma's AMD forms and the encoder's rows; each family's
TargetDesc selects its own forms (kcc/passes/wmma.py expands the others)."""

from __future__ import annotations

import pytest

from kcc.encode.amd import encode
from kcc.encode.amd.operands import VGPR
from kcc.encode.amd.table import by_name
from kcc.ir import wmma
from kcc.ir.mir import Inst, Kind, PReg, RegOp, Role
from kcc.isel.amd.lower import Lowering
from kcc.isel.amd.matrix import instructions
from kcc.isel.amd.regs import ARCHES, AmdRegInfo


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
@pytest.mark.parametrize("op", [".spill_v", ".fill_v"])
def test_an_octet_spills_as_two_quads(arch: str, op: str) -> None:
    reg = PReg("v[10:17]", "v8")
    role = Role.USE if op == ".spill_v" else Role.DEF
    inst = Inst(op, [RegOp(reg, role)], kind=Kind.SPILL if op == ".spill_v" else Kind.FILL,
                arg=(32, 0), slot=64)
    low = Lowering(ARCHES[arch])
    low.slot(inst)
    mem = [i for i in low.out if i.name.startswith("scratch_")]
    assert [(i.mod("offset"), next(o for o in i.ops if isinstance(o, VGPR))) for i in mem] == \
        [(64, VGPR(10, 4)), (80, VGPR(14, 4))]
    for i in low.out:
        encode(arch, i)


def test_the_octet_class_is_even_aligned() -> None:
    info = AmdRegInfo(ARCHES["gfx942"], "k")
    regs = info.classes["v8"]
    assert regs[0].name == "v[0:7]" and regs[1].name == "v[2:9]"
    assert regs[-1].name == "v[248:255]"
    assert info.spill_slot_size("v8") == 32


def test_every_amd_form_has_an_instruction_and_a_row() -> None:
    fams = {"rdna3": "gfx1100", "cdna3": "gfx942"}
    amd = {s.name for s in wmma.SHAPES if s.device == "AMD"}
    assert amd == set(instructions())
    for name, fam in instructions().items():
        assert name in by_name(fams[fam])


def test_each_family_selects_its_own_forms_and_passes_expand_the_rest() -> None:
    from kcc.targets.amd.target import AmdTarget
    for arch, threads in (("gfx1100", 32), ("gfx942", 64)):
        desc = AmdTarget(arch).desc
        for sh in wmma.SHAPES:
            assert desc.wmma(sh) == (sh.device == "AMD" and sh.threads == threads), sh.name
