"""Helpers for x86 end-to-end tests: compile a graph with kcc, run it in-process, and run the
reference interpreter on the same inputs (the oracle)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp
from kcc.ir.interp import run as interp_run
from kcc.targets.manifest import check_launch
from kcc.targets.x86.objload import LoadedObject
from kcc.targets.x86.target import V4_FLAGS, compile_x86, cpu_flags, launch

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "data" / "kernels" / "shared"   # the shared examples (project copy)

# Whether this CPU runs x86-64-v4 (AVX-512) objects; tests that run them skip elsewhere.
HAS_V4 = all(f in cpu_flags() for f in V4_FLAGS)
NO_V4 = "this CPU has no AVX-512 (x86-64-v4 objects cannot run here)"
NEEDS_V4 = pytest.mark.skipif(not HAS_V4, reason=NO_V4)
# Both vector levels, x86-64-v4 skipped where it cannot run (x86-64-v3 runs everywhere kcc does).
ARCHS = ["x86-64-v3", pytest.param("x86-64-v4", marks=NEEDS_V4)]


def selected_text(text: str, arch: str = "x86-64-v3", **options: str) -> str:
    """The x86 selector's output for a kernel's text (the pipeline's dump after `select`;
    options: X86Target's, e.g. vector_width="512")."""
    import io

    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    out = io.StringIO()
    run_pipeline(parse(text), X86Target(arch, **options), dump_after="select", out=out)
    return out.getvalue()


def random_inputs(sink: UOp, seed: int = 0) -> list:
    """Random arguments in slot order: a mix of ordinary and special float values, full-range
    integers, and scalars within their declared ranges."""
    from kcc.targets.manifest import describe_kernel
    rng = np.random.default_rng(seed)
    out = []
    for a in describe_kernel(sink).args:
        dt = np.dtype("uint16" if a.dtype == "bfloat16" else
                      ("bool" if a.dtype == "bool" else a.dtype))
        n = a.size if a.kind == "buffer" else 1
        if a.dtype == "bool":
            v = rng.integers(0, 2, n).astype(bool)
        elif dt.kind == "f" and a.kind == "scalar" and a.range:
            v = rng.uniform(float(a.range[0]), float(a.range[1]), 1).astype(dt)
        elif dt.kind == "f":
            v = (rng.standard_normal(n) * 4).astype(dt)
        elif a.dtype == "bfloat16":
            v = (rng.standard_normal(n).astype(np.float32).view(np.uint32) >> 16).astype(dt)
        else:
            info = np.iinfo(dt)
            lo, hi = (a.range if a.kind == "scalar" and a.range else (info.min, info.max))
            lo, hi = max(lo, info.min, -1000), min(hi, info.max, 1000)
            v = rng.integers(lo, hi + 1, n).astype(dt)
        out.append(v if a.kind == "buffer" else v[0])
    return out


def compile_and_run(sink: UOp, args: list, arch: str = "x86-64-v3",
                    fp_contract: str = "off", **options: str) -> list:
    """Compile sink for x86 (options: compile_x86's, e.g. prefetch="always"), run it on copies
    of args, return the (updated) arguments."""
    obj, descs = compile_x86([sink], arch, fp_contract=fp_contract, **options)
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    lo = LoadedObject(obj)
    try:
        launch(lo, descs[0], check_launch(descs[0], mine))
    finally:
        lo.close()
    return mine


def run_lacking(sink: UOp, args: list, lacks: set) -> list:
    """Compile sink for x86 as if it lacked the (op, dtype) pairs in lacks (dtype None: every
    dtype), so that the target-neutral decompositions of those ops run; run it on copies of
    args and return them."""
    from dataclasses import replace

    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target, write_object
    t = X86Target()
    native = t.desc.native
    t.desc = replace(t.desc, native=lambda op, dt: (op, dt) not in lacks and
                     (op, None) not in lacks and native(op, dt))
    k, d = run_pipeline(sink, t)
    lo = LoadedObject(write_object([k], t.pool))
    mine = [a.copy() for a in args]
    try:
        launch(lo, d, check_launch(d, mine))
    finally:
        lo.close()
    return mine


def reference(sink: UOp, args: list) -> list:
    """The interpreter's result on copies of args."""
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interp_run(sink, ref)
    return ref


def assert_same(sink: UOp, got: list, want: list, ulp: int = 0) -> None:
    """Bit-exact equality (NaNs equal), or within `ulp` units in the last place for floats."""
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, np.ndarray):
            continue
        if ulp and g.dtype.kind == "f":
            close = np.isclose(g, w, rtol=ulp * np.finfo(g.dtype).eps, atol=0, equal_nan=True)
            bad = ~(close | (g.view(f"u{g.itemsize}") == w.view(f"u{g.itemsize}")))
        else:
            bad = g.view(f"u{g.itemsize}") != w.view(f"u{g.itemsize}")
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise AssertionError(f"{sink.arg.name}: argument {i} differs at {k}: kcc "
                                 f"{g.reshape(-1)[k]!r}, interpreter {w.reshape(-1)[k]!r} "
                                 f"({int(bad.sum())} of {bad.size} elements)")


