"""Tests of the SLP pass (kcc/passes/slp.py): which lane groups become vector ops and which stay
scalar. Values are checked by the lane-wise fuzzer (tests/fuzz/lanewise.py) against the
reference interpreter; here the structure: vector ops appear where the lanes are isomorphic,
nothing is packed where they are not, and a packed lane with another user is read back."""

from __future__ import annotations


from passes_support import param

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.target import SCALAR_ALL_NATIVE
from kcc.targets.x86.arch import X86_AVX2
from paths import DATA

KERNELS = DATA / "kernels"
C = UOp.const


def _prep(sink: UOp) -> UOp:
    return simplify(lower_weak_dtypes(sink))


def _ops(g: UOp, op: Ops) -> list[UOp]:
    return [u for u in toposort([g]) if u.op is op]


def _kernel(*effects: UOp) -> UOp:
    from kcc.ir import KernelInfo
    return UOp(Ops.SINK, effects, KernelInfo("k"))


def _vec_setup(n: int = 4):
    out, a, b = (param(i, dtypes.float32, 64) for i in range(3))
    s = C(0)
    av = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (a, s, C(n))),))
    bv = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (b, s, C(n))),))
    lane = lambda v, j: UOp(Ops.INDEX, (v, C(j)))      # noqa: E731
    return out, a, b, av, bv, lane, UOp(Ops.SHRINK, (out, s, C(n)))


def test_isomorphic_lanes_become_one_vector_op() -> None:
    g = _prep(parse((KERNELS / "lanewise_add.uop").read_text(), "lanewise_add.uop"))
    assert [u for u in _ops(g, Ops.ADD) if u.dtype == dtypes.float32 and u.shape == ()]
    r = slp(g, X86_AVX2)
    adds = [u for u in _ops(r, Ops.ADD) if u.dtype == dtypes.float32]
    assert [u.shape for u in adds] == [(4,)]
    assert not _ops(r, Ops.STACK)
    assert all(u.src[0].kind != "value" for u in _ops(r, Ops.INDEX))   # no lane extracts


def test_target_without_vectors_is_left_alone() -> None:
    g = _prep(parse((KERNELS / "lanewise_add.uop").read_text(), "lanewise_add.uop"))
    assert slp(g, SCALAR_ALL_NATIVE) is g


def test_non_isomorphic_lanes_stay_scalar() -> None:
    out, a, b, av, bv, lane, op = _vec_setup()
    lanes = [UOp(Ops.ADD if j != 2 else Ops.MUL, (lane(av, j), lane(bv, j))) for j in range(4)]
    g = _prep(_kernel(UOp(Ops.STORE, (op, UOp(Ops.STACK, tuple(lanes))))))
    r = slp(g, X86_AVX2)
    assert all(u.shape == () for u in _ops(r, Ops.ADD) + _ops(r, Ops.MUL))


def test_shuffled_and_broadcast_operands_pack_as_stacks() -> None:
    out, a, b, av, bv, lane, op = _vec_setup()
    x = param(3, dtypes.float32)
    lanes = [UOp(Ops.MUL, (UOp(Ops.ADD, (lane(av, 3 - j), x)), lane(bv, j))) for j in range(4)]
    g = _prep(_kernel(UOp(Ops.STORE, (op, UOp(Ops.STACK, tuple(lanes))))))
    r = slp(g, X86_AVX2)
    (add,) = _ops(r, Ops.ADD)
    (mul,) = _ops(r, Ops.MUL)
    assert add.shape == mul.shape == (4,)
    assert mul.src[1].op is Ops.LOAD and mul.src[1].src[0].src[0] is b
    rev, bcast = add.src
    assert rev.op is Ops.STACK and [s.src[1].arg for s in rev.src] == [3, 2, 1, 0]
    assert bcast.op is Ops.STACK and all(s is x for s in bcast.src)


