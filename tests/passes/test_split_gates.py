"""Tests of kcc/passes/split_gates.py: a loop whose loads are gated by compares of its counter
with constants runs as consecutive loops, one per range where every such gate is constant,
the gates folded; loops it must not split are left alone. The oracle is the reference
interpreter, on the graph before and after and on the x86 objects."""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.split_gates import split_gates
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc
from x86_util import assert_same, compile_and_run, random_inputs, reference

V4 = x86_desc("x86-64-v4")

# cumsum_5000's E_1250_4 at 40: out[4i … 4i+3] = x[4i+8 … 4i+11] + (t[((i + 6) >> 3) - 1]
# where GATE, else 0.0): the total's index is -1 for i < 2, which the gate `1 < i` masks
ROWS = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 160)
%x = PARAM ParamArg(1, float32, 168)
%t = PARAM ParamArg(2, float32, 6)
%z = CAST(0.0) float32
%i = RANGE(40) (0, WEAK)
%o = SHL(%i, 2)
%po = SHRINK(%out, %o, 4)
%ox = MULACC(%i, 4, 8)
%px = SHRINK(%x, %ox, 4)
%v = LOAD(%px)
%a = ADD(%i, 6)
%b = SHR(%a, 3)
%c = ADD(%b, -1)
%pt = INDEX(%t, %c)
%lo = CMPLT(1, %i)
GATES
%s = LOAD(%pt, %z, %g)
%ss = STACK(%s, %s, %s, %s)
%w = ADD(%v, %ss)
%st = STORE(%po, %w)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="rows")
"""
ONE = "%g = AND(%lo, %lo)"                  # 1 < i: one cut, at 2
TWO = "%hi = CMPLT(%i, 37)\n%g = AND(%lo, %hi)"     # and i < 37: cuts at 2 and 37
THREE = TWO.replace("%g = AND(%lo, %hi)", "%mid = CMPLT(20, %i)\n%h2 = AND(%lo, %hi)\n"
                    "%g = AND(%h2, %mid)")


def _split(text: str, desc=V4) -> tuple[UOp, UOp]:
    sink = parse(text, "k.uop")
    g = simplify(lower_weak_dtypes(sink, desc), desc)
    out = split_gates(g, desc)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, reference(out, args), reference(sink, args))
    return sink, out


def _bounds(g: UOp) -> list[int | None]:
    return sorted(const_int(u.src[0]) for u in g.toposort() if u.op is Ops.RANGE)


def _gated(g: UOp) -> list[UOp]:
    return [u for u in g.toposort() if u.op is Ops.LOAD and len(u.src) == 3]


def test_one_cut_two_loops_and_no_gate() -> None:
    _, out = _split(ROWS.replace("GATES", ONE))
    assert _bounds(out) == [2, 38] and not _gated(out)
    loads = [u for u in out.toposort() if u.op is Ops.LOAD and u.shape == ()]
    assert len(loads) == 1                   # the first loop adds the alternative, 0.0


def test_two_cuts_peel_both_ends() -> None:
    _, out = _split(ROWS.replace("GATES", TWO))
    assert _bounds(out) == [2, 3, 35] and not _gated(out)


def test_more_pieces_than_allowed_and_gpus_are_left_alone() -> None:
    text = ROWS.replace("GATES", THREE)
    sink, out = _split(text)
    assert _bounds(out) == [40] and _gated(out)
    _, gpu = _split(ROWS.replace("GATES", ONE), CUDA)
    assert _bounds(gpu) == [40]


def test_a_loop_that_widens_is_left_alone() -> None:
    # one lane an iteration, the gated load at i - 1: widen_lanes gates it lane by lane
    text = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 40)
%x = PARAM ParamArg(1, float32, 40)
%z = CAST(0.0) float32
%i = RANGE(40) (0, WEAK)
%j = ADD(%i, -1)
%px = INDEX(%x, %j)
%g = CMPLT(0, %i)
%v = LOAD(%px, %z, %g)
%po = INDEX(%out, %i)
%st = STORE(%po, %v)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="shift")
"""
    _, out = _split(text)
    assert _bounds(out) == [40]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("gates", [ONE, TWO])
def test_split_loops_run_like_the_interpreter(arch: str, gates: str) -> None:
    sink = parse(ROWS.replace("GATES", gates), "k.uop")
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _many_loops(n: int) -> str:
    """n top-level loops of 40, each adding x[i] to t[i] read under the gate i < 3 + k % 30."""
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {n * 40})",
             "%x = PARAM ParamArg(1, float32, 40)", "%t = PARAM ParamArg(2, float32, 40)"]
    for k in range(n):
        lines += [f"%r{k} = RANGE(40) ({k}, LOOP)", f"%g{k} = CMPLT(%r{k}, {3 + k % 30})",
                  f"%pt{k} = INDEX(%t, %r{k})", f"%v{k} = LOAD(%pt{k}, 0.0, %g{k})",
                  f"%px{k} = INDEX(%x, %r{k})", f"%w{k} = LOAD(%px{k})",
                  f"%s{k} = ADD(%v{k}, %w{k})", f"%o{k} = ADD(%r{k}, {k * 40})",
                  f"%po{k} = INDEX(%out, %o{k})", f"%st{k} = STORE(%po{k}, %s{k})",
                  f"%e{k} = END(%st{k}, %r{k})"]
    ends = ", ".join(f"%e{k}" for k in range(n))
    return "\n".join([*lines, f'SINK({ends}) KernelInfo(name="k")']) + "\n"


def test_the_regions_are_found_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each loop's region was the whole order filtered per loop (loops x nodes lookups) and
    its END's subgraph walked per loop: now one pass over the order and a walk of the region;
    counted as lookups of the range sets, linear in the kernel."""
    import kcc.passes.split_gates as sg
    lookups = [0]

    class Counting(dict):
        def __getitem__(self, k: UOp) -> frozenset:
            lookups[0] += 1
            return super().__getitem__(k)

    real = sg.range_sets
    monkeypatch.setattr(sg, "range_sets", lambda order: Counting(real(order)))
    for n in (50, 200):
        g = parse(_many_loops(n), "many")
        lookups[0] = 0
        out = split_gates(g, V4)
        assert out is not g
        nodes = len(g.toposort())
        assert lookups[0] < 6 * nodes, (n, lookups[0], nodes)


def test_a_graph_without_gated_loads_asks_no_range_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    # one loop whose load is ungated: no loop has a cut, none is looked at
    import kcc.passes.split_gates as sg
    asked = []
    real = sg.range_sets
    monkeypatch.setattr(sg, "range_sets", lambda order: asked.append(1) or real(order))
    text = _many_loops(1).replace("%g0 = CMPLT(%r0, 3)\n", "") \
        .replace("LOAD(%pt0, 0.0, %g0)", "LOAD(%pt0)")
    g = parse(text, "k.uop")
    assert split_gates(g, V4) is g and not asked
    assert split_gates(parse(_many_loops(1), "k.uop"), V4) is not g and asked
