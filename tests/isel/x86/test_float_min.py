"""tinygrad's float minimum, NEG(MAX(NEG a, NEG b)), as one VMINSS/VMINPS (kcc/isel/x86/vec.py
neg_max_neg; issue 24, item 2: sort's and topk's bitonic steps E_4_2 ran 0.54x clang, each
minimum three sign-flip XORs, each with its -0.0 reloaded, around a VMAXSS).

MAX(x, y) = x < y ? y : x, so the whole is (b < a) ? b : a: exact for NaN (either one gives a)
and signed zeros (a), and the chosen operand keeps its bits. The oracle is the reference
interpreter, compared bit for bit on NaNs of both signs and payloads, ±0, ±inf, subnormals."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import ARCHS, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

N = 64


def _kernel(dt: str, n: int, swap: bool = False) -> str:
    """out[i] = -max(-x[i], -y[i]) over n-lane vectors of dt (n = 1: scalars)."""
    place = (lambda p: f"SHRINK({p}, %s, {n})") if n > 1 else (lambda p: f"INDEX({p}, %s)")
    na, nb = ("%nb", "%na") if swap else ("%na", "%nb")
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {N})
%a = PARAM ParamArg(1, {dt}, {N})
%b = PARAM ParamArg(2, {dt}, {N})
%i = RANGE({N // n}) (0, LOOP)
%s = MUL(%i, {n})
%pa = {place('%a')}
%x = LOAD(%pa)
%pb = {place('%b')}
%y = LOAD(%pb)
%na = NEG(%x)
%nb = NEG(%y)
%m = MAX({na}, {nb})
%w = NEG(%m)
%po = {place('%o')}
%st = STORE(%po, %w)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="negmaxneg")
"""


def _inputs(dt: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of NaNs (two payloads, both signs), ±0, ±inf, a subnormal, ordinary values."""
    u = np.uint32 if dt == "float32" else np.uint64
    bits = (np.array([0x7FC00001, 0xFFC00002], u) if dt == "float32" else
            np.array([0x7FF8000000000001, 0xFFF8000000000002], u))
    nan = bits.view(dt)
    edge = np.concatenate([nan, np.array([0.0, -0.0, np.inf, -np.inf, 1e-40 if dt ==
                                          "float32" else 1e-310, -1.5], dt)])
    a = np.repeat(edge, len(edge))[:N].astype(dt)
    b = np.tile(edge, len(edge))[:N].astype(dt)
    return a, b


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("swap", [False, True])
def test_float_min_matches_the_interpreter_bit_for_bit(arch: str, dt: str, n: int,
                                                       swap: bool) -> None:
    sink = parse(_kernel(dt, n, swap))
    a, b = _inputs(dt)
    args = [np.zeros(N, dt), a, b]
    got = compile_and_run(sink, args, arch)[0]
    want = reference(sink, args)[0]
    u = np.uint32 if dt == "float32" else np.uint64
    assert np.array_equal(got.view(u), want.view(u)), (got, want)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 4])
def test_float_min_is_one_vmin(arch: str, dt: str, n: int) -> None:
    out = io.StringIO()
    run_pipeline(parse(_kernel(dt, n)), X86Target(arch), dump_after="allocate", out=out)
    text = out.getvalue()
    assert "vmin" in text, text
    assert "vmax" not in text and "vxorp" not in text, text


def _chain(dt: str, n: int, shared: bool = False) -> str:
    """out[i] = -max(max(max(-a, -b), -c), -d) (min_nan's r_8_4), lanes of n; with
    ``shared`` the inner max is stored too (then it is needed, and stays)."""
    place = (lambda p: f"SHRINK({p}, %s, {n})") if n > 1 else (lambda p: f"INDEX({p}, %s)")
    extra = "%po2 = " + place("%o2") + "\n%st2 = STORE(%po2, %m1)\n" if shared else ""
    group = "%g = GROUP(%st, %st2)" if shared else "%g = GROUP(%st)"
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {N})
%a = PARAM ParamArg(1, {dt}, {N})
%b = PARAM ParamArg(2, {dt}, {N})
%o2 = PARAM ParamArg(3, {dt}, {N})
%i = RANGE({N // n}) (0, LOOP)
%s = MUL(%i, {n})
%pa = {place('%a')}
%x = LOAD(%pa)
%pb = {place('%b')}
%y = LOAD(%pb)
%z = ADD(%x, %y)
%q = MUL(%x, %y)
%na = NEG(%x)
%nb = NEG(%y)
%nc = NEG(%z)
%nd = NEG(%q)
%m1 = MAX(%na, %nb)
%m2 = MAX(%m1, %nc)
%m3 = MAX(%nd, %m2)
%w = NEG(%m3)
%po = {place('%o')}
%st = STORE(%po, %w)
{extra}{group}
%e = END(%g, %i)
SINK(%e) KernelInfo(name="minchain")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("shared", [False, True])
def test_min_chain_matches_the_interpreter_bit_for_bit(arch: str, dt: str, n: int,
                                                       shared: bool) -> None:
    sink = parse(_chain(dt, n, shared))
    a, b = _inputs(dt)
    args = [np.zeros(N, dt), a, b, np.zeros(N, dt)]
    got = compile_and_run(sink, args, arch)
    want = reference(sink, args)
    u = np.uint32 if dt == "float32" else np.uint64
    for g, w in zip(got, want):
        assert np.array_equal(g.view(u), w.view(u)), (g, w)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_min_chain_is_three_vmins(arch: str) -> None:
    out = io.StringIO()
    run_pipeline(parse(_chain("float32", 4)), X86Target(arch), dump_after="allocate", out=out)
    text = out.getvalue()
    # three a stored vector (the loop's blocks may be straight-line, passes/unroll_widened)
    stores = text.count("vmovups_m")
    assert stores and text.count("vminps") == 3 * stores, text
    assert "vmax" not in text and "vxorp" not in text, text


def _where_min(dt: str, n: int) -> str:
    """out[i] = x[i] < y[i] ? x[i] : y[i] over n-lane vectors of dt (exp2's upper clamp)."""
    place = (lambda p: f"SHRINK({p}, %s, {n})") if n > 1 else (lambda p: f"INDEX({p}, %s)")
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {N})
%a = PARAM ParamArg(1, {dt}, {N})
%b = PARAM ParamArg(2, {dt}, {N})
%i = RANGE({N // n}) (0, LOOP)
%s = MUL(%i, {n})
%pa = {place('%a')}
%x = LOAD(%pa)
%pb = {place('%b')}
%y = LOAD(%pb)
%c = CMPLT(%x, %y)
%w = WHERE(%c, %x, %y)
%po = {place('%o')}
%st = STORE(%po, %w)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="wheremin")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 4, 8])
def test_where_min_is_one_vmin_bit_for_bit(arch: str, dt: str, n: int) -> None:
    """WHERE(a < b, a, b) is `vmin a, b` (fmin_where): NaN either side and equal zeros give b,
    as the select does; no compare and blend are left."""
    sink = parse(_where_min(dt, n))
    a, b = _inputs(dt)
    args = [np.zeros(N, dt), a, b]
    got = compile_and_run(sink, args, arch)[0]
    want = reference(sink, args)[0]
    u = np.uint32 if dt == "float32" else np.uint64
    assert np.array_equal(got.view(u), want.view(u)), (got, want)
    out = io.StringIO()
    run_pipeline(sink, X86Target(arch), dump_after="allocate", out=out)
    text = out.getvalue()
    assert "vmin" in text and "vcmp" not in text and "blend" not in text, text
