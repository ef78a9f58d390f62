"""Loop-invariant gathers staged in lane order (kcc/passes/stage.py), on the small conv2d
kernel written as tinygrad writes its conv2d (tests/support/conv_kernel.py): the 36 weights
`w[c·CS + 9·r + t]` of the reduce loop r depend on no spatial loop, so they are copied once,
before the spatial loops, into a REG buffer in the order the accumulator stores read them
(`4·t + c`), and the body reads `S[36·r + 4·t + c]`.

What is checked: the structure (one staged buffer, its copy loop reads exactly the original
places, lane order), what the lane packer makes of it (each weight column one block-long
load of the staged buffer, no row loads of w left in the loop), the groups left alone (no
frame on the target, too little reuse, too large a copy), the values of the graph after the
pass against the reference interpreter's on the original graph, and the x86 object against
the interpreter bit for bit (x86-64-v3 and -v4), with no in-loop weight shuffles on v4.
"""

from __future__ import annotations

import io

import capstone
import pytest
from elftools.elf.elffile import ELFFile

from conv_kernel import conv_kernel
from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import AddrSpace, base_buffer, toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.stage import stage_loads
from kcc.targets.x86.arch import X86_AVX2
from kcc.targets.x86.target import compile_x86, x86_desc
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

# shapes whose spatial loops run 9, 8 and 16 times per copy (all at least MIN_REUSE)
SHAPES = [{}, {"h": 4, "groups": 2, "ci": 3}, {"h": 4, "groups": 4, "ci": 5}]


def _prep(text: str) -> UOp:
    return simplify(lower_weak_dtypes(parse(text)))


def _staged(g: UOp) -> list[UOp]:
    return [u for u in toposort([g]) if u.op is Ops.BUFFER
            and u.arg.addrspace is AddrSpace.REG and u.arg.size != 16]


def _w_loads(g: UOp) -> list[UOp]:
    """LOADs of the weights' PARAM (slot 2)."""
    return [u for u in toposort([g]) if u.op is Ops.LOAD and u.src[0].op in (Ops.INDEX,
            Ops.SHRINK) and u.src[0].src[0].op is Ops.PARAM and u.src[0].src[0].arg.slot == 2]


def _offset(idx: UOp) -> int:
    """The constant addend of an index `base + k` (0 without one)."""
    k = const_int(idx.src[1]) if idx.op is Ops.ADD else None
    return k or 0


def _value(u: UOp, env: dict[UOp, int]) -> int:
    """An integer index expression's value with the RANGEs in env set (ADD, MUL, constants)."""
    if u in env:
        return env[u]
    c = const_int(u)
    if c is not None:
        return c
    a, b = (_value(x, env) for x in u.src)
    assert u.op in (Ops.ADD, Ops.MUL), u
    return a + b if u.op is Ops.ADD else a * b


@pytest.mark.parametrize("shape", SHAPES)
def test_weights_are_copied_once_in_lane_order(shape: dict) -> None:
    ci = shape.get("ci", 2)
    g = stage_loads(_prep(conv_kernel(**shape)), x86_desc("x86-64-v4"))
    (s,) = _staged(g)
    assert s.arg.size == 36 * ci and s.arg.dtype == base_buffer(_w_loads(g)[0].src[0].src[0]) \
        .arg.dtype
    fills = [u for u in toposort([g]) if u.op is Ops.STORE and u.src[0].op is Ops.INDEX
             and base_buffer(u.src[0].src[0]) is s]
    # the copy: a loop p over the input channels, a loop q over the 9 taps, 4 copies a step
    # (slots 4·q + c of a tap are w[c][q] moved by q: kcc/passes/stage.py `_blocks`)
    assert len(fills) == 4
    loops = {x for st in fills for x in toposort([st]) if x.op is Ops.RANGE}
    (q,) = [x for x in loops if any(y in loops for y in x.src[1:])]   # q nests in p
    (p,) = [x for x in q.src[1:] if x in loops]
    assert (const_int(p.src[0]), const_int(q.src[0])) == (ci, 9)
    got: dict[int, int] = {}
    for pv in range(ci):
        for qv in range(9):
            for st in fills:
                v = st.src[1]
                assert v.op is Ops.LOAD and v.src[0].src[0].op is Ops.PARAM
                slot = _value(st.src[0].src[1], {p: pv, q: qv})
                assert slot not in got
                got[slot] = _value(v.src[0].src[1], {p: pv, q: qv})
    # slot 36·r + 4·t + c holds w[c][r][t] = w[c·CS + 9·r + t]: tap t's column is 4
    # consecutive slots
    cs = 9 * ci
    assert got == {36 * r + 4 * t + c: c * cs + 9 * r + t
                   for r in range(ci) for t in range(9) for c in range(4)}
    # the copy loop is the only reader of w left
    assert len(_w_loads(g)) == 4


