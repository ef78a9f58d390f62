"""A weak STACK of literals takes the dtype of the strong operand it is used beside, as a
literal does (docs/uop-format.md, "Constant ranges"): a uint64 lane constant in (int64's max,
uint64's max] is accepted there and computes what numpy computes, a lane out of range of the
use's dtype is refused at the use, and a lane beyond int64 that no strong use commits is
refused at the STACK. (Found by tests/fuzz/test_fuzz_roundtrip.py with KCC_FUZZ_EXAMPLES=200:
the fuzzer's own graph, printed, did not parse back.)"""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.errors import SourceError
from kcc.frontend.parser import parse
from support.x86_util import ARCHS, compile_and_run, reference

BIG = (0, 1, 2**63, 2**64 - 1)


def _kernel(dt: str, lanes: tuple[int, ...], use: str = "%w = ADD(%v, %k)") -> str:
    return "\n".join([
        "# kcc-uop 1",
        f"%out = PARAM ParamArg(0, {dt}, 16)",
        f"%in = PARAM ParamArg(1, {dt}, 16)",
        "%g = RANGE(4) (0, LOOP)",
        "%s = MUL(%g, 4)",
        "%src = SHRINK(%in, %s, 4)",
        "%v = LOAD(%src)",
        f"%k = STACK({', '.join(map(str, lanes))})",
        use,
        "%dst = SHRINK(%out, %s, 4)",
        "%st = STORE(%dst, %w)",
        "%e = END(%st, %g)",
        'SINK(%e) KernelInfo(name="k")', ""])


@pytest.mark.parametrize("arch", ARCHS)
def test_uint64_lanes_past_int64(arch: str) -> None:
    """STACK(0, 1, 2**63, 2**64-1) beside a uint64[4]: the x86 object and the interpreter
    both compute numpy's wrapping uint64 sum."""
    sink = parse(_kernel("uint64", BIG))
    x = np.arange(16, dtype=np.uint64) * np.uint64(0x0123456789ABCDEF)
    args = [np.zeros(16, np.uint64), x]
    want = x + np.tile(np.array(BIG, np.uint64), 4)
    assert np.array_equal(reference(sink, args)[0], want)
    assert np.array_equal(compile_and_run(sink, args, arch)[0], want)


def _at(text: str, line: int, marker: str) -> tuple[int, int]:
    """(line, column) of marker's first occurrence on that line (1-based)."""
    return line, text.splitlines()[line - 1].index(marker) + 1


def test_lane_out_of_range_of_the_use() -> None:
    """A lane that is no value of the use's dtype is refused at the use, naming the lane."""
    text = _kernel("uint8", (0, 1, 300, 7))
    with pytest.raises(SourceError) as e:
        parse(text)
    assert (e.value.line, e.value.col) == _at(text, 9, "%k)")
    assert "lane 2 of this STACK: constant 300 is out of range for uint8" in e.value.message


def test_lane_past_int64_without_a_strong_use() -> None:
    """Used only in weak (index) arithmetic, a lane past int64 stays refused at the STACK."""
    text = _kernel("uint64", BIG, "%k2 = ADD(%k, %k)\n%c = CAST(%k2) uint64\n%w = ADD(%v, %c)")
    with pytest.raises(SourceError) as e:
        parse(text)
    assert (e.value.line, e.value.col) == _at(text, 8, str(2**63))
    assert "out of range for int64" in e.value.message
