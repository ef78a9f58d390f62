"""Tests of dead-instruction elimination after selection (kcc/isel/dce.py) on hand-built
machine functions: what goes (dead chains, read-modify-writes of dead values) and what stays
(stores, flag producers whose flags a reader reads, values carried around a loop, clobbering
ops)."""

from __future__ import annotations

from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp, Role
from kcc.isel.dce import eliminate_dead, eliminate_dead_chains, eliminate_dead_defs
from kcc.isel.x86.base import writes_memory
from kcc.targets.x86.target import _flags_of

D, U, DU = Role.DEF, Role.USE, Role.DEF | Role.USE
RDI = PReg("rdi", "gpr")


def _fn() -> tuple[MFunction, list]:
    fn = MFunction("k")
    vs = [fn.new_vreg("gpr") for _ in range(6)]
    fn.params.append((vs[0], RDI))
    return fn, vs


def _run(fn: MFunction) -> list[str]:
    eliminate_dead(fn, writes_memory, _flags_of)
    return [i.op for i in fn.insts]


def test_a_dead_chain_goes_and_a_store_stays() -> None:
    fn, v = _fn()
    fn.insts = [Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                Inst("add_rm32_imm8", [RegOp(v[1], DU), Imm(4)]),          # only feeds itself
                Inst("mov_r64_rm64", [RegOp(v[2], D), RegOp(v[0], U)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[2], U)]),         # a store: stays
                Inst("ret", kind=Kind.RET)]
    assert _run(fn) == ["mov_r64_rm64", "mov_rm32_r32", "ret"]
    assert fn.insts[0].operands[0].reg is v[2]


def test_a_flag_producer_before_a_flag_reader_stays() -> None:
    fn, v = _fn()
    fn.insts = [Inst("sub_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                Inst("cmove_r64_rm64", [RegOp(v[0], DU), RegOp(v[0], U)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[0], U)]),
                Inst("ret", kind=Kind.RET)]
    assert _run(fn)[0] == "sub_rm32_imm8"


def test_a_dead_flag_producer_read_past_a_flagless_op_stays() -> None:
    """DCE asked only whether the next instruction reads flags: a dead `sub` followed by a
    `mov` and then the `cmove` that reads its ZF went, and the cmove read older flags. Now
    DCE keeps every writer a reader is paired with (kcc/isel/flags.py, LICM's rule)."""
    fn, v = _fn()
    fn.insts = [Inst("sub_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                Inst("mov_r64_rm64", [RegOp(v[2], D), RegOp(v[0], U)]),
                Inst("cmove_r64_rm64", [RegOp(v[0], DU), RegOp(v[2], U)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[0], U)]),
                Inst("ret", kind=Kind.RET)]
    assert _run(fn)[0] == "sub_rm32_imm8"


def test_a_dead_flag_producer_between_a_writer_and_its_reader_stays() -> None:
    """The cmove reads the flags of the dead `and` (the nearest writer), not of the cmp."""
    fn, v = _fn()
    fn.insts = [Inst("cmp_rm64_imm8", [RegOp(v[0], U), Imm(3)]),
                Inst("and_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                Inst("mov_r64_rm64", [RegOp(v[2], D), RegOp(v[0], U)]),
                Inst("cmove_r64_rm64", [RegOp(v[0], DU), RegOp(v[2], U)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[0], U)]),
                Inst("ret", kind=Kind.RET)]
    assert _run(fn)[:2] == ["cmp_rm64_imm8", "and_rm32_imm8"]


def test_a_dead_flag_producer_no_reader_reads_goes() -> None:
    """A writer whose flags the next writer replaces before any reader, or that a jump or a
    label ends, is dead like any other instruction."""
    fn, v = _fn()
    fn.insts = [Inst("sub_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),      # replaced by the cmp
                Inst("cmp_rm64_imm8", [RegOp(v[0], U), Imm(3)]),
                Inst("cmove_r64_rm64", [RegOp(v[0], DU), RegOp(v[0], U)]),
                Inst("add_rm32_imm8", [RegOp(v[2], DU), Imm(1)]),      # no reader after it
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[0], U)]),
                Inst("ret", kind=Kind.RET)]
    assert _run(fn) == ["cmp_rm64_imm8", "cmove_r64_rm64", "mov_rm32_r32", "ret"]


