"""Tests of the widening of elementwise loops across iterations (kcc/passes/widen.py): which
loops become W*k-lane loops and which are left alone, and that every variant computes what the
graph as written computes. The oracle is the reference interpreter, on the graph before and
after the pass (bit for bit) and on the x86 object compiled with the pass in the pipeline
(tests/support/x86_util.py), on x86-64-v3 and, where this CPU has AVX-512, x86-64-v4."""

from __future__ import annotations

import re

import pytest
from widen_util import range_bounds as _bounds
from widen_util import shrink_widths as _widths
from widen_util import widen_check as _check
from widen_util import widen_prep as _prep

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.consts import const_int
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.target import SCALAR_ALL_NATIVE
from kcc.passes.widen import widen
from kcc.targets.amd.desc import AMD
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import ARCHS, HAS_V4


# tinygrad's elementwise shape: 4 lanes loaded with one SHRINK per iteration, taken apart,
# computed lane by lane, STACKed and stored; gidx0 runs the loop for two workers, on spans
# of the buffers 16 elements apart.
LANES = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, {size})
%a = PARAM ParamArg(1, float32, {size})
%b = PARAM ParamArg(2, float32, {size})
%g = SPECIAL(2) "gidx0"
%gb = MUL(%g, {half})
%i = RANGE({n}) (0, WEAK)
%i4 = MUL(%i, {stride})
%p = ADD(%gb, %i4)
%pa = SHRINK(%a, %p, 4)
%va = LOAD(%pa)
%pb = SHRINK(%b, %p, 4)
%vb = LOAD(%pb)
{lanes}%v = STACK(%r0, %r1, %r2, %r3)
%po = {out_place}
%st = {store}
%e = END(%st, %i)
SINK(%e) KernelInfo(name="lanes")
"""
ADD_LANE = "%a{j} = INDEX(%va, {j})\n%b{j} = INDEX(%vb, {j})\n%r{j} = ADD(%a{j}, %b{j})\n"
# exp2-like lanes: a bool chain slp leaves scalar (CMPNE of bools), int32 casts, shifts,
# a BITCAST and a transcendental op that decompose expands after the widening
EXP_LANE = """%a{j} = INDEX(%va, {j})
%b{j} = INDEX(%vb, {j})
%c{j} = CMPLT(%a{j}, 1.5)
%n{j} = CMPNE(%c{j}, true)
%t{j} = CAST(%a{j}) int32
%s{j} = SHL(%t{j}, 3)
%f{j} = BITCAST(%s{j}) float32
%x{j} = EXP2(%b{j})
%m{j} = MUL(%x{j}, %f{j})
%r{j} = WHERE(%n{j}, %m{j}, %a{j})
"""


def _text(n: int = 16, stride: int = 4, lane: str = ADD_LANE, out_place: str = "",
          store: str = "STORE(%po, %v)", size: int | None = None, alias: bool = False) -> str:
    half = n * stride + 16             # workers' spans apart, also with stores ahead of loads
    size = size or 2 * half
    text = LANES.format(size=size, half=half, n=n, stride=stride,
                        lanes="".join(lane.format(j=j) for j in range(4)),
                        out_place=out_place or "SHRINK(%out, %p, 4)", store=store)
    if alias:                           # out is a: the loop reads what it writes
        text = text.replace("%pa = SHRINK(%a,", "%pa = SHRINK(%out,")
    return text


@pytest.mark.parametrize("arch, k", [("x86-64-v3", 2), ("x86-64-v4", 4)])
def test_add_shape_is_widened_to_the_target_vector(arch: str, k: int) -> None:
    w = _check(_text(), arch) if arch == "x86-64-v3" or HAS_V4 else _prep(_text(), arch)[2]
    assert _bounds(w) == [16 // k] and _widths(w) == {4 * k}
    adds = [u for u in w.toposort() if u.op is Ops.ADD and u.shape]
    assert [u.shape for u in adds] == [(4 * k,)]


@pytest.mark.parametrize("arch", ARCHS)
def test_exp_shape_with_scalar_lanes_and_decomposed_ops(arch: str) -> None:
    w = _check(_text(lane=EXP_LANE), arch)
    # int32 vectors are 8 lanes at most on both: 2 iterations as one
    assert _bounds(w) == [8] and _widths(w) == {8}
    # (x < 1.5) != true packed by slp as a bool XOR, then widened with the rest
    assert [u.shape for u in w.toposort() if u.op is Ops.XOR] == [(8,)]
    assert not [u for u in w.toposort() if u.op is Ops.INDEX and u.src[0].kind == "value"]


@pytest.mark.parametrize("arch", ARCHS)
def test_scalar_lanes_are_copied_per_iteration(arch: str) -> None:
    # lane 2 subtracts where the others add: slp leaves the lanes scalar (a STACK of them),
    # and the widened loop computes them once per iteration, from lanes j*4 + l
    w = _check(_text().replace("%r2 = ADD(%a2, %b2)", "%r2 = SUB(%a2, %b2)"), arch)
    k = 2 if arch == "x86-64-v3" else 4
    assert _widths(w) == {4 * k}
    lanes = sorted(const_int(u.src[1]) for u in w.toposort()
                   if u.op is Ops.INDEX and u.src[0].kind == "value")
    assert lanes == sorted(list(range(4 * k)) * 2)     # one lane of a and one of b each
    (st,) = [u for u in w.toposort() if u.op is Ops.STACK and u.shape == (4 * k,)]
    assert sum(1 for s in st.src if s.op is Ops.SUB) == k


def test_largest_dividing_factor_is_taken() -> None:
    _, _, w = _prep(_text(n=6), "x86-64-v4")     # 4 does not divide 6, 2 does
    assert _bounds(w) == [3] and _widths(w) == {8}


@pytest.mark.parametrize("arch", ARCHS)
def test_bound_no_factor_divides_gets_a_tail_loop(arch: str) -> None:
    # 7 iterations: x86-64-v3 runs 3 of 8 lanes (k = 2) and a tail of 1 iteration of the
    # original 4 lanes; v4 1 of 16 lanes (k = 4, cost 1 + 3 ties with k = 2's 3 + 1) and 3
    w = _check(_text(n=7), arch)
    k = 2 if arch == "x86-64-v3" else 4
    assert _bounds(w) == [7 // k, 7 % k] and _widths(w) == {4 * k, 4}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [1, 5, 9, 13, 17, 33])
def test_tail_loop_bounds_are_exact(arch: str, n: int) -> None:
    # every element once, the widened blocks then the tail, against the interpreter
    w = _check(_text(n=n), arch)
    b, k = _bounds(w), max(_widths(w)) // 4
    assert b[0] * k + sum(b[1:]) == n and len(b) == (1 if n % k == 0 else 2)
    assert n == 1 or k > 1


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("lo", [1, -5])
def test_symbolic_bound_gets_a_tail_loop(arch: str, lo: int) -> None:
    # the bound from a PARAM n (up to 25 iterations): max(n, 0) >> log2 k widened iterations,
    # then the tail; each worker's span is sized for 25
    text = _text(n=25).replace(
        "%i = RANGE(25) (0, WEAK)",
        f'%n = PARAM ParamArg(3, int32, vmin_vmax=({lo}, 25), name="n", addrspace=ALU)\n'
        "%nb = ADD(%n, 0)\n%i = RANGE(%nb) (0, WEAK)")
    assert "RANGE(%nb)" in text
    for seed in (3, 4, 5, 6):
        w = _check(text, arch, seed=seed)
    ranges = [u for u in w.toposort() if u.op is Ops.RANGE]
    assert len(ranges) == 2 and Ops.SHR in {u.op for u in ranges[0].src[0].toposort()}


@pytest.mark.parametrize("arch", ARCHS)
def test_store_read_by_the_next_iteration_is_left_alone(arch: str) -> None:
    # out[p+4 .. p+7] = out[p .. p+3] + b[p ..]: iteration i+1 loads what iteration i stored,
    # so running both loads first would read old values (the interpreter says which)
    text = _text(alias=True, out_place="SHRINK(%out, %q, 4)",
                 store="STORE(%po, %v)").replace("%po = ", "%q = ADD(%p, 4)\n%po = ")
    _, g, w = _prep(text, arch)
    assert w is g
    _check(text, arch)
    # a store two vectors ahead: iterations 1 apart do not meet, 2 apart do (no factor 4)
    text2 = text.replace("ADD(%p, 4)", "ADD(%p, 8)")
    _, _, w2 = _prep(text2, arch)
    assert _widths(w2) == {8}
    _check(text2, arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_in_place_update_is_widened(arch: str) -> None:
    # out[p ..] = out[p ..] + b[p ..]: each element read and written by one iteration only
    w = _check(_text(alias=True), arch)
    assert _widths(w) == {8 if arch == "x86-64-v3" else 16}


@pytest.mark.parametrize("arch", ARCHS)
def test_gated_store_and_gated_load_are_left_alone(arch: str) -> None:
    gated = _text(store="STORE(%po, %v, %gt)").replace("%st = ", "%gt = CMPLT(%i, 9)\n%st = ")
    _, g, w = _prep(gated, arch)
    assert w is g
    _check(gated, arch)
    gl = _text().replace("%vb = LOAD(%pb)", "%gt = CMPLT(%i, 9)\n%vb = LOAD(%pb, %z, %gt)")
    gl = gl.replace("%pb = ", "%z = STACK(0.0, 0.0, 0.0, 0.0)\n%pb = ")
    _, g, w = _prep(gl, arch)
    assert w is g
    _check(gl, arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_non_consecutive_stride_is_left_alone(arch: str) -> None:
    text = _text(stride=8)                 # a 4-element gap between iterations' vectors
    _, g, w = _prep(text, arch)
    assert w is g
    _check(text, arch)


def test_scalar_load_in_the_loop_is_left_alone() -> None:
    # a scalar LOAD that depends on the counter (a gather) is not copied per iteration
    text = _text().replace("%r0 = ADD(%a0, %b0)", "%x = INDEX(%b, %i)\n%xl = LOAD(%x)\n"
                           "%xs = ADD(%b0, %xl)\n%r0 = ADD(%a0, %xs)")
    _, g, w = _prep(text)
    assert w is g
    _check(text)


def test_loop_invariant_scalar_and_vector_operands_are_repeated() -> None:
    # a scalar loaded outside the loop (broadcast) and a lane-varying constant vector
    text = _text(lane="%a{j} = INDEX(%va, {j})\n%b{j} = INDEX(%vb, {j})\n"
                      "%m{j} = MUL(%a{j}, %y)\n%r{j} = ADD(%m{j}, %b{j})\n")
    text = text.replace("%i = RANGE", "%yp = INDEX(%b, 5)\n%y = LOAD(%yp)\n%i = RANGE")
    text = text.replace("%v = STACK(%r0, %r1, %r2, %r3)",
                        "%v0 = STACK(%r0, %r1, %r2, %r3)\n"
                        "%cv = STACK(0.5, 1.5, 2.5, 3.5)\n%v = ADD(%v0, %cv)")
    w = _check(text)
    assert _widths(w) == {8}


@pytest.mark.parametrize("desc", [CUDA, AMD, SCALAR_ALL_NATIVE], ids=lambda d: d.name)
def test_targets_without_wide_cpu_vectors_opt_out(desc) -> None:
    sink = parse(_text(), "k.uop")
    g = slp(simplify(lower_weak_dtypes(sink)), desc)
    assert widen(g, desc) is g


def test_reduce_loops_are_left_alone() -> None:
    # a REG accumulator in the loop: not an elementwise loop
    text = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 4)
%a = PARAM ParamArg(1, float32, 64)
%acc = BUFFER ParamArg(0, float32, 4, addrspace=REG)
%zp = SHRINK(%acc, 0, 4)
%zv = STACK(0.0, 0.0, 0.0, 0.0)
%z = STORE(%zp, %zv)
%i = RANGE(16, %z) (0, REDUCE)
%ai = AFTER(%acc, %z, %i)
%pl = SHRINK(%ai, 0, 4)
%c = LOAD(%pl)
%i4 = MUL(%i, 4)
%xp = SHRINK(%a, %i4, 4)
%x = LOAD(%xp)
%cx = ADD(%c, %x)
%s = STORE(%pl, %cx)
%e = END(%s, %i)
%ae = AFTER(%acc, %e)
%rp = SHRINK(%ae, 0, 4)
%rv = LOAD(%rp)
%op = SHRINK(%out, 0, 4)
%r = STORE(%op, %rv)
SINK(%r) KernelInfo(name="red")
"""
    _, g, w = _prep(text)
    assert w is g
    _check(text)


