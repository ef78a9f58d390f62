"""Where a BEAM search's `tinygrad` share goes, DEV=CPU against DEV=CPU:KCC (issue 21, item 5).

bench/tinygrad_programs.py splits a BEAM program's first call into compile, tinygrad and the
rest. This tool runs one of its BEAM programs (beam_matmul, beam_conv) in a fresh process per
device with an empty compile cache and takes the tinygrad share apart, by wrapping the search's
own functions (tinygrad/codegen/opt/search.py, tinygrad 0.14):

- `get_kernel_actions` (the candidates' schedules), `_try_compile` (lowering one candidate:
  optimized AST, linearize, render, compile), `_time_program` (loading and running one
  candidate `cnt` times, early stop at 3x the best), `CPUProgram.__init__` (loading an object);
- render and compile as the benchmark takes them (`Renderer.render`, `Compiler.compile`);
- per timed candidate: its opts, the run times tinygrad measured, the wall and CPU seconds
  `_time_program` took.

    python bench/beam_share.py [--only beam_matmul] [--profile 25] [--json out.json]

Prints one JSON line per (program, device) and a summary table; --profile N prints cProfile's
N heaviest functions by cumulative time for each. The candidates both devices lowered (the
same opts) are compared on their own: tinygrad's lowering of the same schedule on each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from tinygrad_programs import DEVICES, PROGRAMS, now, since, worker_env  # noqa: E402


class Probe:
    """Accumulated [calls, wall, CPU] per wrapped function, outermost calls only."""

    def __init__(self) -> None:
        self.total: dict[str, list[float]] = {}
        self.active: set[str] = set()
        self.timed: list[dict[str, Any]] = []
        self.lowered: list[dict[str, Any]] = []

    def part(self, key: str) -> float:
        """CPU seconds so far in key."""
        return self.total.get(key, [0, 0.0, 0.0])[2]

    def wrap(self, owner: Any, attr: str, key: str, record: str = "") -> None:
        fn = getattr(owner, attr)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if key in self.active:
                return fn(*args, **kwargs)
            self.active.add(key)
            inner = self.part("render") + self.part("compile")
            st = now()
            try:
                out = fn(*args, **kwargs)
            finally:
                w, c = since(st)
                t = self.total.setdefault(key, [0, 0.0, 0.0])
                t[0] += 1
                t[1] += w
                t[2] += c
                self.active.discard(key)
            if record == "time":        # _time_program(prg, ...) -> list of run times
                self.timed.append({"tms": list(out), "wall": w, "cpu": c})
            elif record == "lower":     # _try_compile((i, Scheduler)) -> (i, (prg, et) | None)
                prg = out[1][0] if out[1] is not None else None
                self.lowered.append({
                    "opts": repr(args[0][1].applied_opts), "cpu": c,
                    "inner": self.part("render") + self.part("compile") - inner,
                    "uops": len(prg.src[1].src) if prg is not None else -1})
            return out
        setattr(owner, attr, wrapped)


def worker(name: str, profile: int) -> None:
    """One BEAM program's first call in this process; a JSON line of the probe's totals."""
    import kcc.tinygrad  # noqa: F401
    import tinygrad.codegen.opt.search as search
    import tinygrad.engine.realize as realize
    from tinygrad import Device, Tensor
    from tinygrad.runtime.ops_cpu import CPUProgram
    ren = Device["CPU"].renderer
    p = Probe()
    p.wrap(Tensor, "linear_with_vars", "schedule")
    p.wrap(realize, "compile_linear", "lower")
    p.wrap(type(ren), "render", "render")
    p.wrap(type(ren.compiler), "compile", "compile")
    p.wrap(search, "beam_search", "beam_search")
    p.wrap(search, "get_kernel_actions", "get_kernel_actions")
    p.wrap(search, "_try_compile", "_try_compile", record="lower")
    p.wrap(search, "_time_program", "_time_program", record="time")
    p.wrap(CPUProgram, "__init__", "load")
    call = PROGRAMS[name]()
    p.total.clear()
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    st = now()
    call()
    first = since(st)
    if prof is not None:
        import io
        import pstats
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(profile)
        print(s.getvalue(), file=sys.stderr)
    print(json.dumps({"first": first, "total": p.total, "timed": p.timed,
                      "lowered": p.lowered,
                      "renderer": type(ren).__name__}))


def run(name: str, dev: str, profile: int) -> dict[str, Any]:
    """One worker process on dev with a fresh CACHEDB; its JSON (profile text to stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = worker_env(dev, os.path.join(tmp, "c.db"))
        r = subprocess.run([sys.executable, __file__, "--worker", name, "--profile",
                            str(profile)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{name} on {dev} failed:\n{r.stderr[-3000:]}")
    if profile:
        print(f"== cProfile {name} DEV={dev}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def tinygrad_share(t: dict[str, list[float]], clock: int) -> float:
    """The benchmark's tinygrad column: schedule + lower - render - compile (clock 1 wall,
    2 CPU)."""
    def g(k: str) -> float:
        return t.get(k, [0, 0.0, 0.0])[clock]
    return g("schedule") + g("lower") - g("render") - g("compile")


def summary(name: str, res: dict[str, dict[str, Any]]) -> None:
    """A markdown table: the probe's totals per device, CPU seconds (calls)."""
    keys = ("schedule", "lower", "render", "compile", "beam_search", "get_kernel_actions",
            "_try_compile", "_time_program", "load")
    print(f"\n{name}: CPU seconds (calls), wall seconds in brackets")
    print("| part | " + " | ".join(f"DEV={d}" for d in DEVICES) + " |")
    print("|---|" + "---|" * len(DEVICES))
    for k in keys:
        cells = []
        for d in DEVICES:
            t = res[d]["total"].get(k, [0, 0.0, 0.0])
            cells.append(f"{t[2]:.2f} ({t[0]}) [{t[1]:.2f}]")
        print(f"| {k} | " + " | ".join(cells) + " |")
    rows = {
        "tinygrad share (bench)": lambda r: tinygrad_share(r["total"], 2),
        "lowering w/o render, compile": lambda r: r["total"].get("_try_compile", [0, 0, 0])[2]
        - r["total"].get("render", [0, 0, 0])[2] - r["total"].get("compile", [0, 0, 0])[2],
        "candidates timed": lambda r: len(r["timed"]),
        "sum of run times measured (s)": lambda r: sum(sum(x["tms"]) for x in r["timed"]),
        "sum of best run times (s)": lambda r: sum(min(x["tms"]) for x in r["timed"]),
        "runs measured": lambda r: sum(len(x["tms"]) for x in r["timed"]),
    }
    rows["candidates lowered"] = lambda r: len(r["lowered"])
    rows["search rounds x beam width"] = lambda r: r["total"].get("get_kernel_actions",
                                                                  [0, 0, 0])[0]
    rows["candidates refused after lowering"] = lambda r: sum(x["uops"] < 0
                                                               for x in r["lowered"])
    rows["their lowering less render, compile (s)"] = lambda r: sum(
        x["cpu"] - x["inner"] for x in r["lowered"] if x["uops"] < 0)
    rows["their render and compile (s)"] = lambda r: sum(
        x["inner"] for x in r["lowered"] if x["uops"] < 0)
    rows["uops, summed over candidates"] = lambda r: sum(max(0, x["uops"]) for x in r["lowered"])
    for label, f in rows.items():
        print(f"| {label} | " + " | ".join(f"{f(res[d]):.3f}" for d in DEVICES) + " |")
    # the candidates both devices lowered, by their opts: tinygrad's lowering of the same
    # schedule, less render and compile, on each device
    own = [{x["opts"]: x for x in res[d]["lowered"]} for d in DEVICES]
    both = sorted(set(own[0]) & set(own[1]))
    lo = [sum(o[k]["cpu"] - o[k]["inner"] for k in both) for o in own]
    up = [sum(max(0, o[k]["uops"]) for k in both) for o in own]
    print(f"| same {len(both)} candidates: lowering less render, compile (s) | "
          + " | ".join(f"{v:.3f}" for v in lo) + " |")
    print(f"| same {len(both)} candidates: uops | " + " | ".join(str(v) for v in up) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="beam_matmul,beam_conv")
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--json", help="write every process's JSON to this file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    opt = ap.parse_args()
    if opt.worker:
        worker(opt.worker, opt.profile)
        return
    dump = {}
    for name in opt.only.split(","):
        res = {d: run(name, d, opt.profile) for d in DEVICES}
        dump[name] = res
        if opt.json:
            Path(opt.json).write_text(json.dumps(dump))
        for d in DEVICES:
            print(json.dumps({"program": name, "device": d, "first": res[d]["first"],
                              "total": res[d]["total"]}))
        summary(name, res)
        for d in DEVICES:
            ts = sorted(res[d]["timed"], key=lambda x: -x["cpu"])[:8]
            print(f"\n{name} DEV={d}: the 8 candidates whose timing took the most CPU")
            for x in ts:
                print(f"  cpu {x['cpu']:.3f}s wall {x['wall']:.3f}s tms "
                      + ",".join(f"{v * 1e3:.2f}" for v in x["tms"]) + " ms")


if __name__ == "__main__":
    main()
