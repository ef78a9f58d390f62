"""The safe start of a per-lane-gated masked load (kcc/passes/gates_lanes.py, from
kcc/passes/gates.py plan_masked on x86-64-v4): a load whose lanes may reach past the buffer
starts at `WHERE(start + n-1 <u size + n-1, start, 0)`, one in bounds is left alone, a
second run changes nothing, and the values are the interpreter's (where every lane is
masked off the load reads elements [0, n), which changes no value)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kcc.ir import Ops, UOp
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import toposort
from kcc.passes.gates import legalize_gates
from kcc.passes.slp import slp
from kcc.targets.x86.arch import x86_desc
from x86_util import assert_same, random_inputs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_slp_gated import _prep, kernel  # noqa: E402

V4 = x86_desc("x86-64-v4")


def _lane_loads(g: UOp) -> list[UOp]:
    return [u for u in toposort([g]) if u.op is Ops.LOAD and len(u.src) == 3 and u.src[2].shape]


def test_a_reaching_lane_gated_load_gets_a_safe_start() -> None:
    g0 = _prep(kernel(8))
    g = slp(g0, V4)
    (ld,) = _lane_loads(g)
    out = legalize_gates(g, V4)
    (safe,) = _lane_loads(out)
    start = safe.src[0].src[1]
    assert start.op is Ops.WHERE and start.src[1] is ld.src[0].src[1]
    assert start.src[0].op is Ops.CMPLT and start.src[0].src[0].op is Ops.BITCAST
    assert _lane_loads(legalize_gates(out, V4)) == [safe]          # nothing more the 2nd time
    args = random_inputs(g0, seed=4)
    want = interp_run(g0, [a.copy() for a in args])
    assert_same(g0, interp_run(out, [a.copy() for a in args]), want)


def test_an_in_bounds_lane_gated_load_keeps_its_start() -> None:
    """x[4i + j] for i < 16 of 64 elements never leaves the buffer: no safe start."""
    text = _in_bounds_kernel()
    g = slp(_prep(text), V4)
    (ld,) = _lane_loads(g)
    (kept,) = _lane_loads(legalize_gates(g, V4))
    assert kept.src[0].src[1] is ld.src[0].src[1]


def _in_bounds_kernel() -> str:
    """kernel(4) with offsets j (not j - 7) into 64 elements: every load inside the buffer."""
    out = []
    for ln in kernel(4).split("\n"):
        for j in range(4):
            ln = ln.replace(f"%o{j} = ADD(%e, {j - 7})", f"%o{j} = ADD(%e, {j})")
        out.append(ln.replace("float32, 50)", "float32, 64)"))
    return "\n".join(out)


# tinygrad's cummax r_8_8_8 (bench/sweep_vs_clang.py): out[8i + j] = max over k <= j of
# x[8i + k], read as x[8i + j - c] under `c - 1 < j` for c = 1..6 and x[8i] under `6 < j`
CUMMAX = "\n".join(["# kcc-uop 1",
                    "%out = PARAM ParamArg(0, float32, 64)",
                    "%x = PARAM ParamArg(1, float32, 64)",
                    "%i = RANGE(8) (1, LOOP)",
                    "%r = SHL(%i, 3)",
                    "%j = RANGE(8, %i) (2, LOOP)",
                    "%e = MULACC(%i, 8, %j)"]
                   + [ln for c in range(1, 7) for ln in (
                       f"%o{c} = ADD(%e, {-c})", f"%p{c} = INDEX(%x, %o{c})",
                       f"%g{c} = CMPLT({c - 1}, %j)", f"%l{c} = LOAD(%p{c}, 0.0, %g{c})",
                       f"%h{c} = CMPLT(%j, {c})", f"%w{c} = WHERE(%h{c}, -inf, %l{c})")]
                   + ["%p0 = INDEX(%x, %r)", "%g0 = CMPLT(6, %j)",
                      "%l0 = LOAD(%p0, 0.0, %g0)", "%h0 = CMPLT(%j, 7)",
                      "%w0 = WHERE(%h0, -inf, %l0)", "%q = INDEX(%x, %e)", "%v = LOAD(%q)",
                      "%m0 = MAX(%w0, %v)"]
                   + [f"%m{c} = MAX(%m{c - 1}, %w{c})" for c in range(1, 7)]
                   + ["%po = INDEX(%out, %e)", "%st = STORE(%po, %m6)", "%ej = END(%st, %j)",
                      "%ei = END(%ej, %i)", 'SINK(%ei) KernelInfo(name="r_8_8_8")', ""])


def _mirrored(text: str) -> str:
    """CUMMAX read from the other side: x[8i + j + c] under `j < 8 - c`, whose masked-off
    lanes of the last row reach up to 6 elements past the buffer's end."""
    for c in range(1, 7):
        text = text.replace(f"%o{c} = ADD(%e, {-c})", f"%o{c} = ADD(%e, {c})")
        text = text.replace(f"%g{c} = CMPLT({c - 1}, %j)", f"%g{c} = CMPLT(%j, {8 - c})")
        text = text.replace(f"%h{c} = CMPLT(%j, {c})", f"%h{c} = CMPLT({7 - c}, %j)")
    return text.replace('KernelInfo(name="r_8_8_8")', 'KernelInfo(name="r_8_8_8_rev")')


def _after_gates(text: str, arch: str) -> UOp:
    """The kernel's graph after x86's legalize_gates."""
    from kcc.frontend.parser import parse
    from kcc.targets.pipeline import PIPELINE
    g, desc = parse(text), x86_desc(arch)
    for step in PIPELINE:
        g = step.run(g, desc)
        if step.name == "legalize_gates":
            return g
    raise AssertionError("no legalize_gates step")


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("mirror", [False, True])
def test_lane_gated_loads_stay_inside_their_buffer(arch: str, mirror: bool) -> None:
    """cummax's widened loads at 8i - c (c = 1..6) under lane gates false on their first c
    lanes reached up to 6 elements before the input: masked off, but where the input begins
    a page after an absent one each was a fault-suppression assist (0.07 → 0.68 µs,
    bench/gate_assist.py). Each now reads the row x[8i : 8i+8] (inside) and rotates its lanes
    by c (gates_lanes.shifted_load); the mirrored kernel's, past the end, the same way down.
    By the value ranges no vector load's element lies outside its buffer, and the values are
    the interpreter's."""
    from kcc.frontend.parser import parse
    from kcc.ir.ranges import int_ranges
    text = _mirrored(CUMMAX) if mirror else CUMMAX
    g = _after_gates(text, arch)
    ranges = int_ranges([g])
    loads = [u for u in toposort([g]) if u.op is Ops.LOAD and u.src[0].op is Ops.SHRINK]
    assert loads
    for ld in loads:
        p = ld.src[0]
        lo, hi = ranges[p.src[1]]
        assert 0 <= lo and hi + p.shape[0] <= p.src[0].shape[0], (ld, lo, hi)
    sink = parse(text)
    for seed in (0, 1):
        args = random_inputs(sink, seed=seed)
        want = interp_run(sink, [a.copy() for a in args])
        assert_same(sink, interp_run(g, [a.copy() for a in args]), want)
