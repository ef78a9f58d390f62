"""`kcc check` and `kcc fmt`: exit codes, stderr reports, in-place formatting, --version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kcc.cli import main
from kcc.frontend.parser import parse
from paths import DATA

EXAMPLES = sorted((DATA / "frontend_examples").glob("*.uop"))
GOOD = ('# kcc-uop 1\n# a comment kept by fmt\n%o = PARAM ParamArg(0, float32, 4)\n'
        '%z = INDEX(%o, 0)\n%st = STORE(%z, 2.5)\nSINK(%st) KernelInfo(name="k")\n')
BAD = GOOD.replace("STORE(%z, 2.5)", "STORE(%z, %nope)")


def run(*args: str, input: bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def test_check_ok_on_examples() -> None:
    res = run("check", *map(str, EXAMPLES))
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    for p in EXAMPLES:
        assert f"{p}: ok" in res.stdout


def test_check_reports_error_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.uop"
    bad.write_text(BAD)
    good = tmp_path / "good.uop"
    good.write_text(GOOD)
    res = run("check", str(good), str(bad))
    assert res.exit_code == 1
    assert f"{good}: ok" in res.stdout
    lines = res.stderr.split("\n")
    col = BAD.split("\n")[4].index("%nope") + 1
    assert lines[0] == f"{bad}:5:{col}: error: %nope is never defined"
    assert lines[1] == BAD.split("\n")[4]
    assert lines[2] == " " * (col - 1) + "^"


def test_check_missing_file_and_directory(tmp_path: Path) -> None:
    res = run("check", str(tmp_path / "nope.uop"), str(tmp_path))
    assert res.exit_code == 1
    assert f"{tmp_path / 'nope.uop'}: error: cannot read the file" in res.stderr
    assert f"{tmp_path}: error: cannot read the file" in res.stderr


def test_check_stdin() -> None:
    assert run("check", "-", input=GOOD.encode()).exit_code == 0
    res = run("check", "-", input=b"\x89PNG\r\n\x1a\n\x00\x00")
    assert res.exit_code == 1 and res.stderr.startswith("<stdin>:1:1: error:")


def test_fmt_stdout_is_canonical(tmp_path: Path) -> None:
    f = tmp_path / "k.uop"
    f.write_text(GOOD)
    res = run("fmt", str(f))
    assert res.exit_code == 0
    assert res.stdout == ('# kcc-uop 1\n# a comment kept by fmt\n'
                          '%0 = PARAM ParamArg(0, float32, 4)     : float32[4]\n'
                          '%1 = INDEX(%0, 0)                      : float32\n'
                          '%2 = STORE(%1, 2.5)\n'
                          'SINK(%2) KernelInfo(name="k")\n')
    assert parse(res.stdout) is parse(GOOD)
    g = tmp_path / "k2.uop"
    g.write_text(res.stdout)
    assert run("fmt", str(g)).stdout == res.stdout


def test_fmt_in_place(tmp_path: Path) -> None:
    for p in EXAMPLES:
        f = tmp_path / p.name
        f.write_bytes(p.read_bytes())
        res = run("fmt", "-i", str(f))
        assert res.exit_code == 0 and res.stdout == ""
        once = f.read_text()
        assert parse(once) is parse(p.read_bytes())
        assert run("fmt", "-i", str(f)).exit_code == 0
        assert f.read_text() == once


def test_fmt_refuses_bad_file_without_touching_it(tmp_path: Path) -> None:
    f = tmp_path / "bad.uop"
    f.write_text(BAD)
    res = run("fmt", "-i", str(f))
    assert res.exit_code == 1 and ": error: %nope is never defined" in res.stderr
    assert f.read_text() == BAD


def test_version() -> None:
    res = run("--version")
    assert res.exit_code == 0 and res.stdout.startswith("kcc, version ")


def test_real_process_has_no_traceback(tmp_path: Path) -> None:
    # one run through a real interpreter: stderr, exit status and no traceback end to end
    f = tmp_path / "deep.uop"
    f.write_text("# kcc-uop 1\n%i = RANGE(4) " + "(" * 1_000_000 + "\n")
    proc = subprocess.run([sys.executable, "-m", "kcc.cli", "check", str(f)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{f}:2:47: error: an arg nested more than 32 levels deep")
    assert "Traceback" not in proc.stderr
