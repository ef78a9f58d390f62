"""The fast line parser (kcc.frontend.plain) reads every file as the full parser does.

Oracle: the full lexer and parser (`parse_result(..., fast=False)`), which every line the fast
path does not take goes to: for every .uop under examples/, golden/ and tests/data, the same
files as kcc's printer writes them, and a generated corpus (tests/fuzz's strategies), both
give the same SINK (nodes are hash-consed: the same object), the same locations and names; for
malformed variants of their lines, the same error text."""

from __future__ import annotations

import math
import random

import pytest

from kcc.frontend.errors import SourceError
from kcc.frontend.lexer import split_lines
from kcc.frontend.parser import parse_result
from kcc.frontend.plain import PlainParser
from kcc.frontend.printer import format_uop
from paths import DATA, EXAMPLES, REPO


def _files() -> list[tuple[str, str]]:
    paths = sorted([*EXAMPLES.rglob("*.uop"), *(REPO / "golden").rglob("*.uop"),
                    *DATA.rglob("*.uop")])
    return [(str(p.relative_to(REPO)), p.read_text()) for p in paths]


FILES = _files()


def _generated() -> list[tuple[str, str]]:
    """Kernels drawn (derandomized) from tests/fuzz's strategies, as the printer writes them."""
    pytest.importorskip("hypothesis")
    from hypothesis import HealthCheck, given, settings

    from fuzz.strategies import X86_AVOID, elementwise, reduce, vector
    out: list[tuple[str, str]] = []
    for strategy in (elementwise(avoid=X86_AVOID), reduce(avoid=X86_AVOID),
                     vector(avoid=X86_AVOID)):
        @settings(max_examples=15, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def draw(sink) -> None:
            out.append((f"gen{len(out)}", format_uop(sink)))
        draw()
    return out


def _outcome(text: str, path: str, fast: bool) -> tuple:
    try:
        r = parse_result(text, path, fast=fast)
    except SourceError as e:
        return ("error", e.render())
    return ("ok", r.sink, r.loc, r.names)


def _same(text: str, path: str) -> tuple:
    full = _outcome(text, path, fast=False)
    fast = _outcome(text, path, fast=True)
    assert fast == full, path
    return full


def _fast_lines(text: str) -> int:
    """How many statement lines the fast path takes itself."""
    lines = split_lines(text)
    p = PlainParser("x", lines)
    n = 0
    for i, ln in enumerate(lines[1:], 2):
        if ln and ln[0] == "%" and p._fast_line(i, ln):
            n += 1
        elif ln.strip() and not ln.lstrip().startswith("#"):
            # keep the parser's state going through the full path
            from kcc.frontend.lexer import Lexer
            p.lx = Lexer(ln, i, "x")
            if p.lx.peek().kind != "eol":
                p._statement(i)
    return n


@pytest.mark.parametrize("path,text", FILES, ids=[p for p, _ in FILES])
def test_every_file_parses_the_same(path: str, text: str) -> None:
    _same(text, path)
    try:
        printed = format_uop(parse_result(text, path, fast=False).sink)
    except SourceError:
        return                           # a file of the error tests: compared above
    _same(printed, path + ":printed")


def test_printed_and_generated_kernels_take_the_fast_path() -> None:
    """The fast path is taken (most statement lines of the printer's output) and agrees."""
    texts = [(p, format_uop(parse_result(t, p).sink)) for p, t in FILES[:40]
             if _outcome(t, p, False)[0] == "ok"]
    texts += _generated()
    assert len(texts) > 40
    taken = total = 0
    for path, text in texts:
        assert _same(text, path)[0] == "ok", path
        taken += _fast_lines(text)
        total += sum(1 for ln in split_lines(text) if ln.startswith("%"))
    assert taken > total // 2, (taken, total)


MUTATIONS = [
    lambda ln, r: ln.replace(", ", ",", 1),
    lambda ln, r: ln.replace("(", "( ", 1),
    lambda ln, r: ln[:r.randrange(len(ln))] + ln[r.randrange(len(ln)) + 1:],
    lambda ln, r: ln.replace("%", "%zz", 1) if ln.count("%") > 1 else ln + ")",
    lambda ln, r: ln.replace(")", ", %undefined)", 1),
    lambda ln, r: ln.replace(")", ", 1)", 1),
    lambda ln, r: ln.replace(")", ", 99999999999999999999999)", 1),
    lambda ln, r: ln.replace(")", ", 1e400)", 1),
    lambda ln, r: ln.replace(")", ", 0x10)", 1),
    lambda ln, r: ln.replace(")", ", -inf)", 1),
    lambda ln, r: ln + " float32",
    lambda ln, r: ln + " : int32",
    lambda ln, r: ln + "  # comment",
    lambda ln, r: ln.replace(" = ", " =  ", 1),
    lambda ln, r: ln.replace("ADD", "add", 1).replace("MUL", "MULL", 1),
    lambda ln, r: ln.replace("float32", "weakfloat").replace("int32", "bogus"),
    lambda ln, r: ln.replace("LOOP", "LOOPY").replace("(0, ", "(x, "),
    lambda ln, r: ln.split(" = ")[0] + " = " + ln.split(" = ")[0][:1] + "1",
]


def test_malformed_lines_give_the_full_parsers_error() -> None:
    """Each statement line of a sample of files, mutated: the same outcome, error text and
    all (a mutation may also leave a valid file)."""
    r = random.Random(21)
    errors = 0
    sample = [(p, t) for p, t in FILES if _outcome(t, p, False)[0] == "ok"][:25]
    for path, text in sample:
        lines = text.splitlines()
        stmts = [i for i, ln in enumerate(lines) if ln.startswith("%")]
        for i in r.sample(stmts, min(len(stmts), 6)):
            for mutate in MUTATIONS:
                bad = list(lines)
                bad[i] = mutate(lines[i], r)
                errors += _same("\n".join(bad) + "\n", path)[0] == "error"
        # a line defined twice, and a statement after the SINK
        dup = list(lines)
        dup.insert(stmts[-1] + 1, lines[stmts[-1]])
        errors += _same("\n".join(dup) + "\n", path)[0] == "error"
        after = [*lines, lines[stmts[-1]].replace("%", "%late", 1)]
        errors += _same("\n".join(after) + "\n", path)[0] == "error"
    assert errors > 100


def test_literal_values_match_the_lexer() -> None:
    """Every operand literal the fast path decodes is the lexer's value of the same text."""
    from kcc.frontend.fields import literal
    from kcc.frontend.lexer import Lexer
    for text in ["0", "-1", "007", "18446744073709551615", "-9223372036854775808", "0.5",
                 "-0.0", "1e5", "1E-5", "2.5e+10", "true", "false", "inf", "-inf", "nan",
                 "3.4028234663852886e+38", "0" * 39 + "7"]:
        tok = Lexer(text, 1, "x").next()
        got = literal(text)
        assert type(got) is type(tok.value), text
        assert (math.isnan(got) and math.isnan(tok.value)) or got == tok.value, text
        if isinstance(got, float):
            assert math.copysign(1, got) == math.copysign(1, tok.value)
    for text in ["18446744073709551616", "1" * 40, "1e400", "0x10", "1_0", "1.", ".5", "abc", ""]:
        assert literal(text) is None, text
