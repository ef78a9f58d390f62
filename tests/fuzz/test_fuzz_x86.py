"""Differential fuzzing of the x86 target: random valid kernels (tests/fuzz/strategies.py),
compiled, run in-process on inputs biased toward NaN, ±inf, ±0, subnormals, INT_MIN and the
unsigned maximum, and compared bit for bit with the reference interpreter (NaN = NaN).

CI runs a fixed, derandomized batch; `KCC_FUZZ_EXAMPLES=N` runs N random examples per test.
A failure prints the kernel's .uop text and the input seed: add it to test_regressions.py.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.harness import (check_x86, check_x86_contract, check_x86_streaming, derandomize,
                          n_examples)
from fuzz.lanewise import lanewise, lanewise_reduce, lanewise_tile
from fuzz.shapes import jam
from fuzz.strategies import X86_AVOID, elementwise, reduce, vector
from x86_util import NEEDS_V4, high_vectors_first

SEEDS = st.integers(0, 2**32 - 1)


def _settings(default: int) -> settings:
    return settings(max_examples=n_examples(default), deadline=None, database=None,
                    derandomize=derandomize(),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@_settings(120)
@given(elementwise(avoid=X86_AVOID), SEEDS)
def test_elementwise_matches_interpreter(sink, seed) -> None:
    check_x86(sink, seed)


@_settings(60)
@given(reduce(avoid=X86_AVOID), SEEDS)
def test_reg_accumulator_matches_interpreter(sink, seed) -> None:
    check_x86(sink, seed)


@_settings(60)
@given(vector(avoid=X86_AVOID), SEEDS)
def test_vector_matches_interpreter(sink, seed) -> None:
    check_x86(sink, seed)


@NEEDS_V4
@_settings(40)
@given(vector(avoid=X86_AVOID, wide=True), SEEDS)
def test_zmm_vector_matches_interpreter(sink, seed) -> None:
    check_x86(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(60)
@given(vector(avoid=X86_AVOID), SEEDS)
def test_v4_vector_matches_interpreter(sink, seed) -> None:
    """xmm/ymm vectors on x86-64-v4: compares, bool ops and WHEREs by opmasks (x86_kmask)."""
    check_x86(sink, seed, "x86-64-v4")


@_settings(40)
@given(vector(avoid=X86_AVOID), SEEDS)
def test_streaming_stores_vector_matches_interpreter(sink, seed) -> None:
    """Every qualifying store non-temporal (--streaming-stores=always), on aligned and
    misaligned buffers (the entry picks the body)."""
    check_x86_streaming(sink, seed)


@NEEDS_V4
@_settings(60)
@given(elementwise(avoid=X86_AVOID), SEEDS)
def test_v4_elementwise_matches_interpreter(sink, seed) -> None:
    """Scalar kernels on x86-64-v4: gated loads as masked VMOVSS/SD, TRUNC as VRNDSCALE."""
    check_x86(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(30)
@given(vector(avoid=X86_AVOID, wide=True), SEEDS)
def test_streaming_stores_zmm_vector_matches_interpreter(sink, seed) -> None:
    check_x86_streaming(sink, seed, "x86-64-v4")


@_settings(30)
@given(lanewise(), SEEDS)
def test_streaming_stores_lanewise_matches_interpreter(sink, seed) -> None:
    check_x86_streaming(sink, seed)


@_settings(80)
@given(lanewise(), SEEDS)
def test_lanewise_matches_interpreter(sink, seed) -> None:
    """Per-lane scalar work on vector loads (the SLP pass re-packs it) against the interpreter."""
    check_x86(sink, seed)


@NEEDS_V4
@_settings(30)
@given(lanewise(wide=True), SEEDS)
def test_zmm_lanewise_matches_interpreter(sink, seed) -> None:
    check_x86(sink, seed, "x86-64-v4")


@_settings(60)
@given(lanewise(loop=True), SEEDS)
def test_widened_lanewise_loop_matches_interpreter(sink, seed) -> None:
    """Elementwise loops passes/widen.py runs 2 iterations at a time (8 float32 lanes)."""
    check_x86(sink, seed)


@NEEDS_V4
@_settings(40)
@given(lanewise(loop=True), SEEDS)
def test_zmm_widened_lanewise_loop_matches_interpreter(sink, seed) -> None:
    """The same on x86-64-v4: up to 4 iterations at a time (16 float32 lanes)."""
    check_x86(sink, seed, "x86-64-v4")


@_settings(50)
@given(lanewise_reduce(), SEEDS)
def test_lanewise_reduce_matches_interpreter(sink, seed) -> None:
    """An upcast REG accumulator updated lane by lane (SLP packs its STOREs and LOADs)."""
    check_x86(sink, seed)


@_settings(40)
@given(lanewise_tile(), SEEDS)
def test_lanewise_tile_matches_interpreter(sink, seed) -> None:
    """tinygrad's upcast matmul tile (rows × lanes of REG accumulators): the SLP pass widens
    its lane groups to ymm (x86-64-v3)."""
    check_x86(sink, seed)


@NEEDS_V4
@_settings(40)
@given(lanewise_tile(), SEEDS)
def test_zmm_lanewise_tile_matches_interpreter(sink, seed) -> None:
    """The same tiles widened to zmm (x86-64-v4)."""
    check_x86(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(60)
@given(elementwise(avoid=X86_AVOID), SEEDS)
def test_high_vector_registers_elementwise(sink, seed) -> None:
    with high_vectors_first():
        check_x86(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(40)
@given(vector(avoid=X86_AVOID), SEEDS)
def test_high_vector_registers_vector(sink, seed) -> None:
    with high_vectors_first():
        check_x86(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(30)
@given(lanewise(), SEEDS)
def test_high_vector_registers_lanewise(sink, seed) -> None:
    with high_vectors_first():
        check_x86(sink, seed, "x86-64-v4")


# --fp-contract=fast: the oracle is the interpreter on the graph after the contract pass
@_settings(40)
@given(st.one_of(elementwise(avoid=X86_AVOID), vector(avoid=X86_AVOID), lanewise(),
                 lanewise_tile(), jam()), SEEDS)
def test_fp_contract_fast_matches_interpreter_on_the_fused_graph(sink, seed) -> None:
    check_x86_contract(sink, seed)


@NEEDS_V4
@_settings(40)
@given(st.one_of(elementwise(avoid=X86_AVOID), vector(avoid=X86_AVOID, wide=True),
                 lanewise(wide=True), lanewise_tile(), jam()), SEEDS)
def test_v4_fp_contract_fast_matches_interpreter_on_the_fused_graph(sink, seed) -> None:
    check_x86_contract(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(40)
@given(lanewise_reduce(), SEEDS)
def test_v4_lanewise_reduce_matches_interpreter(sink, seed) -> None:
    check_x86(sink, seed, "x86-64-v4")