@pytest.mark.parametrize("arch, reg", [("x86-64-v3", "ymm"), ("x86-64-v4", "zmm")])
def test_object_computes_in_wide_registers_and_streams_them(arch: str, reg: str) -> None:
    """The selector picks whole ymm/zmm ops for the widened loop, and the non-temporal store
    (kcc/isel/x86/stream.py) applies to the wide store."""
    obj, _ = compile_x86([parse(_text(), "k.uop")], arch, streaming_stores="always")
    asm = disasm_object(obj)
    assert re.search(rf"vaddps {reg}\d+, {reg}\d+", asm)
    assert re.search(rf"vmovntps {reg}word ptr", asm)
    assert not re.search(r"vaddps xmm", asm)


def _chain(loops: int) -> str:
    """`loops` elementwise loops, each RANGE ordered after the END before it (unroll's
    remainder loop after its jammed loop has this shape), each on 32 elements of its own."""
    size = 32 * loops
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {size})",
             f"%a = PARAM ParamArg(1, float32, {size})"]
    for j in range(loops):
        after = f", %e{j - 1}" if j else ""
        lines += [f"%i{j} = RANGE(8{after}) ({j}, WEAK)", f"%m{j} = MUL(%i{j}, 4)",
                  f"%p{j} = ADD(%m{j}, {32 * j})", f"%pa{j} = SHRINK(%a, %p{j}, 4)",
                  f"%v{j} = LOAD(%pa{j})", f"%w{j} = MUL(%v{j}, %v{j})",
                  f"%po{j} = SHRINK(%out, %p{j}, 4)", f"%s{j} = STORE(%po{j}, %w{j})",
                  f"%e{j} = END(%s{j}, %i{j})"]
    lines.append(f'SINK(%e{loops - 1}) KernelInfo(name="chain")')
    return "\n".join(lines) + "\n"


