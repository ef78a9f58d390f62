"""Benchmark: kcc x86 code vs numpy vs cc -O2 vs the machine's memory bandwidth, on an
elementwise kernel (saxpy, out = a*x + b over N float32, 8 lanes per iteration).

    python bench/x86_elementwise.py [--n 16777216] [--reps 15]

Each timing is the median of --reps runs after a warm-up; every peer is measured in the same
run. The bandwidth "limit" is numpy's copyto of the same bytes (read + write) on this machine.
Results are printed as a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kcc.frontend.parser import parse
from kcc.targets.manifest import check_launch
from kcc.targets.objload import LoadedObject
from kcc.targets.x86 import compile_x86, launch

C_SRC = """
void saxpy(float *restrict out, const float *restrict a, const float *restrict b, float x,
           int n) { for (int i = 0; i < n; i++) out[i] = a[i] * x + b[i]; }
"""


def saxpy_uop(n: int, lanes: int = 8) -> str:
    """out[i:i+8] = a[i:i+8] * x + b[i:i+8], one loop over n/8 vector steps."""
    return f"""# kcc-uop 1
%out = PARAM ParamArg(0, float32, {n})
%a   = PARAM ParamArg(1, float32, {n})
%b   = PARAM ParamArg(2, float32, {n})
%x   = PARAM ParamArg(3, float32, addrspace=ALU)
%i   = RANGE({n // lanes}) (0, LOOP)
%s   = MUL(%i, {lanes})
%ap  = SHRINK(%a, %s, {lanes})
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


def median_time(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--reps", type=int, default=15)
    opt = ap.parse_args()
    n = opt.n
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty(n, np.float32)
    x = np.float32(1.5)

    t0 = time.perf_counter()
    obj, descs = compile_x86([parse(saxpy_uop(n), "saxpy.uop")])
    t_compile = time.perf_counter() - t0
    lo = LoadedObject(obj)
    args = check_launch(descs[0], [out, a, b, x])
    t_kcc = median_time(lambda: launch(lo, descs[0], args), opt.reps)
    want = (a.astype(np.float64) * 1.5 + b).astype(np.float32)
    ok_kcc = np.allclose(out, want, rtol=1e-6, atol=1e-6)

    tmp = np.empty(n, np.float32)

    def np_saxpy() -> None:
        np.multiply(a, x, out=tmp)
        np.add(tmp, b, out=out)
    t_np = median_time(np_saxpy, opt.reps)

    peers = []
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "s.c"
        src.write_text(C_SRC)
        for cc in ("clang-14", "clang", "cc"):
            if shutil.which(cc) is None or (cc == "clang" and shutil.which("clang-14")):
                continue
            lib = Path(d) / f"{cc}.so"
            t0 = time.perf_counter()
            subprocess.run([cc, "-O2", "-march=x86-64-v3", "-shared", "-fPIC", str(src), "-o",
                            str(lib)], check=True)
            t_cc_compile = time.perf_counter() - t0
            so = ctypes.CDLL(str(lib))
            so.saxpy.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_int]
            t_cc = median_time(lambda: so.saxpy(out.ctypes.data, a.ctypes.data, b.ctypes.data,
                                                1.5, n), opt.reps)
            peers.append((f"{cc} -O2 -march=x86-64-v3", t_cc, t_cc_compile))

    src_bytes = np.empty(3 * n, np.float32)
    dst_bytes = np.empty(3 * n, np.float32)
    t_bw = median_time(lambda: np.copyto(dst_bytes, src_bytes), opt.reps)
    moved = 3 * n * 4          # saxpy reads a and b and writes out: 12 bytes per element

    def gbs(t: float) -> float:
        return moved / t / 1e9
    rows = [("kcc x86 (AVX2, 8 lanes, fma)", t_kcc)] + [(p[0], p[1]) for p in peers] + \
        [("numpy (two passes)", t_np)]
    print(f"saxpy, n = {n} float32, median of {opt.reps}; kcc output correct: {ok_kcc}")
    print(f"memory bandwidth (numpy copyto, read+write): {2 * 3 * n * 4 / t_bw / 1e9:.1f} GB/s")
    print()
    print("| implementation | time (ms) | GB/s moved | vs kcc |")
    print("|---|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t * 1e3:.2f} | {gbs(t):.1f} | {t / t_kcc:.2f}x |")
    print()
    print(f"compile time: kcc {t_compile * 1e3:.0f} ms (in-process, incl. first imports); "
          + "; ".join(f"{p[0].split()[0]} {p[2] * 1e3:.0f} ms (process)" for p in peers))
    if not ok_kcc:
        sys.exit(1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