def test_consecutive_scalar_loads_become_a_vector_load() -> None:
    out, a, b, av, bv, lane, op = _vec_setup()
    loads = [UOp(Ops.LOAD, (UOp(Ops.INDEX, (b, C(8 + j))),)) for j in range(4)]
    lanes = [UOp(Ops.SUB, (lane(av, j), loads[j])) for j in range(4)]
    g = _prep(_kernel(UOp(Ops.STORE, (op, UOp(Ops.STACK, tuple(lanes))))))
    r = slp(g, X86_AVX2)
    vload = [u for u in _ops(r, Ops.LOAD) if u.shape == (4,) and u.src[0].src[0] is b]
    assert len(vload) == 1 and _ops(r, Ops.SUB)[0].shape == (4,)


def test_lanes_of_consecutive_vector_loads_become_one_wider_load() -> None:
    # b[8…11] and b[12…15] (the second at `(x + 4) + 8`: unroll-and-jam's copies), every lane
    # in order: one 8-lane load of b[8…15] on AVX2, no STACK left
    out, a, b, av, bv, lane, op = _vec_setup(8)
    x = param(3, dtypes.int32)
    base = UOp(Ops.ADD, (x, C(8)))
    v0 = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (b, base, C(4))),))
    v1 = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (b, UOp(Ops.ADD, (UOp(Ops.ADD, (x, C(4))), C(8))),
                                         C(4))),))
    lanes = [UOp(Ops.MUL, (lane(av, j), lane(v0 if j < 4 else v1, j % 4))) for j in range(8)]
    g = _prep(_kernel(UOp(Ops.STORE, (op, UOp(Ops.STACK, tuple(lanes))))))
    r = slp(g, X86_AVX2)
    (mul,) = _ops(r, Ops.MUL)
    assert mul.shape == (8,) and not _ops(r, Ops.STACK)
    wide = mul.src[1]
    assert wide.op is Ops.LOAD and wide.shape == (8,) and wide.src[0].src[0] is b
    # out of order, or with a gap between the loads: a STACK of their lanes
    for second in (UOp(Ops.ADD, (x, C(16))), UOp(Ops.ADD, (x, C(4)))):
        v1 = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (b, second, C(4))),))
        lanes = [UOp(Ops.MUL, (lane(av, j), lane(v0 if j < 4 else v1, j % 4)))
                 for j in range(8)]
        g = _prep(_kernel(UOp(Ops.STORE, (op, UOp(Ops.STACK, tuple(lanes))))))
        (mul,) = _ops(slp(g, X86_AVX2), Ops.MUL)
        assert mul.src[1].op is Ops.STACK


def test_gapped_loads_stay_scalar() -> None:
    out, a, b, av, bv, lane, op = _vec_setup()
    loads = [UOp(Ops.LOAD, (UOp(Ops.INDEX, (b, C(2 * j))),)) for j in range(4)]
    lanes = [UOp(Ops.SUB, (lane(av, j), loads[j])) for j in range(4)]
    g = _prep(_kernel(UOp(Ops.STORE, (op, UOp(Ops.STACK, tuple(lanes))))))
    r = slp(g, X86_AVX2)
    assert all(u.shape == () for u in _ops(r, Ops.LOAD) if u.src[0].src[0] is b)


def test_packed_lane_with_another_user_is_read_back_not_recomputed() -> None:
    out, a, b, av, bv, lane, op = _vec_setup()
    lanes = [UOp(Ops.ADD, (lane(av, j), lane(bv, j))) for j in range(4)]
    extra = UOp(Ops.STORE, (UOp(Ops.INDEX, (out, C(40))), lanes[1]))
    g = _prep(_kernel(UOp(Ops.STORE, (op, UOp(Ops.STACK, tuple(lanes)))), extra))
    r = slp(g, X86_AVX2)
    (add,) = _ops(r, Ops.ADD)
    st = next(u for u in _ops(r, Ops.STORE) if u.src[0].op is Ops.INDEX)
    assert st.src[1].op is Ops.INDEX and st.src[1].src == (add, C(1))


