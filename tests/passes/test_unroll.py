"""Tests of unroll-and-jam (kcc/passes/unroll.py): which loops are jammed and which are left
alone, and that every variant computes what the graph as written computes. The oracle is the
reference interpreter, on the graph before and after the pass (bit for bit) and on the x86
object compiled with the pass in the pipeline (tests/support/x86_util.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.ir.uop import AddrSpace
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.target import SCALAR_ALL_NATIVE, TargetDesc
from kcc.passes.unroll import unroll
from kcc.targets.x86.target import x86_desc
from x86_util import assert_same, compile_and_run, random_inputs, reference

# out[2i] = sum_j a[M*i + j] * b[j], out[2i+1] = sum_j (a[M*i + j] + b[j]): two REG
# accumulators zeroed at the top of the outer (WEAK) loop, a reduce loop inside it.
MATVEC = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, {nout})
%a = PARAM ParamArg(1, float32, {na})
%b = PARAM ParamArg(2, float32, 64)
%acc = BUFFER ParamArg(0, float32, 2, addrspace=REG)
%i = RANGE({n}) (0, WEAK)
%ai = AFTER(%acc, %i)
%p0 = INDEX(%ai, 0)
%p1 = INDEX(%ai, 1)
%z0 = STORE(%p0, 0.0)
%z1 = STORE(%p1, 0.0)
%j = RANGE({m}, %i) (1, REDUCE)
%aj = AFTER(%acc, %z0, %z1, %j)
%q0 = INDEX(%aj, 0)
%q1 = INDEX(%aj, 1)
%c0 = LOAD(%q0)
%c1 = LOAD(%q1)
%im = MUL(%i, {m})
%ia = ADD(%im, %j)
%xa = INDEX(%a, %ia)
{prex}%x = {xload}
%xb = INDEX(%b, %j)
%y = LOAD(%xb)
%xy = MUL(%x, %y)
%s0 = ADD(%c0, %xy)
%xpy = ADD(%x, %y)
%s1 = ADD(%c1, %xpy)
%w0 = STORE(%q0, %s0)
%w1 = STORE(%q1, %s1)
{pre_inner}%wg = GROUP(%w0, %w1{inner_extra})
%ej = END(%wg, %j)
%ae = AFTER(%acc, %ej)
%e0 = INDEX(%ae, 0)
%r0 = LOAD(%e0)
%e1 = INDEX(%ae, 1)
%r1 = LOAD(%e1)
%i2 = MUL(%i, {stride})
%o0 = ADD(%i2, {off0})
%o1 = ADD(%i2, {off1})
%oo = INDEX(%out, %o0)
%oo1 = INDEX(%out, %o1)
{pre0}%t0 = {store0}
%t1 = STORE(%oo1, %r1)
%eg = GROUP(%t0, %t1)
%ei = END(%eg, %i)
SINK(%ei) KernelInfo(name="matvec")
"""
BASE = dict(n=8, m=5, nout=16, na=40, prex="", xload="LOAD(%xa)", pre_inner="", inner_extra="",
            stride=2, off0=0, off1=1, pre0="", store0="STORE(%oo, %r0)")


def _kernel(**kw) -> UOp:
    text = MATVEC.format(**{**BASE, **kw})
    return parse(text, "matvec.uop")


def _bounds(g: UOp) -> list[int]:
    return sorted(const_int(n.src[0]) for n in g.toposort() if n.op is Ops.RANGE)


def _regs(g: UOp) -> int:
    return sum(1 for n in g.toposort() if n.op is Ops.BUFFER and n.arg.addrspace is AddrSpace.REG)


