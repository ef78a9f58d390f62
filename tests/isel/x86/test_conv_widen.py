"""conv2d's accumulators widened to one zmm on x86-64-v4 (issue 11): tinygrad's conv2d keeps
16 scalar accumulators (4 output columns × 4 output channels, element 4·x + c) and adds nine
products to each, lane by lane. kcc/passes/slp.py packs them in groups of the kernel's own
4 lanes unless its estimate finds a wider group cheaper; with a two-register lane
permutation (`TargetDesc.permute`: x86-64-v4's VPERMI2PS) the 16-lane group's operands are
one permutation each — an input row's lanes with its gated left or right neighbour,
(in[x-1] ×4, in[x] ×4, …) — and a weight column repeated in every 128-bit block
((w[0][k], …, w[3][k]) ×4, lanes of block-long row loads, kcc/passes/slp.py `_rows`), so one
zmm VMULPS and VADDPS do what four xmm ones did.

What is checked: the structure after the pass (one 16-lane accumulator STORE on x86-64-v4, 8
block-long weight row loads), the pass keeps the interpreter's values exactly, the x86
object matches the interpreter bit for bit on x86-64-v3 and -v4 (also with xmm16-31 taken
first), the v4 loop's multiplies are nine zmm VMULPS, and the selector's VPERMPS/VPERMI2PS
rule on its own (lanes of one or two registers, scalar lanes, the second table's lanes)."""

from __future__ import annotations

import io
import random

import capstone
import pytest
from elftools.elf.elffile import ELFFile

from conv_kernel import conv_kernel
from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.consts import const_int
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import AddrSpace, toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.targets.x86.target import compile_x86, x86_desc
from x86_util import (
    NEEDS_V4, assert_same, compile_and_run, high_vectors_first, random_inputs, reference)

ARCHES = ["x86-64-v3", pytest.param("x86-64-v4", marks=NEEDS_V4)]
SHAPES = [{}, {"h": 4, "groups": 2, "ci": 3}, {"h": 2, "groups": 1, "ci": 1}]


def _prep(text: str) -> UOp:
    return simplify(lower_weak_dtypes(parse(text)))


def _reg_stores(g: UOp) -> list[UOp]:
    """The STOREs to the REG accumulator that store a computed value (not the zeroing)."""
    out = []
    for u in toposort([g]):
        if u.op is not Ops.STORE or u.src[0].op not in (Ops.INDEX, Ops.SHRINK):
            continue
        b = u.src[0].src[0]
        while b.op is Ops.AFTER:
            b = b.src[0]
        if b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.REG and u.src[1].op is Ops.ADD:
            out.append(u)
    return out


def test_v4_packs_the_sixteen_accumulators_into_one_group() -> None:
    g = slp(_prep(conv_kernel()), x86_desc("x86-64-v4"))
    stores = _reg_stores(g)
    assert len(stores) == 1 and stores[0].src[1].shape == (16,), [str(s) for s in stores]
    # the weights: rows w[c][0:4] and w[c][4:8] of the four output channels (block-long row
    # loads shuffled into columns); w[c][8] has no whole row and stays four scalar loads
    rows = [u for u in toposort([g]) if u.op is Ops.LOAD and u.shape == (4,)
            and u.src[0].src[0].op is Ops.PARAM and u.src[0].src[0].arg.slot == 2]
    assert len(rows) == 8, [str(u) for u in rows]


