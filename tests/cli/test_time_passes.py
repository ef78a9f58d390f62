"""`kcc compile --time-passes`: one line per pipeline pass on stderr, and a total."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kcc.cli import main
from kcc.frontend.parser import parse
from kcc.targets.pipeline import PASS_NAMES, time_passes
from kcc.targets.x86.target import compile_x86
from paths import DATA

KERNEL = DATA / "kernels" / "lanewise_add.uop"


def test_time_passes_lists_every_pass(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["compile", "-t", "x86", str(KERNEL), "-o",
                                  str(tmp_path / "k.o"), "--time-passes"])
    assert r.exit_code == 0, r.output
    rows = [line.split()[0] for line in r.output.splitlines()
            if line and not line.startswith("wrote")]
    assert rows == ["pass", *PASS_NAMES, "total"]


def test_time_passes_counts_only_inside_the_with() -> None:
    sink = parse(KERNEL.read_text(), str(KERNEL))
    with time_passes() as times:
        compile_x86([sink])
    after = dict(times)
    compile_x86([sink])
    assert times == after and all(v > 0 for v in after.values())
