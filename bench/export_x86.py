#!/usr/bin/env python3
"""The exported x86 program (kcc.tinygrad.export, docs/export.md) against tinygrad's own
TinyJit steady state on DEV=CPU and against tinygrad's `extra/export_model.py` C source compiled
by clang -O2, for the same model and input, in one run.

    python bench/export_x86.py [--rounds 11] [--calls 20] [--threads 0]
                               [--tinygrad-src /path/to/tinygrad-checkout]

For each model: the program is exported, linked into a C timing harness with `cc -O2 main.c
NAME.o -lpthread -lm`, which calls NAME once (its outputs checked), then `calls` calls, and
prints the time per call (clock_gettime, CLOCK_MONOTONIC); tinygrad's TinyJit of the
same function runs after three warm-up calls, `calls` calls a round, each call realized and
the device synchronized. The variants' rounds are interleaved (one round of each in turn,
`rounds` times), so a shared host's load falls on all alike; the table gives the medians and
their ratios (how many times faster the exported program is). Both run on the machine's
cores (tinygrad's CPU threads; the export's default thread count) unless --threads is given
for the export.

`export_model` is tinygrad's own whole-model C exporter; it is not in the installed package
(only in tinygrad's repository, `extra/`), so it runs only with --tinygrad-src naming a checkout
of tinygrad's repository (its files are never copied into kcc). It runs in a child process with
THREADS=0, because its C `net()` calls each kernel once and cannot pass tinygrad's CPU thread
index (`core_id`), and with kernels renamed where tinygrad gives two different kernels one name
(export_model keys its C functions by name, so its C would not compile; the table says how
many were renamed); the source is compiled with tinygrad's own CPU flags (clang -O2
-march=native -ffreestanding -fno-math-errno) and timed by the same harness. The kcc export is
then also timed on one thread, so both columns of that comparison run single-threaded.
Every program's output of its first call is checked against tinygrad's values (rtol 1e-4).
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
{decl}
int main(int argc, char **argv) {{
  int rounds = atoi(argv[1]), calls = atoi(argv[2]);
  {threads}
{bufs}
  if ({call}) {{ fprintf(stderr, "the first call failed\n"); return 1; }}
  FILE *f = fopen(argv[4], "wb");
{dump}
  fclose(f);
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


def harness(work: Path, ins: list[np.ndarray], out_bytes: list[int], decl: str,
            threads: bool) -> Path:
    """main.c timing `net(in…, out…)` (kcc's returns int; with threads false, export_model's
    returns void): the inputs are read from files, the first call's outputs written to
    argv[4]."""
    bufs = []
    for k, a in enumerate(ins):
        a.tofile(work / f"in{k}.bin")
        bufs.append(f"  void *in{k} = malloc({a.nbytes}); FILE *fi{k} = fopen(\"{work}/in{k}.bin\""
                    f", \"rb\"); if (fread(in{k}, 1, {a.nbytes}, fi{k}) != {a.nbytes}) return 2;"
                    f" fclose(fi{k});")
    bufs += [f"  void *out{k} = calloc(1, {n});" for k, n in enumerate(out_bytes)]
    dump = "\n".join(f"  fwrite(out{k}, 1, {n}, f);" for k, n in enumerate(out_bytes))
    names = [f"in{k}" for k in range(len(ins))] + [f"out{k}" for k in range(len(out_bytes))]
    call = f"net({', '.join(names)})" if threads else f"(net({', '.join(names)}), 0)"
    (work / "main.c").write_text(HARNESS.format(
        decl=decl, bufs="\n".join(bufs), call=call, dump=dump,
        threads="net_set_threads(atoi(argv[3]));" if threads else "(void)argv[3];"))
    return work / "main.c"


def run_harness(exe: Path, work: Path, calls: int, threads: int,
                outs: list[np.ndarray]) -> float:
    """One round: µs per call over `calls` calls; the first call's outputs checked against
    tinygrad's (outs)."""
    res = subprocess.run([str(exe), "1", str(calls), str(threads), str(work / "outs.bin")],
                         capture_output=True, text=True, check=True)
    blob, pos = (work / "outs.bin").read_bytes(), 0
    for want in outs:
        got = np.frombuffer(blob[pos:pos + want.nbytes], want.dtype).reshape(want.shape)
        pos += want.nbytes
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return float(res.stdout.split()[0])


