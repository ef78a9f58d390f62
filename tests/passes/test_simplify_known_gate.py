"""simplify's known_gate: a LOAD or STORE gate that value ranges decide (interpolate's clamped
cells, kcc/ir/range_enum.py) is dropped, a LOAD's never-true gate gives its alt, and a gate
that holds for some iterations only stays. The oracle is the reference interpreter on the
graph before and after simplify (bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.interp import run
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify

# tinygrad's interpolate (E_4_16_4_4, cut down): the cell index k = (clamp(16*i - 8) + 31) >> 5
# is in [0, 7], so `k < {lim}` holds for every i when lim > 7; the store is gated on i < {slim}
KERNEL = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 256)
%x = PARAM ParamArg(1, float32, 128)
%n = CAST(16) int32
%i = RANGE(%n) (0, LOOP)
%k0 = CAST(0) int32
%k4 = CAST(4) int32
%k5 = CAST(5) int32
%k8 = CAST(8) int32
%k31 = CAST(31) int32
%km8 = CAST(-8) int32
%k224 = CAST(224) int32
%lim = CAST({lim}) int32
%slim = CAST({slim}) int32
%f0 = CAST(0.0) float32
%alt = STACK(%f0, %f0, %f0, %f0)
%t = MULACC(%i, %n, %km8)
%x4 = SHL(%i, %k4)
%lo = CMPLT(%x4, %k8)
%w = WHERE(%lo, %k0, %t)
%hi = CMPLT(%k224, %w)
%c = WHERE(%hi, %k224, %w)
%a = ADD(%c, %k31)
%k = SHR(%a, %k5)
%g = CMPLT(%k, %lim)
%ld = MULACC(%k, %n, %k0)
%xp = SHRINK(%x, %ld, 4)
%v = LOAD(%xp, %alt, %g)
%st = MULACC(%i, %n, %k0)
%op = SHRINK(%out, %st, 4)
%sg = CMPLT(%i, %slim)
%s = STORE(%op, %v, %sg)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


def _simplified(lim: int, slim: int):
    sink = lower_weak_dtypes(parse(KERNEL.format(lim=lim, slim=slim), "k.uop"))
    after = simplify(sink)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(128).astype(np.float32)
    outs = []
    for g in (sink, after):
        out = np.full(256, 7.0, np.float32)
        run(g, [out, x.copy()])
        outs.append(out.view(np.uint32))
    assert (outs[0] == outs[1]).all()
    loads = [u for u in after.toposort() if u.op is Ops.LOAD]
    stores = [u for u in after.toposort() if u.op is Ops.STORE]
    return loads, stores


@pytest.mark.parametrize("lim", [8, 100])
def test_gate_always_true_is_dropped(lim: int) -> None:
    loads, stores = _simplified(lim, 16)
    assert [len(u.src) for u in loads] == [1] and [len(u.src) for u in stores] == [2]


def test_gate_never_true_gives_the_alt() -> None:
    loads, stores = _simplified(0, 16)          # k < 0 never holds: no load at all
    assert loads == [] and len(stores) == 1


def test_gates_true_for_some_iterations_stay() -> None:
    loads, stores = _simplified(5, 9)           # k reaches 7; i reaches 15
    assert [len(u.src) for u in loads] == [3] and [len(u.src) for u in stores] == [3]
