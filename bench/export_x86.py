#!/usr/bin/env python3
"""The exported x86 program (kcc.tinygrad.export, docs/export.md) against tinygrad's own
TinyJit steady state on DEV=CPU, for the same model and input, in one run.

    python bench/export_x86.py [--rounds 11] [--calls 20] [--threads 0]

For each model: the program is exported, linked into a C timing harness with `cc -O2 main.c
NAME.o -lpthread -lm`, which calls NAME once, then `rounds` rounds of `calls` calls each, and
prints each round's time per call (clock_gettime, CLOCK_MONOTONIC); tinygrad's TinyJit of the
same function runs after three warm-up calls, `rounds` rounds of `calls` calls, each call
realized and the device synchronized. The table gives the medians and their ratio (how many
times faster the exported program is). Both run on the machine's cores (tinygrad's CPU threads;
the export's default thread count) unless --threads is given for the export.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "{name}.h"
int main(int argc, char **argv) {{
  int rounds = atoi(argv[1]), calls = atoi(argv[2]);
  {name}_set_threads(atoi(argv[3]));
{bufs}
  if ({call}) {{ fprintf(stderr, "%s\n", {name}_error()); return 1; }}
  for (int r = 0; r < rounds; r++) {{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int c = 0; c < calls; c++) {call};
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / calls);
  }}
  return 0;
}}
"""


def models() -> dict[str, tuple[Any, list[np.ndarray]]]:
    """The benchmark's models (imported lazily: tinygrad is optional)."""
    from tinygrad import Tensor, nn
    from tinygrad.nn.state import get_parameters
    rng = np.random.default_rng(0)
    Tensor.manual_seed(0)
    l1, l2 = nn.Linear(256, 512), nn.Linear(512, 10)

    def mlp(x: Any) -> Any:
        return l2(l1(x).relu()).softmax()

    sys.path.insert(0, str(ROOT / "examples" / "export"))
    import mnist_cnn
    import transformer_block
    t = transformer_block
    Tensor.realize(*get_parameters([l1, l2, mnist_cnn.conv1, mnist_cnn.conv2, mnist_cnn.bn1,
                                    mnist_cnn.fc, t.ln1, t.ln2, t.qkv, t.proj, t.up, t.down]))
    return {
        "mlp 64x256-512-10": (mlp, [rng.normal(size=(64, 256)).astype(np.float32)]),
        "mnist cnn, batch 16": (mnist_cnn.net,
                                [rng.normal(size=(16, 1, 28, 28)).astype(np.float32)]),
        "transformer block 1x16x64": (transformer_block.block,
                                      [rng.normal(size=(1, 16, 64)).astype(np.float32)]),
    }


def time_export(fn: Any, ins: list[np.ndarray], work: Path, args: argparse.Namespace
                ) -> tuple[float, int]:
    import kcc.tinygrad as ktg
    ex = ktg.export(fn, *ins, out=work / "p", name="net")
    p = ex.program
    bufs = [f"  void *in{k} = calloc(1, {p.buffer(i).nbytes});" for k, i in enumerate(p.inputs)]
    bufs += [f"  void *out{k} = calloc(1, {p.buffer(i).nbytes});"
             for k, i in enumerate(p.outputs)]
    call = "net(" + ", ".join([f"in{k}" for k in range(len(p.inputs))]
                              + [f"out{k}" for k in range(len(p.outputs))]) + ")"
    (work / "main.c").write_text(HARNESS.format(name="net", bufs="\n".join(bufs), call=call))
    subprocess.run(["cc", "-O2", str(work / "main.c"), f"-I{ex.out}", str(ex.path("object")),
                    "-lpthread", "-lm", "-o", str(work / "main")], check=True)
    out = subprocess.run([str(work / "main"), str(args.rounds), str(args.calls),
                          str(args.threads)], capture_output=True, text=True, check=True)
    return statistics.median(float(v) for v in out.stdout.split()), len(p.launches)


def time_tinyjit(fn: Any, ins: list[np.ndarray], args: argparse.Namespace) -> float:
    from tinygrad import Device, Tensor, TinyJit
    jit = TinyJit(lambda *xs: fn(*xs).realize())
    ts = [Tensor(a).realize() for a in ins]
    for _ in range(3):
        jit(*ts)
    dev = Device[Device.DEFAULT]
    dev.synchronize()
    times = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for _ in range(args.calls):
            jit(*ts)
        dev.synchronize()
        times.append((time.perf_counter() - t0) / args.calls * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="the export's threads (0: cores)")
    args = ap.parse_args()
    if shutil.which("cc") is None:
        sys.exit("needs cc")
    rows = []
    for name, (fn, ins) in models().items():
        with tempfile.TemporaryDirectory() as tmp:
            kcc_us, nk = time_export(fn, ins, Path(tmp), args)
        jit_us = time_tinyjit(fn, ins, args)
        rows.append((name, nk, kcc_us, jit_us))
    print("| model | launches | kcc export (µs) | TinyJit DEV=CPU (µs) | TinyJit / export |")
    print("|---|---|---|---|---|")
    for name, nk, k, j in rows:
        print(f"| {name} | {nk} | {k:.1f} | {j:.1f} | {j / k:.2f}x |")


if __name__ == "__main__":
    main()
