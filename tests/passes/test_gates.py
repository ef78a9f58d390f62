"""Gate legalization (kcc/passes/gates.py): a gated load the target masks natively keeps its
gate, and gets the safe index `i & -gate` unless value ranges prove the index in bounds (a
masked-off element at an unmapped address costs Intel's masked loads a microcode assist:
tinygrad's padded cumsum ran 5x slower); one the target does not mask becomes a safe-index
load and a WHERE. The compiled kernels are checked against the reference interpreter where the
CPU runs them."""

from __future__ import annotations

import numpy as np
import pytest
from passes_support import eval_values, op, param, rng, sink, strong

from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, substitute, toposort
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


def _addresses(s: UOp, n: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Each masked load of s over i = 0 … n-1 (one loop): (gate, element index, buffer
    size), evaluated from the graph's own nodes (the loop's RANGE as an input)."""
    (r,) = [u for u in toposort([s]) if u.op is Ops.RANGE]
    i = param(9, dtypes.int32)
    out = []
    for ld in _loads(s):
        gate, idx = (substitute(x, {r: i}) for x in (ld.src[2], ld.src[0].src[1]))
        at = {9: np.arange(n, dtype=np.int32)}
        out.append((np.broadcast_to(eval_values(gate, at), (n,)),
                    np.broadcast_to(eval_values(idx, at), (n,)), ld.src[0].src[0].shape[0]))
    return out


def test_masked_load_out_of_range_index_selects_on_its_gate() -> None:
    # x[i - 3] under 2 < i: the index WHERE(gate, i - 3, k), one CMOVcc on the gate's compare
    s = legalize_gates(_pad(3), V4)
    (ld,) = _loads(s)
    assert len(ld.src) == 3                      # still a masked (gated) load
    idx = ld.src[0].src[1]
    assert idx.op is Ops.WHERE and idx.src[0] is ld.src[2]   # the load's own gate
    assert not any(u.op in (Ops.AND, Ops.NEG) for u in toposort([s]))
    ((gate, at, size),) = _addresses(s, 10)
    assert (at[gate] == np.arange(10)[gate] - 3).all()      # exact where the gate holds
    assert ((0 <= at) & (at < size)).all()                   # inside wherever it does not
    assert legalize_gates(s, V4) is s            # a fixed point: no second select


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


def _ahead(lanes: int = 4, n: int = 20, ahead: int = 6) -> UOp:
    """out[i] = sum over l < lanes of (i < n - ahead - l ? x[i + l + ahead] : 0): the window
    past the end (the shared base's upper side)."""
    out, x = param(0, dtypes.float32, n), param(1, dtypes.float32, n)
    i = rng(n, 0)
    acc = None
    for lane in range(lanes):
        v = op(Ops.LOAD, op(Ops.INDEX, x, op(Ops.ADD, i, lane + ahead)),
               strong(0.0, dtypes.float32), op(Ops.CMPLT, i, n - ahead - lane))
        acc = v if acc is None else op(Ops.ADD, acc, v)
    return lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), acc), i)))


@pytest.mark.parametrize("graph", ["window", "ahead"])
def test_consecutive_masked_loads_share_one_gate_free_base(graph: str) -> None:
    # x[i-6] … x[i-3] under four gates: one base b = WHERE(i < 3, k, i) (ahead:
    # WHERE(10 < i, k, i)), each load at b + c (a displacement), each still masked by its
    # own gate; no OR of the gates and no AND mask
    s = legalize_gates(_window() if graph == "window" else _ahead(), V4)
    loads = _loads(s)
    assert not any(u.op in (Ops.OR, Ops.AND, Ops.NEG) for u in toposort([s]))
    bases = {u.src[0].src[1].src[0] if u.src[0].src[1].op is Ops.ADD else u.src[0].src[1]
             for u in loads}
    (base,) = bases
    assert base.op is Ops.WHERE and base.src[0].op is Ops.CMPLT
    assert base.src[0].src[0 if graph == "window" else 1] is base.src[2]   # e's own range
    assert len({u.src[2] for u in loads}) == 4           # each load keeps its own mask
    lanes = _addresses(s, 20)
    none = ~np.any([g for g, _, _ in lanes], axis=0)     # every gate false
    for lane, (gate, at, size) in enumerate(lanes):
        want = np.arange(20) + (lane - 6 if graph == "window" else lane + 6)
        assert (at[gate] == want[gate]).all()            # exact where the gate holds
        assert ((-3 <= at) & (at < size + 3)).all()      # at most the span (3) past an edge
        assert ((0 <= at[none]) & (at[none] < size)).all()   # the base is k: all inside
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


