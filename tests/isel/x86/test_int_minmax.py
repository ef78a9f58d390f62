"""Integer lane MAX/MIN as one VPMAX/VPMIN (kcc/isel/x86/ivec.py ivec_minmax and MAX on
byte/word lanes; issue 24, item 2: the sweep's uint16_max r_4_8_8 ran 2.5x clang, each
tinygrad max `x < y ? y : x` a compare and a blend).

The oracle is the reference interpreter on each integer dtype's extremes; the rows' bytes
are llvm-mc's (golden/x86/avx_int.s, evex_vl.s)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from x86_util import ARCHS, assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]


def _kernel(dt: str, n: int, pick: str) -> str:
    """out[i] = WHERE(x[i] < y[i], pick) over n-lane vectors of dt (pick "y, x": max)."""
    yes, no = ("%y", "%x") if pick == "max" else ("%x", "%y")
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, 64)
%a = PARAM ParamArg(1, {dt}, 64)
%b = PARAM ParamArg(2, {dt}, 64)
%i = RANGE({64 // n}) (0, LOOP)
%s = MUL(%i, {n})
%pa = SHRINK(%a, %s, {n})
%x = LOAD(%pa)
%pb = SHRINK(%b, %s, {n})
%y = LOAD(%pb)
%c = CMPLT(%x, %y)
%w = WHERE(%c, {yes}, {no})
%po = SHRINK(%o, %s, {n})
%st = STORE(%po, %w)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="mm")
"""


def _lanes(dt: str) -> int:
    return 16 // np.dtype(dt).itemsize


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("pick", ["max", "min"])
def test_int_max_min_match_the_interpreter(arch: str, dt: str, pick: str) -> None:
    sink = parse(_kernel(dt, _lanes(dt), pick))
    info = np.iinfo(dt)
    edge = np.array([info.min, info.max, 0, 1, -1 if info.min else 2, info.min + 1,
                     info.max - 1, 7], dtype=np.int64).astype(dt)
    rng = np.random.default_rng(3)
    a = np.concatenate([np.repeat(edge, 8), ]).astype(dt)
    b = np.tile(edge, 8).astype(dt)
    a[::5] = rng.integers(info.min, info.max, 13, endpoint=True).astype(dt)
    args = [np.zeros(64, dt), a, b]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt", DTYPES)
def test_int_max_is_one_instruction(arch: str, dt: str) -> None:
    out = io.StringIO()
    run_pipeline(parse(_kernel(dt, _lanes(dt), "max")), X86Target(arch),
                 dump_after="select", out=out)
    text = out.getvalue()
    sfx = {1: "b", 2: "w", 4: "d"}[np.dtype(dt).itemsize]
    sign = "u" if dt.startswith("u") else "s"
    assert f"vpmax{sign}{sfx}_" in text, text       # (widen may make it a ymm)
    assert "blend" not in text and "vpcmpgt" not in text and "vpcmplt" not in text, text
