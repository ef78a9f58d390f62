"""Target-independent linear-scan register allocation and an independent checker.

The checker (kcc.regalloc.checker) is imported on first use of its names: a compile runs it
only when asked (KCC_CHECK_ALLOC=1), and importing it was 3% of a small compile's start-up.
"""

from __future__ import annotations

from kcc.regalloc.linear_scan import allocate
from kcc.regalloc.target import AllocationError, TargetRegInfo, reg_units

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AllocationError", "CheckError", "TargetRegInfo", "allocate", "check_allocation",
           "reg_units"]


def __getattr__(name: str) -> Any:
    if name in ("CheckError", "check_allocation"):
        from kcc.regalloc import checker
        return getattr(checker, name)
    raise AttributeError(f"module 'kcc.regalloc' has no attribute {name!r}")
