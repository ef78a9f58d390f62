"""kcc/passes/divconst.py: CDIV/CMOD by constants as multiplies, compiled for x86 and run
against the reference interpreter (the oracle) on edge dividends (0, ±1, MIN, MAX, their
neighbours, multiples of the divisor ±1) and random ones, at int32/uint32/int64/uint64, for
small, large, negative, power-of-two, 1, -1 and MIN divisors; and index arithmetic whose
dividend range is known (a RANGE), which takes the smaller plans."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.divconst import div_const
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.disasm import disasm_object
from kcc.targets.x86.target import compile_x86


def _divisors(dt: np.dtype) -> list[int]:
    info = np.iinfo(dt)
    ds = [1, 2, 3, 5, 6, 7, 10, 12, 25, 100, 641, 1000, 4096, 6700417, 10 ** 9 + 7,
          info.max, info.max // 3, info.max // 2 + 1 if info.min == 0 else info.max - 1,
          (1 << 31) - 1, (1 << 31) + 1, (1 << 32) - 1, (1 << 32) + 1, 12345678901234567]
    if info.min < 0:
        ds += [-1, -2, -3, -7, -12, -641, -(1 << 20), info.min, info.min + 1]
    else:
        ds += [info.max - 1, (info.max >> 1) + 2, 0x9E3779B97F4A7C15]
    return sorted({d for d in ds if info.min <= d <= info.max})


def _dividends(dt: np.dtype, ds: list[int], seed: int) -> np.ndarray:
    info = np.iinfo(dt)
    v = {0, 1, 2, 3, info.max, info.max - 1, info.max - 2, info.min, info.min + 1, -1, -2}
    for d in ds:
        for k in (1, 2, 3, abs(int(info.max) // max(abs(d), 1))):
            for e in (-1, 0, 1):
                v |= {k * d + e, -(k * d) + e}
    rng = np.random.default_rng(seed)
    vals = [x for x in v if info.min <= x <= info.max]
    bits = rng.integers(1, info.bits + 1, 600)
    raw = [int(rng.integers(0, 1 << int(b), dtype=np.uint64)) for b in bits]
    raw = [r if info.min == 0 or r <= info.max else r >> 1 for r in raw]
    if info.min < 0:
        raw += [-r for r in raw[:300]]
    return np.array(sorted(set(vals + raw)), dt)


def _kernel(op: str, dt: str, ds: list[int], n: int):
    """out[k*n + i] = op(x[i], ds[k]) for every divisor (one kernel, one store per divisor)."""
    lines = ["# kcc-uop 1", f"%o = PARAM ParamArg(0, {dt}, {n * len(ds)})",
             f"%a = PARAM ParamArg(1, {dt}, {n})", f"%i = RANGE({n}) (0, LOOP) : weakint",
             "%ai = INDEX(%a, %i)", f"%x = LOAD(%ai) : {dt}"]
    stores = []
    for k, d in enumerate(ds):
        lines += [f"%d{k} = CAST({d}) {dt}", f"%r{k} = {op}(%x, %d{k}) : {dt}",
                  f"%j{k} = ADD(%i, {k * n}) : weakint", f"%oi{k} = INDEX(%o, %j{k})",
                  f"%s{k} = STORE(%oi{k}, %r{k})"]
        stores.append(f"%s{k}")
    lines += [f"%g = GROUP({', '.join(stores)})", "%e = END(%g, %i)",
              'SINK(%e) KernelInfo(name="k")']
    return parse("\n".join(lines) + "\n")


@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("op", ["CDIV", "CMOD"])
def test_divide_by_constants_matches_interpreter(op: str, dt: str) -> None:
    ds = _divisors(np.dtype(dt))
    x = _dividends(np.dtype(dt), ds, 7)
    sink = _kernel(op, dt, ds, x.size)
    args = [np.zeros(x.size * len(ds), dt), x]
    got, want = compile_and_run(sink, args)[0], reference(sink, args)[0]
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(int(x[i % x.size]), ds[i // x.size], got[i], want[i])
                           for i in bad[:6]]


def _passes(sink):
    desc = x86_desc("x86-64-v3")
    return div_const(simplify(lower_weak_dtypes(sink, desc), desc), desc)


@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64"])
def test_no_division_left_but_powers_of_two(dt: str) -> None:
    """After div_const only the CDIV/CMOD by powers of two remain (the selector shifts)."""
    ds = _divisors(np.dtype(dt))
    for op in ("CDIV", "CMOD"):
        out = _passes(_kernel(op, dt, ds, 16))
        left = {int(u.src[1].src[0].arg) for u in toposort([out])
                if u.op in (Ops.CDIV, Ops.CMOD)}
        assert all(d > 0 and d & (d - 1) == 0 for d in left), left


def test_no_div_instruction_in_the_object() -> None:
    """The x86 object divides by none of these constants with DIV/IDIV."""
    for dt in ("int32", "uint64", "int64"):
        sink = _kernel("CMOD", dt, [3, 7, -10, 641], 16)
        obj, _ = compile_x86([sink], "x86-64-v3")
        text = disasm_object(obj)
        assert "div" not in text.replace("kdiv", ""), text


def _index_kernel(dt: str, n: int, d: int) -> object:
    """out[i] = (i // d) * 1000 + i % d over a RANGE of n: a dividend of known range."""
    return parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {n})