def _check(sink: UOp, arch: str = "x86-64-v3") -> UOp:
    """The kernel after unroll (x86 desc); asserts it and the compiled object agree with the
    interpreter on the kernel as written."""
    g = simplify(lower_weak_dtypes(sink))
    u = unroll(g, x86_desc(arch))
    args = random_inputs(sink, 3)
    want = reference(sink, args)
    assert_same(sink, reference(u, args), want)
    assert_same(sink, compile_and_run(sink, args, arch), want)
    return u


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_reduction_in_outer_loop_is_jammed(arch: str) -> None:
    u = _check(_kernel(), arch)
    assert _bounds(u) == [2, 5]              # 8 iterations as 2 of 4 copies, one reduce loop
    assert _regs(u) == 4                     # one accumulator buffer per copy
    (end_j,) = [n for n in u.toposort() if n.op is Ops.END and const_int(n.src[1].src[0]) == 5]
    assert len(end_j.src[0].src) == 4        # the four copies' reduce bodies in one loop


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("n, bounds, regs", [
    (7, [1, 3, 5, 5], 4),          # 4 copies once, then 3 iterations in a remainder loop
    (9, [1, 2, 5, 5], 4),          # 333's shape: 4 copies twice, 1 left
    (5, [1, 1, 5, 5], 4),
    (3, [1, 1, 5, 5], 2),          # 4 > 3: 2 copies once, 1 left
    (6, [3, 5], 2),                # a factor that divides comes first: no remainder loop
])
def test_bound_not_divisible_runs_a_remainder_loop(arch: str, n: int, bounds: list[int],
                                                   regs: int) -> None:
    u = _check(_kernel(n=n, nout=2 * n, na=5 * n), arch)
    assert _bounds(u) == bounds and _regs(u) == regs


def test_remainder_loop_runs_after_the_jammed_loop() -> None:
    # out[2i+8] = out[2i] + acc0: iteration i reads what iteration i-4 stored (4 apart: the
    # jam by 4 is legal); the remainder's iteration 8 reads what the jammed loop's 4 stored
    u = _check(_kernel(n=9, na=45, nout=28, off0=8, off1=9,
                       pre0="%ob = INDEX(%out, %i2)\n%v = LOAD(%ob)\n%s = ADD(%v, %r0)\n",
                       store0="STORE(%oo, %s)"))
    assert _bounds(u) == [1, 2, 5, 5] and _regs(u) == 4


def test_nested_outer_loop_and_inner_loop_nest() -> None:
    # an outer loop around the jammed one (its counter in the indices), and a second reduce
    # loop nested in the first: both inner loops are fused
    text = MATVEC.format(**BASE)
    text = text.replace("%i = RANGE(8) (0, WEAK)", "%o = RANGE(3) (5, LOOP)\n"
                        "%i = RANGE(8, %o) (6, WEAK)")
    text = text.replace("%aj = AFTER(%acc, %z0, %z1, %j)",
                        "%l = RANGE(2, %j) (2, REDUCE)\n%aj = AFTER(%acc, %z0, %z1, %j, %l)")
    text = text.replace("%ia = ADD(%im, %j)", "%ia0 = ADD(%im, %j)\n%ia = ADD(%ia0, %l)")
    text = text.replace("%ej = END(%wg, %j)", "%el = END(%wg, %l)\n%ej = END(%el, %j)")
    text = text.replace("%i2 = MUL(%i, 2)", "%o16 = MUL(%o, 16)\n%i1 = MUL(%i, 2)\n"
                        "%i2 = ADD(%i1, %o16)")
    text = text.replace("%ei = END(%eg, %i)\nSINK(%ei)", "%ei = END(%eg, %i)\n%eo = END(%ei, %o)\n"
                        "SINK(%eo)")
    text = text.replace("ParamArg(0, float32, 16)", "ParamArg(0, float32, 48)")
    text = text.replace("ParamArg(1, float32, 40)", "ParamArg(1, float32, 48)")
    u = _check(parse(text, "nested.uop"))
    assert _bounds(u) == [2, 2, 3, 5] and _regs(u) == 4


@pytest.mark.parametrize("kw", [
    dict(stride=0, off0=0, off1=1, nout=2),            # every iteration stores out[0], out[1]
    dict(stride=1, off0=0, off1=1, nout=9),            # out[i+1] of one is out[i] of the next
    dict(stride=2, off0=0, off1=2, nout=18),           # spans 2 apart overlap one iteration on
])
def test_stores_that_alias_across_iterations_are_left_alone(kw) -> None:
    u = _check(_kernel(**kw))
    assert _regs(u) == 1 and 8 in _bounds(u)


def test_stores_disjoint_across_iterations_are_jammed() -> None:
    u = _check(_kernel(stride=1, off0=0, off1=8, nout=16))     # out[i] and out[8+i]
    assert _regs(u) == 4
    u = _check(_kernel(stride=3, off0=0, off1=2, nout=24))     # gaps between iterations
    assert _regs(u) == 4


