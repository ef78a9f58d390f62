"""Tests of packing and loop interchange (kcc/passes/pack.py): which matmul nests are packed and
which are left alone, and that every variant computes what the graph as written computes. The
oracle is the reference interpreter, on the graph before and after unroll + pack (bit for bit)
and on the x86 object compiled with the pass in the pipeline (tests/support/x86_util.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.ir.uop import AddrSpace, base_buffer
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.pack import _disjoint, pack
from kcc.passes.simplify import simplify
from kcc.passes.unroll import unroll
from kcc.targets.x86.target import x86_desc
from x86_util import assert_same, compile_and_run, random_inputs, reference


@pytest.fixture(autouse=True)
def _narrow_tiles(request, monkeypatch) -> None:
    """Every test but the wide-tile ones sees the pass without wide tiles (pack.WIDE_REGS past
    every target's registers): the 4-row, 16-column tiles and the rules they test."""
    if "wide_tile" not in request.node.name:
        import kcc.passes.pack as pk
        monkeypatch.setattr(pk, "WIDE_REGS", 1 << 30)


def _matmul(m: int, n: int, k: int, ku: int = 4, rmw: bool = False,
            out_row: bool = True, double: bool = False) -> UOp:
    """tinygrad's matmul tile as its default schedule writes it: out (m×n) = a (m×k) @ b (k×n),
    a 4-row × 4-column REG tile per (o, c) iteration (o: row blocks, c: column blocks), the
    reduce loop taking ku k's an iteration (a's k upcast: a ku-lane load of each row of a, ku
    b rows, each a 4-lane load, taken apart by lanes). rmw: out += a @ b (the kernel loads
    out); out_row False: every row block writes the same 4 rows (outputs of distinct o
    overlap); double: out = 2·(a @ b), as acc + acc (an epilogue)."""
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {m * n})",
             f"%a = PARAM ParamArg(1, float32, {m * k})",
             f"%b = PARAM ParamArg(2, float32, {k * n})",
             "%acc = BUFFER ParamArg(0, float32, 16, addrspace=REG)",
             f"%o = RANGE({m // 4}) (0, WEAK)", f"%c = RANGE({n // 4}, %o) (1, WEAK)",
             "%ai = AFTER(%acc, %o, %c)"]
    lines += [f"%p{e} = INDEX(%ai, {e})\n%z{e} = STORE(%p{e}, 0.0)" for e in range(16)]
    lines += [f"%r = RANGE({k // ku}, %c) (2, REDUCE)",
              "%ak = AFTER(%acc, " + ", ".join(f"%z{e}" for e in range(16)) + ", %r)",
              f"%rk = MUL(%r, {ku})", f"%rb = MUL(%rk, {n})", "%c4 = MUL(%c, 4)",
              f"%o4 = MUL(%o, {4 * k})", "%ra = ADD(%o4, %rk)",
              "%rc = ADD(%rb, %c4)"]
    for i in range(4):              # row i of a's tile: ku consecutive k, one load
        lines += [f"%ax{i} = ADD(%ra, {i * k})"]
        if ku == 1:
            lines += [f"%ap{i} = INDEX(%a, %ax{i})", f"%a{i}_0 = LOAD(%ap{i})"]
            continue
        lines += [f"%ap{i} = SHRINK(%a, %ax{i}, {ku})", f"%av{i} = LOAD(%ap{i})"]
        lines += [f"%a{i}_{u} = INDEX(%av{i}, {u})" for u in range(ku)]
    for u in range(ku):
        lines += [f"%bj{u} = ADD(%rc, {u * n})",
                  f"%bs{u} = SHRINK(%b, %bj{u}, 4)", f"%bv{u} = LOAD(%bs{u})"]
    for i in range(4):
        for j in range(4):
            e = 4 * i + j
            lines += [f"%q{e} = INDEX(%ak, {e})", f"%s{e}_0 = LOAD(%q{e})"]
            for u in range(ku):
                lines += [f"%b{e}_{u} = INDEX(%bv{u}, {j})",
                          f"%m{e}_{u} = MUL(%a{i}_{u}, %b{e}_{u})",
                          f"%s{e}_{u + 1} = ADD(%s{e}_{u}, %m{e}_{u})"]
            lines += [f"%w{e} = STORE(%q{e}, %s{e}_{ku})"]
    lines += ["%wg = GROUP(" + ", ".join(f"%w{e}" for e in range(16)) + ")",
              "%ek = END(%wg, %r)", "%ae = AFTER(%acc, %ek)",
              f"%ob = MUL(%o, {4 * n})" if out_row else "%ob = MUL(%o, 0)",
              "%oc = ADD(%ob, %c4)"]
    for i in range(4):
        lines += [f"%e{e} = INDEX(%ae, {e})\n%l{e} = LOAD(%e{e})" for e in range(4 * i, 4 * i + 4)]
        lines += [f"%st{i} = STACK(" + ", ".join(f"%l{e}" for e in range(4 * i, 4 * i + 4)) + ")",
                  f"%oj{i} = ADD(%oc, {i * n})", f"%os{i} = SHRINK(%out, %oj{i}, 4)"]
        if rmw:
            lines += [f"%old{i} = LOAD(%os{i})", f"%new{i} = ADD(%old{i}, %st{i})",
                      f"%t{i} = STORE(%os{i}, %new{i})"]
        elif double:
            lines += [f"%dd{i} = ADD(%st{i}, %st{i})", f"%t{i} = STORE(%os{i}, %dd{i})"]
        else:
            lines += [f"%t{i} = STORE(%os{i}, %st{i})"]
    lines += ["%eg = GROUP(%t0, %t1, %t2, %t3)", "%ec = END(%eg, %c)", "%eo = END(%ec, %o)",
              'SINK(%eo) KernelInfo(name="matmul")']
    return parse("\n".join(lines) + "\n", "matmul.uop")


