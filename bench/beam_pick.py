"""Which kernel each device's BEAM search picked, and kcc against clang on each pick (issue 21).

bench/tinygrad_programs.py times its BEAM programs as a user runs them, and the searches on
DEV=CPU and DEV=CPU:KCC may pick different opts for the same kernel. This tool separates the
pick from the code generator:

1. search: one fresh process per device (empty CACHEDB, PARALLEL=0) runs the program's first
   call; tinygrad's `beam_search` (tinygrad 0.14 codegen/opt/search.py) is wrapped to record
   the opts it returned for each kernel;
2. compare: for each device's pick, a fresh DEV=CPU process runs the program under
   `kcc.tinygrad.capture` with `beam_search` replaced by applying exactly that pick, and
   bench/tinygrad_x86.py's helpers build kcc's object (from the captured `.uop`) and clang's
   (tinygrad's C with tinygrad's clang flags) of that one kernel, check both against tinygrad's
   outputs and time them interleaved (median of --reps rounds);
3. cross: each device runs the program with each device's pick forced (no search), as the
   second process of bench/tinygrad_programs.py does: its first call (compile cache warm) and
   --steady calls, CPU time, medians of --cross-rounds rounds.

    python bench/beam_pick.py [--only beam_conv] [--reps 201]

Prints the picks and two Markdown tables: per pick, kcc's and clang's microseconds per call of
the kernel; per device and pick, the program's calls.
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

from tinygrad_programs import DEVICES, PROGRAMS, same, worker_env  # noqa: E402


def _env(dev: str, db: str) -> dict[str, str]:
    return worker_env(dev, db)


def _opts(opts: list[Any]) -> list[list[Any]]:
    """Opts as JSON: [op name, axis, arg]."""
    return [[o.op.name, o.axis, o.arg] for o in opts]


def apply_pick(s: Any, opts: list[list[Any]]) -> Any:
    """A copy of scheduler s with the recorded opts applied (those past the ones s already
    has, as tinygrad's beam_search does with a cached pick)."""
    from tinygrad.codegen.opt import Opt, OptOps
    ret = s.copy()
    for op, axis, arg in opts[len(s.applied_opts):]:
        ret.apply_opt(Opt(OptOps[op], axis, arg))
    return ret


def search_worker(name: str) -> None:
    """Run the program's first call with the search wrapped; print the picks as JSON."""
    import kcc.tinygrad  # noqa: F401
    import tinygrad.codegen.opt.search as search
    picks: list[dict[str, Any]] = []
    orig = search.beam_search

    def wrapped(s: Any, *args: Any, **kwargs: Any) -> Any:
        ret = orig(s, *args, **kwargs)
        picks.append({"opts": _opts(ret.applied_opts), "shape": str(ret.colored_shape())})
        return ret
    search.beam_search = wrapped
    PROGRAMS[name]()()
    print(json.dumps(picks))


def apply_worker(name: str, picks: str, out: str, reps: int) -> None:
    """Run the program with every searched kernel given the recorded opts; time kcc against
    clang on each such kernel; print one JSON row per kernel."""
    import kcc.tinygrad  # noqa: F401
    import tinygrad.codegen.opt.search as search
    from tinygrad_x86 import Kernel, calls, capture, check, prepare, timed
    want = json.loads(picks)
    n = iter(range(len(want)))

    def forced(s: Any, *args: Any, **kwargs: Any) -> Any:
        return apply_pick(s, want[next(n)]["opts"])
    search.beam_search = forced
    kernels = capture([name], Path(out), builder=lambda wl: PROGRAMS[wl]())
    rows = []
    for k0 in kernels:
        k = Kernel(k0.workload, k0.name, k0.uop, k0.workers, k0.args, src=k0.src)
        prepare(k, k.src, "native", "off")
        c_ptrs, ptrs = k.keep[-2], k.keep[-1]
        kfn, cfn = calls(k.kcc_fn, ptrs, k.workers), calls(k.c_fn, c_ptrs, k.workers)
        ok = check(k, kfn)[0] and check(k, cfn)[0]
        t = timed({"kcc": kfn, "clang": cfn}, reps)
        rows.append({"kernel": k.name, "workers": k.workers, "ok": ok, "kcc_us": t["kcc"] * 1e6,
                     "clang_us": t["clang"] * 1e6, "loop_insts": list(k.loops)})
        k.keep.clear()
    print(json.dumps(rows))


def program_worker(name: str, picks: str, steady: int, out: str) -> None:
    """bench/tinygrad_programs.py's worker (first call split, steady calls) with every
    searched kernel given the recorded opts instead of a search."""
    import tinygrad.codegen.opt.search as search
    from tinygrad_programs import worker
    want = json.loads(picks)
    seen: dict[Any, int] = {}

    def forced(s: Any, *args: Any, **kwargs: Any) -> Any:
        k = seen.setdefault(s.ast.key, len(seen))      # steady calls ask again: same pick
        return apply_pick(s, want[k]["opts"])
    search.beam_search = forced
    worker(name, steady, out)


def _run(args: list[str], env: dict[str, str]) -> Any:
    r = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        raise SystemExit(f"{args} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    """Search on both devices, then time both objects of each pick."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="beam_conv")
    ap.add_argument("--reps", type=int, default=201)
    ap.add_argument("--search-worker", help=argparse.SUPPRESS)
    ap.add_argument("--apply-worker", help=argparse.SUPPRESS)
    ap.add_argument("--picks", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--program-worker", help=argparse.SUPPRESS)
    ap.add_argument("--steady", type=int, default=21, help="steady calls per cross process")
    ap.add_argument("--cross-rounds", type=int, default=3,
                    help="rounds of the device x pick runs (0: none)")
    opt = ap.parse_args()
    if opt.search_worker:
        search_worker(opt.search_worker)
        return
    if opt.program_worker:
        program_worker(opt.program_worker, opt.picks, opt.steady, opt.out)
        return
    if opt.apply_worker:
        apply_worker(opt.apply_worker, opt.picks, opt.out, opt.reps)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name in opt.only.split(","):
            picks = {dev: _run(["--search-worker", name],
                               _env(dev, os.path.join(tmp, f"{name}.{dev}.db")))
                     for dev in DEVICES}
            print(f"{name} picks: {json.dumps(picks)}", flush=True)
            print("| program | picked by | kernel | kcc (us) | clang (us) | clang / kcc | "
                  "inner loop insts kcc / clang | outputs |")
            print("|---|---|---|---|---|---|---|---|")
            for dev in DEVICES:
                rows = _run(["--apply-worker", name, "--picks", json.dumps(picks[dev]),
                             "--out", os.path.join(tmp, f"cap.{dev}"), "--reps",
                             str(opt.reps)], _env("CPU", os.path.join(tmp, f"a.{dev}.db")))
                for r in rows:
                    print(f"| {name} | DEV={dev} | {r['kernel']} | {r['kcc_us']:.1f} | "
                          f"{r['clang_us']:.1f} | {r['clang_us'] / r['kcc_us']:.2f}x | "
                          f"{r['loop_insts'][0]} / {r['loop_insts'][1]} | "
                          f"{'match' if r['ok'] else 'DIFFER'} |", flush=True)
            cross(name, picks, opt, tmp)


def cross(name: str, picks: dict[str, Any], opt: Any, tmp: str) -> None:
    """Every device with every device's pick, as a second process of the program (the first
    fills the compile cache): its first call and steady calls, CPU ms, medians of rounds;
    every output is compared with DEV=CPU's run of its own pick."""
    import statistics
    rows: dict[tuple[str, str], list[list[float]]] = {}
    for rnd in range(opt.cross_rounds):
        for pick in DEVICES:
            for dev in (DEVICES if rnd % 2 == 0 else DEVICES[::-1]):
                db = os.path.join(tmp, f"x.{name}.{pick}.{dev}.{rnd}.db")
                out = os.path.join(tmp, f"x.{pick}.{dev}.{rnd}.npz")
                args = ["--program-worker", name, "--picks", json.dumps(picks[pick]),
                        "--out", out]
                _run([*args, "--steady", "0"], _env(dev, db))
                r = _run([*args, "--steady", str(opt.steady)], _env(dev, db))
                bad = same(out, os.path.join(tmp, f"x.{DEVICES[0]}.{DEVICES[0]}.0.npz"))
                if bad:
                    raise SystemExit(f"{name}: pick of {pick} on {dev} differs: {bad}")
                med = statistics.median
                tg = [s.get("schedule", [0, 0])[1] + s.get("lower", [0, 0])[1]
                      - s.get("render", [0, 0])[1] - s.get("compile", [0, 0])[1]
                      for s in r["steady_split"]]
                rows.setdefault((pick, dev), []).append(
                    [r["first"][1], med(t[1] for t in r["steady"]), med(tg)])
    print("\n| program | pick of | run on | 2nd process, 1st call CPU (ms) | steady call CPU "
          "(ms) | its tinygrad share (ms) |")
    print("|---|---|---|---|---|---|")
    for (pick, dev), v in rows.items():
        m = [statistics.median(x[i] for x in v) * 1e3 for i in range(3)]
        print(f"| {name} | DEV={pick} | DEV={dev} | {m[0]:.0f} | {m[1]:.2f} | {m[2]:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
