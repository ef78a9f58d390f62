"""PTX isel choices of issue 25 (kcc's CUDA code against tinygrad's PTX): float32 EXP2 is the
hardware `ex2.approx.ftz.f32`, subnormal results scaled around it (documented accuracy in
docs/transcendentals.md, CUDA), LOG2/SIN and
float64 EXP2 stay polynomials; RECIPROCAL (FDIV(1, x) after decompose) is kcc's inline
sequence around `rcp.approx.ftz` for float32 (test_ptx_rcp.py) and `rcp.rn` for float64, any other
FDIV `div.rn` (all correctly rounded); a constant shift amount is reduced at compile time;
tinygrad's `gidx*stride + lane` (MULACC) indices are aligned, so its 4-lane accesses are
`ld/st.global.v4`. ptxas, the independent oracle, assembles each kernel."""

from __future__ import annotations

import re
from pathlib import Path

from ptx_util import k, needs_ptxas, ptx_of, ptxas_ok

from kcc.frontend.parser import parse_file
from kcc.ir import Ops, UOp, dtypes
from kcc.isel.common import multiple_of

ROOT = Path(__file__).resolve().parents[3]


def _unary(op: str, dt: str) -> UOp:
    return k(f"""%x = PARAM ParamArg(0, {dt}, 64)
%o = PARAM ParamArg(1, {dt}, 64)
%i = RANGE(64) (0, LOOP) : weakint
%a = INDEX(%x, %i)
%v = LOAD(%a) : {dt}
%y = {op}(%v) : {dt}
%b = INDEX(%o, %i)
%s = STORE(%b, %y)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")


@needs_ptxas
def test_transcendental_example_uses_ex2_and_rcp(tmp_path: Path) -> None:
    ptx = ptxas_ok(parse_file(ROOT / "examples" / "transcendental.uop"), tmp_path)
    # float32 and float16 EXP2 (the latter computed in float32, rounded once)
    assert ptx.count("ex2.approx.ftz.f32 ") == 2
    # .ftz only on ex2, rcp and rsqrt, whose subnormal operands kcc scales itself
    rest = ptx
    for form in ("ex2.approx.ftz.f32", "rcp.approx.ftz.f32", "rsqrt.approx.ftz.f32"):
        assert form in rest
        rest = rest.replace(form, "")
    assert ".ftz" not in rest and "approx" not in rest
    assert "lg2." not in ptx and "sin.approx" not in ptx
    # float32 RECIPROCAL/SQRT: kcc's correctly rounded inline sequences (test_ptx_rcp.py,
    # test_ptx_sqrt.py), not rcp.rn/sqrt.rn (log2's polynomial divides: div.rn)
    assert "rcp.rn.f32" not in ptx and "sqrt.rn.f32" not in ptx


def test_float16_exp2_widens_and_rounds_once() -> None:
    ptx = ptx_of(_unary("EXP2", "float16"))
    body = ptx[ptx.index("cvt.f32.f16"):]
    assert re.search(r"cvt\.f32\.f16 (%f\d+), %rs\d+;(.*\n)+.*ex2\.approx\.ftz\.f32 (%f\d+), "
                     r"%f\d+;\n.*mul\.rn\.f32 \3, \3, .*\n.*cvt\.rn\.f16\.f32 %\w+, \3;", body)


def test_exp2_scales_subnormal_results_around_ex2() -> None:
    """x < -125 runs ex2 on x + 64 and multiplies by 2^-64 (one rounding of a subnormal
    result), instead of ptxas's ex2(x/2)² (docs/transcendentals.md, CUDA)."""
    ptx = ptx_of(_unary("EXP2", "float32"))
    m = re.search(r"setp\.lt\.f32 (%p\d+), (%f\d+), 0fC2FA0000;\n"
                  r".*mov\.f32 (%f\d+), \2;\n"
                  r".*@\1 add\.rn\.f32 \3, \3, 0f42800000;\n"
                  r".*ex2\.approx\.ftz\.f32 (%f\d+), \3;\n"
                  r".*@\1 mul\.rn\.f32 \4, \4, 0f1F800000;", ptx)
    assert m, ptx


def test_polynomials_stay_where_the_hardware_is_not_accurate_enough() -> None:
    for op, dt in (("EXP2", "float64"), ("LOG2", "float32"), ("SIN", "float32")):
        ptx = ptx_of(_unary(op, dt))
        assert not re.search(r"\b(ex2|lg2|sin|cos)\.", ptx), (op, dt)
        assert ptx.count("\n") > 60, (op, dt)            # a polynomial, not one instruction


@needs_ptxas
def test_reciprocal_is_inline_or_rcp_rn_and_other_divisions_div_rn(tmp_path: Path) -> None:
    for dt in ("float32", "float64"):
        ptx = ptxas_ok(_unary("RECIPROCAL", dt), tmp_path)
        # float32: kcc's inline sequence around rcp.approx.ftz (test_ptx_rcp.py)
        form = "rcp.approx.ftz.f32" if dt == "float32" else "rcp.rn.f64"
        assert form in ptx and "div." not in ptx and "rcp.rn.f32" not in ptx
    two = k("""%x = PARAM ParamArg(0, float32, 64)
%o = PARAM ParamArg(1, float32, 64)
%i = RANGE(64) (0, LOOP) : weakint
%a = INDEX(%x, %i)
%v = LOAD(%a) : float32
%c = CAST(2.0) float32
%y = FDIV(%c, %v) : float32
%b = INDEX(%o, %i)
%s = STORE(%b, %y)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")
    ptx = ptxas_ok(two, tmp_path)
    assert "div.rn.f32" in ptx and "rcp." not in ptx


@needs_ptxas
def test_constant_shift_amount_is_reduced_at_compile_time(tmp_path: Path) -> None:
    sink = k("""%x = PARAM ParamArg(0, int32, 64)
%o = PARAM ParamArg(1, int32, 64)
%p = PARAM ParamArg(2, uint8, 64)
%i = RANGE(64) (0, LOOP) : weakint
%a = INDEX(%x, %i)
%v = LOAD(%a) : int32
%c = CAST(33) uint32
%y = SHL(%v, %c) : int32
%b = INDEX(%o, %i)
%s = STORE(%b, %y)
%u = CAST(%v) uint8
%c2 = CAST(10) uint8
%z = SHR(%u, %c2) : uint8
%q = INDEX(%p, %i)
%s2 = STORE(%q, %z)
%g = GROUP(%s, %s2)
%e = END(%g, %i)
SINK(%e) KernelInfo(name="k")
""")
    ptx = ptxas_ok(sink, tmp_path)
    # the interpreter's rule for amounts ≥ the width: modulo the dtype's bits (33 % 32, 10 % 8)
    assert re.search(r"shl\.b32 %r\d+, %r\d+, 1;", ptx)
    assert re.search(r"shr\.u32 %r\d+, %r\d+, 2;", ptx)
    assert "and.b32 %r" not in ptx.split("shl.b32")[0].split("ld.global.s32")[-1]


# tinygrad's PTX lowering of `a + b` on 4096 floats (bench/cuda_vs_tinygrad.py, `add`)
TINYGRAD_ADD = """%2 = PARAM ParamArg(0, float32, 4096)
%3 = PARAM ParamArg(1, float32, 4096)
%4 = PARAM ParamArg(2, float32, 4096)
%6 = CAST(32) int32
%7 = SPECIAL(%6) "gidx0"
%8 = SPECIAL(%6) "lidx0"
%10 = CAST(4) int32
%12 = CAST(128) int32
%14 = CAST(2) uint32
%15 = SHL(%8, %14)
%16 = MULACC(%7, %12, %15)
%17 = SHRINK(%3, %16, %10)
%18 = LOAD(%17)
%19 = SHRINK(%4, %16, %10)
%20 = LOAD(%19)
%22 = CAST(0) int32
%23 = INDEX(%18, %22)
%25 = CAST(1) int32
%26 = INDEX(%18, %25)
%27 = CAST(2) int32
%28 = INDEX(%18, %27)
%30 = CAST(3) int32
%31 = INDEX(%18, %30)
%32 = INDEX(%20, %22)
%33 = INDEX(%20, %25)
%34 = INDEX(%20, %27)
%35 = INDEX(%20, %30)
%36 = ADD(%23, %32)
%37 = ADD(%26, %33)
%38 = ADD(%28, %34)
%39 = ADD(%31, %35)
%40 = STACK(%36, %37, %38, %39)
%41 = SHRINK(%2, %16, %10)
%42 = STORE(%41, %40)
%43 = GROUP(%42)
SINK(%43) KernelInfo(name="E_32_32_4")
"""


def test_mulacc_index_alignment() -> None:
    g = UOp(Ops.SPECIAL, (UOp(Ops.CAST, (UOp.const(32),), dtypes.int32),), "gidx0")
    lane = UOp(Ops.SHL, (g, UOp(Ops.CAST, (UOp.const(2),), dtypes.uint32)))
    c = UOp(Ops.CAST, (UOp.const(128),), dtypes.int32)
    assert multiple_of(UOp(Ops.MULACC, (g, c, lane))) == 4
    assert multiple_of(UOp(Ops.MULACC, (g, c, UOp.const(6)))) == 2
    assert multiple_of(UOp(Ops.MULACC, (g, g, lane))) == 1


@needs_ptxas
def test_tinygrad_float4_accesses_are_vector(tmp_path: Path) -> None:
    ptx = ptxas_ok(k(TINYGRAD_ADD), tmp_path)
    assert ptx.count("ld.global.v4.f32") == 2 and ptx.count("st.global.v4.f32") == 1
    assert "ld.global.f32" not in ptx and "st.global.f32" not in ptx
