"""Optional dynamic instruction counters for the AMD emulator, off by default.

    with counting() as counts:
        run_hsaco(...)
    counts["VALU"], counts["waitcnt"], ...

Each executed wave instruction (one per wave, whatever its EXEC mask) is counted once in one
class, from its mnemonic (the instruction kinds of the RDNA3 and CDNA3 ISA manuals):
VALU (``v_*``), SALU (other ``s_*``), VMEM (``global_/buffer_/flat_/scratch_``), SMEM
(``s_load/s_buffer_load/s_store``), LDS (``ds_*``), waitcnt (``s_waitcnt*``), branch (``s_branch``,
``s_cbranch_*``, ``s_setpc/s_swappc/s_getpc``) and other (``s_nop``, ``s_endpgm``, ``s_barrier``,
``s_delay_alu``, ``s_clause``, ``s_sendmsg``: scheduling and program control). ``total`` is their
sum. When no ``counting()`` is active the emulator runs its uncounted loop, so emulation speed is
unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

CLASSES = ("VALU", "SALU", "VMEM", "SMEM", "LDS", "waitcnt", "branch", "other")

# the counts of the innermost active counting(), or None: read by core._run_workgroup
active: Counter | None = None

_OTHER = ("s_nop", "s_endpgm", "s_barrier", "s_delay_alu", "s_clause", "s_sendmsg",
          "s_sleep", "s_setprio", "s_code_end", "s_icache_inv", "s_trap")


def classify(name: str) -> str:
    """The class of a mnemonic (with or without an ``_e32``/``_e64`` suffix)."""
    if name.startswith("v_"):
        return "VALU"
    if name.startswith(("global_", "buffer_", "flat_", "scratch_")):
        return "VMEM"
    if name.startswith("ds_"):
        return "LDS"
    if name.startswith(("s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_dcache",
                        "s_gl1_inv")):
        return "SMEM"
    if name.startswith("s_waitcnt"):
        return "waitcnt"
    if name.startswith(("s_branch", "s_cbranch", "s_setpc", "s_swappc", "s_getpc")):
        return "branch"
    if name.startswith(_OTHER):
        return "other"
    return "SALU"


@contextmanager
def counting() -> Iterator[Counter]:
    """Count the wave instructions every emulated launch inside the ``with`` executes, by class
    (module docstring); the counts are the Counter yielded, ``total`` included at exit."""
    global active
    outer, counts = active, Counter({c: 0 for c in CLASSES})
    active = counts
    try:
        yield counts
    finally:
        active = outer
        counts["total"] = sum(counts[c] for c in CLASSES)
        if outer is not None:
            outer.update(counts)
