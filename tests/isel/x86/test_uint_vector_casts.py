"""uint32 → float32 on whole vectors (kcc/isel/x86/vec.py vcast_u32; issue 24, item 2:
bench/tinygrad_sweep.py's cast_u32_f ran 20x clang with each lane converted by CVTSI2SS).

The vector form splits each lane into its 16-bit halves and recombines them with one FMA; the
oracle is the reference interpreter, on values whose rounding to float32 is decided by the
low bits (2^24 + 1, odd values near 2^32, ties to even)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import ARCHS, assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target


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


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [4, 8])
def test_uint32_to_float32_vectors_round_as_the_interpreter(arch: str, n: int) -> None:
    sink = parse(_kernel(n))
    args = [np.zeros(32, np.float32), np.array(VALUES, np.uint32)]
    want = reference(sink, args)
    assert want[0][6] == np.float32(1 << 24) and want[0][16] == np.float32(2.0 ** 32)
    assert_same(sink, compile_and_run(sink, args, arch), want)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_uint32_to_float32_is_a_vector_conversion_not_per_lane(arch: str) -> None:
    """x86-64-v3: 16-bit halves and one FMA; x86-64-v4: one VCVTUDQ2PS (AVX512VL)."""
    out = io.StringIO()
    run_pipeline(parse(_kernel(8)), X86Target(arch), dump_after="select", out=out)
    text, w = out.getvalue(), "y"
    if arch == "x86-64-v4":
        assert f"vcvtudq2ps_{w}_{w}m" in text, text
        assert "vfmadd231ps" not in text and "vpsrld" not in text, text
    else:
        assert f"vcvtdq2ps_{w}_{w}m" in text and f"vfmadd231ps_{w}_{w}_{w}m" in text, text
        assert "vcvtudq2ps" not in text, text
    assert "vcvtsi2ss" not in text and "vcvtusi2ss" not in text and "vpextrd" not in text, text


def _scalar_kernel(src: str, dst: str, n: int) -> str:
    """out[i] = dst(x[i]) one element a thread: a scalar conversion."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dst}, {n})
%x = PARAM ParamArg(1, {src}, {n})
%i.n = CAST({n}) int32
%i = SPECIAL(%i.n) "gidx0"
%px = INDEX(%x, %i)
%v = LOAD(%px)
%f = CAST(%v) {dst}
%po = INDEX(%o, %i)
%st = STORE(%po, %f)
SINK(%st) KernelInfo(name="u2fs")
"""


U64_VALUES = [0, 1, (1 << 53) + 1, (1 << 53) + 3, (1 << 63) - 1, 1 << 63, (1 << 63) + 1,
              (1 << 63) + (1 << 11), (1 << 63) + (1 << 11) + 1, (1 << 63) + (3 << 10),
              (1 << 64) - 1, (1 << 64) - 2, (1 << 64) - (1 << 11), (1 << 64) - (1 << 10) - 1,
              0xFFFFFF7F, 0xFFFFFF80, 0x80000080, 0x80000081, 0xDEADBEEFCAFEF00D, 3]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src,dst", [("uint32", "float32"), ("uint32", "float64"),
                                     ("uint64", "float32"), ("uint64", "float64")])
def test_scalar_unsigned_to_float_rounds_as_the_interpreter(arch: str, src: str,
                                                            dst: str) -> None:
    """0, 2^31, 2^32 - 1, 2^63, 2^64 - 1 and values whose rounding the low bits decide."""
    vals = VALUES if src == "uint32" else U64_VALUES + VALUES
    sink = parse(_scalar_kernel(src, dst, len(vals)))
    args = [np.zeros(len(vals), dst), np.array(vals, src)]
    want = reference(sink, args)
    top = 2.0 ** 32 if dst == "float32" else 2.0 ** 32 - 1      # float64 holds 2^32 - 1
    assert want[0][0] == 0 and want[0][vals.index(0xFFFFFFFF)] == top
    assert_same(sink, compile_and_run(sink, args, arch), want)


@pytest.mark.parametrize("src,dst", [("uint32", "float32"), ("uint64", "float64")])
def test_scalar_unsigned_to_float_is_one_vcvtusi2s_on_v4(src: str, dst: str) -> None:
    """x86-64-v4: VCVTUSI2SS/SD (AVX512F) reads the GPR as unsigned, with no zero extension
    (uint32) nor halving and blend (uint64); x86-64-v3 keeps the signed conversion."""
    sink = _scalar_kernel(src, dst, 8)
    cvt = f"vcvtusi2s{dst[5:] == '32' and 's' or 'd'}_x_x_rm{src[4:]}"
    for arch in ("x86-64-v3", "x86-64-v4"):
        out = io.StringIO()
        run_pipeline(parse(sink), X86Target(arch), dump_after="select", out=out)
        text = out.getvalue()
        if arch == "x86-64-v4":
            assert cvt in text and "vcvtsi2s" not in text and "vblendvpd" not in text, text
        else:
            assert "vcvtusi2s" not in text and "vcvtsi2s" in text, text


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


@pytest.mark.parametrize("arch", ARCHS)
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
