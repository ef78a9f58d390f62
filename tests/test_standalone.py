"""The suite runs from a fresh clone with nothing beside it (README's second line): no test
reads or cites a path outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_test_reads_or_cites_a_path_outside_the_repo() -> None:
    outside = re.compile(r"/work/|\.\./shared|parents\[2\]|REPO\.parent|ROOT\.parent")
    bad = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
           for p in sorted((ROOT / "tests").rglob("*.py")) if p.name != Path(__file__).name
           for i, line in enumerate(p.read_text().splitlines(), 1) if outside.search(line)]
    assert not bad, "\n".join(bad)
