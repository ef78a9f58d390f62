"""CUDA target without a GPU: every example and the whole op × dtype table compile to PTX that
ptxas (the independent oracle) accepts for several archs; PTX-level checks of the semantics
choices (NaN compares, MAX, casts, rounding); the ptxas -v
parser, find_ptxas, errors, and the manifest facts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kcc.encode.ptx import ARCH_PTX, Addr, Imm, Inst, PtxError, Reg, check_inst
from kcc.frontend.parser import parse, parse_file
from kcc.ir import dtypes
from kcc.isel.common import bf16_bits, multiple_of, scalar_const
from kcc.isel.ptx.select import bank_of, mem_type
from kcc.targets.cuda import target as cuda
from kcc.targets.cuda.target import (CudaCompileError, compile_cuda, disasm_cuda, find_ptxas,
                              parse_ptxas_info)

from cuda_kernels import op_matrix  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SHARED = ROOT / "tests" / "data" / "kernels" / "shared"     # the project's copy of the examples
PTXAS = find_ptxas()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed "
                                 "(pip install nvidia-cuda-nvcc)")


def example_files() -> list[Path]:
    return sorted(ROOT.glob("examples/*.uop")) + sorted(SHARED.glob("*.uop"))


def ptx_of(sinks, arch="sm_90") -> str:
    data, _ = compile_cuda(sinks, arch=arch, emit="ptx")
    return data.decode()


def ptxas_ok(ptx: str, arch: str, tmp_path: Path) -> None:
    src = tmp_path / f"k_{arch}.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def entry(ptx: str, name: str) -> str:
    """The body of one .entry of a module."""
    m = re.search(rf"\.visible \.entry {name}\(.*?\n}}\n", ptx, re.S)
    assert m, f"no entry {name}"
    return m.group(0)


# -- every example, several archs -------------------------------------------------------------

def test_examples_exist():
    assert example_files(), "no examples/*.uop and no tests/data/kernels/shared/*.uop found"


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_examples_pass_ptxas(arch, tmp_path):
    for f in example_files():
        ptxas_ok(ptx_of([parse_file(f)], arch), arch, tmp_path)


@pytest.fixture(scope="module")
def matrix_ptx() -> dict[str, str]:
    ks = op_matrix()
    return {a: ptx_of(ks, a) for a in ("sm_90", "sm_75")}


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_75"])
def test_op_matrix_passes_ptxas(matrix_ptx, arch, tmp_path):
    """Every op on every dtype, every CAST and BITCAST pair, in one module per arch."""
    ptxas_ok(matrix_ptx[arch], arch, tmp_path)


@needs_ptxas
@pytest.mark.parametrize("arch", list(ARCH_PTX))
def test_every_arch_assembles(arch, tmp_path):
    ks = [parse_file(f) for f in example_files()[:3]]
    data, descs = compile_cuda(ks, arch=arch, emit="cubin")
    assert data[:4] == b"\x7fELF"
    assert all(d.target["cuda"]["arch"] == arch for d in descs)
    assert f".target {arch}" in ptx_of(ks, arch)


# -- PTX-level semantics checks ---------------------------------------------------------------

def test_nan_compares(matrix_ptx):
    ptx = matrix_ptx["sm_90"]
    assert "setp.neu.f32" in entry(ptx, "cmpne_float32")     # unordered ≠: true on NaN
    assert "setp.lt.f32" in entry(ptx, "cmplt_float32")      # ordered <: false on NaN
    assert "setp.eq.f64" in entry(ptx, "cmpeq_float64")
    assert "setp.neu.f32" in entry(ptx, "cmpne_float16")     # halves compare in float32
    assert "setp.ne.s32" in entry(ptx, "cmpne_int32")
    assert "setp.lt.u64" in entry(ptx, "cmplt_uint64")


def test_max_is_a_lt_b_select(matrix_ptx):
    ptx = matrix_ptx["sm_90"]
    for dt in ("float32", "float64", "float16"):
        body = entry(ptx, f"max_{dt}")
        assert "max.f" not in body, "PTX max.fNN is maxNum, not MAX's NaN rule"
        assert "setp.lt" in body and "selp" in body
    assert "max.s32" in entry(ptx, "max_int32")


def test_float_arith_rounding(matrix_ptx):
    ptx = matrix_ptx["sm_90"]
    assert "add.rn.f32" in entry(ptx, "add_float32")          # .rn: never contracted
    assert "mul.rn.f64" in entry(ptx, "mul_float64")
    assert "fma.rn.f32" in entry(ptx, "mulacc_float32")
    assert "div.rn.f32" in entry(ptx, "fdiv_float32")
    assert "sqrt.rn.f64" in entry(ptx, "sqrt_float64")
    assert "cvt.rzi.f32.f32" in entry(ptx, "trunc_float32")
    body = entry(ptx, "add_float16")
    assert "cvt.f32.f16" in body and "cvt.rn.f16.f32" in body


def test_casts(matrix_ptx):
    ptx = matrix_ptx["sm_90"]
    assert "cvt.rzi.s32.f32" in entry(ptx, "cast_float32_int32")
    assert "cvt.rzi.u64.f64" in entry(ptx, "cast_float64_uint64")
    assert "cvt.rn.f32.s32" in entry(ptx, "cast_int32_float32")
    assert "cvt.rn.f32.f64" in entry(ptx, "cast_float64_float32")
    assert "cvt.f64.f32" in entry(ptx, "cast_float32_float64")
    assert "cvt.rn.f16.f32" in entry(ptx, "cast_float32_float16")
    assert "cvt.u32.u64" in entry(ptx, "cast_int64_int32")      # narrowing keeps low bits
    assert "cvt.s32.s8" in entry(ptx, "cast_int32_int8")
    assert "cvt.s64.s32" in entry(ptx, "cast_int32_int64")      # widening by the source sign
    assert "cvt.s64.u32" in entry(ptx, "cast_uint32_int64")  # zero-extends
    assert "cvt." not in entry(ptx, "cast_int32_uint32")        # same width: the same bits
    assert "setp.neu.f32" in entry(ptx, "cast_float32_bool")    # NaN → true
    assert "selp" in entry(ptx, "cast_bool_float32")


def test_float_to_int_keeps_nan_zero_where_the_hardware_does_not(matrix_ptx):
    """An H200 converted NaN to INT_MIN for 64-bit destinations and float64 sources
    (bench/gpu_check.py's cast rows); there kcc selects 0 after the cvt, elsewhere cvt.rzi
    alone gives 0 (PTX ISA 9.7.9.21)."""
    ptx = matrix_ptx["sm_90"]
    for name in ("cast_float64_int8", "cast_float64_uint32", "cast_float32_int64",
                 "cast_float16_uint64", "cast_bfloat16_int64"):
        body = entry(ptx, name)
        assert "setp.nan." in body and "selp.b" in body, name
    for name in ("cast_float32_int32", "cast_float16_int8", "cast_float32_uint16"):
        assert "setp.nan." not in entry(ptx, name), name


def test_bf16_without_sm80(matrix_ptx):
    """sm_75 has no .bf16 cvt: bfloat16 rounding is integer arithmetic there."""
    assert ".bf16" not in matrix_ptx["sm_75"]
    assert ".target sm_75" in matrix_ptx["sm_75"]


def test_header_and_registers(matrix_ptx):
    ptx = matrix_ptx["sm_90"]
    assert ptx.count(".version 7.8") == 1 and ".address_size 64" in ptx
    body = entry(ptx, "where_float32")
    assert ".reg .f32 %f<" in body and ".reg .pred %p<" in body
    assert ".param .u64 where_float32_param_0" in body


def test_gated_load_and_store_predicated():
    src = (SHARED / "pad_gated_load.uop")
    if not src.exists():
        pytest.skip("tests/data/kernels/shared/pad_gated_load.uop not present")
    body = entry(ptx_of([parse_file(src)]), "pad3")
    assert re.search(r"@%p\d+ ld\.global\.s32", body)


VEC = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 64)
%in  = PARAM ParamArg(1, float32, 64)
%g   = RANGE(16) (0, LOOP)
%s   = MUL(%g, 4)
%src = SHRINK(%in, %s, 4)
%v   = LOAD(%src)
%two = STACK(2.0, 2.0, 2.0, 2.0)
%w   = MUL(%v, %two)
%dst = SHRINK(%out, %s, 4)
%st  = STORE(%dst, %w)
%e   = END(%st, %g)
SINK(%e) KernelInfo(name="double4")
"""

SHARED_MEM = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 64)
%in  = PARAM ParamArg(1, float32, 64)
%tmp = BUFFER ParamArg(2, float32, 16, addrspace=LOCAL)
%g   = SPECIAL(4) "gidx0"
%l   = SPECIAL(16) "lidx0"
%gb  = MUL(%g, 16)
%k   = ADD(%gb, %l)
%ik  = INDEX(%in, %k)
%x   = LOAD(%ik)
%tl  = INDEX(%tmp, %l)
%st  = STORE(%tl, %x)
%b   = BARRIER
%ta  = AFTER(%tmp, %st, %b)
%r   = SUB(15, %l)
%tr  = INDEX(%ta, %r)
%y   = LOAD(%tr)
%ok  = INDEX(%out, %k)
%st2 = STORE(%ok, %y)
SINK(%st2) KernelInfo(name="reverse16")
"""


def test_vector_loads_when_aligned():
    body = entry(ptx_of([parse(VEC)]), "double4")
    assert "ld.global.v4.f32" in body and "st.global.v4.f32" in body


HALF_VEC = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, 64)
%in  = PARAM ParamArg(1, {dt}, 64)
%g   = RANGE({n}) (0, LOOP)
%s   = MULACC(%g, {w}, {off})
%src = SHRINK(%in, %s, {w})
%v   = LOAD(%src)
%dst = SHRINK(%out, %s, {w})
%st  = STORE(%dst, %v)
%e   = END(%st, %g)
SINK(%e) KernelInfo(name="copyh")
"""


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("w", [2, 4])
def test_half_vector_loads_when_aligned(dt, w, tmp_path):
    """float16/bfloat16 pairs and quads are one ld/st.v2/v4.b16 (a 32/64-bit access) when the
    index is a multiple of the lane count; devectorize used to split them into scalar b16
    accesses (tinygrad's tensor-core matmul: 48 LDG.U16 an iteration instead of 16 + 16 LDG)."""
    ptx = ptx_of([parse(HALF_VEC.format(dt=dt, n=64 // w - 1, w=w, off=0))])
    body = entry(ptx, "copyh")
    assert f"ld.global.v{w}.b16" in body and f"st.global.v{w}.b16" in body
    assert "ld.global.b16" not in body and "st.global.b16" not in body
    if PTXAS is not None:
        ptxas_ok(ptx, "sm_90", tmp_path)


def test_half_vector_misaligned_stays_scalar():
    """An index that is not a multiple of the lanes (odd) keeps the scalar b16 accesses."""
    body = entry(ptx_of([parse(HALF_VEC.format(dt="float16", n=31, w=2, off=1))]), "copyh")
    assert "v2.b16" not in body
    assert body.count("ld.global.b16") == 2 and body.count("st.global.b16") == 2


def test_wmma_fragments_load_as_half2():
    """tinygrad's tensor-core matmul for PTX: each A-fragment register is one 32-bit load (the
    row's two float16 of k, k+1), B's column elements stay 16-bit, the output is half2 stores."""
    f = ROOT / "tests" / "data" / "wmma_tinygrad" / "k000_r_32_8_4_16_4.ptx.uop"
    body = ptx_of([parse_file(f)])
    counts = {op: len(re.findall(rf"\t{re.escape(op)} ", body))
              for op in ("ld.global.v2.b16", "ld.global.b16", "st.global.v2.b16",
                         "st.global.b16")}
    assert counts == {"ld.global.v2.b16": 8, "ld.global.b16": 16, "st.global.v2.b16": 16,
                      "st.global.b16": 0}, counts


def test_thread_model_shared_barrier_maxntid():
    sink = parse(SHARED_MEM)
    data, descs = compile_cuda([sink], emit="ptx")
    body = entry(data.decode(), "reverse16")
    assert "%ctaid.x" in body and "%tid.x" in body
    assert "bar.sync 0" in body and ".shared .align 16 .b8" in body
    assert ".maxntid 16, 1, 1" in body
    assert body.index("st.shared") < body.index("bar.sync") < body.index("ld.shared")
    facts = descs[0].target["cuda"]
    assert facts["block"] == [16, 1, 1] and facts["grid"] == [4, 1, 1]
    assert facts["shared_bytes"] == 64


# -- units ------------------------------------------------------------------------------------

def test_isel_dtype_rules():
    assert bank_of(dtypes.bool) == "pred" and bank_of(dtypes.bfloat16) == "b16"
    assert bank_of(dtypes.int8) == "b32" and bank_of(dtypes.uint64) == "b64"
    assert mem_type(dtypes.int8) == "s8" and mem_type(dtypes.bool) == "u8"
    assert mem_type(dtypes.float16) == "b16" and mem_type(dtypes.float64) == "f64"
    assert bf16_bits(1.0) == 0x3F80 and bf16_bits(-2.0) == 0xC000
    assert bf16_bits(1.0 + 2 ** -8) == 0x3F80          # a tie rounds to even
    assert bf16_bits(1.0 + 3 * 2 ** -9) == 0x3F81


def test_strong_const_and_alignment():
    from kcc.ir import Ops, UOp
    c = UOp(Ops.CAST, (UOp.const(300),), dtypes.int8)
    assert scalar_const(c) == 44                       # wraps to the dtype
    assert scalar_const(UOp(Ops.CAST, (UOp.const(1e30),), dtypes.int32)) is None
    i = UOp(Ops.RANGE, (UOp.const(4),), (0, __import__("kcc.ir").ir.AxisType.LOOP))
    four = UOp(Ops.CAST, (UOp.const(4),), dtypes.int32)
    assert multiple_of(UOp(Ops.MUL, (i, four))) == 4
    assert multiple_of(UOp(Ops.ADD, (UOp(Ops.MUL, (i, four)), UOp.const(2)))) == 2


def test_encoder_checks_forms():
    r, f = Reg("b32", 1), Reg("f32", 0)
    check_inst(Inst("add.s32", (r, r, Imm("1"))), 90)
    with pytest.raises(PtxError, match="no PTX form"):
        check_inst(Inst("frob.s32", (r,)), 90)
    with pytest.raises(PtxError, match="operands"):
        check_inst(Inst("add.s32", (r, r)), 90)
    with pytest.raises(PtxError, match="sm_80"):
        check_inst(Inst("cvt.rn.bf16.f32", (Reg("b16", 0), f)), 75)
    with pytest.raises(PtxError, match="predicate"):
        check_inst(Inst("mov.b32", (r, r), guard=r), 90)
    assert str(Addr(Reg("b64", 2), -12)) == "[%rd2+-12]"


def test_parse_ptxas_info():
    text = ("ptxas info    : Compiling entry function 'a' for 'sm_90'\n"
            "ptxas info    : Function properties for a\n"
            "    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
            "ptxas info    : Used 12 registers, used 1 barriers, 64 bytes smem\n"
            "ptxas info    : Compiling entry function 'b' for 'sm_90'\n"
            "ptxas info    : Used 8 registers\n")
    assert parse_ptxas_info(text) == {"a": {"registers": 12, "shared_bytes": 64,
                                            "stack_bytes": 16}, "b": {"registers": 8}}


@needs_ptxas
def test_manifest_facts_from_ptxas():
    data, descs = compile_cuda([parse(VEC)], emit="cubin")
    f = descs[0].target["cuda"]
    assert f["arch"] == "sm_90" and f["ptx_version"] == "7.8"
    assert isinstance(f["registers"], int) and 0 < f["registers"] <= 255
    assert f["grid"] == [1, 1, 1] and f["block"] == [1, 1, 1]


def test_no_ptxas_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cuda, "find_ptxas", lambda: None)
    with pytest.raises(CudaCompileError, match="pip install nvidia-cuda-nvcc"):
        compile_cuda([parse(VEC)], emit="cubin")
    data, descs = compile_cuda([parse(VEC)], emit="ptx")     # PTX needs no ptxas
    assert data.startswith(b"//") and descs[0].target["cuda"]["registers"] is None


def test_bad_arch_emit_and_duplicates():
    with pytest.raises(CudaCompileError, match="unknown CUDA arch"):
        compile_cuda([parse(VEC)], arch="sm_61")
    with pytest.raises(CudaCompileError, match="emit"):
        compile_cuda([parse(VEC)], emit="sass")
    from kcc.targets.registry import CompileError
    with pytest.raises(CompileError, match="named 'double4'"):    # compile_kernels refuses it
        compile_cuda([parse(VEC), parse(VEC)], emit="ptx")


def test_disasm():
    ptx = ptx_of([parse(VEC)]).encode()
    assert disasm_cuda(ptx) == ptx.decode()
    with pytest.raises(CudaCompileError):
        disasm_cuda(b"\xff\xfe\x00junk")
    if PTXAS is not None:
        cubin, _ = compile_cuda([parse(VEC)], emit="cubin")
        try:
            text = disasm_cuda(cubin)
        except CudaCompileError as e:       # no SASS tool here: a refusal that says so
            assert "cuobjdump or nvdisasm" in str(e)
        else:
            assert "double4" in text


def test_find_ptxas_wheel_layout(tmp_path, monkeypatch):
    exe = tmp_path / "nvidia" / "cu13" / "bin" / "ptxas"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setattr(cuda.shutil, "which", lambda name: None)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert find_ptxas() == str(exe)
