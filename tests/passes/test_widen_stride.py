"""Tests of strided loads in loops widened across iterations (kcc/passes/widen_stride.py, run by
widen_lanes.py inside kcc/passes/widen.py): a float32 load every s-th element becomes k-element
loads and one lane permutation where the target permutes that many registers (x86-64-v4: 2
at 16 lanes, so s = 2), and is left scalar elsewhere. The oracle is the reference
interpreter, on the graph before and after the pass (bit for bit; it raises on an element
outside a buffer, so a load past the span would show) and on the x86 object compiled with the
pass in the pipeline. Larger strides on x86-64-v4 are 16 scalar loads that the selector
gathers (VGATHERDPS, kcc/isel/x86/gather.py)."""

from __future__ import annotations

import pytest
from widen_util import range_bounds as _bounds
from widen_util import shrink_widths as _widths
from widen_util import widen_check as _check
from widen_util import widen_prep as _prep
from x86_util import HAS_V4, assert_same, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.consts import const_int
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.widen import widen
from kcc.passes.widen_stride import registers
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.target import compile_x86, disasm_object

V4 = "x86-64-v4"

# tinygrad's `(x[1::3, ::2] * 2)`: rows {rows} apart (a worker's row), every {s}-th element
# from {off}; the source ends exactly at the last element read ({asize}), so a vector load
# past the lanes' span would be out of bounds
STRIDED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, {osize})
%a = PARAM ParamArg(1, float32, {asize})
%g = SPECIAL(2) "gidx0"
%i = RANGE({n}) (0, WEAK)
%p = MULACC(%g, {n}, %i)
%si = MUL(%i, {s})
%q0 = MULACC(%g, {row}, %si)
%q = ADD(%q0, {off})
%ap = INDEX(%a, %q)
%x = LOAD(%ap)
%m = MUL(%x, 2.0)
%op = INDEX(%out, %p)
%st = STORE(%op, %m)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="strided")
"""


def _text(n: int = 39, s: int = 2, off: int = 3) -> str:
    row = s * n + off + 5
    last = row + off + s * (n - 1)          # worker 1's last element read
    return STRIDED.format(n=n, s=s, row=row, off=off, osize=2 * n, asize=last + 1)


def _loads(g) -> list:
    return [u for u in g.toposort() if u.op is Ops.LOAD and u.shape]


@pytest.mark.skipif(not HAS_V4, reason="this CPU has no AVX-512 (x86-64-v4 objects)")
@pytest.mark.parametrize("n", [16, 17, 39, 64])
def test_stride_2_is_two_loads_and_a_permutation_on_v4(n: int) -> None:
    w = _check(_text(n=n), V4)
    # no tail loop: the last 16 iterations are one more block (module docstring); one
    # block and the last: no loop at all (widen_lanes.py _one_block)
    assert _bounds(w) == ([n // 16] if n >= 32 else []) and _widths(w) == {16}
    loads = _loads(w)
    assert len(loads) == (2 if n % 16 == 0 else 4)
    loads = loads[:2]
    # the second load ends at the last lane's element: lane 0's index + 15 (no element past
    # the span is read)
    a, b = (ld.src[0].src[1] for ld in loads)
    assert {b.op, a.op} >= {Ops.ADD} and 15 in {const_int(b.src[1]), const_int(a.src[1])}
    stacks = [u for u in w.toposort() if u.op is Ops.STACK and len(u.src) == 16
              and all(x.op is Ops.INDEX for x in u.src)]
    assert len(stacks) == (1 if n % 16 == 0 else 2)
    asm = disasm_object(compile_x86([parse(_text(n=n), "k.uop")], V4)[0])
    assert "vpermi2ps" in asm


def test_stride_2_graph_on_v4_matches_the_interpreter() -> None:
    # the graph alone (no object: runs on any CPU); tails of every size
    for n in (16, 18, 31, 33, 47):
        sink, g, w = _prep(_text(n=n), V4)
        assert w is not g
        args = random_inputs(sink, 5)
        assert_same(sink, reference(w, args), reference(sink, args))


@pytest.mark.parametrize("s", [3, 77])
def test_no_permutation_or_gather_leaves_it_scalar(s: int) -> None:
    # x86-64-v3 shuffles every other lane of two registers (stride 2), no more, and gathers
    # nothing here
    sink, g, w = _prep(_text(s=s), "x86-64-v3")
    assert w is g


@pytest.mark.parametrize("n", [8, 17, 39])
def test_stride_2_on_v3_is_two_loads_a_shuffle_and_a_qword_permutation(n: int) -> None:
    # x86-64-v3: 8 lanes from two ymm loads (kcc/isel/x86/shuf.py permute_y: VSHUFPS, then
    # VPERMPD 0xD8), the last 8 iterations one more block
    w = _check(_text(n=n), "x86-64-v3")
    assert _bounds(w) == ([n // 8] if n >= 16 else []) and _widths(w) == {8}
    asm = disasm_object(compile_x86([parse(_text(n=n), "k.uop")], "x86-64-v3")[0])
    assert "vshufps" in asm and "vpermpd" in asm and "vinsertps" not in asm


@pytest.mark.parametrize("s, n", [(3, 39), (5, 16), (77, 333), (77, 20)])
def test_larger_strides_are_16_loads_gathered_on_v4(s: int, n: int) -> None:
    # more registers than VPERMI2PS reads: the 16 scalar loads in a STACK (the selector's
    # VGATHERDPS), each lane's index lane 0's plus s*j
    text = _text(n=n, s=s)
    sink, g, w = _prep(text, V4)
    assert w is not g and _bounds(w) == ([n // 16] if n >= 32 else [])
    stacks = [u for u in w.toposort() if u.op is Ops.STACK and len(u.src) == 16
              and all(x.op is Ops.LOAD for x in u.src)]
    assert len(stacks) == (1 if n % 16 == 0 else 2)
    idx = [x.src[0].src[1] for x in stacks[0].src]
    assert [const_int(i.src[1]) for i in idx[1:]] == [s * j for j in range(1, 16)]
    assert all(i.src[0] is idx[0] for i in idx[1:])
    args = random_inputs(sink, 7)
    assert_same(sink, reference(w, args), reference(sink, args))
    if HAS_V4:
        _check(text, V4)
        asm = disasm_object(compile_x86([parse(text, "k.uop")], V4)[0])
        assert "vgatherdps" in asm


@pytest.mark.parametrize("n", [17, 39])
def test_a_stored_buffer_loaded_keeps_the_tail_loop(n: int) -> None:
    # out[p] = a[2i]*2 + out[p]: a repeated iteration would add twice, so the last
    # iterations run in the scalar tail loop
    text = _text(n=n).replace("%st = STORE(%op, %m)",
                              "%ol = LOAD(%op)\n%m2 = ADD(%m, %ol)\n%st = STORE(%op, %m2)")
    sink, g, w = _prep(text, V4)
    assert w is not g and _bounds(w) == [n // 16, n % 16]
    args = random_inputs(sink, 9)
    assert_same(sink, reference(w, args), reference(sink, args))
    if HAS_V4:
        _check(text, V4)


def test_a_stored_buffer_is_not_loaded_strided() -> None:
    text = _text().replace("INDEX(%a, %q)", "INDEX(%out, %q)")
    text = text.replace("ParamArg(0, float32, 78)", "ParamArg(0, float32, 400)")
    sink, g, w = _prep(text, V4)
    assert w is g


def test_gpu_targets_opt_out() -> None:
    sink = parse(_text(), "k.uop")
    g = slp(simplify(lower_weak_dtypes(sink)), CUDA)
    assert widen(g, CUDA) is g


def test_registers_cover_the_span() -> None:
    assert registers(2, 16) == 2 and registers(3, 16) == 3 and registers(2, 2) == 2
    assert registers(1, 8) == 1


def test_eight_iterations_at_stride_8_are_one_ymm_gather_and_no_loop() -> None:
    # attention's r_4_8_8_8: 8 iterations reading every 8th element. v4 gathers 8 float32
    # (VGATHERDPS ymm), and the one block keeps no RANGE (widen_lanes.py _one_block), so what
    # does not depend on the outer loops is hoisted out of them
    text = _text(n=8, s=8)
    sink, g, w = _prep(text, V4)
    assert w is not g and _bounds(w) == [] and _widths(w) == {8}
    args = random_inputs(sink, 5)
    assert_same(sink, reference(w, args), reference(sink, args))
    asm = disasm_object(compile_x86([parse(text, "k.uop")], V4)[0])
    assert asm.count("vgatherdps ymm") == 1
    if HAS_V4:
        _check(text, V4)


# log_softmax_axis0's E_111_77_3 in one row loop: out[r*n + j] = a[r*n + j] - b[j] over
# {rows} rows of {n}: a light body whose output ({rows}*{n} float32) may miss L1
ROWS = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, {size})
%a = PARAM ParamArg(1, float32, {size})
%b = PARAM ParamArg(2, float32, {n})
%r = RANGE({rows}) (0, WEAK)
%j = RANGE({n}, %r) (1, WEAK)
%p = MULACC(%r, {n}, %j)
%ap = INDEX(%a, %p)
%x = LOAD(%ap)
%bp = INDEX(%b, %j)
%y = LOAD(%bp)
{body}
%op = INDEX(%out, %p)
%st = STORE(%op, %d)
%e = END(%st, %j)
%e2 = END(%e, %r)
SINK(%e2) KernelInfo(name="rows")
"""


