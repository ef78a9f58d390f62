"""Vector loads and stores without lane copies, and scalar loads merged into wide ones
(issue 25: kcc/isel/amd/select.py ``load_vector``/``load_group``, the ``.split``/``.join``
parallel copies the allocator puts in place through the target's ``subreg_copy``, and
kcc/isel/amd/lower.py ``Lowering.parallel``). Results come from the emulator against the
reference interpreter; the listings are only counted."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from amd_util import assert_emulated_like_interpreter
from kcc.encode.amd.operands import VGPR
from kcc.frontend.parser import parse
from kcc.isel.amd import regs
from kcc.isel.amd.lower import Lowering

ARCHS = ("gfx1100", "gfx942")

#: a vector add as tinygrad writes it: two 4-lane loads, lane-wise adds, one 4-lane store
ADD4 = "\n".join(
    ["# kcc-uop 1", "%o = PARAM ParamArg(0, float32, 128)", "%x = PARAM ParamArg(1, float32, 128)",
     "%y = PARAM ParamArg(2, float32, 128)", '%l = SPECIAL(32) "lidx0" : weakint',
     "%b = MUL(%l, 4) : weakint", "%px = SHRINK(%x, %b, 4)", "%vx = LOAD(%px)",
     "%py = SHRINK(%y, %b, 4)", "%vy = LOAD(%py)"]
    + [f"%x{j} = INDEX(%vx, {j})\n%y{j} = INDEX(%vy, {j})\n%s{j} = ADD(%x{j}, %y{j})"
       for j in range(4)]
    + ["%s = STACK(%s0, %s1, %s2, %s3)", "%po = SHRINK(%o, %b, 4)", "%t = STORE(%po, %s)",
       'SINK(%t) KernelInfo(name="add4")']) + "\n"


def row_sum(stride: int, n: int = 16, pairs: bool = False) -> str:
    """One work-item sums n consecutive floats from element lidx·stride: n scalar loads of
    elements x + 0 … x + n-1 (an unrolled reduction); ``pairs``: the sum of the products of
    element i and element n-1-i (every loaded value live until the middle)."""
    lines = ["# kcc-uop 1", "%o = PARAM ParamArg(0, float32, 32)",
             f"%x = PARAM ParamArg(1, float32, {32 * stride + n})",
             '%l = SPECIAL(32) "lidx0" : weakint', f"%b = MUL(%l, {stride}) : weakint",
             "%i0 = INDEX(%x, %b)", "%v0 = LOAD(%i0)"]
    lines += [f"%a{i} = ADD(%b, {i}) : weakint\n%i{i} = INDEX(%x, %a{i})\n%v{i} = LOAD(%i{i})"
              for i in range(1, n)]
    if pairs:
        lines += [f"%p{i} = MUL(%v{i}, %v{n - 1 - i})" for i in range(n // 2)]
        lines.append("%z1 = ADD(%p0, %p1)")
        lines += [f"%z{i} = ADD(%z{i - 1}, %p{i})" for i in range(2, n // 2)]
        n //= 2
    else:
        lines.append("%z1 = ADD(%v0, %v1)")
        lines += [f"%z{i} = ADD(%z{i - 1}, %v{i})" for i in range(2, n)]
    lines += ["%io = INDEX(%o, %l)", f"%t = STORE(%io, %z{n - 1})",
              'SINK(%t) KernelInfo(name="rowsum")']
    return "\n".join(lines) + "\n"


def _compile(text: str, arch: str) -> tuple[object, list[str]]:
    from kcc.targets.amd.target import compile_amd_code
    sink = parse(text)
    (code,) = compile_amd_code([sink], arch)
    return code, [ln.split()[0] for ln in code.asm if ln.startswith(" ")]


def _check(text: str, arch: str, seeds: tuple = (0, 1)) -> None:
    """Run the kernel in the emulator against the interpreter on the input draws."""
    from kcc.targets.amd.target import compile_amd_code
    sink = parse(text)
    (code,) = compile_amd_code([sink], arch)
    assert_emulated_like_interpreter(sink, code, seeds)


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_lanes_stay_in_their_tuples(arch: str) -> None:
    """The loaded lanes are added where the loads put them and the sums computed where the
    store reads them: no v_mov_b32 at all (it was 12: 4 out of each load, 4 into the store)."""
    _, ops = _compile(ADD4, arch)
    wide = {"gfx1100": ("global_load_b128", "global_store_b128"),
            "gfx942": ("global_load_dwordx4", "global_store_dwordx4")}[arch]
    assert ops.count(wide[0]) == 2 and ops.count(wide[1]) == 1, ops
    assert ops.count("v_add_f32") == 4 and "v_mov_b32" not in ops, ops
    _check(ADD4, arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_consecutive_scalar_loads_become_wide(arch: str) -> None:
    """16 loads of x + 0 … x + 15 with x a multiple of 4: four 16-byte loads, no scalar one."""
    text = row_sum(16)
    _, ops = _compile(text, arch)
    b128 = "global_load_b128" if arch == "gfx1100" else "global_load_dwordx4"
    loads = [o for o in ops if o.startswith("global_load")]
    assert loads == [b128] * 4, loads
    _check(text, arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("stride, width", [(2, 2), (3, 1), (18, 2)])
def test_wide_loads_only_where_aligned(arch: str, stride: int, width: int) -> None:
    """Where x is only a multiple of 2 (or of nothing), the loads are 8 (or 4) bytes wide: a
    16-byte access must be 16-byte aligned (DS always; kcc keeps GLOBAL's vector accesses
    naturally aligned too)."""
    text = row_sum(stride)
    _, ops = _compile(text, arch)
    loads = [o for o in ops if o.startswith("global_load")]
    assert len(loads) == 16 // width, loads
    _check(text, arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("vgprs", [8, 12])
def test_wide_loads_under_spilling(arch: str, vgprs: int, monkeypatch) -> None:
    """A wide load's lanes spilled and filled (few VGPRs, the checker on): the parallel copy
    of a tuple whose lanes are not in place."""
    from kcc.targets.amd.target import compile_amd_code
    monkeypatch.setitem(regs.ARCHES, arch, replace(regs.ARCHES[arch], vgprs=vgprs))
    text = row_sum(16, pairs=True)
    (code,) = compile_amd_code([parse(text)], arch)
    assert code.spills.scratch_bytes > 0
    _check(text, arch)


def _simulate(items: list, regs0: dict[int, int]) -> dict[int, int]:
    """What the moves and xors the lowering wrote leave in each VGPR (one lane)."""
    r = dict(regs0)
    for it in items:
        d, *s = it.ops
        vals = [r[x.index] for x in s]
        r[d.index] = vals[0] if it.name == "v_mov_b32" else vals[0] ^ vals[1]
        assert it.name in ("v_mov_b32", "v_xor_b32"), it.name
    return r


@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))))
def test_parallel_copy_of_any_permutation(perm: tuple[int, ...]) -> None:
    """Every permutation of 4 registers (cycles need the xor exchange), and each with a
    source repeated: every destination ends with its source's old value."""
    for moves in ([(perm[j], j) for j in range(4)], [(perm[j], min(j, 2)) for j in range(4)]):
        low = Lowering(regs.ARCHES["gfx1100"])
        low.parallel([(VGPR(d, 1), VGPR(s, 1)) for d, s in moves])
        start = {i: 100 + i for i in range(4)}
        end = _simulate(low.out, start)
        for d, s in moves:
            assert end[d] == start[s], (moves, low.out)
        n = sum(d != s for d, s in moves)
        assert len(low.out) <= 3 * n, low.out


