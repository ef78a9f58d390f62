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
@pytest.mark.parametrize("shift", [1, 3, 7])
def test_padded_kernel_matches_interpreter(arch: str, shift: int) -> None:
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512")
    from x86_util import assert_same, compile_and_run, random_inputs, reference
    g = parse(format_uop(_pad(shift)))
    for seed in (0, 1):
        a = random_inputs(g, seed)
        assert_same(g, compile_and_run(g, a, arch), reference(g, a))
