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
from contextlib import contextmanager

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Iterator


@contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off for the `with` (nested uses keep it off until the outermost
    ends; one that was already off stays off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
