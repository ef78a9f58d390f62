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
With --base TREE (another kcc checkout) each kernel is compiled by both and the two objects
run in one process, alternately (the order swapped every repetition), so that a busy host
slows both alike: the medians of the base and of this checkout, and their ratio.

    python bench/gate_assist.py [--arch native] [--reps 201] [--base TREE] K.uop ...
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
  double *t = malloc(sizeof(double) * reps * NK);
BUFFERS
  for (int r = 0; r < reps; r++)
    for (int j = 0; j < NK; j++) {
      int k = r & 1 ? NK - 1 - j : j;         /* each object first every other repetition */
      double t0 = now();
      switch (k) {
CALLS
      }
      t[k * reps + r] = now() - t0;
    }
  for (int k = 0; k < NK; k++) {
    qsort(t + k * reps, reps, sizeof(double), cmp);
    printf("%.2f\n", t[k * reps + reps / 2]);
  }
  return 0;
}
"""


def driver(desc: dict, symbols: list[str] | None = None) -> str:
    """The C driver's source for one kernel of a manifest (buffers filled with 1), timing
    each of `symbols` (objects of that kernel; default: its own symbol)."""
    bufs, names = [], []
    for a in desc["args"]:
        n = f"b{a['slot']}"
        ct = {"float32": "float", "float64": "double", "int32": "int"}[a["dtype"]]
        bufs.append(f"  {ct} *{n} = place({a['size']} * sizeof({ct}), guard);\n"
                    f"  for (int i = 0; i < {a['size']}; i++) {n}[i] = 1;")
        names.append(n)
    x86 = desc["target"]["x86"]
    symbols = symbols or [desc["symbol"]]
    calls = []
    for j, sym in enumerate(symbols):
        calls.append(f"      case {j}:")
        idx = []
        for k, (w, g) in enumerate(zip(x86["workers"], x86["worker_args"])):
            calls.append("  " * k + f"        for (int {g} = 0; {g} < {w}; {g}++)")
            idx.append(g)
        calls.append("  " * len(idx) + f"        {sym}({', '.join(names + idx)});")
        calls.append("        break;")
    protos = "".join(f"__typeof__({desc['symbol']}) {s};\n" for s in symbols
                     if s != desc["symbol"])
    return DRIVER.replace("#define PAGE", f"{protos}#define NK {len(symbols)}\n#define PAGE") \
        .replace("BUFFERS", "\n".join(bufs)).replace("CALLS", "\n".join(calls))


def _compile(uop: Path, arch: str, out: Path, tree: str | None = None) -> dict:
    """Compile uop with this checkout's kcc (or the one in tree); its manifest entry."""
    kcc = [sys.executable, "-c", "import sys; from kcc.cli import main; sys.exit(main())"]
    env = dict(os.environ, PYTHONPATH=tree) if tree else None
    # run in out's folder: `python -c` puts the working directory first on sys.path, so run
    # from a kcc checkout it would import that checkout's kcc before PYTHONPATH's (the base
    # object was then this checkout's, and every ratio 1.00x)
    subprocess.run(kcc + ["compile", str(uop.resolve()), "-t", "x86", "--arch", arch,
                          "-o", str(out), "--header", str(out.with_suffix(".h"))],
                   check=True, capture_output=True, env=env, cwd=out.parent)
    return json.loads(out.with_suffix(".json").read_text())["kernels"][0]


def time_kernel(uop: Path, arch: str, reps: int, tmp: Path,
                base: str | None = None) -> list[tuple[float, ...]]:
    """[guard µs, open µs] of the kernel of uop: one per object (with base: its, then ours)."""
    desc = _compile(uop, arch, tmp / "k.o")
    objs, symbols = [str(tmp / "k.o")], [desc["symbol"]]
    if base:
        # the base's object, its symbol renamed beside ours (same arguments, same header)
        _compile(uop, arch, tmp / "b.o", base)
        subprocess.run(["objcopy", f"--redefine-sym={desc['symbol']}=base_{desc['symbol']}",
                        str(tmp / "b.o")], check=True)
        objs, symbols = [str(tmp / "b.o")] + objs, [f"base_{desc['symbol']}"] + symbols
    (tmp / "main.c").write_text(driver(desc, symbols))
    subprocess.run(["cc", "-O2", "-o", str(tmp / "run"), str(tmp / "main.c"), *objs],
                   check=True, cwd=tmp)
    out = [[float(x) for x in subprocess.run([str(tmp / "run"), g, str(reps)], check=True,
                                             capture_output=True, text=True).stdout.split()]
           for g in ("1", "0")]
    return list(zip(*out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("uops", nargs="+")
    ap.add_argument("--arch", default="native")
    ap.add_argument("--reps", type=int, default=201)
    ap.add_argument("--base", default=None,
                    help="another kcc checkout: time its object beside this one's")
    opt = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for u in opt.uops:
            t = time_kernel(Path(u), opt.arch, opt.reps, Path(d), opt.base)
            if opt.base:
                (bg, bo), (g, o) = t
                print(f"{Path(u).stem:40s} guard {bg:9.2f} -> {g:9.2f} us  open {bo:9.2f} -> "
                      f"{o:9.2f} us  ({o / bo:.2f}x)", flush=True)
            else:
                ((g, o),) = t
                print(f"{Path(u).stem:44s} guard {g:9.2f} us  open {o:9.2f} us", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    main()