def test_read_modify_write_of_the_stored_place_is_jammed() -> None:
    # out[2i] = out[2i] + acc0: each iteration reads only the element it writes
    u = _check(_kernel(pre0="%v = LOAD(%oo)\n%s = ADD(%v, %r0)\n", store0="STORE(%oo, %s)"))
    assert _regs(u) == 4


def test_load_of_another_iterations_store_is_left_alone() -> None:
    # out[2i] = out[2i+2] + acc0: iteration i+1 overwrites what iteration i read
    u = _check(_kernel(nout=18, pre0="%n2 = ADD(%o0, 2)\n%on = INDEX(%out, %n2)\n"
                       "%v = LOAD(%on)\n%s = ADD(%v, %r0)\n", store0="STORE(%oo, %s)"))
    assert _regs(u) == 1


def test_gated_loads_in_the_reduce_loop() -> None:
    u = _check(_kernel(prex="%gate = CMPLT(%j, 3)\n", xload="LOAD(%xa, 1.5, %gate)"))
    assert _regs(u) == 4


def test_accumulator_carried_across_outer_iterations_is_left_alone() -> None:
    # zeroed once before the loop: each iteration continues from the last one's sums
    text = MATVEC.format(**BASE).replace("%ai = AFTER(%acc, %i)\n", "")
    text = text.replace("%p0 = INDEX(%ai, 0)", "%p0 = INDEX(%acc, 0)")
    text = text.replace("%p1 = INDEX(%ai, 1)", "%p1 = INDEX(%acc, 1)")
    text = text.replace("%j = RANGE(5, %i) (1, REDUCE)", "%j = RANGE(5, %i, %z0, %z1) (1, REDUCE)")
    u = _check(parse(text, "carried.uop"))
    assert _regs(u) == 1 and 8 in _bounds(u)


def test_accumulator_read_after_the_loop_is_left_alone() -> None:
    # a load of acc after the outer loop sees the last iteration's values
    text = MATVEC.format(**{**BASE, "nout": 17})
    text = text.replace("%ei = END(%eg, %i)\nSINK(%ei)",
                        "%ei = END(%eg, %i)\n%al = AFTER(%acc, %ei)\n%pl = INDEX(%al, 0)\n"
                        "%last = LOAD(%pl)\n%ol = INDEX(%out, 16)\n%tl = STORE(%ol, %last)\n"
                        "SINK(%tl)")
    u = _check(parse(text, "after.uop"))
    assert _regs(u) == 1


def test_store_in_inner_loop_independent_of_outer_counter_is_left_alone() -> None:
    # b[63] = b[63] + 1 inside the reduce loop (ordered on j, not on i) runs once per (i, j):
    # not once per jammed group
    u = _check(_kernel(pre_inner="%bA = AFTER(%b, %j)\n%bj = INDEX(%bA, 63)\n%old = LOAD(%bj)\n"
                       "%y1 = ADD(%old, 1.0)\n%wb = STORE(%bj, %y1)\n", inner_extra=", %wb"))
    assert _regs(u) == 1


def test_symbolic_bound_is_left_alone() -> None:
    text = MATVEC.format(**BASE).replace(
        "%i = RANGE(8) (0, WEAK)",
        "%n = PARAM ParamArg(3, int32, vmin_vmax=(0, 8), addrspace=ALU)\n"
        "%i = RANGE(%n) (0, WEAK)")
    g = simplify(lower_weak_dtypes(parse(text, "sym.uop")))
    assert unroll(g, x86_desc("x86-64-v3")) is g


def test_targets_without_vector_registers_opt_out() -> None:
    g = simplify(lower_weak_dtypes(_kernel()))
    assert unroll(g, SCALAR_ALL_NATIVE) is g
    assert unroll(g, replace(x86_desc("x86-64-v3"), vector_regs=2)) is g   # no room for 2 copies


def test_factor_is_limited_by_the_register_budget() -> None:
    g = simplify(lower_weak_dtypes(_kernel()))
    # acc: 2 floats = 1 register a copy; f * (1 + 1) <= regs // 2
    assert _regs(unroll(g, replace(x86_desc("x86-64-v3"), vector_regs=8))) == 2
    assert _regs(unroll(g, replace(x86_desc("x86-64-v3"), vector_regs=16))) == 4


