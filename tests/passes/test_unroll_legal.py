"""Tests of kcc/passes/unroll_legal.py's `_privatizable` (all REG buffers of a loop answered in
one walk of its cone) and of unroll.py `_Loops.dep` (made when first asked, kept)."""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.passes.linearize import range_sets
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unroll import _inner, _Loops
from kcc.passes.unroll_legal import _privatizable
from test_unroll import BASE, MATVEC

# a second accumulator, zeroed once before the outer loop (carried from one iteration to the
# next: not privatizable), beside the matvec's two (zeroed per iteration: privatizable)
CARRIED = (("%acc = BUFFER ParamArg(0, float32, 2, addrspace=REG)\n",
            "%acc = BUFFER ParamArg(0, float32, 2, addrspace=REG)\n"
            "%cy = BUFFER ParamArg(1, float32, 1, addrspace=REG)\n"
            "%cq = INDEX(%cy, 0)\n%cz = STORE(%cq, 0.0)\n"),
           ("%i = RANGE(8) (0, WEAK)", "%i = RANGE(8, %cz) (0, WEAK)"),
           ("%w1 = STORE(%q1, %s1)\n",
            "%w1 = STORE(%q1, %s1)\n%ca = AFTER(%cy, %j)\n%cp = INDEX(%ca, 0)\n"
            "%cl = LOAD(%cp)\n%cs = ADD(%cl, %x)\n%cw = STORE(%cp, %cs)\n"),
           ("%wg = GROUP(%w0, %w1)", "%wg = GROUP(%w0, %w1, %cw)"))


def _graph(carried: bool) -> UOp:
    text = MATVEC.format(**BASE)
    if carried:
        for old, new in CARRIED:
            assert old in text
            text = text.replace(old, new)
    return simplify(lower_weak_dtypes(parse(text, "matvec.uop")))


def _question(g: UOp) -> tuple[_Loops, UOp, frozenset[UOp], list[UOp], list[UOp], list[UOp]]:
    """The outer loop's question as unroll's `_analyze` asks it: (loops, r, inner, region,
    REG buffers stored in the region, cone)."""
    loops = _Loops(g)
    (r,) = [x for x in loops.end_of if const_int(x.src[0]) == 8]
    cone = loops.cone(loops.end_of[r])
    inner = frozenset(_inner(loops, r, cone) or ())
    keys = inner | {r}
    ends = {loops.end_of[x] for x in inner}
    region = [n for n in cone if not loops.dep[n].isdisjoint(keys) or n in ends]
    bufs = list(dict.fromkeys(
        n.src[0].src[0].src[0] if n.src[0].src[0].op is Ops.AFTER else n.src[0].src[0]
        for n in region if n.op is Ops.STORE))
    return loops, r, inner, region, [b for b in bufs if b.op is Ops.BUFFER], cone


@pytest.mark.parametrize("carried", [False, True])
def test_privatizable_of_several_buffers_is_each_alone(carried: bool) -> None:
    loops, r, inner, region, bufs, cone = _question(_graph(carried))
    assert len(bufs) == (2 if carried else 1)
    alone = [_privatizable(loops, r, inner, region, set(region), [b], cone) for b in bufs]
    assert alone == ([True, False] if carried else [True])
    together = _privatizable(loops, r, inner, region, set(region), bufs, cone)
    assert together == all(alone)
    assert _privatizable(loops, r, inner, region, set(region), [], cone)


def test_loops_dep_is_range_sets_made_once() -> None:
    g = _graph(False)
    loops = _Loops(g)
    assert loops._dep is None                    # not made by the reading itself
    dep = loops.dep
    assert dep is loops.dep                      # kept: asked again, not made again
    assert dep == range_sets(loops.order)
    assert set(dep) == set(loops.order)
