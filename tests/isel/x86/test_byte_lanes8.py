"""Byte lanes x 8 and bool vector stores (issue 24, item 2: the sweep's int8_matmul, int8_sum,
mean_int8 and bool_any_axis kernels ran 4-9x slower than clang, their 8-iteration loops of
int8 or bool elements left scalar: no 8-lane byte vector was legal, nor a bool vector store).

An 8-lane int8/uint8 vector lives in an xmm's low 8 bytes (VMOVQ load/store, VPMOVSXBD to
int32 x 8, VPSHUFB + VEXTRACTI128 + VPOR back); a bool vector is stored as its 0/1 bytes.
The oracle is the reference interpreter, on the int8 extremes and random values."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import ARCHS, assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target


# out[i] = int8(int32(int8(x[i]) * int8(y[i])) + int32(a[i]) + int32(a[i + 8])), 8 iterations
MIXED = """# kcc-uop 1
%o = PARAM ParamArg(0, int8, 8)
%x = PARAM ParamArg(1, int32, 8)
%y = PARAM ParamArg(2, int32, 8)
%a = PARAM ParamArg(3, int8, 16)
%i = RANGE(8) (0, LOOP)
%px = INDEX(%x, %i)
%vx = LOAD(%px)
%py = INDEX(%y, %i)
%vy = LOAD(%py)
%bx = CAST(%vx) int8
%by = CAST(%vy) int8
%m = MUL(%bx, %by)
%m32 = CAST(%m) int32
%pa = INDEX(%a, %i)
%va = LOAD(%pa)
%i8 = ADD(%i, 8)
%pb = INDEX(%a, %i8)
%vb = LOAD(%pb)
%a32 = CAST(%va) int32
%b32 = CAST(%vb) int32
%s1 = ADD(%m32, %a32)
%s2 = ADD(%s1, %b32)
%r = CAST(%s2) int8
%po = INDEX(%o, %i)
%st = STORE(%po, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="bytes8")
"""

# out[i] = x[i] < 1.5 | x[i + 8] < 1.5, 8 iterations: a bool vector stored
ANY = """# kcc-uop 1
%o = PARAM ParamArg(0, bool, 8)
%x = PARAM ParamArg(1, float32, 16)
%i = RANGE(8) (0, LOOP)
%p0 = INDEX(%x, %i)
%v0 = LOAD(%p0)
%i8 = ADD(%i, 8)
%p1 = INDEX(%x, %i8)
%v1 = LOAD(%p1)
%c0 = CMPLT(1.5, %v0)
%c1 = CMPLT(1.5, %v1)
%c = OR(%c0, %c1)
%po = INDEX(%o, %i)
%st = STORE(%po, %c)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="any8")
"""


def _select(src: str, arch: str) -> str:
    out = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="select", out=out)
    return out.getvalue()


@pytest.mark.parametrize("arch", ARCHS)
def test_byte_lanes_x8_match_the_interpreter(arch: str) -> None:
    sink = parse(MIXED)
    rng = np.random.default_rng(1)
    x = np.array([-128, 127, -1, 255, 0x7FFFFF81, -129, 3, 1000], np.int32)
    y = np.array([-128, 127, -1, 2, 1 << 20, 77, -3, -1000], np.int32)
    a = np.array([-128, 127, -1, 0, 100, -100, 64, -64, *rng.integers(-128, 128, 8)], np.int8)
    args = [np.zeros(8, np.int8), x, y, a]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_byte_lanes_x8_are_one_vector_not_lanes(arch: str) -> None:
    """The loop is widened to 8 lanes: the store is VMOVQ, each byte load the memory operand
    of the VPMOVSXBD that widens its qword (kcc/isel/x86/analysis.py widening_cast_load;
    before, a VMOVQ and the register's VPMOVSXBD); no lane is read or extended one at a
    time."""
    text = _select(MIXED, arch)
    assert "vmovq_m64_x" in text, text
    widen = [ln for ln in text.splitlines() if "vpmovsxbd_y_xm64" in ln and "[" in ln]
    assert len(widen) == 2 and "vmovq_x_xm64" not in text, text
    assert "movsx_r32_rm8" not in text and "vpextr" not in text, text


@pytest.mark.parametrize("arch", ARCHS)
def test_bool_vector_store_matches_the_interpreter(arch: str) -> None:
    sink = parse(ANY)
    x = np.array([1.5, 2.0, -1.0, np.nan, 1.5000001, 0.0, np.inf, -np.inf,
                  0.0, 0.0, 3.0, 1.4999999, np.nan, 2.0, -np.inf, 1.5], np.float32)
    args = [np.zeros(8, np.bool_), x]
    want = reference(sink, args)
    assert want[0].tolist() == [False, True, True, False, True, True, True, False]
    assert_same(sink, compile_and_run(sink, args, arch), want)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_bool_vector_store_is_one_qword(arch: str) -> None:
    text = _select(ANY, arch)
    assert "vmovq_m64_x" in text and "mov_rm8_r8" not in text, text
