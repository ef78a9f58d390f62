"""bench/beam_share.py: its probe counts a wrapped function's outermost calls only (BEAM's
candidate timing calls compile_linear inside compile_linear; a nested call counted twice would
double the share) and charges a lowering its nested render and compile, and the tinygrad share
is the benchmark's (schedule + lower - render - compile)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import beam_share  # noqa: E402


def test_outermost_calls_only() -> None:
    ns = types.SimpleNamespace()

    def f(n: int) -> int:
        return 0 if n == 0 else 1 + ns.f(n - 1)
    ns.f = f
    p = beam_share.Probe()
    p.wrap(ns, "f", "f")
    assert ns.f(3) == 3 and ns.f(2) == 2
    assert p.total["f"][0] == 2


def test_lowering_records_its_nested_render_and_compile() -> None:
    ns = types.SimpleNamespace(render=lambda: None, compile=lambda: None)

    class Prg:          # what to_program returns, as far as the probe reads it
        src = (None, types.SimpleNamespace(src=(1, 2, 3)))

    def try_compile(x: tuple) -> tuple:
        ns.render()
        ns.compile()
        return x[0], ((Prg(), 0.0) if x[0] else None)
    ns.try_compile = try_compile
    p = beam_share.Probe()
    for k in ("render", "compile"):
        p.wrap(ns, k, k)
    p.wrap(ns, "try_compile", "_try_compile", record="lower")
    sched = types.SimpleNamespace(applied_opts=["UPCAST"])
    ns.try_compile((1, sched))
    ns.try_compile((0, sched))
    assert [x["uops"] for x in p.lowered] == [3, -1]        # -1: refused, no program
    assert all(x["opts"] == "['UPCAST']" for x in p.lowered)
    assert p.total["render"][0] == 2 and p.total["compile"][0] == 2
    assert all(0.0 <= x["inner"] <= x["cpu"] + 1e-3 for x in p.lowered)


def test_tinygrad_share_is_the_benchmarks() -> None:
    t = {"schedule": [1, 0.5, 1.0], "lower": [2, 9.0, 10.0], "render": [5, 0.1, 0.5],
         "compile": [5, 1.0, 2.0]}
    assert beam_share.tinygrad_share(t, 2) == 1.0 + 10.0 - 0.5 - 2.0
    assert abs(beam_share.tinygrad_share(t, 1) - (0.5 + 9.0 - 0.1 - 1.0)) < 1e-12
