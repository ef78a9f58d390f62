"""Test configuration: tests import their helpers (x86_util, …) from tests/support, and the fuzz
generators as the package `fuzz` (tests/fuzz)."""

import os
import sys
from pathlib import Path

# every x86 register allocation made by a test is re-verified by the independent checker
os.environ.setdefault("KCC_CHECK_ALLOC", "1")

sys.path.insert(0, str(Path(__file__).parent / "support"))
sys.path.insert(1, str(Path(__file__).parent))
# and the repository root, for tests that import `tests.<helper>` (a fresh clone with kcc
# installed by `pip install -e`, and no PYTHONPATH, has it nowhere else)
sys.path.insert(2, str(Path(__file__).resolve().parent.parent))
