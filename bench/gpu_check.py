"""The one GPU check: compile every example for -t cuda, run it on the GPU with random inputs,
compare with the reference interpreter, then time a large elementwise kernel against the
device's memory bandwidth. Prints a table; exits cleanly (status 0, a message) without a GPU.

    python bench/gpu_check.py [/path/to/shared/examples ...] [--no-matrix] [--no-export]
                              [--no-wmma] [--only-wmma] [--wmma-n=4096]

With tinygrad installed it also exports three whole models for CUDA (docs/export.md) and runs
them through `kcc run` and through their C launcher against the real libcuda, and (sm_80 and
newer), last, times a 4096^3 float16 matmul on the tensor cores: kcc's `mma.sync` code from
tinygrad's tensor-core graph against tinygrad's own kernel for it, both checked against numpy
(bench/gpu_wmma.py). `--only-wmma` runs that section alone; `--wmma-n` sets its size.
"""

from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "tinygrad"))     # test_tinygrad_export's models

from kcc.frontend.parser import parse, parse_file  # noqa: E402
from kcc.ir.interp import run  # noqa: E402
from kcc.targets.cuda.target import compile_cuda, find_ptxas, launch_cuda  # noqa: E402
from kcc.targets.cuda.driver import Driver, available  # noqa: E402
from kcc.targets.manifest import check_launch  # noqa: E402

N_BIG = 1 << 26          # 64 Mi float32 per buffer: 256 MiB read + 256 MiB written per launch
BLOCK = 256
BIG = f"""# kcc-uop 1
%out = PARAM ParamArg(0, float32, {N_BIG})
%x   = PARAM ParamArg(1, float32, {N_BIG})
%g   = SPECIAL({N_BIG // BLOCK // 4}) "gidx0"
%l   = SPECIAL({BLOCK}) "lidx0"
%gb  = MUL(%g, {BLOCK})
%t   = ADD(%gb, %l)
%s   = MUL(%t, 4)
%src = SHRINK(%x, %s, 4)
%v   = LOAD(%src)
%two = STACK(2.0, 2.0, 2.0, 2.0)
%one = STACK(1.0, 1.0, 1.0, 1.0)
%w   = MULACC(%v, %two, %one)
%dst = SHRINK(%out, %s, 4)
%st  = STORE(%dst, %w)
SINK(%st) KernelInfo(name="axpb_big")
"""