def test_the_lane_packer_reads_each_column_from_the_staged_copy() -> None:
    """Each of the nine weight operands is one 4-lane block of the staged buffer repeated in
    every 128-bit block (the selector reads it with one block broadcast from memory)."""
    g = slp(stage_loads(_prep(conv_kernel()), x86_desc("x86-64-v4")),
            x86_desc("x86-64-v4"))
    (s,) = _staged(g)
    cols = []
    for u in toposort([g]):
        if u.op is Ops.STACK and len(u.src) == 16 and all(
                x.op is Ops.INDEX and x.src[0].op is Ops.LOAD
                and base_buffer(x.src[0].src[0].src[0]) is s for x in u.src):
            blocks = {u.src[4 * b:4 * b + 4] for b in range(4)}
            assert len(blocks) == 1, str(u)
            (lanes,) = blocks
            k = [const_int(x.src[1]) for x in lanes]
            assert lanes[0].src[0] is lanes[3].src[0] and k == list(range(k[0], k[0] + 4))
            cols.append(u)
    assert len(cols) == 9
    # no row load of w is left (they were 8 row loads shuffled into columns every step)
    assert all(u.shape == () for u in _w_loads(g))


@pytest.mark.parametrize("shape", [{"h": 2, "groups": 1, "ci": 1}, {"h": 2, "groups": 3},
                                   {"ci": 120}])
def test_little_reuse_or_a_large_copy_is_left_alone(shape: dict) -> None:
    """Spatial loops of 2 and 6 iterations (below MIN_REUSE), or a copy of 36·120 float32
    (17,280 bytes, more than x86's 16 KiB stage_bytes)."""
    g = _prep(conv_kernel(**shape))
    assert stage_loads(g, x86_desc("x86-64-v4")) is g


def test_a_target_without_stage_bytes_is_left_alone() -> None:
    g = _prep(conv_kernel())
    assert X86_AVX2.stage_bytes == 0
    assert stage_loads(g, X86_AVX2) is g


@pytest.mark.parametrize("shape", SHAPES)
def test_the_pass_keeps_the_values(shape: dict) -> None:
    g0 = _prep(conv_kernel(**shape))
    args = random_inputs(g0, seed=4)
    want = reference(g0, args)
    got = [a.copy() if hasattr(a, "copy") else a for a in args]
    interp_run(stage_loads(g0, x86_desc("x86-64-v4")), got)
    assert_same(g0, got, want)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("shape", SHAPES)
