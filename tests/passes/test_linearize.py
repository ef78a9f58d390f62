"""Tests of linearize (the ordering contract), devectorize, legalize_gates, and a 200,000-node
chain through every pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from passes_support import op, param, rng, sink, strong

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, ParamArg, UOp, toposort
from kcc.passes.decompose import decompose
from kcc.passes.devectorize import chunks, devectorize
from kcc.passes.gates import legalize_gates
from kcc.passes.linearize import LinearizeError, linearize, loop_structure
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import X86_AVX2
from kcc.ir.verify import verify
from paths import DATA


def check_contract(root: UOp, lin: list[UOp]) -> None:
    """The linearize contract, checked from the list alone (independent of how it was built)."""
    at = {n: i for i, n in enumerate(lin)}
    assert len(at) == len(lin), "a node appears twice"
    assert lin[-1].op is Ops.SINK
    for i, n in enumerate(lin):
        for s in n.src:
            assert at[s] < i, f"{n.op} before its src {s.op}"
    loops = loop_structure(lin)
    # properly nested: two loops are disjoint or one contains the other
    for r1, a1, b1 in loops:
        for r2, a2, b2 in loops:
            if a1 < a2 <= b1:
                assert b2 < b1, "interleaved loops"
    # every node that depends on a range (without its END on the way) lies inside its loop
    span = {r: (a, b) for r, a, b in loops}
    dep: dict[UOp, set[UOp]] = {}
    for n in lin:
        s = set().union(*(dep[x] for x in n.src)) if n.src else set()
        if n.op is Ops.RANGE:
            s.add(n)
        if n.op is Ops.END:
            s = {r for r in s if r is not n.src[1] and n.src[1] not in dep[r]}
        dep[n] = s
        for r in s:
            assert span[r][0] <= at[n] < span[r][1], f"{n.op} outside loop {r.arg}"
    # hoisting: nodes with no range dependency are outside every loop
    for n in lin:
        if not dep[n] and n.op is not Ops.END:
            assert not any(a < at[n] < b for _, a, b in loops), f"{n.op} not hoisted"


def colmax() -> UOp:
    out, a = param(0, dtypes.float32, 16), param(1, dtypes.float32, 128)
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, 1, addrspace=AddrSpace.REG))
    j = rng(16, 0)
    init = op(Ops.STORE, op(Ops.INDEX, op(Ops.AFTER, acc, j), 0), float("-inf"))
    i = rng(8, 1, j)
    p1 = op(Ops.INDEX, op(Ops.AFTER, acc, init, i), 0)
    k = op(Ops.ADD, op(Ops.MUL, i, 16), j)
    st = op(Ops.STORE, p1, op(Ops.MAX, op(Ops.LOAD, p1), op(Ops.LOAD, op(Ops.INDEX, a, k))))
    res = op(Ops.LOAD, op(Ops.INDEX, op(Ops.AFTER, acc, op(Ops.END, st, i)), 0))
    return sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, j), res), j))


def pipeline(s: UOp, t=X86_AVX2) -> UOp:
    """The lead's pass order; the verifier runs before and after."""
    verify(s)
    s = simplify(lower_weak_dtypes(s, t), t)
    s = legalize_gates(decompose(devectorize(s, t), t), t)
    s = simplify(s, t)
    verify(s)
    return s


