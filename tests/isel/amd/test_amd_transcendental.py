"""float32 EXP2 and LOG2 on AMD are v_exp_f32 / v_log_f32 with the subnormal scaling of
kcc/isel/amd/alu.py; in kcc's emulator (which computes the instructions correctly rounded, so
this checks the scaling and the specials, not the hardware's documented 1 ulp) on the edges:
the exp2 scaling threshold -126 and the subnormal results down to underflow, overflow at 128,
log2 of subnormals (each binade), ±0, negatives, ±inf and NaN. Within 1 ulp of numpy's float64
result rounded to float32 (the scaled paths round twice), specials exactly."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.manifest import check_launch

N = 256


def _run(op: str, arch: str, x: np.ndarray) -> np.ndarray:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    sink = parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {N})
%x = PARAM ParamArg(1, float32, {N})
%l = SPECIAL({N}) "lidx0"
%i = INDEX(%x, %l)
%v = LOAD(%i)
%e = {op}(%v) : float32
%j = INDEX(%o, %l)
%s = STORE(%j, %e)
SINK(%s) KernelInfo(name="k")
""")
    (code,) = compile_amd_code([sink], arch)
    assert any(f"v_{op.lower()[:3]}_f32" in line for line in code.asm)
    args = [np.zeros(N, np.float32), x.astype(np.float32)]
    emulate(hsaco([code]), code.desc, check_launch(code.desc, args))
    return args[0]


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of want's float32 spacing (finite values)."""
    sp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / sp


def _check(got: np.ndarray, exact: np.ndarray) -> None:
    with np.errstate(over="ignore"):
        want = exact.astype(np.float32)
    fin = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    bad = _ulps(got[fin], want[fin]) > 1
    assert not bad.any(), list(zip(got[fin][bad][:5], want[fin][bad][:5]))


def _fill(vals: list[float], rng: np.random.Generator, lo: float, hi: float) -> np.ndarray:
    x = np.array(vals, np.float32)
    return np.concatenate([x, rng.uniform(lo, hi, N - len(x)).astype(np.float32)])


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_exp2_scales_subnormal_results(arch: str) -> None:
    rng = np.random.default_rng(1)
    edge = [-126.0, np.nextafter(np.float32(-126), np.float32(0)),
            np.nextafter(np.float32(-126), np.float32(-200)), -127.5, -140.25, -149.0,
            -149.5, -150.0, -151.0, -200.0, 127.99, 128.0, 0.0, -0.0, 1e-30, -1e-40,
            np.inf, -np.inf, np.nan, 1.0, 0.5, -1.0]
    x = _fill(edge, rng, -155.0, 130.0)
    got = _run("EXP2", arch, x)
    _check(got, np.exp2(x.astype(np.float64)))
    assert got[list(edge).index(-np.inf)] == 0 and got[list(edge).index(-0.0)] == 1


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_log2_scales_subnormal_arguments(arch: str) -> None:
    rng = np.random.default_rng(2)
    tiny = np.float32(2.0 ** -126)
    edge = [float(np.float32(2.0 ** -k)) for k in range(120, 150)] + \
        [tiny, np.nextafter(tiny, np.float32(0)), 1e-45, 0.0, -0.0, -1.0, -1e-40, 1.0, 2.0,
         np.inf, -np.inf, np.nan, 3.4e38]
    x = np.concatenate([np.array(edge, np.float32),
                        (rng.integers(1, 1 << 23, 80).astype(np.uint32)).view(np.float32),
                        np.exp2(rng.uniform(-149, 128, N - len(edge) - 80)).astype(np.float32)])
    got = _run("LOG2", arch, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log2(x.astype(np.float64))
    _check(got, want)
