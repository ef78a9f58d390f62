"""Benchmark: kcc's x86 code against the machine's limits (issue 24, items 1 and 3).

    python bench/x86_peak.py [--reps 11] [--only matmul512,matmul1024,conv2d,add,sum,layernorm]
                             [--cpu-time]

Every reference runs in this process, on this machine, interleaved round by round with kcc's
code (median of --reps rounds after a warm-up, the order reversed every other round:
bench/tinygrad_x86.timed), so a ratio compares the same minutes of a shared host. Every call
runs on this one thread (OpenBLAS too), so `--cpu-time` can time each by the thread's CPU time
(`time.thread_time`) instead of the wall clock: time while another process holds the core is
then not counted (what it leaves in the caches and a sibling hyperthread's load still are):

- **matmul** (512³, 1024³ float32): tinygrad's default matmul graph (`a @ b`, captured from
  tinygrad 0.14 on DEV=CPU) compiled by kcc with `--fp-contract=off` (exact: every MUL and ADD
  as the graph writes them) and with `--fp-contract=fast`, against numpy's `matmul(out=)`
  with OpenBLAS on one thread (`OPENBLAS_NUM_THREADS=1`, set here before numpy loads) and
  clang -O2 on tinygrad's C. kcc's and clang's objects are called the way tinygrad calls a
  threaded CPU kernel: every worker index in sequence on one thread. Goal: kcc ≥ 80% of
  OpenBLAS's GFLOP/s.
- **conv2d** (8×32×56² → 64, 3×3, padding 1): kcc against clang -O2 on tinygrad's C (time
  ratio; goal ≤ 0.6).
- **memory-bound kernels** (add 16M, row sum 4096², layernorm): each kernel's GB/s (every
  buffer counted once, as STREAM counts: no write-allocate) against STREAM-style peers
  (bench/bandwidth.py: clang -O3 copy and triad with ordinary and non-temporal stores, and a
  read-only sum) over 16M float32 timed in the same rounds; the share of the reference (the
  read peer for a kernel that only reads, else the best copy/triad peer), of the medians and
  per round, and of the best peer of any kind. Before every call (untimed) a buffer of twice
  the last-level cache is read (`--no-evict` turns it off), as STREAM's arrays-larger-than-
  the-cache rule would: this VM's L3 reads 480 MiB, larger than every array here. Goal: ≥ 90%.

Every output is checked: kcc's and clang's against the values tinygrad computed (error relative
to the output's largest magnitude ≤ 1e-5, NaNs where tinygrad's are), numpy's matmul likewise,
the bandwidth peers against numpy. A wrong output exits with status 1 after the tables.
Needs tinygrad 0.14 (`pip install 'kcc[tinygrad]'`) and clang.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinygrad_x86 as tx  # noqa: E402   (bench/tinygrad_x86.py, beside this script)
from bandwidth import COUNTED, Evictor, Peers  # noqa: E402

MATMULS = {"matmul512": 512, "matmul1024": 1024}
MEMORY = ("add", "sum", "layernorm")
ALL = (*MATMULS, "conv2d", *MEMORY)


def build(name: str) -> Callable[[], Any]:
    """The workload's thunk (inputs realized now), as bench/tinygrad_x86.build."""
    if name in MATMULS:
        from tinygrad import Tensor
        Tensor.manual_seed(0)
        n = MATMULS[name]
        a, b = Tensor.randn(n, n).realize(), Tensor.randn(n, n).realize()
        return lambda: (a @ b).realize()
    return tx.build(name)


def loaded(k0: tx.Kernel, arch: str, contract: str) -> tuple[tx.Kernel, Callable, Callable]:
    """A fresh copy of k0 compiled (kcc with contract, clang) and its sequential calls."""
    k = tx.Kernel(k0.workload, k0.name, k0.uop, k0.workers, k0.args, src=k0.src)
    tx.prepare(k, k.src, arch, contract)
    c_ptrs, ptrs = k.keep[-2], k.keep[-1]
    return k, tx.calls(k.kcc_fn, ptrs, k.workers), tx.calls(k.c_fn, c_ptrs, k.workers)


def checked(k: tx.Kernel, fn: Callable, who: str, bad: list[str]) -> None:
    ok, err = tx.check(k, fn)
    if not ok:
        bad.append(f"{k.workload} {k.name} {who} (error {err:.1e})")


