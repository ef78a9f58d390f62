"""Every kernel bench/tinygrad_sweep.py compiles through DEV=CPU:KCC, timed against tinygrad's
clang path (issue 24, item 2: "no kernel of the sweep slower than clang").

The sweep's cases run once under DEV=CPU:KCC with tinygrad's `to_program` wrapped, which
records every kernel AST handed to the KCC renderer (each once: tinygrad's compile cache
dedups). Each AST is then lowered by both renderers (KCC, and tinygrad's clang with its
`-march=native`), loaded by tinygrad's own CPUProgram and run on the same buffers, interleaved
round-robin, as bench/tinygrad_cpu.py does (run time: median of --rounds). Before timing, the
two programs' outputs are checked against each other: every buffer is filled with the same
seeded values (floats uniform in [0.25, 2): kcc saturates a float cast to an integer out of
its range, docs/semantics.md, where C's cast is undefined, so no negative or large float;
integers 0..3 so that an index stays in bounds), each program
runs once on its own copy, and the buffers must match (integers and bools exactly, floats to
rtol 1e-3, halves 2e-2: the sweep's tolerances). kcc compiles for `KCC_TINYGRAD_ARCH`
(kcc/tinygrad/renderer.py's default, as for bench/tinygrad_cpu.py: native, the instruction set
clang's -march=native uses); `--arch x86-64-v3` sets it.

    python bench/sweep_vs_clang.py [--rounds 11] [--arch x86-64-v3] [--only NAME,...] [CASE ...]

Prints one line per kernel (kcc µs, clang µs, clang / kcc: above 1 means kcc is faster), then
the count of kernels clang runs faster and the totals. Exits 1 if any output differs.

`--tight BATCHES` times each kernel without tinygrad's ctypes call (~1 µs, which hides the
1–100 ns kernels): bench/tight_call.py calls each object's entry from a C loop, as many calls a
batch as fit in 20 µs, kcc's and clang's batches alternated (the buffers restored before
each), and prints the per-call medians (ns), the median ratio and the quartiles of the
per-batch ratios; a kernel is "SLOWER" beyond the noise when the upper quartile is below 1.
The outputs are checked as above (one call each) before timing.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*", help="sweep cases (default: all)")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--arch", default=None, help="KCC_TINYGRAD_ARCH for kcc (e.g. x86-64-v3)")
    ap.add_argument("--only", default="", help="comma-separated kernel or case names to time")
    ap.add_argument("--dump", default="",
                    help="folder: write each timed kernel's .uop (and clang's .c) there")
    ap.add_argument("--tight", type=int, default=0, metavar="BATCHES",
                    help="time each kernel's entry from a C loop (no ctypes call): per-call "
                         "medians of BATCHES batches, kcc and clang alternated")
    return ap.parse_args()


OPT = _parse()
if OPT.arch:
    os.environ["KCC_TINYGRAD_ARCH"] = OPT.arch

import numpy as np  # noqa: E402
import tight_call  # noqa: E402
import tinygrad_sweep  # noqa: E402
from tinygrad import Device  # noqa: E402
from tinygrad.codegen.opt.postrange import args_from_ast  # noqa: E402
from tinygrad.engine import realize  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402


def record() -> list[tuple[str, object]]:
    """(case, kernel AST) for each kernel the sweep's cases hand to the KCC renderer, in
    first-seen order."""
    seen: dict = {}
    case = [""]
    orig = realize.to_program

    def wrapped(ast, renderer):
        if type(renderer).__name__.upper().startswith("KCC") and ast.key not in seen:
            seen[ast.key] = case[0], ast
        return orig(ast, renderer)

    realize.to_program = wrapped
    try:
        for name in OPT.cases or list(tinygrad_sweep.cases):
            case[0] = name
            with Context(DEV="CPU:KCC", PARALLEL=0):
                tinygrad_sweep.cases[name]()
    finally:
        realize.to_program = orig
    return list(seen.values())


def _view(buf) -> np.ndarray:
    """The buffer's memory as a writable uint8 array (CPU buffers are host memory)."""
    return np.frombuffer(buf.as_memoryview(force_zero_copy=True), np.uint8)


def _fill(bufs: list, rng: np.random.Generator) -> list[np.ndarray]:
    """Seeded contents for each buffer: floats uniform in [0.25, 2), everything else 0..3."""
    out = []
    for b in bufs:
        n = b.size
        dt = b.dtype
        if dt.name in ("float", "double", "half"):
            npdt = {"float": np.float32, "double": np.float64, "half": np.float16}[dt.name]
            v = rng.uniform(0.25, 2.0, n).astype(npdt).view(np.uint8)
        else:
            v = np.zeros(b.nbytes, np.uint8)
            v[::dt.itemsize] = rng.integers(0, 4, n).astype(np.uint8)
            if dt.name == "bool":
                v &= 1
        out.append(v)
    return out


