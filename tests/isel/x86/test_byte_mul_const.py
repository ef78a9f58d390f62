"""Byte lanes multiplied by a constant ±(2^a ± 2^b) as byte doublings (VPADDB x, x), masked
word shifts and one add or subtract (kcc/isel/x86/ivec.py mul8_const; issue 24 item 2:
int8_arith E_333's `x*3 + y`, where mul8's two VPMULLW and five more ops ran at 0.54x
clang's x + x + x). Other constants keep mul8. The oracle is the reference interpreter, on
values at the ends of the dtype (the products wrap modulo 256)."""

from __future__ import annotations


import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference, selected_text

from kcc.frontend.parser import parse

V4 = "avx512bw" in open("/proc/cpuinfo").read()
ARCHES = ["x86-64-v3"] + (["x86-64-v4"] if V4 else [])


def _kernel(dt: str, c: int, acc: bool) -> str:
    """out[i] = x[i] * c (+ y[i], as one MULACC) over 333 elements of dt."""
    val = "MULACC(%xv, %c, %yv)" if acc else "MUL(%c, %xv)"
    ys = "%yp = INDEX(%y, %i)\n%yv = LOAD(%yp)\n" if acc else ""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, 333)
%x = PARAM ParamArg(1, {dt}, 333)
%y = PARAM ParamArg(2, {dt}, 333)
%n = CAST(333) int32
%c = CAST({c}) {dt}
%i = RANGE(%n) (0, WEAK)
%xp = INDEX(%x, %i)
%xv = LOAD(%xp)
{ys}%m = {val}
%op = INDEX(%o, %i)
%st = STORE(%op, %m)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="mul8c")
"""



def _args(dt: str) -> list:
    rng = np.random.default_rng(7)
    info = np.iinfo(dt)
    x, y = (rng.integers(info.min, info.max, 333, dtype=dt, endpoint=True) for _ in range(2))
    x[:5] = [info.min, info.max, 0, 1, info.max // 3]
    return [np.zeros(333, dt), x, y]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dt", ["int8", "uint8"])
@pytest.mark.parametrize("acc", [False, True])
@pytest.mark.parametrize("c,adds", [(3, True), (2, True), (4, True), (5, True), (6, True),
                                    (7, True), (8, True), (40, True), (-3, True), (-1, True),
                                    (-128, True), (11, False), (93, False)])
def test_a_byte_constant_of_two_powers_is_adds(arch: str, dt: str, acc: bool, c: int,
                                               adds: bool) -> None:
    if dt == "uint8":
        c &= 0xFF
    elif c >= 128:
        c -= 256
    text = _kernel(dt, c, acc)
    sel = selected_text(text, arch)
    assert ("vpmullw" not in sel) == adds, sel
    assert "imul" not in sel                      # the loop is widened either way
    sink = parse(text)
    args = _args(dt)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
