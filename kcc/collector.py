"""The cyclic garbage collector paused around work that makes many long-lived objects and next
to no reference cycles: parsing, compiling, and `kcc compile`'s own imports.

Each full collection rescans every live object, so while a compile builds millions of nodes,
instructions and operands the collections it triggers cost time and find nothing: they were
more than half of the time a 40,000-node chain took to compile (bench/compile_scale.py) and 5%
of the instructions of `kcc compile saxpy.uop` (callgrind). Reference counting still frees
everything else at once; the few cycles wait for the next collection after the `with`.
"""
from __future__ import annotations

import gc

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class paused:
    """The cyclic collector off for the `with` (nested uses keep it off until the outermost
    ends; one that was already off stays off). A class, not contextlib's generator: a
    compile's start-up does not import contextlib (issue 24, item 4)."""

    __slots__ = ("was_enabled",)

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: Any) -> None:
        if self.was_enabled:
            gc.enable()
