"""kcc/targets/x86/arch.py keeps each arch's TargetDesc (`x86_desc`) for the process: the kept
desc is the one built afresh, each arch has its own, and X86Target's options (fp_contract) are
set on its own copy, never on the kept one nor carried to a later target."""

from __future__ import annotations

from kcc.targets.x86 import arch as x86_arch
from kcc.targets.x86.target import X86Target


def test_each_arch_keeps_its_own_desc() -> None:
    v3, v4 = x86_arch.x86_desc("x86-64-v3"), x86_arch.x86_desc("x86-64-v4")
    assert x86_arch.x86_desc("x86-64-v3") is v3 and x86_arch.x86_desc("x86-64-v4") is v4
    assert v3 != v4 and v3.vector_regs == 16 and v4.vector_regs == 32
    assert v3 == x86_arch._x86_desc("x86-64-v3") and v4 == x86_arch._x86_desc("x86-64-v4")


def test_target_options_are_not_kept_or_carried() -> None:
    fast = X86Target("x86-64-v4", fp_contract="fast")
    plain = X86Target("x86-64-v4")
    assert fast.desc.fp_contract and not plain.desc.fp_contract
    assert not x86_arch.x86_desc("x86-64-v4").fp_contract
    assert X86Target("x86-64-v3", fp_contract="fast").desc.vector_regs == 16
    assert X86Target("x86-64-v4").desc == x86_arch._x86_desc("x86-64-v4")
