"""The WMMA section of bench/gpu_check.py: a large float16 matmul on the CUDA tensor cores, kcc's
`mma.sync` code against tinygrad's own kernel for the same shape.

tinygrad lowers the matmul with its tensor-core optimization for its PTX renderer at the GPU's
sm, from a schedule made on the CPU device without running anything (as kcc.tinygrad.capture
lowers for its GPU styles); kcc compiles that graph (`-t cuda`, cubin). Both run on the GPU with
the same random float16 inputs and are checked against numpy's float32 matmul of those inputs.
tinygrad's kernel runs two ways: on tinygrad's own runtime (`DEV=CUDA:PTX`, a subprocess, its
kernel time from CUDA events via `wait=True`), and as tinygrad's PTX text loaded by kcc's driver
(which JIT-compiles it) with tinygrad's launch dimensions. Every failure is a row; nothing
raises out of `rows()`.

    python bench/gpu_wmma.py --tinygrad-runtime DIR N ACC REPS   (the subprocess, internal)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N = 4096                      # M = N = K: 137 GFLOP a launch, ~0.2-1 ms on an sm_80+ part
REPS = 7                      # timed samples; each is INNER launches, then one synchronize
INNER = 5
ACCS = ("float32", "float16")  # the accumulator: a @ b, and a.dot(b, dtype=half)
# tinygrad's runtime: its PTX renderer (the graph kcc compiles), and its default for CUDA (CUDA
# C through nvrtc, which falls back to PTX where nvrtc is missing; the row names the renderer)
RUNTIME_DEVS = ("CUDA:PTX", "CUDA")
# max |got - want| / max |want| allowed. The tensor core sums in its own order and grouping
# (docs/semantics.md, WMMA), numpy in another. Simulated in numpy on 256 x 256 outputs with
# K = 4096 (max |C| ~ 300): a float32 accumulator, float16 output: 3.7e-4 (the output's rounding,
# 2^-11 relative, dominates); a float16 accumulator rounded after every 16 products (one
# m16n8k16): 4.8e-3, after every product: 1.8e-2. A wrong fragment layout or argument order gives
# an error of order 1.
TOLERANCE = {"float32": 2e-3, "float16": 5e-2}


@dataclass
class Lowered:
    """One matmul as tinygrad lowers it for PTX: kcc's graph and tinygrad's own program."""

    n: int
    acc: str
    name: str
    uop_text: str               # the .uop kcc compiles
    slots: list[int]            # kcc argument slot -> tinygrad slot (out, a, b)
    ptx: bytes                  # tinygrad's PTX, as its compiler hands it to the driver
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    wmmas: int                  # WMMA nodes in the graph (0: tensor cores did not apply)
    out_dtype: str              # the output's numpy dtype (float16 for both accumulators)


def lower_matmul(n: int, acc: str, sm: str) -> Lowered:
    """tinygrad's tensor-core lowering of an n x n x n float16 matmul for PTX at sm."""
    from tinygrad import Tensor, dtypes
    from tinygrad.codegen import to_program
    from tinygrad.helpers import Target
    from tinygrad.renderer.ptx import PTXRenderer
    from tinygrad.uop.ops import Ops

    from kcc.tinygrad.recording import lower
    from kcc.tinygrad.renderer import dtype_name, program_to_uop
    a = Tensor.empty(n, n, dtype=dtypes.half, device="CPU")
    b = Tensor.empty(n, n, dtype=dtypes.half, device="CPU")
    c = a @ b if acc == "float32" else a.dot(b, dtype=dtypes.half)
    calls = [u for u in c.schedule_linear().toposort() if u.op is Ops.CALL]
    if len(calls) != 1:
        raise RuntimeError(f"the matmul scheduled as {len(calls)} kernels, not one")
    ast = calls[0].src[0]
    ren = PTXRenderer(Target(device="CUDA", arch=sm))
    imp = program_to_uop(lower(ast, ren))
    prg = to_program(ast, ren)
    binary = next(s.arg for s in prg.src if s.op is Ops.BINARY)
    return Lowered(n, acc, imp.name, imp.text, list(imp.slots), binary,
                   tuple(prg.arg.global_size), tuple(prg.arg.local_size),
                   imp.text.count("= WMMA("), str(dtype_name(c.dtype)))


def inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random float16 operands (standard normal)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)).astype(np.float16),
            rng.standard_normal((n, n)).astype(np.float16))


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's float32 matmul of the float16 operands (each product exact in float32)."""
    return a.astype(np.float32) @ b.astype(np.float32)


