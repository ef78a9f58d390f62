"""Tests of kcc/passes/reduce_transpose.py: four rows' halving trees (widen_reduce's horizontal
reductions of 8-lane vectors, one a jammed row) become lanes of one transposed reduction with
the same pairings, so float sums stay bit-identical; three rows, or a row whose vector reads
another row's result, are left alone. The oracle is the reference interpreter, on the graph
before and after and on the x86 object."""

from __future__ import annotations

import pytest
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.reduce_transpose import reduce_transpose
from kcc.targets.x86.arch import x86_desc


def _kernel(rows: int = 4, op: str = "ADD", dt: str = "float32", chained: bool = False) -> str:
    """out[k] = the halving-tree reduction of x[8k … 8k+7] for k < rows (chained: row 1's
    vector also adds row 0's result to each lane)."""
    lines = ["# kcc-uop 1", f"%o = PARAM ParamArg(0, {dt}, {rows})",
             f"%x = PARAM ParamArg(1, {dt}, {8 * rows})"]
    stores = []
    for k in range(rows):
        lines += [f"%p{k} = SHRINK(%x, {8 * k}, 8)", f"%v{k} = LOAD(%p{k})"]
        if chained and k == 1:
            lines += [f"%z = STACK({', '.join(['%r0'] * 8)})", "%w1 = ADD(%v1, %z)"]
            v = "%w1"
        else:
            v = f"%v{k}"
        lanes = [f"%l{k}_{j}" for j in range(8)]
        lines += [f"%l{k}_{j} = INDEX({v}, {j})" for j in range(8)]
        lines += [f"%lo{k} = STACK({', '.join(lanes[:4])})",
                  f"%hi{k} = STACK({', '.join(lanes[4:])})",
                  f"%c1_{k} = {op}(%lo{k}, %hi{k})"]
        lines += [f"%m{k}_{j} = INDEX(%c1_{k}, {j})" for j in range(4)]
        lines += [f"%s2_{k} = STACK(%m{k}_2, %m{k}_3, %m{k}_0, %m{k}_1)",
                  f"%c2_{k} = {op}(%c1_{k}, %s2_{k})"]
        lines += [f"%n{k}_{j} = INDEX(%c2_{k}, {j})" for j in range(4)]
        lines += [f"%s3_{k} = STACK(%n{k}_1, %n{k}_2, %n{k}_3, %n{k}_0)",
                  f"%c3_{k} = {op}(%c2_{k}, %s3_{k})", f"%r{k} = INDEX(%c3_{k}, 0)",
                  f"%q{k} = INDEX(%o, {k})", f"%st{k} = STORE(%q{k}, %r{k})"]
        stores.append(f"%st{k}")
    lines += [f"%g = GROUP({', '.join(stores)})", 'SINK(%g) KernelInfo(name="rows")']
    return "\n".join(lines) + "\n"


def _roots_read_lanes_of_one_op(g) -> bool:
    stores = [u for u in toposort([g]) if u.op is Ops.STORE]
    return len({s.src[1].src[0] for s in stores}) == 1


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("op,dt", [("ADD", "float32"), ("MAX", "int32")])
def test_four_rows_are_one_transposed_reduction(arch: str, op: str, dt: str) -> None:
    sink = parse(_kernel(op=op, dt=dt))
    g = reduce_transpose(sink, x86_desc(arch))
    assert g is not sink and _roots_read_lanes_of_one_op(g)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, reference(g, args), reference(sink, args))
        if arch == "x86-64-v3" or HAS_V4:
            assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_three_rows_or_a_row_reading_another_are_left_alone() -> None:
    desc = x86_desc("x86-64-v3")
    for text in (_kernel(rows=3), _kernel(chained=True)):
        sink = parse(text)
        assert reduce_transpose(sink, desc) is sink
