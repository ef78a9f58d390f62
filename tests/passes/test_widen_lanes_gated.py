"""Gated loads in scalar loops widened across iterations (kcc/passes/widen_lanes.py): a gate
that depends on the counter becomes a per-lane gate (tinygrad's padding: pad_const,
avgpool), only on a target that loads so gated (x86-64-v4, v3); a loop-invariant gate stays one
scalar gate on every target. Checked bit for bit against the interpreter, the graph after
the pass and the x86 object (tests/support/widen_util.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from widen_util import range_bounds, shrink_widths, widen_check

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.passes.widen import widen
from kcc.targets.x86.arch import x86_desc
from x86_util import HAS_V4, NO_V4


# out[r, i] = x[r*30 + i - 3] where 2 < i < 33 and 0 < r (else 0), then -2 where the pad is:
# tinygrad's pad_const E_37_34 (the row gate %rg loop-invariant in the inner loop)
PAD = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 136)
%x = PARAM ParamArg(1, float32, 120)
%z = CAST(0.0) float32
%m2 = CAST(-2.0) float32
%r = RANGE(4) (0, LOOP)
%rg = CMPLT(0, %r)
%i = RANGE(34, %r) (1, LOOP)
%ix = MULACC(%r, 30, %i)
%ixo = ADD(%ix, -33)
%px = INDEX(%x, %ixo)
%lo = CMPLT(2, %i)
%hi = CMPLT(%i, 33)
%ig = AND(%lo, %hi)
%g = GATE
%v = LOAD(%px, %z, %g)
%w = WHERE(%g, %v, %m2)
%io = MULACC(%r, 34, %i)
%po = INDEX(%out, %io)
%st = STORE(%po, %w)
%e = END(%st, %i)
%e2 = END(%e, %r)
SINK(%e2) KernelInfo(name="pad")
"""


def _lane_gated(g: UOp) -> list[UOp]:
    return [u for u in g.toposort() if u.op is Ops.LOAD and len(u.src) == 3 and u.src[2].shape]


def _text(gate: str) -> str:
    text = PAD.replace("GATE", gate)
    if "%ig" not in gate:          # (every line is used)
        text = text.replace("%ig = AND(%lo, %hi)\n", "").replace("%lo = CMPLT(2, %i)\n", "")
        text = text.replace("%hi = CMPLT(%i, 33)\n", "").replace("ADD(%ix, -33)", "ADD(%ix, -30)")
    return text


@pytest.mark.skipif(not HAS_V4, reason=NO_V4)
def test_a_counter_gate_is_per_lane_on_v4() -> None:
    # (two loads: the widened loop's and its overlapping last block's, 34 not a multiple)
    w = widen_check(_text("AND(%ig, %rg)"), "x86-64-v4")
    lds = _lane_gated(w)
    assert len(lds) == 2
    for ld in lds:
        assert ld.src[2].shape == ld.shape and ld.shape[0] > 1
        assert ld.shape[0] in shrink_widths(w) and 34 not in range_bounds(w)


def test_a_counter_gate_is_per_lane_on_v3() -> None:
    w = widen_check(_text("AND(%ig, %rg)"), "x86-64-v3")
    lds = _lane_gated(w)
    assert len(lds) == 2 and all(ld.shape[0] > 1 for ld in lds)
    assert 34 not in range_bounds(w)


def test_a_counter_gate_keeps_the_loop_scalar_without_lane_gates() -> None:
    """A target without per-lane gates (x86-64-v3's description less its lane_gates): the
    loop is left as it was."""
    desc = replace(x86_desc("x86-64-v3"), lane_gates=None)
    g = slp(simplify(lower_weak_dtypes(parse(_text("AND(%ig, %rg)")))), desc)
    w = widen(g, desc)
    assert not _lane_gated(w) and 34 in range_bounds(w)


@pytest.mark.parametrize("arch", ["x86-64-v3", pytest.param("x86-64-v4", marks=pytest.mark.skipif(
    not HAS_V4, reason=NO_V4))])
def test_an_invariant_gate_stays_scalar(arch: str) -> None:
    """The row gate alone: the loop is widened on both arches with the gate as it is (x[-30]
    … is read under the false gate of row 0)."""
    w = widen_check(_text("OR(%rg, %rg)"), arch)
    loads = [u for u in w.toposort() if u.op is Ops.LOAD and len(u.src) == 3 and u.shape]
    assert loads and all(u.src[2].shape == () for u in loads)
    assert 34 not in range_bounds(w)


