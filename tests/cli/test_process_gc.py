"""`kcc compile` as a process of its own pauses the cyclic collector while it imports and
compiles (re-enabled after) and freezes every object at exit, so the interpreter's final
collection has nothing to rescan (kcc/cli.py); a caller that passes args (click's CliRunner,
a test process) keeps its collector and is never frozen."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kcc import cli
from paths import EXAMPLES

SAXPY = str(EXAMPLES / "saxpy.uop")

PROBE = """
import atexit, gc, sys
from kcc import cli
# registered first, so it runs last (atexit is LIFO): after the command's own handlers
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0, flush=True))
sys.argv = ["kcc", "compile", "-t", "x86", {src!r}, "-o", {out!r}]
try:
    cli.main()
except SystemExit as e:
    print("exit", e.code, "gc", gc.isenabled(), flush=True)
"""


def test_own_process_freezes_at_exit_and_keeps_gc_enabled(tmp_path: Path) -> None:
    out = str(tmp_path / "k.o")
    r = subprocess.run([sys.executable, "-c", PROBE.format(src=SAXPY, out=out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["exit", "0", "gc", "True", "frozen", "True"]
    assert Path(out).stat().st_size > 0


def test_cli_runner_is_not_frozen(tmp_path: Path) -> None:
    before = gc.get_freeze_count()
    res = CliRunner().invoke(cli.main, ["compile", "-t", "x86", SAXPY, "-o",
                                        str(tmp_path / "k.o")])
    assert res.exit_code == 0, res.output
    assert cli._own_process is False
    assert gc.isenabled()
    assert gc.get_freeze_count() == before
