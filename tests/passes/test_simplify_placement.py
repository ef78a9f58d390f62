"""Folding an address must not move a LOAD out of its loop.

A node is placed by the RANGEs it depends on (docs/semantics.md, "Placement"): `out[i*0]` read
and written in loop i is a read-modify-write of out[0] in every iteration. simplify folds
`i*0` to 0; without keep_loops the LOAD then depended on no RANGE, ran once before the loop,
and every iteration added to the value from before the loop (found by the fuzzer)."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.ir.ops import Ops
from kcc.passes.linearize import range_sets
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.targets.x86.arch import X86_AVX2

ZERO_OF_I = ["MUL(%i, 0)", "AND(%i, 0)", "CMOD(%i, 1)", "CDIV(%i, 8)", "SHR(%i, 3)"]


def _kernel(zero: str) -> str:
    return f"""# kcc-uop 1
%out = PARAM ParamArg(0, float32, 4)
%a   = PARAM ParamArg(1, float32, 8)
%i   = RANGE(8) (0, REDUCE)              : weakint
%z   = {zero}                            : weakint
%p   = INDEX(%out, %z)
%cur = LOAD(%p)                          : float32
%pa  = INDEX(%a, %i)
%av  = LOAD(%pa)                         : float32
%s   = ADD(%cur, %av)                    : float32
%st  = STORE(%p, %s)
%e   = END(%st, %i)
SINK(%e) KernelInfo(name="rmw")
"""


def _args() -> list[np.ndarray]:
    out = np.array([0.5, 7.0, 8.0, 9.0], np.float32)
    a = np.array([1e8, 1.0, -1e8, 3.25, 0.1, 2.0, -7.5, 1e-3], np.float32)
    return [out, a]


def _expected() -> np.ndarray:
    """out[0] accumulates a[0..7] in order in float32 (numpy, no kcc code)."""
    out, a = _args()
    for v in a:
        out[0] = np.float32(out[0] + v)
    return out


@pytest.mark.parametrize("zero", ZERO_OF_I)
def test_the_interpreter_runs_the_read_modify_write_in_every_iteration(zero: str) -> None:
    got = reference(parse(_kernel(zero)), _args())[0]
    assert np.array_equal(got, _expected())


@pytest.mark.parametrize("zero", ZERO_OF_I)
def test_x86_keeps_the_load_in_its_loop(zero: str) -> None:
    got = compile_and_run(parse(_kernel(zero)), _args())[0]
    assert np.array_equal(got, _expected())


@pytest.mark.parametrize("zero", ZERO_OF_I)
def test_simplify_leaves_the_load_depending_on_its_range(zero: str) -> None:
    out = simplify(lower_weak_dtypes(parse(_kernel(zero)), X86_AVX2))
    order = out.toposort()
    deps = range_sets(order)
    loads = [n for n in order if n.op is Ops.LOAD]
    assert loads and all(any(r.op is Ops.RANGE for r in deps[n]) for n in loads)
