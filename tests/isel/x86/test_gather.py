"""A STACK of 16 float32 loads at constant offsets from one address is one VGATHERDPS on
x86-64-v4 (kcc/isel/x86/gather.py), and every lane matches the interpreter; other STACKs of
loads stay lane inserts."""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference


# lane j reads a[7*i + OFFS[j]]: offsets in no order, one negative (the gather's index lanes
# are relative to lane 0's displacement), the widest 300 elements from lane 0
OFFS = [10, 3, 17, 0, 300, 11, 4, 5, 250, 9, 12, -2, 14, 15, 16, 40]


# the loop's trip count: enough that kcc/passes/unroll_tiny.py leaves the loop a loop (4
# iterations of 8 lanes are unrolled into copies at constant addresses, no gather to select)
ITERS = 24


def _kernel(offs: list[int], second: bool = False) -> str:
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {16 * ITERS})",
             "%a = PARAM ParamArg(1, float32, 480)", "%b = PARAM ParamArg(2, float32, 480)",
             f"%i = RANGE({ITERS}) (0, WEAK)", "%base0 = MUL(%i, 7)", "%base = ADD(%base0, 2)"]
    for j, o in enumerate(offs):
        buf = "%b" if second and j == 5 else "%a"
        lines.append(f"%x{j} = ADD(%base, {o})")
        lines.append(f"%p{j} = INDEX({buf}, %x{j})")
        lines.append(f"%l{j} = LOAD(%p{j})")
    lines.append("%v = STACK(" + ", ".join(f"%l{j}" for j in range(len(offs))) + ")")
    lines.append("%c = CAST(2.0) float32")
    lines.append("%cs = STACK(" + ", ".join(["%c"] * len(offs)) + ")")
    lines.append("%m = MUL(%v, %cs)")
    lines.append(f"%o = MUL(%i, {len(offs)})")
    lines.append(f"%op = SHRINK(%out, %o, {len(offs)})")
    lines += ["%st = STORE(%op, %m)", "%e = END(%st, %i)", 'SINK(%e) KernelInfo(name="g")']
    return "\n".join(lines) + "\n"


def _asm(text: str, arch: str) -> str:
    return disasm_object(compile_x86([parse(text, "k.uop")], arch)[0])


@pytest.mark.parametrize("arch, gathered", [("x86-64-v4", True), ("x86-64-v3", False)])
def test_sixteen_loads_at_constant_offsets(arch: str, gathered: bool) -> None:
    text = _kernel(OFFS)
    asm = _asm(text, arch)
    assert ("vgatherdps" in asm) == gathered
    if gathered:
        # one gather, the scalar loads gone
        assert asm.count("vgatherdps") == 1 and "vinsertps" not in asm
    if arch == "x86-64-v3" or HAS_V4:
        sink = parse(text, "k.uop")
        args = random_inputs(sink, 11)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_loads_of_two_buffers_are_not_gathered() -> None:
    text = _kernel(OFFS, second=True)
    assert "vgatherdps" not in _asm(text, "x86-64-v4")
    if HAS_V4:
        sink = parse(text, "k.uop")
        args = random_inputs(sink, 12)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


def test_eight_loads_are_a_ymm_gather() -> None:
    """8 lanes (a short strided loop widened by 8: attention's transposed operand) are the
    EVEX.256 form, its index a ymm; every lane matches the interpreter."""
    text = _kernel(OFFS[:8])
    asm = _asm(text, "x86-64-v4")
    assert asm.count("vgatherdps") == 1 and "vgatherdps ymm" in asm
    assert "vinsertps" not in asm
    if HAS_V4:
        sink = parse(text, "k.uop")
        args = random_inputs(sink, 13)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))
