"""Runs of gated scalar loads as one per-lane-gated vector load (kcc/passes/slp_gated.py) and
their split back to gated scalar loads on targets without such a load
(kcc/passes/devectorize.py split_load: CUDA, AMD).

tinygrad's padded reductions (cumsum, cummax) read 4 consecutive elements a step, each under
its own padding gate `c_j < e and d_j < e` (one index e against 4 consecutive bounds): one
vector compare a bound vector, one masked load. What is checked: which targets get the vector
load, the groups a run is cut into, that nothing else changes, and the values (the graph
after each pass against the reference interpreter; the x86 objects in
tests/isel/x86/test_lane_gates.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import toposort
from kcc.passes.devectorize import devectorize
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.passes.slp import slp
from kcc.targets.amd.desc import AMD
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc
from x86_util import assert_same, random_inputs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ir"))
from test_interp_lane_gates import padded_kernel  # noqa: E402

N = 50          # the input's elements; the loads reach 7 before it and past its end


def kernel(n: int = 4, same: bool = True, dt: str = "float32", iters: int = 16) -> str:
    """out[i] = Σ_j x[4i + j - 7] over j < n and i < iters, where that element exists (else
    0): the gates are tinygrad's, `6 - j < 4i` and `4i < 57 - j`; ``same`` False makes lane
    1's gate their WHERE (lo ? hi : false, another op: the lanes' gates are then not
    isomorphic)."""
    t = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, {dt}, {iters})",
         f"%x = PARAM ParamArg(1, {dt}, {N})", f"%z = CAST(0) {dt}",
         f"%i = RANGE({iters}) (0, LOOP)", "%e = MUL(%i, 4)"]
    terms = []
    for j in range(n):
        t += [f"%o{j} = ADD(%e, {j - 7})", f"%p{j} = INDEX(%x, %o{j})",
              f"%lo{j} = CMPLT({6 - j}, %e)", f"%hi{j} = CMPLT(%e, {N + 7 - j})"]
        if same or j != 1:
            t.append(f"%g{j} = AND(%lo{j}, %hi{j})")
        else:
            t.append(f"%g{j} = WHERE(%lo{j}, %hi{j}, false)")
        t.append(f"%l{j} = LOAD(%p{j}, %z, %g{j})")
        terms.append(f"%l{j}")
    acc = terms[0]
    for j, s in enumerate(terms[1:], 1):
        t.append(f"%a{j} = ADD({acc}, {s})")
        acc = f"%a{j}"
    t += ["%po = INDEX(%out, %i)", f"%st = STORE(%po, {acc})", "%end = END(%st, %i)",
          'SINK(%end) KernelInfo(name="gated_run")']
    return "\n".join(t) + "\n"


def _prep(text: str) -> UOp:
    return simplify(lower_weak_dtypes(parse(text)))


def _lane_gated(g: UOp) -> list[UOp]:
    return [u for u in toposort([g]) if u.op is Ops.LOAD and len(u.src) == 3
            and u.src[2].shape]


def _same_values(g0: UOp, g1: UOp, seed: int = 3) -> None:
    args = random_inputs(g0, seed=seed)
    want = interp_run(g0, [a.copy() for a in args])
    got = interp_run(g1, [a.copy() for a in args])
    assert_same(g0, got, want)


@pytest.mark.parametrize("dt", ["float32", "int32"])
def test_a_run_of_4_is_one_masked_load_on_v4(dt: str) -> None:
    g0 = _prep(kernel(dt=dt))
    g = slp(g0, x86_desc("x86-64-v4"))
    vl = _lane_gated(g)
    assert len(vl) == 1 and vl[0].shape == (4,) and vl[0].src[2].shape == (4,)
    assert vl[0].src[2].op is Ops.AND                      # the gates' vector compare
    assert not [u for u in toposort([g]) if u.op is Ops.LOAD and u.shape == ()]
    _same_values(g0, g)


def test_a_run_of_8_is_one_load_of_8() -> None:
    g = slp(_prep(kernel(8)), x86_desc("x86-64-v4"))
    assert [u.shape for u in _lane_gated(g)] == [(8,)]


def test_gates_that_do_not_pack_cut_the_run() -> None:
    """Lane 1's gate is another op: no group holds load 1; loads 2…5 are one group of 4 and
    0, 1, 6, 7 stay scalar (v4 loads no 2 float32 lanes)."""
    g0 = _prep(kernel(8, same=False))
    g = slp(g0, x86_desc("x86-64-v4"))
    assert [u.shape for u in _lane_gated(g)] == [(4,)]
    assert len([u for u in toposort([g]) if u.op is Ops.LOAD and u.shape == ()]) == 4
    _same_values(g0, g)


def test_v3_packs_runs_too() -> None:
    """x86-64-v3 has the load as VMASKMOVPS (lanes of an xmm or a ymm)."""
    g0 = _prep(kernel(8))
    g = slp(g0, x86_desc("x86-64-v3"))
    assert [u.shape for u in _lane_gated(g)] == [(8,)]
    _same_values(g0, g)


@pytest.mark.parametrize("desc", [AMD, CUDA], ids=["amd", "cuda"])
def test_targets_without_lane_gates_keep_scalar_loads(desc) -> None:
    g0 = _prep(kernel())
    assert not _lane_gated(slp(g0, desc))


@pytest.mark.parametrize("desc", [AMD, CUDA], ids=["amd", "cuda"])
def test_devectorize_splits_a_lane_gated_load(desc) -> None:
    """The v4 graph (per-lane gates) handed to a target without them: every lane-gated load
    is split into scalar loads, each gated by its own lane; the values stay."""
    g0 = _prep(kernel(8))
    g = slp(g0, x86_desc("x86-64-v4"))
    assert _lane_gated(g)
    d = devectorize(g, desc)
    assert not _lane_gated(d)
    loads = [u for u in toposort([d]) if u.op is Ops.LOAD and len(u.src) == 3]
    assert loads and all(u.src[2].shape == () for u in loads)
    _same_values(g0, d)


def test_devectorize_keeps_legal_and_chunks_wide_lane_gates() -> None:
    """v4 keeps a lane-gated load of 8; a run of 32 is cut into loads of 8 (no int32 x 16
    compare on v4: the gates of 16 do not pack); a lane-gated load of 32 float32 (wider than
    a zmm) is split into lane-gated chunks of 16, each gated by its lanes."""
    v4 = x86_desc("x86-64-v4")
    g = slp(_prep(kernel(8)), v4)
    assert [u.shape for u in _lane_gated(devectorize(g, v4))] == [(8,)]
    g0 = _prep(kernel(32))
    g32 = slp(g0, v4)
    assert [u.shape for u in _lane_gated(g32)] == [(8,)] * 4
    _same_values(g0, g32)
    wide = padded_kernel(N, 64, -7, 32, 0.5)
    d = devectorize(wide, v4)
    assert sorted(u.shape for u in _lane_gated(d)) == [(16,), (16,)]
    _same_values(wide, d)
    d3 = devectorize(wide, x86_desc("x86-64-v3"))        # (ymm: 8 float32 lanes)
    assert [u.shape for u in _lane_gated(d3)] == [(8,)] * 4
    _same_values(wide, d3)


def rows_kernel() -> str:
    """out[4i + r] = ((x_r0 + x_r1) + x_r2) + x_r3, x_rj = x[8i + 100r + j - 7] where
    `6 - j < 8i` (else 0): 4 runs of 4 gated loads, each row summed into one output lane
    (cumsum_777 r_3_128's accumulator: each lane a row's horizontal sum)."""
    t = ["# kcc-uop 1", "%out = PARAM ParamArg(0, float32, 64)",
         "%x = PARAM ParamArg(1, float32, 512)", "%z = CAST(0) float32",
         "%i = RANGE(16) (0, LOOP)", "%e = MUL(%i, 8)"]
    for r in range(4):
        for j in range(4):
            t += [f"%o{r}{j} = ADD(%e, {100 * r + j - 7})", f"%p{r}{j} = INDEX(%x, %o{r}{j})",
                  f"%g{r}{j} = CMPLT({6 - j}, %e)", f"%l{r}{j} = LOAD(%p{r}{j}, %z, %g{r}{j})"]
        t += [f"%a{r} = ADD(%l{r}0, %l{r}1)", f"%b{r} = ADD(%a{r}, %l{r}2)",
              f"%h{r} = ADD(%b{r}, %l{r}3)"]
    t += ["%st = STACK(%h0, %h1, %h2, %h3)", "%q = MUL(%i, 4)", "%po = SHRINK(%out, %q, 4)",
          "%w = STORE(%po, %st)", "%end = END(%w, %i)", 'SINK(%end) KernelInfo(name="rows")']
    return "\n".join(t) + "\n"


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_rows_of_lane_gated_loads_sum_transposed(arch: str) -> None:
    """Each row is one lane-gated load; the 4 row sums are 3 vector ADDs over transposed
    tuples (element j of each row: lanes of the 4 loads, a shuffle), no scalar ADD."""
    g0 = _prep(rows_kernel())
    g = slp(g0, x86_desc(arch))
    assert [u.shape for u in _lane_gated(g)] == [(4,)] * 4
    adds = [u for u in toposort([g]) if u.op is Ops.ADD
            and u.dtype == dtypes.float32]
    assert len(adds) == 3 and all(u.shape == (4,) for u in adds)
    _same_values(g0, g)


def jammed_columns(m: int = 4, terms: int = 2) -> str:
    """out[4i + c] = Π_q x[4i + c + q - 3] over q < terms, each factor 1 where its element is
    before the buffer (gate `2 - q < 4i + c`), stored as one vector of the m columns:
    cumprod r_3_40_10_4's m jammed columns, column c's factors a run of consecutive
    elements, and lane c of every factor the next element."""
    t = ["# kcc-uop 1", "%out = PARAM ParamArg(0, float32, 64)",
         "%x = PARAM ParamArg(1, float32, 64)", "%one = CAST(1.0) float32",
         "%i = RANGE(16) (0, LOOP)", "%e = MUL(%i, 4)"]
    stores = []
    for c in range(m):
        t.append(f"%e{c} = ADD(%e, {c})")
        acc = None
        for q in range(terms):
            t += [f"%o{c}_{q} = ADD(%e{c}, {q - 3})", f"%p{c}_{q} = INDEX(%x, %o{c}_{q})",
                  f"%g{c}_{q} = CMPLT({2 - q}, %e{c})",
                  f"%l{c}_{q} = LOAD(%p{c}_{q}, %one, %g{c}_{q})"]
            if acc is None:
                acc = f"%l{c}_{q}"
            else:
                t.append(f"%m{c}_{q} = MUL({acc}, %l{c}_{q})")
                acc = f"%m{c}_{q}"
        stores.append(acc)
    t += ["%po = SHRINK(%out, %e, 4)", f"%v = STACK({', '.join(stores)})",
          "%st = STORE(%po, %v)", "%end = END(%st, %i)", 'SINK(%end) KernelInfo(name="jammed")']
    return "\n".join(t) + "\n"


def test_a_tuple_of_gated_loads_the_vector_work_asks_for_is_one_load() -> None:
    """The 4 columns' products are one vector product; each factor's 4 lanes (one gated load
    of each column, consecutive elements) one masked load, not a shuffle of the masked load
    the seed made of column 0's run and scalar loads of the other columns."""
    g0 = _prep(jammed_columns())
    g = slp(g0, x86_desc("x86-64-v4"))
    vl = _lane_gated(g)
    assert sorted(u.shape for u in vl) == [(4,), (4,)]
    assert not [u for u in toposort([g]) if u.op is Ops.LOAD and u.shape == ()]
    _same_values(g0, g)


