"""Loop-invariant sums (kcc/passes/licm.py): integer sums regrouped by loop depth.

The schedule shows the effect (the invariant part of a sum is one node outside the inner
loop, fewer ADDs inside); the kernel's results, wrapping included, match the reference
interpreter at inner trip counts 0, 1 and odd; float sums are never regrouped.
"""

from __future__ import annotations


import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.passes.gates import legalize_gates
from kcc.passes.licm import hoist_sums
from kcc.passes.linearize import linearize
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.targets.x86.arch import X86_AVX2
from kcc.ir.verify import verify
from x86_util import assert_same, compile_and_run, reference
from paths import DATA

KERNEL = DATA / "kernels" / "invariant_sums.uop"


def _graph(text: str):
    return simplify(lower_weak_dtypes(parse(text), X86_AVX2), X86_AVX2)


def _inner_adds(lin) -> int:
    """ADD nodes scheduled in the innermost loop (between the last RANGE and its END)."""
    b = max(k for k, u in enumerate(lin) if u.op is Ops.RANGE)
    e = next(k for k in range(b, len(lin)) if lin[k].op is Ops.END and lin[k].src[1] is lin[b])
    return sum(1 for u in lin[b + 1:e] if u.op is Ops.ADD)


def test_invariant_terms_form_a_node_outside_the_inner_loop() -> None:
    g = _graph(KERNEL.read_text())
    before = _inner_adds(linearize(g))
    h = hoist_sums(g, X86_AVX2)
    verify(h)
    lin = linearize(h)
    assert before == 7 and _inner_adds(lin) == 5
    b = max(k for k, u in enumerate(lin) if u.op is Ops.RANGE)
    s = next(u for u in lin if u.op is Ops.PARAM and u.arg.slot == 2)
    # s + i*7 (the q index without j*3 and the constant) is computed before loop j opens
    assert any(u.op is Ops.ADD and s in u.src for u in lin[:b])
    # the constant addend is outermost, where it becomes an address displacement
    q = next(u for u in lin if u.op is Ops.INDEX and u.src[0].arg.slot == 1)
    assert q.src[1].op is Ops.ADD and q.src[1].src[1].op in (Ops.CONST, Ops.CAST)


_MIXED = """# kcc-uop 1
%out = PARAM ParamArg(0, DT, 8)
%x = PARAM ParamArg(1, DT, 8)
%s = PARAM ParamArg(2, DT, addrspace=ALU)
%i = RANGE(8) (0, LOOP)
%xi = INDEX(%x, %i)
%xv = LOAD(%xi)
%a = ADD(%s, %xv)
%b = ADD(%a, %s)
%oi = INDEX(%out, %i)
%st = STORE(%oi, %b)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="mixed")
"""


def test_a_float_sum_is_never_regrouped() -> None:
    g = _graph(_MIXED.replace("DT", "float32"))
    assert hoist_sums(g, X86_AVX2) is g
    # the same sum of int32 is regrouped: (s + s) + x[i], s + s outside the loop
    gi = _graph(_MIXED.replace("DT", "int32"))
    hi = hoist_sums(gi, X86_AVX2)
    assert hi is not gi and _inner_adds(linearize(hi)) == 1 < _inner_adds(linearize(gi))



def test_a_graph_without_nested_integer_sums_counts_no_uses(monkeypatch) -> None:
    # float sums only: no sum can have more than two terms, so the use counts are not made
    from kcc.passes import licm
    made = []
    real = licm.Counts
    monkeypatch.setattr(licm, "Counts", lambda *a: made.append(1) or real(*a))
    g = _graph(_MIXED.replace("DT", "float32"))
    assert hoist_sums(g, X86_AVX2) is g and not made
    gi = _graph(_MIXED.replace("DT", "int32"))
    assert hoist_sums(gi, X86_AVX2) is not gi and made

@pytest.mark.parametrize("n", [0, 1, 3, 5])
def test_regrouped_sums_match_the_interpreter(n: int) -> None:
    sink = parse(KERNEL.read_text(), str(KERNEL))
    rng = np.random.default_rng(n + 7)
    info = np.iinfo(np.int32)
    args = [np.zeros(40, np.int32), rng.integers(info.min, info.max, 72, dtype=np.int32),
            np.int32(rng.integers(0, 9)), np.int32(n),
            np.int32(rng.integers(info.min, info.max)), np.int32(info.max - 3)]
    assert_same(sink, compile_and_run(sink, args), reference(sink, args))


def test_gated_index_sums_are_regrouped_after_legalization() -> None:
    """The safe index of a legalized gated load is a WHERE over the sum: the sum under it is
    still regrouped (the pass runs after legalize_gates)."""
    text = KERNEL.read_text().replace("%qv = LOAD(%qc)", "%g = CMPLT(%j, 2)\n"
                                      "%qv = LOAD(%qc, 0, %g)")
    g = legalize_gates(_graph(text), X86_AVX2)
    assert _inner_adds(linearize(hoist_sums(g, X86_AVX2))) < _inner_adds(linearize(g))
