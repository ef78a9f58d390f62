"""x86-64-v4 shifts of 32/64-bit lanes by an immediate that read their source from memory
(kcc/isel/x86/analysis.py `shift_reads_memory`, kcc/isel/x86/ivec.py `shift_source`, the EVEX
rows of kcc/encode/x86/rows_late.py `_shift_mem_rows`): u64_shift's E_50 unrolled, each block
`vpsrlq ymm, ymmword ptr [rsi + k], 13` as clang writes it, where a VMOVDQU and a register
shift were two instructions. x86-64-v3's VEX shifts take a register only. Values as the
reference interpreter's."""

from __future__ import annotations

import re

import pytest
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object



def _shifts(dt: str, n: int, op: str = "SHR", by: str = "13") -> str:
    """out[i] = (a[i] op by) ^ (b[i] << 7) for i < n (u64_shift's E_50 at uint64, 50)."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {n})
%a = PARAM ParamArg(1, {dt}, {n})
%b = PARAM ParamArg(2, {dt}, {n})
%r = RANGE({n}) (0, LOOP)
%pa = INDEX(%a, %r)
%x = LOAD(%pa)
%pb = INDEX(%b, %r)
%y = LOAD(%pb)
%k = CAST({by}) {dt}
%s = {op}(%x, %k)
%t = SHL(%y, 7)
%v = XOR(%s, %t)
%d = INDEX(%o, %r)
%st = STORE(%d, %v)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="shifts")
"""


CASES = [("uint64", "SHR", "13"), ("int32", "SHR", "5"), ("uint32", "SHR", "31"),
         ("int64", "SHL", "3")]


@pytest.mark.parametrize("dt,op,by", CASES)
def test_v4_shifts_read_memory(dt: str, op: str, by: str) -> None:
    sink = parse(_shifts(dt, 50, op, by))
    text = disasm_object(compile_x86([sink], "x86-64-v4")[0])
    shifts = re.findall(r"vps[lr][la][dq]\s+[xyz]mm\d+, (\S+)", text)
    assert shifts and all(s in ("xmmword", "ymmword", "zmmword") for s in shifts), text
    if HAS_V4:
        for seed in (0, 1):
            args = random_inputs(sink, seed)
            assert_same(sink, compile_and_run(sink, args, "x86-64-v4"), reference(sink, args))


@pytest.mark.parametrize("dt,op,by", CASES)
def test_v3_shifts_read_registers(dt: str, op: str, by: str) -> None:
    sink = parse(_shifts(dt, 50, op, by))
    text = disasm_object(compile_x86([sink], "x86-64-v3")[0])
    assert not re.search(r"vps[lr][la][dq]\s+[xyz]mm\d+, [xyz]mmword", text), text
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v3"), reference(sink, args))
