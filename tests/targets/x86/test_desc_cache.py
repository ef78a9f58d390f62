"""kcc/targets/x86/arch.py keeps each arch's TargetDesc (`x86_desc`) for the process: the kept
desc is the one built afresh, each arch has its own, and X86Target's desc with its options
(fp_contract) is kept per (arch, fp_contract): never the plain arch's, nor another pair's."""

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
    # each (arch, fp_contract) has its desc, kept: never another pair's
    descs = {(a, f): X86Target(a, fp_contract=f).desc for a in ("x86-64-v3", "x86-64-v4")
             for f in ("off", "fast")}
    assert len({id(d) for d in descs.values()}) == 4
    for (a, f), d in descs.items():
        assert X86Target(a, fp_contract=f).desc is d
        assert d.fp_contract == (f == "fast")
        assert d.vector_regs == (32 if a == "x86-64-v4" else 16)
