"""bench/beam_pick.py: a recorded pick survives its JSON form (each opt rebuilt equal to the
one the search applied) and is applied past the opts the scheduler already has, as tinygrad's
beam_search applies a cached pick."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
opt_mod = pytest.importorskip("tinygrad.codegen.opt")
import beam_pick  # noqa: E402


class Sched:
    """What apply_pick reads of a tinygrad Scheduler: applied_opts, copy, apply_opt."""

    def __init__(self, applied: list[Any]) -> None:
        self.applied_opts = list(applied)

    def copy(self) -> "Sched":
        return Sched(self.applied_opts)

    def apply_opt(self, o: Any) -> None:
        self.applied_opts.append(o)


def test_pick_round_trips_and_skips_applied_opts() -> None:
    Opt, OptOps = opt_mod.Opt, opt_mod.OptOps
    picked = [Opt(OptOps.UPCAST, 1, 0), Opt(OptOps.UNROLL, 0, 0), Opt(OptOps.UPCAST, 0, 4)]
    recorded = json.loads(json.dumps(beam_pick._opts(picked)))
    assert recorded == [["UPCAST", 1, 0], ["UNROLL", 0, 0], ["UPCAST", 0, 4]]
    start = Sched(picked[:1])
    got = beam_pick.apply_pick(start, recorded)
    assert got.applied_opts == picked
    assert start.applied_opts == picked[:1]          # the search's scheduler is not changed
    assert beam_pick.apply_pick(Sched([]), recorded).applied_opts == picked
