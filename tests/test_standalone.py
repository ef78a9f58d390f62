"""The suite runs from a fresh clone with nothing beside it (README's second line): no test
reads or cites a path outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def outside_refs(path: Path, text: str) -> list[str]:
    """The lines of a test file under tests/ that reach outside the repository: a path
    outside it, or `parents[k]` of the file climbing past the repository root."""
    depth = len(path.relative_to(ROOT).parts) - 1      # parents[depth] is the repository
    outside = re.compile(r"/work/|\.\./shared|REPO\.parent|ROOT\.parent")
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        climbs = [int(k) for k in re.findall(r"__file__\)(?:\.resolve\(\))?\.parents\[(\d+)\]",
                                             line)]
        if outside.search(line) or any(k > depth for k in climbs):
            out.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    return out


def test_no_test_reads_or_cites_a_path_outside_the_repo() -> None:
    bad = [b for p in sorted((ROOT / "tests").rglob("*.py")) if p.name != Path(__file__).name
           for b in outside_refs(p, p.read_text())]
    assert not bad, "\n".join(bad)


def test_a_climb_past_the_repository_is_found() -> None:
    p = ROOT / "tests" / "isel" / "x86" / "test_x.py"
    assert not outside_refs(p, "R = Path(__file__).resolve().parents[3]")
    assert outside_refs(p, "R = Path(__file__).resolve().parents[4]")
    assert outside_refs(p, "S = REPO.parent / 'shared'")


def test_readme_test_command_is_what_ci_runs() -> None:
    """README's second command line installs the extras CI installs (tinygrad included, so a
    new user's run has no tinygrad tests skipped) and .ci/run runs exactly its test command."""
    readme = (ROOT / "README.md").read_text().split("```sh\n", 1)[1].splitlines()
    test_cmd = readme[1].split(" && ", 2)[2]
    assert test_cmd == "pip install -e '.[test,tinygrad]' && pytest"
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith("#")]
    assert ci[-1] == test_cmd