def _packed(sink: UOp, arch: str = "x86-64-v4", **kw) -> tuple[UOp, UOp]:
    """(after unroll-and-jam alone, after unroll-and-jam + pack) with the x86 desc (kw
    replaced in it); the pipeline's unroll step runs both (passes/unroll.py)."""
    desc = replace(x86_desc(arch), **kw)
    g = simplify(lower_weak_dtypes(sink))
    u = unroll(g, desc, packing=False)
    p = pack(u, desc)
    assert unroll(g, desc) is p
    return u, p


def _check(sink: UOp, arch: str = "x86-64-v4") -> tuple[UOp, UOp]:
    """The kernel after unroll and after unroll + pack; asserts the latter and the compiled
    object agree with the interpreter on the kernel as written (bit for bit)."""
    u, p = _packed(sink, arch)
    args = random_inputs(sink, 3)
    want = reference(sink, args)
    assert_same(sink, reference(p, args), want)
    assert_same(sink, compile_and_run(sink, args, arch), want)
    # contracted: each fused multiply-add rounds once instead of twice; the error relative to
    # the output's largest magnitude stays at float32 rounding (as bench/x86_peak.py checks)
    fast = compile_and_run(sink, args, arch, fp_contract="fast")[0]
    assert np.abs(fast - want[0]).max() <= 1e-5 * np.abs(want[0]).max()
    return u, p


def _scratch(u: UOp, p: UOp) -> list[UOp]:
    """The REG buffers p has and u has not that hold copies of a PARAM (the packed slabs; the
    row jam's fresh accumulators are the others)."""
    old = set(u.toposort())
    stores = [n for n in p.toposort() if n.op is Ops.STORE]
    return [n for n in p.toposort() if n.op is Ops.BUFFER
            and n.arg.addrspace is AddrSpace.REG and n not in old
            and any(s.src[1].op is Ops.LOAD and s.src[1].src[0].src[0].op is Ops.PARAM
                    for s in stores if n in s.src[0].toposort())]


def _bound(g: UOp, axis: int) -> int:
    """The bound of the loop with this axis id."""
    (r,) = [n for n in g.toposort() if n.op is Ops.RANGE and n.arg[0] == axis]
    return const_int(r.src[0])


