"""A STACK taking lane j of one of two vectors at lane j (kcc/isel/x86/shuf.py `blend_imm`,
slp_blend's two-op groups) is one VBLENDPS by an immediate on an xmm or ymm, float32 and
float64 lanes (a 64-bit lane as two 32-bit ones), and 32-bit integer lanes (lanes only
move). Values: the x86 object vs the reference interpreter, at x86-64-v3 and x86-64-v4."""

from __future__ import annotations

import io

import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import V4_FLAGS, X86Target, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference

# The kernels here are small: 512-bit vectors are asked for, so their zmm forms are what is
# selected (by default x86-64-v4 compiles a kernel of little work with ymm at most,
# kcc/targets/x86/arch.py `_narrow_v4`)
W512 = "512"


def _kernel(dt: str, n: int, pick: str) -> str:
    """out = lane j of a+b where pick[j] is 'a', else of a*b."""
    lanes = ", ".join(f"%l{j}" for j in range(n))
    idx = "\n".join(f"%l{j} = INDEX(%{'x' if c == 'a' else 'y'}, {j})"
                    for j, c in enumerate(pick))
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {n})
%a = PARAM ParamArg(1, {dt}, {n})
%b = PARAM ParamArg(2, {dt}, {n})
%pa = SHRINK(%a, 0, {n})
%va = LOAD(%pa)
%pb = SHRINK(%b, 0, {n})
%vb = LOAD(%pb)
%x = ADD(%va, %vb)
%y = MUL(%va, %vb)
{idx}
%z = STACK({lanes})
%po = SHRINK(%o, 0, {n})
%st = STORE(%po, %z)
SINK(%st) KernelInfo(name="blend")
"""


CASES = [("float32", 8, "aabbabba"), ("float32", 4, "abab"), ("float64", 4, "abba"),
         ("float64", 2, "ba"), ("int32", 8, "babababa")]


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt,n,pick", CASES)
def test_one_vblendps(arch: str, dt: str, n: int, pick: str) -> None:
    out = io.StringIO()
    target = X86Target(arch, vector_width=W512)
    run_pipeline(parse(_kernel(dt, n, pick)), target, dump_after="allocate", out=out)
    text = out.getvalue()
    assert text.count("vblendps") == 1, text
    assert not any(w in text for w in ("vshufps", "vinsert", "vextract", "vperm")), text


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt,n,pick", CASES)
def test_matches_the_interpreter(arch: str, dt: str, n: int, pick: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_kernel(dt, n, pick))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        got = compile_and_run(sink, args, arch, vector_width=W512)
        assert_same(sink, got, reference(sink, args))


ZMM_CASES = [("float32", 16, "aabbaabbaabbaabb"), ("float64", 8, "abbaabab")]


@pytest.mark.parametrize("dt,n,pick", ZMM_CASES)
def test_a_zmm_blend_is_one_vblendmps_by_a_hoisted_mask(dt: str, n: int, pick: str) -> None:
    # x86-64-v4 zmm (blend_mask): no VBLENDPS of a zmm, so one VBLENDMPS/PD by an opmask
    # instead of a VPERMI2PS and its index vector
    out = io.StringIO()
    target = X86Target("x86-64-v4", vector_width=W512)
    run_pipeline(parse(_kernel(dt, n, pick)), target, dump_after="allocate",
                 out=out)
    text = out.getvalue()
    assert text.count("vblendmp") == 1 and text.count("kmovw") == 1, text
    assert not any(w in text for w in ("vshufps", "vinsert", "vextract", "vperm")), text
    bits = sum(1 << j for j, c in enumerate(pick) if c == "b")
    assert f"{bits}" in text or f"{bits:#x}" in text, text
    if all(f in cpu_flags() for f in V4_FLAGS):
        sink = parse(_kernel(dt, n, pick))
        for seed in (0, 1):
            args = random_inputs(sink, seed)
            got = compile_and_run(sink, args, "x86-64-v4", vector_width=W512)
            assert_same(sink, got, reference(sink, args))
