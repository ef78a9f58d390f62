"""Tests of the machine IR containers and the linear-scan register allocator.

Correctness is judged by two oracles that share no code with the allocator: the symbolic
checker (``check_allocation``) and a toy-ISA interpreter that runs the original function over
unlimited virtual registers and the allocated one over physical registers and a stack.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcc.ir.mir import (Imm, Inst, Kind, Label, Mem, MFunction, MirError, PReg, RegOp, Role,
                        VReg, format_mir, verify_mir)
from kcc.regalloc import AllocationError, CheckError, allocate, check_allocation
from toy_target import (MASK, R, SENTINEL, W, Machine, ToyTarget, add,
                              call, d, div, m, shl, u)

T = ToyTarget(wide=True)


def run_both(fn: MFunction, args: list[int], target: ToyTarget = T) -> MFunction:
    """Allocate, check, and compare the interpreter on the original and the allocation."""
    text = format_mir(fn)
    after = allocate(fn, target)
    assert format_mir(fn) == text, "allocate changed its input"
    check_allocation(fn, after, target)
    mach = Machine(after, physical=True, target=target)
    want = Machine(fn, physical=False, target=target).run(args)
    assert mach.run(args) == want, format_mir(after)
    if R[3] not in after.callee_saved_used:
        assert mach.regs[R[3]] == SENTINEL
    assert not any(isinstance(r, VReg) for i in after.insts for r in (*i.uses(), *i.defs()))
    return after


def li(v: VReg, k: int) -> Inst:
    return Inst("li", [d(v), Imm(k)])


def out(v: VReg) -> Inst:
    return Inst("out", [u(v)])


def loop(name: str) -> Inst:
    return Inst("loop", [Label(name)], kind=Kind.LOOP_BEGIN)


def bnz(c: VReg, name: str) -> Inst:
    return Inst("bnz", [u(c), Label(name)], kind=Kind.LOOP_END)


def dec(c: VReg) -> Inst:
    return Inst("addi", [m(c), Imm(-1)])


def count(kind: Kind, fn: MFunction) -> int:
    return sum(i.kind is kind for i in fn.insts)


# -- directed tests ------------------------------------------------------------------------

def test_straight_line_spills_when_more_values_than_registers() -> None:
    fn = MFunction("s")
    vs = [fn.new_vreg("gpr") for _ in range(9)]
    fn.insts = [li(v, 10 * k + 1) for k, v in enumerate(vs)]
    acc = fn.new_vreg("gpr")
    fn.insts.append(li(acc, 0))
    for v in vs:
        fn.insts.append(add(acc, acc, v))
    fn.insts += [out(acc), *[out(v) for v in vs]]
    after = run_both(fn, [])
    assert count(Kind.SPILL, after) >= 5 and count(Kind.FILL, after) >= 5
    assert after.frame_size % 16 == 0 and after.frame_size >= 8 * 5


def test_loop_live_in_live_through_and_live_out() -> None:
    fn = MFunction("l")
    a, b, c, x, y = (fn.new_vreg("gpr") for _ in range(5))
    fn.params = [(a, R[0]), (b, R[1])]
    fn.insts = [li(c, 5), li(y, 1), loop("L"),
                Inst("sub", [d(x), u(a), u(c)]),     # a live in, c the counter
                Inst("mul", [m(y), u(x)]),            # y carried around the back edge
                dec(c), bnz(c, "L"),
                out(x), out(y), out(b)]               # x defined in the loop, b live through
    run_both(fn, [100, 7])


def test_three_deep_nest_with_pressure_and_calls() -> None:
    fn = MFunction("n")
    p, q = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.params = [(p, R[0]), (q, R[1])]
    c1, c2, c3, s, t, k = (fn.new_vreg("gpr") for _ in range(6))
    vv = fn.new_vreg("vec")
    fn.insts = [li(s, 0), li(k, 3), Inst("vsplat", [d(vv), u(p)]), li(c1, 3), loop("A"),
                li(c2, 2), loop("B"),
                add(s, s, q), call(),
                li(c3, 2), loop("C"),
                Inst("sub", [d(t), u(s), u(c3)]), div(t, k, c2), shl(s, c3),
                add(s, s, t), Inst("vadd", [d(vv, tied=1), u(vv), u(vv)]),
                dec(c3), bnz(c3, "C"),
                Inst("vsum", [d(t), u(vv)]), add(s, s, t),
                dec(c2), bnz(c2, "B"),
                out(s), dec(c1), bnz(c1, "A"),
                out(s), out(k), out(p), out(q)]
    after = run_both(fn, [12345, 678])
    assert [(e - b) > 0 for b, e in after.loops()] == [True] * 3


def test_fixed_registers_get_moves_and_clobbers_evict() -> None:
    fn = MFunction("f")
    a, b, keep = fn.new_vreg("gpr"), fn.new_vreg("gpr"), fn.new_vreg("gpr")
    q, r = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.params = [(a, R[1]), (b, R[0])]                # swapped on purpose
    fn.insts = [li(keep, 99), li(q, 1000), div(q, r, a), call(), shl(b, a),
                out(q), out(r), out(b), out(keep), out(a)]
    after = run_both(fn, [7, 3])
    div_i = next(i for i in after.insts if i.op == "div")
    assert [o.reg for o in div_i.operands[:2]] == [R[0], R[1]]
    assert next(i for i in after.insts if i.op == "shl").operands[1].reg == R[2]
    assert count(Kind.MOVE, after) + count(Kind.FILL, after) >= 2


def test_tied_operand_coalesced_when_use_dies_else_copied() -> None:
    fn = MFunction("t")
    a, b, c = fn.new_vreg("gpr"), fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts = [li(a, 5), li(b, 6), add(c, a, b), out(c)]
    after = run_both(fn, [])
    assert count(Kind.MOVE, after) == 0                 # a dies at the add: coalesced
    fn.insts = [li(a, 5), li(b, 6), add(c, a, b), out(c), out(a)]
    after = run_both(fn, [])
    assert count(Kind.MOVE, after) == 1                 # a lives on: one copy
    add_i = next(i for i in after.insts if i.op == "add")
    assert add_i.operands[0].reg == add_i.operands[1].reg


def test_forward_branch_and_memory_operands() -> None:
    fn = MFunction("b")
    a, z, x, y = (fn.new_vreg("gpr") for _ in range(4))
    fn.params = [(a, R[0]), (z, R[1])]
    fn.insts = [li(x, 1), Inst("bz", [u(z), Label("skip")], kind=Kind.BRANCH),
                Inst("ldm", [d(x), Mem(a, z, 8, 16)]), call(),
                Inst("label", [Label("skip")], kind=Kind.LABEL),
                Inst("ldm", [d(y), Mem(x, a, 8, 16)]), out(x), out(y)]
    run_both(fn, [3, 0])
    run_both(fn, [3, 9])


def test_two_defs_one_dead_get_different_registers() -> None:
    fn = MFunction("p")
    x, a, b = fn.new_vreg("gpr"), fn.new_vreg("gpr"), fn.new_vreg("gpr")
    for ops, tail in (([d(b), d(a), u(x)], [out(a)]), ([d(a), d(b), u(x)], [out(a)]),
                      ([d(a), d(b), u(x)], [])):
        fn.insts = [li(x, 5), Inst("pair", ops), *tail]
        after = run_both(fn, [])
        k = next(k for k, i in enumerate(after.insts) if i.op == "pair")
        r0, r1 = (o.reg for o in after.insts[k].operands[:2])
        assert r0 != r1
        with pytest.raises(CheckError, match="two results"):
            check_allocation(fn, _mutate(after, k, 0, r1), T)


def test_spill_slots_of_values_live_around_a_loop_are_not_shared() -> None:
    # v* are live around the back edge but used only at the top of the body; t* are spilled
    # later in the body: a slot shared between them would be read back wrong next iteration.
    fn = MFunction("slots")
    vs = [fn.new_vreg("gpr") for _ in range(5)]
    ts = [fn.new_vreg("gpr") for _ in range(5)]
    c = fn.new_vreg("gpr")
    fn.insts = [*[li(v, 11 * k + 1) for k, v in enumerate(vs)], li(c, 3), loop("L"),
                *[out(v) for v in vs], *[li(t, 7 * k + 2) for k, t in enumerate(ts)],
                *[add(t, t, c) for t in ts], *[out(t) for t in ts], dec(c), bnz(c, "L")]
    after = run_both(fn, [])
    assert count(Kind.SPILL, after) >= 5


def test_aliasing_wide_registers() -> None:
    fn = MFunction("w")
    g = [fn.new_vreg("gpr") for _ in range(3)]
    w = fn.new_vreg("wide")
    fn.insts = [li(g[0], 4), Inst("wpack", [d(w), u(g[0])]), li(g[1], 5), li(g[2], 6),
                add(g[1], g[1], g[2]), Inst("wsum", [d(g[2]), u(w)]), out(g[1]), out(g[2]),
                out(g[0])]
    after = run_both(fn, [])
    wreg = next(i for i in after.insts if i.op == "wpack").operands[0].reg
    assert wreg in W


def test_deterministic_and_format() -> None:
    fn = MFunction("det")
    vs = [fn.new_vreg("gpr") for _ in range(7)]
    fn.insts = [li(v, k) for k, v in enumerate(vs)] + [loop("L"), *[out(v) for v in vs],
                                                       dec(vs[0]), bnz(vs[0], "L")]
    a1, a2 = allocate(fn, T), allocate(fn, T)
    assert format_mir(a1) == format_mir(a2)
    text = format_mir(fn)
    assert "loop L:" in text and "mod %v0:gpr" in text and "bnz %v0:gpr, L" in text
    assert "; spill" in format_mir(a1) and "frame=" in format_mir(a1)


def test_callee_saved_reported_when_used() -> None:
    fn = MFunction("cs")
    vs = [fn.new_vreg("gpr") for _ in range(4)]
    fn.insts = [li(v, k) for k, v in enumerate(vs)] + [out(v) for v in vs]
    after = run_both(fn, [])
    assert after.callee_saved_used == (R[3],) and after.frame_size == 0


# -- errors --------------------------------------------------------------------------------

def test_bad_input_is_a_clear_error() -> None:
    fn = MFunction("e")
    a, b = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts = [li(a, 1), bnz(a, "L")]
    with pytest.raises(AllocationError, match="LOOP_END"):
        allocate(fn, T)
    fn.insts = [out(a)]
    with pytest.raises(AllocationError, match="before any definition"):
        allocate(fn, T)
    fn.insts = [li(a, 1), li(b, 2), Inst("x", [u(a, fixed=R[0]), u(b, fixed=R[0])])]
    with pytest.raises(AllocationError, match="at once"):
        allocate(fn, T)
    five = [fn.new_vreg("gpr") for _ in range(5)]
    fn.insts = [*[li(v, 1) for v in five], Inst("x5", [u(v) for v in five])]
    with pytest.raises(AllocationError, match="no gpr register"):
        allocate(fn, T)
    fn.insts = [Inst("x", [RegOp(VReg(99, "fp"), Role.DEF)])]
    with pytest.raises(AllocationError, match="class 'fp'"):
        allocate(fn, T)
    with pytest.raises(MirError, match="tied"):
        verify_mir(MFunction("v", [Inst("x", [d(a, tied=0)])]))
    fn.insts = [Inst("li", [d(R[0]), Imm(1)]), call(), Inst("out", [u(R[0])])]
    with pytest.raises(AllocationError, match="clobbers it"):
        allocate(fn, T)
    lab = Inst("label", [Label("X")], kind=Kind.LABEL)
    jmp = Inst("jmp", [Label("X")], kind=Kind.JUMP)
    with pytest.raises(MirError, match="backwards"):
        verify_mir(MFunction("v", [lab, jmp]))
    with pytest.raises(MirError, match="into or out of a loop"):
        verify_mir(MFunction("v", [li(a, 1), jmp, loop("L"), lab, bnz(a, "L")]))
    with pytest.raises(MirError, match="may not define"):
        verify_mir(MFunction("v", [loop("L"), Inst("bnz", [m(a), Label("L")],
                                                   kind=Kind.LOOP_END)]))


def test_raw_physical_registers_and_structure_queries() -> None:
    fn = MFunction("raw")
    a, c = fn.new_vreg("gpr"), fn.new_vreg("gpr")
    fn.insts = [Inst("li", [d(R[2]), Imm(40)]), li(a, 2), li(c, 3), loop("L"),
                add(a, a, R[2]), dec(c), bnz(c, "L"), Inst("out", [u(R[2])]), out(a)]
    assert fn.loops() == [(3, 6)]
    after = run_both(fn, [])
    assert all(i.operands[0].reg != R[2] for i in after.insts if i.op == "add")


# -- the checker rejects broken allocations --------------------------------------------------

def _good() -> tuple[MFunction, MFunction]:
    fn = MFunction("g")
    a, b, c, q, r = (fn.new_vreg("gpr") for _ in range(5))
    vs = [fn.new_vreg("gpr") for _ in range(4)]
    fn.params = [(a, R[0])]
    fn.insts = [li(b, 2), li(c, 3), *[li(v, 7) for v in vs], loop("L"), add(b, b, c),
                *[out(v) for v in vs], li(q, 50), div(q, r, c), out(r), dec(a), bnz(a, "L"),
                out(b), out(q)]
    after = allocate(fn, T)
    check_allocation(fn, after, T)
    return fn, after


def _mutate(after: MFunction, i: int, k: int, reg: PReg) -> MFunction:
    insts = list(after.insts)
    ops = list(insts[i].operands)
    ops[k] = dataclasses.replace(ops[k], reg=reg)
    insts[i] = dataclasses.replace(insts[i], operands=ops)
    return dataclasses.replace(after, insts=insts)


def test_checker_rejects_shared_register_for_overlapping_values() -> None:
    fn, after = _good()
    i = next(i for i, x in enumerate(after.insts) if x.op == "add")
    other = next(p for p in R if p != after.insts[i].operands[2].reg)
    bad = _mutate(after, i, 2, other)       # read c from a register holding something else
    with pytest.raises(CheckError, match="reads"):
        check_allocation(fn, bad, T)
    lb = next(j for j, x in enumerate(after.insts) if x.op == "li" and x.operands[1].value == 2)
    lc = next(j for j, x in enumerate(after.insts) if x.op == "li" and x.operands[1].value == 3)
    bad = _mutate(after, lc, 0, after.insts[lb].operands[0].reg)   # b and c in one register
    with pytest.raises(CheckError, match="reads"):
        check_allocation(fn, bad, T)


def test_checker_rejects_missing_fill_fixed_tie_and_callee_saved() -> None:
    fn, after = _good()
    f = next(i for i, x in enumerate(after.insts) if x.kind is Kind.FILL)
    with pytest.raises(CheckError):
        check_allocation(fn, dataclasses.replace(
            after, insts=after.insts[:f] + after.insts[f + 1:]), T)
    s = next(i for i, x in enumerate(after.insts) if x.kind is Kind.SPILL)
    spill = dataclasses.replace(after.insts[s], slot=after.insts[s].slot + 4)
    with pytest.raises(CheckError, match="slot"):
        check_allocation(fn, dataclasses.replace(
            after, insts=after.insts[:s] + [spill] + after.insts[s + 1:]), T)
    dv = next(i for i, x in enumerate(after.insts) if x.op == "div")
    with pytest.raises(CheckError, match="must be in r0"):
        check_allocation(fn, _mutate(after, dv, 0, R[2]), T)
    ad = next(i for i, x in enumerate(after.insts) if x.op == "add")
    wrong = next(p for p in R if p != after.insts[ad].operands[1].reg)
    with pytest.raises(CheckError, match="tied"):
        check_allocation(fn, _mutate(after, ad, 0, wrong), T)
    with pytest.raises(CheckError, match="callee-saved"):
        check_allocation(fn, dataclasses.replace(after, callee_saved_used=()), T)
    with pytest.raises(CheckError, match="16-byte"):
        check_allocation(fn, dataclasses.replace(after, frame_size=after.frame_size + 8), T)


def test_checker_catches_value_left_in_clobbered_register() -> None:
    fn = MFunction("c")
    a = fn.new_vreg("gpr")
    fn.insts = [li(a, 1), call(), out(a)]
    after = allocate(fn, T)
    check_allocation(fn, after, T)
    assert next(i for i in after.insts if i.op == "li").operands[0].reg == R[3]
    bad = _mutate(_mutate(after, 0, 0, R[0]), 2, 0, R[0])
    with pytest.raises(CheckError, match="nothing"):
        check_allocation(fn, bad, T)


# -- random functions ------------------------------------------------------------------------

class Gen:
    """Builds a random structured toy function from hypothesis draws."""

    def __init__(self, data: st.DataObject, budget: int) -> None:
        self.data, self.budget = data, budget
        self.fn = MFunction("rand")
        self.counters: list[VReg] = []
        self.labels = 0

    def pick(self, n: int) -> int:
        return self.data.draw(st.integers(0, n - 1))

    def choose(self, xs: list[VReg]) -> VReg:
        return xs[self.pick(len(xs))]

    def target(self, avail: list[VReg], cls: str = "gpr") -> VReg:
        mine = [v for v in avail if v.cls == cls and v not in self.counters]
        if mine and self.pick(3):
            return self.choose(mine)
        v = self.fn.new_vreg(cls)
        avail.append(v)
        return v

    def block(self, avail: list[VReg], depth: int) -> None:
        n = self.pick(6) + 1
        for _ in range(n):
            if self.budget <= 0:
                return
            self.budget -= 1
            self.stmt(avail, depth)

    def stmt(self, avail: list[VReg], depth: int) -> None:
        emit = self.fn.insts.append
        g = [v for v in avail if v.cls == "gpr"]
        vec = [v for v in avail if v.cls == "vec"]
        kind = self.pick(17)
        if kind == 0 or not g:
            emit(li(self.target(avail), self.pick(1000)))
        elif kind == 1:
            a, b = self.choose(g), self.choose(g)
            emit(add(self.target(avail), a, b))
        elif kind == 2:
            a, b = self.choose(g), self.choose(g)
            emit(Inst("sub", [d(self.target(avail)), u(a), u(b)]))
        elif kind == 3 and [v for v in g if v not in self.counters]:
            emit(Inst("mul", [m(self.choose([v for v in g if v not in self.counters])),
                              u(self.choose(g))]))
        elif kind == 4:
            y = self.choose(g)
            q = self.target([v for v in g if v not in self.counters and v is not y])
            if q not in avail:
                avail.append(q)
                emit(li(q, self.pick(5000)))
            r = self.target([v for v in avail if v is not q])
            if r not in avail:
                avail.append(r)
            emit(div(q, r, y))
        elif kind == 5:
            mine = [v for v in g if v not in self.counters]
            if mine:
                emit(shl(self.choose(mine), self.choose(g)))
        elif kind == 6:
            emit(call())
        elif kind == 7:
            emit(Inst("ldm", [d(self.target(avail)), Mem(self.choose(g), self.choose(g), 8,
                                                         16)]))
        elif kind == 8:
            emit(Inst("vsplat", [d(self.target(avail, "vec")), u(self.choose(g))]))
        elif kind == 9 and vec:
            a, b = self.choose(vec), self.choose(vec)
            emit(Inst("vadd", [d(self.target(avail, "vec"), tied=1), u(a), u(b)]))
        elif kind == 10 and vec:
            emit(Inst("vsum", [d(self.target(avail)), u(self.choose(vec))]))
        elif kind == 11:
            emit(out(self.choose(g)))
        elif kind in (12, 13) and depth < 3:
            c = self.fn.new_vreg("gpr")
            self.counters.append(c)
            name = f"L{self.labels}"
            self.labels += 1
            emit(li(c, self.pick(3) + 1))
            emit(loop(name))
            inner = list(avail) + [c]
            self.block(inner, depth + 1)
            emit(dec(c))
            emit(bnz(c, name))
            avail[:] = inner               # the body runs at least once
        elif kind == 14:
            name = f"S{self.labels}"
            self.labels += 1
            emit(Inst("bz", [u(self.choose(g)), Label(name)], kind=Kind.BRANCH))
            self.block(list(avail), depth)
            emit(Inst("label", [Label(name)], kind=Kind.LABEL))
        elif kind == 15:
            wide = [v for v in avail if v.cls == "wide"]
            if wide and self.pick(2):
                emit(Inst("wsum", [d(self.target(avail)), u(self.choose(wide))]))
            else:
                emit(Inst("wpack", [d(self.target(avail, "wide")), u(self.choose(g))]))
        else:
            emit(Inst("mov", [d(self.target(avail)), u(self.choose(g))]))

    def build(self) -> MFunction:
        avail: list[VReg] = []
        for k in range(self.pick(3)):
            v = self.fn.new_vreg("gpr")
            self.fn.params.append((v, R[k]))
            avail.append(v)
        while self.budget > 0:
            self.block(avail, 0)
        for v in avail:
            if v.cls == "gpr":
                self.fn.insts.append(out(v))
            else:
                tmp = self.fn.new_vreg("gpr")
                op = "vsum" if v.cls == "vec" else "wsum"
                self.fn.insts += [Inst(op, [d(tmp), u(v)]), out(tmp)]
        return self.fn


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.integers(4, 40), st.lists(st.integers(0, MASK), min_size=3, max_size=3))
def test_random_functions_check_and_run_the_same(data: st.DataObject, budget: int,
                                                 args: list[int]) -> None:
    run_both(Gen(data, budget).build(), args)
