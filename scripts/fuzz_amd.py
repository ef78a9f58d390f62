"""A differential fuzz run of the AMD back end: N random kernels drawn from the strategies of
tests/fuzz (the mix of scripts/output_hashes.py, plus the GPU-only LOCAL/BARRIER shape and the
reflected indices of issue 20),
each compiled for gfx1100 and gfx942 (the allocation re-verified by the checker) and run in
kcc's emulator against the reference interpreter on special-biased inputs.

    python scripts/fuzz_amd.py [--n 300] [--seed 1] [--arch gfx1100 --arch gfx942] [--out DIR]

Every outcome is counted: ok, refused on purpose (docs/architecture.md "AMD"), refused for
registers ("kernel too large for AMD": a spill area past the private segment the hardware
gives a work-item, 262,136 bytes on gfx1100 and 131,056 on gfx942), internal error,
emulator error (an access outside every buffer, a register read before its load...: wrong
code), emulator crash (a Python exception inside the emulator), wrong result. Each kernel that
is not ok or refused is written to DIR as a .uop file named after its outcome, with the arch and
input seed in a comment, to make a regression test of it. Exit status 1 when any was found.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "support")]

from kcc.frontend.printer import format_uop    # noqa: E402
from kcc.ir import KernelInfo                  # noqa: E402

REGISTER_REFUSAL = "kernel too large for AMD"
os.environ.setdefault("KCC_CHECK_ALLOC", "1")      # every allocation re-verified


def draw_kernels(n: int, seed: int) -> list:
    """n kernels (graphs), drawn with hypothesis seed `seed` (the same n for one seed)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    from fuzz import shapes
    from fuzz.lanewise import lanewise, lanewise_reduce, lanewise_tile
    from fuzz.strategies import elementwise, local_exchange, reduce, vector
    mix = [(elementwise(), 8), (reduce(), 5), (vector(), 5), (vector(wide=True), 3),
           (local_exchange(), 3), (lanewise(), 5), (lanewise(wide=True), 2),
           (lanewise_reduce(), 3), (lanewise_tile(), 3), (shapes.carried(), 2),
           (shapes.mixed_lanes(), 2), (shapes.spills(), 2), (shapes.jam(), 2),
           (shapes.reflected(), 4)]
    total = sum(w for _, w in mix)
    out: list = []
    for k, (strategy, weight) in enumerate(mix):
        @hseed(seed * 1000 + k)
        @settings(max_examples=max(1, n * weight // total), deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def draw(sink) -> None:
            out.append(sink.replace(arg=KernelInfo(f"fuzz{len(out):04d}")))
        draw()
    return out


def run_one(sink, arch: str, seed: int) -> tuple[str, str]:
    """(outcome, detail) of one kernel on one arch."""
    import numpy as np

    from fuzz.harness import AMD_REFUSALS, mismatch, special_inputs
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.amd.emu.core import EmuError
    from kcc.targets.manifest import check_launch
    from x86_util import reference
    try:
        (code,) = compile_amd_code([sink], arch)
        data = hsaco([code])
    except Exception as e:                          # noqa: BLE001 - every outcome is counted
        msg = f"{type(e).__name__}: {e}"
        if REGISTER_REFUSAL in str(e):
            return "refused-registers", msg
        if any(r in str(e) for r in AMD_REFUSALS):
            return "refused", msg
        return "internal-error", msg + "\n" + traceback.format_exc(limit=4)
    args = special_inputs(sink, seed)
    want = reference(sink, args)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        emulate(data, code.desc, check_launch(code.desc, got))
    except EmuError as e:
        return "emulator-error", str(e)
    except Exception as e:                          # noqa: BLE001
        return "emulator-crash", f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=6)
    msg = mismatch(sink, got, want)
    return ("wrong-result", msg) if msg else ("ok", "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="kernels to draw")
    ap.add_argument("--seed", type=int, default=1, help="hypothesis seed of the draw")
    ap.add_argument("--arch", action="append", help="gfx1100 and/or gfx942 (default both)")
    ap.add_argument("--out", type=Path, default=Path("fuzz-amd-out"),
                    help="folder for the kernels that failed")
    a = ap.parse_args()
    arches = a.arch or ["gfx1100", "gfx942"]
    t0 = time.time()
    sinks = draw_kernels(a.n, a.seed)
    counts: Counter = Counter()
    bad = 0
    for i, sink in enumerate(sinks):
        for arch in arches:
            outcome, detail = run_one(sink, arch, a.seed + i)
            counts[arch, outcome] += 1
            if outcome.startswith("refused") or outcome == "ok":
                continue
            bad += 1
            a.out.mkdir(parents=True, exist_ok=True)
            name = a.out / f"{outcome}-{arch}-{i:04d}.uop"
            note = "".join(f"# {line}\n" for line in
                           [f"arch={arch} input seed={a.seed + i}"] + detail.splitlines())
            name.write_text(note + format_uop(sink))
            print(f"{name.name}: {detail.splitlines()[0] if detail else ''}", flush=True)
    print(f"{len(sinks)} kernels, draw seed {a.seed}, {time.time() - t0:.0f} s")
    for arch in arches:
        row = {o: c for (ar, o), c in sorted(counts.items()) if ar == arch}
        print(f"  {arch}: " + ", ".join(f"{o} {c}" for o, c in row.items()))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
