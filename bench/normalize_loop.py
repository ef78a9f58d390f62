"""What bounds layernorm normalize's loop (tinygrad's E_2048_256_2_4): variants of kcc's loop.

    python bench/normalize_loop.py [--rounds 201] [--runs 3] [--kcc-uop PATH] [--evict]

The kernel is out[r, c] = (x[r, c] - mean[r]) / std[r] over 4096 rows of 1024 floats (16 MB
in, 16 MB out, non-temporal stores). kcc's loop (x86-64-v4 at main 5f7f288: one 4-lane vector
a step, 8 instructions) is written out below as assembly, beside variants of it: software
prefetch a fixed distance ahead of the load (PREFETCHT0 / PREFETCHNTA, SDM Vol. 2B
"PREFETCHh"), the loop counted with its index register (one add fewer), and — to find the
bound, not as candidates — the same loop without the divide (a different result) and with 8-
and 16-lane vectors (the same result: each lane computes what it did). All are assembled by
clang into one C driver that times them in the same rounds (order reversed every other
round) on the same buffers, each called for both workers (gidx0 = 0, 1) as tinygrad calls
it, and checks that every variant but the divide-less one writes exactly kcc's bytes.
With `--evict` the driver reads a buffer of twice the last-level cache before every call
(untimed), so x comes from memory as in bench/x86_peak.py (without it the 16 MB arrays stay
in this VM's 480 MiB L3 and the loop reads as a cache-resident one).
`--kcc-uop` adds kcc's own object for the captured kernel (a check that the transcription is
the loop kcc writes). Reported per variant: median and min ms, GB/s (32 MB a call), and the
median over rounds of its time / the kcc loop's time in the same round.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bandwidth import llc_bytes  # noqa: E402

# name -> (prefetch instruction or "", counted by the index register, lanes, divides,
#          writes what kcc's loop writes)
VARIANTS: dict[str, tuple[str, bool, int, bool, bool]] = {
    "kcc loop": ("", False, 4, True, True),
    "prefetcht0 +256": ("prefetcht0 256(%rsi,%r11,4)", False, 4, True, True),
    "prefetcht0 +512": ("prefetcht0 512(%rsi,%r11,4)", False, 4, True, True),
    "prefetcht0 +1024": ("prefetcht0 1024(%rsi,%r11,4)", False, 4, True, True),
    "prefetchnta +512": ("prefetchnta 512(%rsi,%r11,4)", False, 4, True, True),
    "prefetchnta +1024": ("prefetchnta 1024(%rsi,%r11,4)", False, 4, True, True),
    "index-counted": ("", True, 4, True, True),
    "index-counted, prefetcht0 +512": ("prefetcht0 512(%rsi,%r11,4)", True, 4, True, True),
    "no divide (bound only)": ("", False, 4, False, False),
    "8 lanes (ymm)": ("", False, 8, True, True),
    "16 lanes (zmm)": ("", False, 16, True, True),
    "16 lanes, prefetcht0 +1024": ("prefetcht0 1024(%rsi,%r11,4)", False, 16, True, True),
    "16 lanes, prefetcht0 +2048": ("prefetcht0 2048(%rsi,%r11,4)", False, 16, True, True),
    "16 lanes, prefetcht0 +4096": ("prefetcht0 4096(%rsi,%r11,4)", False, 16, True, True),
    "16 lanes, prefetchnta +2048": ("prefetchnta 2048(%rsi,%r11,4)", False, 16, True, True),
}
_REG = {4: "xmm", 8: "ymm", 16: "zmm"}


def _function(sym: str, prefetch: str, by_index: bool, lanes: int, divide: bool) -> list[str]:
    """One variant as AT&T assembly: (out, x, mean, std, gidx0) in rdi, rsi, rdx, rcx, r8d
    (System V), rows gidx0*2048 … +2047, as kcc's object computes them."""
    v = _REG[lanes]
    steps = 1024 // lanes
    body = [f"vmovups (%rsi,%r11,4), %{v}2"] + ([prefetch] if prefetch else [])
    body += [f"vsubps %{v}0, %{v}2, %{v}2"]
    body += [f"vdivps %{v}1, %{v}2, %{v}2"] if divide else []
    body += [f"vmovntps %{v}2, (%rdi,%r11,4)", f"addl ${lanes}, %r11d"]
    body += ["cmpl %r10d, %r11d"] if by_index else ["addl $1, %r10d", f"cmpl ${steps}, %r10d"]
    return [f".globl {sym}", ".p2align 6", f"{sym}:",
            "movl %r8d, %eax", "movl %eax, %r8d", "shll $21, %r8d", "shll $11, %eax",
            "xorl %r9d, %r9d",
            "1:", "leal (%rax,%r9), %r10d",
            f"vbroadcastss (%rdx,%r10,4), %{v}0", f"vbroadcastss (%rcx,%r10,4), %{v}1",
            "leal 1024(%r8), %r10d" if by_index else "xorl %r10d, %r10d",
            "movl %r8d, %r11d",
            ".p2align 5", "2:", *body, "jl 2b",
            "addl $1024, %r8d", "addl $1, %r9d", "cmpl $2048, %r9d", "jl 1b",
            "sfence", "vzeroupper", "ret"]


DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef void (*fn)(float *, const float *, const float *, const float *, int);
%(decls)s
static fn F[] = {%(syms)s};
static const int EXACT[] = {%(exact)s};
#define NV %(nv)d
#define N (4096 * 1024)
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y;
}
int main(int argc, char **argv) {
    int R = atoi(argv[1]);
    size_t EV = argc > 2 ? (size_t)atoll(argv[2]) / 8 : 0;   /* doubles read before each call */
    double *ev = EV ? malloc(EV * sizeof(double)) : 0, evsum = 0;
    for (size_t i = 0; i < EV; i++) ev[i] = 1.0;
    float *x = aligned_alloc(64, N * 4), *out = aligned_alloc(64, N * 4);
    float *mean = aligned_alloc(64, 4096 * 4), *sd = aligned_alloc(64, 4096 * 4);
    float *ref = malloc(N * 4);
    double *t = malloc(sizeof(double) * NV * R), *q = malloc(sizeof(double) * R);
    srand(1);
    for (int i = 0; i < N; i++) x[i] = (float)(rand() & 0xffffff) / 0x1p21f - 4.0f;
    for (int i = 0; i < 4096; i++) {
        mean[i] = (float)(rand() & 0xffffff) / 0x1p24f - 0.5f;
        sd[i] = 0.5f + (float)(rand() & 0xffffff) / 0x1p24f;
    }
    F[0](out, x, mean, sd, 0); F[0](out, x, mean, sd, 1); memcpy(ref, out, N * 4);
    for (int v = 1; v < NV; v++) {
        memset(out, 0, N * 4); F[v](out, x, mean, sd, 0); F[v](out, x, mean, sd, 1);
        if (EXACT[v] && memcmp(out, ref, N * 4)) { printf("mismatch %%d\n", v); return 1; }
    }
    for (int r = 0; r < R; r++)
        for (int k = 0; k < NV; k++) {
            int v = (r & 1) ? NV - 1 - k : k;
            for (size_t i = 0; i < EV; i += 8) evsum += ev[i];
            double t0 = now(); F[v](out, x, mean, sd, 0); F[v](out, x, mean, sd, 1);
            t[v * R + r] = now() - t0;
        }
    for (int v = 0; v < NV; v++) {
        for (int r = 0; r < R; r++) q[r] = t[v * R + r] / t[r];
        qsort(q, R, sizeof(double), cmp);
        qsort(t + v * R, R, sizeof(double), cmp);
        printf("%%d %%.6f %%.6f %%.4f\n", v, t[v * R + R / 2], t[v * R], q[R / 2]);
    }
    if (evsum < 0) printf("%%g\n", evsum);
    return 0;
}
"""


def _kcc_object(uop: Path, work: Path) -> Path:
    """kcc's own object for the captured kernel (--arch native), its symbol renamed."""
    obj = work / "kcc.o"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    subprocess.run([sys.executable, "-m", "kcc.cli", "compile", "-t", "x86", "--arch", "native",
                    str(uop), "-o", str(obj), "--no-manifest"], check=True, env=env,
                   capture_output=True)
    subprocess.run(["objcopy", "--redefine-sym", "E_2048_256_2_4=kcc_object", str(obj)],
                   check=True)
    return obj


def main(argv: list[str] | None = None) -> int:
    """Build the variants and the driver, time them, print the table; 1 on a mismatch."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=201)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kcc-uop", type=Path, help="tinygrad's E_2048_256_2_4 capture (.uop)")
    ap.add_argument("--evict", action="store_true",
                    help="read twice the last-level cache before every call (untimed), so "
                    "each call reads x from memory as in bench/x86_peak.py")
    a = ap.parse_args(argv)
    if shutil.which("clang") is None:
        print("clang is needed (it assembles the variants and builds the driver)")
        return 1
    names = [n for n, v in VARIANTS.items()
             if v[2] < 16 or "avx512f" in Path("/proc/cpuinfo").read_text()]
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        asm = [".text"]
        for i, n in enumerate(names):
            asm += _function(f"variant_{i}", *VARIANTS[n][:4])
        (work / "v.s").write_text("\n".join(asm) + "\n.section .note.GNU-stack,\"\",@progbits\n")
        syms = [f"variant_{i}" for i in range(len(names))]
        exact = [int(VARIANTS[n][4]) for n in names]
        objs = [str(work / "v.s")]
        if a.kcc_uop:
            objs.append(str(_kcc_object(a.kcc_uop, work)))
            names.append("kcc object (--kcc-uop)")
            syms.append("kcc_object")
            exact.append(1)
        decls = "\n".join(f"void {s}(float *, const float *, const float *, const float *, int);"
                          for s in syms)
        (work / "d.c").write_text(DRIVER % dict(decls=decls, syms=", ".join(syms),
                                                exact=", ".join(map(str, exact)), nv=len(syms)))
        subprocess.run(["clang", "-O2", "-o", str(work / "d"), str(work / "d.c"), *objs],
                       check=True)
        print(f"median of {a.rounds} interleaved rounds, both workers a call; "
              "ratio: median of time / kcc loop's time in the same round\n")
        print("| variant | " + " | ".join(f"run {r + 1}: ms (min), GB/s, ratio"
                                         for r in range(a.runs)) + " |")
        print("|---|" + "---|" * a.runs)
        cols: list[list[str]] = [[] for _ in names]
        for _ in range(a.runs):
            cmd = [str(work / "d"), str(a.rounds)]
            if a.evict:
                cmd.append(str(max(2 * llc_bytes(), 64 << 20)))
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                bad = p.stdout.split()[-1] if p.stdout.startswith("mismatch") else None
                print(f"variant {names[int(bad)]!r} does not write the kcc loop's bytes"
                      if bad is not None else p.stdout + p.stderr)
                return 1
            for line in p.stdout.split("\n"):
                if line:
                    v, med, lo, ratio = line.split()
                    cols[int(v)].append(f"{float(med) * 1e3:.3f} ({float(lo) * 1e3:.3f}), "
                                        f"{32 * 2**20 / float(med) / 1e9:.1f}, {float(ratio):.3f}")
        for n, c in zip(names, cols):
            print(f"| {n} | " + " | ".join(c) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
