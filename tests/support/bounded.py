"""Run a piece of Python in a fresh interpreter with its address space and time bounded, for
tests of work that must stay linear in the graph: a walk that is not would run out of the
memory or the time instead of hanging the test session (no timed assertion: the bounds are
many times what a linear walk needs, and a non-linear one needs 2^60 steps)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
REPO = TESTS.parent


def run_bounded(code: str, timeout: float = 120, memory_mb: int = 1024) -> str:
    """Run `code` with `python -c` under RLIMIT_AS = memory_mb and a wall-clock timeout; its
    standard output. Fails the calling test (AssertionError) when it raises, exceeds the
    memory (MemoryError) or runs out of time, with the end of its standard error."""
    limit = memory_mb << 20

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(REPO), str(SUPPORT), str(TESTS)] + [
                   p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout, preexec_fn=bound, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"did not finish in {timeout} s (a non-linear walk?)") from None
    assert r.returncode == 0, f"exit {r.returncode} under {memory_mb} MiB:\n{r.stderr[-3000:]}"
    return r.stdout
