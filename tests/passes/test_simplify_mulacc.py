"""simplify's mulacc_int: an integer MULACC of two constants and a value is the value plus
their product, wrapped to the dtype (the interpreter on the graph before and after is the
oracle), and a float MULACC is left alone (a*b + c rounds once there)."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.interp import run
from kcc.passes.simplify import simplify

KERNEL = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, 8)
%x = PARAM ParamArg(1, {dt}, 8)
%n = CAST(8) int32
%i = RANGE(%n) (0, LOOP)
%p = INDEX(%x, %i)
%v = LOAD(%p)
%a = CAST({a}) {dt}
%b = CAST({b}) {dt}
%m = MULACC(%a, %b, %v)
%op = INDEX(%out, %i)
%s = STORE(%op, %m)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


@pytest.mark.parametrize("dt, a, b", [("int32", 1, 4), ("int32", 0, 77), ("int8", 100, 3),
                                      ("uint16", 300, 300), ("int64", -(1 << 40), 5000)])
def test_constant_product_folds_to_an_add(dt: str, a: int, b: int) -> None:
    sink = parse(KERNEL.format(dt=dt, a=a, b=b), "k.uop")
    after = simplify(sink)
    assert not [u for u in after.toposort() if u.op is Ops.MULACC]
    info = np.iinfo(dt)
    x = np.array([info.min, info.max, -1 if info.min else 1, 0, 1, 7, 100, info.max // 3], dt)
    outs = []
    for g in (sink, after):
        out = np.zeros(8, dt)
        run(g, [out, x.copy()])
        outs.append(out)
    assert (outs[0] == outs[1]).all()


def test_float_mulacc_stays() -> None:
    sink = parse(KERNEL.format(dt="float32", a=1.5, b=4.0), "k.uop")
    assert [u for u in simplify(sink).toposort() if u.op is Ops.MULACC]