def test_x86_matches_the_interpreter(arch: str, shape: dict) -> None:
    sink = parse(conv_kernel(**shape))
    for seed in (0, 1):
        args = random_inputs(sink, seed=seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _loops(text: str, arch: str) -> list[list[str]]:
    """The innermost loops of the object's instructions (a backward jump with no other
    backward jump inside), as 'mnemonic operands' lines."""
    obj, _ = compile_x86([parse(text)], arch)
    code = ELFFile(io.BytesIO(obj)).get_section_by_name(".text").data()
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    insts = [(i.address, f"{i.mnemonic} {i.op_str}") for i in md.disasm(code, 0)]
    addrs = [a for a, _ in insts]
    spans = [(addrs.index(int(t.split()[1], 16)), k) for k, (a, t) in enumerate(insts)
             if t.startswith("j") and t.split()[1].startswith("0x")
             and int(t.split()[1], 16) <= a]
    inner = [(s, e) for s, e in spans if not any(s <= s2 and e2 < e for s2, e2 in spans
                                                 if (s2, e2) != (s, e))]
    return [[t for _, t in insts[s:e + 1]] for s, e in inner]


def test_v4_loop_reads_weight_columns_without_shuffles() -> None:
    """The reduce loop (the innermost loop with the multiplies; the copy loop is the other
    one) reads each of the nine weight columns with one VBROADCASTF32X4 from the frame and
    transposes nothing: no VUNPCK*/VSHUFPS/VINSERTPS/VSHUFF32X4 (compiling needs no
    AVX-512). 17 input channels: over 2 the loop is unrolled into the column loop
    (passes/unroll_reduce.py), whose output transposes are then in the same loop."""
    (body,) = [b for b in _loops(conv_kernel(ci=17), "x86-64-v4")
               if any(i.startswith("vmulps") for i in b)]
    casts = [i for i in body if i.startswith("vbroadcastf32x4") and "rsp" in i]
    assert len(casts) == 9, body
    assert not [i for i in body if i.split()[0] in ("vunpcklps", "vunpckhps", "vshufps",
                                                   "vinsertps", "vshuff32x4")], body
    assert sum(i.startswith("vmulps zmm") for i in body) == 9, body


def _variant(kind: str) -> str:
    """conv_kernel() changed so that its weights must not (or need not) be staged."""
    t = conv_kernel()
    if kind == "written":
        # w is also stored (at the end): a copy made earlier could differ from what is read
        t = t.replace("%eo = END(%eg, %oy)\n",
                      "%eo0 = END(%eg, %oy)\n%wz = INDEX(%w, 0)\n%ws = STORE(%wz, %z)\n"
                      "%eo = GROUP(%eo0, %ws)\n")
    elif kind == "rows":
        # w[36·r + 4·t + c]: the lane order is already the memory order (rows of 4)
        t = t.replace("%wb = MUL(%r, 9)", "%wb = MUL(%r, 36)")
        for c in range(4):
            for k in range(9):
                t = t.replace(f"%wo{c}_{k} = ADD(%wb, {c * 18 + k})",
                              f"%wo{c}_{k} = ADD(%wb, {4 * k + c})")
    elif kind == "gather":
        # the index reads memory (w[(x[r] & 1)·9 + …]): not an expression of the loops
        t = t.replace("%wb = MUL(%r, 9)",
                      "%xr = INDEX(%x, %r)\n%xv = LOAD(%xr)\n%xi = CAST(%xv) int32\n"
                      "%xc = AND(%xi, 1)\n%wb = MUL(%xc, 9)")
    return t


@pytest.mark.parametrize("kind", ["written", "rows", "gather"])
def test_written_ordered_or_gathered_weights_are_left_alone(kind: str) -> None:
    g = _prep(_variant(kind))
    assert not _staged(stage_loads(g, x86_desc("x86-64-v4")))
    assert _staged(stage_loads(_prep(conv_kernel()), x86_desc("x86-64-v4")))


def test_the_whole_graphs_range_sets_only_where_a_group_is_found(monkeypatch) -> None:
    # stage_loads reads the candidate loads' and RANGEs' range sets from their cones first:
    # a kernel without a group (the conv with its output stores' cone only) never asks
    # range_sets for the whole graph; the conv kernel, which stages, does
    import kcc.passes.stage as st
    sizes: list[int] = []
    real = st.range_sets
    monkeypatch.setattr(st, "range_sets", lambda order: sizes.append(len(order)) or real(order))
    g = _prep(conv_kernel())
    n = len(toposort([g]))
    assert _staged(stage_loads(g, x86_desc("x86-64-v3"))) and n in sizes
    sizes.clear()
    plain = _prep("""# kcc-uop 1
%0 = PARAM ParamArg(0, float32, 64)
%1 = PARAM ParamArg(1, float32, 64)
%2 = RANGE(64) (0, LOOP)
%3 = INDEX(%1, %2)
%4 = LOAD(%3)
%5 = ADD(%4, %4)
%6 = INDEX(%0, %2)
%7 = STORE(%6, %5)
%8 = END(%7, %2)
SINK(%8) KernelInfo(name="E_64")
""")
    assert stage_loads(plain, x86_desc("x86-64-v3")) is plain
    assert sizes and max(sizes) < len(toposort([plain]))
