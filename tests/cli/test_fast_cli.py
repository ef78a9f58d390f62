"""The fast front end (kcc/cli.py, no click) and the click front end (kcc/cli_click.py) agree.

Each command line of the table runs as a process through each front end, in its own copy of
one folder (a kernel, a bad kernel, a compiled object): the standard output and error bytes,
the exit status and every file left in the folder must be the same. A line the fast parser
runs itself must not import click (or the test would compare click with click); a bad line is
left to click, which prints its own usage error. The fast parser's values for the good lines
are also compared with what click's parser makes of the same words.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paths import EXAMPLES

BAD_UOP = "%x = PARAM ParamArg(0, float32, 4)\n%y = FROB(%x)\n"

DRIVER = """
import atexit, json, os, sys
def _report():
    with open(os.environ["KCC_TEST_REPORT"], "w") as f:
        json.dump("click" in sys.modules, f)
atexit.register(_report)        # first registered, so it runs last
sys.argv = ["kcc", *json.loads(os.environ["KCC_TEST_ARGV"])]
if os.environ["KCC_TEST_FRONT"] == "fast":
    from kcc.cli import main
else:
    from kcc.cli_click import main
main()
"""

# command lines the fast front end runs itself
FAST = [
    ["compile", "s.uop", "-t", "x86", "-o", "a.o"],
    ["compile", "-tx86", "s.uop", "--output=b.o", "--no-manifest"],
    ["compile", "s.uop", "--target=x86", "-o", "c.o", "--manifest", "c-m.json", "--header",
     "c.h", "--prefix", "p"],
    ["compile", "s.uop", "-t", "x86", "-o", "-", "--fp-contract", "fast"],
    ["compile", "s.uop", "-t", "x86", "--emit", "asm", "-o", "d.s", "--streaming-stores",
     "never", "--arch", "x86-64-v3"],
    ["compile", "s.uop", "s.uop", "-t", "x86", "-o", "e.o"],
    ["compile", "s.uop", "-t", "x86", "--dump-after", "linearize", "-o", "f.o"],
    ["compile", "-", "-t", "x86"],
    ["compile", "missing.uop", "-t", "x86", "-o", "g.o"],
    ["compile", "bad.uop", "-t", "x86", "-o", "h.o"],
    ["compile", "s.uop", "-t", "x86", "--emit", "nope", "-o", "i.o"],
    ["compile", "s.uop", "-t", "x86", "-o", "s.uop"],
    ["check", "s.uop"],
    ["check", "s.uop", "bad.uop", "missing.uop"],
    ["fmt", "s.uop"],
    ["fmt", "-i", "s.uop"],
    ["fmt", "bad.uop"],
    ["disasm", "k.o"],
    ["disasm", "--att", "k.o"],
    ["disasm", "s.uop"],
    ["disasm", ""],
    ["targets"],
    ["--version"],
    ["run", "s.uop", "--interp", "--random", "--seed", "3", "-o", "out"],
    ["run", "k.json", "--random", "-o", "out2"],
    ["run", "s.uop", "-t", "x86", "--check", "--seed", "0"],
    ["run", "s.uop", "-t", "x86"],
]
# command lines left to click: bad usage, help
CLICK = [
    [], ["--help"], ["nosuch"], ["compile", "--help"], ["compile", "s.uop"],
    ["compile", "s.uop", "-t", "nope"], ["compile", "s.uop", "-t"], ["compile", "-t", "x86"],
    ["compile", "s.uop", "-t", "x86", "--bogus"],
    ["compile", "s.uop", "-t", "x86", "--no-manifest=1"],
    ["compile", "s.uop", "-t", "x86", "--", "x"], ["compile", "s.uop", "-t", "X86"],
    ["compile", "s.uop", "-t", "x86", "--fp-contract", "maybe"], ["fmt"], ["fmt", "a", "b"],
    ["fmt", "-ix", "s.uop"], ["fmt", "-i=1", "s.uop"],
    ["run", "s.uop", "--seed", "-1"], ["run", "s.uop", "--seed", "x"], ["run"],
    ["run", "s.uop", "-1"], ["disasm"], ["targets", "x"], ["--version", "targets"],
]
# command lines the fast parser parses, whose command refuses them as a usage error (which the
# fast front end hands to click, to report as click reports its own)
USAGE = [
    ["compile", "s.uop", "-t", "x86", "--manifest", "m.json", "--no-manifest"],
    ["compile", "s.uop", "-t", "x86", "-o", ""], ["compile", "-", "-", "-t", "x86"],
    ["fmt", "-", "-i"],
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fast-cli")
    shutil.copy(EXAMPLES / "saxpy.uop", d / "s.uop")
    (d / "bad.uop").write_text(BAD_UOP)
    r = _kcc("click", ["compile", "s.uop", "-t", "x86", "-o", "k.o"], d, d / "report")
    assert r[0] == 0, r
    (d / "report").unlink()
    return d


def _kcc(front: str, argv: list[str], cwd: Path, report: Path) -> tuple[int, bytes, bytes]:
    env = dict(os.environ, KCC_TEST_ARGV=json.dumps(argv), KCC_TEST_FRONT=front,
               KCC_TEST_REPORT=str(report))
    p = subprocess.run([sys.executable, "-c", DRIVER], cwd=cwd, env=env, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    return p.returncode, p.stdout, p.stderr


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _both(argv: list[str], template: Path, tmp_path: Path) -> bool:
    """Run argv through both front ends; assert they agree; whether the fast one used click."""
    got = {}
    for front in ("fast", "click"):
        d = tmp_path / front
        shutil.copytree(template, d)
        report = tmp_path / f"{front}.json"
        got[front] = (*_kcc(front, argv, d, report), _files(d))
        used_click = json.loads(report.read_text())
        if front == "fast":
            fast_used_click = used_click
    f, c = got["fast"], got["click"]
    assert f[0] == c[0], (argv, f[:3], c[:3])
    assert f[1] == c[1], argv
    assert f[2] == c[2], argv
    assert f[3] == c[3], argv
    return fast_used_click


@pytest.mark.parametrize("argv", FAST, ids=" ".join)
def test_fast_path_agrees_with_click_without_importing_it(argv: list[str], template: Path,
                                                         tmp_path: Path) -> None:
    assert not _both(argv, template, tmp_path), f"{argv} went through click"


@pytest.mark.parametrize("argv", CLICK + USAGE, ids=lambda a: " ".join(a) or "(none)")
def test_bad_usage_is_left_to_click(argv: list[str], template: Path, tmp_path: Path) -> None:
    _both(argv, template, tmp_path)


def _click_params(argv: list[str]) -> tuple[str, dict]:
    """The command and keyword arguments click's parser makes of argv."""
    import click

    from kcc.cli_click import main
    ctx = main.make_context("kcc", list(argv), resilient_parsing=True)
    name, cmd, rest = main.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
    assert isinstance(cmd, click.Command)
    return name, dict(cmd.make_context(name, rest, parent=ctx).params)


@pytest.mark.parametrize("argv", [a for a in FAST + USAGE if a[0] != "--version"],
                         ids=" ".join)
def test_fast_parser_values_are_clicks(argv: list[str]) -> None:
    from kcc.cli import parse
    assert parse(argv) == _click_params(argv)


@pytest.mark.parametrize("argv", CLICK, ids=lambda a: " ".join(a) or "(none)")
def test_fast_parser_leaves_bad_lines_to_click(argv: list[str]) -> None:
    from kcc.cli import _Fallback, parse
    with pytest.raises(_Fallback):
        parse(argv)


def test_what_click_raises_is_not_chained_to_the_fallback(monkeypatch) -> None:
    """An exception click lets through on the fallback path (a captured script's own, in
    `kcc capture`) is raised outside the fast parser's except block: its traceback shows
    the user's frames only, not kcc's `_Fallback` as the exception it was handling."""
    from kcc import cli

    def boom(args, **extra):
        raise KeyError("boom")

    monkeypatch.setattr(cli, "_click", boom)
    with pytest.raises(KeyError) as info:
        cli.entry(["compile", "--no-such-option"])
    assert info.value.__context__ is None and info.value.__cause__ is None