def test_chain_of_ordered_loops_is_rebuilt_in_one_walk(monkeypatch) -> None:
    """40 loops, each ordered after the one before, all widened in one pass: the new ENDs go
    into the graph in one walk that enters each node (old or new) once (before: one walk per
    level of the chain), and each loop's region is walked alone, not with every loop before
    it. Counted — the replacement map's lookups (one per node entered) and the nodes every
    toposort of the pass returns — not timed; the result reads no old loop."""
    import kcc.ir.uop as uop_mod
    import kcc.passes.widen as widen_mod
    from kcc.targets.x86.arch import x86_desc

    plain_walk, substitute_closed = uop_mod._toposort, uop_mod.substitute_closed
    walked = [0]
    calls: list[tuple[int, int]] = []

    class Counting(dict):
        """A replacement map that counts its lookups."""

        n = 0

        def get(self, key, default=None):
            self.n += 1
            return super().get(key, default)

    def walk(roots, descend):
        out = plain_walk(roots, descend)
        walked[0] += len(out)
        return out

    def counted(root, repl):
        m = Counting(repl)
        out = substitute_closed(root, m)
        # every node the walk may enter: the old graph's and every new END's (not counted)
        nodes = set(plain_walk([root], None)).union(*(plain_walk([v], None)
                                                       for v in repl.values()))
        calls.append((m.n, len(nodes)))
        return out

    desc = x86_desc("x86-64-v3")
    g = slp(simplify(lower_weak_dtypes(parse(_chain(40), "k.uop"))), desc)
    size = len(g.toposort())
    monkeypatch.setattr(widen_mod, "substitute_closed", counted)
    monkeypatch.setattr(uop_mod, "_toposort", walk)
    w = widen(g, desc)
    monkeypatch.undo()
    assert len(calls) == 1
    entered, nodes = calls[0]
    assert entered <= nodes
    # every other walk of the pass (its order, the loops' regions, ...) a fixed number of
    # graphs' worth for any length of chain: 40 loops walked ~75 graphs' worth before
    assert walked[0] <= 4 * size
    assert _bounds(w) == [4] * 40                    # every loop widened once, 8 lanes
    old = {u for u in g.toposort() if u.op in (Ops.RANGE, Ops.END)}
    assert not old & set(w.toposort())
    _check(_chain(6))                                # a short chain, against the interpreter


