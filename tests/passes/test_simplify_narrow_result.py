"""simplify's narrow_result: CAST(t: int32 → int8) of a wrapping ADD/SUB/MUL/… tree that
computes in int8 on int32 values (tinygrad's int8 matmul r_8_8_8: int32 loads truncated to
int8, int8 products, sign-extended and summed in int32, the sum truncated) becomes the same
tree in int32 — the low 8 bits of the result depend only on the low 8 bits of the operands.
On x86 that is VPMULLD + VPADDD on int32 lanes instead of byte multiplies and 4:1 casts
(87 → 24 ns; issue 24 item 2). The oracle is the reference interpreter on the graph before and
after, over random int32 inputs and their extremes."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.interp import run
from kcc.passes.simplify import simplify

KERNEL = """# kcc-uop 1
%out = PARAM ParamArg(0, {nd}, 64)
%a = PARAM ParamArg(1, {wd}, 64)
%b = PARAM ParamArg(2, {wd}, 64)
%nn = CAST(64) int32
%c = CAST(7) {nd}
%i = RANGE(%nn) (0, LOOP)
%pa = INDEX(%a, %i)
%va = LOAD(%pa)
%pb = INDEX(%b, %i)
%vb = LOAD(%pb)
%na = CAST(%va) {nd}
%nb = CAST(%vb) {nd}
%m = {op}(%na, %nb)
%mc = {mid}(%m, %c)
%w = CAST(%mc) {wd}
%s = ADD(%w, %va)
%r = CAST(%s) {nd}
%op = INDEX(%out, %i)
%st = STORE(%op, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def _inputs(wd: str) -> list[np.ndarray]:
    info = np.iinfo(wd)
    rng = np.random.default_rng(5)
    xs = [rng.integers(info.min, info.max, 64, dtype=wd, endpoint=True) for _ in range(2)]
    xs[0][:4] = [info.min, info.max, -1 if info.min else 0, 0]
    xs[1][:4] = [info.min, -1 if info.min else 1, info.max, 255]
    return xs


def _outs(g, nd: str, xs) -> np.ndarray:
    out = np.zeros(64, nd)
    run(g, [out] + [x.copy() for x in xs])
    return out


@pytest.mark.parametrize("op", ["MUL", "ADD", "SUB", "XOR"])
@pytest.mark.parametrize("mid", ["ADD", "MUL", "AND"])
@pytest.mark.parametrize("nd,wd", [("int8", "int32"), ("uint8", "int32"), ("int16", "int32"),
                                   ("int8", "int64"), ("uint16", "uint32")])
def test_narrow_arithmetic_under_a_narrowing_cast_computes_wide(op, mid, nd, wd) -> None:
    sink = parse(KERNEL.format(nd=nd, wd=wd, op=op, mid=mid), "k.uop")
    after = simplify(sink)
    arith = [u for u in after.toposort() if u.op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.XOR,
                                                     Ops.AND) and not u.shape]
    assert arith and all(u.dtype.name == wd for u in arith if u.dtype.name in (nd, wd))
    assert not any(u.dtype.name == nd for u in arith)
    xs = _inputs(wd)
    assert (_outs(sink, nd, xs) == _outs(after, nd, xs)).all()


def test_left_alone_where_a_cast_would_be_added() -> None:
    # an int8 load among the operands: computing in int32 would add its widening cast
    text = KERNEL.format(nd="int8", wd="int32", op="MUL", mid="ADD").replace(
        "%a = PARAM ParamArg(1, int32, 64)", "%a = PARAM ParamArg(1, int8, 64)").replace(
        "%na = CAST(%va) int8\n", "").replace("MUL(%na, %nb)", "MUL(%va, %nb)").replace(
        "ADD(%w, %va)", "ADD(%w, %vb)")
    sink = parse(text, "k.uop")
    after = simplify(sink)
    assert any(u.op is Ops.MUL and u.dtype.name == "int8" for u in after.toposort())


def _chain(n: int) -> str:
    """out[i] = int8(a[i] + sum of n int8-wrapped terms), each term CAST back to int32."""
    lines = ["# kcc-uop 1", "%out = PARAM ParamArg(0, int8, 64)",
             "%a = PARAM ParamArg(1, int32, 64)", "%i = RANGE(64) (0, LOOP)",
             "%pa = INDEX(%a, %i)", "%v0 = LOAD(%pa)"]
    for k in range(n):
        lines += [f"%n{k} = CAST(%v{k}) int8", f"%m{k} = MUL(%n{k}, %n{k})",
                  f"%w{k} = CAST(%m{k}) int32", f"%v{k + 1} = ADD(%w{k}, %v{k})"]
    lines += [f"%r = CAST(%v{n}) int8", "%po = INDEX(%out, %i)", "%st = STORE(%po, %r)",
              "%e = END(%st, %i)", 'SINK(%e) KernelInfo(name="k")']
    return "\n".join(lines) + "\n"


def test_the_walk_under_one_cast_is_bounded() -> None:
    """The rewrite reads at most NARROW_MAX nodes under a CAST (linear per CAST, no deep
    recursion): a short chain is rewritten, one of thousands of links is left as it is and
    still simplifies without a RecursionError; both keep the interpreter's values."""
    from kcc.passes.simplify import NARROW_MAX
    a = np.random.default_rng(3).integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    for n, rewritten in ((4, True), (3 * NARROW_MAX, False)):
        g = parse(_chain(n), "chain")
        out = simplify(g)
        casts = [u for u in out.toposort() if u.op is Ops.CAST and u.dtype.bits == 8]
        assert (len(casts) == 1) == rewritten, (n, len(casts))
        want = run(g, [np.zeros(64, np.int8), a])[0]
        np.testing.assert_array_equal(run(out, [np.zeros(64, np.int8), a])[0], want)
