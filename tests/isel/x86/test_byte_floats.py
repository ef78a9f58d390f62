"""uint8 → float32 as a load from a 256-entry .rodata table (kcc/isel/x86/cast.py
`byte_to_float`): uint8_mean's r_9_37 sums bytes converted one by one, which VCVTSI2SS did on
port 5 (int8 keeps VCVTSI2SS); every byte value, and a byte sum in a loop, as the reference
interpreter's, at x86-64-v3 and (where the CPU has it) x86-64-v4."""

from __future__ import annotations

import re

import numpy as np
import pytest
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object


def _convert(dt: str, n: int = 256) -> str:
    """o[i] = float(a[i]) for a of dt."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {n})
%a = PARAM ParamArg(1, {dt}, {n})
%r = RANGE({n}) (0, LOOP)
%pa = INDEX(%a, %r)
%x = LOAD(%pa)
%f = CAST(%x) float32
%d = INDEX(%o, %r)
%st = STORE(%d, %f)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="convert")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt,np_dt", [("uint8", np.uint8), ("int8", np.int8)])
def test_every_byte_value_converts_exactly(arch: str, dt: str, np_dt) -> None:
    sink = parse(_convert(dt))
    text = disasm_object(compile_x86([sink], arch)[0])
    table = re.search(r"vmovss\s+xmm\d+, dword ptr \[r\w+ \+ r\w+\*4\]", text)
    assert ("vcvtsi2ss" not in text and table) if dt == "uint8" else not table, text
    args = [np.zeros(256, np.float32), np.arange(256).astype(np.uint8).view(np_dt)]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ARCHS)
def test_uint8_mean_rows_sum_table_loads_in_order(arch: str) -> None:
    """r_9_37's shape: each row's bytes summed as float32 in the graph's order; the table's
    address is made once, outside the loops."""
    src = """# kcc-uop 1
%1 = CAST(9) int32
%2 = PARAM ParamArg(0, float32, 9)
%5 = PARAM ParamArg(1, uint8, 333)
%8 = BUFFER ParamArg(0, float32, 1, addrspace=REG)
%10 = CAST(0) int32
%12 = CAST(37) int32
%14 = CAST(0.0) float32
%16 = CAST(0.027027027681469917) float32
%17 = RANGE(%1) (1, WEAK)
%18 = AFTER(%8, %17)
%19 = INDEX(%18, %10)
%20 = STORE(%19, %14)
%21 = RANGE(%12, %17) (0, REDUCE)
%22 = MULACC(%17, %12, %21)
%23 = INDEX(%5, %22)
%24 = LOAD(%23)
%25 = AFTER(%8, %20, %21)
%26 = INDEX(%25, %10)
%27 = LOAD(%26)
%28 = CAST(%24) float32
%29 = ADD(%27, %28)
%30 = STORE(%26, %29)
%31 = END(%30, %21)
%32 = AFTER(%8, %31)
%33 = INDEX(%32, %10)
%34 = LOAD(%33)
%35 = INDEX(%2, %17)
%36 = MUL(%34, %16)
%37 = STORE(%35, %36)
%38 = END(%37, %17)
SINK(%38) KernelInfo(name="r_9_37")
"""
    sink = parse(src)
    text = disasm_object(compile_x86([sink], arch)[0])
    assert "vcvtsi2ss" not in text, text
    leas = [int(a, 16) for a in re.findall(r"^\s*([0-9a-f]+):.*\blea\s+\w+, \[rip", text,
                                           re.M)]
    loops = [(int(t, 16), int(j, 16)) for j, t in
             re.findall(r"^\s*([0-9a-f]+):.*\bjl\s+0x([0-9a-f]+)", text, re.M)]
    assert leas and loops and not any(t <= a <= j for a in leas for t, j in loops), text
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