def _outermost(g: UOp) -> UOp:
    """The RANGE of the outermost loop (the one with no RANGE among its srcs)."""
    (r,) = [n for n in g.toposort() if n.op is Ops.RANGE
            and not any(s.op in (Ops.RANGE, Ops.END) for s in n.src[1:])]
    return r


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("ku", [1, 4])
def test_matmul_tile_is_packed_and_interchanged(arch: str, ku: int) -> None:
    # b's rows 1 KiB apart (n = 256 columns), 4 row blocks
    u, p = _check(_matmul(16, 256, 16, ku), arch)
    (buf,) = _scratch(u, p)
    # one packed row per k: the columns of one (jammed) column block, 4 per copy (tinygrad's
    # form, k upcast by 4, is jammed to a row of the widest vector: 8 columns on v3, 16 on v4)
    cols = 256 // _bound(u, 1)
    assert buf.arg.size == 16 * cols
    assert ku == 1 or cols == (16 if arch == "x86-64-v4" else 8)
    # the column loop is now the outer loop; the row loop (4 blocks) is inside it, after the
    # loop that fills the slab
    out = _outermost(p)
    assert out.arg[0] == 1 and _bound(p, 1) == _bound(u, 1)
    (rows,) = [n for n in p.toposort() if n.op is Ops.RANGE and n.arg[0] == 0]
    assert out in rows.src and any(s.op is Ops.END for s in rows.src)
    # every load of b is in the fill loop: the reduce loop reads the slab only
    red = [n for n in p.toposort() if n.op is Ops.RANGE and n.arg[0] == 2]
    b_loads = [n for n in p.toposort() if n.op is Ops.LOAD and n.src[0].src[0].op is Ops.PARAM
               and n.src[0].src[0].arg.slot == 2]
    assert b_loads and all(red[0] not in n.toposort() for n in b_loads)
    # the fill copies each k's row of the block as whole vectors of the widest width, not as
    # the graph's 4-lane pieces (`_copies`)
    widest = 16 if arch == "x86-64-v4" else 8
    assert {const_int(n.src[0].src[2]) for n in b_loads} == {min(cols, widest)}


def test_odd_shapes_are_computed_exactly() -> None:
    # 65 column blocks (no jam: 65 is odd), 5 row blocks, 12 k in 3 steps of 4: b's rows 1040
    # bytes apart, so the unjammed 4-column slab is packed (4 elements a row)
    u, p = _check(_matmul(20, 260, 12, 4))
    (buf,) = _scratch(u, p)
    assert buf.arg.size == 4 * 12
    assert _bound(p, 0) == 5                    # 5 row blocks: no row jam (not divisible by 2)


