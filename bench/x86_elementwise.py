"""Benchmark: kcc x86 code vs clang -O2 / gcc -O2 (the C path a tinygrad user gets) vs numpy,
against the machine's memory bandwidth, on an elementwise kernel: saxpy, out = a*x + b over N
float32, 8 lanes per iteration (one worker, and split over gidx workers on threads).

    python bench/x86_elementwise.py [--n 16777216] [--reps 21] [--workers 2]

Every implementation is timed in the same run, interleaved round-robin (so drifting machine
load hits all of them alike); each number is the median of --reps rounds after a warm-up.
The bandwidth reference is numpy's copyto of the same number of bytes (read + write).
Prints a Markdown table for docs/performance.md; exits 1 if kcc's output is wrong.
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from kcc.frontend.parser import parse
from kcc.targets.manifest import check_launch
from kcc.targets.x86.objload import LoadedObject
from kcc.targets.x86.target import compile_x86, launch

C_SRC = """
void saxpy(float *restrict out, const float *restrict a, const float *restrict b, float x,
           int n) { for (int i = 0; i < n; i++) out[i] = a[i] * x + b[i]; }
"""


def saxpy_uop(n: int, lanes: int = 8, workers: int = 1) -> str:
    """out[i:i+8] = a[i:i+8] * x + b[i:i+8]; with workers > 1, gidx0 takes one chunk each."""
    per = n // lanes // workers
    if workers > 1:
        head = (f'%g   = SPECIAL({workers}) "gidx0"\n%i   = RANGE({per}) (0, LOOP)\n'
                f"%gb  = MUL(%g, {per})\n%ii  = ADD(%gb, %i)\n%s   = MUL(%ii, {lanes})\n")
    else:
        head = f"%i   = RANGE({per}) (0, LOOP)\n%s   = MUL(%i, {lanes})\n"
    return f"""# kcc-uop 1
%out = PARAM ParamArg(0, float32, {n})
%a   = PARAM ParamArg(1, float32, {n})
%b   = PARAM ParamArg(2, float32, {n})
%x   = PARAM ParamArg(3, float32, addrspace=ALU)
{head}%ap  = SHRINK(%a, %s, {lanes})
%av  = LOAD(%ap)
%bp  = SHRINK(%b, %s, {lanes})
%bv  = LOAD(%bp)
%xv  = STACK({", ".join(["%x"] * lanes)})
%m   = MULACC(%av, %xv, %bv)
%op  = SHRINK(%out, %s, {lanes})
%st  = STORE(%op, %m)
%e   = END(%st, %i)
SINK(%e) KernelInfo(name="saxpy")
"""


def interleaved(fns: dict[str, Callable[[], None]], reps: int) -> dict[str, float]:
    """Median seconds of each fn over reps rounds, one call of each per round."""
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--workers", type=int, default=2)
    opt = ap.parse_args()
    n = opt.n
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x = np.float32(1.5)
    want = (a.astype(np.float64) * 1.5 + b).astype(np.float32)     # fused: one rounding
    fns: dict[str, Callable[[], None]] = {}
    outs: dict[str, np.ndarray] = {}
    compile_ms: dict[str, float] = {}

    for w in sorted({1, opt.workers}):
        name = f"kcc x86-64-v3 ({w} worker{'s' * (w > 1)})"
        t0 = time.perf_counter()
        obj, descs = compile_x86([parse(saxpy_uop(n, workers=w), "saxpy.uop")])
        compile_ms[name] = (time.perf_counter() - t0) * 1e3
        lo = LoadedObject(obj)
        out = outs[name] = np.zeros(n, np.float32)
        args = check_launch(descs[0], [out, a, b, x])
        fns[name] = (lambda lo=lo, d=descs[0], args=args: launch(lo, d, args))

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "s.c"
        src.write_text(C_SRC)
        for cc in ("clang-14", "gcc"):
            if shutil.which(cc) is None:
                continue
            lib = Path(d) / f"{cc}.so"
            t0 = time.perf_counter()
            subprocess.run([cc, "-O2", "-march=x86-64-v3", "-shared", "-fPIC", str(src), "-o",
                            str(lib)], check=True)
            name = f"{cc} -O2 -march=x86-64-v3"
            compile_ms[name] = (time.perf_counter() - t0) * 1e3
            so = ctypes.CDLL(str(lib))
            so.saxpy.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_int]
            out = outs[name] = np.zeros(n, np.float32)
            fns[name] = (lambda so=so, out=out: so.saxpy(out.ctypes.data, a.ctypes.data,
                                                         b.ctypes.data, 1.5, n))
        tmp = np.empty(n, np.float32)
        out_np = outs["numpy (a*x, then +b)"] = np.zeros(n, np.float32)

        def np_saxpy() -> None:
            np.multiply(a, x, out=tmp)
            np.add(tmp, b, out=out_np)
        fns["numpy (a*x, then +b)"] = np_saxpy
        src_b, dst_b = np.ones(3 * n, np.float32), np.empty(3 * n, np.float32)
        fns["bandwidth: numpy copyto"] = lambda: np.copyto(dst_b, src_b)
        t = interleaved(fns, opt.reps)

    ok = all(np.array_equal(outs[k], want) for k in outs if k.startswith("kcc"))
    moved = 3 * n * 4                     # saxpy reads a and b and writes out
    ref = next(k for k in t if k.startswith("kcc") and "(1 worker)" in k)
    print(f"saxpy, n = {n} float32 ({moved / 1e6:.0f} MB moved), median of {opt.reps} "
          f"interleaved rounds; kcc output bit-exact: {ok}")
    print()
    print("| implementation | time (ms) | GB/s | vs kcc (1 worker) | compile (ms) |")
    print("|---|---|---|---|---|")
    for k, sec in t.items():
        gbs = (2 * 3 * n * 4 if k.startswith("bandwidth") else moved) / sec / 1e9
        comp = f"{compile_ms[k]:.0f}" if k in compile_ms else "–"
        print(f"| {k} | {sec * 1e3:.2f} | {gbs:.1f} | {t[ref] / sec:.2f}x | {comp} |")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