def test_consecutive_scalar_stores_become_a_vector_store() -> None:
    out, a, b, av, bv, lane, op = _vec_setup()
    sts = [UOp(Ops.STORE, (UOp(Ops.INDEX, (out, C(4 + j))), UOp(Ops.MUL, (lane(av, j),
                                                                       lane(bv, j)))))
           for j in range(4)]
    r = slp(_prep(_kernel(UOp(Ops.GROUP, tuple(sts)))), X86_AVX2)
    (st,) = _ops(r, Ops.STORE)
    assert st.src[0].op is Ops.SHRINK and st.src[1].op is Ops.MUL and st.src[1].shape == (4,)


def test_a_store_that_feeds_another_of_its_group_is_not_merged() -> None:
    out, a, b, av, bv, lane, op = _vec_setup()
    st0 = UOp(Ops.STORE, (UOp(Ops.INDEX, (out, C(0))), UOp(Ops.ADD, (lane(av, 0), lane(bv, 0)))))
    back = UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (out, st0)), C(0))),))
    rest = [UOp(Ops.STORE, (UOp(Ops.INDEX, (out, C(j))), UOp(Ops.ADD, (back if j == 1 else
                                                                      lane(av, j), lane(bv, j)))))
            for j in range(1, 4)]
    r = slp(_prep(_kernel(UOp(Ops.GROUP, (st0, *rest)))), X86_AVX2)
    assert all(s.src[0].op is Ops.INDEX for s in _ops(r, Ops.STORE))


def test_a_store_fed_by_a_later_lane_of_its_group_is_not_merged_either() -> None:
    """Lane 3's store feeds lane 0's value: the cycle test must find it whichever store of
    the group comes first in the graph's order."""
    out, a, b, av, bv, lane, op = _vec_setup()
    st3 = UOp(Ops.STORE, (UOp(Ops.INDEX, (out, C(3))), UOp(Ops.ADD, (lane(av, 3), lane(bv, 3)))))
    back = UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (out, st3)), C(3))),))
    rest = [UOp(Ops.STORE, (UOp(Ops.INDEX, (out, C(j))), UOp(Ops.ADD, (back if j == 0 else
                                                                      lane(av, j), lane(bv, j)))))
            for j in range(3)]
    r = slp(_prep(_kernel(UOp(Ops.GROUP, (*rest, st3)))), X86_AVX2)
    assert all(s.src[0].op is Ops.INDEX for s in _ops(r, Ops.STORE))
    r = slp(_prep(_kernel(UOp(Ops.GROUP, (st3, *rest)))), X86_AVX2)
    assert all(s.src[0].op is Ops.INDEX for s in _ops(r, Ops.STORE))


def test_strong_lane_numbers_pack_too() -> None:
    """tinygrad writes lane numbers and lengths as strong int32 constants (CAST(1) int32)."""
    text = (KERNELS / "lanewise_add.uop").read_text()
    for j in range(4):
        text = text.replace(f"INDEX(%av, {j})", f"INDEX(%av, %k{j})")
        text = text.replace(f"INDEX(%bv, {j})", f"INDEX(%bv, %k{j})")
    text = text.replace("%i    = RANGE", "".join(f"%k{j} = CAST({j}) int32\n" for j in range(4))
                        + "%i    = RANGE")
    r = slp(_prep(parse(text, "strong.uop")), X86_AVX2)
    assert [u.shape for u in _ops(r, Ops.ADD) if u.dtype == dtypes.float32] == [(4,)]


