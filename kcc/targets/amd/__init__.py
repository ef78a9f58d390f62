"""The AMD GPU target: HSACO code objects, the HIP driver launch and the emulator.

The registry imports this package (`"amd": "kcc.targets.amd"`) and reads `TARGET`, which is
built on first use by `target.py`: importing one module of the package (its arch table, its
driver) does not import the whole back end.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "TARGET":
        from kcc.targets.amd.target import TARGET
        return TARGET
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