def test_copies_index_the_same_base_plus_a_constant() -> None:
    # copy k's counter f*i2 + k reaches the addresses as a constant addend (a displacement),
    # not as an index sum of its own per copy
    text = MATVEC.format(**BASE).replace("%i2 = MUL(%i, 2)", "%i2 = SHL(%i, 1)")
    u = simplify(_check(parse(text, "shl.uop")))
    bases, offsets = set(), set()
    for n in u.toposort():
        if n.op is Ops.STORE and n.src[0].src[0].op is Ops.PARAM:
            idx = n.src[0].src[1]
            c = const_int(idx.src[1]) if idx.op is Ops.ADD else None
            bases.add(idx.src[0] if c is not None else idx)
            offsets.add(c or 0)
    assert len(bases) == 1 and offsets == {0, 1, 2, 3, 4, 5, 6, 7}


@pytest.mark.parametrize("swap", [False, True])
def test_row_index_mulacc_is_shared_by_the_copies(swap: bool) -> None:
    # tinygrad's row index MULACC(i, M, j): the copies' loads read one MULACC(4*i2, M, j)
    # plus a constant (k*M) each, not a MULACC of their own
    mulacc = "MULACC(5, %i, %j)" if swap else "MULACC(%i, 5, %j)"
    text = MATVEC.format(**BASE).replace("%im = MUL(%i, 5)\n%ia = ADD(%im, %j)",
                                         f"%ia = {mulacc}")
    u = simplify(_check(parse(text, "mulacc.uop")))
    idx = [n.src[0].src[1] for n in u.toposort() if n.op is Ops.LOAD
           and n.src[0].src[0].op is Ops.PARAM and n.src[0].src[0].arg.slot == 1]
    macs = {n.src[0] if n.op is Ops.ADD else n for n in idx}
    assert len(macs) == 1 and next(iter(macs)).op is Ops.MULACC
    assert sorted(const_int(n.src[1]) if n.op is Ops.ADD else 0 for n in idx) == [0, 5, 10, 15]


@pytest.mark.parametrize("n", [8, 9])
def test_store_indexed_through_a_mulacc_is_jammed(n: int) -> None:
    # out[i*2 + 0/1] as MULACC(i, 2, off): linear in i (affine's mulacc reading); a small
    # body, so jammed (with a remainder loop for 9)
    text = MATVEC.format(**{**BASE, "n": n, "nout": 2 * n, "na": 5 * n}).replace(
        "%i2 = MUL(%i, 2)\n%o0 = ADD(%i2, 0)\n%o1 = ADD(%i2, 1)",
        "%o0 = MULACC(%i, 2, 0)\n%o1 = MULACC(%i, 2, 1)")
    assert "MULACC(%i, 2, 1)" in text
    u = _check(parse(text, "mac.uop"))
    assert _regs(u) == 4


def test_store_indexed_through_a_mulacc_with_a_large_body_is_left_alone(monkeypatch) -> None:
    import kcc.passes.unroll as unroll_mod
    monkeypatch.setattr(unroll_mod, "MULACC_MAX_WORK", 3)
    text = MATVEC.format(**BASE).replace(
        "%i2 = MUL(%i, 2)\n%o0 = ADD(%i2, 0)\n%o1 = ADD(%i2, 1)",
        "%o0 = MULACC(%i, 2, 0)\n%o1 = MULACC(%i, 2, 1)")
    u = _check(parse(text, "mac.uop"))
    assert _regs(u) == 1


def test_inner_loops_with_much_work_are_left_alone(monkeypatch) -> None:
    import kcc.passes.unroll as unroll_mod
    g = simplify(lower_weak_dtypes(_kernel()))
    # a copy's reduce body: 2 accumulator loads, the index ADD, the load of a, MUL, 3 ADDs,
    # 2 stores (b[j] is the same load for every copy)
    monkeypatch.setattr(unroll_mod, "MAX_INNER_WORK", 9)
    assert unroll(g, x86_desc("x86-64-v3")) is g
    monkeypatch.setattr(unroll_mod, "MAX_INNER_WORK", 10)
    assert _regs(unroll(g, x86_desc("x86-64-v3"))) == 4


# -- the memory-stream cost (unroll.py's _streams, TargetDesc.load_streams) --------------------

