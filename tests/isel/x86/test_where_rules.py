"""x86 WHERE selections that replace a compare and a blend (kcc/isel/x86/alu.py `where`):
`WHERE(a < b, b, a)` is one vmaxps (MAX's own definition), a WHERE with +0.0 as the false
arm is one vandps with the mask. Checked against the reference interpreter on the values
where the rules could go wrong (NaN in either operand, zeros of both signs, infinities), and
on the selected code; the near-misses (arms swapped, -0.0) keep the blend."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.targets.pipeline import run_pipeline
from kcc.targets.x86.target import X86Target
from x86_util import assert_same, compile_and_run, reference

SPECIAL = np.array([np.nan, -np.nan, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 3.5, -2.25,
                    1e-40, -1e-40], np.float32)

TEXT = """# kcc-uop 1
%y = PARAM ParamArg(0, DT, 144)
%a = PARAM ParamArg(1, DT, 144)
%b = PARAM ParamArg(2, DT, 144)
%i = RANGE(36) (0, LOOP)
%i4 = MUL(%i, 4)
%pa = SHRINK(%a, %i4, 4)
%va = LOAD(%pa)
%pb = SHRINK(%b, %i4, 4)
%vb = LOAD(%pb)
%c = CMPLT(%va, %vb)
%r = WHERE(%c, ARMS)
%py = SHRINK(%y, %i4, 4)
%st = STORE(%py, %r)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="w")
"""


def _ops(text: str) -> list[str]:
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(), dump_after="select", out=out)
    return [s.split(":", 1)[1].split()[0] for s in out.getvalue().splitlines()
            if s.split(":", 1)[0].strip().isdigit()]


def _args(dt: str) -> list:
    # every pair of special values, in both orders
    x, y = np.meshgrid(SPECIAL, SPECIAL)
    return [np.zeros(144, dt), x.reshape(-1).astype(dt), y.reshape(-1).astype(dt)]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("arms,rule", [("%vb, %va", "vmax"), ("%va, %vb", "vmin")])
def test_max_pattern_is_exact(dt: str, arms: str, rule: str) -> None:
    """WHERE(a < b, b, a) is VMAX(b, a), WHERE(a < b, a, b) VMIN(a, b) (x86_fmin.fmin_where):
    no compare or blend, every pair of special values as the interpreter gives them."""
    text = TEXT.replace("DT", dt).replace("ARMS", arms)
    ops = _ops(text)
    assert any(o.startswith(rule) for o in ops), ops
    if rule in ("vmax", "vmin"):
        assert not any(o.startswith(("vcmp", "vblendv")) for o in ops), ops
    sink = parse(text)
    args = _args(dt)
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("zero,rule", [("0.0", "vandp"), ("-0.0", "vblendv")])
def test_a_positive_zero_false_arm_is_an_and(dt: str, zero: str, rule: str) -> None:
    text = TEXT.replace("DT", dt).replace(
        "%r = WHERE(%c, ARMS)", f"%z = CAST({zero}) {dt}\n%z4 = STACK(%z, %z, %z, %z)\n"
        "%r = WHERE(%c, %va, %z4)")
    ops = _ops(text)
    assert any(o.startswith(rule) for o in ops), ops
    sink = parse(text)
    args = _args(dt)
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))
