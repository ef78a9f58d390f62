"""Benchmark: the largest kcc compiles in tinygrad's own test files (issue 21's 2 s / 500 MB bound).

    python bench/tinygrad_compile_sweep.py --tinygrad /work/tgsrc --out /tmp/sweep \\
        test/backend/test_nn.py test/backend/test_tensor.py ...   # files relative to --tinygrad
    python bench/tinygrad_compile_sweep.py --out /tmp/sweep --report-only   # phase 2 again

Phase 1 runs each test file under pytest through `DEV=CPU:KCC` (`PARALLEL=0`, tinygrad's compile
cache off so every kernel is compiled, this checkout first on PYTHONPATH) with this module loaded
as a pytest plugin: it wraps `KCCCompiler.compile`, times every compile with the thread's CPU
clock (tinygrad compiles in the calling thread when PARALLEL=0) and appends a JSON line per
compile to OUT/compiles.jsonl; the `.uop` of every compile over --keep seconds is saved in
OUT/src/. Extra pytest arguments go after `--` (e.g. `-- -k conv`); RUN_SLOW and the like come
from the caller's environment.

Phase 2 compiles each saved kernel again, alone, in a fresh process (the same x86 arch as
DEV=CPU:KCC's default, `native`), and reads that process's CPU time and peak resident memory
(getrusage of the child); the memory a compile adds is the peak less that of a process that
imports the same modules and compiles nothing. The table lists the largest kernels by CPU time
and by memory, and the per-file counts, for docs/tinygrad.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT_ENV = "KCC_COMPILE_SWEEP_OUT"
KEEP_ENV = "KCC_COMPILE_SWEEP_KEEP"


# ---- phase 1: the pytest plugin (loaded in tinygrad's test process) -----------------------------

def pytest_configure(config) -> None:
    """Wrap KCCCompiler.compile so every compile in this test process is timed and logged."""
    out = os.environ.get(OUT_ENV)
    if not out:
        return
    from kcc.tinygrad.renderer import KCCCompiler
    keep = float(os.environ.get(KEEP_ENV, "0.3"))
    src_dir = Path(out) / "src"
    src_dir.mkdir(parents=True, exist_ok=True)
    log = open(Path(out) / "compiles.jsonl", "a")
    original = KCCCompiler.compile
    test_file = os.environ.get("KCC_COMPILE_SWEEP_FILE", "?")

    def timed(self, src: str) -> bytes:
        t0, w0 = time.thread_time(), time.perf_counter()
        ok = True
        try:
            return original(self, src)
        except Exception:
            ok = False
            raise
        finally:
            cpu, wall = time.thread_time() - t0, time.perf_counter() - w0
            sha = hashlib.sha256(src.encode()).hexdigest()[:16]
            name = next((ln.split()[-1] for ln in src.splitlines()[:3]
                         if ln.startswith("# tinygrad kernel ")), "kernel")
            if cpu >= keep:
                (src_dir / f"{sha}.uop").write_text(src)
            log.write(json.dumps({"file": test_file, "name": name, "sha": sha, "cpu": cpu,
                                  "wall": wall, "ok": ok, "lines": src.count("\n")}) + "\n")
            log.flush()

    KCCCompiler.compile = timed


def run_file(tinygrad: Path, test: str, out: Path, keep: float, extra: list[str],
             timeout: int) -> tuple[int, float]:
    """Phase 1 for one test file: its pytest exit code and wall seconds."""
    env = dict(os.environ, DEV="CPU:KCC", PARALLEL="0", CCACHE="0", **{
        OUT_ENV: str(out), KEEP_ENV: str(keep), "KCC_COMPILE_SWEEP_FILE": test,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "bench"), str(tinygrad)])})
    cmd = [sys.executable, "-m", "pytest", "-p", "kcc.tinygrad", "-p", "tinygrad_compile_sweep",
           test, "-q", "-p", "no:cacheprovider", *extra]
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(cmd, cwd=tinygrad, env=env, timeout=timeout,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    except subprocess.TimeoutExpired:
        rc = -1
    return rc, time.perf_counter() - t0


# ---- phase 2: the saved kernels alone, in fresh processes --------------------------------------

_CHILD = """
import sys, resource
from kcc.frontend.parser import parse_result
from kcc.targets.x86.target import compile_x86
from kcc.targets.x86.arch import resolve_arch
arch = resolve_arch("native")
if sys.argv[1] != "-":
    compile_x86([parse_result(open(sys.argv[1]).read(), sys.argv[1]).sink], arch)