def _slab_loads(u: UOp, p: UOp) -> list[UOp]:
    """The loads of p's packed slab (in the reduce loop)."""
    (buf,) = _scratch(u, p)
    return [n for n in p.toposort() if n.op is Ops.LOAD and n.src[0].src[0].kind == "buffer"
            and base_buffer(n.src[0].src[0]) is buf]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_interchanged_row_loop_is_jammed_where_registers_allow(arch: str,
                                                                monkeypatch) -> None:
    import kcc.passes.pack as pk
    # 8 row blocks: on v4 (32 zmm) two row blocks run as one iteration, 8 rows x 16 columns,
    # each load of the slab shared by both (half the slab reads a flop); on v3 (16 ymm) one
    # block's 4 rows x 8 columns already take 4 + 1 of the 8 registers unroll's estimate gives
    sink = _matmul(32, 256, 16, 4)
    u, p = _check(sink, arch)
    monkeypatch.setattr(pk, "ROW_FACTORS", ())
    _, p1 = _packed(sink, arch)
    assert _bound(p1, 0) == _bound(u, 0) == 8
    jam = 2 if arch == "x86-64-v4" else 1
    assert _bound(p, 0) == 8 // jam
    assert len(_slab_loads(u, p)) == len(_slab_loads(u, p1)) > 0
    accs = [n for n in p.toposort() if n.op is Ops.BUFFER and n.arg.addrspace is AddrSpace.REG]
    assert len(accs) == 1 + jam                 # the slab and one accumulator tile a copy
    # the a loads of the reduce loop: one per row of every copy
    a_loads = [n for n in p.toposort() if n.op is Ops.LOAD and n.src[0].src[0].op is Ops.PARAM
               and n.src[0].src[0].arg.slot == 1]
    assert len(a_loads) == 4 * jam


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_column_loop_of_a_large_slab_is_widened(arch: str, monkeypatch) -> None:
    import kcc.passes.pack as pk
    # 8 row blocks, 16 column blocks of 4, 4 reduce iterations: the jammed slab is 4 x 64
    # floats (1 KiB) on v4, 4 x 32 (512 B) on v3. With the widening threshold at 512 B, v4's
    # slab is larger: its column loop is jammed again by 2 (32 columns a block, a 2 KiB slab;
    # not by 4: the register estimate refuses a third jam); v3's is not larger
    monkeypatch.setattr(pk, "COL_WIDEN_BYTES", 512)
    monkeypatch.setattr(pk, "PAIR_FACTOR", 1)          # column pairs: the test below
    sink = _matmul(32, 256, 16, 4)
    u, p = _check(sink, arch)
    (buf,) = _scratch(u, p)
    cols = 256 // _bound(u, 1)
    wide = 2 if arch == "x86-64-v4" else 1
    assert _bound(p, 1) == _bound(u, 1) // wide
    assert buf.arg.size == 4 * cols * 4 * wide
    # v4: 4 rows x 32 columns; the row jam's estimate, 2 x (8 + 1) registers, is over its 16,
    # so the 8 row blocks stay (without the widening they are jammed by 2: the test above)
    assert _bound(p, 0) == 8
    accs = [n for n in p.toposort() if n.op is Ops.BUFFER and n.arg.addrspace is AddrSpace.REG]
    assert len(accs) == 1 + wide                # the slab and one accumulator tile a copy
    # every b load is in the fill loop, and each of the reduce loop's slab loads reads it
    b_loads = [n for n in p.toposort() if n.op is Ops.LOAD and n.src[0].src[0].op is Ops.PARAM
               and n.src[0].src[0].arg.slot == 2]
    red = [n for n in p.toposort() if n.op is Ops.RANGE and n.arg[0] == 2]
    assert b_loads and all(r not in n.toposort() for n in b_loads for r in red)
    # a larger threshold (the default, 32 KiB) leaves both alone
    monkeypatch.setattr(pk, "COL_WIDEN_BYTES", 32 * 1024)
    _, p0 = _packed(sink, arch)
    assert _bound(p0, 1) == _bound(u, 1)


def test_a_widened_column_is_not_analysed_again(monkeypatch) -> None:
    # _widen_cols asks _analyze about the widened graph's new column loop; pack plans that
    # graph next with the same loops and that answer, not a second analysis of the column
    import kcc.passes.pack as pk
    monkeypatch.setattr(pk, "COL_WIDEN_BYTES", 512)
    monkeypatch.setattr(pk, "PAIR_FACTOR", 1)
    sink = _matmul(32, 256, 16, 4)
    want = _packed(sink, "x86-64-v4")[1]
    asked: list = []             # (loops, col): the loops kept alive, so ids stay unique
    real = pk._analyze
    monkeypatch.setattr(pk, "_analyze",
                        lambda loops, col, desc: asked.append((loops, col))
                        or real(loops, col, desc))
    assert _packed(sink, "x86-64-v4")[1] is want          # the same graph
    keys = [(id(loops), col) for loops, col in asked]
    assert keys and len(set(keys)) == len(keys)


def _reduce_loops(p: UOp, rows: UOp) -> list[UOp]:
    """The RANGEs of the loops directly inside the row loop rows."""
    return [n for n in p.toposort() if n.op is Ops.RANGE and rows in n.src[1:]]


