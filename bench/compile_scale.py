"""Benchmark: kcc's compile time and peak memory as a kernel grows, per pass.

    python bench/compile_scale.py                      # 2k/20k/200k nodes, chain and diamond,
                                                       # x86 (x86-64-v3 object)
    python bench/compile_scale.py --targets x86,cuda,amd --sizes 2000,20000

Shapes (tests/support/deep_graphs.py, template "elementwise": out[i] = f(x[i], y[i]) in
float32, which nothing folds): `chain`, n ADDs each reading the one before; `diamond`, n/2
levels each reading both values of the level before (an ADD and a MUL), so a walk that
expands a node per use instead of once would take 2^(n/2) steps. Each case runs in a process
of its own (its peak memory is its own): the `.uop` text is parsed (and verified: what
`kcc check` does), then compiled as `kcc compile` does. Per pass: wall and CPU milliseconds
(`time_passes`) and the peak resident memory during the pass (Linux: the high-water mark
VmHWM, reset before each pass through /proc/self/clear_refs; elsewhere the process's peak so
far). The summary gives
each case's totals and the ratio to the previous size (linear: 10x for 10x the nodes).
The load average before and after is printed: on a loaded host the wall clock also counts
other jobs, the CPU time does not. Prints Markdown for docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"x86": ("x86-64-v3", "obj"), "cuda": ("sm_90", "ptx"), "amd": ("gfx1100", "hsaco"),
           "amd-gfx942": ("gfx942", "hsaco")}


def _hwm_mb() -> float:
    """The peak resident memory (MiB) since the last reset (or since the process began)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_hwm() -> None:
    """Reset the peak resident memory to the current (Linux 4.0+: clear_refs 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def one(shape: str, nodes: int, target: str) -> dict:
    """Parse and compile one case in this process: per step (parse, each pass) wall and CPU
    seconds and peak MiB."""
    sys.path[:0] = [str(REPO), str(REPO / "tests" / "support")]
    from deep_graphs import kernel

    from kcc.frontend.parser import parse
    from kcc.targets import registry
    from kcc.targets.pipeline import time_passes, watch_passes
    text = kernel("elementwise", shape, nodes if shape == "chain" else nodes // 2)
    spec = registry.get(target.split("-")[0])
    arch, emit = TARGETS[target]
    peaks: dict[str, float] = {}
    _reset_hwm()
    t0, c0 = time.perf_counter(), time.process_time()
    sink = parse(text, f"{shape}{nodes}")
    parse_s = (time.perf_counter() - t0, time.process_time() - c0)
    peaks["parse"] = _hwm_mb()
    del text

    def watch(step: str) -> None:
        peaks[step] = max(peaks.get(step, 0.0), _hwm_mb())
        _reset_hwm()

    _reset_hwm()
    with time_passes() as wall, time_passes(time.process_time) as cpu, watch_passes(watch):
        spec.compile([sink], arch, emit)
    rows = {"parse": (*parse_s, peaks["parse"])}
    rows.update({k: (wall[k], cpu[k], peaks.get(k, 0.0)) for k in wall})
    return {"shape": shape, "nodes": nodes, "target": target, "rows": rows}


def run_case(shape: str, nodes: int, target: str, timeout: float) -> dict | None:
    """one() in a fresh process (None when it fails or runs out of time)."""
    try:
        r = subprocess.run([sys.executable, __file__, "--one", shape, str(nodes), target],
                           capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        print(f"{shape} {nodes} {target}: no result in {timeout} s", file=sys.stderr)
        return None
    if r.returncode != 0:
        print(f"{shape} {nodes} {target}: failed\n{r.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(r.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,20000,200000")
    ap.add_argument("--shapes", default="chain,diamond")
    ap.add_argument("--targets", default="x86", help=f"of {', '.join(TARGETS)}")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--per-pass", action="store_true", help="a table per case, per pass")
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), a.one[2])))
        return 0
    load0 = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = []
    for target in a.targets.split(","):
        for shape in a.shapes.split(","):
            for n in (int(x) for x in a.sizes.split(",")):
                res = run_case(shape, n, target, a.timeout)
                if res is not None:
                    results.append(res)
    load1 = os.getloadavg()
    print(f"`python bench/compile_scale.py --sizes {a.sizes} --shapes {a.shapes} "
          f"--targets {a.targets}`, {started}, load average {load0[0]:.1f} before, "
          f"{load1[0]:.1f} after ({os.cpu_count()} CPUs)\n")
    print("| target | shape | nodes | parse s | compile s (wall) | compile s (CPU) "
          "| CPU x prev | peak MiB | slowest pass (CPU s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    prev: dict[tuple[str, str], float] = {}
    for r in results:
        rows = r["rows"]
        passes = {k: v for k, v in rows.items() if k != "parse"}
        wall = sum(v[0] for v in passes.values())
        cpu = sum(v[1] for v in passes.values())
        peak = max(v[2] for v in rows.values())
        slow = max(passes, key=lambda k: passes[k][1])
        key = (r["target"], r["shape"])
        ratio = f"{cpu / prev[key]:.1f}" if key in prev and prev[key] > 0 else ""
        prev[key] = cpu
        print(f"| {r['target']} | {r['shape']} | {r['nodes']:,} | {rows['parse'][0]:.2f} "
              f"| {wall:.2f} | {cpu:.2f} | {ratio} | {peak:.0f} "
              f"| {slow} ({passes[slow][1]:.2f}) |")
    if a.per_pass:
        for r in results:
            print(f"\n{r['target']} {r['shape']} {r['nodes']:,} nodes\n")
            print("| step | wall ms | CPU ms | peak MiB |\n|---|---:|---:|---:|")
            for k, (w, c, m) in r["rows"].items():
                print(f"| {k} | {w * 1e3:.0f} | {c * 1e3:.0f} | {m:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
