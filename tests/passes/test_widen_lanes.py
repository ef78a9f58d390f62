"""Tests of the widening of scalar loops across iterations (kcc/passes/widen_lanes.py, run by
kcc/passes/widen.py): which loops become k-lane loops and which are left alone, THREEFRY's
decomposition with its uint64 packing folded, and that every variant computes what the graph
as written computes. The oracle is the reference interpreter, on the graph before and after
the pass (bit for bit) and on the x86 object compiled with the pass in the pipeline, on
x86-64-v3 and, where this CPU has AVX-512, x86-64-v4."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from widen_util import range_bounds as _bounds
from widen_util import shrink_widths as _widths
from widen_util import widen_check as _check
from widen_util import widen_prep as _prep

from kcc.frontend.parser import parse
from kcc.ir import Ops, dtypes
from kcc.passes.linearize import range_sets
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.widen import widen
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import ARCHS

RAND = Path(__file__).resolve().parents[1] / "data" / "kernels" / "threefry_rand.uop"

# a scalar integer loop as tinygrad writes one it does not upcast: two workers, each over
# {n} consecutive elements of its own span ({span} apart: a load up to 8 elements ahead or
# behind stays in the worker's span); the value mixes a loaded element and the counter
SCALAR = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, {size})
%a = PARAM ParamArg(1, {dt}, {asize})
%g = SPECIAL(2) "gidx0"
%i = RANGE({n}) (0, WEAK)
%p = MULACC(%g, {span}, %i)
%q = {load_index}
%ap = INDEX(%a, %q)
%x = LOAD(%ap)
%ic = CAST(%i) {dt}
%m = MUL(%x, 3)
%s = SHL(%ic, 2)
%t = ADD(%m, %s)
%r = XOR(%t, %x)
%op = INDEX(%out, %p)
%st = STORE(%op, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="lanes")
"""


def _text(n: int = 64, dt: str = "int32", load_off: int = 0, alias: bool = False,
          load_index: str = "", amul: int = 4) -> str:
    span = n + 16
    text = SCALAR.format(n=n, dt=dt, span=span, size=2 * span, asize=amul * span,
                         load_index=load_index or f"ADD(%p, {load_off})")
    text = text.replace("%op = INDEX(%out, %p)", "%o = ADD(%p, 8)\n%op = INDEX(%out, %o)")
    if alias:                   # the loop reads out at q + 8 and writes it at p + 8
        text = text.replace("%q = ADD(%p, ", "%q0 = ADD(%p, 8)\n%q = ADD(%q0, ")
        text = text.replace("INDEX(%a, %q)", "INDEX(%out, %q)")
    return text


@pytest.mark.parametrize("arch", ARCHS)
def test_scalar_int_loop_runs_8_lanes(arch: str) -> None:
    w = _check(_text(), arch)
    # int32 vectors are 8 lanes on both arches (ymm)
    assert _bounds(w) == [8] and _widths(w) == {8}
    assert {u.shape for u in w.toposort() if u.op is Ops.XOR} == {(8,)}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["int8", "uint8"])
@pytest.mark.parametrize("n, bounds, last", [(64, [2], set()), (333, [10], {16})])
def test_byte_loop_runs_32_lanes(arch: str, dt: str, n: int, bounds: list[int],
                                 last: set[int]) -> None:
    # byte lanes fill a ymm: 32 lanes, not 16 (int8_arith E_333: 10 blocks and an
    # overlapping last one instead of 20 xmm blocks; issue 24 item 2); the last 13 as one
    # 16-lane block (widen_stride.py `_narrow`), not 32 lanes over 301 … 332
    text = _text(n=n, dt=dt).replace(f"%ic = CAST(%i) {dt}\n", "") \
        .replace("%s = SHL(%ic, 2)", "%s = SHL(%x, 2)")
    w = _check(text, arch)
    assert _bounds(w) == bounds and _widths(w) == {32} | last


