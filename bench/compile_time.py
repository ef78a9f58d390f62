"""Benchmark: kcc's compile time per kernel for every target, in one process.

    python bench/compile_time.py [--reps 5] [FILES...]      # default: examples/*.uop

Each kernel is compiled for x86 (x86-64-v3, ELF object), CUDA (sm_90 PTX: kcc's own work,
without ptxas) and AMD (gfx1100 and gfx942, assembly: selection, allocation and listing;
HSACO where the encoder is present), through the target registry as `kcc compile` does.
Every number is the median of --reps compiles after a warm-up compile; the AMD columns also
give the ratio to x86 in the same run. A kernel a target refuses shows the refusal's start.
Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from kcc.frontend.parser import parse_file
from kcc.targets import registry

REPO = Path(__file__).resolve().parents[1]
COLUMNS = (("x86", "x86-64-v3", "obj"), ("cuda", "sm_90", "ptx"), ("amd", "gfx1100", None),
           ("amd", "gfx942", None))


def time_compile(path: Path, target: str, arch: str, emit: str | None,
                 reps: int) -> float | str:
    """Median milliseconds of compiling path, or the refusal message."""
    spec = registry.get(target)
    emit = emit or spec.default_emit
    sink = parse_file(path)
    try:
        spec.compile([sink], arch, emit)
    except registry.CompileError as e:
        return str(e)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        spec.compile([parse_file(path)], arch, emit)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    files = a.files or sorted((REPO / "examples").glob("*.uop"))
    head = [f"{t} {arch}" for t, arch, _ in COLUMNS]
    print("| kernel | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(head))
    for f in files:
        cells, x86 = [], None
        for t, arch, emit in COLUMNS:
            r = time_compile(f, t, arch, emit, a.reps)
            if isinstance(r, str):
                cells.append(f"refused: {r[:40]}")
                continue
            if t == "x86":
                x86 = r
            ratio = f" ({r / x86:.1f}x)" if t == "amd" and x86 else ""
            cells.append(f"{r:.0f} ms{ratio}")
        print(f"| {f.stem} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