EXAMPLES = sorted((DATA / "kernels" / "shared").glob("*.uop"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
@pytest.mark.parametrize("target", [X86_AVX2, CUDA], ids=["x86", "cuda"])
def test_shared_examples(path: Path, target) -> None:
    from kcc.frontend.parser import parse
    s = pipeline(parse(path.read_text(), str(path)), target)
    check_contract(s, linearize(s))


def test_colmax_accumulator() -> None:
    s = pipeline(colmax())
    lin = linearize(s)
    check_contract(s, lin)
    loops = loop_structure(lin)
    (j, ja, jb), (i, ia, ib) = loops
    assert ja < ia < ib < jb          # i nested in j
    at = {n: k for k, n in enumerate(lin)}
    init = [n for n in lin if n.op is Ops.STORE and at[n] < ia and ja < at[n]]
    assert init, "the accumulator's init is inside j, before i"
    after = [n for n in lin if n.op is Ops.LOAD and ib < at[n] < jb]
    assert after, "the result is read after loop i, inside j"


def test_sibling_and_multi_range_end() -> None:
    y = param(0, dtypes.int32, 64)
    i, j = rng(8, 0), rng(8, 1)
    st = op(Ops.STORE, op(Ops.INDEX, y, op(Ops.ADD, op(Ops.MUL, i, 8), j)), i)
    e1 = op(Ops.END, st, i, j)                     # for i: for j:
    k = rng(4, 2)
    e2 = op(Ops.END, op(Ops.STORE, op(Ops.INDEX, y, k), 7), k)
    s = pipeline(sink(e1, e2))
    lin = linearize(s)
    check_contract(s, lin)
    loops = loop_structure(lin)
    assert len(loops) == 3
    (r0, a0, b0), (r1, a1, b1), (r2, a2, b2) = loops
    assert a0 < a1 < b1 < b0 and (b0 < a2 or b2 < a0)
    assert r0.arg[0] == 0 and r1.arg[0] == 1
    assert linearize(s) == lin    # deterministic


def test_hoisting_of_invariants() -> None:
    y, x = param(0, dtypes.float32, 64), param(1, dtypes.float32)
    i = rng(64, 0)
    inv = op(Ops.MUL, x, x)                        # loop invariant
    s = pipeline(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, y, i), inv), i)))
    lin = linearize(s)
    check_contract(s, lin)
    (_, a, _), = loop_structure(lin)
    assert {n.op for n in lin[:a]} >= {Ops.PARAM, Ops.MUL}


def test_unclosed_range_is_refused() -> None:
    y = param(0, dtypes.int32, 8)
    i = rng(8, 0)
    with pytest.raises(LinearizeError):
        linearize(lower_weak_dtypes(sink(op(Ops.STORE, op(Ops.INDEX, y, i), 1))))


def test_chunks() -> None:
    assert chunks(13, (8, 4)) == [(0, 8), (8, 4), (12, 1)]
    assert chunks(3, ()) == [(0, 1), (1, 1), (2, 1)]


def test_devectorize_widths() -> None:
    f = dtypes.float32
    a = param(0, f, 64)
    z = strong(0, dtypes.int32)
    v = op(Ops.LOAD, op(Ops.SHRINK, a, z, 12))
    w = op(Ops.MUL, v, v)
    st = op(Ops.STORE, op(Ops.SHRINK, a, strong(16, dtypes.int32), 12), w)
    g = devectorize(sink(st), X86_AVX2)
    shapes = sorted(u.shape for u in toposort([g]) if u.op is Ops.MUL)
    assert shapes == [(4,), (8,)]
    stores = [u for u in toposort([g]) if u.op is Ops.STORE]
    assert sorted(u.src[0].shape for u in stores) == [(4,), (8,)]
    # CUDA: loads of 4 stay vectors, ALU goes scalar
    g2 = devectorize(sink(op(Ops.STORE, op(Ops.SHRINK, a, z, 4),
                             op(Ops.MUL, op(Ops.LOAD, op(Ops.SHRINK, a, z, 4)),
                                    op(Ops.STACK, 2.0, 2.0, 2.0, 2.0)))), CUDA)
    assert all(u.shape == () for u in toposort([g2]) if u.op is Ops.MUL)
    assert [u.shape for u in toposort([g2]) if u.op is Ops.LOAD] == [(4,)]
    check_contract(g2, linearize(lower_weak_dtypes(g2)))


