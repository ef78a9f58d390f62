"""int_ranges and range_sets keep each node's answer on the node (UOp._range, UOp._deps):
an answer kept from one graph must be the one a fresh walk of another graph gives. Each test
asks about a kernel, then about a graph sharing most of its nodes, and compares with the
same question asked after the slots are cleared."""

from __future__ import annotations

from pathlib import Path

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.ranges import int_ranges
from kcc.ir.uop import UNKNOWN, _set_deps, _set_range, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.simplify import simplify

ROOT = Path(__file__).resolve().parents[2]


def _graphs() -> list[UOp]:
    out = []
    for p in sorted((ROOT / "examples").glob("*.uop")) + sorted(
            (ROOT / "tests" / "data" / "kernels").glob("*.uop")):
        sink = parse(p.read_text(), str(p))
        out += [sink, simplify(sink)]
    return out


def _cleared(order: list[UOp]) -> None:
    for n in order:
        _set_range(n, UNKNOWN)
        _set_deps(n, UNKNOWN)


def test_kept_answers_are_a_fresh_walks() -> None:
    graphs = _graphs()
    assert len(graphs) > 10
    kept_r, kept_d = [], []
    for g in graphs:                        # answers kept across graphs sharing nodes
        order = toposort([g])
        kept_r.append(int_ranges([g]))
        kept_d.append(range_sets(order))
        # a subgraph asked alone reads the kept answers of its nodes
        sub = [n for n in order if n.op is Ops.END or n.op is Ops.STORE]
        for s in sub[:5]:
            assert int_ranges([s]) == {k: v for k, v in kept_r[-1].items()
                                       if k in set(toposort([s]))}
    for g, r, d in zip(graphs, kept_r, kept_d):
        order = toposort([g])
        _cleared(order)
        assert int_ranges([g]) == r
        _cleared(order)
        assert range_sets(order) == d


def test_ranges_of_roots_are_int_ranges_entries() -> None:
    # ranges_of walks only the nodes without a kept range (the frontend's bound check asks
    # its indices): its answers, asked fresh or over kept ranges, are int_ranges' entries
    from kcc.ir.ranges import ranges_of
    for g in _graphs():
        order = toposort([g])
        roots = [n for n in order if n.op in (Ops.INDEX, Ops.SHRINK) and len(n.src) > 1]
        roots = [n.src[1] for n in roots] + [n for n in order if n.op is Ops.RANGE]
        _cleared(order)
        fresh = ranges_of(roots)                     # nothing kept: every root's cone walked
        cone = set(toposort(roots))
        assert all(n._range is UNKNOWN or n in cone for n in order)
        _cleared(order)
        want = int_ranges([g])
        assert fresh == [want.get(n) for n in roots]
        assert ranges_of(roots) == fresh             # every root kept: no walk
