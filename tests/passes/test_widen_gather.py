"""A load whose index is not affine in the loop counter (cumsum's `(i + 247) >> 8`, a gather's
loaded index) widens to 16 scalar loads at the lanes of one int32 index vector on x86-64-v4
(kcc/passes/widen_gather.py); the widened graph matches the interpreter, a gated-off lane's
index may lie outside the buffer, and targets without the gather keep the loop scalar."""

from __future__ import annotations

import numpy as np
import pytest
from widen_util import widen_prep as _prep
from x86_util import assert_same, random_inputs, reference

from kcc.ir import Ops
from kcc.ir.consts import const_int

V4 = "x86-64-v4"

# out[i] = max(a[i + 3], rows[(i + 247) >> 8]): tinygrad's cummax_777 inner loop, ungated
SHIFTED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 777)
%a = PARAM ParamArg(1, float32, 780)
%rows = PARAM ParamArg(2, float32, 4)
%i = RANGE(777) (0, WEAK)
%ia = ADD(%i, 3)
%pa = INDEX(%a, %ia)
%la = LOAD(%pa)
%s = ADD(%i, 247)
%r = SHR(%s, 8)
%pr = INDEX(%rows, %r)
%lr = LOAD(%pr)
%m = MAX(%la, %lr)
%po = INDEX(%out, %i)
%st = STORE(%po, %m)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""

# out[i] = f[i] < 0 ? a[idx[i]] : 0: a loaded index (its bits loaded as a float: int32 x 16
# loads are not legal on x86-64-v4), gated by a float compare; a gated-off lane's index may be
# anything (the test sets them far outside a)
LOADED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 100)
%idx = PARAM ParamArg(1, float32, 100)
%f = PARAM ParamArg(2, float32, 100)
%a = PARAM ParamArg(3, float32, 50)
%z = CAST(0.0) float32
%i = RANGE(100) (0, WEAK)
%pj = INDEX(%idx, %i)
%jf = LOAD(%pj)
%j = BITCAST(%jf) int32
%pf = INDEX(%f, %i)
%fi = LOAD(%pf)
%g = CMPLT(%fi, %z)
%pl = INDEX(%a, %j)
%l = LOAD(%pl, %z, %g)
%po = INDEX(%out, %i)
%st = STORE(%po, %l)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def _gathers(g) -> list:
    """The STACKs of loads at the lanes of one index vector in g."""
    out = []
    for u in g.toposort():
        if u.op is Ops.STACK and u.src and all(
                s.op is Ops.LOAD and s.src[0].op is Ops.INDEX
                and s.src[0].src[1].op is Ops.INDEX and s.src[0].src[1].src[0].shape
                for s in u.src):
            out.append(u)
    return out


def _loaded_args(sink, seed: int) -> list:
    """LOADED's arguments: lanes whose f is negative index inside a, the others far outside
    (2^30 and negative: a read there would fault or be caught by the interpreter)."""
    args = random_inputs(sink, seed)
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(100).astype(np.float32)
    inside = rng.integers(0, 50, 100).astype(np.int32)
    outside = np.where(rng.integers(0, 2, 100) == 1, 1 << 30, -(1 << 29)).astype(np.int32)
    args[1], args[2] = np.where(f < 0, inside, outside).astype(np.int32).view(np.float32), f
    return args


def test_shifted_index_is_an_index_vector_on_v4() -> None:
    sink, g, w = _prep(SHIFTED, V4)
    gs = _gathers(w)
    assert gs and all(len(s.src) == 16 for s in gs)
    vidx = gs[0].src[0].src[0].src[1].src[0]
    assert vidx.op is Ops.SHR and vidx.shape == (16,)     # the index computed lane-wise
    assert [const_int(s.src[0].src[1].src[1]) for s in gs[0].src] == list(range(16))
    args = random_inputs(sink, 4)
    assert_same(sink, reference(w, args), reference(sink, args))


def test_gated_lanes_out_of_bounds_are_not_read() -> None:
    sink, g, w = _prep(LOADED, V4)
    gs = _gathers(w)
    assert gs and all(len(s.src[0].src) == 3 for s in gs)    # gated lanes
    for seed in (0, 1):
        args = _loaded_args(sink, seed)
        bits = args[1].view(np.int32)
        assert (bits >= 1 << 29).any() and (bits < 0).any()
        assert_same(sink, reference(w, args), reference(sink, args))


@pytest.mark.parametrize("text", [SHIFTED, LOADED])
def test_no_index_gather_leaves_it_scalar(text: str) -> None:
    # x86-64-v3 has no vector-indexed gather: the loop stays as it was (no index vector)
    _, g, w = _prep(text, "x86-64-v3")
    assert not _gathers(w)
    assert any(u.op is Ops.RANGE and const_int(u.src[0]) in (777, 100) for u in w.toposort())


def test_a_stored_buffer_is_not_gathered() -> None:
    text = SHIFTED.replace("%pr = INDEX(%rows, %r)", "%pr = INDEX(%out, %r)")
    _, g, w = _prep(text, V4)
    assert not _gathers(w)


def test_a_buffer_over_2_31_bytes_is_not_gathered() -> None:
    # the existing gather's guard: every in-bounds byte offset of a gathered buffer fits a
    # dword (2^29 float32 are 2^31 bytes: still gathered; one more is not)
    fits = SHIFTED.replace("ParamArg(2, float32, 4)", f"ParamArg(2, float32, {1 << 29})")
    over = SHIFTED.replace("ParamArg(2, float32, 4)", f"ParamArg(2, float32, {(1 << 29) + 1})")
    assert _gathers(_prep(fits, V4)[2])
    assert not _gathers(_prep(over, V4)[2])
