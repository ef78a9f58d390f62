"""x86 vector selections added for tinygrad's kernels, against the reference interpreter:
int32 ↔ float32 CAST and BITCAST of whole vectors (CVTTPS2DQ with the saturation and NaN
fix-ups, CVTDQ2PS, a BITCAST that moves nothing), and a float64 splat filling a zmm."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.devectorize import devectorize
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.targets.x86.target import V4_FLAGS, cpu_flags, x86_desc

SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 2.0 ** 31, -2.0 ** 31, 2147483520.0, -2147483904.0,
           -0.0, 0.0, 0.9, -0.9, 1e10, -1e10, 123456.7, -3.5]


def _cast_kernel(n: int) -> str:
    return f"""# kcc-uop 1
%out  = PARAM ParamArg(0, int32, 16)
%back = PARAM ParamArg(1, float32, 16)
%bits = PARAM ParamArg(2, float32, 16)
%in   = PARAM ParamArg(3, float32, 16)
%i    = RANGE({16 // n}) (0, LOOP)
%s    = MUL(%i, {n})
%p    = SHRINK(%in, %s, {n})
%v    = LOAD(%p)
%c    = CAST(%v) int32
%o0   = SHRINK(%out, %s, {n})
%st0  = STORE(%o0, %c)
%f    = CAST(%c) float32
%o1   = SHRINK(%back, %s, {n})
%st1  = STORE(%o1, %f)
%vb   = BITCAST(%v) int32
%sum  = ADD(%vb, %c)
%b    = BITCAST(%sum) float32
%o2   = SHRINK(%bits, %s, {n})
%st2  = STORE(%o2, %b)
%g    = GROUP(%st0, %st1, %st2)
%e    = END(%g, %i)
SINK(%e) KernelInfo(name="casts")
"""


@pytest.mark.parametrize("n", [4, 8])
def test_int32_float32_vector_casts_match_the_interpreter(n: int) -> None:
    sink = parse(_cast_kernel(n), "casts.uop")
    args = [np.zeros(16, np.int32), np.zeros(16, np.float32), np.zeros(16, np.float32),
            np.array(SPECIAL, np.float32)]
    want = reference(sink, args)
    got = compile_and_run(sink, args)
    assert np.array_equal(got[0], want[0])                    # saturated, NaN -> 0
    assert np.array_equal(got[1], want[1])
    assert np.array_equal(got[2].view(np.uint32), want[2].view(np.uint32))
    assert list(want[0][:6]) == [0, 0, 2**31 - 1, -2**31, 2**31 - 1, -2**31]
    g = devectorize(lower_weak_dtypes(sink), x86_desc("x86-64-v3"))
    assert any(u.op is Ops.CAST and u.shape == (n,) for u in toposort([g]))


@pytest.mark.skipif(not all(f in cpu_flags() for f in V4_FLAGS),
                    reason="this CPU has no AVX-512 (x86-64-v4 code cannot run here)")
def test_float64_splat_fills_a_zmm() -> None:
    sink = parse("""# kcc-uop 1
%o  = PARAM ParamArg(0, float64, 8)
%a  = PARAM ParamArg(1, float64, 8)
%p  = SHRINK(%a, 0, 8)
%v  = LOAD(%p)
%x  = INDEX(%v, 3)
%s  = STACK(%x, %x, %x, %x, %x, %x, %x, %x)
%q  = SHRINK(%o, 0, 8)
%st = STORE(%q, %s)
SINK(%st) KernelInfo(name="splat")
""", "splat.uop")
    args = [np.zeros(8), np.arange(8.0) + 0.5]
    assert np.array_equal(compile_and_run(sink, args, "x86-64-v4")[0], np.full(8, 3.5))