def check_matmul(got: np.ndarray, want: np.ndarray, acc: str) -> tuple[bool, str]:
    """(within TOLERANCE[acc], a description): the largest error relative to max |want|."""
    g = got.astype(np.float32)
    if not np.all(np.isfinite(g)):
        return False, f"{int(np.sum(~np.isfinite(g)))} non-finite values"
    err = float(np.max(np.abs(g - want)) / max(float(np.max(np.abs(want))), 1e-30))
    ok = err <= TOLERANCE[acc]
    return ok, f"max err {err:.1e} of max|C| (tol {TOLERANCE[acc]:.0e})"


def tflops(n: int, seconds: float) -> float:
    return 2.0 * n ** 3 / seconds / 1e12


def time_launches(launch: Callable[[], None], sync: Callable[[], None],
                  reps: int = REPS, inner: int = INNER) -> float:
    """Seconds a launch: median over reps samples of (inner launches, one synchronize) / inner,
    after one warm-up launch. Host timing: a launch's ~10 us of latency overlaps the previous
    kernel, so a kernel of a millisecond is timed to a few percent."""
    launch()
    sync()
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            launch()
        sync()
        samples.append((time.perf_counter() - t) / inner)
    return float(np.median(samples))


def run_kcc_and_ptx(low: Lowered, arch: str, a: np.ndarray, b: np.ndarray,
                    want: np.ndarray) -> list[tuple]:
    """kcc's cubin and tinygrad's PTX, on the same device buffers: a row each."""
    from kcc.frontend.parser import parse
    from kcc.targets.cuda.driver import Driver
    from kcc.targets.cuda.target import compile_cuda
    drv = Driver.get()
    out_dtype = np.dtype(low.out_dtype)
    bufs = {1: a, 2: b}                                   # tinygrad slots: 0 out, 1 a, 2 b
    ptrs = {s: drv.alloc(x.nbytes) for s, x in bufs.items()}
    ptrs[0] = drv.alloc(low.n * low.n * np.dtype(out_dtype).itemsize)
    rows: list[tuple] = []
    try:
        for s, x in bufs.items():
            drv.htod(ptrs[s], x)
        tag = f"wmma {low.n}^3 f16 f{low.acc[5:]}acc"
        progs: list[tuple[str, Any]] = []
        # tinygrad's program runs first: a fault in kcc's would leave the context unusable
        try:
            fn = drv.function(drv.load_module(low.ptx), low.name)
            params = [("ptr", ptrs[s]) for s in range(3)]
            progs.append((f"{tag} tinygrad PTX via kcc's driver",
                          (fn, list(low.global_size), list(low.local_size), params)))
        except Exception as e:           # report and go on to kcc's
            rows.append((f"{tag} tinygrad PTX via kcc's driver", "ERROR",
                         f"{type(e).__name__}: {e}"[:100]))
        try:
            data, descs = compile_cuda([parse(low.uop_text)], arch=arch, emit="cubin")
            d = descs[0]
            fn = drv.function(drv.load_module(data), d.name)
            params = [("ptr", ptrs[ts]) for ts in low.slots]
            progs.append((f"{tag} kcc", (fn, d.global_size, d.local_size, params)))
        except Exception as e:
            rows.append((f"{tag} kcc", "ERROR", f"{type(e).__name__}: {e}"[:100]))
        for label, (fn, grid, block, params) in progs:
            try:
                zero = np.zeros((low.n, low.n), out_dtype)
                drv.htod(ptrs[0], zero)
                def launch(fn: Any = fn, grid: list = grid, block: list = block,
                           params: list = params) -> None:
                    drv.launch(fn, grid, block, params)
                sec = time_launches(launch, drv.synchronize)
                got = np.empty_like(zero)
                drv.dtoh(got, ptrs[0])
                ok, how = check_matmul(got, want, low.acc)
                rows.append((label, "ok" if ok else "MISMATCH",
                             f"{tflops(low.n, sec):.1f} TFLOP/s ({sec * 1e3:.3f} ms); {how}"))
            except Exception as e:
                rows.append((label, "ERROR", f"{type(e).__name__}: {e}"[:100]))
    finally:
        for p in ptrs.values():
            drv.free(p)
    return rows