def numpy_matmul(k: tx.Kernel, bad: list[str]) -> Callable[[], None]:
    """numpy's matmul (OpenBLAS) on the captured inputs, checked against tinygrad's output."""
    ins = [np.load(a["in"]) for a in k.args if a["kind"] == "buffer"]
    outs = [np.load(a["out"]) for a in k.args if a["kind"] == "buffer" and "out" in a]
    n = int(round(ins[1].size ** 0.5))
    a, b = tx.aligned(n * n, np.dtype(np.float32)), tx.aligned(n * n, np.dtype(np.float32))
    a[:], b[:] = ins[1], ins[2]
    a2, b2 = a.reshape(n, n), b.reshape(n, n)
    c = tx.aligned(n * n, np.dtype(np.float32)).reshape(n, n)
    np.matmul(a2, b2, out=c)
    want = outs[0].reshape(n, n)
    if np.abs(c - want).max() > 1e-5 * np.abs(want).max():
        bad.append(f"numpy matmul {n} (error {np.abs(c - want).max():.1e})")
    k.keep += [a, b, c]
    return lambda: np.matmul(a2, b2, out=c)


def run_matmul(k0: tx.Kernel, arch: str, reps: int, bad: list[str],
               clock: Callable[[], float]) -> list[str]:
    n = MATMULS[k0.workload]
    ks, fns = [], {}
    for contract in ("off", "fast"):
        k, kfn, cfn = loaded(k0, arch, contract)
        checked(k, kfn, f"kcc fp-contract {contract}", bad)
        ks.append(k)
        fns[f"kcc {contract}"] = kfn
        if contract == "off":
            checked(k, cfn, "clang", bad)
            fns["clang -O2 (tinygrad's C)"] = cfn
    fns["numpy OpenBLAS, 1 thread"] = numpy_matmul(ks[0], bad)
    per: dict[str, list[float]] = {}
    t = tx.timed(fns, reps, per, clock=clock)
    ref = "numpy OpenBLAS, 1 thread"
    rows = []
    for who in fns:
        g = 2 * n ** 3 / t[who] / 1e9
        # the fastest round of each: on a time-shared host the least disturbed call
        gmin = 2 * n ** 3 / min(per[who]) / 1e9
        share = sorted(r / w for r, w in zip(per[ref], per[who]))
        loop = {"kcc off": ks[0].loops[0], "kcc fast": ks[1].loops[0],
                "clang -O2 (tinygrad's C)": ks[0].loops[1]}.get(who, "–")
        rows.append(f"| matmul {n}³ | {who} | {t[who] * 1e3:.2f} | {g:.1f} | {gmin:.1f} | "
                    f"{100 * t[ref] / t[who]:.0f}% | "
                    f"{100 * min(per[ref]) / min(per[who]):.0f}% | "
                    f"{100 * statistics.median(share):.0f}% "
                    f"({100 * share[0]:.0f}–{100 * share[-1]:.0f}%) | {loop} |")
    for k in ks:
        k.keep.clear()
    return rows


def run_conv(k0: tx.Kernel, arch: str, reps: int, bad: list[str],
             clock: Callable[[], float]) -> list[str]:
    rows = []
    for contract in ("off", "fast"):
        k, kfn, cfn = loaded(k0, arch, contract)
        checked(k, kfn, f"kcc fp-contract {contract}", bad)
        checked(k, cfn, "clang", bad)
        per: dict[str, list[float]] = {}
        t = tx.timed({"kcc": kfn, "clang": cfn}, reps, per, clock=clock)
        q = sorted(a / b for a, b in zip(per["kcc"], per["clang"]))
        rows.append(f"| {k.name} | {contract} | {t['kcc'] * 1e3:.2f} | {t['clang'] * 1e3:.2f} "
                    f"| {t['kcc'] / t['clang']:.2f} | {statistics.median(q):.2f} "
                    f"({q[0]:.2f}–{q[-1]:.2f}) | {k.loops[0]} / {k.loops[1]} |")
        k.keep.clear()
    return rows