def _tile(rows: int, row_operand: str = "lanes", mixed: bool = False) -> UOp:
    """tinygrad's upcast matmul tile: acc[r·4 + j] += Σ_k a_r[k]·b_k[j] in a reduce loop over
    a REG accumulator of rows × 4 scalars, then each row's lanes STACKed and stored.
    row_operand "scalars": a_r[k] is a scalar argument per row instead (no vector to shuffle);
    mixed: row 2 sums its products with SUB."""
    from kcc.ir import AddrSpace, AxisType, ParamArg
    out, a, b = (param(i, dtypes.float32, 4096) for i in range(3))
    ps = [param(3 + r, dtypes.float32) for r in range(rows)]
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dtypes.float32, rows * 4, addrspace=AddrSpace.REG))
    init = [UOp(Ops.STORE, (UOp(Ops.INDEX, (acc, C(j))), C(0.0))) for j in range(rows * 4)]
    i = UOp(Ops.RANGE, (C(16),), (0, AxisType.REDUCE))
    after = UOp(Ops.AFTER, (acc, *init, i))
    at = lambda buf, off: UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, UOp(Ops.ADD, (   # noqa: E731
        UOp(Ops.MUL, (i, C(4))), C(off))), C(4))),))
    av = [at(a, 64 * r) for r in range(rows)]
    bv = [at(b, 64 * k) for k in range(4)]
    lane = lambda v, j: UOp(Ops.INDEX, (v, C(j)))      # noqa: E731
    ups = []
    for r in range(rows):
        for j in range(4):
            t = None
            for k in range(4):
                x = lane(av[r], k) if row_operand == "lanes" else ps[r]
                m = UOp(Ops.MUL, (x, lane(bv[k], j)))
                t = m if t is None else UOp(Ops.SUB if mixed and r == 2 else Ops.ADD, (t, m))
            place = UOp(Ops.INDEX, (after, C(r * 4 + j)))
            ups.append(UOp(Ops.STORE, (place, UOp(Ops.ADD, (UOp(Ops.LOAD, (place,)), t)))))
    done = UOp(Ops.AFTER, (acc, UOp(Ops.END, (UOp(Ops.GROUP, tuple(ups)), i))))
    sts = [UOp(Ops.STORE, (UOp(Ops.SHRINK, (out, C(512 * r), C(4))), UOp(Ops.STACK, tuple(
        UOp(Ops.LOAD, (UOp(Ops.INDEX, (done, C(r * 4 + j))),)) for j in range(4)))))
           for r in range(rows)]
    return _prep(_kernel(UOp(Ops.GROUP, tuple(sts)), *ps))


def _reg_places(g: UOp) -> set[tuple[int, int]]:
    """(start, lanes) of every access to the REG buffer."""
    out = set()
    for u in toposort([g]):
        if u.op in (Ops.INDEX, Ops.SHRINK) and u.src[0].kind == "buffer":
            b = u.src[0]
            while b.op is Ops.AFTER:
                b = b.src[0]
            if b.op is Ops.BUFFER:
                from kcc.ir.consts import const_int
                out.add((const_int(u.src[1]), u.shape[0] if u.op is Ops.SHRINK else 1))
    return out


def test_matmul_tile_widens_to_the_targets_widest_vectors() -> None:
    from dataclasses import replace
    from kcc.targets.x86.arch import X86_AVX512
    g = _tile(4)
    # x86-64-v4: the 4 row groups are one 16-lane group; every REG access is that group
    # (the rows read after the loop are lanes of its load), so it stays one register
    r = slp(g, X86_AVX512)
    assert _reg_places(r) == {(0, 16)}
    assert {u.shape for u in _ops(r, Ops.MUL) if u.dtype == dtypes.float32} == {(16,)}
    # AVX2: pairs of rows in 8 lanes
    r = slp(g, X86_AVX2)
    assert _reg_places(r) == {(0, 8), (8, 8)}
    assert {u.shape for u in _ops(r, Ops.MUL) if u.dtype == dtypes.float32} == {(8,)}
    # a target whose widest vectors are 4 lanes keeps the kernel's groups
    four = {dtypes.float32: (4,)}
    r = slp(g, replace(X86_AVX2, alu_widths=four, mem_widths=four))
    assert _reg_places(r) == {(0, 4), (4, 4), (8, 4), (12, 4)}


