"""Byte and word lanes widened to the 16 dwords of a zmm (x86-64-v4): VPMOVSX/ZXBD and
VPMOVSX/ZXWD zmm with their load as the memory operand (kcc/isel/x86/icast.py vcast_int,
analysis.widening_cast_load; the rows of kcc/encode/x86/rows_late.py `_widen_zmm_rows`), and
the int32 x 16 result stored whole by VMOVDQU32 (TargetDesc.narrow_stores). int8_sum's
r_37_9 is the shape: rows of bytes summed into int32 columns, one shuffle-port micro-op a 16
lanes where the ymm form takes two. Values as the reference interpreter's, at x86-64-v3 and
(where the CPU has it) x86-64-v4."""

from __future__ import annotations

import re

import pytest
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object


def _column_sums(dt: str, n: int, rows: int = 3) -> str:
    """out[i] = sum of int32(a[i + n*j]) over j < rows (a column sum of a rows x n array)."""
    lines = [f"%x{j}p = INDEX(%a, %q{j})\n%x{j} = LOAD(%x{j}p)\n%c{j} = CAST(%x{j}) int32"
             for j in range(rows)]
    places = "".join(f"%q{j} = ADD(%i, {n * j})\n" for j in range(rows))
    acc = "%s1 = ADD(%c0, %c1)\n" + "".join(f"%s{j} = ADD(%s{j - 1}, %c{j})\n"
                                            for j in range(2, rows))
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, int32, {n})
%a = PARAM ParamArg(1, {dt}, {n * rows})
%i = RANGE({n}) (0, LOOP)
{places}{chr(10).join(lines)}
{acc}%op = INDEX(%o, %i)
%st = STORE(%op, %s{rows - 1})
%e = END(%st, %i)
SINK(%e) KernelInfo(name="colsum")
"""


WIDEN = {"int8": "vpmovsxbd", "uint8": "vpmovzxbd", "int16": "vpmovsxwd",
         "uint16": "vpmovzxwd"}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", sorted(WIDEN))
@pytest.mark.parametrize("n", [37, 64])
def test_narrow_columns_summed_in_zmm_lanes(arch: str, dt: str, n: int) -> None:
    sink = parse(_column_sums(dt, n))
    text = disasm_object(compile_x86([sink], arch)[0])
    src = "xmmword" if dt.endswith("int8") else "ymmword"
    widen = re.findall(rf"{WIDEN[dt]} zmm\d+, {src} ptr \[", text)
    if arch == "x86-64-v4":
        # every 16-column block: one widening a row read from memory, one whole store
        assert len(widen) == 3 * (n // 16), text
        assert text.count("vmovdqu32 zmmword ptr") == n // 16, text
    else:
        assert not widen and "zmm" not in text, text
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
