#!/usr/bin/env python3
"""Regenerate tests/data/wmma_tinygrad/: tinygrad's own tensor-core (WMMA) kernels.

    PYTHONPATH=. python scripts/capture_wmma.py [--out tests/data/wmma_tinygrad]

tinygrad 0.14 runs float16, bfloat16 and int8 matmuls (one of 64x64x64, whose workgroups hold
several warps) and a float16 conv2d (TC_OPT=2, so tensor cores apply to a kernel with several
reduce axes) on its CPU device through kcc
(`DEV=CPU:KCC`) under `kcc.tinygrad.capture`, which also lowers each kernel, tensor cores on,
with tinygrad's PTX (sm_80), HIP (gfx1100), CUDA C (sm_90) and HIP (gfx942) renderers. Kept:
every kernel with a WMMA in some lowering, its `.uop` files (the CPU form and the GPU forms), the
values tinygrad computed (`.npy`) and `capture.json` listing only those kernels. Every byte here
comes from tinygrad; kcc only spells its graphs (kcc.frontend.tinygrad_import).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

STYLES = ("ptx", "hip", "cuda", "hip_gfx942")
ROOT = Path(__file__).resolve().parents[1]


def _run_cases(out: Path) -> None:
    from tinygrad import Tensor, dtypes
    from tinygrad.helpers import Context

    import kcc.tinygrad
    rng = np.random.default_rng(0)

    def rand(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float16)
    with Context(DEV="CPU:KCC", PARALLEL=0), kcc.tinygrad.capture(out, gpu=STYLES):
        a, b = Tensor(rand(32, 64)).realize(), Tensor(rand(64, 32)).realize()
        (a @ b).realize()                                        # float16 -> float32 acc
        a.dot(b, dtype=dtypes.half).realize()                    # float16 accumulator
        ab, bb = a.cast(dtypes.bfloat16).realize(), b.cast(dtypes.bfloat16).realize()
        (ab @ bb).realize()                                      # bfloat16
        a8, b8 = Tensor(rand(32, 8)).realize(), Tensor(rand(8, 32)).realize()
        (a8 @ b8).realize()                                      # K = 8: m16n8k8
        # int8 -> int32. tinygrad multiplies in int8 (a product wraps) and adds in int32,
        # while its tensor core multiplies exactly: |values| <= 11 keeps every product in int8
        ai = Tensor(rng.integers(-11, 12, (32, 64)).astype(np.int8)).realize()
        bi = Tensor(rng.integers(-11, 12, (64, 32)).astype(np.int8)).realize()
        ai.dot(bi, dtype=dtypes.int32).realize()
        x, w = Tensor(rand(1, 16, 8, 8)).realize(), Tensor(rand(16, 16, 3, 3)).realize()
        with Context(TC_OPT=2):
            x.conv2d(w).realize()                                # conv2d, three reduce axes
        c, d = Tensor(rand(64, 64)).realize(), Tensor(rand(64, 64)).realize()
        (c @ d).realize()                # several warps a workgroup: lidx1 counts them


def _keep(src: Path, dst: Path) -> list[dict]:
    doc = json.loads((src / "capture.json").read_text())
    kept = []
    for k in doc["kernels"]:
        gpu = {s: f for s, f in k["gpu"].items() if s in STYLES and f
               and "WMMA(" in (src / f).read_text()}
        if not gpu:
            continue
        kept.append(k)
        files = [k["uop"], *(f for f in k["gpu"].values() if f)]
        files += [a[x] for a in k["args"] for x in ("in", "out") if x in a]
        for f in files:
            shutil.copy(src / f, dst / f)
    return kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "wmma_tinygrad")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        _run_cases(Path(tmp))
        if args.out.exists():
            shutil.rmtree(args.out)
        args.out.mkdir(parents=True)
        kept = _keep(Path(tmp), args.out)
    doc = {"format": "kcc-tinygrad-capture", "version": 1, "kernels": kept,
           "note": "written by scripts/capture_wmma.py: the kernels with a WMMA only"}
    (args.out / "capture.json").write_text(json.dumps(doc, indent=1) + "\n")
    for k in kept:
        forms = {s: sorted({ln.split(") ", 1)[1].split(" :")[0] for ln in
                            (args.out / f).read_text().splitlines() if "WMMA(" in ln})
                 for s, f in k["gpu"].items() if f}
        print(k["index"], k["name"], json.dumps(forms))


if __name__ == "__main__":
    main()
