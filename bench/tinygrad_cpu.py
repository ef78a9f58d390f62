"""tinygrad's CPU device: kcc (DEV=CPU:KCC) against tinygrad's clang path on the same kernels.

For each computation, every kernel tinygrad schedules is lowered by both renderers (KCC with
its native ops, and clang), compiled by both compilers (compile time: median of --reps), loaded
by tinygrad's own CPUProgram and run on the same buffers, interleaved round-robin (run time:
median of --rounds). Prints a markdown table; docs/tinygrad.md records it. `--accuracy` prints
the accuracy of EXP2/LOG2/SIN instead (kcc's native ops and tinygrad's expansions).

    python bench/tinygrad_cpu.py [--reps 5] [--rounds 21] [--accuracy]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kcc.tinygrad  # noqa: E402,F401
from tinygrad import Device, Tensor  # noqa: E402
from tinygrad.codegen import to_program  # noqa: E402
from tinygrad.engine.realize import get_runtime  # noqa: E402
from tinygrad.codegen.opt.postrange import args_from_ast  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402


def computations() -> dict[str, Tensor]:
    """name -> an unrealized tensor; its kernels are the benchmark."""
    a, b = Tensor.empty(256, 256), Tensor.empty(256, 256)
    x, w = Tensor.empty(8, 16, 32, 32), Tensor.empty(32, 16, 3, 3)
    s = Tensor.empty(1024, 256)
    e = Tensor.empty(1 << 22)
    return {"matmul 256^3": a @ b, "conv2d 8x16x32x32, 32x3x3": x.conv2d(w, padding=1),
            "softmax 1024x256": s.softmax(axis=1), "gelu 4M": e.gelu(),
            "rand 1M": Tensor.rand(1 << 20)}


def kernels(t: Tensor) -> list:
    lin, _ = Tensor.linear_with_vars(t)
    return [c.src[0] for c in lin.src if c.src[0].op is Ops.SINK]


def median_time(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        st = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - st)
    return statistics.median(ts)


def ulps(got: "np.ndarray", ref: "np.ndarray") -> int:
    """The largest distance in float32 ulps between got and the float64 reference."""
    import numpy as np
    r = ref.astype(np.float32)
    ok = np.isfinite(r) & np.isfinite(got)
    a, b = got[ok].view(np.int32).astype(np.int64), r[ok].view(np.int32).astype(np.int64)
    a = np.where(a < 0, -(a & 0x7FFFFFFF), a)
    b = np.where(b < 0, -(b & 0x7FFFFFFF), b)
    return int(np.abs(a - b).max())


def accuracy() -> None:
    """EXP2, LOG2, SIN: kcc's native ops and tinygrad's expansions (clang) against numpy's
    float64 results rounded to float32, on 1M values each."""
    import numpy as np
    rng = np.random.default_rng(0)
    cases = {"exp2": (rng.uniform(-126, 127, 1 << 20), np.exp2, "exp2"),
             "log2": (np.exp2(rng.uniform(-126, 127, 1 << 20)), np.log2, "log2"),
             "sin": (rng.uniform(-1e4, 1e4, 1 << 20), np.sin, "sin")}
    print("\n| op (float32, 1M values) | kcc max ulps | tinygrad clang max ulps |")
    print("|---|---|---|")
    for name, (x, ref_fn, method) in cases.items():
        x32 = x.astype(np.float32)
        ref = ref_fn(x32.astype(np.float64))
        got = {}
        for dev in ("CPU:KCC", "CPU"):
            with Context(DEV=dev, PARALLEL=0):
                got[dev] = getattr(Tensor(x32), method)().numpy()
        print(f"| {name} | {ulps(got['CPU:KCC'], ref)} | {ulps(got['CPU'], ref)} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--accuracy", action="store_true", help="Only the accuracy table.")
    opt = ap.parse_args()
    if opt.accuracy:
        accuracy()
        return
    dev = Device["CPU"]
    rens = {}
    for name in ("KCC", "CLANG"):
        with Context(DEV=f"CPU:{name}"):
            rens[name] = dev.renderer
    print("| computation | kernels | kcc run (ms) | clang run (ms) | clang / kcc | "
          "kcc compile (ms) | clang compile (ms) |")
    print("|---|---|---|---|---|---|---|")
    for cname, t in computations().items():
        asts = kernels(t)
        run = {"KCC": 0.0, "CLANG": 0.0}
        comp = {"KCC": 0.0, "CLANG": 0.0}
        for ast in asts:
            prgs, srcs = {}, {}
            for name, ren in rens.items():
                with Context(DEV=f"CPU:{name}", PARALLEL=0):
                    prg = to_program(ast, ren)
                prgs[name], srcs[name] = prg, prg.src[2].arg
                comp[name] += median_time(lambda: ren.compiler.compile(srcs[name]), opt.reps)
            bufs, var_vals = args_from_ast(ast, "CPU")
            bufs = [b.ensure_allocated() for b in bufs]
            rts = {n: get_runtime("CPU", p) for n, p in prgs.items()}
            times: dict[str, list[float]] = {n: [] for n in rts}
            for _ in range(opt.rounds):
                for n, rt in rts.items():
                    p = prgs[n]
                    gs, ls = p.arg.launch_dims(var_vals)
                    times[n].append(rt(*[bufs[i].get_buf("CPU") for i in p.arg.globals],
                                       global_size=gs, local_size=ls,
                                       vals=p.arg.vals(var_vals), wait=True))
            for n in run:
                run[n] += statistics.median(times[n])
        print(f"| {cname} | {len(asts)} | {run['KCC'] * 1e3:.2f} | {run['CLANG'] * 1e3:.2f} | "
              f"{run['CLANG'] / run['KCC']:.2f}x | {comp['KCC'] * 1e3:.0f} | "
              f"{comp['CLANG'] * 1e3:.0f} |")


if __name__ == "__main__":
    main()
