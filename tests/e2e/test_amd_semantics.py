"""The semantics tables on AMD, through kcc's emulator, for gfx1100 (wave32) and gfx942 (wave64):

- every case of tests/e2e/test_semantics.py (NaN compares in four forms, MAX with NaN and ±0,
  CDIV/CMOD signs, wrap-around, half rounding, fused MULACC, …) against its hand-written
  expected values, as x86 checks them in tests/e2e/test_x86_semantics.py;
- the op × dtype table of tests/support/cuda_kernels.py (every ALU op on every dtype, THREEFRY,
  every CAST and BITCAST pair) against the reference interpreter on special-biased inputs (signed
  zeros, inf, NaN, full-range integers), as the CUDA GPU test checks it.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuda_kernels import has_transcendental, mismatch, op_matrix, random_args
from test_semantics import CASES, same_bits
from x86_util import reference

ARCHS = ("gfx1100", "gfx942")


def _emulate(sink, inputs: list, arch: str) -> list:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    (code,) = compile_amd_code([sink], arch)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
    return got


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_semantics_case_on_amd(case, arch: str) -> None:
    name, sink, inputs, expected = case
    got = _emulate(sink, inputs, arch)
    for slot, want in expected.items():
        assert same_bits(got[slot].reshape(want.shape), want), \
            f"{name} on {arch}: slot {slot}: kcc gave {got[slot]!r}, expected {want!r}"


MATRIX = op_matrix()


def _matrix_params() -> list:
    return [pytest.param(sink, id=sink.arg.name) for sink in MATRIX]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("sink", _matrix_params())
def test_op_matrix_on_amd_matches_interpreter(sink, arch: str) -> None:
    from kcc.targets.amd.target import compile_amd_code
    (code,) = compile_amd_code([sink], arch)
    args = random_args(code.desc, np.random.default_rng(7))
    want = reference(sink, args)
    got = _emulate(sink, args, arch)
    for slot, a in enumerate(code.desc.args):
        if a.kind != "buffer":
            continue
        m = mismatch(a.dtype, got[slot], want[slot], has_transcendental(sink))
        assert m is None, f"{sink.arg.name} on {arch}: argument {slot}: {m}"