def test_a_value_read_at_the_loop_top_stays() -> None:
    fn, v = _fn()
    fn.insts = [Inst("mov_r32_imm32", [RegOp(v[1], D), Imm(0)]),
                Inst("loop", [Label("L")], kind=Kind.LOOP_BEGIN),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)]),
                Inst("add_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                Inst("jl_rel32", [Label("L")], kind=Kind.LOOP_END),
                Inst("ret", kind=Kind.RET)]
    assert len(_run(fn)) == 6


def _run_defs(fn: MFunction) -> list[str]:
    eliminate_dead_defs(fn, writes_memory, _flags_of, frozenset({"vzero", "mov_r32_imm32"}))
    return [i.op for i in fn.insts]


def _cell(first_in_loop: str) -> tuple[MFunction, list]:
    """A promoted cell v[1] zeroed at entry, then a loop whose body starts with first_in_loop
    ("store": v[1] defined again before it is read; "read": read first) and stores it."""
    fn, v = _fn()
    define = Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)])
    read = Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)])
    body = [define, read] if first_in_loop == "store" else [read, define]
    fn.insts = [Inst("mov_r32_imm32", [RegOp(v[1], D), Imm(0)]),
                Inst("loop", [Label("L")], kind=Kind.LOOP_BEGIN), *body,
                Inst("jl_rel32", [Label("L")], kind=Kind.LOOP_END),
                Inst("ret", kind=Kind.RET)]
    return fn, v


def test_a_zeroing_defined_again_before_every_read_goes() -> None:
    # eliminate_dead keeps it (v[1] is read in the function); its value is never read
    fn, _ = _cell("store")
    assert len(_run(fn)) == 6
    assert _run_defs(fn) == ["loop", "mov_r64_rm64", "mov_rm32_r32", "jl_rel32", "ret"]


def test_a_zeroing_read_on_some_path_stays() -> None:
    # read at the loop's top in the first iteration: the zero is live
    fn, _ = _cell("read")
    assert len(_run_defs(fn)) == 6
    # and only the ops asked for go: a dead mov_r64_rm64 is not a candidate
    fn, v = _fn()
    fn.insts = [Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)]),
                Inst("ret", kind=Kind.RET)]
    assert len(_run_defs(fn)) == 4


def test_a_zeroing_read_past_a_branch_that_skips_its_definition_stays() -> None:
    # defined again on one path only: the read after the join sees the zero on the other
    fn, v = _fn()
    fn.insts = [Inst("mov_r32_imm32", [RegOp(v[1], D), Imm(0)]),
                Inst("cmp_rm64_r64", [RegOp(v[0], U), RegOp(v[0], U)]),
                Inst("jz", [Label("S")], kind=Kind.BRANCH),
                Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                Inst("skip", [Label("S")], kind=Kind.LABEL),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)]),
                Inst("ret", kind=Kind.RET)]
    assert _run_defs(fn)[0] == "mov_r32_imm32"


def test_a_clobbering_op_stays() -> None:
    fn, v = _fn()
    fn.insts = [Inst("div", [RegOp(v[1], D), RegOp(v[0], U)], clobbers=(PReg("rdx", "gpr"),)),
                Inst("ret", kind=Kind.RET)]
    assert _run(fn) == ["div", "ret"]


