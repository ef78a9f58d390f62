"""bench/bandwidth.py, the memory-bandwidth reference of bench/tinygrad_x86.py: its peers
compute what they claim (a wrong copy or add would make a bandwidth figure meaningless)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bandwidth  # noqa: E402


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed (C peers)")
def test_peers_compute_copy_and_add():
    peers = bandwidth.Peers(4096)
    names = {p.name for p in peers.peers}
    assert {"clang -O3 copy, nontemporal", "clang -O3 add, nontemporal", "numpy add"} <= names
    assert peers.check() == []
    # a peer that writes nothing is caught
    peers.peers.append(bandwidth.Peer("broken", "add", "ordinary", lambda: None))
    assert peers.check() == ["broken"]


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang is not installed (C peers)")
def test_triad_peers_compute_a_plus_s_times_b():
    peers = bandwidth.Peers(4096, triad=True)
    triads = [p for p in peers.peers if p.kind == "triad"]
    assert [p.stores for p in triads] == ["ordinary", "non-temporal"]
    assert peers.check() == []
    peers.peers.append(bandwidth.Peer("broken", "triad", "ordinary", lambda: None))
    assert peers.check() == ["broken"]
    times = {f"bw: {p.name}": 1e-3 for p in peers.peers}
    assert peers.gbs(times)["clang -O3 triad"] == pytest.approx(4096 * 12 / 1e-3 / 1e9)
    assert not [p for p in bandwidth.Peers(4096).peers if p.kind == "triad"]   # opt-in


def test_counted_bytes_and_best():
    peers = bandwidth.Peers(1024, cc="no-such-compiler-kcc")
    assert peers.errors and all(not p.name.startswith("clang") for p in peers.peers)
    times = {f"bw: {p.name}": 1e-3 for p in peers.peers}
    times["bw: numpy add"] = 0.5e-3
    g = peers.gbs(times)
    # STREAM's counting: copy 8 bytes an element, add 12, no write-allocate
    assert g["numpy copyto"] == pytest.approx(1024 * 8 / 1e-3 / 1e9)
    assert g["numpy add"] == pytest.approx(1024 * 12 / 0.5e-3 / 1e9)
    assert peers.best(times, "add") == ("numpy add", g["numpy add"])
    rows = peers.table(times)
    assert any(r.startswith("| numpy add | ordinary |") for r in rows)


def test_aligned():
    for align in (16, 32, 64):
        a = bandwidth.aligned(100, np.float32, align)
        assert a.ctypes.data % align == 0 and a.size == 100