def test_widened_accumulator_is_read_back_as_lanes_of_its_group() -> None:
    """After the loop tinygrad reads the accumulators one by one (transposed, for the output
    STACKs); each read is a lane of the 16-lane group's load, so every place of the buffer is
    the whole group and the selector keeps it in one register (no frame traffic)."""
    g = slp(_prep(conv_kernel()), x86_desc("x86-64-v4"))
    reads = []
    for u in toposort([g]):
        if u.op is Ops.LOAD and u.src[0].op in (Ops.INDEX, Ops.SHRINK):
            b = u.src[0].src[0]
            while b.op is Ops.AFTER:
                b = b.src[0]
            if b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.REG:
                reads.append(u)
    assert reads and all(u.shape == (16,) for u in reads), [str(u) for u in reads]
    insts = _insts(conv_kernel(), "x86-64-v4")      # compiling needs no AVX-512
    # the frame holds only the weights' staged copy (kcc/passes/stage.py): scalar stores in
    # the copy loop, block broadcasts in the reduce loop; the accumulator never goes there
    assert not [i for i in insts if "rsp" in i and "mm" in i
                and not i.startswith(("vmovss dword ptr [rsp", "vbroadcastf32x4"))], insts


def test_without_a_permutation_the_groups_stay_four_lanes() -> None:
    """x86-64-v3 has no two-register permutation: the estimate keeps the kernel's 4 lanes
    (its operands would be a concat of splats each)."""
    g = slp(_prep(conv_kernel()), x86_desc("x86-64-v3"))
    assert sorted(s.src[1].shape for s in _reg_stores(g)) == [(4,)] * 4


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_pass_keeps_the_values(arch: str, shape: dict) -> None:
    g0 = _prep(conv_kernel(**shape))
    args = random_inputs(g0, seed=3)
    want = reference(g0, args)
    got = [a.copy() if hasattr(a, "copy") else a for a in args]
    interp_run(slp(g0, x86_desc(arch)), got)
    assert_same(g0, got, want)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("shape", SHAPES)
