"""The x86-64 target: ELF objects, their in-process loader and the x86 launch.

The registry imports this package (`"x86": "kcc.targets.x86"`) and reads `TARGET`, which is
built on first use by `target.py`: importing one module of the package (its arch table, its
driver) does not import the whole back end.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "TARGET":
        from kcc.targets.x86.target import TARGET
        return TARGET
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
