"""Strided gathers as lanes of row loads in the SLP pass (kcc/passes/slp.py `_rows`): a lane
tuple of ungated scalar LOADs at unrelated places (tinygrad's conv2d weights: w[e + k + R·j]
for lanes j) becomes a STACK of lanes of vector LOADs of the rows the elements lie in, when
the kernel reads every element of each row with ungated scalar loads of the same buffer node;
the x86 selector then shuffles the rows (a 4×4 transpose) instead of inserting lane by lane.

What is checked: the structure (row loads appear only for whole runs, never across a store to
the buffer, never for gated or partly read rows), and values against the reference
interpreter, of the graph after the pass and of the x86 object on x86-64-v3 and x86-64-v4.
"""

from __future__ import annotations

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import toposort
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.targets.x86.arch import X86_AVX2
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

R = 11                                   # the row stride of w (elements)


def kernel(ks: int = 5, gated: int | None = None, stored: int | None = None) -> str:
    """For i < n: y[4i : 4i+4] = Σ_{k<ks} splat(x[i+k]) · (w[3i+k+R·j] for lanes j).
    ``gated``: the element k = gated of row 1 is a gated load (gate i > 0). ``stored``:
    w[0] is overwritten first and the element k = stored of row 2 is read after that store
    (another memory state of w)."""
    t = ["# kcc-uop 1", "%y = PARAM ParamArg(0, float32, 40)",
         "%x = PARAM ParamArg(1, float32, 24)", f"%w = PARAM ParamArg(2, float32, {3 * 9 + 4 * R})",
         "%n = PARAM ParamArg(3, int32, vmin_vmax=(0, 10), addrspace=ALU)"]
    if gated is not None or stored is not None:
        t.append("%z = CAST(0.0) float32")
    wbuf = "%w"
    if stored is not None:
        t += ["%p00 = INDEX(%w, 0)", "%st0 = STORE(%p00, %z)", "%w2 = AFTER(%w, %st0)"]
    t += ["%i = RANGE(%n) (0, LOOP)", "%e = MUL(%i, 3)"]
    terms = []
    for k in range(ks):
        t += [f"%xi{k} = ADD(%i, {k})", f"%px{k} = INDEX(%x, %xi{k})", f"%x{k} = LOAD(%px{k})"]
        lanes = []
        for j in range(4):
            c = k + R * j
            buf = "%w2" if stored == k and j == 2 else wbuf
            t += [f"%o{k}_{j} = ADD(%e, {c})", f"%pw{k}_{j} = INDEX({buf}, %o{k}_{j})"]
            if gated == k and j == 1:
                t += [f"%g{k} = CMPLT(0, %i)", f"%w{k}_{j} = LOAD(%pw{k}_{j}, %z, %g{k})"]
            else:
                t.append(f"%w{k}_{j} = LOAD(%pw{k}_{j})")
            lanes.append(f"%w{k}_{j}")
        # lane by lane, as tinygrad writes it: SLP packs the MULs (the x operand, one scalar
        # in every lane, is a splat: that pays)
        for j in range(4):
            t.append(f"%m{k}_{j} = MUL(%x{k}, %w{k}_{j})")
        terms.append([f"%m{k}_{j}" for j in range(4)])
    outs = []
    for j in range(4):
        acc = terms[0][j]
        for k in range(1, ks):
            t.append(f"%a{k}_{j} = ADD({acc}, {terms[k][j]})")
            acc = f"%a{k}_{j}"
        outs.append(acc)
    t += [f"%s = STACK({', '.join(outs)})", "%i4 = MUL(%i, 4)", "%py = SHRINK(%y, %i4, 4)",
          "%st = STORE(%py, %s)", "%end = END(%st, %i)"]
    t.append("%grp = GROUP(%st0, %end)" if stored is not None else "%grp = GROUP(%end)")
    t.append('SINK(%grp) KernelInfo(name="rows")')
    return "\n".join(t) + "\n"


def _prep(text: str) -> UOp:
    return simplify(lower_weak_dtypes(parse(text)))


def _scalar_w_loads(g: UOp) -> int:
    return sum(1 for u in toposort([g]) if u.op is Ops.LOAD and u.shape == ()
               and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.PARAM
               and u.src[0].src[0].arg.slot == 2)


def test_whole_rows_become_row_loads() -> None:
    g = slp(_prep(kernel()), X86_AVX2)
    rows = [u for u in toposort([g]) if u.op is Ops.LOAD and u.shape == (4,)
            and u.src[0].src[0].op is Ops.PARAM and u.src[0].src[0].arg.slot == 2]
    # 4 rows of w[e+R·j : +4] for k = 0…3; k = 4 has no whole row: its 4 scalar loads stay
    assert len(rows) == 4, [str(u) for u in rows]
    assert _scalar_w_loads(g) == 4


@pytest.mark.parametrize("ks", [3, 2])
def test_partly_read_rows_stay_scalar(ks: int) -> None:
    g = slp(_prep(kernel(ks)), X86_AVX2)
    assert not [u for u in toposort([g]) if u.op is Ops.LOAD and u.shape == (4,)
                and u.src[0].src[0].op is Ops.PARAM and u.src[0].src[0].arg.slot == 2]


@pytest.mark.parametrize("variant", [{"gated": 2}, {"stored": 1}])
def test_a_gated_or_later_element_breaks_its_row(variant: dict) -> None:
    """Row 1 (gated) or row 2 (read after a store) misses an element: that row stays scalar,
    so no column of k = 0…3 is a whole set of rows; k = 4 has none either."""
    g = slp(_prep(kernel(**variant)), X86_AVX2)
    rows = [u for u in toposort([g]) if u.op is Ops.LOAD and u.shape == (4,)
            and u.src[0].src[0].op in (Ops.PARAM, Ops.AFTER)
            and base_slot(u.src[0].src[0]) == 2]
    assert not rows, [str(u) for u in rows]


def base_slot(b: UOp) -> int:
    while b.op is Ops.AFTER:
        b = b.src[0]
    return b.arg.slot


@pytest.mark.parametrize("variant", [{}, {"ks": 8}, {"gated": 2}, {"stored": 1}])
def test_the_pass_keeps_the_values(variant: dict) -> None:
    g0 = _prep(kernel(**variant))
    args = random_inputs(g0, seed=5)
    args[3] = 7
    want = interp_run(g0, [a.copy() if hasattr(a, "copy") else a for a in args])
    got = interp_run(slp(g0, X86_AVX2), [a.copy() if hasattr(a, "copy") else a for a in args])
    assert_same(g0, got, want)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("variant", [{}, {"ks": 8}, {"gated": 2}, {"stored": 1}])
def test_x86_matches_the_interpreter(arch: str, variant: dict) -> None:
    sink = parse(kernel(**variant))
    args = random_inputs(sink, seed=6)
    args[3] = 10
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
