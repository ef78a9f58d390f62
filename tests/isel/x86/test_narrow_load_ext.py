"""An 8/16-bit integer loaded by MOVZX/MOVSX r32 is already its value extended to 32 bits
(kcc/isel/x86/select.py `load`, `_ext`): a conversion or a 32-bit use of it emits no second
MOVZX/MOVSX of the register (uint8_mean's r_9_37 and embedding's E_8_5 did, one an element);
a signed one widened to 64 bits still is (MOVSX r32 leaves bits 63:32 zero). Values: the x86
object vs the reference interpreter, at x86-64-v3 and x86-64-v4."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import V4_FLAGS, X86Target, cpu_flags
from x86_util import assert_same, compile_and_run, random_inputs, reference


def _kernel(src: str, dst: str) -> str:
    """out[3i] = (dst)x[5i] for i < 300: a scalar loop (strided: not widened)."""
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dst}, 900)
%x = PARAM ParamArg(1, {src}, 1500)
%r = RANGE(300) (0, LOOP)
%i = MUL(%r, 5)
%p = INDEX(%x, %i)
%v = LOAD(%p)
%c = CAST(%v) {dst}
%j = MUL(%r, 3)
%d = INDEX(%o, %j)
%s = STORE(%d, %c)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="narrow")
"""


CASES = [("uint8", "float32"), ("int8", "float32"), ("uint16", "float32"),
         ("int16", "int32"), ("uint8", "int64"), ("int8", "int64")]


def _code(text: str) -> list[str]:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target("x86-64-v3"), dump_after="select", out=out)
    return [s.split(":", 1)[1].strip() for s in out.getvalue().splitlines()
            if s.split(":", 1)[0].strip().isdigit()]


@pytest.mark.parametrize("src,dst", CASES[:4])
def test_one_extension_an_element(src: str, dst: str) -> None:
    code = _code(_kernel(src, dst))
    ext = [s for s in code if s.startswith(("movzx", "movsx"))]
    assert len(ext) == 1 and "[" in ext[0], code       # the load's own, nothing after it


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("src,dst", CASES)
def test_matches_the_interpreter(arch: str, src: str, dst: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_kernel(src, dst))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


# out[i] = (float)(uint8)x[i] for int8 x: the CAST to uint8 shares the loaded register, which
# MOVSX sign-extended; its conversion must zero-extend (fuzz0002 of scripts/output_hashes.py
# gave -0.31 for 173.0 when the loaded register was taken as already extended)
REINTERPRETED = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 900)
%x = PARAM ParamArg(1, int8, 1500)
%r = RANGE(300) (0, LOOP)
%i = MUL(%r, 5)
%p = INDEX(%x, %i)
%v = LOAD(%p)
%u = CAST(%v) uint8
%c = CAST(%u) float32
%j = MUL(%r, 3)
%d = INDEX(%o, %j)
%s = STORE(%d, %c)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="reinterpreted")
"""


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_value_reinterpreted_is_extended_as_its_own_dtype(arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(REINTERPRETED)
    x = np.arange(-128, 128, dtype=np.int8)
    args = [np.zeros(900, np.float32), np.resize(x, 1500)]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
