"""uint32 → float32 on whole vectors (kcc/isel/x86/vec.py vcast_u32; issue 24, item 2:
bench/tinygrad_sweep.py's cast_u32_f ran 20x clang with each lane converted by CVTSI2SS).

The vector form splits each lane into its 16-bit halves and recombines them with one FMA; the
oracle is the reference interpreter, on values whose rounding to float32 is decided by the
low bits (2^24 + 1, odd values near 2^32, ties to even)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

ARCHES = ["x86-64-v3", pytest.param("x86-64-v4", marks=pytest.mark.skipif(
    "avx512f" not in open("/proc/cpuinfo").read(), reason="no AVX-512 here"))]

VALUES = [0, 1, 2, 0xFFFF, 0x10000, 0x10001, (1 << 24) + 1, (1 << 24) + 3, (1 << 25) + 2,
          0x7FFFFFFF, 0x80000000, 0x80000001, 0x80000080, 0x80000081, 0xFFFFFF7F, 0xFFFFFF80,
          0xFFFFFFFF, 0xFFFFFFFE, 12345678, 0xDEADBEEF, 0x00FFFFFF, 0x01000001, 0x0FFFFFF9,
          0xFFFF0000, 0x0000FFFF, 0x12345678, 0x89ABCDEF, 0x7FFFFFC0, 0x7FFFFFBF, 0x40000041,
          0xC0000041, 3]


def _kernel(n: int) -> str:
    """out[i] = float(x[i]) over 32 uint32 elements, n to a loop step."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, 32)
%x = PARAM ParamArg(1, uint32, 32)
%i = RANGE({32 // n}) (0, LOOP)
%s = MUL(%i, {n})
%p = SHRINK(%x, %s, {n})
%v = LOAD(%p)
%f = CAST(%v) float32
%q = SHRINK(%o, %s, {n})
%st = STORE(%q, %f)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="u2f")
"""


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("n", [4, 8])
def test_uint32_to_float32_vectors_round_as_the_interpreter(arch: str, n: int) -> None:
    sink = parse(_kernel(n))
    args = [np.zeros(32, np.float32), np.array(VALUES, np.uint32)]
    want = reference(sink, args)
    assert want[0][6] == np.float32(1 << 24) and want[0][16] == np.float32(2.0 ** 32)
    assert_same(sink, compile_and_run(sink, args, arch), want)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_uint32_to_float32_is_a_vector_conversion_not_per_lane(arch: str) -> None:
    out = io.StringIO()
    run_pipeline(parse(_kernel(8)), X86Target(arch), dump_after="select", out=out)
    text = out.getvalue()
    assert "vcvtdq2ps_y_ym" in text and "vfmadd231ps_y_y_ym" in text, text
    assert "vcvtsi2ss" not in text and "vpextrd" not in text, text


def _mul8_kernel(dt: str, n: int) -> str:
    """out[i] = a[i] * b[i] + c[i] and p[i] = a[i] * b[i] over 64 int8/uint8 lanes, n a step."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, 64)
%m = PARAM ParamArg(1, {dt}, 64)
%a = PARAM ParamArg(2, {dt}, 64)
%b = PARAM ParamArg(3, {dt}, 64)
%c = PARAM ParamArg(4, {dt}, 64)
%i = RANGE({64 // n}) (0, LOOP)
%s = MUL(%i, {n})
%ap = SHRINK(%a, %s, {n})
%bp = SHRINK(%b, %s, {n})
%cp = SHRINK(%c, %s, {n})
%av = LOAD(%ap)
%bv = LOAD(%bp)
%cv = LOAD(%cp)
%r = MULACC(%av, %bv, %cv)
%op = SHRINK(%o, %s, {n})
%st0 = STORE(%op, %r)
%p = MUL(%av, %bv)
%mp = SHRINK(%m, %s, {n})
%st1 = STORE(%mp, %p)
%g = GROUP(%st0, %st1)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="mul8")
"""


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dt", ["int8", "uint8"])
@pytest.mark.parametrize("n", [16, 32])
def test_byte_multiplies_wrap_as_the_interpreter(arch: str, dt: str, n: int) -> None:
    """Every pair of bytes' low product bits, the even and the odd lanes of each word."""
    rng = np.random.default_rng(n)
    vals = np.array([0, 1, 255, 128, 127, 129, 3, 254, 16, 15, 200, 100], np.uint8)
    a = np.concatenate([vals, rng.integers(0, 256, 52).astype(np.uint8)]).view(dt)
    b = np.concatenate([vals[::-1], rng.integers(0, 256, 52).astype(np.uint8)]).view(dt)
    c = rng.integers(0, 256, 64).astype(np.uint8).view(dt)
    sink = parse(_mul8_kernel(dt, n))
    args = [np.zeros(64, dt), np.zeros(64, dt), a, b, c]
    want = reference(sink, args)
    assert np.array_equal(want[1], (a.astype(np.int64) * b.astype(np.int64)).astype(dt))
    assert_same(sink, compile_and_run(sink, args, arch), want)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_byte_multiplies_are_word_multiplies(arch: str) -> None:
    out = io.StringIO()
    run_pipeline(parse(_mul8_kernel("int8", 32)), X86Target(arch), dump_after="select", out=out)
    text = out.getvalue()
    assert "vpmullw_y_y_ym" in text and "vpsllw_y_y_imm8" in text, text
    assert "imul" not in text, text
