"""A narrow integer vector load widened by a CAST is VPMOVSX/VPMOVZX's memory operand
(kcc/isel/x86/analysis.py widening_cast_load, kcc/isel/x86/ivec.py vcast_int; issue 24,
item 2: int8_sum r_37_9 read each 8 bytes with VMOVQ, then widened the register). The oracle
is the reference interpreter, on the dtypes' extreme values (the sign or zero extension)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

HAVE_V4 = "avx512f" in open("/proc/cpuinfo").read()


def _kernel(src: str, dst: str, lanes: int, rows: int = 3) -> str:
    """out[i*lanes + j] = (dst)x[i*lanes + j] + (dst)x[(i+rows)*lanes + j]: two loads of
    `lanes` src elements a row, each widened, added as dst lanes."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dst}, {rows * lanes})
%x = PARAM ParamArg(1, {src}, {2 * rows * lanes})
%r = RANGE({rows}) (0, LOOP)
%i = MUL(%r, {lanes})
%pa = SHRINK(%x, %i, {lanes})
%a = LOAD(%pa)
%k = ADD(%i, {rows * lanes})
%pb = SHRINK(%x, %k, {lanes})
%b = LOAD(%pb)
%ca = CAST(%a) {dst}
%cb = CAST(%b) {dst}
%s = ADD(%ca, %cb)
%po = SHRINK(%o, %i, {lanes})
%st = STORE(%po, %s)
%e = END(%st, %r)
SINK(%e) KernelInfo(name="widen")
"""


CASES = [("int8", "int32", 8), ("uint8", "int32", 8), ("int8", "int16", 16),
         ("uint16", "int32", 8), ("int32", "int64", 4), ("int8", "int32", 4)]


def _selected(text: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("src,dst,lanes", CASES)
def test_widened_load_is_read_in_place(arch: str, src: str, dst: str, lanes: int) -> None:
    text = _kernel(src, dst, lanes)
    sel = _selected(text, arch)
    ext = [ln for ln in sel.splitlines() if "vpmovsx" in ln or "vpmovzx" in ln]
    assert len(ext) >= 2 and all("[" in ln for ln in ext), sel
    assert "vmovq" not in sel and "vmovd_" not in sel, sel
    if arch == "x86-64-v4" and not HAVE_V4:
        return
    sink = parse(text)
    info = np.iinfo(np.dtype(src))
    x = np.resize(np.array([info.min, info.max, 0, 1, -1 if info.min else 2], np.dtype(src)),
                  6 * lanes)
    args = [np.zeros(3 * lanes, np.dtype(dst)), x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
