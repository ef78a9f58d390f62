"""A kernel's run time with its buffers next to an unmapped page, and with mapped memory all
around: what a masked load's address outside its buffer costs (kcc/passes/gates.py).

An AVX-512 masked load suppresses the fault of a masked-off element (Intel SDM Vol. 1
§15.6.1), but when that element's address is not mapped the suppression is a microcode
assist. Where a buffer sits is the allocator's choice (tinygrad's, a C program's), so the
same object runs fast or slow depending on it. This script compiles each .uop with kcc, links
it into a C driver that places every buffer either right after a PROT_NONE page ("guard":
the worst case for an index below 0) or in the middle of a mapped region whose pages are all
present ("open"; an untouched anonymous page is not present and costs the same assist), fills the
inputs with 1.0, runs every worker of the launch --reps times and prints the median (µs).

    python bench/gate_assist.py [--arch native] [--reps 201] K.uop ...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "k.h"
#define PAGE 4096
static void *place(size_t bytes, int guard) {
  size_t span = (bytes + PAGE - 1) / PAGE * PAGE;
  char *m = mmap(0, span + 2 * 16 * PAGE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) { perror("mmap"); exit(2); }
  if (guard) { mprotect(m + 15 * PAGE, PAGE, PROT_NONE); return m + 16 * PAGE; }
  memset(m, 0, span + 2 * 16 * PAGE);       /* every page around it present */
  return m + 16 * PAGE;
}
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}
int main(int argc, char **argv) {
  int guard = atoi(argv[1]), reps = atoi(argv[2]);
  double *t = malloc(sizeof(double) * reps);
BUFFERS
  for (int r = 0; r < reps; r++) {
    double t0 = now();
CALLS
    t[r] = now() - t0;
  }
  qsort(t, reps, sizeof(double), cmp);
  printf("%.2f\n", t[reps / 2]);
  return 0;
}
"""


def driver(desc: dict) -> str:
    """The C driver's source for one kernel of a manifest (buffers filled with 1)."""
    bufs, names = [], []
    for a in desc["args"]:
        n = f"b{a['slot']}"
        ct = {"float32": "float", "float64": "double", "int32": "int"}[a["dtype"]]
        bufs.append(f"  {ct} *{n} = place({a['size']} * sizeof({ct}), guard);\n"
                    f"  for (int i = 0; i < {a['size']}; i++) {n}[i] = 1;")
        names.append(n)
    x86 = desc["target"]["x86"]
    calls, idx = [], []
    for k, (w, g) in enumerate(zip(x86["workers"], x86["worker_args"])):
        calls.append("  " * k + f"    for (int {g} = 0; {g} < {w}; {g}++)")
        idx.append(g)
    call = f"{desc['symbol']}({', '.join(names + idx)});"
    calls.append("  " * len(idx) + "    " + call)
    return DRIVER.replace("BUFFERS", "\n".join(bufs)).replace("CALLS", "\n".join(calls))


def time_kernel(uop: Path, arch: str, reps: int, tmp: Path) -> tuple[float, float]:
    """(guard µs, open µs) for the kernel of uop."""
    kcc = [sys.executable, "-c", "import sys; from kcc.cli import main; sys.exit(main())"]
    subprocess.run(kcc + ["compile", str(uop), "-t", "x86", "--arch", arch, "-o",
                          str(tmp / "k.o"), "--header", str(tmp / "k.h")],
                   check=True, capture_output=True)
    desc = json.loads((tmp / "k.json").read_text())["kernels"][0]
    (tmp / "main.c").write_text(driver(desc))
    subprocess.run(["cc", "-O2", "-o", str(tmp / "run"), str(tmp / "main.c"), str(tmp / "k.o")],
                   check=True, cwd=tmp)
    out = [float(subprocess.run([str(tmp / "run"), g, str(reps)], check=True,
                                capture_output=True, text=True).stdout) for g in ("1", "0")]
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("uops", nargs="+")
    ap.add_argument("--arch", default="native")
    ap.add_argument("--reps", type=int, default=201)
    opt = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for u in opt.uops:
            g, o = time_kernel(Path(u), opt.arch, opt.reps, Path(d))
            print(f"{Path(u).stem:44s} guard {g:9.2f} us  open {o:9.2f} us", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    main()
