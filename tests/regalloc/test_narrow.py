"""Per-operand register restrictions (a target's ``operand_regs``): the allocator gives a
variable only registers every one of its operands allows, and the independent checker refuses
an allocation that names a register an operand's encoding cannot (x86-64-v4: xmm16-31 in a
VEX-only form)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcc.ir.mir import Inst, MFunction, RegOp
from kcc.regalloc import CheckError, allocate, check_allocation
from test_regalloc import Gen, li, out, run_both
from toy_target import MASK, NARROW, V, ToyTarget, d, u

NT = ToyTarget(wide=True, narrow=True)


def _narrow_ops(fn: MFunction) -> list[RegOp]:
    return [o for i in fn.insts if i.op in ("vadd", "vsplat") for o in i.operands
            if isinstance(o, RegOp) and o.reg.cls == "vec"]


def _vector_pressure() -> MFunction:
    """Three vector values live at once (the toy has three vector registers); two of them are
    vadd operands, which only v0 and v1 can hold."""
    fn = MFunction("p")
    g = fn.new_vreg("gpr")
    a, b, c, s = (fn.new_vreg("vec") for _ in range(4))
    t = fn.new_vreg("gpr")
    fn.insts = [li(g, 5),
                Inst("vsplat", [d(a), u(g)]), Inst("vsplat", [d(b), u(g)]),
                Inst("vsplat", [d(c), u(g)]),
                Inst("vadd", [d(s, tied=1), u(a), u(b)]),
                Inst("vsum", [d(t), u(c)]), out(t),
                Inst("vsum", [d(t), u(s)]), out(t),
                Inst("vsum", [d(t), u(a)]), out(t)]
    return fn


def test_allocation_keeps_narrow_operands_in_their_registers() -> None:
    fn = _vector_pressure()
    wide = allocate(fn, ToyTarget(wide=True))
    # without the restriction the allocator uses v2 for some vadd/vsplat operand
    assert any(o.reg == V[2] for o in _narrow_ops(wide))
    after = run_both(fn, [], NT)
    assert all(o.reg in NARROW for o in _narrow_ops(after))


def test_checker_refuses_a_register_the_operand_cannot_name() -> None:
    fn = _vector_pressure()
    wide = allocate(fn, ToyTarget(wide=True))
    check_allocation(fn, wide, ToyTarget(wide=True))      # right without the restriction
    with pytest.raises(CheckError, match="cannot be v2"):
        check_allocation(fn, wide, NT)


def test_checker_refuses_a_narrow_operand_moved_to_another_register() -> None:
    fn = _vector_pressure()
    after = allocate(fn, NT)
    check_allocation(fn, after, NT)
    k = next(i for i, x in enumerate(after.insts) if x.op == "vsplat")
    bad = list(after.insts)
    ops = list(bad[k].operands)
    ops[0] = replace(ops[0], reg=V[2])
    bad[k] = replace(bad[k], operands=ops)
    with pytest.raises(CheckError, match="cannot be v2"):
        check_allocation(fn, replace(after, insts=bad), NT)


def test_no_register_allowed_is_a_clear_error() -> None:
    class Empty(ToyTarget):
        def operand_regs(self, inst: Inst, k: int) -> frozenset | None:
            return frozenset() if inst.op == "vsplat" else None
    fn = _vector_pressure()
    from kcc.regalloc import AllocationError
    with pytest.raises(AllocationError, match="no vec register allowed"):
        allocate(fn, Empty(wide=True))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.integers(4, 40), st.lists(st.integers(0, MASK), min_size=3, max_size=3))
def test_random_functions_with_narrow_operands(data: st.DataObject, budget: int,
                                               args: list[int]) -> None:
    after = run_both(Gen(data, budget).build(), args, NT)
    assert all(o.reg in NARROW for o in _narrow_ops(after))