def test_rows_that_differ_are_not_widened_together() -> None:
    """Rows whose lanes are not isomorphic across the wide group (row 2 subtracts, a run of 12
    not divisible by 8 or 16) keep the kernel's 4-lane groups, each still packed."""
    from kcc.targets.x86.arch import X86_AVX512
    for g, rows in ((_tile(4, mixed=True), 4), (_tile(3), 3)):
        r = slp(g, X86_AVX512)
        assert _reg_places(r) == {(4 * k, 4) for k in range(rows)}
        assert {u.shape for u in _ops(r, Ops.MUL) if u.dtype == dtypes.float32} == {(4,)}


def test_bool_cmpne_lanes_pack_as_xor() -> None:
    # tinygrad's exp2 writes `(x < 128) != true` per lane: CMPNE of bools, which x86 has no
    # vector form of; its truth table is XOR's, which it has on bool vectors
    out, a, b, av, bv, lane, dst = _vec_setup()
    res = []
    for j in range(4):
        c = UOp(Ops.CMPLT, (lane(av, j), UOp.const(1.5)))
        n = UOp(Ops.CMPNE, (c, UOp.const(True)))
        res.append(UOp(Ops.WHERE, (n, lane(av, j), lane(bv, j))))
    g = _prep(_kernel(UOp(Ops.STORE, (dst, UOp(Ops.STACK, tuple(res))))))
    from kcc.targets.x86.target import x86_desc
    r = slp(g, x86_desc("x86-64-v3"))
    assert [u.shape for u in _ops(r, Ops.XOR)] == [(4,)]
    assert not [u for u in _ops(r, Ops.CMPNE) if u.shape == ()]
    assert [u.shape for u in _ops(r, Ops.WHERE)] == [(4,)]


# interpolate's neighbours (tinygrad's E_32_4_4, its inner loop unrolled): lane j is
# x[4i + h_j] - x[4i + l_j], elements of one 4-element row read at MULACC(i, 4, k) indexes
NEIGHBOURS = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 32)
%x = PARAM ParamArg(1, float32, 32)
%n = CAST(8) int32
%four = CAST(4) int32
%i = RANGE(%n) (0, LOOP)
{loads}
%d0 = SUB(%x1, %x0)
%d1 = SUB(%x2, %x0)
%d2 = SUB(%x2, %x0)
%d3 = SUB(%x3, %x1)
%v = STACK(%d0, %d1, %d2, %d3)
%z = CAST(0) int32
%o = MULACC(%i, %four, %z)
%op = SHRINK(%out, %o, 4)
%s = STORE(%op, %v)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


def test_neighbouring_elements_of_one_row_pack_as_its_shuffles() -> None:
    loads = "\n".join(f"%k{k} = CAST({k}) int32\n%a{k} = MULACC(%i, %four, %k{k})\n"
                      f"%p{k} = INDEX(%x, %a{k})\n%x{k} = LOAD(%p{k})" for k in range(4))
    sink = parse(NEIGHBOURS.format(loads=loads), "k.uop")
    r = slp(_prep(sink), X86_AVX2)
    (sub,) = _ops(r, Ops.SUB)           # one vector SUB, not four scalar ones
    assert sub.shape == (4,)
    rows = {x.src[0] for s in sub.src for x in s.src}
    assert [row.op for row in rows] == [Ops.LOAD] and next(iter(rows)).shape == (4,)
    import numpy as np

    from kcc.ir.interp import run
    outs = []
    for g in (sink, r):
        out = np.zeros(32, np.float32)
        run(g, [out, np.arange(32, dtype=np.float32) ** 2])
        outs.append(out)
    assert (outs[0] == outs[1]).all() and outs[0].any()


