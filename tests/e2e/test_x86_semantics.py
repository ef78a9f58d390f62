"""The semantics cases of tests/e2e/test_semantics.py (NaN compares in four forms, a float32
compare selecting float64, `0 < t` on float16, int64→uint32→int64, uint8 indices, a widened
uint32 scalar, MAX with NaN and ±0, CDIV/CMOD signs, wrap-around, half rounding, fused MULACC)
compiled for x86 and checked against the hand-written expected values."""

from __future__ import annotations

import pytest

from test_semantics import CASES, same_bits
from x86_util import compile_and_run


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_semantics_case_on_x86(case) -> None:
    name, sink, inputs, expected = case
    got = compile_and_run(sink, inputs)
    for slot, want in expected.items():
        assert same_bits(got[slot].reshape(want.shape), want), \
            f"{name}: slot {slot}: kcc x86 gave {got[slot]!r}, expected {want!r}"
