"""bench/gate_assist.py: with --base, both checkouts' objects of one kernel are linked into one
driver and each is timed (the A/B of docs/performance.md, "Cheaper gate safe bases")."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import gate_assist  # noqa: E402


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("objcopy") is None,
                    reason="needs cc and objcopy")
def test_base_and_this_checkout_are_both_timed(tmp_path: Path) -> None:
    uop = ROOT / "tests/data/kernels/shared/pad_gated_load.uop"
    t = gate_assist.time_kernel(uop, "x86-64-v3", 5, tmp_path, base=str(ROOT))
    assert len(t) == 2 and all(len(x) == 2 and min(x) >= 0 for x in t)
    src = (tmp_path / "main.c").read_text()
    assert "case 0:" in src and "case 1:" in src and "#define NK 2" in src
    assert "base_" in src                      # the base's renamed symbol is called


def test_one_object_without_base(tmp_path: Path) -> None:
    uop = ROOT / "tests/data/kernels/shared/pad_gated_load.uop"
    ((g, o),) = gate_assist.time_kernel(uop, "x86-64-v3", 3, tmp_path)
    assert g >= 0 and o >= 0