def test_widened_column_blocks_are_paired_over_one_row_loop(monkeypatch) -> None:
    import kcc.passes.pack as pk
    # as above, v4: the column loop widened to 32 columns (8 blocks, a 2 KiB slab), then
    # unrolled by 2 without a jam: 4 iterations, each filling two slabs in one fill loop and
    # running, in each of the 8 row blocks, the two blocks' reduce loops one after the other
    # (a's rows, read from memory by the first, are in cache for the second)
    monkeypatch.setattr(pk, "COL_WIDEN_BYTES", 512)
    sink = _matmul(32, 256, 16, 4)
    u, p = _check(sink)
    cols = 256 // _bound(u, 1)
    assert cols == 16 and _bound(p, 1) == _bound(u, 1) // 4
    slabs = _scratch(u, p)
    assert len(slabs) == 2 and all(b.arg.size == 4 * 32 * 4 for b in slabs)
    (rows,) = [n for n in p.toposort() if n.op is Ops.RANGE and n.arg[0] == 0]
    assert _bound(p, 0) == 8
    reds = _reduce_loops(p, rows)
    assert len(reds) == 2 and len({r.arg[0] for r in reds}) == 2
    # each reduce loop reads one slab only, and a from memory
    for r in reds:
        loads = [n for n in p.toposort() if n.op is Ops.LOAD and r in n.toposort()]
        read = {base_buffer(n.src[0].src[0]) for n in loads}
        assert len(read & set(slabs)) == 1
        assert any(b.op is Ops.PARAM and b.arg.slot == 1 for b in read)
    # one fill loop: every b load in it, the only loop beside the row loop in a column block
    b_loads = [n for n in p.toposort() if n.op is Ops.LOAD and n.src[0].src[0].op is Ops.PARAM
               and n.src[0].src[0].arg.slot == 2]
    fills = {n for b in b_loads for n in b.toposort() if n.op is Ops.RANGE and n.arg[0] != 1}
    assert len(fills) == 1 and rows not in fills
    # not paired where both slabs would not fit, nor with PAIR_FACTOR 1
    _, p1 = _packed(sink, pack_bytes=2 * 2048 - 4)
    assert _bound(p1, 1) == _bound(u, 1) // 2 and len(_scratch(u, p1)) == 1
    monkeypatch.setattr(pk, "PAIR_FACTOR", 1)
    _, p2 = _packed(sink)
    (rows2,) = [n for n in p2.toposort() if n.op is Ops.RANGE and n.arg[0] == 0]
    assert _bound(p2, 1) == _bound(u, 1) // 2 and len(_reduce_loops(p2, rows2)) == 1


def test_column_widening_needs_the_wider_slab_to_fit(monkeypatch) -> None:
    import kcc.passes.pack as pk
    monkeypatch.setattr(pk, "COL_WIDEN_BYTES", 512)
    sink = _matmul(32, 256, 16, 4)
    # v4's 1 KiB slab doubled is 2 KiB: a budget of 2 KiB - 4 packs it unwidened
    u, p = _packed(sink, pack_bytes=2048 - 4)
    (buf,) = _scratch(u, p)
    assert _bound(p, 1) == _bound(u, 1) and buf.arg.size == 4 * 64
    _, p2 = _packed(sink, pack_bytes=2048)
    assert _bound(p2, 1) == _bound(u, 1) // 2


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_slab_larger_than_the_chunk_limit_is_blocked_along_k(arch: str, monkeypatch) -> None:
    import kcc.passes.pack as pk
    # 16 reduce iterations of 16 (v4) or 8 (v3) columns x 4 k rows: a slab of 4 or 2 KiB cut
    # into chunks of 1 KiB (4 or 8 iterations); the accumulators reload the partial sums
    monkeypatch.setattr(pk, "K_BLOCK_BYTES", 1024)     # off by default (measured slower)
    monkeypatch.setattr(pk, "MIN_CHUNK", 2)
    u, p = _check(_matmul(16, 256, 64, 4), arch)
    (buf,) = _scratch(u, p)
    assert buf.arg.size * 4 == 1024
    chunks = [n for n in p.toposort() if n.op is Ops.RANGE and n.arg[1].name == "LOOP"
              and n not in buf.toposort() and const_int(n.src[0]) in (2, 4)]
    assert _outermost(p) in chunks
    # every accumulator element starts from 0 in the first chunk, from its output element in
    # the others: one WHERE each, over 4-lane loads of the output rows (on v4 the row loop is
    # jammed by 2 as well: twice the rows)
    cols = 256 // _bound(u, 1)
    jam = _bound(u, 0) // _bound(p, 0)
    assert jam == (2 if arch == "x86-64-v4" else 1)
    assert sum(1 for n in p.toposort() if n.op is Ops.WHERE) == 4 * cols * jam
    reloads = [n for n in p.toposort() if n.op is Ops.LOAD and n.src[0].src[0].op is Ops.PARAM
               and n.src[0].src[0].arg.slot == 0]
    assert len(reloads) == cols * jam and all(n.shape == (4,) for n in reloads)