@pytest.mark.parametrize("arch", ARCHS)
def test_mulacc_index_is_widened(arch: str) -> None:
    # tinygrad writes the start as MULACC(gidx, half, i << 2) (interpolate's E_4_16_4_4): the
    # counter's coefficient is read through the MULACC and the SHL
    text = _text().replace("%i4 = MUL(%i, 4)", "%i4 = SHL(%i, 2)").replace(
        "%p = ADD(%gb, %i4)", "%p = MULACC(%g, 80, %i4)").replace("%gb = MUL(%g, 80)\n", "")
    assert "MULACC" in text and "SHL" in text
    w = _check(text, arch)
    k = 2 if arch == "x86-64-v3" else 4
    assert _bounds(w) == [16 // k] and _widths(w) == {4 * k}


@pytest.mark.parametrize("arch", ARCHS)
def test_loop_of_one_block_loses_its_range(arch: str) -> None:
    # 4 iterations of 4 lanes on v4 (2 on v3): one widened block, the body once at counter
    # 0 with no loop of one iteration; with the loop reading what it stores, the loop stays
    k = 2 if arch == "x86-64-v3" else 4
    w = _check(_text(n=k), arch)
    assert _bounds(w) == [] and _widths(w) == {4 * k}
    w = _check(_text(n=k, alias=True), arch)
    assert _bounds(w) == [1] and _widths(w) == {4 * k}


@pytest.mark.parametrize("arch", ARCHS)
def test_loop_of_two_blocks_is_straight_line(arch: str) -> None:
    # scatter E_8_4: 8 float4 iterations on v4 (4 on v3) are two widened blocks, written as
    # the body at counters 0 and k with no loop of two iterations; with the loop reading what
    # it stores, the loop stays
    k = 2 if arch == "x86-64-v3" else 4
    w = _check(_text(n=2 * k), arch)
    assert _bounds(w) == [] and _widths(w) == {4 * k}
    assert sum(u.op is Ops.STORE for u in w.toposort()) == 2
    w = _check(_text(n=2 * k, alias=True), arch)
    assert _bounds(w) == [2] and _widths(w) == {4 * k}


def test_two_blocks_whose_stores_meet_keep_their_loop() -> None:
    # stores at 4i and 4i + 8: iteration i's second store is iteration i+2's first (the
    # later one wins in loop order), 2 iterations apart, so within one block of k = 2 they
    # never meet but the two blocks' copies would: the loop of two blocks stays
    text = _text(n=4, store="STORE(%po, %v)\n%po2 = SHRINK(%out, %p8, 4)\n"
                 "%st2 = STORE(%po2, %v)\n%grp = GROUP(%st1, %st2)")
    text = text.replace("%st = STORE(%po, %v)\n", "%st1 = STORE(%po, %v)\n") \
        .replace("%p = ADD(%gb, %i4)\n", "%p = ADD(%gb, %i4)\n%p8 = ADD(%p, 8)\n") \
        .replace("%e = END(%st, %i)", "%e = END(%grp, %i)")
    w = _check(text)
    assert _bounds(w) == [2]


NESTED = """# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 32)
%1 = PARAM ParamArg(1, float32, 32)
%2 = CAST(4) int32
%3 = CAST(8) int32
%4 = RANGE(%2) (0, WEAK)
%5 = RANGE(%3, %4) (1, WEAK)
%6 = MULACC(%4, %3, %5)
%7 = INDEX(%1, %6)
%8 = LOAD(%7)
%9 = ADD(%8, %8)
%10 = INDEX(%0, %6)
%11 = STORE(%10, %9)
%12 = END(%11, %5)
%13 = END(%12, %4)
SINK(%13) KernelInfo(name="E_4_8")
"""


def test_an_outer_loop_is_not_tried_by_the_strategies_for_loops_of_scalars(monkeypatch) -> None:
    # the outer loop's region holds the inner RANGE: _Loop.check refuses it, and so would
    # every strategy after it (widen._holds_loop), which are then not tried
    import kcc.passes.widen as w
    from kcc.targets.x86.arch import x86_desc
    g = simplify(lower_weak_dtypes(parse(NESTED, "nested.uop")))
    outer = next(n for n in g.toposort() if n.op is Ops.RANGE and len(n.src) == 1)
    tried = []
    real = w.LaneLoop
    monkeypatch.setattr(w, "LaneLoop", lambda r, *a: tried.append(r) or real(r, *a))
    out = widen(g, x86_desc("x86-64-v3"))
    assert outer not in tried and out is not g       # (the inner loop widened)
    assert w._holds_loop([n for n in g.toposort() if n.op is Ops.RANGE], outer)


def test_an_outer_loop_is_skipped_before_its_region_is_made(monkeypatch) -> None:
    # a RANGE the inner RANGE depends on (its order src) is never widened: its region, a
    # walk of the nest, is not made (`_Loop` is built for the inner loop only); same graph
    import kcc.passes.widen as w
    from kcc.targets.x86.arch import x86_desc
    g = simplify(lower_weak_dtypes(parse(NESTED, "nested.uop")))
    inner = next(n for n in g.toposort() if n.op is Ops.RANGE and len(n.src) == 2)
    built = []
    real = w._Loop
    monkeypatch.setattr(w, "_Loop", lambda r, *a: built.append(r) or real(r, *a))
    out = widen(g, x86_desc("x86-64-v3"))
    assert built == [inner] and out is not g