def _rows(n: int, rows: int, body: str = "%d = SUB(%x, %y)") -> str:
    return ROWS.format(n=n, rows=rows, size=n * rows, body=body)


def _store_blocks(g) -> list[tuple[int, int | None]]:
    """(width, constant column start or None) of each vector store's place."""
    out = []
    for u in g.toposort():
        if u.op is Ops.STORE and u.src[0].op is Ops.SHRINK:
            at = u.src[0].src[1]
            col = const_int(at.src[1]) if at.op is Ops.ADD else None
            out.append((const_int(u.src[0].src[2]), col))
    return out


@pytest.mark.parametrize("n,blocks", [(77, [8, 8]), (69, [8]), (75, [8, 8])])
def test_a_light_last_block_over_a_large_output_is_split_in_halves_on_v4(
        n: int, blocks: list[int]) -> None:
    # 77 = 4*16 + 13: the last 13 columns as 8 lanes at 64 and 8 at 69, not 16 at 61 (a
    # 64-byte store at each row's end: ~20% of log_softmax_axis0 E_111_77_3's time); 69 =
    # 4*16 + 5: one 8-lane block at 61
    text = _rows(n, 333)
    sink, g, w = _prep(text, V4)
    widths = [wd for wd, _ in _store_blocks(w)]
    assert widths[0] == 16 and sorted(widths[1:]) == blocks
    args = random_inputs(sink, 4)
    assert_same(sink, reference(w, args), reference(sink, args))
    if HAS_V4:
        _check(text, V4)


