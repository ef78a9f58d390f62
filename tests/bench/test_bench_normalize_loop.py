"""bench/normalize_loop.py: its variants of layernorm normalize's loop compute what kcc's loop
computes (a timing of a loop that writes other bytes would mean nothing), and the driver
catches one that does not."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import normalize_loop  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("clang") is None,
                                reason="clang is not installed (it builds the driver)")


def test_variants_write_the_kcc_loops_bytes(capsys) -> None:
    assert normalize_loop.main(["--rounds", "1", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert all(f"| {n} |" in out for n in normalize_loop.VARIANTS
               if normalize_loop.VARIANTS[n][2] < 16)


def test_a_variant_computing_otherwise_is_refused(monkeypatch, capsys) -> None:
    variants = {"kcc loop": normalize_loop.VARIANTS["kcc loop"],
                "no divide": ("", False, 4, False, True)}   # claimed exact, skips the divide
    monkeypatch.setattr(normalize_loop, "VARIANTS", variants)
    assert normalize_loop.main(["--rounds", "1", "--runs", "1"]) == 1
    assert "'no divide' does not write the kcc loop's bytes" in capsys.readouterr().out