def _blocks(k: int) -> UOp:
    """out[i] = k < i ? x[((i + 247) >> 8) - 1] : 0.0 over i < 777, x of 3 elements: one
    element before x where i ≤ 8 (tinygrad's cumsum_777 E_3_777)."""
    out, x = param(0, dtypes.float32, 777), param(1, dtypes.float32, 3)
    i = rng(777, 0)
    at = op(Ops.ADD, op(Ops.SHR, op(Ops.ADD, i, 247), 8), -1)
    v = op(Ops.LOAD, op(Ops.INDEX, x, at), strong(0.0, dtypes.float32), op(Ops.CMPLT, k, i))
    return lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), v), i)))


def test_rarely_false_gate_keeps_its_address() -> None:
    # 8 < i is false on 9 of 777 iterations (< 1/64): those few masked-off loads cost less
    # than a select on every one; 99 < i (100 of 777) gets the select
    assert legalize_gates(_blocks(8), V4) is _blocks(8)
    (ld,) = _loads(legalize_gates(_blocks(99), V4))
    assert ld.src[0].src[1].op is Ops.ADD and ld.src[0].src[1].src[0].op is Ops.WHERE


def test_unmasked_target_selects() -> None:
    # x86-64-v3 has no masked scalar loads: the safe-index load and a WHERE
    (ld,) = _loads(legalize_gates(_pad(3), V3))
    assert len(ld.src) == 1 and ld.src[0].src[1].op is Ops.AND


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("graph", ["pad1", "pad3", "pad7", "window4", "window3",
                                   "ahead4", "ahead2", "blocks8"])
def test_padded_kernel_matches_interpreter(arch: str, graph: str) -> None:
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512")
    from x86_util import assert_same, compile_and_run, random_inputs, reference
    k = int(graph[-1])
    g = _pad(k) if graph.startswith("pad") else _window(k, 21, 7) if graph.startswith("win") \
        else _ahead(k, 21, 7) if graph.startswith("ahead") else _blocks(k)
    g = parse(format_uop(g))
    for seed in (0, 1):
        a = random_inputs(g, seed)
        assert_same(g, compile_and_run(g, a, arch), reference(g, a))


