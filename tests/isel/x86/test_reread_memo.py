"""`X86Shuf._reread` (loaded_mem / broadcast_mem) keeps what it reads off each instruction in
the selector's ``reread_memo``: randomized instruction lists, with the lists growing between
calls as selection appends to them, answer as the scan without the memo did."""

from __future__ import annotations

import random
from types import SimpleNamespace

from kcc.encode.x86.table import FORMS
from kcc.ir.mir import Inst, Kind, Label, Mem, RegOp, Role, VReg
from kcc.isel.x86.base import writes_memory
from kcc.isel.x86.regs import RSP
from kcc.isel.x86.shuf import _SCAN, X86Shuf, _frame_only

_FORMS = ("vbroadcastss_", "vbroadcastsd_", "vmovddup_x_xm64")


def _reference(insts: list[Inst], r: VReg, forms: tuple[str, ...]) -> Mem | None:
    """The scan as it was before the memo (kcc 93d324a), instruction by instruction."""
    addr: set = set()
    frame_stores = False
    for inst in reversed(insts[-_SCAN:]):
        if inst.kind is Kind.OP and inst.op == "vzero" and r not in inst.defs():
            addr.update(inst.defs())
            continue
        if inst.kind is not Kind.OP or inst.op not in FORMS:
            return None
        defs = inst.defs()
        if r in defs:
            ops = inst.operands
            if inst.op.startswith(forms) and len(ops) == 2 and inst.arg is None \
                    and isinstance(ops[1], Mem) and not addr & {ops[1].base, ops[1].index} \
                    and not (frame_stores and ops[1].base == RSP):
                return ops[1]
            return None
        if writes_memory(inst):
            if not _frame_only(inst):
                return None
            frame_stores = True
        addr.update(defs)
    return None


def _random_inst(rng: random.Random, regs: list[VReg], gprs: list[VReg]) -> Inst:
    """One instruction of the kinds the scan tells apart."""
    d = rng.choice(regs)
    base = rng.choice([*gprs, RSP])
    pick = rng.random()
    if pick < 0.3:
        return Inst("vbroadcastss_x_xm32", [RegOp(d, Role.DEF), Mem(base, None, 1, 8)])
    if pick < 0.4:
        return Inst("vmovddup_x_xm64", [RegOp(d, Role.DEF), Mem(base)])
    if pick < 0.55:
        return Inst("vaddps_x_x_xm", [RegOp(d, Role.DEF), RegOp(rng.choice(regs)),
                                      RegOp(rng.choice(regs))])
    if pick < 0.63:                     # a store: to the frame, or to a buffer
        return Inst("vmovups_m128_x", [Mem(RSP if rng.random() < 0.6 else base),
                                       RegOp(rng.choice(regs))])
    if pick < 0.73:
        return Inst("vzero", [RegOp(rng.choice([d, *gprs]), Role.DEF)])
    if pick < 0.83:                     # an address register redefined
        return Inst("mov_r64_rm64", [RegOp(rng.choice(gprs), Role.DEF),
                                     RegOp(rng.choice(gprs))])
    if pick < 0.86:
        return Inst("label", [Label("L")], kind=Kind.LABEL)
    if pick < 0.88:
        return Inst("vbroadcastss_x_xm32", [RegOp(d, Role.DEF), Mem(base)], arg={"x": 1})
    return Inst("vmovss_x_m32", [RegOp(d, Role.DEF), Mem(base, rng.choice(gprs), 4)])


def test_memo_answers_as_the_scan() -> None:
    rng = random.Random(24)
    for trial in range(60):
        regs = [VReg(k, "vec") for k in range(rng.randint(2, 12))]
        gprs = [VReg(100 + k, "gpr") for k in range(3)]
        sel = SimpleNamespace(fn=SimpleNamespace(insts=[]), val={}, reread_memo={})
        for _ in range(rng.randint(20, 400)):
            sel.fn.insts.append(_random_inst(rng, regs, gprs))
            if rng.random() < 0.3:
                r = rng.choice(regs)
                sel.val["v"] = r
                for forms in (_FORMS, ("vmovup", "vmovdqu", "vmovss_x_m", "vmovsd_x_m")):
                    got = X86Shuf._reread(sel, "v", forms)  # type: ignore[arg-type]
                    want = _reference(sel.fn.insts, r, forms)
                    assert got is want, (trial, len(sel.fn.insts))
            if rng.random() < 0.02:          # a segment swapped in (selection's lazy lanes)
                sel.fn.insts = sel.fn.insts[rng.randint(0, len(sel.fn.insts)):]
    # the answers are not all None: the test can tell a wrong memo from a right one
    sel = SimpleNamespace(fn=SimpleNamespace(insts=[]), val={}, reread_memo={})
    r = VReg(1, "vec")
    m = Mem(VReg(2, "gpr"))
    sel.fn.insts.append(Inst("vbroadcastss_x_xm32", [RegOp(r, Role.DEF), m]))
    sel.val["v"] = r
    assert X86Shuf._reread(sel, "v", _FORMS) is m  # type: ignore[arg-type]
    sel.fn.insts.append(Inst("vmovups_m128_x", [Mem(VReg(3, "gpr")), RegOp(r)]))
    assert X86Shuf._reread(sel, "v", _FORMS) is None  # type: ignore[arg-type]


def test_random_lists_find_loads() -> None:
    """Enough random queries find a load that the answers being equal means something."""
    rng = random.Random(7)
    found = 0
    for _ in range(40):
        regs = [VReg(k, "vec") for k in range(4)]
        gprs = [VReg(100 + k, "gpr") for k in range(3)]
        sel = SimpleNamespace(fn=SimpleNamespace(insts=[]), val={}, reread_memo={})
        for _ in range(30):
            sel.fn.insts.append(_random_inst(rng, regs, gprs))
            sel.val["v"] = rng.choice(regs)
            found += X86Shuf._reread(sel, "v", _FORMS) is not None  # type: ignore[arg-type]
    assert found > 10
