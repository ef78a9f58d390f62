"""Fuzzing `kcc check`: random bytes and randomly mutated valid files never crash it.

Every run must end with exit 0, or exit 1 and a clean `path:line:col: error:` report, never a
traceback. A mutant that is still accepted must format canonically: fmt(fmt(x)) == fmt(x) and
parse(fmt(x)) is the same graph. KCC_FUZZ_EXAMPLES raises the example count (default small).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcc.cli import main
from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop
from paths import DATA

EXAMPLES = [p.read_bytes() for p in
            sorted((DATA / "frontend_examples").glob("*.uop"))
            + sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.uop"))]
N = int(os.environ.get("KCC_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=N, deadline=None, derandomize=not os.environ.get("KCC_FUZZ_EXAMPLES"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ERROR = re.compile(r"^<stdin>(:\d+:\d+)?: error: .+")
# Pieces a mutation splices in: tokens of the format, near-miss tokens, odd bytes.
PIECES = [b"%", b"%x", b"%0", b"(", b")", b",", b"=", b":", b"[", b"]", b"#", b"\n", b" ",
          b"\t", b"\"", b"'", b"-", b"0", b"1", b"-1", b"0x", b"1e999", b"1.5", b"nan", b"inf",
          b"-inf", b"true", b"None", b"ADD", b"RANGE", b"END", b"SINK", b"PARAM", b"CAST",
          b"WMMA", b"STORE", b"INDEX", b"float32", b"int8", b"weakint", b"LOOP", b"ALU",
          b"ParamArg(", b"KernelInfo(", b"addrspace=", b"\xff", b"\x00", b"\r", b"\xe2\x80\xa8",
          b"99999999999999999999999", b"(((((((((((((((((((((((((((((((((((((("]


def check(data: bytes) -> int:
    """Run `kcc check -` on data; assert a clean outcome; return the exit code."""
    res = CliRunner().invoke(main, ["check", "-"], input=data)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exc_info
    assert res.exit_code in (0, 1), res.output
    assert "Traceback" not in res.output
    if res.exit_code == 1:
        first = res.stderr.split("\n")[0]
        assert ERROR.match(first), res.stderr
    return res.exit_code


# Same-class swaps keep more mutants valid, so the fmt properties below get exercised.
SWAPS = [re.compile(rb"\b(?:float32|float64|float16|int32|int8|uint8|int64|uint64)\b"),
         re.compile(rb"(?<![%\w.])-?\d+(?:\.\d+)?\b"), re.compile(rb"%\w+")]
SWAP_TO = [[b"float32", b"float64", b"float16", b"int32", b"int8", b"uint8", b"bfloat16"],
           [b"0", b"1", b"2", b"-1", b"255", b"256", b"3.5", b"-0.0", b"0x7f", b"1e30"],
           [b"%0", b"%i", b"%x", b"%out", b"%e", b"%st", b"%acc"]]


@st.composite
def mutants(draw: st.DrawFn) -> bytes:
    head, _, body = draw(st.sampled_from(EXAMPLES)).partition(b"\n")
    data = bytearray(body)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 5))
        at = draw(st.integers(0, len(data)))
        if kind == 0:                                   # delete a span
            del data[at:at + draw(st.integers(1, 12))]
        elif kind == 1:                                 # insert a piece
            data[at:at] = draw(st.sampled_from(PIECES))
        elif kind == 2:                                 # replace a span with a piece
            data[at:at + draw(st.integers(1, 6))] = draw(st.sampled_from(PIECES))
        elif kind == 3:                                 # duplicate or drop a whole line
            lines = bytes(data).split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            if draw(st.booleans()):
                lines.insert(k, lines[k])
            else:
                del lines[k]
            data = bytearray(b"\n".join(lines))
        elif kind == 4:                                 # swap a token for one of its class
            c = draw(st.integers(0, len(SWAPS) - 1))
            hits = list(SWAPS[c].finditer(bytes(data)))
            if hits:
                m = hits[draw(st.integers(0, len(hits) - 1))]
                data[m.start():m.end()] = draw(st.sampled_from(SWAP_TO[c]))
        else:                                           # random text or bytes
            junk = draw(st.text(max_size=6).map(str.encode) | st.binary(min_size=1, max_size=4))
            data[at:at] = junk
    if draw(st.integers(0, 9)) == 9:                    # now and then break the header too
        head = draw(st.sampled_from([b"# kcc-uop 2", b"#kcc-uop 1", b"", b"\xef\xbb\xbf" + head]))
    return head + b"\n" + bytes(data)


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    check(data)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_after_header(data: bytes) -> None:
    check(b"# kcc-uop 1\n" + data)


@FUZZ
@given(mutants())
def test_mutated_examples(data: bytes) -> None:
    if check(data) == 0:
        sink = parse(data)
        text = format_uop(sink)
        assert parse(text) is sink
        assert format_uop(parse(text)) == text


def test_examples_check_clean() -> None:
    for data in EXAMPLES:
        assert check(data) == 0
