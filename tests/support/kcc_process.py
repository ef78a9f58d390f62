"""Running `kcc` in a fresh interpreter and reading what it imported (start-up tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def modules_after(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running `kcc ARGV…` (its exit ignored);
    env: the process's environment (None: this one's)."""
    code = ("import json, runpy, sys\n"
            f"sys.argv = ['kcc', *{list(argv)!r}]\n"
            "try:\n    runpy.run_module('kcc.cli', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=300)
    return set(json.loads(p.stderr.strip().splitlines()[-1]))
