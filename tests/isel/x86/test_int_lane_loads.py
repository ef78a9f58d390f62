"""int32 vector loads read lane by lane from memory (kcc/isel/x86/analysis.py
`int_lane_loads`, kcc/isel/x86/mem.py sel_INDEX): int16's E_64_4 stores each lane's product
as it goes (`(short)a[4i+j] * 300`; here a factor a lane, which keeps the loop lane by
lane: one factor for all is rerolled and widened); each lane is a scalar load (`mov ecx,
[rsi + 4*rax + 4]`), not a VMOVDQU and a VPEXTRD a lane (two micro-ops, one on port 5). A
buffer the kernel also stores keeps its vector load and extracts. Values as the reference
interpreter's."""

from __future__ import annotations

import re

import pytest
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object


def _lanes(stored: bool = False) -> str:
    """out[4i + j] = (int16)a[4i + j] * (300 + j), j = 0..3, the lanes of one int4 load of a
    (a factor a lane: with one for all, widen rerolls the loop and widens it); stored: and
    a[4i + 3] = 7 after them (the loaded buffer stored in the kernel)."""
    lines = ["# kcc-uop 1",
             "%o = PARAM ParamArg(0, int16, 256)",
             "%a = PARAM ParamArg(1, int32, 256)",
             "%r = RANGE(64) (0, LOOP)",
             "%b = SHL(%r, 2)",
             "%s = SHRINK(%a, %b, 4)",
             "%v = LOAD(%s)"]
    stores = []
    for j in range(4):
        lines += [f"%x{j} = INDEX(%v, {j})", f"%c{j} = CAST(%x{j}) int16",
                  f"%k{j} = CAST({300 + j}) int16", f"%y{j} = MUL(%c{j}, %k{j})",
                  f"%i{j} = ADD(%b, {j})",
                  f"%p{j} = INDEX(%o, %i{j})", f"%st{j} = STORE(%p{j}, %y{j})"]
        stores.append(f"%st{j}")
    if stored:
        lines += ["%seven = CAST(7) int32", "%pa = INDEX(%a, %i3)",
                  "%sa = STORE(%pa, %seven)"]
        stores.append("%sa")
    lines += [f"%g = GROUP({', '.join(stores)})", "%e = END(%g, %r)",
              'SINK(%e) KernelInfo(name="lanes")']
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("arch", ARCHS)
def test_int_lanes_are_scalar_loads(arch: str) -> None:
    sink = parse(_lanes())
    text = disasm_object(compile_x86([sink], arch)[0])
    assert not re.search(r"vpextrd|vmovd\s+e\w+, xmm", text), text
    assert len(re.findall(r"mov\s+e\w+, dword ptr \[", text)) == 4, text
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_stored_buffer_keeps_its_vector_load(arch: str) -> None:
    sink = parse(_lanes(stored=True))
    text = disasm_object(compile_x86([sink], arch)[0])
    assert re.search(r"vpextrd|vmovd\s+e\w+, xmm", text), text
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
