"""Fuzzing the CUDA target without a GPU: batches of random valid kernels (the same
strategies as the x86 fuzzer, plus the GPU-only local_exchange: LOCAL memory and a BARRIER
listing its stores) compile to one PTX module, and `ptxas -arch=sm_90` (the
independent oracle) must accept it. One ptxas call per batch keeps this fast.

CI runs a fixed, derandomized batch; `KCC_FUZZ_EXAMPLES=N` runs N random batches.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.harness import check_ptxas, derandomize, find_ptxas, n_examples
from fuzz.strategies import gpu_kernels

BATCH = 8


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed "
                    "(pip install nvidia-cuda-nvcc)")
@settings(max_examples=n_examples(25), deadline=None, database=None,
          derandomize=derandomize(),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(st.lists(gpu_kernels(), min_size=1, max_size=BATCH))
def test_ptx_passes_ptxas(sinks) -> None:
    check_ptxas(sinks, "sm_90")
