"""slp's upward seed (kcc/passes/slp_up.py): scalar work on the lanes of one vector, packed
from the vector up where the downward packing would leave it scalar.

The kernel is tinygrad's cummax_777 r_3_128 in small: 4 rows of 4 consecutive elements, each
row loaded as one vector and taken apart; element j of row r is selected against a padding
bound (`e < c - j ? -inf : x`, only rows 0 and 1 have one), and accumulator lane r is the
max over row r's 4 elements. The accumulator's vector MAXes read transposed tuples (element j
of every row) whose lanes are not isomorphic (two selects, two bare lanes). What is checked:
the selects become vector selects of whole rows (no scalar WHERE is left), users that do not
pack stay as they were, and the values (the graph against the reference interpreter, the x86
objects at x86-64-v3 and v4 against it).
"""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.targets.amd.desc import AMD
from kcc.targets.x86.arch import x86_desc
from x86_util import assert_same, compile_and_run, random_inputs


def kernel(gated_rows: int = 2, bare_user: bool = False) -> str:
    """out[4i + r] = max over j of (row r element j, -inf where e < 100*r + 50 - j for the
    first `gated_rows` rows, twice the element for the others), e = 8i; ``bare_user`` adds
    x[0][1] * float(i) to out[4i] (a user whose other operand tuple would be a STACK of
    unrelated scalars: not packed)."""
    t = ["# kcc-uop 1", "%out = PARAM ParamArg(0, float32, 64)",
         "%x = PARAM ParamArg(1, float32, 512)", "%i = RANGE(16) (0, LOOP)",
         "%e = MUL(%i, 8)"]
    if gated_rows:
        t.append("%ninf = CAST(-inf) float32")
    for r in range(4):
        t += [f"%o{r} = ADD(%e, {100 * r})", f"%p{r} = SHRINK(%x, %o{r}, 4)",
              f"%v{r} = LOAD(%p{r})"]
        for j in range(4):
            t.append(f"%x{r}{j} = INDEX(%v{r}, {j})")
            if r < gated_rows:
                t += [f"%c{r}{j} = CMPLT(%e, {100 * r + 50 - j})",
                      f"%s{r}{j} = WHERE(%c{r}{j}, %ninf, %x{r}{j})"]
            else:
                t.append(f"%s{r}{j} = MUL(%x{r}{j}, 2.0)")
        t += [f"%m{r}a = MAX(%s{r}0, %s{r}1)", f"%m{r}b = MAX(%m{r}a, %s{r}2)",
              f"%m{r} = MAX(%m{r}b, %s{r}3)"]
    lanes = ["%m0", "%m1", "%m2", "%m3"]
    if bare_user:
        t += ["%k = CAST(%i) float32", "%bu = MUL(%x01, %k)", "%m0x = ADD(%m0, %bu)"]
        lanes[0] = "%m0x"
    t += [f"%st = STACK({', '.join(lanes)})", "%q = MUL(%i, 4)", "%po = SHRINK(%out, %q, 4)",
          "%w = STORE(%po, %st)", "%end = END(%w, %i)",
          'SINK(%end) KernelInfo(name="rows")']
    return "\n".join(t) + "\n"


def _prep(text: str) -> UOp:
    return simplify(lower_weak_dtypes(parse(text)))


def _scalar(g: UOp, op: Ops) -> list[UOp]:
    """The scalar float32 nodes of op (index arithmetic is int32)."""
    return [u for u in toposort([g]) if u.op is op and u.shape == () and u.dtype == dtypes.float32]


def _same_values(g0: UOp, g1: UOp, seed: int = 3) -> None:
    args = random_inputs(g0, seed=seed)
    want = interp_run(g0, [a.copy() for a in args])
    got = interp_run(g1, [a.copy() for a in args])
    assert_same(g0, got, want)


def test_row_selects_become_vector_selects() -> None:
    """Before, the transposed MAXes left the 8 selects scalar; now each gated row is one
    vector WHERE whose gate is one compare against a bound vector."""
    g0 = _prep(kernel())
    assert len(_scalar(g0, Ops.WHERE)) == 8
    g = slp(g0, x86_desc("x86-64-v4"))
    assert not _scalar(g, Ops.WHERE)
    vw = [u for u in toposort([g]) if u.op is Ops.WHERE and u.shape == (4,)]
    assert len(vw) == 2 and all(u.src[0].op is Ops.CMPLT for u in vw)
    assert not [u for u in toposort([g]) if u.op is Ops.CMPLT and u.shape == ()]
    _same_values(g0, g)


def test_users_of_some_nodes_are_the_full_maps_entries() -> None:
    """pack_upward asks first for the users of the seeds' lanes only (`_users(order, only)`):
    each entry is the full map's, in the same order, and no other node has one."""
    from kcc.passes import slp_up
    order = toposort([_prep(kernel())])
    full = slp_up._users(order)
    lanes = {u for u in order if u.op is Ops.INDEX and u.shape == () and u.src[0].shape}
    part = slp_up._users(order, lanes)
    assert part and set(part) <= lanes
    assert part == {s: us for s, us in full.items() if s in lanes}


