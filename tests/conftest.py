"""Test configuration: tests import their helpers (x86_util, …) from this folder."""

import os
import sys
from pathlib import Path

# every x86 register allocation made by a test is re-verified by the independent checker
os.environ.setdefault("KCC_CHECK_ALLOC", "1")

sys.path.insert(0, str(Path(__file__).parent))
