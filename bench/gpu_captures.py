"""tinygrad's own GPU lowerings of whole programs, run on a real GPU through kcc and compared
with tinygrad's CPU values (kernel by kernel, on the values each kernel really saw).

Two steps, so that the step needing tinygrad's CPU device runs where clang is, and the step
needing a GPU runs where one is:

    python bench/gpu_captures.py --capture DIR [NAME ...]   # no GPU needed
    python bench/gpu_captures.py DIR [--styles ptx,cuda]    # on a CUDA GPU
    python bench/gpu_captures.py DIR --interp               # the same in kcc's interpreter

`--capture` runs kcc's whole-program suite (tests/support/tinygrad_whole_programs.py, less the
BEAM search) and the cases of bench/tinygrad_sweep.py on tinygrad's DEV=CPU under
`kcc.tinygrad.capture` with the PTX and CUDA C renderers' lowerings (`.ptx.uop`, `.cuda.uop`),
one folder a program under DIR. Buffers over --max-mb are not kept (their program is skipped).

The run step compiles every captured GPU lowering with `-t cuda` for the device's sm (the newest
kcc knows at or below it; one cubin a kernel), launches it on the kernel's captured inputs with
its own grid and block, and compares every buffer it writes with what tinygrad's CPU kernel
wrote: integers and bools bit for bit, floats within a tolerance of the output dtype's epsilon
scaled by the output's largest magnitude (the GPU lowering's reduction order and tinygrad's
clang code's contractions differ from each other; a wrong index or lane gives errors of order
1). The GPU's outputs must equal the interpreter's run of the same lowering (bit for bit;
transcendentals within tests/support/cuda_kernels.py's tolerance); where the interpreter's run
differs from tinygrad's CPU values, tinygrad's lowering computes something else (its PTX
renderer keeps bfloat16 in float32), which is reported, not counted. A row per kernel that is
not ok, then a count per style. Exits 1 if any kernel failed, 0 without a GPU (saying why).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "bench"))

# relative error allowed, in units of the output dtype's epsilon, times the output's max |value|
ULPS = 64
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
       "float64": 2.0 ** -52}


def programs() -> dict[str, Any]:
    """name -> a thunk computing the program on the current device (numpy results)."""
    from tinygrad_whole_programs import PROGRAMS
    out: dict[str, Any] = {}
    for n, f in PROGRAMS.items():
        if n != "beam_searched":        # a BEAM search times kernels: the capture would hold
            out[n] = (lambda f=f: f(np.random.default_rng(0)))        # every candidate
    import tinygrad_sweep
    for n, f in tinygrad_sweep.cases.items():
        out[f"sweep_{n}"] = f
    return out


def capture(root: Path, names: list[str], max_mb: float) -> int:
    """Capture each named program (all by default) under root/NAME; returns the failures."""
    from tinygrad.helpers import Context

    import kcc.tinygrad
    progs = programs()
    bad = 0
    for name in names or list(progs):
        out = root / name
        t = time.perf_counter()
        try:
            with Context(DEV="CPU", PARALLEL=0), kcc.tinygrad.capture(str(out),
                                                                      gpu=("ptx", "cuda")):
                progs[name]()
        except Exception as e:          # a survey: report and go on
            print(f"{name}: capture failed: {type(e).__name__}: {str(e)[:200]}")
            bad += 1
            continue
        mb = sum(f.stat().st_size for f in out.glob("*.npy")) / 2 ** 20
        if mb > max_mb:
            for f in out.iterdir():
                f.unlink()
            out.rmdir()
            print(f"{name}: {mb:.1f} MiB of buffers, over --max-mb; not kept")
            continue
        n = len(json.loads((out / "capture.json").read_text())["kernels"])
        print(f"{name}: {n} kernels, {mb:.1f} MiB, {time.perf_counter() - t:.1f} s")
    return bad


def compare(dtype: str, got: np.ndarray, want: np.ndarray) -> str | None:
    """None when got matches want (see the module's docstring), else what differs."""
    from kcc.ir import numerics as nm
    from kcc.ir.dtype import dtypes
    if dtype not in EPS:
        if np.array_equal(got.view(np.uint8), want.view(np.uint8)):
            return None
        return f"{int(np.sum(got != want))} of {got.size} elements differ"
    dt = dtypes.by_name(dtype)
    g = nm.to_compute(got, dt).astype(np.float64)
    w = nm.to_compute(want, dt).astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return "NaN in different places"
    fin = np.isfinite(w)
    if not np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)]):
        return "infinities differ"
    if not fin.any():
        return None
    scale = float(np.abs(w[fin]).max()) or 1.0
    err = float(np.abs(g[fin] - w[fin]).max()) if np.isfinite(g[fin]).all() else float("inf")
    return None if err <= ULPS * EPS[dtype] * scale else f"max |err| {err:.3g} at scale {scale:.3g}"