# out[8i + j] = x[8i + j] + (x[8i + j - 1] where j > 0) + (x[8i + 8 + B] where j > 6 and
# i < 3): cumsum r_32_8_8's last load, one element the whole inner loop reads, gated by its
# counter (B = 0: inside the buffer for every i; B = 8: x[40] at i = 3, past the buffer
# where the gate is false)
SPLAT = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 32)
%x = PARAM ParamArg(1, float32, 40)
%z = CAST(0.0) float32
%i = RANGE(4) (0, LOOP)
%j = RANGE(8, %i) (1, LOOP)
%p = MULACC(%i, 8, %j)
%px0 = INDEX(%x, %p)
%x0 = LOAD(%px0)
%p1 = ADD(%p, -1)
%px1 = INDEX(%x, %p1)
%g1 = CMPLT(0, %j)
%x1 = LOAD(%px1, %z, %g1)
%q = MULACC(%i, 8, BASE)
%px2 = INDEX(%x, %q)
%g6 = CMPLT(6, %j)
%gi = CMPLT(%i, 3)
%g = AND(%g6, %gi)
%x2 = LOAD(%px2, %z, %g)
%s0 = ADD(%x2, %x1)
%s = ADD(%s0, %x0)
%po = INDEX(%out, %p)
%st = STORE(%po, %s)
%e = END(%st, %j)
%e2 = END(%e, %i)
SINK(%e2) KernelInfo(name="splat")
"""


def _scalar_gated(g: UOp) -> list[UOp]:
    return [u for u in g.toposort() if u.op is Ops.LOAD and len(u.src) == 3
            and not u.shape and not u.src[2].shape]


@pytest.mark.parametrize("arch", ["x86-64-v3", pytest.param("x86-64-v4", marks=pytest.mark.skipif(
    not HAS_V4, reason=NO_V4))])
def test_one_element_under_a_counter_gate_is_a_splat_select(arch: str) -> None:
    """x[8i + 8] is inside the buffer for every i: loaded ungated, each lane selected by its
    own gate; the inner loop of 8 is one 8-lane block (no loop), no scalar gated load left."""
    w = widen_check(SPLAT.replace("BASE", "8"), arch)
    assert 8 not in range_bounds(w) and not _scalar_gated(w)
    assert any(u.op is Ops.WHERE and u.shape == (8,) for u in w.toposort())


def test_one_element_maybe_past_the_buffer_keeps_its_outer_guard() -> None:
    """x[8i + 16] reaches x[40] (past the buffer of 40) where its gate is false: it may not
    be loaded ungated. Its gate `6 < j AND i < 3` splits (widen_lanes.py `_guard`): `i < 3`,
    free of the counter, guards ONE scalar load of x[8i + 16] hoisted out of the loop (i < 3:
    x[32] at most, an element the loop reads at j = 7 whenever i < 3), and each lane selects
    it by the whole gate. pad_reflect E_12_10's padding loads, 0.74x -> 3.8x clang."""
    w = widen_check(SPLAT.replace("BASE", "16"), "x86-64-v3")
    assert 8 not in range_bounds(w)
    gated = _scalar_gated(w)
    assert len(gated) == 1 and gated[0].src[2].op is Ops.CMPLT      # the guard i < 3 alone


@pytest.mark.parametrize("old,new", [("%gi = CMPLT(%i, 3)", "%gi = CMPLT(%p, 29)"),
                                    ("%g6 = CMPLT(6, %j)", "%g6 = CMPLT(8, %j)"),
                                    ("%g6 = CMPLT(6, %j)", "%g6 = CMPLT(%p, 40)")],
                         ids=["no_outer_part", "never_true", "not_the_counter"])
def test_one_element_maybe_past_the_buffer_keeps_the_loop(old: str, new: str) -> None:
    """x[8i + 16] under a gate with no part free of the counter (`6 < j AND 8i + j < 29`),
    or whose counter part holds for no iteration (`8 < j`, j < 8: the loop never reads
    x[8i + 16], so a hoisted load would read what it did not), or is no compare of the
    counter with a constant (`8i + j < 40`): the loop stays scalar."""
    text = SPLAT.replace("BASE", "16")
    assert old in text
    w = widen_check(text.replace(old, new), "x86-64-v3")
    assert 8 in range_bounds(w) and _scalar_gated(w)