def run_tinygrad_runtime(n: int, acc: str, a: np.ndarray, b: np.ndarray, want: np.ndarray,
                         device: str = "CUDA:PTX", timeout: float = 240) -> tuple:
    """tinygrad's own kernel on its own runtime (DEV=device), in a subprocess: a row."""
    label = f"wmma {n}^3 f16 f{acc[5:]}acc tinygrad DEV={device}"
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "a.npy", a)
        np.save(Path(tmp) / "b.npy", b)
        env = {**os.environ, "DEV": device}
        try:
            p = subprocess.run([sys.executable, __file__, "--tinygrad-runtime", tmp, str(n), acc,
                                str(REPS)], env=env, capture_output=True, text=True,
                               timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return (label, "ERROR", f"timed out after {timeout:.0f} s")
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["no output"])[-1]
            return (label, "ERROR", f"exit {p.returncode}: {last}"[:100])
        res = json.loads(p.stdout.strip().splitlines()[-1])
        ok, how = check_matmul(np.load(Path(tmp) / "c.npy"), want, acc)
    sec = res["seconds"]
    what = (f"{tflops(n, sec):.1f} TFLOP/s ({sec * 1e3:.3f} ms, {res['kernels']} kernel(s), "
            f"{res['renderer']}, kernel time from tinygrad); {how}")
    return (label, "ok" if ok else "MISMATCH", what)


def _tinygrad_runtime_main(tmp: str, n: int, acc: str, reps: int) -> None:
    """The subprocess: c = a @ b on tinygrad's DEV, kernel time of each run (wait=True)."""
    from tinygrad import Device, Tensor, dtypes
    from tinygrad.engine.realize import run_linear
    from tinygrad.helpers import GlobalCounters
    from tinygrad.uop.ops import Ops
    a = Tensor(np.load(Path(tmp) / "a.npy")).realize()
    b = Tensor(np.load(Path(tmp) / "b.npy")).realize()
    c = a @ b if acc == "float32" else a.dot(b, dtype=dtypes.half)
    linear, var_vals = c.linear_with_vars()
    kernels = sum(u.op is Ops.CALL for u in linear.toposort())
    run_linear(linear, var_vals)                      # compiles, warms up
    Device[a.device].synchronize()
    times = []
    for _ in range(reps):
        GlobalCounters.reset()
        run_linear(linear, var_vals, wait=True)       # the kernels' own time (events)
        times.append(GlobalCounters.time_sum_s)
    np.save(Path(tmp) / "c.npy", c.numpy())
    print(json.dumps({"seconds": float(np.median(times)), "kernels": kernels,
                      "renderer": type(Device[a.device].renderer).__name__}))


def rows(sm_version: int, arch: str, n: int = N, accs: tuple[str, ...] = ACCS,
         runtime: bool = True) -> list[tuple]:
    """The WMMA rows: kcc's matmul, tinygrad's PTX through kcc's driver, tinygrad's runtime,
    and kcc's TFLOP/s as a fraction of tinygrad's, per accumulator type.

    sm_version: the device's compute capability as 10 * major + minor (tinygrad lowers for
    it); arch: the sm kcc compiles for (the newest kcc knows at or below the device's)."""
    if sm_version < 80:
        why = (f"sm_{sm_version} < sm_80: tinygrad's PTX renderer has no float16 tensor cores "
               "with mma.sync m16n8k16 there")
        return [("wmma", "SKIP", why)]
    try:
        import tinygrad  # noqa: F401
    except ImportError as e:
        return [("wmma", "SKIP", f"tinygrad is not importable ({e})")]
    a, b = inputs(n)
    want = reference(a, b)
    out: list[tuple] = []
    for acc in accs:
        try:
            low = lower_matmul(n, acc, f"sm_{sm_version}")
        except Exception as e:
            why = f"lowering: {type(e).__name__}: {e}"[:100]
            out.append((f"wmma {n}^3 {acc} acc", "ERROR", why))
            continue
        if low.wmmas == 0:
            out.append((f"wmma {n}^3 {acc} acc", "ERROR", "tinygrad's lowering has no WMMA"))
            continue
        rs = run_kcc_and_ptx(low, arch, a, b, want)
        if runtime:
            rs += [run_tinygrad_runtime(n, acc, a, b, want, dev) for dev in RUNTIME_DEVS]
        out += rs + [_ratio(rs, f"wmma {n}^3 f16 f{acc[5:]}acc")]
    return out


def _ratio(rs: list[tuple], tag: str) -> tuple:
    """kcc's TFLOP/s over the best correct tinygrad figure."""
    def tf(r: tuple) -> float | None:
        return float(r[2].split(" TFLOP/s")[0]) if r[1] == "ok" else None
    mine = [tf(r) for r in rs if r[0].endswith(" kcc")]
    theirs = [t for r in rs if " tinygrad" in r[0] and (t := tf(r))]
    if not mine or mine[0] is None or not theirs:
        return (f"{tag} kcc / tinygrad", "SKIP", "no correct pair of timings to compare")
    what = f"{mine[0] / max(theirs):.2f}x tinygrad's best ({max(theirs):.1f} TFLOP/s)"
    return (f"{tag} kcc / tinygrad", "ok", what)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--tinygrad-runtime":
        sys.path.insert(0, str(ROOT))
        _tinygrad_runtime_main(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    else:
        print(__doc__)