# acc[r] = sum_j term_r for r = 0 … 3, out[4i + r] = acc[r]: a reduce loop over 4 rows in the
# outer (WEAK) loop, each row's term %v{r} computed by {body}
STREAMS = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 32)
%a = PARAM ParamArg(1, float32, {na})
%b = PARAM ParamArg(2, float32, {nb})
%acc = BUFFER ParamArg(0, float32, 4, addrspace=REG)
%i = RANGE(8) (0, WEAK)
%ai = AFTER(%acc, %i)
%o4 = MUL(%i, 4)
{zero}%j = RANGE(4, %i) (1, REDUCE)
%aj = AFTER(%acc, %z0, %z1, %z2, %z3, %j)
{body}%wg = GROUP(%w0, %w1, %w2, %w3)
%ej = END(%wg, %j)
%ae = AFTER(%acc, %ej)
{out}%eg = GROUP(%t0, %t1, %t2, %t3)
%ei = END(%eg, %i)
SINK(%ei) KernelInfo(name="streams")
"""


def _streams_kernel(na: int, nb: int, pre: str, term: Callable[[int], str]) -> UOp:
    """STREAMS with the lines pre, then term(r) computing %v{r} for each row r."""
    zero = "".join(f"%p{r} = INDEX(%ai, {r})\n%z{r} = STORE(%p{r}, 0.0)\n" for r in range(4))
    body = pre + "".join(f"%q{r} = INDEX(%aj, {r})\n%c{r} = LOAD(%q{r})\n{term(r)}"
                         f"%s{r} = ADD(%c{r}, %v{r})\n%w{r} = STORE(%q{r}, %s{r})\n"
                         for r in range(4))
    out = "".join(f"%e{r} = INDEX(%ae, {r})\n%r{r} = LOAD(%e{r})\n%oi{r} = ADD(%o4, {r})\n"
                  f"%oo{r} = INDEX(%out, %oi{r})\n%t{r} = STORE(%oo{r}, %r{r})\n"
                  for r in range(4))
    text = STREAMS.format(na=na, nb=nb, zero=zero, body=body, out=out)
    return parse(text, "streams.uop")


def _rows(stride: int) -> UOp:
    """term_r = a[4S*i + S*r + j]: each outer iteration reduces 4 rows of a, S floats apart,
    so a copy reads 4 streams (S = 1024: one 4 KB page each); b is not read."""
    return _streams_kernel(
        32 * stride + 4, 1, f"%ib = MUL(%i, {4 * stride})\n%base = ADD(%ib, %j)\n",
        lambda r: f"%x{r} = ADD(%base, {stride * r})\n%xa{r} = INDEX(%a, %x{r})\n"
                  f"%v{r} = LOAD(%xa{r})\n")


def _matmul() -> UOp:
    """term_r = a[1024r + j] * b[1024j + 4i + r]: matmul's shape. The 4 rows of a are the
    same for every i (one load for all copies, 4 streams); copy k's b elements are 16 bytes
    after copy k-1's (the same line: one stream): 5 streams with any number of copies."""
    return _streams_kernel(
        4100, 4128, "%jb = MUL(%j, 1024)\n%bi = ADD(%jb, %o4)\n",
        lambda r: f"%x{r} = ADD(%j, {1024 * r})\n%xa{r} = INDEX(%a, %x{r})\n"
                  f"%ua{r} = LOAD(%xa{r})\n%y{r} = ADD(%bi, {r})\n%yb{r} = INDEX(%b, %y{r})\n"
                  f"%ub{r} = LOAD(%yb{r})\n%v{r} = MUL(%ua{r}, %ub{r})\n")


def _limit(streams: int) -> TargetDesc:
    return replace(x86_desc("x86-64-v4"), load_streams=streams)


def _pre(sink: UOp) -> UOp:
    return simplify(lower_weak_dtypes(sink))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_rows_of_distinct_pages_get_two_copies(arch: str) -> None:
    # 4 streams a copy: 16 with 4 copies is past x86's 8; 2 copies read 8
    u = _check(_rows(1024), arch)
    assert _regs(u) == 2 and _bounds(u) == [4, 4]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_matmul_shape_keeps_four_copies(arch: str) -> None:
    u = _check(_matmul(), arch)
    assert _regs(u) == 4 and _bounds(u) == [2, 4]


