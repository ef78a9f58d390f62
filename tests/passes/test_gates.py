"""Gate legalization (kcc/passes/gates.py): a gated load the target masks natively keeps its
gate, and gets the safe index `i & -gate` unless value ranges prove the index in bounds (a
masked-off element at an unmapped address costs Intel's masked loads a microcode assist:
tinygrad's padded cumsum ran 5x slower); one the target does not mask becomes a safe-index
load and a WHERE. The compiled kernels are checked against the reference interpreter where the
CPU runs them."""

from __future__ import annotations

import pytest
from passes_support import op, param, rng, sink, strong

from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort
from kcc.passes.gates import legalize_gates
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.targets.x86.arch import x86_desc

V4 = x86_desc("x86-64-v4")
V3 = x86_desc("x86-64-v3")


def _pad(shift: int, n: int = 10) -> UOp:
    """out[i] = i > shift-1 ? x[i - shift] : 0.0 (x has n - shift elements, so i - shift is
    in bounds exactly where the gate holds)."""
    out, x = param(0, dtypes.float32, n), param(1, dtypes.float32, n - shift)
    i = rng(n, 0)
    v = op(Ops.LOAD, op(Ops.INDEX, x, op(Ops.SUB, i, shift)), strong(0.0, dtypes.float32),
           op(Ops.CMPLT, shift - 1, i))
    return lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), v), i)))


def _loads(s: UOp) -> list[UOp]:
    return [u for u in toposort([s]) if u.op is Ops.LOAD]


def test_masked_load_out_of_range_index_gets_safe_index() -> None:
    s = legalize_gates(_pad(3), V4)
    (ld,) = _loads(s)
    assert len(ld.src) == 3                      # still a masked (gated) load
    idx = ld.src[0].src[1]
    assert idx.op is Ops.AND                     # i - 3 could be -3: i & -gate
    neg = idx.src[1]
    assert neg.op is Ops.NEG and neg.src[0].op is Ops.CAST
    assert neg.src[0].src[0] is ld.src[2]        # the mask is the load's own gate
    assert legalize_gates(s, V4) is s            # a fixed point: no second AND


def _window(lanes: int = 4, n: int = 20, back: int = 6) -> UOp:
    """out[i] = sum over l < lanes of (back - 1 - l < i ? x[i + l - back] : 0): per-lane gates
    of consecutive elements (tinygrad's cumsum, upcast by 4)."""
    out, x = param(0, dtypes.float32, n), param(1, dtypes.float32, n)
    i = rng(n, 0)
    acc = None
    for lane in range(lanes):
        v = op(Ops.LOAD, op(Ops.INDEX, x, op(Ops.ADD, i, lane - back)),
               strong(0.0, dtypes.float32), op(Ops.CMPLT, back - 1 - lane, i))
        acc = v if acc is None else op(Ops.ADD, acc, v)
    return lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), acc), i)))


def test_consecutive_masked_loads_share_one_safe_base() -> None:
    # x[i-6] … x[i-3] under four gates: one (i - 6) & -(g0 | g1 | g2 | g3), each load at that
    # base + 0 … 3 (an address displacement), each still masked by its own gate
    s = legalize_gates(_window(), V4)
    loads = sorted(_loads(s), key=lambda u: str(u.src[0].src[1].op))
    ands = {u for u in toposort([s]) if u.op is Ops.AND and u.dtype == dtypes.int32}
    assert len(ands) == 1
    (base,) = ands
    idx = [u.src[0].src[1] for u in loads]
    assert sum(i is base for i in idx) == 1
    assert sorted(int(i.src[1].src[0].arg) for i in idx if i is not base) == [1, 2, 3]
    assert all(i.src[0] is base for i in idx if i is not base)
    gates = {u.src[2] for u in loads}
    assert len(gates) == 4                               # each load keeps its own mask
    g = base.src[1].src[0].src[0]                        # the shared mask's bool: an OR chain
    assert g.op is Ops.OR
    assert legalize_gates(s, V4) is s


def test_masked_load_in_range_index_unchanged() -> None:
    # x[i] gated by i < 5 over a 10-element x: the index is in bounds whatever the gate
    out, x = param(0, dtypes.float32, 10), param(1, dtypes.float32, 10)
    i = rng(10, 0)
    v = op(Ops.LOAD, op(Ops.INDEX, x, i), strong(0.0, dtypes.float32), op(Ops.CMPLT, i, 5))
    s = lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), v), i)))
    assert legalize_gates(s, V4) is s


def test_masked_load_slightly_out_of_range_keeps_its_address() -> None:
    # a conv's one-element border: x[i - 1] of 100 elements reaches 1 element past (< 1/16),
    # so few masked-off addresses are outside: the folded address is cheaper than i & -gate
    assert legalize_gates(_pad(1, 101), V4) is _pad(1, 101)


def test_unmasked_target_selects() -> None:
    # x86-64-v3 has no masked scalar loads: the safe-index load and a WHERE
    (ld,) = _loads(legalize_gates(_pad(3), V3))
    assert len(ld.src) == 1 and ld.src[0].src[1].op is Ops.AND


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("graph", ["pad1", "pad3", "pad7", "window4", "window3"])
def test_padded_kernel_matches_interpreter(arch: str, graph: str) -> None:
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512")
    from x86_util import assert_same, compile_and_run, random_inputs, reference
    k = int(graph[-1])
    g = parse(format_uop(_pad(k) if graph.startswith("pad") else _window(k, 21, 7)))
    for seed in (0, 1):
        a = random_inputs(g, seed)
        assert_same(g, compile_and_run(g, a, arch), reference(g, a))