def test_k_blocking_is_off_by_default_and_needs_plain_copies(monkeypatch) -> None:
    import kcc.passes.pack as pk
    _, p = _packed(_matmul(16, 256, 64, 4))
    assert pk.K_BLOCK_BYTES == 0 and not [n for n in p.toposort() if n.op is Ops.WHERE]
    # an epilogue between the accumulator and the output (2·acc): the output does not hold
    # the partial sum, so the slab is packed whole, not cut into chunks
    monkeypatch.setattr(pk, "K_BLOCK_BYTES", 1024)
    monkeypatch.setattr(pk, "MIN_CHUNK", 2)
    u, p = _check(_matmul(16, 256, 64, 4, double=True))
    (buf,) = _scratch(u, p)
    assert buf.arg.size == 16 * 64 and not [n for n in p.toposort() if n.op is Ops.WHERE]


def test_contiguous_rows_are_left_alone() -> None:
    u, p = _packed(_matmul(16, 64, 16))         # b's rows 256 bytes apart
    assert p is u


def test_few_row_blocks_are_left_alone() -> None:
    u, p = _packed(_matmul(8, 256, 16))         # 2 row blocks: the copy is not paid back
    assert p is u


def test_slab_larger_than_the_budget_is_left_alone() -> None:
    u, p = _packed(_matmul(16, 256, 16), pack_bytes=16 * 16 * 4 - 4)
    assert p is u
    u, p = _packed(_matmul(16, 256, 16), pack_bytes=16 * 16 * 4)
    assert p is not u


def test_targets_without_a_budget_opt_out() -> None:
    from kcc.targets.amd.desc import AMD
    from kcc.targets.cuda.desc import CUDA
    assert CUDA.pack_bytes == 0 and AMD.pack_bytes == 0
    u, p = _packed(_matmul(16, 256, 16), pack_bytes=0)
    assert p is u


def test_kernel_that_reads_its_output_is_left_alone() -> None:
    # out += a @ b: the kernel loads out, which the interchange would reorder against stores
    sink = _matmul(16, 256, 16, rmw=True)
    u, p = _packed(sink)
    assert p is u
    args = random_inputs(sink, 1)
    assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


def test_outputs_shared_by_row_blocks_are_left_alone() -> None:
    # every row block writes the same 4 rows: the last o's values win, which the interchange
    # would keep for each c but not across them — refused
    sink = _matmul(16, 256, 16, out_row=False)
    u, p = _packed(sink)
    assert p is u
    args = random_inputs(sink, 2)
    assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


def test_disjointness_of_store_footprints() -> None:
    # (cO, cC, offset, lanes): tinygrad's 4 rows of 4 columns, rows 512 apart
    rows = [(2048, 4, 512 * i, 4) for i in range(4)]
    assert _disjoint(rows, 64, 128)
    assert not _disjoint(rows, 64, 129)           # column block 128 meets the next row
    assert not _disjoint([(0, 4, 0, 4)], 4, 8)    # o does not move the store
    assert not _disjoint([(4, 4, 0, 4)], 4, 8)    # (o, c) and (o + 1, c - 1) meet
    assert not _disjoint([(64, 4, 0, 4), (64, 8, 0, 4)], 4, 8)   # coefficients differ


