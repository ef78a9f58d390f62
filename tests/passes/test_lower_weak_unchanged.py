"""Weak-dtype lowering (kcc/passes/lower_weak.py) leaves a strong subgraph as it is: the walk
stops at a strong node whose srcs are all unchanged (or literals a CAST keeps), and a graph
without weak nodes is returned itself; a strong node above a weak one is still rebuilt."""

from __future__ import annotations

from kcc.frontend.parser import parse
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import check_no_weak, lower_weak_dtypes

STRONG = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 16)
%a = PARAM ParamArg(1, float32, 16)
%n = CAST(16) int32
%i = RANGE(%n) (0, LOOP)
%x = INDEX(%a, %i)
%v = LOAD(%x)
%c = CAST(2.0) float32
%m = MUL(%v, %c)
%y = INDEX(%o, %i)
%s = STORE(%y, %m)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="strong")
"""


def test_strong_kernel_is_returned_unchanged() -> None:
    sink = parse(STRONG)
    assert lower_weak_dtypes(sink) is sink


def test_strong_node_above_weak_is_rebuilt() -> None:
    """%k = ADD(%i, 1) with a weak literal: the strong LOAD/MUL/STORE above it are new nodes,
    the strong CAST(2.0) float32 and PARAMs beside it are the same objects."""
    text = STRONG.replace("%x = INDEX(%a, %i)", "%k = ADD(%i, 1)\n%x = INDEX(%a, %k)") \
        .replace("16)\n%n", "17)\n%n")
    sink = parse(text)
    out = lower_weak_dtypes(sink)
    check_no_weak(out)
    before, after = set(toposort([sink])), set(toposort([out]))
    assert out is not sink
    kept = {u.op.name for u in before & after}
    assert {"PARAM", "RANGE", "MUL"} - kept == {"MUL"}     # MUL reads the rebuilt LOAD
    assert "CAST" in kept
