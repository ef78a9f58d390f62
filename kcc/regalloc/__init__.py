"""Target-independent linear-scan register allocation and an independent checker."""

from kcc.regalloc.checker import CheckError, check_allocation
from kcc.regalloc.linear_scan import allocate
from kcc.regalloc.target import AllocationError, TargetRegInfo, reg_units

__all__ = ["AllocationError", "CheckError", "TargetRegInfo", "allocate", "check_allocation",
           "reg_units"]