# tinygrad's repeat/roll (E_2_8_6_4): lanes x[8i+1], a float2 at x[8i+2], x[8i+4]; unroll's
# copy of the index at a constant counter is MULACC(1, 4, 8i) (simplify: 8i + 4)
MIXED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 32)
%x = PARAM ParamArg(1, float32, 40)
%n = CAST(4) int32
%i = RANGE(%n) (0, LOOP)
%k1 = CAST(1) int32
%k2 = CAST(2) int32
%k3 = CAST(3) int32
%k4 = CAST(4) int32
%k8 = CAST(8) int32
%b = SHL(%i, %k3)
%m = MULACC(%k1, %k4, %b)
%a1 = ADD(%b, %k1)
%p1 = INDEX(%x, %a1)
%x1 = LOAD(%p1)
%a2 = ADD(%b, %k2)
%p2 = SHRINK(%x, %a2, 2)
%v2 = LOAD(%p2)
%l0 = INDEX(%v2, 0)
%l1 = INDEX(%v2, 1)
%p4 = INDEX(%x, %m)
%x4 = LOAD(%p4)
%v = STACK(%x1, %l0, %l1, %x4)
%z = CAST(0) int32
%o = MULACC(%i, %k8, %z)
%op = SHRINK(%out, %o, 4)
%s = STORE(%op, %v)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


def test_scalar_and_vector_lanes_of_consecutive_elements_are_one_load() -> None:
    sink = parse(MIXED, "k.uop")
    r = slp(_prep(sink), X86_AVX2)
    assert [u.shape for u in _ops(r, Ops.LOAD)] == [(4,)] and not _ops(r, Ops.STACK)
    import numpy as np

    from kcc.ir.interp import run
    outs = []
    for g in (sink, r):
        out = np.zeros(32, np.float32)
        run(g, [out, np.arange(40, dtype=np.float32) * 3 + 1])
        outs.append(out)
    assert (outs[0] == outs[1]).all() and outs[0].any()


# tinygrad's tril (E_40_10_4): x[r*40 + 4j + k] under 4j + k < r + 1; lane 0 of the first
# block (j = 0) is always true, and must stay a lane of the run of gated loads
TRIL = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 64)
%x = PARAM ParamArg(1, float32, 64)
%n = CAST(8) int32
%r = RANGE(%n) (0, LOOP)
%k1 = CAST(1) int32
%k8 = CAST(8) int32
%r1 = ADD(%r, %k1)
%base = MUL(%r, %k8)
%f0 = CAST(0.0) float32
{lanes}
%v = STACK({names})
%op = SHRINK(%out, %base, 8)
%s = STORE(%op, %v)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="k")
"""


def test_a_run_of_gated_loads_keeps_its_always_true_lane() -> None:
    from kcc.targets.x86.arch import x86_desc
    lanes = "\n".join(f"%c{k} = CAST({k}) int32\n%g{k} = CMPLT(%c{k}, %r1)\n"
                      f"%a{k} = ADD(%base, %c{k})\n%p{k} = INDEX(%x, %a{k})\n"
                      f"%l{k} = LOAD(%p{k}, %f0, %g{k})" for k in range(8))
    text = TRIL.format(lanes=lanes, names=", ".join(f"%l{k}" for k in range(8)))
    sink = parse(text, "k.uop")
    r = slp(_prep(sink), x86_desc("x86-64-v4"))
    (ld,) = _ops(r, Ops.LOAD)
    assert ld.shape == (8,) and len(ld.src) == 3 and ld.src[2].shape == (8,)


def _walk_independent(group: tuple, pos: dict) -> bool:
    """The oracle of slp's `_independent`: no store of group is among or under the values
    of the others (a walk down from the values through nodes numbered at least the first
    store's: the walk slp ran before its one scan of the order)."""
    lo = min(pos[s] for s in group)
    vals = [s.src[1] for s in group if pos[s.src[1]] > lo]
    under = toposort(vals, lambda u: pos.get(u, lo) >= lo) if vals else []
    return not any(u in group for u in under)


def test_independence_is_asked_once_per_group(monkeypatch) -> None:
    # _plan_stores' cost of a group and _pack_stores' packing of it ask _independent about
    # the same group of the same graph: with the memo the scan runs once, same answer
    import kcc.passes.slp as slp_mod
    text = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 8)