def run_kernel(folder: Path, k: dict[str, Any], name: str,
               arch: str | None) -> tuple[str | None, str | None]:
    """Compile and launch one captured lowering (arch None: no GPU, only the interpreter);
    (how the GPU's outputs differ from the interpreter's run of the same lowering, how the
    interpreter's differ from tinygrad's CPU values), None where they match."""
    from cuda_kernels import has_transcendental, mismatch

    from kcc.frontend.parser import parse
    from kcc.ir.interp import run
    from kcc.targets.cuda.target import compile_cuda, launch_cuda
    from kcc.targets.manifest import check_launch
    sink = parse((folder / name).read_text(), name)
    args: list[Any] = [np.load(folder / a["in"]).copy() if a["kind"] == "buffer"
                       else np.dtype(a["dtype"]).type(a["value"]) for a in k["args"]]
    outs = [a for a in k["args"] if "out" in a]
    want = run(sink, [x.copy() if isinstance(x, np.ndarray) else x for x in args])
    lowering = "; ".join(f"arg{a['slot']}: {m}" for a in outs
                         if (m := compare(a["dtype"], want[a["slot"]],
                                          np.load(folder / a["out"])))) or None
    if arch is None:
        return None, lowering
    data, descs = compile_cuda([sink], arch, "cubin")
    norm = check_launch(descs[0], args)
    launch_cuda(data, descs[0], norm)
    loose = has_transcendental(sink)
    gpu = "; ".join(f"arg{a['slot']}: {m}" for a in outs
                    if (m := mismatch(a["dtype"], norm[a["slot"]], want[a["slot"]], loose)))
    return gpu or None, lowering


def run_all(roots: list[Path], styles: list[str], interp: bool = False) -> int:
    """Run every captured lowering of the given styles; returns the number that failed (did
    not compile or run, or the GPU's outputs differ from the interpreter's). Where tinygrad's
    GPU lowering itself computes other values than its CPU kernel (its PTX renderer keeps
    bfloat16 values in float32) the row says so and does not count as a failure."""
    from kcc.targets.cuda.driver import Driver, available
    from kcc.targets.cuda.target import ARCHES, find_ptxas
    arch = None
    if not interp:
        why = available()
        if why is not None or find_ptxas() is None:
            print(f"gpu_captures: nothing to run ({why or 'ptxas not found'})")
            return 0
        mj, mn = Driver.get().compute_capability()
        arch = [a for a in ARCHES if int(a[3:]) <= mj * 10 + mn][-1]
        print(f"device sm_{mj}{mn}; compiling for {arch}")
    folders = [f.parent for r in roots for f in sorted(r.glob("**/capture.json"))]
    # per style: GPU = interpreter, GPU != interpreter, error, lowering != tinygrad's CPU
    counts = {s: [0, 0, 0, 0] for s in styles}
    t0 = time.perf_counter()
    for folder in folders:
        for k in json.loads((folder / "capture.json").read_text())["kernels"]:
            if k.get("error"):
                continue
            for s in styles:
                name = k["gpu"].get(s)
                if not name:
                    continue
                where = f"{folder.name}/{name}"
                try:
                    gpu, lowering = run_kernel(folder, k, name, arch)
                except Exception as e:       # report and go on: one kernel must not hide all
                    msg = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"
                    counts[s][2] += 1
                    print(f"{where}  ERROR  {msg[:160]}")
                    if "ILLEGAL" in msg or "LAUNCH_FAILED" in msg or "MISALIGNED" in msg:
                        print("a kernel fault leaves the CUDA context unusable; stopping")
                        return 1
                    continue
                counts[s][0 if gpu is None else 1] += 1
                counts[s][3] += lowering is not None
                if gpu:
                    print(f"{where}  MISMATCH  {gpu[:160]}")
                if lowering:
                    print(f"{where}  lowering differs from tinygrad's CPU values: "
                          f"{lowering[:120]}")
    for s, (ok, bad, err, low) in counts.items():
        what = "on the GPU match kcc's interpreter" if arch else "ran in the interpreter"
        print(f"{s}: {ok} kernels {what}, {bad} mismatch, {err} errors; {low} where the "
              f"interpreter's run of tinygrad's lowering differs from tinygrad's CPU values")
    print(f"{time.perf_counter() - t0:.1f} s")
    return sum(c[1] + c[2] for c in counts.values())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--capture", type=Path, help="capture the programs under this folder")
    ap.add_argument("--max-mb", type=float, default=4.0)
    ap.add_argument("--styles", default="ptx,cuda")
    ap.add_argument("--interp", action="store_true",
                    help="run the lowerings in kcc's reference interpreter (no GPU)")
    opt = ap.parse_args(argv)
    if opt.capture:
        return 1 if capture(opt.capture, [str(d) for d in opt.dirs], opt.max_mb) else 0
    return 1 if run_all(opt.dirs, opt.styles.split(","), opt.interp) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