def test_writes_memory_reads_the_form_row() -> None:
    """One row-based answer for DCE and the selector's load reuse: a memory operand counts as a
    store only in a slot the row writes (CMP/TEST read their memory first operand)."""
    fn, v = _fn()
    x, k = fn.new_vreg("vec"), fn.new_vreg("mask")
    assert writes_memory(Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)]))
    assert writes_memory(Inst("add_rm64_r64", [Mem(v[0]), RegOp(v[1], U)]))   # RMW
    assert writes_memory(Inst("vextractf128_xm_y_imm8", [Mem(v[0]), RegOp(x, U), Imm(1)]))
    assert writes_memory(Inst("kmovq_m64_k", [Mem(v[0]), RegOp(k, U)]))
    assert not writes_memory(Inst("cmp_rm64_r64", [Mem(v[0]), RegOp(v[1], U)]))
    assert not writes_memory(Inst("test_rm32_imm32", [Mem(v[0]), Imm(1)]))
    assert not writes_memory(Inst("vmovups_y_ym", [RegOp(x, D), Mem(v[0])]))
    assert not writes_memory(Inst("vextractf128_xm_y_imm8", [RegOp(x, D), RegOp(x, U), Imm(1)]))
    assert not writes_memory(Inst("vzero", [RegOp(x, D)]))
    assert writes_memory(Inst("no_such_row", [Mem(v[0])]))       # unknown: kept as a store



def test_a_constant_defined_once_and_read_stays_without_liveness(monkeypatch) -> None:
    """A register the candidate alone defines and another instruction reads is live after it
    (every read is reached by its one definition): no liveness is computed for it — the
    liveness functions are replaced by ones that fail — while a cell defined again is still
    decided by the liveness (both before the same loop)."""
    import kcc.regalloc.liveness as liveness

    fn, v = _fn()
    fn.insts = [Inst("mov_r32_imm32", [RegOp(v[2], D), Imm(7)]),
                Inst("loop", [Label("L")], kind=Kind.LOOP_BEGIN),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[2], U)]),
                Inst("jl_rel32", [Label("L")], kind=Kind.LOOP_END),
                Inst("ret", kind=Kind.RET)]

    def fail(*args, **kwargs):
        raise AssertionError("liveness computed")

    monkeypatch.setattr(liveness, "header_live_in", fail)
    monkeypatch.setattr(liveness, "live_out_sets", fail)
    assert len(_run_defs(fn)) == 5
    monkeypatch.undo()
    fn, v = _cell("store")
    fn.insts.insert(0, Inst("mov_r32_imm32", [RegOp(v[2], D), Imm(7)]))
    fn.insts.insert(-1, Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[2], U)]))
    assert _run_defs(fn)[:2] == ["mov_r32_imm32", "loop"]       # the cell's zeroing went


def test_a_read_of_itself_does_not_keep_a_zeroing() -> None:
    """A candidate's read of its own register is no later read: a register the candidate
    alone defines and only it reads is not live after it, and it goes (what the liveness
    says; the shortcut for registers defined once must not keep it)."""
    fn, v = _fn()
    fn.insts = [Inst("vzero", [RegOp(v[1], D), RegOp(v[1], U)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[2], U)]),
                Inst("ret", kind=Kind.RET)]
    assert _run_defs(fn) == ["mov_rm32_r32", "ret"]


def test_a_zeroing_read_first_on_the_fall_through_path_stays_without_liveness(
        monkeypatch) -> None:
    """An accumulator zeroed, then read and updated in its loop (defined twice): the next
    instruction that mentions it on the fall-through path reads it, a path with no
    definition, so it is live — decided without liveness (which is made to fail); past a
    JUMP that path is not known, and the liveness decides (here: the zero is dead)."""
    import kcc.regalloc.liveness as liveness

    fn, _ = _cell("read")

    def fail(*args, **kwargs):
        raise AssertionError("liveness computed")

    monkeypatch.setattr(liveness, "header_live_in", fail)
    assert len(_run_defs(fn)) == 6
    monkeypatch.undo()
    fn, v = _fn()
    fn.insts = [Inst("mov_r32_imm32", [RegOp(v[1], D), Imm(0)]),
                Inst("jmp_rel32", [Label("J")], kind=Kind.JUMP),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)]),      # not reached
                Inst("j", [Label("J")], kind=Kind.LABEL),
                Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)]),
                Inst("ret", kind=Kind.RET)]
    assert _run_defs(fn)[0] == "jmp_rel32"


