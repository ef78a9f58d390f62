"""Every AMD table row has emulator semantics, but for the documented gap (emu.core.UNEMULATED,
rows kcc's selector never emits), and every mnemonic the selector and lowering name is
emulated: a new row or a new selection without semantics fails here."""

from __future__ import annotations

import re
from pathlib import Path

from kcc.encode.amd.table import rows
from kcc.targets.amd.emu.core import UNEMULATED, _semantics, base_name

KCC = Path(__file__).resolve().parents[4] / "kcc"
ARCHES = ("gfx1100", "gfx942")


def table_names() -> set[str]:
    return {r.name for a in ARCHES for r in rows(a)}


def test_every_row_is_emulated_but_the_documented_gap() -> None:
    sem = _semantics()
    missing = {n for n in table_names() if n not in sem}
    assert missing - UNEMULATED == set(), "rows without emulator semantics"
    assert UNEMULATED - missing == set(), "emulated now: remove from UNEMULATED"


def test_every_mnemonic_the_back_end_names_is_emulated() -> None:
    sem, names = _semantics(), table_names()
    pat = re.compile(r"[\"']((?:s|v|ds|global|scratch|flat)_[a-z0-9_]+)[\"']")
    used = set()
    for path in [*(KCC / "isel" / "amd").glob("*.py"), *(KCC / "targets" / "amd").glob("*.py")]:
        used |= {base_name(m) for m in pat.findall(path.read_text())} & names
    assert len(used) > 100, "the scan found the selector's mnemonics"
    assert sorted(n for n in used if n not in sem) == []