def check_file(path: Path, seed: int = 0, ulp: int = 0) -> None:
    """Compile and run a .uop file on x86 and compare it with the interpreter."""
    sink = parse(path.read_text(), str(path))
    args = random_inputs(sink, seed)
    assert_same(sink, compile_and_run(sink, args), reference(sink, args), ulp)


def vector_pressure_kernel(nvec: int, iters: int, lanes: int, name: str,
                           step: Callable[[int], list[str]]) -> str:
    """A kernel with nvec float32 vectors of `lanes` lanes (%v0..) loaded before a loop of
    `iters` iterations and all used in every iteration: %t0 = %xv * %v0, then `step(j)`'s
    lines define %t{j} from %t{j-1}, %v{j} and %xv; the last %t is stored per iteration."""
    lines = ["# kcc-uop 1", f"%out = PARAM ParamArg(0, float32, {lanes * iters})",
             f"%a = PARAM ParamArg(1, float32, {lanes * nvec})",
             f"%x = PARAM ParamArg(2, float32, {lanes * iters})"]
    for j in range(nvec):
        lines += [f"%p{j} = SHRINK(%a, {lanes * j}, {lanes})", f"%v{j} = LOAD(%p{j})"]
    lines += [f"%i = RANGE({iters}) (0, LOOP)", f"%s = MUL(%i, {lanes})",
              f"%xp = SHRINK(%x, %s, {lanes})", "%xv = LOAD(%xp)", "%t0 = MUL(%xv, %v0)"]
    for j in range(1, nvec):
        lines += step(j)
    lines += [f"%op = SHRINK(%out, %s, {lanes})", f"%st = STORE(%op, %t{nvec - 1})",
              "%e = END(%st, %i)", f'SINK(%e) KernelInfo(name="{name}")']
    return "\n".join(lines) + "\n"


@contextmanager
def high_vectors_first() -> Iterator[None]:
    """Allocate xmm16-31 before xmm0-15 (x86-64-v4): every vector form with an EVEX twin then
    runs EVEX-encoded with high registers, and VEX-only operands take the low ones."""
    old = os.environ.get("KCC_X86_HIGH_VEC_FIRST")
    os.environ["KCC_X86_HIGH_VEC_FIRST"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["KCC_X86_HIGH_VEC_FIRST"]
        else:
            os.environ["KCC_X86_HIGH_VEC_FIRST"] = old


APPROX = {Ops.EXP2, Ops.LOG2, Ops.SIN}     # docs/transcendentals.md: not bit-exact
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _cpu_examples() -> list[Path]:
    """The examples a CPU target runs (no BARRIER, LOCAL buffer or lidx)."""
    out = []
    for p in sorted(EXAMPLES.glob("*.uop")):
        nodes = parse(p.read_text(), str(p)).toposort()
        if not any(n.op in (Ops.BARRIER, Ops.BUFFER) or (n.op is Ops.SPECIAL
                   and n.arg.startswith("lidx")) for n in nodes):
            out.append(p)
    return out


CPU_EXAMPLES = _cpu_examples()


def defined_only(sink, got: list, args: list) -> list:
    """got with every element the semantics leave unspecified for these inputs (the
    interpreter's two choices differ there: docs/semantics.md, an out-of-range shift amount,
    as `kcc run --check` compares) set to the interpreter's first choice. examples/int64_bits'
    shift amounts are random uint64 up to 1000: its x86-64-v3 loop, unrolled and packed into
    VPSLLVQ, gives 0 where SHL r64, cl took the amount modulo 64 (also the other x86 code a
    test runs on random inputs: tests/encode/x86/test_asm_roundtrip.py)."""
    from kcc.targets.check import reference as both
    want, defined = both(sink, args)
    return [np.where(d.reshape(g.shape), g, w) if isinstance(g, np.ndarray) and d is not None
            else g for g, w, d in zip(got, want, defined)]