#: (x << 3) + y, x + y + s and (x + s) << 2 on loaded int32 values (VGPRs; s uniform, an SGPR)
FUSED = "\n".join(
    ["# kcc-uop 1", "%o = PARAM ParamArg(0, int32, 96)", "%x = PARAM ParamArg(1, int32, 32)",
     "%s = PARAM ParamArg(2, int32, 1)", '%l = SPECIAL(32) "lidx0" : weakint',
     "%r = SUB(31, %l) : weakint", "%ix = INDEX(%x, %l)", "%vx = LOAD(%ix)",
     "%iy = INDEX(%x, %r)", "%vy = LOAD(%iy)", "%is = INDEX(%s, 0)", "%vs = LOAD(%is)",
     "%sh = SHL(%vx, 3) : int32", "%f = ADD(%sh, %vy) : int32", "%g0 = ADD(%vx, %vy) : int32",
     "%g = ADD(%g0, %vs) : int32", "%io = INDEX(%o, %l)", "%t0 = STORE(%io, %f)",
     "%l2 = ADD(%l, 32) : weakint", "%io2 = INDEX(%o, %l2)", "%t1 = STORE(%io2, %g)",
     "%h0 = ADD(%vx, %vs) : int32", "%h = SHL(%h0, 2) : int32", "%l3 = ADD(%l, 64) : weakint",
     "%io3 = INDEX(%o, %l3)", "%t2 = STORE(%io3, %h)",
     "%t = GROUP(%t0, %t1, %t2)", 'SINK(%t) KernelInfo(name="fused")']) + "\n"


@pytest.mark.parametrize("arch", ARCHS)
def test_shift_add_and_add_add_fuse(arch: str) -> None:
    """kcc/isel/amd/fuse.py: v_lshl_add_u32, v_add3_u32 and v_add_lshl_u32 (int32
    wrap-around included: the special inputs reach ±2^31), checked against the interpreter."""
    _, ops = _compile(FUSED, arch)
    assert {"v_lshl_add_u32", "v_add3_u32", "v_add_lshl_u32"} <= set(ops), ops
    _check(FUSED, arch, seeds=(0, 1, 2))