ROWS = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 24)
%idx = PARAM ParamArg(1, int32, 3)
%x = PARAM ParamArg(2, float32, 40)
%n3 = CAST(3) int32
%n8 = CAST(8) int32
%n5 = CAST(5) int32
%m1 = CAST(-1) int32
%r = RANGE(%n3) (0, LOOP)
%i = RANGE(%n8, %r) (1, LOOP)
%ip = INDEX(%idx, %r)
%v = LOAD(%ip)
%lo = CMPLT(%m1, %v)
%hi = CMPLT(%v, %n5)
%g = AND(%lo, %hi)
%at = MULACC(%v, %n8, %i)
%xp = INDEX(%x, %at)
%z = CAST(0.0) float32
%val = LOAD(%xp, %z, %g)
%o = MULACC(%r, %n8, %i)
%op = INDEX(%out, %o)
%s = STORE(%op, %val)
%e = END(%s, %i)
%e2 = END(%e, %r)
SINK(%e2) KernelInfo(name="rows")
"""


def test_row_gate_selects_the_row_base_alone() -> None:
    # tinygrad's gathered rows (index_rows' E_9_77): x[v*8 + i] under 0 <= v < 5, the gate a
    # function of the row r alone: WHERE(gate, v*8, k) + i, a select once a row
    s = legalize_gates(parse(ROWS), V4)
    (ld,) = [u for u in _loads(s) if len(u.src) == 3]
    idx = ld.src[0].src[1]
    assert idx.op is Ops.ADD and idx.src[0].op is Ops.WHERE and idx.src[0].src[0] is ld.src[2]
    (i,) = [u for u in toposort([s]) if u.op is Ops.RANGE and u.arg[0] == 1]
    assert i not in toposort([idx.src[0]]) and idx.src[1] is i
    assert legalize_gates(s, V4) is s


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_row_gate_kernel_matches_interpreter(arch: str) -> None:
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512")
    from x86_util import assert_same, compile_and_run, reference
    g = parse(ROWS)
    x = np.arange(40, dtype=np.float32) + 0.5
    for rows in ([4, -1, 0], [5, 2, -70000], [1 << 30, 3, 4]):
        a = [np.zeros(24, np.float32), np.array(rows, np.int32), x]
        assert_same(g, compile_and_run(g, a, arch), reference(g, a))


def test_always_true_scalar_gate_is_dropped() -> None:
    # x[i] under i < 12 of a 10-iteration loop: simplify leaves a scalar load's gate to slp
    # (a lane of a run of gated loads), legalize_gates drops it on either target
    out, x = param(0, dtypes.float32, 10), param(1, dtypes.float32, 10)
    i = rng(10, 0)
    v = op(Ops.LOAD, op(Ops.INDEX, x, i), strong(0.0, dtypes.float32), op(Ops.CMPLT, i, 12))
    s = lower_weak_dtypes(sink(op(Ops.END, op(Ops.STORE, op(Ops.INDEX, out, i), v), i)))
    from kcc.passes.simplify import simplify
    assert [len(u.src) for u in _loads(simplify(s))] == [3]
    for desc in (V4, V3):
        (ld,) = _loads(legalize_gates(s, desc))
        assert len(ld.src) == 1 and ld.src[0].src[1].op is Ops.RANGE


# index_rows' E_9_77 unrolled: three 16-lane loads of row v (48 elements) at MULACC(v, 48, c),
# c = 0, 16, 32, under one gate 0 <= v < 5 (x holds 5 rows)
ROW_LOADS = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 144)
%idx = PARAM ParamArg(1, int32, 3)
%x = PARAM ParamArg(2, float32, 240)
%n3 = CAST(3) int32
%n48 = CAST(48) int32
%n5 = CAST(5) int32
%n16 = CAST(16) int32
%m1 = CAST(-1) int32
%z = CAST(0.0) float32
%zv = STACK(%z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z)
%r = RANGE(%n3) (0, LOOP)
%ip = INDEX(%idx, %r)
%v = LOAD(%ip)
%lo = CMPLT(%m1, %v)
%hi = CMPLT(%v, %n5)
%g = AND(%lo, %hi)
""" + "".join(f"""%c{c} = CAST({c}) int32
%a{c} = MULACC(%v, %n48, %c{c})
%xp{c} = SHRINK(%x, %a{c}, %n16)
%l{c} = LOAD(%xp{c}, %zv, %g)
%o{c} = MULACC(%r, %n48, %c{c})
%op{c} = SHRINK(%out, %o{c}, %n16)
%s{c} = STORE(%op{c}, %l{c})
""" for c in (0, 16, 32)) + """%gr = GROUP(%s0, %s16, %s32)
%e = END(%gr, %r)
SINK(%e) KernelInfo(name="row_loads")
"""


def test_loads_of_one_gate_share_one_select() -> None:
    # one WHERE(gate, v*48, k) for the three loads (each at it + c, a displacement), not a
    # select of each load's own MULACC (five CMOVcc a row in E_9_77)
    s = legalize_gates(parse(ROW_LOADS), V4)
    loads = [u for u in _loads(s) if len(u.src) == 3]
    assert len(loads) == 3
    bases = {u.src[0].src[1].src[0] if u.src[0].src[1].op is Ops.ADD else u.src[0].src[1]
             for u in loads}
    (base,) = bases
    assert base.op is Ops.WHERE and base.src[0] is loads[0].src[2]
    assert sum(u.op is Ops.WHERE for u in toposort([s])) == 1
    assert legalize_gates(s, V4) is s


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_loads_of_one_gate_match_interpreter(arch: str) -> None:
    from kcc.targets.x86.target import V4_FLAGS, cpu_flags
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512")
    from x86_util import assert_same, compile_and_run, reference
    g = parse(ROW_LOADS)
    x = np.arange(240, dtype=np.float32) + 0.5
    for rows in ([4, -1, 0], [5, 2, -70000], [1 << 30, 3, 4]):
        a = [np.zeros(144, np.float32), np.array(rows, np.int32), x]
        assert_same(g, compile_and_run(g, a, arch), reference(g, a))