"""


def child_cost(path: str) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of a fresh process compiling path ('-': importing only)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, path], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"compiling {path} failed (status {status})")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def report(out: Path, top: int, reps: int) -> None:
    """Print the per-file summary and the largest kernels, re-measured alone."""
    rows = [json.loads(ln) for ln in (out / "compiles.jsonl").read_text().splitlines() if ln]
    print(f"{len(rows)} compiles logged in {out / 'compiles.jsonl'}\n")
    print("| test file | compiles | median CPU (ms) | largest CPU (s) | kernel |")
    print("|---|---|---|---|---|")
    for f in dict.fromkeys(r["file"] for r in rows):
        fr = [r for r in rows if r["file"] == f]
        big = max(fr, key=lambda r: r["cpu"])
        print(f"| {f} | {len(fr)} | {statistics.median(r['cpu'] for r in fr) * 1e3:.1f} | "
              f"{big['cpu']:.2f} | {big['name']} |")
    base = [child_cost("-") for _ in range(reps)]
    base_cpu = statistics.median(c for c, _ in base)
    base_mem = statistics.median(m for _, m in base)
    seen: dict[str, dict] = {}
    for r in sorted(rows, key=lambda r: -r["cpu"]):
        if r["sha"] not in seen and (out / "src" / f"{r['sha']}.uop").exists():
            seen[r["sha"]] = r
    chosen = list(seen.values())[:top]
    print(f"\nalone in a fresh process (x86 native; median of {reps}; the import-only process: "
          f"{base_cpu:.2f} s CPU, {base_mem:.0f} MiB, subtracted):\n")
    print("| kernel | test file | .uop lines | in the test (CPU s) | alone (CPU s) | "
          "memory added (MiB) |")
    print("|---|---|---|---|---|---|")
    worst_cpu = worst_mem = 0.0
    for r in chosen:
        costs = [child_cost(str(out / "src" / f"{r['sha']}.uop")) for _ in range(reps)]
        cpu = statistics.median(c for c, _ in costs) - base_cpu
        mem = statistics.median(m for _, m in costs) - base_mem
        worst_cpu, worst_mem = max(worst_cpu, cpu), max(worst_mem, mem)
        print(f"| {r['name']} | {r['file']} | {r['lines']} | {r['cpu']:.2f} | {cpu:.2f} | "
              f"{mem:.0f} |")
    print(f"\nlargest alone: {worst_cpu:.2f} s CPU, {worst_mem:.0f} MiB added "
          f"(bound: 2 s, 500 MB); load average {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tests", nargs="*", help="test files, relative to --tinygrad")
    ap.add_argument("--tinygrad", type=Path, help="a checkout of tinygrad's repository (tests)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--keep", type=float, default=0.3, help="save compiles over this CPU s")
    ap.add_argument("--top", type=int, default=12, help="kernels to re-measure alone")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per test file")
    ap.add_argument("--report-only", action="store_true")
    # argparse would take the words after `--` as more test files: split them off first
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = ap.parse_args(argv[:cut]), argv[cut + 1:]
    if not args.report_only:
        if args.tinygrad is None:
            ap.error("--tinygrad is required to run test files")
        args.out.mkdir(parents=True, exist_ok=True)
        for test in args.tests:
            rc, wall = run_file(args.tinygrad.resolve(), test, args.out.resolve(), args.keep,
                                extra, args.timeout)
            print(f"{test}: pytest exit {rc}, {wall:.0f} s", flush=True)
    report(args.out, args.top, args.reps)


if __name__ == "__main__":
    main()
