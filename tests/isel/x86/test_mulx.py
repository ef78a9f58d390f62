"""uint64 MULHI by BMI2's MULX (kcc/isel/x86/alu.py `mulhi_mulx`, the row of
kcc/encode/x86/rows_late.py `_mulx_rows`): a uint64 division by a constant (u64_div's E_50,
x / 1000003) reads the dividend in rdx where it was loaded and keeps using it there for the
round-up `x - hi`, as clang writes it, where MUL needed a copy into rax. Values as the
reference interpreter's, at x86-64-v3 and (where the CPU has it) x86-64-v4."""

from __future__ import annotations

import re

import pytest
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object


def _divide(c: int, op: str, n: int = 50, after: bool = False) -> str:
    """out[i] = a[i] op c (uint64); after: plus a[i] * 3 (the dividend read again, after
    the MULX)."""
    tail = "%w = MUL(%x, %three)\n%v = ADD(%q, %w)\n" if after else "%v = OR(%q, %three)\n"
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, uint64, {n})
%a = PARAM ParamArg(1, uint64, {n})
%c = CAST({c}) uint64
%three = CAST(3) uint64
%r = RANGE({n}) (0, LOOP)
%pa = INDEX(%a, %r)
%x = LOAD(%pa)
%q = {op}(%x, %c)
{tail}%d = INDEX(%o, %r)
%st = STORE(%d, %v)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="divide")
"""


CASES = [(1000003, "CDIV", False), (7, "CDIV", True), (10, "CMOD", False),
         (3, "CDIV", True), ((1 << 63) + 5, "CMOD", True)]


def _check(sink, arch: str) -> str:
    text = disasm_object(compile_x86([sink], arch)[0])
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
    return text


@pytest.mark.parametrize("c,op,after", CASES)
def test_uint64_mulhi_is_mulx(c: int, op: str, after: bool) -> None:
    sink = parse(_divide(c, op, after=after))
    for arch in ("x86-64-v3",) + (("x86-64-v4",) if HAS_V4 else ()):
        text = _check(sink, arch)
        assert "mulx" in text and not re.search(r"\bmul\s", text), text
        # the dividend is loaded into rdx itself: no register copy into rdx (or rax)
        assert not re.search(r"mov\s+r[da]x, r\w+\n", text + "\n"), text


def test_u64_div_e50_as_clang() -> None:
    """E_50 (x / 1000003): load into rdx, MULX, then x - hi on rdx; 8 instructions a
    element, none of them a copy."""
    sink = parse(_divide(1000003, "CDIV"))
    text = disasm_object(compile_x86([sink], "x86-64-v3")[0])
    assert re.search(r"mov\s+rdx, qword ptr \[", text), text
    assert re.search(r"sub\s+rdx, r\w+", text), text


def test_u64_div_e50_high_half_over_low_and_magic_outside_the_loop() -> None:
    """MULX writes its high half over its low half (one register, as clang; kcc/isel/x86/
    base.py HIGH_ONLY) and the MOVABS of the magic multiplier sits before the loop (x86's LICM
    `alone`), not in every iteration; values as the interpreter's."""
    sink = parse(_divide(1000003, "CDIV", after=True))
    for arch in ("x86-64-v3",) + (("x86-64-v4",) if HAS_V4 else ()):
        text = _check(sink, arch)
        muls = re.findall(r"mulx\s+(\w+), (\w+), ", text)
        assert muls and all(a == b for a, b in muls), text
        head = int(re.search(r"\bjl\s+0x([0-9a-f]+)", text).group(1), 16)
        at = [int(m, 16) for m in re.findall(r"^\s*([0-9a-f]+):.*movabs", text, re.M)]
        assert len(at) == 1 and at[0] < head, text