def check(sinks: list, label: str, arch: str, rng: np.random.Generator) -> list[tuple]:
    from cuda_kernels import has_transcendental, mismatch, random_args
    rows = []
    try:
        data, descs = compile_cuda(sinks, arch=arch, emit="cubin")
    except Exception as e:       # report and go on: one bad kernel must not hide the rest
        return [(label, "COMPILE", str(e).splitlines()[0][:80])]
    for sink, d in zip(sinks, descs):
        args = random_args(d, rng)
        try:
            want = run(sink, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
            got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            launch_cuda(data, d, check_launch(d, got))
            bad = [f"arg{a.slot}: {m}" for a, g, w in zip(d.args, got, want)
                   if a.kind == "buffer" and "w" in a.access
                   and (m := mismatch(a.dtype, g, w, has_transcendental(sink)))]
            rows.append((d.name, "ok" if not bad else "MISMATCH", "; ".join(bad)[:80]))
        except Exception as e:
            rows.append((d.name, "ERROR", f"{type(e).__name__}: {e}"[:80]))
    return rows


def bandwidth(arch: str) -> str:
    """GB/s of the big elementwise kernel (best of 5) and the device's peak bandwidth."""
    drv = Driver.get()
    data, descs = compile_cuda([parse(BIG)], arch=arch, emit="cubin")
    d = descs[0]
    mod = drv.load_module(data)
    fn = drv.function(mod, d.name)
    x = np.random.default_rng(0).standard_normal(N_BIG).astype(np.float32)
    px, po = drv.alloc(x.nbytes), drv.alloc(x.nbytes)
    drv.htod(px, x)
    best = float("inf")
    for _ in range(6):
        t = time.perf_counter()
        drv.launch(fn, d.global_size, d.local_size, [("ptr", po), ("ptr", px)])
        drv.synchronize()
        best = min(best, time.perf_counter() - t)
    out = np.empty_like(x)
    drv.dtoh(out, po)
    ok = np.array_equal(out, np.float32(2) * x + np.float32(1)) or np.allclose(out, 2 * x + 1)
    drv.free(px)
    drv.free(po)
    gbs = 2 * x.nbytes / best / 1e9
    clk, bus = ctypes.c_int(), ctypes.c_int()
    drv.lib.cuDeviceGetAttribute(ctypes.byref(clk), 36, drv.dev)   # memory clock, kHz
    drv.lib.cuDeviceGetAttribute(ctypes.byref(bus), 37, drv.dev)   # bus width, bits
    peak = 2 * clk.value * 1e3 * bus.value / 8 / 1e9
    return (f"axpb_big ({N_BIG} float32, v4 loads): {gbs:.0f} GB/s in {best * 1e3:.2f} ms, "
            f"{'correct' if ok else 'WRONG RESULT'}; device peak ≈ {peak:.0f} GB/s "
            f"({100 * gbs / peak:.0f}%)" if peak else f"{gbs:.0f} GB/s")


def exported_programs(arch: str) -> list[tuple]:
    """Whole tinygrad programs exported for CUDA (docs/export.md) run on this GPU: through
    `kcc run`'s launch-by-launch loader and through NAME_launch.c built with cc against the
    real libcuda; both compared with tinygrad's CPU values. Skipped without tinygrad or cc."""
    import shutil
    import subprocess
    import tempfile
    try:
        import kcc.tinygrad as ktg
        from test_tinygrad_export import MODELS, c_main
    except ImportError as e:
        return [("export", "SKIP", f"tinygrad is not importable ({e})")]
    from kcc.targets.program import np_dtype, run_program
    rows = []
    for name in ("cnn", "attention", "ints"):
        f, ins = MODELS[name]()
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            try:
                ex = ktg.export(f, *ins, out=work / "p", name="net", target="cuda", arch=arch)
                got = run_program(ex.path("manifest"), ex.inputs)
                ok = all(np.allclose(g, w, rtol=1e-4, atol=1e-5)
                         for g, w in zip(got, ex.outputs))
                how = "kcc run"
                if ok and shutil.which("cc"):
                    (work / "main.c").write_text(c_main(ex, "  (void)argc; (void)argv;"))
                    subprocess.run(["cc", str(work / "main.c"), f"-I{ex.out}",
                                    str(ex.path("launcher")), "-ldl", "-o",
                                    str(work / "main")], check=True)
                    for k, a in enumerate(ex.inputs):
                        (work / f"in{k}.bin").write_bytes(a.tobytes())
                    subprocess.run([str(work / "main")], cwd=work, check=True, timeout=120)
                    for k, i in enumerate(ex.program.outputs):
                        b = ex.program.buffer(i)
                        c = np.frombuffer((work / f"out{k}.bin").read_bytes(),
                                          np_dtype(b.dtype)).reshape(b.shape)
                        ok = ok and np.allclose(c, ex.outputs[k], rtol=1e-4, atol=1e-5)
                    how += " and NAME_launch.c"
                rows.append((f"export {name}", "ok" if ok else "MISMATCH", how))
            except Exception as e:       # a bench reports every failure and goes on
                rows.append((f"export {name}", "ERROR", f"{type(e).__name__}: {e}"[:80]))
    return rows


def main(argv: list[str]) -> int:
    why = available()
    if why is not None:
        print(f"gpu_check: no CUDA GPU here ({why}); nothing to run.")
        return 0
    if find_ptxas() is None:
        print("gpu_check: ptxas not found (pip install nvidia-cuda-nvcc); nothing to run.")
        return 0
    from kcc.targets.cuda.target import ARCHES
    mj, mn = Driver.get().compute_capability()
    known = [a for a in ARCHES if int(a[3:]) <= mj * 10 + mn]
    arch = known[-1] if known else ARCHES[0]
    print(f"device: sm_{mj}{mn}; compiling for {arch}")
    only_wmma = "--only-wmma" in argv
    dirs = [] if only_wmma else [ROOT / "examples"]
    dirs += [Path(a) for a in argv if not a.startswith("--")]
    rng = np.random.default_rng(0)
    rows = []
    for d in dirs:
        for f in sorted(d.glob("*.uop")):
            try:
                sink = parse_file(f)
            except Exception as e:
                rows.append((f.name, "PARSE", str(e).splitlines()[0][:80]))
                continue
            rows += check([sink], f.name, arch, rng)
    if "--no-matrix" not in argv and not only_wmma:
        from cuda_kernels import op_matrix
        rows += check(op_matrix(), "op matrix", arch, rng)
    w = max((len(r[0]) for r in rows), default=10)
    for r in rows:
        print(f"{r[0]:<{w}}  {r[1]:<8}  {r[2]}")
    nbad = sum(r[1] != "ok" for r in rows)
    if rows or not only_wmma:
        print(f"{len(rows) - nbad}/{len(rows)} kernels match the interpreter")
    if "--no-export" not in argv and not only_wmma:
        rows2 = exported_programs(arch)
        for r in rows2:
            print(f"{r[0]:<{w}}  {r[1]:<8}  {r[2]}")
        nbad += sum(r[1] != "ok" for r in rows2)
    if not only_wmma:
        try:
            print(bandwidth(arch))
        except Exception as e:
            print(f"bandwidth: {type(e).__name__}: {e}")
    # last: a kernel fault on the tensor cores would leave this process's context unusable
    if "--no-wmma" not in argv:
        import gpu_wmma
        n = next((int(a.split("=")[1]) for a in argv if a.startswith("--wmma-n=")), gpu_wmma.N)
        try:
            rows3 = gpu_wmma.rows(mj * 10 + mn, arch, n)
        except Exception as e:           # rows() reports its own failures; this is a backstop
            rows3 = [("wmma", "ERROR", f"{type(e).__name__}: {e}"[:100])]
        w3 = max(len(r[0]) for r in rows3)
        for r in rows3:
            print(f"{r[0]:<{w3}}  {r[1]:<8}  {r[2]}")
        nbad += sum(r[1] not in ("ok", "SKIP") for r in rows3)
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