@pytest.mark.parametrize("arch", ARCHS)
def test_float_lanes_beside_the_counter(arch: str) -> None:
    text = _text(dt="float32").replace("%s = SHL(%ic, 2)", "%s = MUL(%ic, 0.5)")
    text = text.replace("%r = XOR(%t, %x)", "%r = SUB(%t, %x)")
    w = _check(text, arch)
    # 8 lanes on both: the counter's int32 lanes (x86-64-v4 floats alone would take 16)
    k = 8
    assert _bounds(w) == [64 // k] and _widths(w) == {k}
    # the counter's lanes: its lane-0 value splatted plus [0, 1, … k-1], then converted
    casts = [u for u in w.toposort() if u.op is Ops.CAST and u.shape == (k,)]
    assert casts and casts[0].src[0].dtype == dtypes.int32


@pytest.mark.parametrize("arch", ARCHS)
def test_bound_no_factor_divides_gets_a_tail_loop(arch: str) -> None:
    # 63 iterations of a loop that stores a buffer it loads (a whole vector ahead): 7 of 8
    # int32 lanes, then the original scalar body for the last 7 (its counter 56 + i3: the
    # value mixes the counter in, so a wrong start shows)
    w = _check(_text(n=63, alias=True, load_off=8), arch)
    assert _bounds(w) == [7, 7]
    stores = [u for u in w.toposort() if u.op is Ops.STORE]
    assert sorted(u.src[0].op.name for u in stores) == ["INDEX", "SHRINK"]


@pytest.mark.parametrize("arch", ARCHS)
def test_bound_no_factor_divides_gets_an_overlapping_last_block(arch: str) -> None:
    # the same 63 iterations storing a buffer the loop does not load: 7 blocks of 8 lanes,
    # then iterations 55 … 62 as one more block (55 repeated: it stores the same bytes),
    # no tail loop (passes/widen_stride.py last_block)
    w = _check(_text(n=63), arch)
    assert _bounds(w) == [7]
    stores = [u for u in w.toposort() if u.op is Ops.STORE]
    assert [u.src[0].op.name for u in stores] == ["SHRINK", "SHRINK"]


@pytest.mark.parametrize("load_off, widened", [(-1, False), (1, False), (0, True), (8, True)])
def test_store_and_load_of_one_buffer(load_off: int, widened: bool) -> None:
    # out[p] = f(out[p + load_off]): a load 1 behind the store reads what the iteration before
    # stored; 1 ahead is left alone too (any overlap of iterations 1 … k-1 apart is), in place
    # or a whole vector ahead is widened (8 lanes: no overlap)
    text = _text(load_off=load_off, alias=True)
    _, g, w = _prep(text)
    assert (w is not g) == widened
    _check(text)


def test_gather_is_left_alone() -> None:
    text = _text(load_index="MUL(%p, 3)", amul=6)      # a[3p]: every third element
    _, g, w = _prep(text)
    assert w is g
    _check(text)


def test_every_other_int32_is_4_lanes_and_a_shuffle() -> None:
    # a[2p]: two 4-element loads and one VSHUFPS (x86 stride2 at 4 lanes of 32 bits)
    text = _text(load_index="MUL(%p, 2)")
    _, g, w = _prep(text)
    assert w is not g
    assert {u.shape for u in w.toposort() if u.op is Ops.LOAD and u.shape} == {(4,)}
    _check(text)


def test_op_without_a_vector_form_is_left_alone() -> None:
    # int32 division has no x86 vector form: widening would split it back into 8 scalars
    text = _text().replace("%r = XOR(%t, %x)", "%r = CDIV(%t, 7)")
    _, g, w = _prep(text)
    assert w is g
    _check(text)


def test_reduction_through_memory_is_left_alone() -> None:
    # out[g] += a[i]: the store's place does not move with the counter
    text = _text().replace("%o = ADD(%p, 8)\n%op = INDEX(%out, %o)", "%op = INDEX(%out, %g)")
    _, g, w = _prep(text)
    assert w is g


def test_gpu_targets_opt_out() -> None:
    sink = parse(_text(), "k.uop")
    g = slp(simplify(lower_weak_dtypes(sink)), CUDA)
    assert widen(g, CUDA) is g


@pytest.mark.parametrize("arch", ARCHS)
def test_threefry_rand_kernel_is_widened_on_uint32_lanes(arch: str) -> None:
    """Tensor.rand's kernel: THREEFRY decomposed before the loop is examined, its uint64
    packing folded, so the loop's lanes are all uint32 and float32: 8 a vector on x86-64-v3,
    16 (zmm, uint32 x 16 for the rounds' adds, XORs and shifts) on x86-64-v4."""
    w = _check(RAND.read_text(), arch)
    k = 8 if arch == "x86-64-v3" else 16
    assert _bounds(w) == [64 // k]
    order = w.toposort()
    assert not [u for u in order if u.op is Ops.THREEFRY]
    dep = range_sets(order)
    loop = [u for u in order if dep[u] and u.kind == "value"]
    assert {u.dtype for u in loop} <= {dtypes.uint32, dtypes.float32, dtypes.int32}
    assert {u.shape for u in loop if u.shape} == {(k,)}
    # scalars left in the loop: the counter's index arithmetic, and lane 0 of the rounds'
    # first sums, which are linear in it (splatted and stepped: module docstring)
    assert len([u for u in loop if not u.shape]) < 20


@pytest.mark.parametrize("arch, rotate", [("x86-64-v3", r"vpslld ymm\d+, ymm\d+, 0xd"),
                                          ("x86-64-v4", r"vprold zmm\d+, zmm\d+, 0xf")])
def test_threefry_object_rotates_by_immediates(arch: str, rotate: str) -> None:
    """The rounds' rotates: shifts by immediates on x86-64-v3 (no amount vectors), one
    VPROLD of a zmm each on x86-64-v4."""
    asm = disasm_object(compile_x86([parse(RAND.read_text(), "k.uop")], arch)[0])
    assert re.search(rotate, asm)
    assert "vpsllvd" not in asm and "vpsrlvd" not in asm


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["int32", "float32", "uint8"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 9, 15, 17, 31, 33, 41])
def test_tail_loops_of_every_size(arch: str, dt: str, n: int) -> None:
    # the widened blocks then the tail cover every element once (against the interpreter,
    # graph and object); a widened loop with a bound k does not divide has its tail
    text = _text(n=n, dt=dt)
    if dt == "float32":
        text = text.replace("%s = SHL(%ic, 2)", "%s = MUL(%ic, 0.5)") \
            .replace("%r = XOR(%t, %x)", "%r = SUB(%t, %x)")
    w = _check(text, arch)
    b = _bounds(w)
    assert sum(b) <= n and (len(b) <= 1 or b[1] < n)      # (none: one block, _one_block)


SYM = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, 200)
%a = PARAM ParamArg(1, {dt}, 200)
%n = PARAM ParamArg(2, int32, vmin_vmax=({lo}, {hi}), name="n", addrspace=ALU)
%b = {bound}
%i = RANGE(%b) (0, WEAK)
%ap = INDEX(%a, %i)
%x = LOAD(%ap)
%ic = CAST(%i) {dt}
%m = MUL(%x, 3)
%t = ADD(%m, %ic)
%op = INDEX(%out, %i)
%st = STORE(%op, %t)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="sym")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["int32", "float32"])
@pytest.mark.parametrize("lo, hi, bound, seed", [
    (1, 100, "MUL(%n, 2)", 3), (1, 100, "MUL(%n, 2)", 4), (1, 7, "ADD(%n, 0)", 5),
    (1, 39, "MULACC(%n, 5, 3)", 6), (-50, 20, "MUL(%n, 3)", 7), (-50, -1, "ADD(%n, 2)", 8)])
