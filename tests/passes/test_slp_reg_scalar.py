"""slp and a REG accumulator whose stores stay scalar (passes/slp.py `_scalar_reg_groups`,
`_Packer.scalar_reg`): tinygrad's half_softmax max reduction (r_5_4_77) keeps four float16
maxima in a REG buffer of 4. x86 has float16 x 4 loads/stores but no float16 vector MAX, so
the loop's stores stay scalar; slp used to pack the init stores and the final read into
vector accesses anyway, which put the accumulator in memory (a 4-lane load and four 2-byte
stores every iteration). The buffer now has no vector access at all, while the float32 form of
the same kernel (MAX at 4 lanes) is still one group. Since passes/half_max.py, this kernel's
MAX runs in float32 (it packs too); the scalar case is now the same reduction over float16 read
from memory. Values: the x86 object vs the reference interpreter."""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference

# out[4r + k] = max_i in[308r + 77k + i] (as float16), one REG accumulator of 4
HALF_MAX = """# kcc-uop 1
# tinygrad kernel r_5_4_77
%2 = PARAM ParamArg(0, float16, 20)
%5 = PARAM ParamArg(1, float32, 1540)
%7 = CAST(4) int32
%8 = BUFFER ParamArg(0, float16, 4, addrspace=REG)
%10 = CAST(0) int32
%12 = CAST(1) int32
%14 = CAST(2) int32
%16 = CAST(3) int32
%18 = CAST(5) int32
%20 = CAST(77) int32
%22 = CAST(154) int32
%24 = CAST(231) int32
%26 = CAST(308) int32
%28 = CAST(-inf) float16
%29 = RANGE(%18) (1, WEAK)
%30 = AFTER(%8, %29)
%31 = INDEX(%30, %10)
%32 = INDEX(%30, %12)
%33 = INDEX(%30, %14)
%34 = INDEX(%30, %16)
%35 = STORE(%31, %28)
%36 = STORE(%32, %28)
%37 = STORE(%33, %28)
%38 = STORE(%34, %28)
%39 = RANGE(%20, %29) (0, REDUCE)
%40 = AFTER(%8, %35, %36, %37, %38, %39)
%41 = INDEX(%40, %10)
%42 = LOAD(%41)
%43 = INDEX(%40, %12)
%44 = LOAD(%43)
%45 = INDEX(%40, %14)
%46 = LOAD(%45)
%47 = INDEX(%40, %16)
%48 = LOAD(%47)
%49 = MULACC(%29, %26, %39)
%50 = ADD(%49, %20)
%51 = INDEX(%5, %50)
%52 = LOAD(%51)
%53 = ADD(%49, %22)
%54 = INDEX(%5, %53)
%55 = LOAD(%54)
%56 = ADD(%49, %24)
%57 = INDEX(%5, %56)
%58 = LOAD(%57)
%59 = INDEX(%5, %49)
%60 = LOAD(%59)
%61 = CAST(%52) float16
%62 = CAST(%55) float16
%63 = CAST(%58) float16
%64 = CAST(%60) float16
%65 = MAX(%42, %64)
%66 = MAX(%44, %61)
%67 = MAX(%46, %62)
%68 = MAX(%48, %63)
%69 = STORE(%41, %65)
%70 = STORE(%43, %66)
%71 = STORE(%45, %67)
%72 = STORE(%47, %68)
%73 = GROUP(%69, %70, %71, %72)
%74 = END(%73, %39)
%75 = AFTER(%8, %74)
%76 = INDEX(%75, %10)
%77 = LOAD(%76)
%78 = INDEX(%75, %12)
%79 = LOAD(%78)
%80 = INDEX(%75, %14)
%81 = LOAD(%80)
%82 = INDEX(%75, %16)
%83 = LOAD(%82)
%84 = STACK(%77, %79, %81, %83)
%85 = SHL(%29, %14)
%86 = SHRINK(%2, %85, %7)
%87 = STORE(%86, %84)
%88 = GROUP(%87)
%89 = END(%88, %29)
SINK(%89) KernelInfo(name="half_max")
"""
# the same reduction in float32: MAX has 4 float32 lanes, so every store to acc packs
FLOAT_MAX = HALF_MAX.replace("float16", "float32").replace('"half_max"', '"float_max"')
# HALF_MAX's float16 MAX now runs in float32 (passes/half_max.py: its operands are float16
# narrowed from float32, never a signalling NaN), so its stores pack; over float16 read from
# memory it stays a float16 MAX (a bit select, scalar on x86): the case this file is about
LOADED_MAX = HALF_MAX.replace("ParamArg(1, float32, 1540)", "ParamArg(1, float16, 1540)") \
    .replace('"half_max"', '"half_max_loaded"')


def _vector_reg_accesses(src: str, arch: str) -> list[UOp]:
    g = slp(simplify(lower_weak_dtypes(parse(src))), x86_desc(arch))
    return [u for u in toposort([g]) if u.op is Ops.SHRINK
            and base_buffer(u.src[0]).op is Ops.BUFFER
            and base_buffer(u.src[0]).arg.addrspace is AddrSpace.REG]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_scalar_stores_keep_the_accumulator_scalar(arch: str) -> None:
    assert _vector_reg_accesses(LOADED_MAX, arch) == []


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_half_max_in_float32_packs(arch: str) -> None:
    assert _vector_reg_accesses(HALF_MAX, arch)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_packed_stores_keep_the_accumulator_a_vector(arch: str) -> None:
    assert _vector_reg_accesses(FLOAT_MAX, arch)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("src", [HALF_MAX, FLOAT_MAX, LOADED_MAX],
                         ids=["half", "float", "loaded"])
def test_matches_the_interpreter(src: str, arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(src)
    args = random_inputs(sink)
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
