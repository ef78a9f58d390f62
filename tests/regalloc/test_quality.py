"""Allocation quality that can be asserted: coalesced loop-carried copies, constants
rematerialized instead of spilled and reloaded.  Every toy
allocation is re-verified by the independent checker and run against the unallocated function
(``run_both``); the x86 ones by the checker (KCC_CHECK_ALLOC, on in tests)."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import capstone
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcc.frontend.parser import parse_file
from kcc.ir.mir import Imm, Inst, Kind, MFunction, RegOp
from kcc.regalloc import CheckError, allocate, check_allocation
from kcc.targets.x86.target import compile_x86
from test_regalloc import Gen, bnz, count, dec, li, loop, out, run_both
from toy_target import MASK, ToyTarget, add, d, u

T = ToyTarget(wide=True)
REPO = Path(__file__).resolve().parents[2]


def _copies_between_registers(fn: MFunction, lo: int, hi: int) -> int:
    return sum(1 for i in fn.insts[lo:hi] if i.op == "mov" and isinstance(i.operands[1], RegOp)
               and i.operands[0].reg != i.operands[1].reg)


def _loop_bounds(fn: MFunction) -> tuple[int, int]:
    b = next(k for k, i in enumerate(fn.insts) if i.kind is Kind.LOOP_BEGIN)
    e = next(k for k, i in enumerate(fn.insts) if i.kind is Kind.LOOP_END)
    return b, e


def test_loop_carried_copies_are_coalesced() -> None:
    # acc is copied in at the top of the body and the new sum copied back at the bottom,
    # as the x86 selector writes accumulators
    fn = MFunction("acc")
    acc, n, x = fn.new_vreg("gpr"), fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts = [li(acc, 5), li(n, 4), li(x, 3), loop("L")]
    t, s = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts += [Inst("mov", [d(t), u(acc)]), add(s, t, x), Inst("mov", [d(acc), u(s)]),
                 dec(n), bnz(n, "L"), out(acc)]
    after = run_both(fn, [])
    b, e = _loop_bounds(after)
    assert _copies_between_registers(after, b, e) == 0


def test_copy_whose_source_stays_live_is_not_coalesced() -> None:
    # the source is read after the copy while the copy is changed: two registers are needed
    fn = MFunction("keep")
    a, c = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts = [li(a, 7), Inst("mov", [d(c), u(a)]), Inst("addi", [RegOp(c, d(c).role | u(c).role),
                                                                   Imm(1)]), out(a), out(c)]
    after = run_both(fn, [])
    assert count(Kind.OP, after) == len(fn.insts)
    mov = next(i for i in after.insts if i.op == "mov")
    assert mov.operands[0].reg != mov.operands[1].reg


# -- rematerialization ---------------------------------------------------------------------

TR = ToyTarget(wide=True, remat=True)


def _pressure(k: int) -> MFunction:
    """k constants live across a loop that needs every register."""
    fn = MFunction("consts")
    cs = [fn.new_vreg("gpr") for _ in range(k)]
    n, acc = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts = [*[li(c, 100 + j) for j, c in enumerate(cs)], li(n, 3), li(acc, 0), loop("L")]
    for c in cs:
        fn.insts.append(add(acc, acc, c))
    fn.insts += [dec(n), bnz(n, "L"), out(acc)]
    return fn


def test_constants_are_rematerialized_not_reloaded() -> None:
    fn = _pressure(6)
    after = run_both(fn, [], TR)
    assert count(Kind.REMAT, after) >= 4
    assert count(Kind.FILL, after) == count(Kind.SPILL, after) == 0
    assert after.frame_size == 0
    for inst in after.insts:
        if inst.kind is Kind.REMAT:
            assert fn.insts[inst.slot].op == "li" and inst.operands[1:] == \
                fn.insts[inst.slot].operands[1:]
    # without the target's consent the same function spills and reloads
    plain = run_both(fn, [], T)
    assert count(Kind.FILL, plain) >= 4 and count(Kind.REMAT, plain) == 0


def test_checker_refuses_a_wrong_rematerialization() -> None:
    fn = _pressure(6)
    after = allocate(fn, TR)
    k = next(i for i, x in enumerate(after.insts) if x.kind is Kind.REMAT)
    bad = dataclasses.replace(after.insts[k], operands=[after.insts[k].operands[0], Imm(5)])
    with pytest.raises(CheckError, match="repeat"):
        check_allocation(fn, dataclasses.replace(
            after, insts=after.insts[:k] + [bad] + after.insts[k + 1:]), TR)
    other = next(j for j, x in enumerate(fn.insts) if x.op == "li"
                 and x is not fn.insts[after.insts[k].slot])
    wrong = dataclasses.replace(after.insts[k], slot=other, operands=[
        after.insts[k].operands[0], *fn.insts[other].operands[1:]])
    with pytest.raises(CheckError, match="reads"):
        check_allocation(fn, dataclasses.replace(
            after, insts=after.insts[:k] + [wrong] + after.insts[k + 1:]), TR)
    # a value with two definitions is no constant, even if one of them is an li
    acc_def = next(j for j, x in enumerate(fn.insts) if x.op == "li"
                   and any(o.reg is fn.insts[-1].operands[0].reg for o in x.operands
                           if isinstance(o, RegOp)))
    twice = dataclasses.replace(after.insts[k], slot=acc_def,
                                operands=[after.insts[k].operands[0],
                                          *fn.insts[acc_def].operands[1:]])
    with pytest.raises(CheckError, match="other definitions"):
        check_allocation(fn, dataclasses.replace(
            after, insts=after.insts[:k] + [twice] + after.insts[k + 1:]), TR)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.integers(4, 40), st.lists(st.integers(0, MASK), min_size=3, max_size=3))
def test_random_functions_with_remat_check_and_run_the_same(data: st.DataObject, budget: int,
                                                            args: list[int]) -> None:
    run_both(Gen(data, budget).build(), args, TR)


# -- x86 ------------------------------------------------------------------------------------

def _x86_text(path: Path, arch: str = "x86-64-v3") -> list[tuple[int, str, str]]:
    from elftools.elf.elffile import ELFFile
    obj, _ = compile_x86([parse_file(path)], arch)
    text = ELFFile(io.BytesIO(obj)).get_section_by_name(".text").data()
    cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return [(i.address, i.mnemonic, i.op_str) for i in cs.disasm(text, 0)]


def _innermost_loops(insts: list[tuple[int, str, str]]) -> list[list[tuple[int, str, str]]]:
    """The bodies of the backward jumps whose bodies hold no other backward jump."""
    addrs = [a for a, _, _ in insts]
    loops = [(addrs.index(int(op, 16)), k) for k, (a, m, op) in enumerate(insts)
             if m.startswith("j") and op.startswith("0x") and int(op, 16) <= a]
    return [insts[s:e + 1] for s, e in loops
            if not any(s <= s2 and e2 < e for s2, e2 in loops if (s2, e2) != (s, e))]


def test_x86_reduction_loop_has_no_vector_copies() -> None:
    # softmax_row's max and sum loops carry their accumulators in xmm registers: the
    # selector's copies in and out of the loop body are coalesced away
    loops = _innermost_loops(_x86_text(REPO / "examples" / "softmax_row.uop"))
    assert loops
    for body in loops:
        copies = [f"{m} {op}" for _, m, op in body if m in ("vmovaps", "vmovups")
                  and "ptr" not in op]
        assert not copies, copies
