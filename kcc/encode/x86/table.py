"""x86-64 instruction forms as data: one frozen :class:`Row` per encodable form.

Every group the rest of kcc asks about (flag writers, two-address forms, branches, ...) is
derived from these rows by functions in
:mod:`kcc.encode.x86.encoder`; nothing here is a hand-kept set.

The row type, operand kinds and encoding fields are in :mod:`kcc.encode.x86.row`; the row
templates that build every form are in :mod:`kcc.encode.x86.rows`.

Form names are ``mnemonic`` + ``_`` + the operand kinds joined by ``_`` (``simm8``/``simm32``
print as ``imm8``/``imm32``), e.g. ``add_rm64_imm8``, ``vaddps_y_y_ym``. Conditional
instructions have one row per condition code: ``jne_rel8``, ``jne_rel32``, ``sete_rm8``,
``cmovl_r64_rm64``.
"""
from __future__ import annotations

import marshal

import os

from kcc.encode.x86 import row as _row_module
from kcc.encode.x86.row import FIELDS, KINDS, FormTable, Row  # noqa: F401 (KINDS re-exported)
from kcc.startup import cached_blobs

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# Alignment padding: NOPS[n - 1] is one n-byte no-op. 1-9 bytes are the recommended
# multi-byte NOPs of SDM Vol. 2B "NOP" (Table 4-12: 90, 66 90, NOP r/m32 0F 1F /0 with the
# displacement and SIB shapes that make each length, 66 for the 16-bit forms); 10 bytes is the
# 9-byte form behind a CS segment override (2E, ignored in 64-bit mode, §2.1.1). A longer gap
# is 10-byte NOPs and then the rest: the bytes llvm-mc pads `.p2align` with.
NOPS: tuple[bytes, ...] = tuple(bytes.fromhex(h) for h in (
    "90", "6690", "0f1f00", "0f1f4000", "0f1f440000", "660f1f440000", "0f1f8000000000",
    "0f1f840000000000", "660f1f840000000000", "662e0f1f840000000000"))



def _dump(rows: list[Row]) -> tuple[tuple, list[bytes]]:
    """The rows as marshal-able data: a head of each form's index (in the rows' order) and
    the forms with a branch target operand (form, mnemonic, operand kind) for the encoder's
    branch tables, and each form's field values (operands as their fields) marshalled on
    their own (kcc.startup.cached_blobs reads them one by one)."""
    index: dict[str, int] = {}
    blobs: list[bytes] = []
    for r in rows:
        if r.form in index:
            raise AssertionError(f"duplicate x86 form name {r.form!r}")
        vals = tuple(tuple((o.kind, o.slot, o.access) for o in v) if k == "operands" else v
                     for k, v in zip(FIELDS, (getattr(r, f) for f in FIELDS)))
        index[r.form] = len(blobs)
        blobs.append(marshal.dumps(vals))
    rel = tuple((r.form, r.mnemonic, o.kind) for r in rows for o in r.operands
                if o.slot == "rel")
    return (index, rel), blobs


def _load(data: tuple[tuple, list[bytes]]) -> FormTable:
    """_dump's data back, as a FormTable that makes each Row when first asked for."""
    head, blobs = data
    return _table(head, blobs.__getitem__)


def _table(head: tuple, blob: Any) -> FormTable:
    """The FormTable of a head of _dump's and the reader of its rows' bytes (by index); a
    TypeError if head is not of _dump's layout."""
    index, rel = head
    if not isinstance(index, dict) or not isinstance(rel, tuple):
        raise TypeError("not a form table")
    return FormTable(index, rel, blob)


# built once and then loaded from the bytecode cache while this file, row.py, rows.py and
# rows_late.py are unchanged (kcc/startup.py: building the ~1,250 rows was a tenth of a small
# compile's start-up), each row's bytes read from the file when the row is first asked for
_ROWS_FILES = [os.path.join(os.path.dirname(__file__), f) for f in ("rows.py", "rows_late.py")]


def _build() -> list[Row]:
    """Every row, in the golden files' order (kcc.encode.x86.rows, imported only here)."""
    from kcc.encode.x86 import rows
    return rows.build()


def _forms() -> FormTable:
    sources = [__file__, _row_module.__file__, *_ROWS_FILES]
    head, blob = cached_blobs("x86-rows", sources, lambda: _dump(_build()))
    try:
        return _table(head, blob)
    except (TypeError, ValueError):     # (a file of another layout under this name)
        return _load(_dump(_build()))


FORMS: FormTable = _forms()


def __getattr__(name: str) -> Any:
    """ROWS (every Row, in the golden files' order) and GROUPS (the row groups in that
    order), made on first use: a compile needs neither."""
    if name == "ROWS":
        value: Any = list(FORMS.values())
    elif name == "GROUPS":
        value = tuple(dict.fromkeys(r.group for r in FORMS.values()))
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
