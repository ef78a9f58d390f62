"""Benchmark: kcc's compile time per kernel for every target, in one process.

    python bench/compile_time.py [--reps 5] [--targets x86,cuda,amd] [--clock wall|cpu] [FILES...]
                                                          # default FILES: examples/*.uop
    python bench/tinygrad_x86.py --reps 1 --capture-dir /tmp/tg      # tinygrad's kernels, then
    python bench/compile_time.py --targets x86 --clock cpu /tmp/tg/*/*.uop

Each kernel is compiled for x86 (x86-64-v3, ELF object), CUDA (sm_90 PTX: kcc's own work,
without ptxas) and AMD (gfx1100 and gfx942, assembly: selection, allocation and listing;
HSACO where the encoder is present), through the target registry as `kcc compile` does.
Every number is the median of --reps compiles after a warm-up compile, each of a freshly
parsed graph (the previous one freed first: nodes are hash-consed); the AMD columns also
give the ratio to x86 in the same run; `--parse` times parsing the text too, as
tinygrad's `KCCCompiler.compile` does in-process. A kernel a target refuses shows the
refusal's start.
`--clock cpu` times with the process's CPU time instead of the wall clock: on a shared, loaded
host the wall clock also counts the time other jobs held the core. `--clang` adds, for each
kernel with tinygrad's C source beside it (`NAME.c`, which `bench/tinygrad_x86.py
--capture-dir` writes), the median time of a clang process compiling that C with tinygrad's own
command line (ClangCompiler: `-O2 -march=native`, object to stdout) — with `--clock cpu` its
user + system time — and the ratio of kcc's x86 compile to it. The last rows give the median
and the largest over the kernels of each column. Prints a Markdown table for
docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import subprocess
import time
import weakref
from pathlib import Path

from kcc.frontend.parser import parse
from kcc.targets import registry

REPO = Path(__file__).resolve().parents[1]
COLUMNS = (("x86", "x86-64-v3", "obj"), ("cuda", "sm_90", "ptx"), ("amd", "gfx1100", None),
           ("amd", "gfx942", None))


def source(path: Path) -> str:
    """The kernel's text; a tinygrad capture's inline SPECIAL bound gets its own line."""
    text = path.read_text()
    if "SPECIAL(CAST(" not in text:
        return text
    from tinygrad_x86 import readable          # bench/, beside this script
    return readable(text)


def time_compile(path: Path, target: str, arch: str, emit: str | None,
                 reps: int, clock=time.perf_counter, with_parse: bool = False) -> float | str:
    """Median milliseconds of compiling path (with_parse: parsing the text too, as
    `KCCCompiler.compile` does), or the refusal message."""
    spec = registry.get(target)
    emit = emit or spec.default_emit
    text = source(path)
    try:
        spec.compile([parse(text, str(path))], arch, emit)
    except registry.CompileError as e:
        return str(e)
    times = []
    for _ in range(reps):
        # every rep compiles a graph of its own: UOps are hash-consed, so a parse while the
        # previous rep's graph is alive would hand back its nodes with their types and
        # verdicts already cached (cheaper than any real compile, where the graph is new)
        gc.collect()
        t0 = clock()
        sink = parse(text, str(path))
        if not with_parse:
            t0 = clock()
        spec.compile([sink], arch, emit)
        times.append((clock() - t0) * 1000)
        last = weakref.ref(sink)
        del sink
        gc.collect()
        if last() is not None:
            raise SystemExit(f"{path}: the compiled graph is still referenced after its rep")
    return statistics.median(times)


# tinygrad 0.14's ClangCompiler.compile for x86_64 with arch "native" (its default on CPU)
CLANG = ["clang", "-c", "-x", "c", "-O2", "-fPIC", "-ffreestanding", "-fno-math-errno",
         "-nostdlib", "-fno-ident", "--target=x86_64-none-unknown-elf", "-march=native",
         "-", "-o", "-"]


def time_clang(c_file: Path, reps: int, cpu: bool) -> float:
    """Median milliseconds of a clang process compiling c_file as tinygrad does (after a
    warm-up run): wall clock, or with cpu its user + system time."""
    src = c_file.read_bytes()
    times = []
    for k in range(reps + 1):
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(CLANG, input=src, check=True, capture_output=True)
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        took = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) if cpu else t1 - t0
        if k:
            times.append(took * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--targets", default="x86,cuda,amd", help="the columns' targets")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--clang", action="store_true",
                    help="also time clang on each kernel's NAME.c (tinygrad's C)")
    ap.add_argument("--parse", action="store_true",
                    help="time parsing the .uop text too (what tinygrad's KCCCompiler.compile "
                         "runs in-process: parse, then compile)")
    a = ap.parse_args()
    files = a.files or sorted((REPO / "examples").glob("*.uop"))
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    cols = [c for c in COLUMNS if c[0] in a.targets.split(",")]
    head = [f"{t} {arch}" for t, arch, _ in cols]
    if a.clang:
        head += ["clang process (tinygrad's C)", "x86 / clang"]
    print("| kernel | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(head))
    got: list[list[float]] = [[] for _ in cols]
    ratios: list[float] = []
    for f in files:
        cells, x86 = [], None
        for j, (t, arch, emit) in enumerate(cols):
            r = time_compile(f, t, arch, emit, a.reps, clock, a.parse)
            if isinstance(r, str):
                cells.append(f"refused: {r[:40]}")
                continue
            got[j].append(r)
            if t == "x86":
                x86 = r
            ratio = f" ({r / x86:.1f}x)" if t == "amd" and x86 else ""
            cells.append(f"{r:.1f} ms{ratio}" if r < 10 else f"{r:.0f} ms{ratio}")
        if a.clang:
            c_file = f.with_suffix(".c")
            if c_file.exists():
                c = time_clang(c_file, a.reps, a.clock == "cpu")
                cells.append(f"{c:.1f} ms")
                if x86 is not None:
                    ratios.append(x86 / c)
                    cells.append(f"{x86 / c:.2f}")
            else:
                cells += ["–", "–"]
        name = f.stem if f.parent.name in ("examples", "") else f"{f.parent.name}/{f.stem}"
        print(f"| {name} | " + " | ".join(cells) + " |")
    for what, fn in (("median", statistics.median), ("largest", max)):
        extra = ([" ", f"{fn(ratios):.2f}" if ratios else "–"] if a.clang else [])
        print(f"| **{what}** | " + " | ".join(
            [f"{fn(g):.1f} ms" if g else "–" for g in got] + extra) + " |")


if __name__ == "__main__":
    main()
