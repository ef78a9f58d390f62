"""The suite runs from a fresh clone with nothing beside it (README's second line): no test
reads a path outside the repository, and the pytest plugin kcc installs loads without the
optional tinygrad."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_test_reads_or_cites_a_path_outside_the_repo() -> None:
    outside = re.compile(r"/work/|\.\./shared|parents\[2\]|REPO\.parent|ROOT\.parent")
    bad = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
           for p in sorted((ROOT / "tests").rglob("*.py")) if p.name != Path(__file__).name
           for i, line in enumerate(p.read_text().splitlines(), 1) if outside.search(line)]
    assert not bad, "\n".join(bad)


def test_the_pytest_plugin_loads_without_tinygrad() -> None:
    code = ("import sys; sys.modules['tinygrad'] = None\n"
            "import kcc.tinygrad.plugin, kcc.tinygrad as t\n"
            "try:\n    t.KCCRenderer\nexcept ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"DEV": "CPU:KCC", "PATH": "/usr/bin:/bin",
                            "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert "pip install 'kcc[tinygrad]'" in r.stdout
