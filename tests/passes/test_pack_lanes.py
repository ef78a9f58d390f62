"""Packing independent scalar EXP2/LOG2/SIN into one vector op before decomposition
(kcc/passes/pack_lanes.py): every lane bit for bit the scalar decomposition's result (the
decomposed graph of a target without vectors, run in the interpreter; and on x86), within
2 ulp of glibc's long-double functions, and one polynomial instead of one a lane."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.interp import run as interp_run
from kcc.ir.uop import toposort
from kcc.ir.verify import verify
from kcc.passes.decompose import decompose
from kcc.passes.pack_lanes import pack_lanes
from kcc.passes.target import widths
from kcc.targets.x86.arch import X86_AVX2
from x86_util import compile_and_run

# the same target without vector registers: the scalar decomposition, lane by lane
SCALAR_X86 = dataclasses.replace(X86_AVX2, alu_widths=widths({}), mem_widths=widths({}))
LANES = 9                                       # as tinygrad's Box-Muller randn kernels


def _kernel(op: str, dt: str, lanes: int = LANES) -> str:
    """A loop whose body loads `lanes` scalars, applies op to each, stores each."""
    lines = ["# kcc-uop 1", f"%o = PARAM ParamArg(0, {dt}, {64 * lanes})",
             f"%a = PARAM ParamArg(1, {dt}, {64 * lanes})", "%n = CAST(64) int32",
             f"%w = CAST({lanes}) int32", "%i = RANGE(%n) (0, LOOP)", "%b = MUL(%i, %w)"]
    stores = []
    for j in range(lanes):
        lines += [f"%k{j} = CAST({j}) int32", f"%p{j} = ADD(%b, %k{j})",
                  f"%x{j} = INDEX(%a, %p{j})", f"%v{j} = LOAD(%x{j})", f"%f{j} = {op}(%v{j})",
                  f"%y{j} = INDEX(%o, %p{j})", f"%s{j} = STORE(%y{j}, %f{j})"]
        stores.append(f"%s{j}")
    lines += [f"%g = GROUP({', '.join(stores)})", "%e = END(%g, %i)",
              f'SINK(%e) KernelInfo(name="k_{op.lower()}_{dt}")']
    return "\n".join(lines) + "\n"


def _inputs(op: str, dt: type, n: int, seed: int) -> np.ndarray:
    """Values over the op's interesting range: SIN's large arguments (Payne-Hanek), LOG2's
    subnormals and powers of two, EXP2's overflow and underflow edges, and the specials."""
    rng = np.random.default_rng(seed)
    top = 127 if dt is np.float32 else 1023
    if op == "SIN":
        x = 2.0 ** rng.uniform(-20, top - 0.01, n) * rng.choice([-1, 1], n)
    elif op == "LOG2":
        x = 2.0 ** rng.uniform(-top - 20, top - 0.01, n)
    else:
        x = rng.uniform(-top - 30, top + 2, n)
    x = x.astype(dt)
    x[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0]
    return x


CASES = [(op, dt) for op in ("SIN", "LOG2", "EXP2") for dt in ("float32", "float64")]


def _np(dt: str) -> type:
    return np.float32 if dt == "float32" else np.float64


@pytest.mark.parametrize("op,dt", CASES)
def test_packed_lanes_equal_scalar_decomposition_in_interpreter(op: str, dt: str) -> None:
    sink = parse(_kernel(op, dt))
    packed, scalar = decompose(sink, X86_AVX2), decompose(sink, SCALAR_X86)
    verify(packed)
    n = 64 * LANES
    x = _inputs(op, _np(dt), n, seed=1)
    got, want = np.zeros(n, _np(dt)), np.zeros(n, _np(dt))
    interp_run(packed, [got, x])
    interp_run(scalar, [want, x])
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("op,dt", CASES)
def test_packed_lanes_on_x86_equal_scalar_decomposition(op: str, dt: str) -> None:
    sink = parse(_kernel(op, dt))
    n = 64 * LANES
    x = _inputs(op, _np(dt), n, seed=2)
    want = np.zeros(n, _np(dt))
    interp_run(decompose(sink, SCALAR_X86), [want, x])
    for arch in ("x86-64-v3", "x86-64-v4"):
        got = compile_and_run(sink, [np.zeros(n, _np(dt)), x], arch=arch)[0]
        assert got.tobytes() == want.tobytes(), arch
    # and the scalar decomposition is the function: within 2 ulp where finite
    ref = {"SIN": np.sin, "LOG2": np.log2, "EXP2": np.exp2}[op]
    with np.errstate(all="ignore"):
        exact = ref(x.astype(np.longdouble)).astype(_np(dt))
    fin = np.isfinite(exact) & (exact != 0)
    err = np.abs(want[fin].astype(np.longdouble) - exact[fin].astype(np.longdouble))
    assert (err / np.spacing(np.abs(exact[fin]))).max() <= 2.0


def test_one_polynomial_for_nine_lanes() -> None:
    """Nine scalar SINs become one 9-lane SIN (then split 8 + 1 by devectorize): the graph
    after decomposition is less than half the nine scalar decompositions (Payne-Hanek's
    uint64 work stays scalar on AVX2: no 64-bit vector multiply)."""
    sink = parse(_kernel("SIN", "float32"))
    packed = pack_lanes(sink, X86_AVX2)
    sins = [u for u in toposort([packed]) if u.op is Ops.SIN]
    assert [u.shape for u in sins] == [(LANES,)]
    assert 2 * len(toposort([decompose(sink, X86_AVX2)])) < len(
        toposort([decompose(sink, SCALAR_X86)]))


def test_dependent_and_separate_loops_do_not_pack() -> None:
    """SIN(SIN(x)) lanes pack by level (each level one vector: no cycle); SINs in two
    different loops never share a vector; a GPU target packs nothing."""
    src = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 64)
%a = PARAM ParamArg(1, float32, 64)
%n = CAST(32) int32
%c = CAST(32) int32
%i = RANGE(%n) (0, LOOP)
%xa = INDEX(%a, %i)
%va = LOAD(%xa)
%s1 = SIN(%va)
%s2 = SIN(%s1)
%u = ADD(%va, %va)
%s3 = SIN(%u)
%t = ADD(%s2, %s3)
%s4 = SIN(%t)
%ya = INDEX(%o, %i)
%st = STORE(%ya, %s4)
%e = END(%st, %i)
%j = RANGE(%n) (1, LOOP)
%jj = ADD(%j, %c)
%xb = INDEX(%a, %jj)
%vb = LOAD(%xb)
%s5 = SIN(%vb)
%yb = INDEX(%o, %jj)
%st2 = STORE(%yb, %s5)
%e2 = END(%st2, %j)
%g = GROUP(%e, %e2)
SINK(%g) KernelInfo(name="levels")
"""
    sink = parse(src)
    packed = pack_lanes(sink, X86_AVX2)
    verify(packed)
    shapes = sorted(u.shape for u in toposort([packed]) if u.op is Ops.SIN)
    # level 1: s1 and s3 packed (s5 is in the other loop); level 2: s2 alone; level 3: s4
    assert shapes == [(), (), (), (2,)]
    from kcc.targets.cuda.desc import CUDA
    assert pack_lanes(sink, CUDA) is sink
    x = _inputs("SIN", np.float32, 64, seed=3)
    got, want = np.zeros(64, np.float32), np.zeros(64, np.float32)
    interp_run(decompose(sink, X86_AVX2), [got, x])
    interp_run(decompose(sink, SCALAR_X86), [want, x])
    assert got.tobytes() == want.tobytes()