def _store_rows(p: UOp) -> list[tuple[UOp, int]]:
    """(accumulator buffer, row of 16) of each store in the reduce loop's body, in the order the
    linearizer takes them (the GROUP tree's src order)."""
    (end,) = [n for n in p.toposort() if n.op is Ops.END and n.src[1].arg[0] == 2]
    leaves: list[UOp] = []

    def walk(n: UOp) -> None:
        if n.op is Ops.GROUP:
            for s in n.src:
                walk(s)
        else:
            leaves.append(n)
    walk(end.src[0])
    out = []
    for st in leaves:
        row = (base_buffer(st.src[0].src[0]), const_int(st.src[0].src[1]) // 16)
        if not out or out[-1] != row:
            out.append(row)
    return out


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_wide_tile_rows_are_jammed_and_interleaved(arch: str, monkeypatch) -> None:
    import kcc.passes.pack as pk
    # 8 row blocks, 64 column blocks of 4, 4 reduce iterations: a 16 KiB slab is widened on
    # v4 (32 zmm) although it is under COL_WIDEN_BYTES, and the widened row loop jammed by 2:
    # an 8-row x 32-column tile, 4 accumulator tiles (2 row copies x 2 column copies)
    sink = _matmul(32, 256, 16, 4)
    u, p = _check(sink, arch)
    monkeypatch.setattr(pk, "WIDE_REGS", 1 << 30)
    _, narrow = _packed(sink, arch)
    if arch == "x86-64-v3":                     # 16 ymm: left as it was
        assert p is narrow
        return
    (slab,) = _scratch(u, p)
    assert slab.arg.size == 16 * 32             # 16 k x 32 columns
    assert _bound(p, 0) == 4                    # 8 row blocks jammed by 2
    accs = [n for n in p.toposort() if n.op is Ops.BUFFER and n.arg.addrspace is AddrSpace.REG
            and n is not slab]
    assert len(accs) == 4 and all(a.arg.size == 64 for a in accs)
    b_loads = [n for n in p.toposort() if n.op is Ops.LOAD and n.src[0].src[0].op is Ops.PARAM
               and n.src[0].src[0].arg.slot == 2]
    # 4 k rows of 32 columns a fill iteration: 2 zmm copies each
    assert len(b_loads) == 8 and all(const_int(n.src[0].src[2]) == 16 for n in b_loads)
    # row j of one column copy, then row j of the other, then row j + 1; the second row copy
    # after the first: each row's broadcasts of a die at its own last FMA
    rows = _store_rows(p)
    assert len(rows) == 4 * 4
    bufs = list(dict.fromkeys(b for b, _ in rows))
    assert [(bufs.index(b), j) for b, j in rows] == [
        (2 * c + k, j) for c in range(2) for j in range(4) for k in range(2)]
    # without the interleaving the order is copy-major (what spilled 8 zmm accumulators)
    monkeypatch.setattr(pk, "WIDE_REGS", 32)
    monkeypatch.setattr(pk, "rows_interleaved", lambda sink, col, desc, factor: sink)
    _, plain = _packed(sink, arch)
    assert [j for _, j in _store_rows(plain)][:8] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_disjointness_by_runs_is_the_pairwise_answer() -> None:
    # _disjoint asks per pair of element runs (an interval of differences) and column step:
    # the answer of every pairwise difference tried against every (do, dc) step
    import random

    def pairwise(accesses, n_o, n_c):
        co, cc = accesses[0][0], accesses[0][1]
        if any(a[0] != co or a[1] != cc for a in accesses) or co == 0 or cc == 0:
            return False
        elems = {a[2] + k for a in accesses for k in range(a[3])}
        diffs = {e1 - e2 for e1 in elems for e2 in elems}
        return not any(d == co * do + cc * dc for d in diffs
                       for do in range(-(n_o - 1), n_o) for dc in range(-(n_c - 1), n_c)
                       if (do, dc) != (0, 0))

    rng = random.Random(5)
    for _ in range(3000):
        co = rng.choice([-1, 1]) * rng.randint(1, 300)
        cc = rng.choice([-1, 1]) * rng.randint(1, 40)
        acc = [(co, cc, rng.randint(-20, 300), rng.randint(1, 8))
               for _ in range(rng.randint(1, 5))]
        n_o, n_c = rng.randint(1, 9), rng.randint(1, 9)
        assert _disjoint(acc, n_o, n_c) == pairwise(acc, n_o, n_c), (acc, n_o, n_c)
