"""graph_rewrite's bottom-up walk (kcc.ir.pattern._bottom_up): each node is visited after its
srcs, left to right, once; a rule's result is rewritten in turn; memo receives every visited
node's final replacement; a rewrite that changes nothing gives back the very root."""

from __future__ import annotations

from kcc.ir import dtypes
from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
from kcc.ir.uop import UOp


def _c(v: int) -> UOp:
    return UOp(Ops.CAST, (UOp.const(v),), dtypes.int32)


def test_visits_srcs_first_left_to_right_once_and_rewrites_results() -> None:
    a, b = _c(1), _c(2)
    shared = UOp(Ops.ADD, (a, b))
    root = UOp(Ops.MUL, (shared, UOp(Ops.SUB, (shared, a))))
    seen: list[UOp] = []

    def log(x: UOp) -> None:
        seen.append(x)
        return None

    # ADD(x, y) → SUB(y, x); SUB(y, x) of two casts → ADD(x, x) once rewritten: a chain
    def swap(x: UOp) -> UOp | None:
        seen.append(x)
        if x.op is Ops.ADD and x.src[0] is a and x.src[1] is b:
            return UOp(Ops.SUB, (b, a))
        return None

    pm = PatternMatcher([(UPat((Ops.ADD, Ops.MUL, Ops.CAST, Ops.CONST), name="x"), swap),
                         (UPat(Ops.SUB, name="x"), log)])
    memo: dict[UOp, UOp] = {}
    out = graph_rewrite(root, pm, memo=memo)
    sub_ba = UOp(Ops.SUB, (b, a))
    assert out is UOp(Ops.MUL, (sub_ba, UOp(Ops.SUB, (sub_ba, a))))
    # every node once, srcs first, left to right; the rule's result SUB(b, a) walked in turn
    assert seen == [a.src[0], a, b.src[0], b, shared, sub_ba,
                    UOp(Ops.SUB, (sub_ba, a)), out]
    assert memo[shared] is sub_ba and memo[root] is out and memo[a] is a


def test_no_change_gives_back_the_root() -> None:
    root = UOp(Ops.ADD, (_c(1), _c(2)))
    pm = PatternMatcher([(UPat(Ops.ADD, name="x"), lambda x: None)])
    assert graph_rewrite(root, pm) is root


def test_rewrites_nothing_answers_what_the_walk_gives_and_seeds_its_memo() -> None:
    """rewrites_nothing is True exactly when graph_rewrite gives the root back; where a rule
    fires, the nodes it cleared before that one are in done as themselves, and the walk
    with that memo gives the walk's own result and memo values."""
    from pathlib import Path

    from kcc.frontend.parser import parse
    from kcc.ir.pattern import rewrites_nothing
    from kcc.passes.simplify import SIMPLIFY
    root = Path(__file__).resolve().parents[2]
    a, b = _c(1), _c(2)
    x = UOp(Ops.ADD, (UOp(Ops.MUL, (a, b)), UOp(Ops.SUB, (b, a))))
    graphs = [UOp(Ops.SINK, (x,))] + [parse(p.read_text(), str(p))
                                      for p in sorted((root / "examples").glob("*.uop"))]
    swap = PatternMatcher([(UPat(Ops.SUB, src=(UPat.var("p"), UPat.var("q"))),
                            lambda p, q: UOp(Ops.SUB, (q, p)) if p is b else None)])
    changed = unchanged = 0
    for g in graphs:
        for pm in (SIMPLIFY, swap):
            want_memo: dict[UOp, UOp] = {}
            want = graph_rewrite(g, pm, memo=want_memo)
            done: dict[UOp, UOp] = {}
            nothing = rewrites_nothing(g, pm, None, done)
            assert nothing == (want is g)
            if nothing:
                unchanged += 1
                continue
            changed += 1
            assert all(k is v and want_memo[k] is k for k, v in done.items())
            got = graph_rewrite(g, pm, memo=done)
            assert got is want
            assert all(done[k] is v for k, v in want_memo.items() if k in done)
    assert changed and unchanged
