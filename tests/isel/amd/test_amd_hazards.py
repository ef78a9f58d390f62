"""gfx942's data hazard after a wide store (kcc/isel/amd/lower.py ``store_hazards``): a VALU
instruction right after a VMEM store of more than 8 bytes must not write the store's data
VGPRs (CDNA3: one software wait state; LLVM's has12DWordStoreHazard). Before, only spill
stores got an ``s_nop`` after them; any global_store_dwordx3/x4 whose data registers the
allocator reused at once would have raced on hardware. kcc's emulator flags the hazard
(tests/targets/amd/emu/test_emu_hazards.py), so every emulated gfx942 test checks it too."""

from __future__ import annotations

import pytest

from kcc.encode.amd.operands import SGPR, VGPR, Imm, Inst, Special
from kcc.ir.mir import Label
from kcc.isel.amd.lower import store_hazards
from kcc.isel.amd.regs import ARCHES

STORE4 = Inst("global_store_dwordx4", (VGPR(1), VGPR(4, 4), SGPR(2, 2)))


def _names(items: list) -> list[str]:
    return [it.name if isinstance(it, Inst) else f"{it.name}:" for it in items]


@pytest.mark.parametrize("store", [
    STORE4, Inst("global_store_dwordx3", (VGPR(1), VGPR(4, 3), SGPR(2, 2))),
    Inst("scratch_store_dwordx4", (Special("off"), VGPR(4, 4), Special("off")),
         (("offset", 16),))])
def test_a_wait_state_between_a_wide_store_and_a_valu_write_of_its_data(store: Inst) -> None:
    items = [store, Label("join"), Inst("v_mov_b32", (VGPR(6), Imm(0))), Inst("s_endpgm")]
    assert _names(store_hazards(items, ARCHES["gfx942"])) == [
        store.name, "join:", "s_nop", "v_mov_b32", "s_endpgm"]
    assert store_hazards(items, ARCHES["gfx1100"]) == items        # RDNA3 interlocks


@pytest.mark.parametrize("after", [
    Inst("v_mov_b32", (VGPR(8), Imm(0))),                  # another register
    Inst("v_add_u32", (VGPR(1), VGPR(4), VGPR(5))),        # reads the data, writes the address
    Inst("s_mov_b32", (SGPR(4), Imm(0))),                  # not a VALU
    Inst("v_cmp_lt_i32", (SGPR(4, 2), VGPR(4), VGPR(5))),  # a VALU writing SGPRs
])
def test_no_wait_state_where_there_is_no_hazard(after: Inst) -> None:
    items = [STORE4, after]
    assert store_hazards(items, ARCHES["gfx942"]) == items


def test_eight_byte_stores_and_a_gap_need_none() -> None:
    store2 = Inst("global_store_dwordx2", (VGPR(1), VGPR(4, 2), SGPR(2, 2)))
    items = [store2, Inst("v_mov_b32", (VGPR(5), Imm(0)))]
    assert store_hazards(items, ARCHES["gfx942"]) == items
    gap = [STORE4, Inst("s_waitcnt", (), (("vmcnt", 0),)), Inst("v_mov_b32", (VGPR(5), Imm(0)))]
    assert store_hazards(gap, ARCHES["gfx942"]) == gap