%i = RANGE({n}) (0, LOOP) : weakint
%x = CAST(%i) {dt}
%dd = CAST({d}) {dt}
%k = CAST(1000) {dt}
%q = CDIV(%x, %dd) : {dt}
%r = CMOD(%x, %dd) : {dt}
%t = MUL(%q, %k) : {dt}
%v = ADD(%t, %r) : {dt}
%oi = INDEX(%o, %i)
%s = STORE(%oi, %v)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")


@pytest.mark.parametrize("dt", ["int32", "int64", "uint64"])
@pytest.mark.parametrize("d", [3, 7, 10, 25, 97])
def test_index_math_known_range(dt: str, d: int) -> None:
    """A non-negative RANGE dividend takes a plan without sign correction and matches."""
    sink = _index_kernel(dt, 5000, d)
    args = [np.zeros(5000, dt)]
    got, want = compile_and_run(sink, args)[0], reference(sink, args)[0]
    assert (got == want).all()
    out = _passes(sink)
    assert not any(u.op in (Ops.CDIV, Ops.CMOD) for u in toposort([out]))
    if dt != "int32":       # int32 lanes take MULHI (x86 has it on vectors): no wider MUL
        assert not any(u.op is Ops.MULHI for u in toposort([out]))    # small range: one MUL


def _vector_kernel(op: str, dt: str, ds: list[int], n: int, lanes: int):
    """out[i*L:(i+1)*L] = op(x[i*L:(i+1)*L], STACK(ds)) with L-lane loads and stores."""
    stack = ", ".join(f"%d{k}" for k in range(lanes))
    consts = "\n".join(f"%d{k} = CAST({ds[k % len(ds)]}) {dt}" for k in range(lanes))
    return parse(f"""# kcc-uop 1
%o = PARAM ParamArg(0, {dt}, {n})
%a = PARAM ParamArg(1, {dt}, {n})
%i = RANGE({n // lanes}) (0, LOOP) : weakint
%s0 = MUL(%i, {lanes}) : weakint
%ap = SHRINK(%a, %s0, {lanes})
%x = LOAD(%ap) : {dt}[{lanes}]
{consts}
%dv = STACK({stack}) : {dt}[{lanes}]
%r = {op}(%x, %dv) : {dt}[{lanes}]
%op = SHRINK(%o, %s0, {lanes})
%s = STORE(%op, %r)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")


@pytest.mark.parametrize("dt", ["int32", "uint32", "int64"])
@pytest.mark.parametrize("op", ["CDIV", "CMOD"])
@pytest.mark.parametrize("lanes,arch", [(4, "x86-64-v3"), (8, "x86-64-v3"), (8, "x86-64-v4"),
                                        (16, "x86-64-v4")])
def test_vector_lanes(op: str, dt: str, lanes: int, arch: str) -> None:
    """Vectors divided by one constant per lane: int32/uint32 x 4/8 become vector MULHI
    (VPMULUDQ-based on x86), int64 lanes one by one; each divisor against the interpreter."""
    ds = [d for d in _divisors(np.dtype(dt)) if d not in (0,)]
    x = _dividends(np.dtype(dt), ds, 3)
    x = np.resize(x, (x.size + 15) // 16 * 16)
    for d in ds:
        sink = _vector_kernel(op, dt, [d], x.size, lanes)
        if dt != "int64" and d > 0 and d & (d - 1) and lanes < 16:
            assert any(u.op is Ops.MULHI and u.shape == (lanes,)
                       for u in toposort([_passes(sink)]))
        args = [np.zeros(x.size, dt), x]
        got, want = compile_and_run(sink, args, arch)[0], reference(sink, args)[0]
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (d, [(x[i], got[i], want[i]) for i in bad[:4]])


def test_vector_lanes_of_different_divisors() -> None:
    """A STACK of different constants is divided lane by lane."""
    ds = [3, -7, 1, 641, -1, 10, 2, -(2 ** 31)]
    x = _dividends(np.dtype("int32"), ds, 4)
    x = np.resize(x, (x.size + 7) // 8 * 8)
    for op in ("CDIV", "CMOD"):
        sink = _vector_kernel(op, "int32", ds, x.size, 8)
        args = [np.zeros(x.size, np.int32), x]
        got, want = compile_and_run(sink, args)[0], reference(sink, args)[0]
        assert (got == want).all()


def test_vector_mulhi_with_high_registers() -> None:
    """x86-64-v4 with xmm16-31 allocated first: the VPMULUDQ sequence in EVEX-encoded twins."""
    from x86_util import high_vectors_first
    x = _dividends(np.dtype("int32"), [7, 641], 9)
    x = np.resize(x, (x.size + 7) // 8 * 8)
    for d, dt in ((7, "int32"), (641, "uint32"), (-3, "int32")):
        sink = _vector_kernel("CMOD", dt, [d], x.size, 8)
        args = [np.zeros(x.size, dt), x.astype(dt)]
        with high_vectors_first():
            got = compile_and_run(sink, args, "x86-64-v4")[0]
        assert (got == reference(sink, args)[0]).all()