def window() -> str:
    """out[8i + j] = x[8i + j - 4] + … + x[8i + j - 1] + x[8i + j], term k 0 before the row
    (gate `k - 1 < j`): cumsum r_32_8_8's window; the inner loop of 8 widens across its
    iterations, and its 4 gated loads are a run of consecutive elements."""
    t = ["# kcc-uop 1", "%out = PARAM ParamArg(0, float32, 32)",
         "%x = PARAM ParamArg(1, float32, 32)", "%z = CAST(0.0) float32",
         "%i = RANGE(4) (0, LOOP)", "%j = RANGE(8, %i) (1, LOOP)", "%p = MULACC(%i, 8, %j)"]
    acc = None
    for k in range(4, 0, -1):
        t += [f"%p{k} = ADD(%p, {-k})", f"%px{k} = INDEX(%x, %p{k})",
              f"%g{k} = CMPLT({k - 1}, %j)", f"%x{k} = LOAD(%px{k}, %z, %g{k})"]
        if acc is not None:
            t.append(f"%s{k} = ADD({acc}, %x{k})")
        acc = f"%s{k}" if acc is not None else f"%x{k}"
    t += ["%px0 = INDEX(%x, %p)", "%x0 = LOAD(%px0)", f"%s = ADD({acc}, %x0)",
          "%po = INDEX(%out, %p)", "%st = STORE(%po, %s)", "%e = END(%st, %j)",
          "%e2 = END(%e, %i)", 'SINK(%e2) KernelInfo(name="window")']
    return "\n".join(t) + "\n"


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_a_run_in_a_loop_that_widens_is_left_to_widen(arch: str) -> None:
    """The run x[8i + j - 4] … x[8i + j - 1] stays scalar: widen makes every load of it one
    8-lane load gated lane by lane (packed here, the loop would keep a vector of 4 summed
    lane by lane, and widen_lanes would leave it scalar)."""
    from kcc.passes.widen import widen
    desc = x86_desc(arch)
    g0 = _prep(window())
    g = slp(g0, desc)
    assert not _lane_gated(g)
    w = widen(g, desc)
    assert sorted(u.shape for u in _lane_gated(w)) == [(8,)] * 4
    _same_values(g0, w)