def test_symbolic_bound_gets_a_tail_loop(arch: str, dt: str, lo: int, hi: int, bound: str,
                                         seed: int) -> None:
    # N from a PARAM: the widened loop runs max(N, 0) >> log2 k iterations, the tail the rest
    # (a bound below 1 runs neither); against the interpreter for drawn values of n
    text = SYM.format(dt=dt, lo=lo, hi=hi, bound=bound)
    sink, g, w = _prep(text, arch)
    ranges = [u for u in w.toposort() if u.op is Ops.RANGE]
    ops = {u.op for u in ranges[0].src[0].toposort()}
    # MAX(N, 0) only where N's declared range has negative values (widen_tail._nonneg)
    assert len(ranges) == 2 and Ops.SHR in ops and (Ops.MAX in ops) == (lo < 0)
    for s in range(seed, seed + 3):
        _check(text, arch, seed=s)


@pytest.mark.parametrize("arch", ARCHS)
def test_bool_cmpne_becomes_a_vector_xor(arch: str) -> None:
    # tinygrad's round writes `(x < y) != true`: a compare of bools no target has on vectors,
    # widened as their XOR (the same truth table); n = 13: 1 block of 8 lanes and an
    # overlapping last block of 8 (2 blocks beat 4's 4), the first no loop (_one_block)
    text = _text(n=13).replace("%r = XOR(%t, %x)", "%c = CMPLT(%x, %t)\n"
                               "%nb = CMPNE(%c, true)\n%r = WHERE(%nb, %t, %x)")
    w = _check(text, arch)
    assert {u.shape for u in w.toposort() if u.op is Ops.XOR and u.dtype == dtypes.bool} \
        == {(8,)}
    assert _bounds(w) == []


@pytest.mark.parametrize("arch", ARCHS)
def test_bool_cmpeq_becomes_xor_with_true(arch: str) -> None:
    # bools' == is the complement of their XOR: XOR(XOR(a, b), true), 8-lane bool XORs in
    # the widened loop and in its overlapping last block (n = 13)
    text = _text(n=13).replace("%r = XOR(%t, %x)", "%c = CMPLT(%x, %t)\n%d = CMPLT(%m, %x)\n"
                               "%nb = CMPEQ(%c, %d)\n%r = WHERE(%nb, %t, %x)")
    w = _check(text, arch)
    assert [u.shape for u in w.toposort() if u.op is Ops.XOR and u.dtype == dtypes.bool] \
        == [(8,)] * 4
    assert not any(u.op is Ops.CMPEQ and u.shape for u in w.toposort())


@pytest.mark.parametrize("arch", ARCHS)
def test_a_loop_of_exactly_k_iterations_is_no_loop(arch: str) -> None:
    # 8 iterations at 8 lanes: the body once at counter 0, no RANGE of one iteration left
    # (its counter, compare and branch: the sweep's uint16_max r_4_8_8, bool_any_axis)
    w = _check(_text(n=8), arch)
    assert _bounds(w) == [] and _widths(w) == {8}
    assert not any(u.op is Ops.RANGE for u in w.toposort())