def test_factor_follows_the_stream_limit() -> None:
    g = _pre(_rows(1024))
    assert _regs(unroll(g, _limit(16))) == 4
    assert _regs(unroll(g, _limit(15))) == 2
    assert _regs(unroll(g, _limit(8))) == 2
    assert unroll(g, _limit(7)) is g          # 2 copies read 8 streams
    assert unroll(g, _limit(4)) is g
    assert _regs(unroll(g, _limit(0))) == 4   # 0: no limit
    m = _pre(_matmul())
    assert _regs(unroll(m, _limit(5))) == 4
    assert unroll(m, _limit(4)) is m


def test_loads_within_the_window_are_one_stream() -> None:
    # rows 32 bytes apart: a copy's 4 rows are one stream, 4 copies 4 streams
    assert _regs(unroll(_pre(_rows(8)), _limit(4))) == 4
    # 124 bytes apart: rows 0-1 and 2-3 of a copy a stream each (4 with 2 copies, 8 with 4)
    g = _pre(_rows(31))
    assert _regs(unroll(g, _limit(4))) == 2 and _regs(unroll(g, _limit(8))) == 4
    # 128 bytes apart (STREAM_WINDOW): every row a stream of its own
    g = _pre(_rows(32))
    assert unroll(g, _limit(3)) is g and _regs(unroll(g, _limit(8))) == 2
    _check(_rows(31))


def test_gpu_targets_have_no_stream_limit() -> None:
    # CUDA and AMD do not unroll-and-jam at all (vector_regs 0: a GPU hides latency with
    # other warps/waves in flight, not with independent chains in one thread)
    from kcc.targets.amd.desc import AMD
    from kcc.targets.cuda.desc import CUDA
    for desc in (CUDA, AMD):
        assert desc.vector_regs == 0 and desc.load_streams == 0


def _tile_kernel() -> UOp:
    """out[r][4i + j] = Σ_k a[r][k]·b[k][4i + j]: a 2-row × 4-column matmul tile per outer
    iteration i (8 of them, 32 columns), tinygrad's shape: the REG accumulator holds the tile's
    two rows of 4, b's row is one 4-lane load taken apart by lanes."""
    lines = ["# kcc-uop 1", "%out = PARAM ParamArg(0, float32, 64)",
             "%a = PARAM ParamArg(1, float32, 16)", "%b = PARAM ParamArg(2, float32, 256)",
             "%acc = BUFFER ParamArg(0, float32, 8, addrspace=REG)", "%i = RANGE(8) (0, WEAK)",
             "%ai = AFTER(%acc, %i)"]
    lines += [f"%p{e} = INDEX(%ai, {e})\n%z{e} = STORE(%p{e}, 0.0)" for e in range(8)]
    lines += ["%k = RANGE(8, %i) (1, REDUCE)",
              "%ak = AFTER(%acc, " + ", ".join(f"%z{e}" for e in range(8)) + ", %k)",
              "%kb = MUL(%k, 32)", "%i4 = MUL(%i, 4)", "%bi = ADD(%kb, %i4)",
              "%bs = SHRINK(%b, %bi, 4)", "%bv = LOAD(%bs)", "%a0i = INDEX(%a, %k)",
              "%a0 = LOAD(%a0i)", "%k8 = ADD(%k, 8)", "%a1i = INDEX(%a, %k8)", "%a1 = LOAD(%a1i)"]
    for r in range(2):
        for j in range(4):
            e = 4 * r + j
            lines += [f"%q{e} = INDEX(%ak, {e})", f"%c{e} = LOAD(%q{e})",
                      f"%b{e} = INDEX(%bv, {j})", f"%m{e} = MUL(%a{r}, %b{e})",
                      f"%s{e} = ADD(%c{e}, %m{e})", f"%w{e} = STORE(%q{e}, %s{e})"]
    lines += ["%wg = GROUP(" + ", ".join(f"%w{e}" for e in range(8)) + ")",
              "%ek = END(%wg, %k)", "%ae = AFTER(%acc, %ek)"]
    for r in range(2):
        lines += [f"%e{e} = INDEX(%ae, {e})\n%l{e} = LOAD(%e{e})" for e in range(4 * r, 4 * r + 4)]
        lines += [f"%st{r} = STACK(" + ", ".join(f"%l{e}" for e in range(4 * r, 4 * r + 4)) + ")",
                  f"%oi{r} = ADD(%i4, {32 * r})", f"%os{r} = SHRINK(%out, %oi{r}, 4)",
                  f"%t{r} = STORE(%os{r}, %st{r})"]
    lines += ["%eg = GROUP(%t0, %t1)", "%ei = END(%eg, %i)", 'SINK(%ei) KernelInfo(name="tile")']
    return parse("\n".join(lines) + "\n", "tile.uop")


