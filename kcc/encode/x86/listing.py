"""A printable listing of the generated x86 rows, one line per form, so that a form is found
with grep instead of by reading the generators of kcc.encode.x86.table:

    python -m kcc.encode.x86.listing | grep vpermi2ps

Each line: the form name, its group, the encoding (legacy prefixes and opcode bytes, or
VEX/EVEX with pp, map, L and W), the ModRM /digit, flag use, the operands (kind, where the
encoding puts it, use or def), and the alternate encodings kept for llvm-mc's choices.
docs/x86-rows.txt is this listing, checked by tests/encode/x86/test_listing.py (KCC_BLESS=1
rewrites it).
"""

from __future__ import annotations

import sys

from kcc.encode.x86.row import Row
from kcc.encode.x86.table import ROWS

_PP = {0: "", 1: "66", 2: "F3", 3: "F2"}
_MAP = {1: "0F", 2: "0F38", 3: "0F3A"}
_L = {0: "128", 1: "256", 2: "512"}


def encoding(r: Row) -> str:
    """The row's encoding fields as one word: e.g. `REX.W 0F AF` or `VEX.256.66.0F.W0 58`."""
    if r.enc == "legacy":
        parts = [r.prefixes.hex(" ").upper()] if r.prefixes else []
        parts += ["REX.W"] if r.w else []
        parts.append(r.opcode.hex(" ").upper())
        return " ".join(parts)
    fields = [r.enc.upper(), _L[r.vl]] + ([_PP[r.pp]] if r.pp else []) + [_MAP[r.mmap],
                                                                         f"W{int(r.w)}"]
    return ".".join(fields) + " " + r.opcode.hex().upper()


def line(r: Row) -> str:
    """One row as one line of the listing."""
    ops = ", ".join(f"{o.kind}({o.slot}, {o.access})" for o in r.operands)
    extra = [f"/{r.digit}" if r.digit is not None else "",
             f"flags={r.flags}" if r.flags else "",
             "bcst" if r.bcst else "", f"disp8*{r.disp8_n}" if r.disp8_n != 1 else "",
             f"evex_form={r.evex_form}" if r.evex_form else "",
             f"rr_form={r.rr_form}" if r.rr_form else ""]
    tail = " ".join(x for x in extra if x)
    return f"{r.form:28} {r.group:10} {encoding(r):28} {ops}" + (f"  [{tail}]" if tail else "")


def listing() -> str:
    """Every row, in table order."""
    return "".join(line(r) + "\n" for r in ROWS)


if __name__ == "__main__":
    sys.stdout.write(listing())
