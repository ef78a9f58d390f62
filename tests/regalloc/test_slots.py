"""Spill slots sized and aligned to the value they hold, on hand-built toy MIR.

The toy target with widths (``SizedToyTarget``) carries 4-byte values through ``lo4`` and
16-byte vectors through ``vlo``; its interpreter keeps only the low bytes a store's width
holds, so a slot too narrow for its value changes the output.  Every allocation is re-verified
by the independent checker and run against the unallocated function (``run_both``).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcc.ir.mir import Inst, Kind, MFunction, VReg
from kcc.regalloc import CheckError, allocate, check_allocation
from test_regalloc import Gen, bnz, dec, li, loop, out, run_both
from toy_target import MASK, FoldingToyTarget, Machine, SizedToyTarget, ToyTarget, d, u

S = SizedToyTarget(wide=True)
F = FoldingToyTarget(wide=True)


def lo4(dst: VReg, a: VReg) -> Inst:
    return Inst("lo4", [d(dst), u(a)])


def _slots(fn: MFunction) -> dict[int, set[int]]:
    """Frame offset -> the widths of the spills and fills that use it."""
    out: dict[int, set[int]] = {}
    for i in fn.insts:
        if i.kind in (Kind.SPILL, Kind.FILL):
            out.setdefault(i.slot, set()).add(i.arg[1])
    return out


def _scalars(n: int = 7) -> MFunction:
    """n 4-byte values (lo4 of large constants) live at once, and the 8-byte constants live
    to the end: more values than the four GPRs, of two widths."""
    fn = MFunction("widths")
    xs = [fn.new_vreg("gpr") for _ in range(n)]
    ys = [fn.new_vreg("gpr") for _ in range(n)]
    fn.insts = [li(x, (1 << 40) + 1000003 * k) for k, x in enumerate(xs)]
    fn.insts += [lo4(y, x) for x, y in zip(xs, ys)]
    for y in ys:
        z = fn.new_vreg("gpr")
        fn.insts += [lo4(z, y), out(z)]
    fn.insts += [out(x) for x in xs]
    return fn


def test_slots_are_as_wide_as_their_values_and_packed_widest_first() -> None:
    after = run_both(_scalars(), [], S)
    slots = _slots(after)
    assert all(len(w) == 1 for w in slots.values()), slots     # one width per slot
    widths = {off: w.pop() for off, w in slots.items()}
    assert set(widths.values()) == {4, 8}
    assert all(off % w == 0 for off, w in widths.items())
    # widest first: no 4-byte slot before an 8-byte one, so nothing is padded
    assert max(o for o, w in widths.items() if w == 8) < min(o for o, w in widths.items()
                                                            if w == 4)
    assert after.frame_size == -(-sum(widths.values()) // 16) * 16
    # the class width for every value (the toy target without value_bytes) needs more frame
    plain = allocate(_scalars(), ToyTarget(wide=True))
    assert plain.frame_size > after.frame_size


def test_vector_slots_of_16_and_32_bytes_are_aligned() -> None:
    fn = MFunction("vec")
    g = fn.new_vreg("gpr")
    a = [fn.new_vreg("vec") for _ in range(4)]
    b = [fn.new_vreg("vec") for _ in range(4)]
    fn.insts = [li(g, 5)]
    fn.insts += [Inst("vsplat", [d(x), u(g)]) for x in a]            # 32 bytes
    fn.insts += [Inst("vlo", [d(y), u(x)]) for x, y in zip(a, b)]    # 16 bytes
    for x, y in zip(a, b):
        c, s, t = fn.new_vreg("vec"), fn.new_vreg("gpr"), fn.new_vreg("gpr")
        fn.insts += [Inst("vlo", [d(c), u(y)]), Inst("vsum", [d(s), u(c)]),
                     Inst("vsum", [d(t), u(x)]), out(s), out(t)]
    after = run_both(fn, [], S)
    widths = {off: w.pop() for off, w in _slots(after).items()}
    assert {16, 32} <= set(widths.values())
    assert all(off % w == 0 for off, w in widths.items())


def test_a_copy_gives_both_sides_one_width() -> None:
    # y is 4 bytes by its own operands, but its copy c is read as 8 bytes: a copy moves every
    # byte, so y's slot holds 8 bytes too (the only 4-byte value here is y)
    fn = MFunction("copy")
    xs = [fn.new_vreg("gpr") for _ in range(6)]
    y, c = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts = [*[li(x, k) for k, x in enumerate(xs)], lo4(y, xs[0]), *[out(x) for x in xs],
                Inst("mov", [d(c), u(y)]), out(c), *[out(x) for x in xs]]
    after = run_both(fn, [], S)
    assert {w for ws in _slots(after).values() for w in ws} == {8}
    fn.insts[-len(xs) - 2:-len(xs)] = [lo4(c, y), out(c)]     # no copy: y gets 4 bytes
    assert 4 in {w for ws in _slots(run_both(fn, [], S)).values() for w in ws}


def test_slots_are_reused_between_values_that_do_not_overlap() -> None:
    fn = MFunction("reuse")
    for phase in range(3):              # each phase spills, then its values die
        xs = [fn.new_vreg("gpr") for _ in range(7)]
        fn.insts += [li(x, 100 * phase + k) for k, x in enumerate(xs)]
        fn.insts += [out(x) for x in xs] + [out(x) for x in reversed(xs)]
    after = run_both(fn, [], S)
    spilled = {i.slot for i in after.insts if i.kind is Kind.SPILL}
    nspills = sum(i.kind is Kind.SPILL for i in after.insts)
    assert nspills >= 9 and len(spilled) <= nspills // 3
    assert after.frame_size == -(-8 * len(spilled) // 16) * 16


def test_values_live_around_a_loop_keep_their_slots_apart() -> None:
    fn = MFunction("loop")
    vs = [fn.new_vreg("gpr") for _ in range(6)]
    c = fn.new_vreg("gpr")
    fn.insts = [*[li(v, (1 << 36) * (k + 1)) for k, v in enumerate(vs)], li(c, 3), loop("L")]
    for v in vs:
        t = fn.new_vreg("gpr")
        fn.insts += [lo4(t, v), out(t)]
    fn.insts += [dec(c), bnz(c, "L"), *[out(v) for v in vs]]
    run_both(fn, [], S)


def _fill_of_width(fn: MFunction, w: int) -> int:
    return next(k for k, i in enumerate(fn.insts) if i.kind is Kind.FILL and i.arg[1] == w)


def _resize(fn: MFunction, ks: list[int], w: int) -> MFunction:
    insts = list(fn.insts)
    for k in ks:
        insts[k] = dataclasses.replace(insts[k], arg=(insts[k].arg[0], w))
    return dataclasses.replace(fn, insts=insts)


def test_checker_rejects_a_fill_of_another_width() -> None:
    fn = _scalars()
    after = allocate(fn, S)
    check_allocation(fn, after, S)
    k = _fill_of_width(after, 4)
    with pytest.raises(CheckError, match="reads 8 bytes at slot .* written as 4 bytes"):
        check_allocation(fn, _resize(after, [k], 8), S)


def test_checker_sees_a_spill_clobber_destroy_its_register() -> None:
    """A spill may clobber a register (AMD: the frame SGPR a far scratch slot is addressed
    from); the checker treats it as destroyed, so a value still read from it is caught."""
    fn = _scalars()
    after = allocate(fn, S)
    # a spill, and a register an original instruction after it reads, not written between
    k, r = next((k, r) for k, x in enumerate(after.insts) if x.kind is Kind.SPILL
                for j in range(k + 1, len(after.insts)) if after.insts[j].kind is Kind.OP
                for r in after.insts[j].uses()
                if not any(r in y.defs() for y in after.insts[k:j]))
    insts = list(after.insts)
    insts[k] = dataclasses.replace(insts[k], clobbers=(r,))
    with pytest.raises(CheckError, match="holding nothing"):
        check_allocation(fn, dataclasses.replace(after, insts=insts), S)


def test_checker_rejects_a_slot_narrower_than_its_value() -> None:
    # every spill and fill of one 8-byte slot made 4 bytes wide: consistent with each other,
    # but the value has 8 bytes (and the interpreter indeed prints other numbers)
    fn = _scalars()
    after = allocate(fn, S)
    off = after.insts[_fill_of_width(after, 8)].slot
    ks = [k for k, i in enumerate(after.insts) if i.kind in (Kind.SPILL, Kind.FILL)
          and i.slot == off]
    bad = _resize(after, ks, 4)
    with pytest.raises(CheckError, match="from a 4-byte slot; the value has 8 bytes"):
        check_allocation(fn, bad, S)
    want = Machine(fn, physical=False, target=S).run([])
    assert Machine(bad, physical=True, target=S).run([]) != want


def test_fills_fold_into_operands_that_take_a_slot() -> None:
    # the values are spilled; out and lo4 read them from their slots, no reload
    fn = _scalars()
    plain = run_both(fn, [], S)
    after = run_both(fn, [], F)
    folded = [i for i in after.insts if i.kind is Kind.OP and i.slot is not None]
    assert folded and all(i.op in ("out", "lo4") for i in folded)
    fills = sum(i.kind is Kind.FILL for i in after.insts)
    assert fills + len(folded) == sum(i.kind is Kind.FILL for i in plain.insts)


def test_checker_rejects_a_fold_of_the_wrong_slot_or_width() -> None:
    fn = _scalars()
    after = allocate(fn, F)
    check_allocation(fn, after, F)
    k = next(k for k, i in enumerate(after.insts) if i.op == "out" and i.slot is not None)
    others = sorted({i.slot for i in after.insts if i.kind is Kind.SPILL} - {after.insts[k].slot})
    insts = list(after.insts)
    insts[k] = dataclasses.replace(insts[k], slot=others[0])
    with pytest.raises(CheckError, match="reads slot"):
        check_allocation(fn, dataclasses.replace(after, insts=insts), F)
    # the value out reads kept in a 4-byte slot: an 8-byte read of it
    off = after.insts[k].slot
    ks = [j for j, i in enumerate(after.insts) if i.kind is Kind.SPILL and i.slot == off]
    with pytest.raises(CheckError, match="from a 4-byte slot; the value has 8 bytes"):
        check_allocation(fn, _resize(after, ks, 4), F)


class SizedGen(Gen):
    """Random toy functions that also use the 4-byte and 16-byte operations."""

    def stmt(self, avail: list[VReg], depth: int) -> None:
        g = [v for v in avail if v.cls == "gpr"]
        vec = [v for v in avail if v.cls == "vec"]
        k = self.pick(5)
        if k == 0 and g:
            self.fn.insts.append(lo4(self.target(avail), self.choose(g)))
        elif k == 1 and vec:
            self.fn.insts.append(Inst("vlo", [d(self.target(avail, "vec")),
                                              u(self.choose(vec))]))
        else:
            super().stmt(avail, depth)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.integers(4, 40), st.lists(st.integers(0, MASK), min_size=3, max_size=3))
def test_random_functions_with_widths_check_and_run_the_same(data: st.DataObject, budget: int,
                                                             args: list[int]) -> None:
    fn = SizedGen(data, budget).build()
    run_both(fn, args, S)
    run_both(fn, args, F)
