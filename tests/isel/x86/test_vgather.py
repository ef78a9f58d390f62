"""A STACK of 16 float32 loads at the lanes of an int32 index vector (kcc/passes/
widen_gather.py) is one VGATHERDPS zmm {k} on x86-64-v4 (kcc/isel/x86/vgather.py): its lanes
match the interpreter, gated-off lanes whose addresses lie far outside the buffer are not read
(they would fault), and a non-zero alt fills them."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86, disasm_object
from x86_util import HAS_V4, assert_same, compile_and_run, random_inputs, reference

# The kernels here are small: 512-bit vectors are asked for, so their zmm forms are what is
# selected (by default x86-64-v4 compiles a kernel of little work with ymm at most,
# kcc/targets/x86/arch.py `_narrow_v4`)
W512 = "512"

V4 = "x86-64-v4"


def _kernel(alt: str = "0.0", gated: bool = True, n: int = 100) -> str:
    """out[i] = f[i] < 0 ? a[idx[i]] : alt (idx's int32 bits loaded as float32); ungated:
    a[idx[i]] + f[i]."""
    load = ("%zero = CAST(0.0) float32\n%g = CMPLT(%fi, %zero)\n"
            "%z = CAST({alt}) float32\n%l = LOAD(%pl, %z, %g)") \
        if gated else "%l0 = LOAD(%pl)\n%l = ADD(%l0, %fi)"
    load = load.replace("{alt}", alt)
    return f"""# kcc-uop 1
%out = PARAM ParamArg(0, float32, {n})
%idx = PARAM ParamArg(1, float32, {n})
%f = PARAM ParamArg(2, float32, {n})
%a = PARAM ParamArg(3, float32, 50)
%i = RANGE({n}) (0, WEAK)
%pj = INDEX(%idx, %i)
%jf = LOAD(%pj)
%j = BITCAST(%jf) int32
%pf = INDEX(%f, %i)
%fi = LOAD(%pf)
%pl = INDEX(%a, %j)
{load}
%po = INDEX(%out, %i)
%st = STORE(%po, %l)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def _args(sink, seed: int, n: int = 100, gated: bool = True) -> list:
    """Lanes with f < 0 index inside a; the others 2^30 or -2^29 elements away (unmapped
    memory: a read there faults) unless the kernel is ungated."""
    args = random_inputs(sink, seed)
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(n).astype(np.float32)
    inside = rng.integers(0, 50, n).astype(np.int32)
    outside = np.where(rng.integers(0, 2, n) == 1, 1 << 30, -(1 << 29)).astype(np.int32)
    idx = np.where(f < 0, inside, outside) if gated else inside
    args[1], args[2] = idx.astype(np.int32).view(np.float32), f
    return args


def _asm(text: str, arch: str) -> str:
    return disasm_object(compile_x86([parse(text, "k.uop")], arch, vector_width=W512)[0])


@pytest.mark.parametrize("alt", ["0.0", "2.5"])
@pytest.mark.parametrize("n", [100, 16, 37])
def test_gated_gather_at_an_index_vector(alt: str, n: int) -> None:
    text = _kernel(alt, n=n)
    asm = _asm(text, V4)
    assert "vgatherdps" in asm and "vpextrd" not in asm
    assert "zmm" in asm.split("vgatherdps", 1)[1].split("\n", 1)[0]
    if HAS_V4:
        sink = parse(text, "k.uop")
        for seed in (0, 1):
            args = _args(sink, seed, n)
            got = compile_and_run(sink, args, V4, vector_width=W512)
            assert_same(sink, got, reference(sink, args))


def test_ungated_gather_at_an_index_vector() -> None:
    text = _kernel(gated=False)
    assert "vgatherdps" in _asm(text, V4)
    if HAS_V4:
        sink = parse(text, "k.uop")
        args = _args(sink, 2, gated=False)
        assert_same(sink, compile_and_run(sink, args, V4, vector_width=W512), reference(sink, args))


def test_v3_keeps_scalar_loads() -> None:
    text = _kernel()
    assert "vgatherdps" not in _asm(text, "x86-64-v3")
    sink = parse(text, "k.uop")
    args = _args(sink, 3)
    assert_same(sink, compile_and_run(sink, args, "x86-64-v3"), reference(sink, args))


# cumsum's shape at 8 lanes (an int32 compare of the counter gates each lane; no int32 x 16
# compare on v4): out[i] = 8 < i ? a[((i + 247 >> 8) - 1) * 2^28 + (i & 7)] : 0, whose
# gated-off lanes (i <= 8) index 2^28 elements before a (a read there faults)
COUNTER_GATED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 200)
%a = PARAM ParamArg(1, float32, 8)
%z = CAST(0.0) float32
%i = RANGE(200) (0, WEAK)
%s = ADD(%i, 247)
%r = SHR(%s, 8)
%r1 = SUB(%r, 1)
%far = MUL(%r1, 268435456)
%lo = AND(%i, 7)
%at = ADD(%far, %lo)
%pl = INDEX(%a, %at)
%g = CMPLT(8, %i)
%l = LOAD(%pl, %z, %g)
%po = INDEX(%out, %i)
%st = STORE(%po, %l)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def test_counter_gated_gather_of_8_lanes() -> None:
    asm = _asm(COUNTER_GATED, V4)
    line = asm.split("vgatherdps", 1)[1].split("\n", 1)[0]
    assert "ymm" in line and "vpextrd" not in asm
    if HAS_V4:
        sink = parse(COUNTER_GATED, "k.uop")
        for seed in (0, 1):
            args = random_inputs(sink, seed)
            got = compile_and_run(sink, args, V4, vector_width=W512)
            assert_same(sink, got, reference(sink, args))