%1 = PARAM ParamArg(1, float32, 8)
""" + "".join(f"%p{k} = INDEX(%1, {k})\n%l{k} = LOAD(%p{k})\n%a{k} = ADD(%l{k}, %l{k})\n"
              f"%q{k} = INDEX(%0, {k})\n%s{k} = STORE(%q{k}, %a{k})\n"
              for k in range(4)) + """%g = GROUP(%s0, %s1, %s2, %s3)
SINK(%g) KernelInfo(name="k")
"""
    sink = parse(text, "k.uop")
    order = toposort([sink])
    pos = {u: i for i, u in enumerate(order)}
    group = tuple(u for u in order if u.op is Ops.STORE)
    walks = []
    real = slp_mod._reaches_in
    monkeypatch.setattr(slp_mod, "_reaches_in", lambda *a: walks.append(1) or real(*a))
    memo: dict = {}
    assert slp_mod._independent(group, order, pos, memo) \
        is slp_mod._independent(group, order, pos) is True
    assert memo == {group: True} and len(walks) == 2
    assert slp_mod._independent(group, order, pos, memo) and len(walks) == 2


def test_a_group_whose_value_reads_another_store_is_not_independent() -> None:
    # s1's value loads the element s0 stored (through AFTER): merging them is a cycle
    import kcc.passes.slp as slp_mod
    text = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 8)
%1 = PARAM ParamArg(1, float32, 8)
%p0 = INDEX(%1, 0)
%l0 = LOAD(%p0)
%q0 = INDEX(%0, 0)
%s0 = STORE(%q0, %l0)
%b = AFTER(%0, %s0)
%pb = INDEX(%b, 0)
%lb = LOAD(%pb)
%a = ADD(%lb, %l0)
%q1 = INDEX(%0, 1)
%s1 = STORE(%q1, %a)
SINK(%s1) KernelInfo(name="k")
"""
    sink = parse(text, "k.uop")
    order = toposort([sink])
    pos = {u: i for i, u in enumerate(order)}
    s0, s1 = (u for u in order if u.op is Ops.STORE)
    assert not slp_mod._independent((s0, s1), order, pos)
    assert slp_mod._independent((s0,), order, pos) and slp_mod._independent((s1,), order, pos)
    # the scan's answer is the walk's (every node under the values from lo on)
    for group in ((s0, s1), (s1,)):
        assert slp_mod._independent(group, order, pos) is _walk_independent(group, pos)
    assert not slp_mod._independent((s0, s1), order, pos, {})


def test_the_order_scan_answers_as_the_walk_on_every_store_group() -> None:
    # every pair and triple of stores of a graph whose stores read each other's elements
    # (through AFTERs) and also not: `_reaches_in`'s scan and the walk agree
    import itertools
    import kcc.passes.slp as slp_mod
    lines = ["# kcc-uop 1", "%0 = PARAM ParamArg(0, float32, 8)",
             "%1 = PARAM ParamArg(1, float32, 8)"]
    for k in range(5):
        lines += [f"%p{k} = INDEX(%1, {k})", f"%l{k} = LOAD(%p{k})"]
        # odd stores read the element the store before wrote; even ones only the input
        src = f"%r{k}" if k % 2 else f"%l{k}"
        if k % 2:
            lines += [f"%i{k} = INDEX(%b{k}, {k - 1})", f"%r{k} = LOAD(%i{k})"]
        lines += [f"%a{k} = ADD({src}, %l{k})", f"%q{k} = INDEX(%0, {k})",
                  f"%s{k} = STORE(%q{k}, %a{k})"]
        if k % 2 == 0 and k < 4:         # (read by the next, odd, store)
            lines.append(f"%b{k + 1} = AFTER(%0, %s{k})")
    lines += ["%g = GROUP(%s0, %s1, %s2, %s3, %s4)", 'SINK(%g) KernelInfo(name="k")']
    sink = parse("\n".join(lines) + "\n", "k.uop")
    order = toposort([sink])
    pos = {u: i for i, u in enumerate(order)}
    stores = [u for u in order if u.op is Ops.STORE]
    answers = set()
    for n in (2, 3):
        for group in itertools.combinations(stores, n):
            walk = _walk_independent(group, pos)
            assert slp_mod._independent(group, order, pos) is walk
            answers.add(walk)
    assert answers == {True, False}