def run_memory(kernels: list[tx.Kernel], arch: str, reps: int, bad: list[str],
               clock: Callable[[], float], evict: bool) -> list[str]:
    """Each memory-bound kernel timed with the read/copy/triad peers in its rounds.

    The reference is the best peer with the kernel's traffic: the read peer for a kernel that
    writes under 1/16 of the bytes it moves (a row sum), else the best copy or triad peer.
    With evict, bench/bandwidth.py's Evictor runs before every call (untimed)."""
    rows = []
    ev = Evictor() if evict else None
    for k0 in kernels:
        k, kfn, cfn = loaded(k0, arch, "off")
        checked(k, kfn, "kcc", bad)
        checked(k, cfn, "clang", bad)
        bw = Peers(1 << 24, triad=True, read=True)
        bw.peers = [p for p in bw.peers if p.kind in ("copy", "triad", "read")
                    and p.name.startswith("clang")]
        bad += [f"bandwidth peer {p}" for p in bw.check()]
        fns = {"kcc": kfn, "clang": cfn, **bw.fns()}
        per: dict[str, list[float]] = {}
        t = tx.timed(fns, reps, per, clock=clock, before=ev)
        g = bw.gbs(t)
        moved = tx.moved_bytes(k)
        reads_only = 16 * tx.written_bytes(k) < moved
        kinds = ("read",) if reads_only else ("copy", "triad")
        ref_name = max((p.name for p in bw.peers if p.kind in kinds), key=lambda n: g[n])
        any_name = max(g, key=lambda name: g[name])
        for who in ("kcc", "clang"):
            mine = moved / t[who] / 1e9
            # per round: this kernel's GB/s against the reference's in the same round
            ref = per[f"bw: {ref_name}"]
            kind = next(p.kind for p in bw.peers if p.name == ref_name)
            n_ref = bw.n * COUNTED[kind]
            share = sorted((moved / w) / (n_ref / r) for r, w in zip(ref, per[who]))
            rows.append(f"| {k.workload} {k.name} | {who} | {t[who] * 1e3:.2f} | {mine:.1f} | "
                        f"{g['clang -O3 read']:.1f} / "
                        f"{g['clang -O3 copy, nontemporal']:.1f} / "
                        f"{g['clang -O3 triad, nontemporal']:.1f} / "
                        f"{g['clang -O3 copy']:.1f} / {g['clang -O3 triad']:.1f} | "
                        f"{'read' if reads_only else 'copy/triad'} | "
                        f"{100 * mine / g[ref_name]:.0f}% | "
                        f"{100 * statistics.median(share):.0f}% "
                        f"({100 * share[0]:.0f}–{100 * share[-1]:.0f}%) | "
                        f"{100 * mine / g[any_name]:.0f}% |")
        bw.close()
        k.keep.clear()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--only", default=",".join(ALL))
    ap.add_argument("--arch", default="native")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time each call by this thread's CPU time, not the wall clock")
    ap.add_argument("--no-evict", action="store_true",
                    help="memory-bound rounds: do not read a buffer of twice the last-level "
                    "cache before each call (bench/bandwidth.py Evictor)")
    opt = ap.parse_args()
    # the clock every round is timed by (bench/tinygrad_x86.timed)
    clock_fn = time.thread_time if opt.cpu_time else time.perf_counter
    names = [n for n in opt.only.split(",") if n]
    if unknown := [n for n in names if n not in ALL]:
        sys.exit(f"unknown workloads {unknown}: choose from {', '.join(ALL)}")
    bad: list[str] = []
    clock = "thread CPU time" if opt.cpu_time else "wall clock"
    print(f"median of {opt.reps} interleaved rounds ({clock}), --arch {opt.arch}, one thread; "
          f"load average {Path('/proc/loadavg').read_text().split()[:3]}")
    with tempfile.TemporaryDirectory() as tmp:
        kernels = tx.capture(names, Path(tmp), build)
        mm = [k for k in kernels if k.workload in MATMULS]
        if mm:
            print("\n| matmul | code | ms | GFLOP/s | GFLOP/s, fastest round | of OpenBLAS "
                  "(medians) | of OpenBLAS (fastest rounds) | of OpenBLAS per round: median "
                  "(range) | inner loop insts |")
            print("|---|---|---|---|---|---|---|---|---|")
            for k in mm:
                print("\n".join(run_matmul(k, opt.arch, opt.reps, bad, clock_fn)))
        conv = [k for k in kernels if k.workload == "conv2d"]
        if conv:
            print("\n| conv2d kernel | kcc fp-contract | kcc ms | clang ms | kcc/clang | "
                  "per round: median (range) | inner loop kcc / clang |")
            print("|---|---|---|---|---|---|---|")
            for k in conv:
                print("\n".join(run_conv(k, opt.arch, opt.reps, bad, clock_fn)))
        mem = [k for k in kernels if k.workload in MEMORY]
        if mem:
            print(f"\ncaches evicted before each call: {not opt.no_evict}")
            print("\n| memory-bound kernel | code | ms | GB/s | peers GB/s: read / copy NT / "
                  "triad NT / copy / triad | reference | of the reference (medians) | per "
                  "round: median (range) | of the best peer of any kind |")
            print("|---|---|---|---|---|---|---|---|---|")
            print("\n".join(run_memory(mem, opt.arch, opt.reps, bad, clock_fn,
                                       not opt.no_evict)))
    print(f"\nload average after: {Path('/proc/loadavg').read_text().split()[:3]}")
    if bad:
        print("WRONG OUTPUTS: " + "; ".join(bad))
        sys.exit(1)
    print("all outputs checked: ok")


if __name__ == "__main__":
    main()
