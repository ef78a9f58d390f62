"""What the widening tests share (tests/passes/test_widen.py, test_widen_lanes.py): a kernel
through slp and widen for an x86 arch, checked bit for bit against the interpreter, and the
loop bounds and access widths of a graph."""

from __future__ import annotations

from x86_util import assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.widen import widen
from kcc.targets.x86.target import x86_desc


def widen_prep(text: str, arch: str = "x86-64-v3") -> tuple[UOp, UOp, UOp]:
    """(the kernel as parsed, the graph after slp, the graph after widen) for arch."""
    sink = parse(text, "k.uop")
    desc = x86_desc(arch)
    g = slp(simplify(lower_weak_dtypes(sink)), desc)
    return sink, g, widen(g, desc)


def widen_check(text: str, arch: str = "x86-64-v3", seed: int = 3,
                scalars: dict[int, int] | None = None) -> UOp:
    """The graph after widen; asserts it and the compiled object agree bit for bit with the
    interpreter on the kernel as written (random arguments, the scalar slots in `scalars` set
    to the values given)."""
    sink, _, w = widen_prep(text, arch)
    args = random_inputs(sink, seed)
    for slot, v in (scalars or {}).items():
        args[slot] = type(args[slot])(v)
    want = reference(sink, args)
    assert_same(sink, reference(w, args), want)
    assert_same(sink, compile_and_run(sink, args, arch), want)
    return w


def range_bounds(g: UOp) -> list[int]:
    """The constant bound of every RANGE of g."""
    return [const_int(u.src[0]) for u in g.toposort() if u.op is Ops.RANGE]


def shrink_widths(g: UOp) -> set[int]:
    """The widths of g's SHRINK accesses."""
    return {const_int(u.src[2]) for u in g.toposort() if u.op is Ops.SHRINK}
