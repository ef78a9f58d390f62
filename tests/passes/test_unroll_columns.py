"""A column loop (a reduction over axis 0: out[j] = reduce_i a[i*C + j]) jammed by unroll: the
copies' one-element accumulators become consecutive elements of one REG buffer
(passes/unroll.py `_columns`), which slp packs into vectors whose operands are one vector load
of C-strided rows (passes/slp.py `_scalar_reg_groups`; `_offset` reads the jammed index
MULACC(i, C, j + k) as base MULACC(i, C, j) plus k). The compiled kernel matches the
interpreter on x86-64-v3 and (when this CPU has it) v4; a row loop is left alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import AddrSpace, toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.unroll import unroll
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference

# out[j] = 333 - max_i (a[i*77 + j] == -b[j]) * (333 - i): tinygrad's argmin over axis 0
COLUMNS = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 77)
%a = PARAM ParamArg(1, float32, 25641)
%b = PARAM ParamArg(2, float32, 77)
%acc = BUFFER ParamArg(0, int32, 1, addrspace=REG)
%c77 = CAST(77) int32
%c333 = CAST(333) int32
%z = CAST(0) int32
%lo = CAST(-2147483648) int32
%j = RANGE(%c77) (1, WEAK)
%pb = INDEX(%b, %j)
%bj = LOAD(%pb)
%a0 = AFTER(%acc, %j)
%p0 = INDEX(%a0, %z)
%init = STORE(%p0, %lo)
%i = RANGE(%c333, %j) (0, REDUCE)
%a1 = AFTER(%acc, %init, %i)
%p = INDEX(%a1, %z)
%cur = LOAD(%p)
%ia = MULACC(%i, %c77, %j)
%pa = INDEX(%a, %ia)
%x = LOAD(%pa)
%nx = NEG(%x)
%eq = CMPEQ(%nx, %bj)
%hit = CAST(%eq) int32
%left = SUB(%c333, %i)
%w = MUL(%hit, %left)
%m = MAX(%cur, %w)
%st = STORE(%p, %m)
%ei = END(%st, %i)
%a2 = AFTER(%acc, %ei)
%p2 = INDEX(%a2, %z)
%res = LOAD(%p2)
%o = SUB(%c333, %res)
%po = INDEX(%out, %j)
%st2 = STORE(%po, %o)
%ej = END(%st2, %j)
SINK(%ej) KernelInfo(name="colmin")
"""
# the same reduction over rows (a[j*333 + i]): the copies read rows 333 elements apart
ROWS = COLUMNS.replace("MULACC(%i, %c77, %j)", "MULACC(%j, %c333, %i)").replace(
    '"colmin"', '"rowmin"')


def _jammed(src: str, arch: str = "x86-64-v3"):
    desc = x86_desc(arch)
    g = unroll(simplify(lower_weak_dtypes(parse(src))), desc)
    return g, slp(g, desc)


def _reg_sizes(g) -> list[int]:
    return sorted(u.arg.size for u in toposort([g])
                  if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.REG)


def test_column_copies_share_one_buffer_and_pack() -> None:
    jammed, packed = _jammed(COLUMNS)
    assert 4 in _reg_sizes(jammed)           # the 4 copies' accumulators: one int32[4]
    nodes = toposort([packed])
    loads = [u for u in nodes if u.op is Ops.LOAD and u.shape == (4,)
             and u.src[0].op is Ops.SHRINK and u.src[0].src[0].op is Ops.PARAM]
    assert {u.src[0].src[0].arg.slot for u in loads} == {1, 2}    # a's row and b's lanes
    assert any(u.op is Ops.MAX and u.shape == (4,) for u in nodes)


def test_row_copies_keep_their_own_buffers() -> None:
    jammed, _ = _jammed(ROWS)
    assert 4 not in _reg_sizes(jammed)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("src", [COLUMNS, ROWS], ids=["columns", "rows"])