@pytest.mark.parametrize("text", [
    _rows(77, 9),                                   # 2.7 KB output: it stays in L1
    _rows(77, 333, "%t = SUB(%x, %y)\n%d = EXP2(%t)"),   # arithmetic-bound: halves cost more
])
def test_a_small_output_or_a_heavy_body_keeps_the_16_lane_last_block(text: str) -> None:
    sink, g, w = _prep(text, V4)
    assert sorted(wd for wd, _ in _store_blocks(w)) == [16, 16]
    args = random_inputs(sink, 5)
    assert_same(sink, reference(w, args), reference(sink, args))


@pytest.mark.parametrize("n,last", [(50, 4), (69, 8), (35, 4), (40, 8)])
def test_a_short_remainder_is_one_narrow_last_block_on_v4(n: int, last: int) -> None:
    # shrink_expand E_35_50's rows of 50 = 3*16 + 2: the last 2 as 4 lanes at 46 (float32
    # has no 2-lane vector), not 16 at 34 (84 -> 70 ns a call, widen_stride.py `_narrow`);
    # 69 = 4*16 + 5: 8 lanes at 61; an output that stays in L1 (no halves)
    text = _rows(n, 9)
    sink, g, w = _prep(text, V4)
    blocks = _store_blocks(w)
    assert sorted(wd for wd, _ in blocks) == [last, 16]
    args = random_inputs(sink, 4)
    assert_same(sink, reference(w, args), reference(sink, args))
    if HAS_V4:
        _check(text, V4)