def build_export(fn: Any, ins: list[np.ndarray], work: Path
                 ) -> tuple[Path, list[np.ndarray], int]:
    """kcc's exported object linked into the harness: (executable, tinygrad's outputs,
    launches)."""
    import kcc.tinygrad as ktg
    ex = ktg.export(fn, *ins, out=work / "p", name="net")
    outs = [np.asarray(o) for o in ex.outputs]
    main = harness(work, ins, [o.nbytes for o in outs], '#include "net.h"', True)
    subprocess.run(["cc", "-O2", str(main), f"-I{ex.out}", str(ex.path("object")),
                    "-lpthread", "-lm", "-o", str(work / "main")], check=True)
    return work / "main", outs, len(ex.program.launches)


EXPORT_MODEL_CHILD = r"""
import sys, numpy as np
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from tinygrad import Tensor
import export_x86
import dataclasses
import extra.export_model as em
from extra.export_model import jit_model, compile_net, export_model_clang
# export_model keys the kernels' C functions by name, and tinygrad gives two different kernels
# one name (softmax's two `r_64_10` reductions): the C would not compile. Give each distinct
# kernel source its own name (the bench's adaptation, not export_model's behaviour).
real, renames = em.to_program, {}
def unique(ast, ren):
    prg = real(ast, ren)
    fn, src = prg.arg.function_name, prg.src[2].arg
    new = renames.setdefault((fn, src), fn if not any(f == fn for f, _ in renames) else
                             f"{fn}_{sum(f == fn for f, _ in renames) + 1}")
    if new == fn:
        return prg
    body = prg.src[2].replace(arg=src.replace(f" {fn}(", f" {new}(", 1))
    return prg.replace(arg=dataclasses.replace(prg.arg, name=new),
                       src=(*prg.src[:2], body, *prg.src[3:]))
em.to_program = unique
fn, ins = export_x86.models()[sys.argv[3]]
linear, outs = jit_model(fn, *[Tensor(a).realize() for a in ins])
functions, statements, bufs, save = compile_net(linear, outs)
names = [f"input{k}" for k in range(len(ins))], [f"output{k}" for k in range(len(outs))]
open(sys.argv[4], "w").write(export_model_clang(functions, statements, bufs, save, *names))
for k, b in enumerate(outs):
    np.save(f"{sys.argv[4]}.out{k}.npy", b.numpy())
print(len(statements), sum(n != f for (f, _), n in renames.items()))
"""


def time_export_model(name: str, ins: list[np.ndarray], outs: list[np.ndarray], work: Path,
                      args: argparse.Namespace) -> tuple[Path | str, int]:
    """(the harness executable or clang's error, kernels renamed) of tinygrad's export_model
    C, compiled as tinygrad compiles C for its CPU device; the child's own tinygrad values
    checked against the kcc export's (the same weights and inputs)."""
    import os
    src = work / "net.c"
    env = {**os.environ, "DEV": "CPU", "THREADS": "0"}
    res = subprocess.run([sys.executable, "-c", EXPORT_MODEL_CHILD, str(args.tinygrad_src),
                          str(Path(__file__).parent), name, str(src)], env=env,
                         capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"export_model failed on {name}:\n{res.stderr[-3000:]}")
    renamed = int(res.stdout.split()[-1])
    for k, want in enumerate(outs):      # the same weights and inputs in the child
        np.testing.assert_allclose(np.load(f"{src}.out{k}.npy").reshape(want.shape), want,
                                   rtol=1e-4, atol=1e-5)
    cflags = ["-O2", "-march=native", "-fno-math-errno"]
    cc = subprocess.run(["clang", *cflags, "-ffreestanding", "-c", str(src), "-o",
                         str(work / "net.o")], capture_output=True, text=True)
    if cc.returncode:        # e.g. two different kernels of one name: one C function each
        err = next((ln for ln in cc.stderr.splitlines() if "error:" in ln), cc.stderr)
        return err.split("error:", 1)[-1].strip(), renamed
    decl = "void net(" + ", ".join(["float *"] * (len(ins) + len(outs))) + ");"
    main = harness(work, ins, [o.nbytes for o in outs], decl, False)
    link = subprocess.run(["clang", "-O2", str(main), str(work / "net.o"), "-lm", "-o",
                           str(work / "main_em")], capture_output=True, text=True)
    if link.returncode:
        sys.exit(f"the export_model harness does not link:\n{link.stderr[-2000:]}")
    return work / "main_em", renamed