def test_matches_the_interpreter(src: str, arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(src)
    args = random_inputs(sink)
    # make some compares true: b[j] = -a[i*77 + j] for a few (i, j)
    for i, j in ((0, 0), (5, 3), (332, 76), (100, 40), (7, 40)):
        k = i * 77 + j if "colmin" in src else j * 333 + i
        if k < args[1].size:
            args[2][j] = -args[1][k]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# tinygrad's conv1d (Tensor.conv2d of a (2, 8, 14) input and (16, 8, 3) weights, a width-1
# kernel axis dropped): out[b, o, x] = sum_k sum_t in[b, k, x + t] * w[o, k, t]. The output
# column loop (x, 12) is jammed; its input index MULACC(b, 112, MULACC(k, 14, x)) + t nests
# the column under two terms, and the weights' index w[k*3 + o*24 + t] is free of x but
# read inside the loop nested in it
CONV1D = Path(__file__).resolve().parents[1] / "data" / "kernels" / "conv1d_columns.uop"


def test_nested_column_index_and_invariant_weights_pack() -> None:
    jammed, packed = _jammed(CONV1D.read_text())
    # the weights do not stop the column layout (their index only reads the inner loop)
    assert 4 in _reg_sizes(jammed)
    nodes = toposort([packed])
    # `_offset` peels the constant under both MULACCs: each tap t is one 4-lane input load
    loads = [u for u in nodes if u.op is Ops.LOAD and u.shape == (4,)
             and u.src[0].op is Ops.SHRINK and u.src[0].src[0].op is Ops.PARAM]
    assert len({u.src[0] for u in loads if u.src[0].src[0].arg.slot == 1}) == 3


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_conv1d_matches_the_interpreter(arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(CONV1D.read_text())
    args = random_inputs(sink, 4)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# tinygrad's mean over axes 0 and 2 (r_8_14_2_14, shortened to 3 row loads): out[r*14 + j] =
# sum_i sum_t a[i*1568 + r*196 + j + 14*t] / 28, every index through MULACCs (the output's
# MULACC(r, 14, j) makes unroll read the store linearly, `via_mulacc`). {acc} one-element
# accumulator per column, or {n} elements of which {used} are stored (the upcast-rows shape)
MEAN = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 112)
%a = PARAM ParamArg(1, float32, 3136)
%acc = BUFFER ParamArg(0, float32, {n}, addrspace=REG)
%z = CAST(0) int32
%r = RANGE(8) (2, WEAK)
%j = RANGE(14, %r) (3, WEAK)
%oi = MULACC(%r, 14, %j)
%po = INDEX(%out, %oi)
%a0 = AFTER(%acc, %j, %r)
%p0 = INDEX(%a0, %z)
%init = STORE(%p0, 0.0)
%i = RANGE(2, %j) (0, REDUCE)
%a1 = AFTER(%acc, %init, %i)
%p = INDEX(%a1, %z)
%cur = LOAD(%p)
%rb = MULACC(%r, 196, %j)
%ia = MULACC(%i, 1568, %rb)
%q0 = INDEX(%a, %ia)
%x0 = LOAD(%q0)
%i1 = ADD(%ia, 14)
%q1 = INDEX(%a, %i1)
%x1 = LOAD(%q1)
%i2 = ADD(%ia, 28)
%q2 = INDEX(%a, %i2)
%x2 = LOAD(%q2)
%s0 = ADD(%x0, %x1)
%s1 = ADD(%s0, %x2)
%s = ADD(%cur, %s1)
%st = STORE(%p, %s)
%ei = END(%st, %i)
%a2 = AFTER(%acc, %ei)
%p2 = INDEX(%a2, %z)
%res = LOAD(%p2)
%m = MUL(%res, 0.0357142873108387)
%st2 = STORE(%po, %m)
%ej = END(%st2, %j)
%er = END(%ej, %r)
SINK(%er) KernelInfo(name="mean02")
"""


def _mean(n: int = 1) -> str:
    return MEAN.format(n=n)


def _exact_chunks(monkeypatch) -> None:
    """No overlapping chunks (unroll_columns.py `overlapped_chunks`): the tests of the exact
    chunks 8 + 4 + 2 a loop that loads what it stores takes."""
    import kcc.passes.unroll_columns as uc
    monkeypatch.setattr(uc, "overlapped_chunks", lambda n, fs: ())


def test_column_loop_through_mulaccs_is_jammed_whatever_its_work(monkeypatch) -> None:
    """A column loop of one-element accumulators indexed through MULACCs is jammed by 4 (14
    columns: 3 groups and a remainder loop) though its work is past MULACC_MAX_WORK (3
    here): the copies become 4 lanes of one vector, not chains; and its copies' loads, 4
    bytes apart under their MULACC index, count as the streams of one copy (one here: 3
    loads 56 bytes apart), so even a limit of 1 stream takes the jam."""
    import kcc.passes.unroll as unroll_mod
    monkeypatch.setattr(unroll_mod, "MULACC_MAX_WORK", 3)
    _exact_chunks(monkeypatch)
    jammed, packed = _jammed(_mean())
    assert 4 in _reg_sizes(jammed)
    assert any(u.op is Ops.LOAD and u.shape == (4,) and u.src[0].op is Ops.SHRINK
               and u.src[0].src[0].op is Ops.PARAM for u in toposort([packed]))
    desc = replace(x86_desc("x86-64-v3"), load_streams=1)
    g = unroll(simplify(lower_weak_dtypes(parse(_mean()))), desc)
    assert 4 in _reg_sizes(g)


def test_column_loop_of_several_accumulators_keeps_the_work_bound(monkeypatch) -> None:
    """With a REG buffer of 2 elements a copy (tinygrad's upcast rows: cumsum_777's
    r_3_128_2_4_64_4 jammed ran 2.4x -> 1.2x clang) the work bound still holds."""
    import kcc.passes.unroll as unroll_mod
    monkeypatch.setattr(unroll_mod, "MULACC_MAX_WORK", 3)
    g = simplify(lower_weak_dtypes(parse(_mean(2))))
    assert unroll(g, x86_desc("x86-64-v3")) is g
    monkeypatch.setattr(unroll_mod, "MULACC_MAX_WORK", 64)
    assert unroll(g, x86_desc("x86-64-v3")) is not g


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_mean_columns_match_the_interpreter(arch: str, monkeypatch) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    import kcc.passes.unroll as unroll_mod
    monkeypatch.setattr(unroll_mod, "MULACC_MAX_WORK", 3)
    sink = parse(_mean())
    args = random_inputs(sink, 4)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("src,sizes,scalars", [(CONV1D.read_text(), [8, 4], 0),
                                              (_mean(), [8, 4, 2], 2 * 3)],
                         ids=["conv1d_12", "mean_14"])
@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_wide_column_jam_and_its_remainders(src: str, sizes: list[int], scalars: int,
                                            arch: str, monkeypatch) -> None:
    """A column loop of one-element accumulators is jammed by the widest vector the target
    computes (8 float32 lanes at v3; 16 at v4 where the bound allows), its remainder loop
    jammed again narrower: conv1d's 12 columns one 8-lane and one 4-lane chain (FACTORS'
    4 made three 4-lane chains, 0.50x clang), mean's 14 columns 8 + 4 + 2 (three 4-lane
    chains and two scalar ones before; x86 has no 2-lane float32 vector, so the last two
    stay two scalar chains, jammed). The remainder's counter `i3 + 8` folds into each
    copy's constant, so its loads are vector loads too, not scalars gathered into lanes.
    (Without overlapping chunks: `test_overlapping_chunks`.)"""
    _exact_chunks(monkeypatch)
    jammed, packed = _jammed(src, arch)
    assert [s for s in _reg_sizes(jammed) if s > 1] == sorted(sizes)
    loads = [u for u in toposort([packed]) if u.op is Ops.LOAD
             and u.src[0].src[0].op is Ops.PARAM and u.src[0].src[0].arg.slot == 1]
    assert {u.shape[0] for u in loads if u.shape} == {8, 4}
    assert sum(1 for u in loads if not u.shape) == scalars


UNROLL_DATA = Path(__file__).resolve().parents[1] / "data" / "unroll"


def _sweep(name: str) -> str:
    return (UNROLL_DATA / f"{name}.uop").read_text()


@pytest.mark.parametrize("name,widest", [("half_matmul_r_17_19_33", 8),
                                         ("cumprod_r_3_40_10_4", 8)])
def test_wide_column_jam_takes_only_lanes_the_target_computes(name: str, widest: int) -> None:
    """A wide column jam takes f copies only where every value its copies compute (casts,
    compares, float ALU ops) is one f-lane node on the target: at x86-64-v4 half_matmul's
    float16 MUL and F16C casts have 4 or 8 lanes, cumprod's int32 CMPLT no zmm row. Jammed
    by 16 the packer left them lane by lane (half_matmul 1.1x → 0.65x clang, cumprod 1.5x →
    0.75x); by 8 they are one ymm (xmm for the halves) each."""
    jammed, packed = _jammed(_sweep(name), "x86-64-v4")
    assert max(_reg_sizes(jammed)) == widest
    assert any(u.op is Ops.LOAD and u.shape == (widest,) and u.src[0].src[0].op is Ops.PARAM
               for u in toposort([packed]))


def test_wide_column_jam_moves_the_copy_constant_out_of_a_mulacc() -> None:
    """cumsum_5000 r_10_256_2_64_4 reads element `t*4 + j + c` (t the reduce counter, j the
    column, c = -375 … -372 the kernel's upcast). Copy k's `MULACC(t, 4, j + k)` becomes
    `MULACC(t, 4, j) + k`, so the copies' gated loads of one c pack across the copies (one
    8-lane masked load each) instead of each copy's 4 consecutive elements into one xmm and a
    transpose (0.82x clang jammed by 16 with the constant inside, 1.05x on main's 4)."""
    _, packed = _jammed(_sweep("cumsum_5000_r_10_256_2_64_4"), "x86-64-v4")
    loads = [u for u in toposort([packed]) if u.op is Ops.LOAD and len(u.src) == 3
             and u.src[0].src[0].op is Ops.PARAM]
    assert loads and {u.shape for u in loads} == {(8,)}


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("name", ["half_matmul_r_17_19_33", "cumprod_r_3_40_10_4",
                                  "cumsum_5000_r_10_256_2_64_4"])
def test_wide_column_jam_sweep_kernels_match_the_interpreter(name: str, arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_sweep(name))
    args = random_inputs(sink, 3)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _ranges(g) -> list[int]:
    from kcc.ir.consts import const_int
    return sorted(const_int(u.src[0]) for u in toposort([g]) if u.op is Ops.RANGE)


@pytest.mark.parametrize("src,before,after", [
    (CONV1D.read_text(), [1, 1, 2, 8, 8, 16], [1, 2, 8, 16]),
    (_mean(), [1, 1, 1, 2, 2, 2, 8], [1, 2, 8])], ids=["conv1d_12", "mean_14"])
def test_whole_column_loop_is_one_jam_of_chunks(src: str, before: list[int],
                                                after: list[int], monkeypatch) -> None:
    """A column loop whose bound no vector width divides but a sum of at most MAX_CHUNKS
    widths is (unroll_columns.py `column_chunks`) is jammed whole: each chunk's
    accumulators a buffer of their own (one vector each), all chunks' chains in ONE reduce
    loop. Before, the widest jam's remainder loop ran after it with a reduce loop of its
    own, so conv1d's two 8-step add chains ran one after the other (0.75x clang; 0.92x
    now). Without chunks (MAX_CHUNKS 1) the old nest of remainder loops comes back."""
    import kcc.passes.unroll_columns as uc
    jammed, _ = _jammed(src)
    assert _ranges(jammed) == after
    monkeypatch.setattr(uc, "MAX_CHUNKS", 1)
    jammed, _ = _jammed(src)
    assert _ranges(jammed) == before


def test_column_chunks() -> None:
    from kcc.passes.unroll_columns import column_chunks
    assert column_chunks(12, (8, 4)) == (8, 4)
    assert column_chunks(14, (8, 4)) == (8, 4, 2)       # a last scalar pair (FACTORS' 2)
    assert column_chunks(8, (8, 4)) == ()               # one vector: no chunks
    assert column_chunks(31, (16, 8, 4)) == ()          # 16 + 8 + 4 + 2 + 1: too many


def test_overlapped_chunks() -> None:
    from kcc.passes.unroll_columns import overlapped_chunks
    assert overlapped_chunks(14, (8, 4)) == tuple(range(8)) + tuple(range(6, 14))
    assert overlapped_chunks(10, (8, 4)) == tuple(range(8)) + tuple(range(2, 10))  # not 8 + 1 + 1
    assert overlapped_chunks(12, (8, 4)) == ()          # 8 + 4: as few chunks, exact
    assert overlapped_chunks(16, (8, 4)) == ()          # no remainder
    assert overlapped_chunks(31, (16, 8)) == tuple(range(16)) + tuple(range(15, 31))
    assert overlapped_chunks(29, (16, 8, 4)) == tuple(range(16)) + tuple(range(13, 29))
    assert overlapped_chunks(77, (16, 8, 4)) == ()      # 5 chunks: past MAX_CHUNKS


@pytest.mark.parametrize("name,sizes", [("matmul_odd_r_37_29_53", [16, 16]),
                                        ("half_matmul_r_17_19_33", [8, 8, 8])])
def test_whole_loop_as_overlapping_chunks_where_exact_ones_are_too_many(
        name: str, sizes: list[int]) -> None:
    """A column loop that no sum of at most MAX_CHUNKS widths makes (matmul_odd's 29 columns
    at x86-64-v4: 16 + 8 + 4 + 1; half_matmul's 19, 8-lane float16: 8 + 8 + 2 + 1) was
    jammed by the widest width and its remainder loops again, narrower (16, then 8, 4 and a
    scalar column, each a reduce loop of its own); it is jammed whole as ceil(n / w)
    overlapping chunks: matmul_odd 5.2 -> 1.6 us, half_matmul 6.6 -> 3.4 us (clang 23 and
    9.5 us)."""
    jammed, _ = _jammed(_sweep(name), "x86-64-v4")
    assert [s for s in _reg_sizes(jammed) if s > 1] == sizes
    assert len(_ranges(jammed)) < len(_ranges(_jammed_exact(name)))


def _jammed_exact(name: str):
    import kcc.passes.unroll_columns as uc
    keep = uc.overlapped_chunks
    uc.overlapped_chunks = lambda n, fs: ()
    try:
        return _jammed(_sweep(name), "x86-64-v4")[0]
    finally:
        uc.overlapped_chunks = keep


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_overlapping_chunks(arch: str) -> None:
    """mean's 14 columns, whose loop loads no buffer it stores, are jammed whole as two 8-lane
    chunks over columns 0..7 and 6..13 (unroll_columns.py `overlapped_chunks`): two vector
    accumulators, every load of the input an 8-lane load, and the output stored as two 8-lane
    stores (slp_reg.py `overlap_runs`; columns 6 and 7 twice, with the same values). 8 + 4 +
    2 ran an 8-lane, a 4-lane and two scalar add chains (mean_axes02 r_8_14_2_14 0.82x clang;
    1.48x overlapped)."""
    jammed, packed = _jammed(_mean(), arch)
    assert [s for s in _reg_sizes(jammed) if s > 1] == [8, 8]
    nodes = toposort([packed])
    loads = [u for u in nodes if u.op is Ops.LOAD and u.src[0].src[0].op is Ops.PARAM
             and u.src[0].src[0].arg.slot == 1]
    assert loads and {u.shape for u in loads} == {(8,)}
    stores = [u for u in nodes if u.op is Ops.STORE and u.src[0].src[0].op is Ops.PARAM]
    assert [u.src[1].shape for u in stores] == [(8,), (8,)]


def test_a_loop_that_loads_what_it_stores_takes_exact_chunks() -> None:
    """Where the loop also loads the output (here its own element, added to each row), a
    column stored twice could be read back between its stores: exact chunks 8 + 4 + 2."""
    src = _mean().replace("%s = ADD(%cur, %s1)", "%xo = LOAD(%po)\n%s2 = ADD(%s1, %xo)\n"
                          "%s = ADD(%cur, %s2)")
    jammed, _ = _jammed(src)
    assert [s for s in _reg_sizes(jammed) if s > 1] == [2, 4, 8]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("which", ["mean_14", "mean_axes02_r_8_14_2_14",
                                   "matmul_odd_r_37_29_53"])
def test_overlapping_chunks_match_the_interpreter(which: str, arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_mean() if which == "mean_14" else _sweep(which))
    args = random_inputs(sink, 6)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_gated_columns_keep_their_remainder_loop() -> None:
    """conv_transpose r_10_10_2_3_3's gates compare the column (`1 < x`, `x < 8`): jammed
    whole in chunks 8 + 2 the compares' lanes were cut across the chunks and assembled into
    masks bit by bit (248 -> 268 ns), so its 10 columns stay 8 and a remainder loop of 2."""
    jammed, _ = _jammed(_sweep("conv_transpose_r_10_10_2_3_3"), "x86-64-v4")
    assert [s for s in _reg_sizes(jammed) if s > 1] == [2, 8]
    assert _ranges(jammed).count(1) == 2           # the jammed loop and its remainder's
