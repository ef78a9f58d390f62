"""The allocator's contract in one place (kcc/regalloc/target.py): TargetRegInfo is the base
class of every target's register info, its optional hooks have defaults that mean "none", and
`hook` finds exactly the ones a target overrides (the allocator skips the rest)."""

from __future__ import annotations

import pytest

from kcc.ir.mir import Inst, PReg
from kcc.isel.amd.regs import ARCHES, AmdRegInfo
from kcc.regalloc.target import OPTIONAL_HOOKS, TargetRegInfo, hook
from kcc.targets.x86.reginfo import X86RegInfo
from toy_target import FoldingToyTarget, ToyTarget


class Bare(TargetRegInfo):
    """Only the required members."""

    classes = {"r": [PReg("r0", "r")]}
    callee_saved: set[PReg] = set()

    def spill_slot_size(self, cls: str) -> int:
        return 8


def overridden(t: object) -> set[str]:
    return {n for n in OPTIONAL_HOOKS if hook(t, n) is not None}


def test_a_target_without_hooks_gets_none_of_them() -> None:
    t = Bare()
    assert overridden(t) == set()
    assert t.reg_units(PReg("r0", "r")) == ("r0",)
    assert t.operand_regs(Inst("nop", ()), 0) is None and t.slot_home(Inst("nop", ())) is None


def test_required_members_must_be_written() -> None:
    with pytest.raises(NotImplementedError, match="Bare.make_move"):
        Bare().make_move("r", PReg("r0", "r"), PReg("r0", "r"))


def test_each_target_shows_its_overrides() -> None:
    x86 = X86RegInfo(0)
    amd = AmdRegInfo(ARCHES["gfx1100"], "k")
    for t in (x86, amd, ToyTarget()):
        assert isinstance(t, TargetRegInfo)
    assert overridden(x86) == {"operand_regs", "value_bytes", "slot_bytes", "fold_fill",
                               "is_copy", "rematerializable", "constant_bytes", "commute"}
    assert overridden(amd) == {"reg_units", "is_copy", "slot_bytes", "slot_home",
                               "early_clobber", "subreg_copy"}
    assert overridden(ToyTarget()) == {"reg_units", "is_copy", "operand_regs",
                                       "rematerializable", "slot_bytes"}
    assert overridden(FoldingToyTarget()) == overridden(ToyTarget()) | {"value_bytes",
                                                                         "fold_fill"}


def test_a_duck_typed_target_is_asked_for_what_it_has() -> None:
    class Duck:
        def is_copy(self, inst: Inst) -> bool:
            return True
    assert hook(Duck(), "is_copy") is not None and hook(Duck(), "fold_fill") is None
