"""bench/tinygrad_programs.py: its workers run as an installed package does, with Python's
bytecode written and read (PYTHONDONTWRITEBYTECODE dropped), this checkout first on the path,
and the device, compile cache and PARALLEL they are given."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import tinygrad_programs  # noqa: E402


def test_worker_env_writes_bytecode_as_an_installation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = tinygrad_programs.worker_env("CPU:KCC", "/tmp/c.db", 2)
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["DEV"] == "CPU:KCC" and env["CACHEDB"] == "/tmp/c.db" and env["PARALLEL"] == "2"
    assert env["PYTHONPATH"].split(":")[:2] == [str(ROOT), "/elsewhere"]
