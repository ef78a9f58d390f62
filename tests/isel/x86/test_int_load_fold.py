"""Integer vector loads folded into the memory operand of their one user (kcc/isel/x86/
analysis.py `foldable_loads`, ivec.py `rm`): ADD/SUB/MUL/AND/OR/XOR/MAX of int lanes read a
load at a place without an index register in place (`vpmulld ymm, ymm, [rsi + 32]`, clang's
code), either operand of one that commutes; a place with an index register (a loop's
`[rsi + rax*4]`) is loaded first: a VEX three-operand op with an indexed memory operand is
two µops anyway and measured slower. Values: the x86 object vs the reference interpreter."""

from __future__ import annotations

import io

import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import V4_FLAGS, X86Target, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference

# constant places: o[0:8] = a[0:8] * 65537, o[8:16] = b[8:16] - a[8:16],
# o[16:24] = a[16:24] + b[16:24], h[0:8] = max(u[0:8], v[0:8]) (uint16)
STRAIGHT = """# kcc-uop 1
%o = PARAM ParamArg(0, int32, 24)
%a = PARAM ParamArg(1, int32, 24)
%b = PARAM ParamArg(2, int32, 24)
%h = PARAM ParamArg(3, uint16, 8)
%u = PARAM ParamArg(4, uint16, 8)
%v = PARAM ParamArg(5, uint16, 8)
%c = CAST(65537) int32
%k = STACK(%c, %c, %c, %c, %c, %c, %c, %c)
%pa0 = SHRINK(%a, 0, 8)
%a0 = LOAD(%pa0)
%m = MUL(%a0, %k)
%po0 = SHRINK(%o, 0, 8)
%s0 = STORE(%po0, %m)
%pa1 = SHRINK(%a, 8, 8)
%a1 = LOAD(%pa1)
%pb1 = SHRINK(%b, 8, 8)
%b1 = LOAD(%pb1)
%d = SUB(%b1, %a1)
%po1 = SHRINK(%o, 8, 8)
%s1 = STORE(%po1, %d)
%pa2 = SHRINK(%a, 16, 8)
%a2 = LOAD(%pa2)
%pb2 = SHRINK(%b, 16, 8)
%b2 = LOAD(%pb2)
%e = ADD(%a2, %b2)
%po2 = SHRINK(%o, 16, 8)
%s2 = STORE(%po2, %e)
%pu = SHRINK(%u, 0, 8)
%xu = LOAD(%pu)
%pv = SHRINK(%v, 0, 8)
%xv = LOAD(%pv)
%mx = MAX(%xu, %xv)
%ph = SHRINK(%h, 0, 8)
%s3 = STORE(%ph, %mx)
%g = GROUP(%s0, %s1, %s2, %s3)
SINK(%g) KernelInfo(name="straight")
"""

# o[i] = a[i] * 65537 over 1024 elements: a loop, its places indexed
LOOP = """# kcc-uop 1
%o = PARAM ParamArg(0, int32, 1024)
%a = PARAM ParamArg(1, int32, 1024)
%r = RANGE(1024) (0, LOOP)
%p = INDEX(%a, %r)
%x = LOAD(%p)
%m = MUL(%x, 65537)
%d = INDEX(%o, %r)
%s = STORE(%d, %m)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="loop")
"""