def test_v3_last_blocks_are_already_32_bytes() -> None:
    sink, g, w = _prep(_rows(77, 333), "x86-64-v3")
    assert sorted(wd for wd, _ in _store_blocks(w)) == [8, 8]


# tinygrad's bitonic sort step (sort_rows E_8_512_2): each row's first half against its second
# half read reversed, x[1024*r + 1023 - i]; the source ends at the last row's last element
REVERSED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, {size})
%x = PARAM ParamArg(1, float32, {size})
%r = RANGE(3) (0, WEAK)
%i = RANGE({n}, %r) (1, WEAK)
%p = MULACC(%r, {row}, %i)
%rb = MUL(%r, {row})
%q0 = SUB(%rb, %i)
%q = ADD(%q0, {last})
%ap = INDEX(%x, %p)
%a = LOAD(%ap)
%bp = INDEX(%x, %q)
%b = LOAD(%bp)
%m = MAX(%a, %b)
%op = INDEX(%out, %p)
%st = STORE(%op, %m)
%e1 = END(%st, %i)
%e0 = END(%e1, %r)
SINK(%e0) KernelInfo(name="reversed")
"""


def _reversed(n: int) -> str:
    return REVERSED.format(n=n, row=2 * n, last=2 * n - 1, size=6 * n)


@pytest.mark.parametrize("arch, k", [("x86-64-v3", 8), ("x86-64-v4", 16)])
@pytest.mark.parametrize("n", [16, 37, 512])
def test_a_reversed_row_is_one_load_and_a_lane_reversal(arch: str, k: int, n: int) -> None:
    # k lanes falling by one element: one k-element load ending at lane 0's element, its lanes
    # reversed (no element outside the k iterations' is read); the last block as for strides
    text = _reversed(n)
    if arch == "x86-64-v3" or HAS_V4:
        w = _check(text, arch)
    else:
        sink, g, w = _prep(text, arch)
        args = random_inputs(sink, 5)
        assert_same(sink, reference(w, args), reference(sink, args))
    assert _widths(w) == {k}
    stacks = [u for u in w.toposort() if u.op is Ops.STACK and len(u.src) == k
              and all(x.op is Ops.INDEX for x in u.src)]
    assert stacks and all([const_int(x.src[1]) for x in s.src] == list(range(k))[::-1]
                          for s in stacks)
    asm = disasm_object(compile_x86([parse(text, "k.uop")], arch)[0])
    assert ("vpermpd" if k == 8 else "vshuff32x4") in asm and "vinsert" not in asm


def test_a_reversed_row_without_a_lane_reversal_stays_scalar() -> None:
    # a target that reverses no lanes (TargetDesc.reverse None) leaves the loop scalar
    from dataclasses import replace

    from kcc.targets.x86.arch import x86_desc
    desc = replace(x86_desc("x86-64-v3"), reverse=None)
    g = slp(simplify(lower_weak_dtypes(parse(_reversed(16), "k.uop"))), desc)
    assert widen(g, desc) is g
