"""The differential fuzzer's graphs survive the text format: printed by format_uop and parsed
back (with the parser's verify and bounds check) they are the same graph. The strategies
write constants as producers do, wrapped literals included (CAST(v + 2**bits) dt)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from fuzz.harness import derandomize, n_examples
from fuzz.strategies import X86_AVOID, elementwise, reduce, vector
from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop

SETTINGS = settings(max_examples=n_examples(100), deadline=None, database=None,
                    derandomize=derandomize(), suppress_health_check=list(HealthCheck))


def _round_trip(sink) -> None:
    text = format_uop(sink)
    assert format_uop(parse(text)) == text


@SETTINGS
@given(elementwise(avoid=X86_AVOID))
def test_elementwise_graphs_round_trip(sink) -> None:
    _round_trip(sink)


@SETTINGS
@given(reduce(avoid=X86_AVOID))
def test_reduce_graphs_round_trip(sink) -> None:
    _round_trip(sink)


@SETTINGS
@given(vector(avoid=X86_AVOID))
def test_vector_graphs_round_trip(sink) -> None:
    _round_trip(sink)