def test_bare_rows_pack_too() -> None:
    """Every row's elementwise work (x * 2 here) is a vector op over its load: no scalar MUL
    is left."""
    g0 = _prep(kernel(gated_rows=0))
    assert len(_scalar(g0, Ops.MUL)) == 16
    g = slp(g0, x86_desc("x86-64-v4"))
    assert not _scalar(g, Ops.MUL)
    _same_values(g0, g)


def test_a_user_with_unrelated_operands_stays_scalar() -> None:
    """x[0][1] * float(i) packs with nothing (its lanes' siblings do not exist): it stays one
    scalar MUL, and the rows still pack."""
    g0 = _prep(kernel(bare_user=True))
    g = slp(g0, x86_desc("x86-64-v4"))
    assert len(_scalar(g, Ops.MUL)) == 1
    assert not _scalar(g, Ops.WHERE)
    _same_values(g0, g)


def test_targets_without_vector_registers_pack_nothing_upward() -> None:
    g0 = _prep(kernel())
    assert len(_scalar(slp(g0, AMD), Ops.WHERE)) == 8


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("seed", [0, 1])
def test_objects_match_the_interpreter(arch: str, seed: int) -> None:
    sink = parse(kernel(bare_user=True))
    args = random_inputs(sink, seed=seed)
    want = interp_run(sink, [a.copy() for a in args])
    assert_same(sink, compile_and_run(sink, args, arch), want)


def jammed_kernel(stride: int = 77) -> str:
    """Two-row unroll-and-jam of a row sum whose element goes through integer bit work
    (tinygrad's bf16_sum: round to bfloat16): acc_r += bitcast(bits(x[(2i + r)*stride + k])
    & 0xffff0000 | 1), each copy r its own one-element REG accumulator."""
    t = ["# kcc-uop 1", "%out = PARAM ParamArg(0, float32, 32)",
         f"%x = PARAM ParamArg(1, float32, {32 * stride})", "%z = CAST(0.0) float32",
         "%i = RANGE(8) (1, LOOP)", "%k = RANGE(16, %i) (0, REDUCE)"]
    for r in range(4):
        t += [f"%b{r} = BUFFER ParamArg({r}, float32, 1, addrspace=REG)",
              f"%a{r} = AFTER(%b{r}, %i)", f"%pa{r} = INDEX(%a{r}, 0)",
              f"%s{r} = STORE(%pa{r}, %z)", f"%c{r} = AFTER(%b{r}, %s{r}, %k)",
              f"%pc{r} = INDEX(%c{r}, 0)", f"%acc{r} = LOAD(%pc{r})",
              f"%row{r} = MUL(%i, {4 * stride})", f"%o{r} = ADD(%row{r}, {r * stride})",
              f"%e{r} = ADD(%o{r}, %k)", f"%px{r} = INDEX(%x, %e{r})", f"%l{r} = LOAD(%px{r})",
              f"%u{r} = BITCAST(%l{r}) uint32", f"%m{r} = AND(%u{r}, 4294901760)",
              f"%n{r} = OR(%m{r}, 1)", f"%f{r} = BITCAST(%n{r}) float32",
              f"%sum{r} = ADD(%acc{r}, %f{r})", f"%w{r} = STORE(%pc{r}, %sum{r})"]
    t += ["%g = GROUP(%w0, %w1, %w2, %w3)", "%ek = END(%g, %k)"]
    for r in range(4):
        t += [f"%d{r} = AFTER(%b{r}, %ek)", f"%pd{r} = INDEX(%d{r}, 0)", f"%v{r} = LOAD(%pd{r})",
              f"%q{r} = MUL(%i, 4)", f"%oq{r} = ADD(%q{r}, {r})", f"%po{r} = INDEX(%out, %oq{r})",
              f"%y{r} = STORE(%po{r}, %v{r})"]
    t += ["%h = GROUP(%y0, %y1, %y2, %y3)", "%end = END(%h, %i)",
          'SINK(%end) KernelInfo(name="jammed")']
    return "\n".join(t) + "\n"


def test_jammed_row_reductions_pack_their_element_work() -> None:
    """The 4 copies' bit work (BITCAST, AND, OR, BITCAST) is one 4-lane vector each over a
    STACK of the 4 element loads; the 4 accumulations stay scalar ADDs."""
    g0 = _prep(jammed_kernel())
    g = slp(g0, x86_desc("x86-64-v4"))
    ors = [u for u in toposort([g]) if u.op is Ops.OR]
    assert [u.shape for u in ors] == [(4,)]
    adds = [u for u in toposort([g]) if u.op is Ops.ADD and u.dtype == dtypes.float32]
    assert len(adds) == 4 and all(u.shape == () for u in adds)
    _same_values(g0, g)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("seed", [0, 1])
def test_jammed_objects_match_the_interpreter(arch: str, seed: int) -> None:
    sink = parse(jammed_kernel())
    args = random_inputs(sink, seed=seed)
    want = interp_run(sink, [a.copy() for a in args])
    assert_same(sink, compile_and_run(sink, args, arch), want)
