"""Fuzzing the AMD target: batches of random valid kernels (the strategies of the x86 fuzzer)
compile for gfx1100 and gfx942 with every register allocation re-verified by the checker,
llvm-mc-19 (the independent oracle) must assemble each listing, and where kcc's AMD emulator
is present each kernel also runs in it against the reference interpreter.

CI runs a fixed, derandomized batch; `KCC_FUZZ_EXAMPLES=N` runs N random batches.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.harness import check_amd, derandomize, n_examples
from fuzz.shapes import reflected
from fuzz.strategies import kernels

BATCH = 4


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_amd_fuzz(arch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCC_CHECK_ALLOC", "1")
    compiled = []

    @settings(max_examples=n_examples(15), deadline=None, database=None,
              derandomize=derandomize(),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(st.lists(kernels(), min_size=1, max_size=BATCH), st.integers(0, 2 ** 16))
    def run(sinks, seed) -> None:
        compiled.append(check_amd(sinks, arch, seed))

    run()
    assert sum(compiled) > 0, "every generated kernel was refused"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_amd_fuzz_reflected_indices(arch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """(s - t) + c indices, negative in part and in bounds as a whole (issue 20)."""
    monkeypatch.setenv("KCC_CHECK_ALLOC", "1")

    @settings(max_examples=n_examples(10), deadline=None, database=None,
              derandomize=derandomize(),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(reflected(), st.integers(0, 2 ** 16))
    def run(sink, seed) -> None:
        assert check_amd([sink], arch, seed) == 1

    run()
