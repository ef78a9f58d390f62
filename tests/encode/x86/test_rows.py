"""kcc/encode/x86/rows.py: the templates build exactly the forms the table serves from the
start-up cache, and a second build gives the same rows (not twice as many)."""
from __future__ import annotations

from kcc.encode.x86 import rows, table


def test_build_is_the_cached_table() -> None:
    built = rows.build()
    assert [r.form for r in built] == list(table.FORMS)
    for row in built:
        assert row == table.FORMS[row.form], row.form


def test_build_twice_gives_the_same_rows() -> None:
    first, second = rows.build(), rows.build()
    assert first == second and len({r.form for r in second}) == len(second)
