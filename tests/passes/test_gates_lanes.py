"""The safe start of a per-lane-gated masked load (kcc/passes/gates_lanes.py, from
kcc/passes/gates.py plan_masked on x86-64-v4): a load whose lanes may reach past the buffer
starts at `WHERE(start + n-1 <u size + n-1, start, 0)`, one in bounds is left alone, a
second run changes nothing, and the values are the interpreter's (where every lane is
masked off the load reads elements [0, n), which changes no value)."""

from __future__ import annotations

import sys
from pathlib import Path

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
