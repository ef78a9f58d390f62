"""The printable listing of the x86 rows (kcc/encode/x86/listing.py): one line per row of the
table, and docs/x86-rows.txt is the listing of today's table (KCC_BLESS=1 rewrites it)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from kcc.encode.x86.listing import encoding, line, listing
from kcc.encode.x86.table import FORMS, ROWS

DOC = Path(__file__).resolve().parents[3] / "docs" / "x86-rows.txt"


def test_one_line_per_row_naming_its_form() -> None:
    lines = listing().splitlines()
    assert len(lines) == len(ROWS)
    assert [ln.split()[0] for ln in lines] == [r.form for r in ROWS]


def test_encodings_read_as_the_manual_writes_them() -> None:
    assert encoding(FORMS["vpermi2ps_z_z_zm"]) == "EVEX.512.66.0F38.W0 77"
    assert encoding(FORMS["add_rm8_imm8"]) == "80" and "/0" in line(FORMS["add_rm8_imm8"])


def test_the_doc_is_the_listing_of_the_table() -> None:
    got = listing()
    if os.environ.get("KCC_BLESS"):
        DOC.write_text(got)
    want = DOC.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            "docs/x86-rows.txt", "the table now", n=1))
        pytest.fail(f"docs/x86-rows.txt is not the table's listing (KCC_BLESS=1 rewrites "
                    f"it):\n{diff}", pytrace=False)
