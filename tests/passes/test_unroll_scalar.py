"""Innermost loops that divide 64-bit integers, unrolled (passes/unroll_scalar.py `scalar_loops`):
x86 has no vector form of a 64-bit multiply-high, so these loops stay scalar, and one
division a trip ran 0.51x clang's five (tinygrad sweep u64_div E_50)."""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.unroll import unroll
from kcc.targets.x86.target import x86_desc
from x86_util import assert_same, compile_and_run, random_inputs, reference

DIV = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, {nout})
%x = PARAM ParamArg(1, {dt}, {n})
%i = RANGE({n}) (0, WEAK)
%xi = INDEX(%x, %i)
%v = LOAD(%xi)
%q = {op}(%v, {d})
%oi = INDEX(%out, {oidx})
%s = STORE(%oi, %q)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="divk")
"""


def _kernel(n: int = 50, dt: str = "uint64", op: str = "CDIV", d: str = "1000003",
            oidx: str = "%i", nout: int | None = None) -> UOp:
    return parse(DIV.format(n=n, dt=dt, op=op, d=d, oidx=oidx, nout=nout or n), "divk.uop")


def _bounds(g: UOp) -> list[int]:
    return sorted(const_int(n.src[0]) for n in g.toposort() if n.op is Ops.RANGE)


def _check(sink: UOp, arch: str = "x86-64-v3") -> UOp:
    g = simplify(lower_weak_dtypes(sink))
    u = unroll(g, x86_desc(arch))
    args = random_inputs(sink, 5)
    want = reference(sink, args)
    assert_same(sink, reference(u, args), want)
    assert_same(sink, compile_and_run(sink, args, arch), want)
    return u


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("n,bounds", [(50, [10]), (64, [16]), (333, [111]), (23, [3, 5])])
def test_dividing_loop_is_unrolled(arch: str, n: int, bounds: list[int]) -> None:
    # 50 by 5, 64 by 4, 333 by 3; 23 (no factor divides) by 4 and a remainder loop of 3
    assert _bounds(_check(_kernel(n=n), arch)) == bounds


@pytest.mark.parametrize("dt,op,d", [("int64", "CDIV", "-7"), ("int64", "CMOD", "5"),
                                     ("uint64", "CMOD", "10")])
def test_signed_and_remainders(dt: str, op: str, d: str) -> None:
    assert _bounds(_check(_kernel(n=40, dt=dt, op=op, d=d))) == [10]


def test_32_bit_division_is_left_to_the_vectorizer() -> None:
    # int32 lanes divide in vectors (VPMULUDQ): widen, not this unroll, takes the loop
    assert _bounds(_check(_kernel(n=64, dt="int32", d="7"))) == [64]


def test_stores_that_alias_across_iterations_are_left_alone() -> None:
    # out[i // 2]-like: every iteration stores out[0]
    assert _bounds(_check(_kernel(n=8, oidx="0", nout=1))) == [8]


def test_unroll_hands_its_loops_to_scalar_loops(monkeypatch) -> None:
    # unroll's last reading of the loops is of the very graph scalar_loops starts from: it
    # is handed over (with its sorted cones), not read again; after a jam it is read anew
    import kcc.passes.unroll as un
    import kcc.passes.unroll_scalar as us
    made: list[UOp] = []
    real = un._Loops

    class Counted(real):            # type: ignore[misc, valid-type]
        def __init__(self, sink: UOp) -> None:
            made.append(sink)
            super().__init__(sink)

    monkeypatch.setattr(un, "_Loops", Counted)
    monkeypatch.setattr(us, "_Loops", Counted)
    desc = x86_desc("x86-64-v3")
    g = simplify(lower_weak_dtypes(_kernel(), desc), desc)
    out = unroll(g, desc)
    assert out is not g                                    # the dividing loop was jammed
    assert len(made) == len(set(map(id, made)))            # no graph read twice


def test_a_graph_that_divides_no_64_bit_integer_is_not_analysed(monkeypatch) -> None:
    # int32 division: no loop of the graph can be taken, so its loops are not even read
    import kcc.passes.unroll_scalar as us
    asked = []
    monkeypatch.setattr(us, "_Loops", lambda *a: asked.append(1))
    desc = x86_desc("x86-64-v3")
    g = simplify(lower_weak_dtypes(_kernel(n=64, dt="int32", d="7"), desc), desc)
    assert us.scalar_loops(g, desc, set()) is g and not asked
    assert not us._divides_anywhere(g) and us._divides_anywhere(_kernel())