def test_one_lane_vectors_become_scalars() -> None:
    # a SHRINK of one element and a STACK of one lane are 1-lane vectors: every target took
    # "1 lane" as legal and left them whole, and x86 then refused or crashed on them ("CDIV on
    # vectors of int8 has no x86 rule", vpaddb on a GPR; issue 20 corpus)
    i8 = dtypes.int8
    a, b = param(0, i8, 8), param(1, i8, 8)
    z = strong(3, dtypes.int32)
    v = op(Ops.CDIV, op(Ops.LOAD, op(Ops.SHRINK, b, z, 1)), op(Ops.STACK, strong(-1, i8)))
    for target in (X86_AVX2, CUDA):
        g = devectorize(sink(op(Ops.STORE, op(Ops.SHRINK, a, z, 1), op(Ops.NEG, v))), target)
        nodes = toposort([g])
        assert all(u.shape == () for u in nodes if u.op in (Ops.CDIV, Ops.NEG, Ops.LOAD))
        assert not [u for u in nodes if u.op in (Ops.SHRINK, Ops.STACK)]
        verify(g)


@pytest.mark.parametrize("dt", ["int8", "int32", "uint64", "float32", "bfloat16"])
@pytest.mark.parametrize("alu", ["ADD", "MUL", "MAX", "CDIV", "SHL", "CMPLT"])
def test_one_lane_vector_kernels_match_the_interpreter(dt: str, alu: str) -> None:
    from kcc.frontend.parser import parse
    from x86_util import assert_same, compile_and_run, random_inputs, reference
    if dt in ("float32", "bfloat16") and alu in ("CDIV", "SHL"):
        pytest.skip("an integer op")
    out = "bool" if alu == "CMPLT" else dt
    text = f"""# kcc-uop 1
%o = PARAM ParamArg(0, {out}, 8)
%a = PARAM ParamArg(1, {dt}, 8)
%i = RANGE(8) (0, LOOP)
%p = SHRINK(%a, %i, 1)
%x = LOAD(%p)
%c = CAST(3) {dt}
%k = STACK(%c)
%y = {alu}(%x, %k)
%q = SHRINK(%o, %i, 1)
%s = STORE(%q, %y)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="one_lane")
"""
    sink_ = parse(text)
    args = random_inputs(sink_, 1)
    assert_same(sink_, compile_and_run(sink_, args), reference(sink_, args))


def test_gated_load_select() -> None:
    out, x = param(0, dtypes.int32, 10), param(1, dtypes.int32, 7)
    i = rng(10, 0)
    v = op(Ops.LOAD, op(Ops.INDEX, x, op(Ops.SUB, i, 3)), strong(0, dtypes.int32),
           op(Ops.CMPLT, 2, i))
    s = lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), v), i)))
    g = legalize_gates(s, X86_AVX2)
    loads = [u for u in toposort([g]) if u.op is Ops.LOAD]
    assert len(loads) == 1 and len(loads[0].src) == 1
    idx = loads[0].src[0].src[1]
    # the safe index is i & -gate: 0 when the gate is false, the index when it is true
    assert idx.op is Ops.AND and idx.src[1].op is Ops.NEG
    assert idx.src[1].src[0].op is Ops.CAST and idx.src[1].src[0].src[0].op is Ops.CMPLT
    assert legalize_gates(s, CUDA) is s
    check_contract(g, linearize(g))


def test_long_chain_every_pass() -> None:
    y = param(0, dtypes.float32, 4)
    x = param(1, dtypes.float32)
    v: UOp = x
    for k in range(200_000):
        v = op(Ops.ADD, v, 0.5 if k % 2 else 1.5)
    s = sink(op(Ops.STORE, op(Ops.INDEX, y, 0), v))
    s = simplify(lower_weak_dtypes(s, X86_AVX2), X86_AVX2)
    s = legalize_gates(decompose(devectorize(s, X86_AVX2), X86_AVX2), X86_AVX2)
    s = simplify(s, X86_AVX2)
    lin = linearize(s)
    assert lin[-1].op is Ops.SINK and len(lin) == len(toposort([s]))