def test_a_run_beside_a_loop_that_widens_is_packed() -> None:
    """The run's own loop (4i + j - 7: strided, widen leaves it) is what decides, not the
    outer loop around it, whose nest also holds a loop that widens (y copied to o)."""
    lines = kernel().splitlines()
    at = lines.index("%i = RANGE(16) (0, LOOP)")
    lines[at] = "%i = RANGE(16, %r) (1, LOOP)"
    lines[1:1] = ["%o = PARAM ParamArg(2, float32, 16)", "%y = PARAM ParamArg(3, float32, 16)"]
    at = lines.index("%i = RANGE(16, %r) (1, LOOP)")
    lines[at:at] = ["%r = RANGE(2) (0, LOOP)", "%k = RANGE(8, %r) (2, LOOP)",
                    "%yk = MULACC(%r, 8, %k)", "%py = INDEX(%y, %yk)", "%vy = LOAD(%py)",
                    "%po2 = INDEX(%o, %yk)", "%sy = STORE(%po2, %vy)", "%ek = END(%sy, %k)"]
    end = lines.index("%end = END(%st, %i)")
    lines[end:end + 2] = ["%end = END(%st, %i)", "%both = GROUP(%end, %ek)",
                          "%er = END(%both, %r)", 'SINK(%er) KernelInfo(name="beside")']
    g0 = _prep("\n".join(lines) + "\n")
    g = slp(g0, x86_desc("x86-64-v4"))
    assert [u.shape for u in _lane_gated(g)] == [(4,)]
    _same_values(g0, g)