def test_a_shared_plain_packer_answers_as_fresh_ones() -> None:
    # _slp costs every run and width with one plain packer (and the final packer reads its
    # _leaf answers): each answer must be the one a fresh packer gives for that tuple alone
    import kcc.passes.slp as slp_mod
    from kcc.passes.slp_reg import store_runs
    from kcc.targets.x86.arch import x86_desc
    desc = x86_desc("x86-64-v4")
    n = 16
    text = f"""# kcc-uop 1
%0 = PARAM ParamArg(0, float32, {n})
%1 = PARAM ParamArg(1, float32, {n})
%2 = PARAM ParamArg(2, float32, {n})
""" + "".join(f"%p{k} = INDEX(%1, {k})\n%l{k} = LOAD(%p{k})\n%r{k} = INDEX(%2, {k % 4})\n"
              f"%m{k} = LOAD(%r{k})\n%a{k} = MUL(%l{k}, %m{k})\n%b{k} = ADD(%a{k}, %l{k})\n"
              f"%q{k} = INDEX(%0, {k})\n%s{k} = STORE(%q{k}, %b{k})\n"
              for k in range(n)) + "%g = GROUP(" + ", ".join(f"%s{k}" for k in range(n)) \
        + """)\nSINK(%g) KernelInfo(name="k")\n"""
    order = toposort([_prep(parse(text, "k.uop"))])
    pos = {u: i for i, u in enumerate(order)}
    (run,) = store_runs(order)
    shared = slp_mod._Packer(desc)
    costs = []
    for lanes in (4, 8, 16, 4):
        got = slp_mod._groups_cost(desc, run, lanes, order, pos, 4, None, shared)
        assert got == slp_mod._groups_cost(desc, run, lanes, order, pos, 4)
        costs.append(got)
    assert None not in costs and costs[0] == costs[3]
    assert shared.memo and shared.leaves
    for t, v in list(shared.memo.items()):
        assert slp_mod._Packer(desc).pack(t) is v
    for t, got in shared.leaves.items():
        assert got == shared._new_leaf(t) and got == slp_mod._Packer(desc)._leaf(t)


def test_op_ok_is_asked_once_per_tuple_and_shared_with_the_planning(monkeypatch) -> None:
    # _op_ok's answer is a function of the tuple and the target alone: the packer of the
    # packing reads the planning packer's answers (the matmul tile's store groups are costed,
    # then packed again) and the result is the one without the memo
    import kcc.passes.slp as slp_mod
    from kcc.targets.x86.arch import X86_AVX512
    g = _tile(4)
    want = slp(g, X86_AVX512)
    asked: list = []
    real = slp_mod._Packer._new_op_ok
    monkeypatch.setattr(slp_mod._Packer, "_new_op_ok",
                        lambda self, t: asked.append(t) or real(self, t))
    assert slp(g, X86_AVX512) is want
    assert asked and len(asked) == len(set(asked))
    p = slp_mod._Packer(X86_AVX512)
    t = tuple(u for u in toposort([g]) if u.op is Ops.MUL and u.shape == ())[:4]
    assert p._op_ok(t) is real(p, t) and p.op_ok == {t: real(p, t)}
