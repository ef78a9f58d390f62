"""SIN over the whole float32 and float64 ranges (Cody-Waite below SIN_RANGE, Payne-Hanek
above): within 2 ulp of the long-double reference (glibc's sinl, x87 80-bit with its own full
range reduction), checked on the decomposed graph in the interpreter and on x86."""

from __future__ import annotations

import numpy as np

from kcc.frontend.parser import parse
from kcc.ir.interp import run as interp_run
from kcc.passes.decompose import decompose
from kcc.targets.x86.arch import X86_AVX2
from x86_util import compile_and_run

N = 4096
SRC = f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {N})
%a = PARAM ParamArg(1, float32, {N})
%i = RANGE({N}) (0, LOOP)
%ai = INDEX(%a, %i)
%v = LOAD(%ai)
%s = SIN(%v)
%oi = INDEX(%o, %i)
%st = STORE(%oi, %s)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="sin32")
"""


def _inputs(seed: int) -> np.ndarray:
    """Magnitudes log-uniform over the whole float32 range, both signs, plus special values
    and float32 neighbours of large multiples of pi/2 (where reduction loses most)."""
    rng = np.random.default_rng(seed)
    x = (2.0 ** rng.uniform(-20, 127.99, N) * rng.choice([-1, 1], N)).astype(np.float32)
    k = rng.integers(1, 2 ** 40, 256).astype(np.float64)
    near = (k * (np.pi / 2)).astype(np.float32)
    x[:256] = np.nextafter(near, np.float32(np.inf) * rng.choice([-1, 1], 256))
    x[256:266] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4028235e38, -3.4028235e38,
                  1.6e9, 1.7e9, 2.0 ** 30]
    return x


def _ulp_error(got: np.ndarray, x: np.ndarray) -> float:
    with np.errstate(invalid="ignore"):
        ref = np.sin(x.astype(np.longdouble)).astype(np.float32)
    fin = np.isfinite(x)
    assert np.isnan(got[~fin]).all()                    # sin(±inf) = sin(nan) = nan
    err = np.abs(got[fin].astype(np.float64) - ref[fin].astype(np.float64))
    return float((err / np.spacing(np.abs(ref[fin])).astype(np.float64)).max())


def test_decomposed_sin_full_range_in_interpreter() -> None:
    sink = decompose(parse(SRC), X86_AVX2)
    for seed in (0, 1):
        x = _inputs(seed)
        out = np.zeros(N, np.float32)
        interp_run(sink, [out, x])
        assert _ulp_error(out, x) <= 2.0


def test_sin_full_range_on_x86() -> None:
    sink = parse(SRC)
    x = _inputs(2)
    got = compile_and_run(sink, [np.zeros(N, np.float32), x])[0]
    assert _ulp_error(got, x) <= 2.0


SRC64 = SRC.replace("float32", "float64").replace("sin32", "sin64")


def _inputs64(seed: int) -> np.ndarray:
    """Magnitudes log-uniform over the whole float64 range, neighbours of kπ/2 (k < 2^50),
    and the special values."""
    rng = np.random.default_rng(seed)
    x = 2.0 ** rng.uniform(-20, 1023.99, N) * rng.choice([-1, 1], N)
    k = rng.integers(1, 2 ** 50, 256).astype(np.float64)
    x[:256] = np.nextafter(k * (np.pi / 2), np.inf * rng.choice([-1, 1], 256))
    x[256:263] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.7976931348623157e308, 2.0 ** 31]
    return x


def _ulp_error64(got: np.ndarray, x: np.ndarray) -> float:
    with np.errstate(invalid="ignore"):
        ref = np.sin(x.astype(np.longdouble))
    fin = np.isfinite(x)
    assert np.isnan(got[~fin]).all()
    err = np.abs(got[fin].astype(np.longdouble) - ref[fin])
    return float((err / np.spacing(np.abs(ref[fin]).astype(np.float64))).max())


def test_float64_sin_full_range_on_x86() -> None:
    x = _inputs64(3)
    got = compile_and_run(parse(SRC64), [np.zeros(N), x])[0]
    assert _ulp_error64(got, x) <= 2.0


def test_float64_sin_full_range_in_interpreter() -> None:
    sink = decompose(parse(SRC64), X86_AVX2)
    x = _inputs64(4)
    out = np.zeros(N)
    interp_run(sink, [out, x])
    assert _ulp_error64(out, x) <= 2.0
