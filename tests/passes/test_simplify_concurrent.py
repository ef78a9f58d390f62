"""simplify keeps no state between runs: two runs that overlap (threads) neither share nor
leak a memo of constant values (the memo lives on the nodes,
kcc.passes.simplify_fold.const_value)."""

from __future__ import annotations

import gc
import threading
import weakref

from passes_support import op, param, rng, sink, strong

import kcc.passes.simplify_fold as fold_mod
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp
from kcc.passes.simplify import simplify


def _kernel(k: int) -> tuple[UOp, UOp]:
    """out[i] = x[i] * (k + 1) - k: simplify folds the constants; returns (sink, the CAST)."""
    out, x = param(0, dtypes.int32, 8), param(1, dtypes.int32, 8)
    i = rng(8, 0)
    c = strong(k, dtypes.int32)
    v = op(Ops.SUB, op(Ops.MUL, op(Ops.LOAD, op(Ops.INDEX, x, i)),
                       op(Ops.ADD, c, strong(1, dtypes.int32))), c)
    return sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), v), i)), c


def test_overlapping_runs_leave_nothing_behind(monkeypatch) -> None:
    # Thread A starts simplify and pauses at its first constant; B starts while A runs and
    # pauses likewise; A finishes first, then B. With a module-global memo that B took over
    # from A and restored on exit, A's memo (and every node of A's graph in it) outlived both.
    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    real = fold_mod.convert           # constant folding's own module (passes/simplify_fold.py)
    first: set[str] = set()

    def convert(*args):
        name = threading.current_thread().name
        if name not in first:
            first.add(name)
            if name == "A":
                a_in.set()
                assert b_in.wait(10)
            elif name == "B":
                b_in.set()
                assert a_done.wait(10)
        return real(*args)

    monkeypatch.setattr(fold_mod, "convert", convert)
    ga, ca = _kernel(70001)
    gb, _ = _kernel(90001)
    results: dict[str, UOp] = {}
    ta = threading.Thread(target=lambda: results.update(A=simplify(ga)), name="A")
    tb = threading.Thread(target=lambda: results.update(B=simplify(gb)), name="B")
    ta.start()
    assert a_in.wait(10)
    tb.start()
    ta.join(10)
    a_done.set()
    tb.join(10)
    assert set(results) == {"A", "B"} and first == {"A", "B"}
    # both runs folded their constants: x*(k+1) + (-k)
    for name, k in (("A", 70001), ("B", 90001)):
        consts = {n.src[0].arg for n in results[name].toposort()
                  if n.op is Ops.CAST and n.src[0].op is Ops.CONST}
        assert {k + 1, -k} <= consts, name
    dead = weakref.ref(ca)
    del ga, gb, ca, results, ta, tb
    gc.collect()
    assert dead() is None, "a node of a finished simplify run is still referenced"