def tinyjit_rounds(fn: Any, ins: list[np.ndarray]) -> Any:
    """A function timing one round of `calls` TinyJit calls (µs per call) after three
    warm-up calls; each call realized, the device synchronized at the round's end."""
    from tinygrad import Device, Tensor, TinyJit
    jit = TinyJit(lambda *xs: fn(*xs).realize())
    ts = [Tensor(a).realize() for a in ins]
    for _ in range(3):
        jit(*ts)
    dev = Device[Device.DEFAULT]
    dev.synchronize()

    def one(calls: int) -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            jit(*ts)
        dev.synchronize()
        return (time.perf_counter() - t0) / calls * 1e6
    return one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="the export's threads (0: cores)")
    ap.add_argument("--tinygrad-src", type=Path, default=None,
                    help="a checkout of tinygrad's repository (for extra/export_model.py)")
    args = ap.parse_args()
    if shutil.which("cc") is None:
        sys.exit("needs cc")
    if args.tinygrad_src and not (args.tinygrad_src / "extra" / "export_model.py").is_file():
        sys.exit(f"{args.tinygrad_src}: no extra/export_model.py there")
    rows = []
    for name, (fn, ins) in models().items():
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            exe, outs, nk = build_export(fn, ins, work)
            em, renamed = (time_export_model(name, ins, outs, work, args)
                           if args.tinygrad_src else (None, 0))
            jit = tinyjit_rounds(fn, ins)
            times: dict[str, list[float]] = {"kcc": [], "kcc1": [], "em": [], "jit": []}
            for _ in range(args.rounds):        # interleaved: the host's load hits all alike
                times["kcc"].append(run_harness(exe, work, args.calls, args.threads, outs))
                times["kcc1"].append(run_harness(exe, work, args.calls, 1, outs))
                if isinstance(em, Path):
                    times["em"].append(run_harness(em, work, args.calls, 1, outs))
                times["jit"].append(jit(args.calls))
        med = {k: statistics.median(v) if v else None for k, v in times.items()}
        rows.append((name, nk, med["kcc"], med["jit"], med["kcc1"],
                     None if em is None else (em if isinstance(em, str) else med["em"],
                                              renamed)))
    print("| model | launches | kcc export (µs) | TinyJit DEV=CPU (µs) | TinyJit / export |"
          " kcc export, 1 thread (µs) | export_model C, clang -O2, 1 thread (µs) |"
          " export_model / export |")
    print("|---|---|---|---|---|---|---|---|")
    for name, nk, k, j, k1, em in rows:
        if em is None:
            emc = "– | –"
        elif isinstance(em[0], str):
            emc = f"clang refuses its C: {em[0]} | –"
        else:
            emc = f"{em[0]:.1f} ({em[1]} renamed) | {em[0] / k1:.2f}x"
        print(f"| {name} | {nk} | {k:.1f} | {j:.1f} | {j / k:.2f}x | {k1:.1f} | {emc} |")


if __name__ == "__main__":
    main()