def test_a_compare_whose_setcc_is_dead_goes_with_flag_only() -> None:
    """x86's CMP/TEST only set flags (flag_only): one whose SETcc's bool nobody reads goes
    with it (the SETcc first, then the CMP its pairing freed, then the AND that fed it); a
    TEST a CMOVcc reads stays; without flag_only (the AMD selector's call) the CMP stays."""
    def build() -> tuple[MFunction, list]:
        fn, v = _fn()
        fn.insts = [Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                    Inst("and_rm32_imm32", [RegOp(v[1], DU), Imm(0xFF00)]),
                    Inst("cmp_rm32_imm8", [RegOp(v[1], U), Imm(0)]),
                    Inst("setne_rm8", [RegOp(v[2], D)]),                  # its bool: unread
                    Inst("mov_r64_rm64", [RegOp(v[3], D), RegOp(v[0], U)]),
                    Inst("test_rm32_imm32", [RegOp(v[0], U), Imm(0xFF00)]),
                    Inst("cmovne_r32_rm32", [RegOp(v[3], DU), RegOp(v[0], U)]),
                    Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[3], U)]),
                    Inst("ret", kind=Kind.RET)]
        return fn, v
    fn, _ = build()
    eliminate_dead(fn, writes_memory, _flags_of, flag_only=True)
    assert [i.op for i in fn.insts] == ["mov_r64_rm64", "test_rm32_imm32", "cmovne_r32_rm32",
                                        "mov_rm32_r32", "ret"]
    fn, _ = build()
    eliminate_dead(fn, writes_memory, _flags_of)
    assert "cmp_rm32_imm8" in [i.op for i in fn.insts]


def test_a_dead_reader_at_the_loop_top_frees_a_definition_below_it() -> None:
    """The backward sweep meets the definition of v[1] (at the loop's bottom) before its one
    reader (at the loop's top, the value carried around the back edge): the reader goes,
    and only a second sweep can see the definition dead. eliminate_dead stops early when a
    sweep cannot find more; this is the case where it must not."""
    fn, v = _fn()
    fn.insts = [Inst("mov_r32_imm32", [RegOp(v[1], D), Imm(0)]),
                Inst("loop", [Label("L")], kind=Kind.LOOP_BEGIN),
                Inst("mov_r64_rm64", [RegOp(v[2], D), RegOp(v[1], U)]),     # v[2]: unread
                Inst("mov_r32_imm32", [RegOp(v[1], D), Imm(7)]),
                Inst("jl_rel32", [Label("L")], kind=Kind.LOOP_END),
                Inst("ret", kind=Kind.RET)]
    assert eliminate_dead(fn, writes_memory, _flags_of) == 3
    assert [i.op for i in fn.insts] == ["loop", "jl_rel32", "ret"]



def _chain(fn: MFunction, v: list, tail: list[Inst]) -> list[str]:
    """A lane read: MOV, SHR 1, AND 1 on one register v[1] (two read-modify-writes), then
    tail and RET; runs eliminate_dead_chains and returns what is left."""
    fn.insts = [Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                Inst("shr_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                Inst("and_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                *tail, Inst("ret", kind=Kind.RET)]
    eliminate_dead_chains(fn, writes_memory, _flags_of)
    return [i.op for i in fn.insts]


def test_a_dead_read_modify_write_chain_goes() -> None:
    """eliminate_dead keeps SHR and AND (each reads the other's register); the chain rule
    removes both, and eliminate_dead then the MOV that fed them."""
    fn, v = _fn()
    fn.insts = [Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                Inst("shr_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                Inst("and_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                Inst("ret", kind=Kind.RET)]
    assert len(_run(fn)) == 4                       # eliminate_dead alone: all kept
    assert eliminate_dead_chains(fn, writes_memory, _flags_of) == 3
    assert [i.op for i in fn.insts] == ["ret"]


def test_a_stored_chain_stays() -> None:
    fn, v = _fn()
    left = _chain(fn, v, [Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[1], U)])])
    assert len(left) == 5