def _same(dt, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two outputs of one buffer agree (the sweep's tolerances)."""
    fl = {"float": np.float32, "double": np.float64, "half": np.float16}.get(dt.name)
    if fl is None:
        return np.array_equal(a, b)
    x, y = a.view(fl).astype(np.float64), b.view(fl).astype(np.float64)
    tol = 2e-2 if fl is np.float16 else 1e-3
    return bool(np.allclose(x, y, rtol=tol, atol=tol / 10, equal_nan=True))


def _tight(kname: str, case: str, prgs: dict, rts: dict, bufs: list, var_vals: dict,
           init: list[np.ndarray], ok: bool) -> tuple:
    """One kernel timed by bench/tight_call.py: (name, kcc ns, clang ns, ok, q25, q75 of the
    per-batch clang / kcc ratios). A kernel reads slower than clang beyond the noise when even
    the upper quartile of its batch ratios is below 1 (clang faster in 3 of 4 batches)."""
    ents = {}
    for n, p in prgs.items():
        gs, _ = p.arg.launch_dims(var_vals)
        args = [bufs[i].get_buf("CPU").va_addr for i in p.arg.globals] + \
            [v or 0 for v in p.arg.vals(var_vals)]         # None: core_id, set per worker
        core = rts[n].runtimevars.get("core_id", -1)
        ents[n] = tight_call.Entry(rts[n].addr, args, core, gs[0])
    views = [_view(b) for b in bufs]

    def reset() -> None:
        for v, x in zip(views, init):
            v[:] = x

    k, c, ratios = tight_call.pair(ents["KCC"], ents["CLANG"], OPT.tight, reset=reset)
    q25, q75 = tight_call.quantile(ratios, 0.25), tight_call.quantile(ratios, 0.75)
    flag = "  SLOWER" if q75 < 1 else ""
    print(f"{case + ':' + kname:40s} kcc {k:10.1f} ns  clang {c:10.1f} ns  {c / k:6.2f}x "
          f"[{q25:.2f}, {q75:.2f}]{flag}{'' if ok else '  OUTPUT MISMATCH'}", flush=True)
    return f"{case}:{kname}", k * 1e-9, c * 1e-9, ok, q25, q75


def _tight_summary(rows: list, bad: int) -> None:
    """--tight's totals: kernels slower by the median, beyond the noise, and their time lost."""
    beyond = sorted((r for r in rows if r[5] < 1), key=lambda r: r[2] - r[1])
    lost = sum(r[1] - r[2] for r in beyond)
    print(f"tight: clang faster by the median on {sum(r[2] < r[1] for r in rows)} of "
          f"{len(rows)}; beyond the noise (upper quartile of the batch ratios < 1) on "
          f"{len(beyond)}, {lost * 1e6:.2f} us lost a call in all")
    for r in beyond:
        print(f"  {r[0]:40s} kcc {r[1] * 1e9:10.1f} ns  clang {r[2] * 1e9:10.1f} ns  "
              f"{r[2] / r[1]:5.2f}x [{r[4]:.2f}, {r[5]:.2f}]")


def main() -> None:
    asts = record()
    dev = Device["CPU"]
    rens = {}
    for name in ("KCC", "CLANG"):
        with Context(DEV=f"CPU:{name}"):
            rens[name] = dev.renderer
    rng = np.random.default_rng(0)
    rows, bad = [], 0
    only = set(filter(None, OPT.only.split(",")))
    for case, ast in asts:
        prgs = {}
        for name, ren in rens.items():
            with Context(DEV=f"CPU:{name}", PARALLEL=0):
                prgs[name] = realize.to_program(ast, ren)
        kname = re.sub(r"\x1b\[[0-9;]*m", "", prgs["CLANG"].arg.name)
        if only and kname not in only and case not in only:
            continue
        if OPT.dump:
            Path(OPT.dump).mkdir(parents=True, exist_ok=True)
            path, j = Path(OPT.dump) / f"{case}_{kname}.uop", 1
            while path.exists():            # a case's kernels of one name: _2, _3, …
                j += 1
                path = Path(OPT.dump) / f"{case}_{kname}_{j}.uop"
            path.write_text(prgs["KCC"].src[2].arg)
            path.with_suffix(".c").write_text(prgs["CLANG"].src[2].arg)   # clang's C source
        bufs, var_vals = args_from_ast(ast, "CPU")
        bufs = [b.ensure_allocated() for b in bufs]
        rts = {n: realize.get_runtime("CPU", p) for n, p in prgs.items()}

        def call(n: str) -> float:
            p = prgs[n]
            gs, ls = p.arg.launch_dims(var_vals)
            return rts[n](*[bufs[i].get_buf("CPU") for i in p.arg.globals], global_size=gs,
                          local_size=ls, vals=p.arg.vals(var_vals), wait=True)

        init = _fill(bufs, rng)
        outs = {}
        for n in rts:
            for b, v in zip(bufs, init):
                _view(b)[:] = v
            call(n)
            outs[n] = [_view(b).copy() for b in bufs]
        ok = all(_same(b.dtype, x, y) for b, x, y in zip(bufs, outs["KCC"], outs["CLANG"]))
        bad += not ok
        if OPT.tight:
            rows.append(_tight(kname, case, prgs, rts, bufs, var_vals, init, ok))
            continue
        times: dict[str, list[float]] = {n: [] for n in rts}
        for _ in range(OPT.rounds):
            for n in rts:
                times[n].append(call(n))
        k, c = (statistics.median(times[n]) for n in ("KCC", "CLANG"))
        rows.append((kname, k, c, ok))
        kname = f"{case}:{kname}"
        print(f"{kname:40s} kcc {k * 1e6:9.2f} us  clang {c * 1e6:9.2f} us  "
              f"{c / k:6.2f}x{'' if ok else '  OUTPUT MISMATCH'}", flush=True)
    if OPT.tight:
        _tight_summary(rows, bad)
    slower = sum(r[2] < r[1] for r in rows)
    tk, tc = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"clang faster on {slower} of {len(rows)} kernels; kcc {tk * 1e3:.2f} ms in total, "
          f"clang {tc * 1e3:.2f} ms; {bad} output mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