def test_x86_matches_the_interpreter(arch: str, shape: dict) -> None:
    sink = parse(conv_kernel(**shape))
    for seed in (0, 1):
        args = random_inputs(sink, seed=seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@NEEDS_V4
def test_x86_v4_high_registers_match_the_interpreter() -> None:
    sink = parse(conv_kernel())
    args = random_inputs(sink, seed=4)
    with high_vectors_first():
        got = compile_and_run(sink, args, "x86-64-v4")
    assert_same(sink, got, reference(sink, args))


def _insts(text: str, arch: str) -> list[str]:
    obj, _ = compile_x86([parse(text, "<conv>")], arch)
    code = ELFFile(io.BytesIO(obj)).get_section_by_name(".text").data()
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return [f"{i.mnemonic} {i.op_str}" for i in md.disasm(code, 0)]


@pytest.mark.parametrize("ci, copies", [(17, 1), (2, 2)])
def test_v4_loop_multiplies_sixteen_lanes_at_a_time(ci: int, copies: int) -> None:
    """Nine taps, one zmm VMULPS each (36 xmm ones before); the input operands are
    permutations (three of one row, six of a row and a gated neighbour). Over 2 input
    channels the reduce loop is two copies (kcc/passes/unroll_reduce.py), each so."""
    insts = _insts(conv_kernel(ci=ci), "x86-64-v4")
    muls = [i for i in insts if i.startswith("vmulps")]
    assert len(muls) == 9 * copies and all(m.split()[1].startswith("zmm") for m in muls), muls
    assert sum(i.startswith("vpermi2ps") for i in insts) == 6 * copies, insts
    assert sum(i.startswith("vpermps") for i in insts) == 3 * copies, insts


def _perm_kernel(lanes: list[tuple[int, int]], scalar: bool) -> str:
    """y[16i : 16i+16] = STACK(lanes): lane (j, k) is lane k of source j; sources 0 and 1 are
    16-lane vectors a[32i : +16] and a[32i+16 : +16] computed (a + a: in a register only);
    source 2 a scalar a[32i+5] · 2 (lane 0 of its register, k ignored)."""
    t = ["# kcc-uop 1", "%y = PARAM ParamArg(0, float32, 64)",
         "%a = PARAM ParamArg(1, float32, 128)", "%i = RANGE(4) (0, LOOP)",
         "%b = MUL(%i, 32)", "%o = MUL(%i, 16)"]
    used = {j for j, _ in lanes}
    for j in (0, 1):
        if j in used:
            t += [f"%x{j} = ADD(%b, {16 * j})", f"%p{j} = SHRINK(%a, %x{j}, 16)",
                  f"%l{j} = LOAD(%p{j})", f"%v{j} = ADD(%l{j}, %l{j})"]
    if scalar:
        t += ["%xs = ADD(%b, 5)", "%ps = INDEX(%a, %xs)", "%ls = LOAD(%ps)",
              "%s = MUL(%ls, 2.0)"]
    names = []
    for q, (j, k) in enumerate(lanes):
        if j == 2:
            names.append("%s")
            continue
        t.append(f"%e{q} = INDEX(%v{j}, {k})")
        names.append(f"%e{q}")
    t += [f"%st = STACK({', '.join(names)})", "%q = SHRINK(%y, %o, 16)",
          "%w = STORE(%q, %st)", "%end = END(%w, %i)", 'SINK(%end) KernelInfo(name="perm")']
    return "\n".join(t) + "\n"


@NEEDS_V4
@pytest.mark.parametrize("case", range(8))
def test_permutations_of_one_or_two_registers(case: int) -> None:
    """Random lanes of one or two 16-lane registers, or of one and a scalar: one VPERMPS or
    VPERMI2PS (and its index load) on x86-64-v4, bit-exact against the interpreter."""
    rng = random.Random(case)
    scalar = case % 2 == 1
    picks = [(0, None), (1, None)] if case % 4 == 0 else [(0, None)] if case % 4 == 1 \
        else [(1, None), (2, 0)] if case % 4 == 2 else [(0, None), (2, 0)]
    lanes = []
    for _ in range(16):
        j, k = rng.choice(picks)
        lanes.append((j, rng.randrange(16) if k is None else k))
    if scalar and not any(j == 2 for j, _ in lanes):
        lanes[rng.randrange(16)] = (2, 0)
    if not scalar:
        lanes = [(j, k) if j != 2 else (0, k) for j, k in lanes]
    text = _perm_kernel(lanes, any(j == 2 for j, _ in lanes))
    sink = parse(text)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))
    regs = len({j for j, _ in lanes})
    insts = [i.split()[0] for i in _insts(text, "x86-64-v4")]
    if len(set(lanes)) > 1:
        assert insts.count("vpermi2ps" if regs == 2 else "vpermps") == 1, insts


def test_group_lanes_stay_inside_the_buffer() -> None:
    """A scalar read of a widened REG buffer becomes a lane of its group's load only where
    that group lies inside the buffer (a 20-element buffer in groups of 16: element 17 has no
    whole group and stays a scalar load)."""
    from kcc.passes.slp import _group_lanes
    text = "\n".join([
        "# kcc-uop 1", "%y = PARAM ParamArg(0, float32, 2)",
        "%acc = BUFFER ParamArg(0, float32, 20, addrspace=REG)",
        "%p3 = INDEX(%acc, 3)", "%l3 = LOAD(%p3)", "%p17 = INDEX(%acc, 17)", "%l17 = LOAD(%p17)",
        "%s = ADD(%l3, %l17)", "%q = INDEX(%y, 0)", "%st = STORE(%q, %s)",
        'SINK(%st) KernelInfo(name="g")']) + "\n"
    g = _prep(text)
    order = toposort([g])
    acc = next(u for u in order if u.op is Ops.BUFFER)
    loads = {const_int(u.src[0].src[1]): u for u in order if u.op is Ops.LOAD}
    redirect: dict[UOp, UOp] = {}
    _group_lanes(order, {acc: 16}, redirect, {})
    assert set(redirect) == {loads[3]}
    r = redirect[loads[3]]
    assert r.op is Ops.INDEX and const_int(r.src[1]) == 3 and r.src[0].shape == (16,)