def test_a_chain_whose_flags_are_read_stays() -> None:
    """The AND's flags are read by a CMOVcc (whose result is stored): the chain stays."""
    fn, v = _fn()
    left = _chain(fn, v, [Inst("cmove_r64_rm64", [RegOp(v[2], DU), RegOp(v[0], U)]),
                          Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[2], U)])])
    assert len(left) == 6


def test_one_side_effect_rule_serves_every_removal() -> None:
    """`removable` is the rule eliminate_dead, eliminate_dead_chains and eliminate_dead_defs
    share: a clobbering op, a memory write or a non-OP is never removed, by any of them."""
    from kcc.isel.dce import removable
    fn, v = _fn()
    assert removable(Inst("add_rm32_imm8", [RegOp(v[1], DU), Imm(4)]), writes_memory)
    clob = Inst("div", [RegOp(v[1], DU)], clobbers=(PReg("rdx", "gpr"),))
    store = Inst("add_rm64_r64", [Mem(v[0]), RegOp(v[1], U)])
    assert not removable(clob, writes_memory) and not removable(store, writes_memory)
    assert not removable(Inst("ret", kind=Kind.RET), writes_memory)
    # a chain on v1 whose first link clobbers rdx: the chain rule keeps all of it
    fn.insts = [Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]), clob,
                Inst("and_rm32_imm8", [RegOp(v[1], DU), Imm(1)]), Inst("ret", kind=Kind.RET)]
    assert eliminate_dead_chains(fn, writes_memory, _flags_of) == 0
    # a dead zeroing that clobbers stays for eliminate_dead_defs too
    fn.insts = [Inst("mov_r32_imm32", [RegOp(v[2], D), Imm(0)], clobbers=(PReg("rdx", "gpr"),)),
                Inst("mov_r32_imm32", [RegOp(v[2], D), Imm(1)]),
                Inst("mov_rm32_r32", [Mem(v[0]), RegOp(v[2], U)]), Inst("ret", kind=Kind.RET)]
    assert eliminate_dead_defs(fn, writes_memory, _flags_of, frozenset({"mov_r32_imm32"})) == 0
    fn.insts[0].clobbers = ()
    assert eliminate_dead_defs(fn, writes_memory, _flags_of, frozenset({"mov_r32_imm32"})) == 1


def test_the_chain_rule_reads_known_as_it_asks_afresh() -> None:
    """eliminate_dead_chains given eliminate_dead's `known` (uses and defs by instruction)
    removes what it removes without: the answers read there are the ones asked again."""
    from kcc.isel.dce import _uses_defs
    for tail in ([], [Inst("mov_rm32_r32", [Mem(None), RegOp(None, U)])]):
        went = []
        for with_known in (False, True):
            fn, v = _fn()
            tl = [Inst(i.op, [Mem(v[0]) if isinstance(o, Mem) else RegOp(v[1], U)
                              for o in i.operands]) for i in tail]
            fn.insts = [Inst("mov_r64_rm64", [RegOp(v[1], D), RegOp(v[0], U)]),
                        Inst("shr_rm32_imm8", [RegOp(v[1], DU), Imm(1)]),
                        Inst("and_rm32_imm8", [RegOp(v[1], DU), Imm(1)]), *tl,
                        Inst("ret", kind=Kind.RET)]
            known: dict = {}
            eliminate_dead(fn, writes_memory, _flags_of, known)
            assert all(known[id(i)][1:] == _uses_defs(i) for i in fn.insts)
            n = eliminate_dead_chains(fn, writes_memory, _flags_of, known if with_known else None)
            went.append((n, [i.op for i in fn.insts]))
        assert went[0] == went[1] and went[0][0] == (0 if tail else 3)