@pytest.mark.parametrize("arch,lanes", [("x86-64-v3", 8), ("x86-64-v4", 16)])
def test_tile_copies_are_interleaved_into_rows(arch: str, lanes: int) -> None:
    from kcc.passes.slp import slp
    u = _check(_tile_kernel(), arch)
    # one accumulator buffer for the 4 copies: row r of copy c at 16r + 4c … 16r + 4c + 3
    (buf,) = [n for n in u.toposort() if n.op is Ops.BUFFER]
    assert buf.arg.size == 32 and _bounds(u) == [2, 8]
    places = {const_int(n.src[1]) for n in u.toposort() if n.op is Ops.INDEX
              and n.src[0].kind == "buffer" and n.src[0].op is Ops.AFTER}
    assert places == set(range(32))
    # so the lane packer makes each row of the jammed tile vectors of the target's widest
    # width: the copies' b rows one load, a splat of a[r][k]
    v = slp(u, x86_desc(arch))
    regs = {(const_int(n.src[1]), n.shape[0]) for n in v.toposort() if n.op is Ops.SHRINK
            and n.src[0].kind == "buffer" and n.src[0].op is Ops.AFTER}
    assert regs == {(s, lanes) for s in range(0, 32, lanes)}
    assert any(n.op is Ops.LOAD and n.shape == (lanes,) and n.src[0].src[0].op is Ops.PARAM
               and n.src[0].src[0].arg.slot == 2 for n in v.toposort())


def test_a_loop_cone_is_its_body_sorted() -> None:
    # _Loops.cone reads the END's own (kept) order when the body reaches the counter, else
    # sorts the body: either way the body's topological order
    from kcc.ir.uop import toposort
    from kcc.passes.unroll import _Loops
    text = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 8)
%1 = PARAM ParamArg(1, float32, 8)
%i = RANGE(8) (0, LOOP)
%p = INDEX(%1, %i)
%l = LOAD(%p)
%q = INDEX(%0, %i)
%s = STORE(%q, %l)
%e = END(%s, %i)
%j = RANGE(4, %e) (1, LOOP)
%p2 = INDEX(%1, 0)
%l2 = LOAD(%p2)
%q2 = INDEX(%0, 0)
%s2 = STORE(%q2, %l2)
%e2 = END(%s2, %j)
SINK(%e2) KernelInfo(name="k")
"""
    sink = parse(text, "k.uop")
    loops = _Loops(sink)
    ends = [n for n in loops.order if n.op is Ops.END]
    assert len(ends) == 2
    for e in ends:
        toposort([e])                        # the END's order kept on it, as unroll_tiny's
        assert loops.cone(e) == toposort([e.src[0]])
    # the second loop's body does not read its counter: the END's order is not the body's
    assert toposort([ends[1]])[-2] is not ends[1].src[0]


def test_constant_out_moves_only_the_ops_it_names() -> None:
    # _constant_out asks the op before the dtype: every other op comes back as it was, and an
    # integer (x + c) * k still becomes x*k + c*k
    from kcc.ir import dtypes
    from kcc.ir.uop import ParamArg
    from kcc.passes.unroll import _OUT_OPS, _constant_out
    i32 = dtypes.int32
    x = UOp(Ops.PARAM, (), ParamArg(0, i32, None, addrspace=AddrSpace.ALU))
    c3, c5 = UOp(Ops.CONST, (), 3), UOp(Ops.CONST, (), 5)
    xc = UOp(Ops.ADD, (UOp(Ops.CAST, (x,), i32), UOp(Ops.CAST, (c3,), i32)))
    moved = _constant_out(UOp(Ops.MUL, (xc, UOp(Ops.CAST, (c5,), i32))))
    assert moved.op is Ops.ADD and const_int(moved.src[1]) == 15
    assert moved.src[0].op is Ops.MUL and moved.src[0].src[0] is xc.src[0]
    for n in (xc.src[0], UOp(Ops.SUB, (xc, xc)), UOp(Ops.CMPLT, (xc, xc)), UOp(Ops.NEG, (xc,))):
        assert n.op not in _OUT_OPS and _constant_out(n, True) is n