def _code(text: str, arch: str) -> list[str]:
    """The allocated instructions' text, one a line."""
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch), dump_after="allocate", out=out)
    return [s.split(":", 1)[1].strip() for s in out.getvalue().splitlines()
            if s.split(":", 1)[0].strip().isdigit()]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_constant_places_are_memory_operands(arch: str) -> None:
    code = _code(STRAIGHT, arch)
    for form in ("vpmulld", "vpsubd", "vpaddd", "vpmaxuw"):
        row = next(s for s in code if s.startswith(form))
        assert "[" in row, row                  # reads memory in place
    # a register operand each (SUB's left b1, ADD's a2, MAX's u), the other operand read in
    # place; MUL's constant from .rodata, its load folded
    loads = [s for s in code if s.startswith(("vmovdqu_y_ym", "vmovdqu_x_xm")) and "rip" not in s]
    assert len(loads) == 3, code


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_indexed_places_are_loaded_first(arch: str) -> None:
    code = _code(LOOP, arch)
    mul = [s for s in code if s.startswith("vpmulld")]
    assert mul and all("*" not in s for s in mul), code


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("which", ["straight", "loop"])
def test_matches_the_interpreter(arch: str, which: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(STRAIGHT if which == "straight" else LOOP)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# h[0:8] = b[0:8] < e[0:8] ? a[0:8] : -b[0:8] (where_int's E_64_4, constant places)
WHERE = """# kcc-uop 1
%h = PARAM ParamArg(0, int32, 8)
%a = PARAM ParamArg(1, int32, 8)
%b = PARAM ParamArg(2, int32, 8)
%f = PARAM ParamArg(3, int32, 8)
%pa = SHRINK(%a, 0, 8)
%xa = LOAD(%pa)
%pb = SHRINK(%b, 0, 8)
%xb = LOAD(%pb)
%pf = SHRINK(%f, 0, 8)
%xf = LOAD(%pf)
%c = CMPLT(%xb, %xf)
%n = NEG(%xb)
%w = WHERE(%c, %xa, %n)
%ph = SHRINK(%h, 0, 8)
%s = STORE(%ph, %w)
SINK(%s) KernelInfo(name="where")
"""


def test_an_integer_where_reads_registers() -> None:
    # only the ALU ops above fold an integer load (where_int measured no faster with a
    # VPBLENDMD [mem]); its operand is a register, as before
    code = _code(WHERE, "x86-64-v4")
    blend = [s for s in code if s.startswith("vpblendm")]
    assert blend and all("[" not in s for s in blend), code


# f[0:8] = (0 < a[0:8]) as float32 (cast_bool2f r_64_4), g[0:8] = (a[8:16] == 5) as int32,
# h[0:8] = (0 < b[0:8]) as int32
COMPARES = """# kcc-uop 1
%f = PARAM ParamArg(0, float32, 8)
%g = PARAM ParamArg(1, int32, 8)
%a = PARAM ParamArg(2, int32, 16)
%h = PARAM ParamArg(3, int32, 8)
%b = PARAM ParamArg(4, int32, 8)
%z = CAST(0) int32
%zs = STACK(%z, %z, %z, %z, %z, %z, %z, %z)
%five = CAST(5) int32
%fs = STACK(%five, %five, %five, %five, %five, %five, %five, %five)
%pa0 = SHRINK(%a, 0, 8)
%a0 = LOAD(%pa0)
%lt = CMPLT(%zs, %a0)
%cf = CAST(%lt) float32
%pf = SHRINK(%f, 0, 8)
%s0 = STORE(%pf, %cf)
%pa1 = SHRINK(%a, 8, 8)
%a1 = LOAD(%pa1)
%eq = CMPEQ(%a1, %fs)
%ci = CAST(%eq) int32
%pg = SHRINK(%g, 0, 8)
%s1 = STORE(%pg, %ci)
%pb = SHRINK(%b, 0, 8)
%b0 = LOAD(%pb)
%ltb = CMPLT(%zs, %b0)
%ch = CAST(%ltb) int32
%ph = SHRINK(%h, 0, 8)
%s2 = STORE(%ph, %ch)
%grp = GROUP(%s0, %s1, %s2)
SINK(%grp) KernelInfo(name="cmps")
"""


def test_v4_integer_compare_reads_its_load_in_place() -> None:
    """The opmask compares of the int32 casts read their loads as memory operands; the
    float32 cast's compare is a VEX VPCMPGTD into a lane mask (rule `cast_vex_compare`,
    kcc/isel/x86/kmask.py)."""
    out = io.StringIO()
    run_pipeline(parse(COMPARES), X86Target("x86-64-v4"), dump_after="select", out=out)
    text = out.getvalue()
    cmps = [ln for ln in text.splitlines() if "vpcmpd_k" in ln]
    assert len(cmps) == 2 and all("[" in ln for ln in cmps), text
    assert any("vpcmpgtd" in ln for ln in text.splitlines()), text


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_integer_compares_match_the_interpreter(arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512")
    sink = parse(COMPARES)
    args = random_inputs(sink, 3)
    args[2][8:12] = 5
    args[2][0:3] = [0, -1, 1]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
