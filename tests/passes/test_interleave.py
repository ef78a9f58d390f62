"""Tests of kcc/passes/interleave.py: a long loop body's independent chains interleaved by
linearize (critical path first, bounded by register pressure), only reordered."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort
from kcc.passes.linearize import linearize
from kcc.targets.x86.sched import x86_sched
from x86_util import ARCHS, compile_and_run, random_inputs, reference, assert_same


def two_chains(steps: int, n: int = 64, second_store: bool = False) -> str:
    """out[i] = p(a[i]) + p(b[i]), p a Horner chain of `steps` multiply-adds: two independent
    chains of 2 * steps float operations that meet at the end (second_store: also
    out2[i] = p(a[i]), a STORE the graph does not order against the first)."""
    lines = ["# kcc-uop 1", "%0 = PARAM ParamArg(0, float32, 64)",
             "%1 = PARAM ParamArg(1, float32, 64)", "%2 = PARAM ParamArg(2, float32, 64)",
             f"%3 = CAST({n}) int32", "%4 = RANGE(%3) (0, LOOP)",
             "%5 = PARAM ParamArg(3, float32, 64)"]
    k = 6
    ends = []
    for buf in (1, 2):
        lines += [f"%{k} = INDEX(%{buf}, %4)", f"%{k + 1} = LOAD(%{k})"]
        x, k = k + 1, k + 2
        for s in range(steps):
            lines += [f"%{k} = CAST({1.0 + s / 8}) float32", f"%{k + 1} = MUL(%{x}, %{k})",
                      f"%{k + 2} = CAST({0.5 - s / 16}) float32",
                      f"%{k + 3} = ADD(%{k + 1}, %{k + 2})"]
            x, k = k + 3, k + 4
        ends.append(x)
    lines += [f"%{k} = ADD(%{ends[0]}, %{ends[1]})", f"%{k + 1} = INDEX(%0, %4)",
              f"%{k + 2} = STORE(%{k + 1}, %{k})"]
    last = f"%{k + 2}"
    if second_store:
        lines += [f"%{k + 3} = INDEX(%5, %4)", f"%{k + 4} = STORE(%{k + 3}, %{ends[0]})",
                  f"%{k + 5} = GROUP(%{k + 2}, %{k + 4})"]
        last, k = f"%{k + 5}", k + 3
    lines += [f"%{k + 3} = END({last}, %4)", f"SINK(%{k + 3}) KernelInfo(name=\"two_chains\")"]
    return "\n".join(lines) + "\n"


def chains(lin: list[UOp]) -> tuple[list[int], list[int]]:
    """Positions in lin of the float ops of the chain of a (slot 1) and of b (slot 2): those
    that read, transitively, the one's LOAD and not the other's."""
    reach: dict[int, set[UOp]] = {1: set(), 2: set()}
    for u in lin:
        for slot, r in reach.items():
            if u.op is Ops.LOAD and u.src[0].src[0].arg.slot == slot \
                    or any(s in r for s in u.src):
                r.add(u)
    at = {u: i for i, u in enumerate(lin)}
    a, b = reach[1] - reach[2], reach[2] - reach[1]
    return (sorted(at[u] for u in a if u.op in (Ops.MUL, Ops.ADD)),
            sorted(at[u] for u in b if u.op in (Ops.MUL, Ops.ADD)))


def _model(regs: int):
    """x86's model with this many vector registers (opmasks above 16, as x86-64-v4); 0: no
    model (a GPU target: linearize's default order)."""
    return x86_sched(regs, regs > 16) if regs else None


def check_order(sink: UOp, lin: list[UOp]) -> None:
    """Every node of the graph exactly once, after its srcs."""
    at = {u: i for i, u in enumerate(lin)}
    assert len(at) == len(lin) and set(at) == set(toposort([sink]))
    for i, u in enumerate(lin):
        assert all(at[s] < i for s in u.src)


def test_long_chains_interleave() -> None:
    """The default order runs chain a, then chain b; with 32 vector registers they alternate
    (each chain's next op waits out the previous one's latency)."""
    sink = parse(two_chains(12))
    base, new = linearize(sink), linearize(sink, _model(32))
    check_order(sink, base)
    check_order(sink, new)
    a, b = chains(base)
    assert max(a) < min(b) or max(b) < min(a)           # one chain after the other
    a, b = chains(new)
    assert len(a) == len(b) == 24
    assert min(b) < max(a) and min(a) < max(b)            # side by side
    # the first few ops of the two chains alternate
    first = sorted([(p, "a") for p in a[:4]] + [(p, "b") for p in b[:4]])
    assert sum(x[1] != y[1] for x, y in zip(first, first[1:])) >= 5
    assert linearize(sink, _model(32)) == new                     # deterministic


@pytest.mark.parametrize("steps,regs", [(3, 32), (12, 8), (12, 0)])
def test_declined(steps: int, regs: int) -> None:
    """A short body (a critical path under LONG_PATH), too few registers for two chains
    (budget under MIN_BUDGET), or no vector registers (a GPU): the default order."""
    sink = parse(two_chains(steps))
    assert linearize(sink, _model(regs)) == linearize(sink)


def test_stores_keep_their_order() -> None:
    """Two STOREs the graph does not order keep the default order, and a LOAD stays on its
    side of each (memory order is not always an edge)."""
    text = two_chains(12, second_store=True)
    sink = parse(text)
    base, new = linearize(sink), linearize(sink, _model(32))
    check_order(sink, new)
    mem = [u for u in base if u.op in (Ops.LOAD, Ops.STORE)]
    pos = {u: i for i, u in enumerate(new)}
    stores = [u for u in mem if u.op is Ops.STORE]
    assert len(stores) == 2 and pos[stores[0]] < pos[stores[1]]
    for ld in (u for u in mem if u.op is Ops.LOAD):
        for st in stores:
            assert (mem.index(ld) < mem.index(st)) == (pos[ld] < pos[st])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", [0, 1])
def test_interleaved_results_exact(arch: str, seed: int) -> None:
    """The interleaved kernel's results are bit for bit the reference interpreter's."""
    sink = parse(two_chains(12))
    args = random_inputs(sink, seed)
    got = compile_and_run(sink, [np.copy(a) for a in args], arch)
    assert_same(sink, got, reference(sink, [np.copy(a) for a in args]))
