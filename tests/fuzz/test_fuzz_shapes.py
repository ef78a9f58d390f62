"""Differential fuzzing of issue 12's shapes (tests/fuzz/shapes.py) on x86 against the reference
interpreter, PTX through ptxas, and the interpreter itself over the whole fuzz corpus (every
strategy): it runs each kernel the verifier accepts or refuses it with an InterpError, never
another exception.

CI runs a fixed, derandomized batch; `KCC_FUZZ_EXAMPLES=N` runs N random examples per test.
A failure prints the kernel's .uop text and the input seed: keep it as a named regression
(tests/isel/x86/test_x86_regressions.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.harness import (check_ptxas, check_x86, find_ptxas, n_examples, run_reference,
                          run_x86, special_inputs)
from fuzz.lanewise import lanewise
from fuzz.shapes import HALF_BITS, carried, half_nan, jam, mixed_lanes, spills
from fuzz.strategies import X86_AVOID, elementwise, reduce, vector
from kcc.frontend.printer import format_uop
from kcc.ir.interp import InterpError
from kcc.ir.verify import verify
from kcc.targets.manifest import describe_kernel
from x86_util import NEEDS_V4

SEEDS = st.integers(0, 2**32 - 1)


def _settings(default: int) -> settings:
    import os
    return settings(max_examples=n_examples(default), deadline=None, database=None,
                    derandomize="KCC_FUZZ_EXAMPLES" not in os.environ,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@_settings(40)
@given(carried(), SEEDS)
def test_carried_accumulators_match_interpreter(sink, seed) -> None:
    check_x86(sink, seed)


@_settings(40)
@given(mixed_lanes(), SEEDS)
def test_mixed_lane_widths_match_interpreter(sink, seed) -> None:
    check_x86(sink, seed)


@_settings(40)
@given(jam(), SEEDS)
def test_reduction_tiles_unrolled_and_jammed_match_interpreter(sink, seed) -> None:
    check_x86(sink, seed)


@NEEDS_V4
@_settings(40)
@given(jam(), SEEDS)
def test_v4_reduction_tiles_unrolled_and_jammed_match_interpreter(sink, seed) -> None:
    """Unroll-and-jam picks its factor per target (v4 jams more): the same tiles on v4."""
    check_x86(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(30)
@given(carried(), SEEDS)
def test_v4_carried_accumulators_match_interpreter(sink, seed) -> None:
    check_x86(sink, seed, "x86-64-v4")


@NEEDS_V4
@_settings(30)
@given(mixed_lanes(), SEEDS)
def test_v4_mixed_lane_widths_match_interpreter(sink, seed) -> None:
    """Compares of one width selecting vectors of another: opmasks on v4."""
    check_x86(sink, seed, "x86-64-v4")


@_settings(20)
@given(spills(), SEEDS)
def test_long_chains_spilling_both_classes_match_interpreter(sink, seed) -> None:
    check_x86(sink, seed)


def _half_inputs(sink, seed: int) -> list:
    """Special inputs, with the half buffers full of NaN payloads and infinities."""
    args = special_inputs(sink, seed)
    rng = np.random.default_rng(seed)
    for i, a in enumerate(describe_kernel(sink).args):
        if a.kind == "buffer" and a.dtype in HALF_BITS:
            bits = np.array(HALF_BITS[a.dtype], np.uint16)[rng.integers(0, 10, a.size)]
            args[i] = bits.view(np.float16) if a.dtype == "float16" else bits
    return args


@_settings(40)
@given(half_nan(), SEEDS)
def test_half_nan_payloads_match_interpreter(case, seed) -> None:
    """Movement outputs (NEG, WHERE, MAX, STACK lanes, casts to integers) bit for bit; the
    others NaN-as-NaN (docs/semantics.md)."""
    sink, exact = case
    verify(sink)
    args = _half_inputs(sink, seed)
    want = run_reference(sink, args)
    got = run_x86(sink, args)
    for slot in range(len(args)):
        g, w = got[slot], want[slot]
        if not isinstance(g, np.ndarray):
            continue
        bits = f"u{g.itemsize}" if g.dtype != bool else "u1"
        same = g.view(bits) == w.view(bits)
        if slot not in exact and g.dtype.kind == "f":
            same |= np.isnan(g) & np.isnan(w)
        elif slot not in exact and describe_kernel(sink).args[slot].dtype == "bfloat16":
            nan = lambda x: ((x & 0x7F80) == 0x7F80) & ((x & 0x7F) != 0)  # noqa: E731
            same |= nan(g) & nan(w)
        assert same.all(), (f"argument {slot}: kcc {g.view(bits).tolist()} interpreter "
                            f"{w.view(bits).tolist()}\nseed={seed}\n{format_uop(sink)}")


needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed "
                                 "(pip install nvidia-cuda-nvcc)")


@needs_ptxas
@_settings(15)
@given(st.lists(st.one_of(carried(), mixed_lanes(), spills(),
                          half_nan().map(lambda c: c[0])), min_size=1, max_size=4))
def test_shapes_compile_to_ptx_ptxas_accepts(sinks) -> None:
    check_ptxas(sinks)


CORPUS = st.one_of(elementwise(avoid=X86_AVOID), reduce(avoid=X86_AVOID),
                   vector(avoid=X86_AVOID), lanewise(), carried(), mixed_lanes(), spills(),
                   jam(),
                   half_nan().map(lambda c: c[0]))


@_settings(150)
@given(CORPUS, SEEDS)
def test_interpreter_runs_the_whole_fuzz_corpus(sink, seed) -> None:
    """The oracle never crashes: every verified kernel of every strategy runs, or is refused
    with an InterpError whose message says why."""
    verify(sink)
    try:
        run_reference(sink, special_inputs(sink, seed))
    except InterpError as e:
        assert str(e), "an InterpError without a message"
