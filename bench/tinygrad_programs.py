"""Whole tinygrad programs, end to end: DEV=CPU:KCC against DEV=CPU (clang) as a user runs them.

For each program and device, every round starts two fresh processes in turn, interleaved with
the other device: the first with an empty compile cache (tinygrad's `CACHEDB`, a new file), the
second with the cache the first one left (a second process of the same program). Each times
the program's first call; the second also times --steady more calls (steady state per call).
Inside the processes the first call is split into: compile (time in the device's
`Compiler.compile`: kcc's x86 back end, or the clang subprocess), and tinygrad (tinygrad's own
scheduling, `Tensor.linear_with_vars`, plus its lowering of the kernels, `compile_linear`
less render and compile; a BEAM search's candidate runs count here too). The rest is
rendering (kcc's importer or tinygrad's C renderer), running and Python. Medians over --rounds;
every round's outputs are compared between the devices (integers exactly, floats to 1e-4
relative). The BEAM programs search with BEAM=2 in the first process (empty cache); the second
finds the search in tinygrad's cache.

    python bench/tinygrad_programs.py [--rounds 3] [--steady 3] [--only mlp_train,...]

Python's bytecode and kcc's start-up caches are those of an installation that has run before
(PYTHONDONTWRITEBYTECODE is dropped for the workers, and one untimed run of the smallest
program on each device writes them first).

PARALLEL=0 in every process, so compiles happen (and are timed) in the process itself rather
than in tinygrad's compile workers (`--parallel N` to run as tinygrad's default does; the
compile column is then empty).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ("CPU", "CPU:KCC")


# -- the programs (run in the worker process) ----------------------------------------------------

def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def mlp_train() -> Callable[[], list[np.ndarray]]:
    """An MLP 256-512-10 trained with Adam on a batch of 128: one step per call."""
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    from tinygrad.nn.optim import Adam
    r = _rng()
    x = Tensor(r.standard_normal((128, 256)).astype(np.float32))
    y = Tensor(r.integers(0, 10, 128).astype(np.int32))
    ps = [Tensor((r.standard_normal(s) * 0.05).astype(np.float32)) for s in
          ((256, 512), (512,), (512, 10), (10,))]
    for p in ps:
        p.requires_grad = True
    opt = Adam(ps, lr=1e-3)

    def step() -> list[np.ndarray]:
        with Context(TRAINING=1):
            opt.zero_grad()
            loss = ((x @ ps[0] + ps[1]).relu() @ ps[2] + ps[3]).sparse_categorical_crossentropy(y)
            loss.backward()
            opt.step()
            return [loss.numpy(), ps[2].numpy()]
    return step


def attention() -> Callable[[], list[np.ndarray]]:
    """Causal self-attention, batch 2, 4 heads, 128 tokens of 64: projections, scaled
    dot-product attention, output projection."""
    from tinygrad import Tensor
    r = _rng()
    x = Tensor(r.standard_normal((2, 128, 256)).astype(np.float32))
    wq, wk, wv, wo = (Tensor((r.standard_normal((256, 256)) * 0.06).astype(np.float32))
                      for _ in range(4))

    def call() -> list[np.ndarray]:
        q, k, v = ((x @ w).reshape(2, 128, 4, 64).transpose(1, 2) for w in (wq, wk, wv))
        a = q.scaled_dot_product_attention(k, v, is_causal=True)
        return [(a.transpose(1, 2).reshape(2, 128, 256) @ wo).numpy()]
    return call


def sort_topk() -> Callable[[], list[np.ndarray]]:
    """sort of 8 rows of 1024, topk 16 of each row, argmax."""
    from tinygrad import Tensor
    x = Tensor(_rng().permutation(8 * 1024).reshape(8, 1024).astype(np.float32))

    def call() -> list[np.ndarray]:
        s, i = x.sort(dim=-1)
        tv, ti = x.topk(16)
        return [s.numpy(), i.numpy(), tv.numpy(), ti.numpy(), x.argmax(axis=1).numpy()]
    return call


def reductions() -> Callable[[], list[np.ndarray]]:
    """sum over each axis, max, mean, std, logsumexp and argmax of a 1024x1024 matrix."""
    from tinygrad import Tensor
    x = Tensor(_rng().standard_normal((1024, 1024)).astype(np.float32))

    def call() -> list[np.ndarray]:
        return [y.numpy() for y in (x.sum(axis=0), x.sum(axis=1), x.max(axis=1), x.mean(),
                                    x.std(axis=0), x.logsumexp(axis=1), x.argmax(axis=0))]
    return call


def beam_matmul() -> Callable[[], list[np.ndarray]]:
    """A 256^3 matmul, BEAM=2."""
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    r = _rng()
    a, b = (Tensor(r.standard_normal((256, 256)).astype(np.float32)) for _ in range(2))

    def call() -> list[np.ndarray]:
        with Context(BEAM=2):
            return [(a @ b).numpy()]
    return call


def beam_conv() -> Callable[[], list[np.ndarray]]:
    """A 3x3 conv2d, 2x8x16x16 input, 8 filters, padding 1, BEAM=2."""
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    r = _rng()
    x = Tensor(r.standard_normal((2, 8, 16, 16)).astype(np.float32))
    w = Tensor((r.standard_normal((8, 8, 3, 3)) * 0.1).astype(np.float32))

    def call() -> list[np.ndarray]:
        with Context(BEAM=2):
            return [x.conv2d(w, padding=1).numpy()]
    return call


PROGRAMS: dict[str, Callable[[], Callable[[], list[np.ndarray]]]] = {
    f.__name__: f for f in (mlp_train, attention, sort_topk, reductions, beam_matmul, beam_conv)}


# -- the worker: one program, one device, one process --------------------------------------------

def now() -> tuple[float, float]:
    """(wall, CPU) seconds; CPU counts this process and its finished children (clang)."""
    import resource
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def since(st: tuple[float, float]) -> list[float]:
    """[wall, CPU] seconds since st (a now())."""
    t = now()
    return [t[0] - st[0], t[1] - st[1]]


class _Timer:
    """Accumulated [wall, CPU] seconds in wrapped functions, outermost calls only (BEAM's
    candidate timing calls compile_linear inside compile_linear)."""

    def __init__(self) -> None:
        self.total: dict[str, list[float]] = {}
        self.depth: dict[str, int] = {}

    def wrap(self, owner: Any, attr: str, key: str) -> None:
        fn = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self.depth.get(key):
                return fn(*args, **kwargs)
            self.depth[key] = 1
            st = now()
            try:
                return fn(*args, **kwargs)
            finally:
                w, c = since(st)
                t = self.total.setdefault(key, [0.0, 0.0])
                t[0] += w
                t[1] += c
                self.depth[key] = 0
        setattr(owner, attr, timed)

    def take(self) -> dict[str, list[float]]:
        out, self.total = self.total, {}
        return out


def worker(name: str, steady: int, out: str) -> None:
    """Run one program in this process (DEV and CACHEDB come from the environment); print a
    JSON line with the first call's split and the steady-state calls."""
    import kcc.tinygrad  # noqa: F401
    import tinygrad.engine.realize as realize
    from tinygrad import Device, Tensor
    ren = Device["CPU"].renderer
    timer = _Timer()
    timer.wrap(Tensor, "linear_with_vars", "schedule")
    timer.wrap(realize, "compile_linear", "lower")
    timer.wrap(type(ren), "render", "render")
    timer.wrap(type(ren.compiler), "compile", "compile")
    call = PROGRAMS[name]()
    timer.take()
    st = now()
    res = call()
    first = since(st)
    split = timer.take()
    np.savez(out, *res)
    times, splits = [], []
    for _ in range(steady):
        st = now()
        call()
        times.append(since(st))
        splits.append(timer.take())
    print(json.dumps({"first": first, "split": split, "steady": times, "steady_split": splits,
                      "renderer": type(ren).__name__}))


def worker_env(dev: str, cachedb: str, parallel: int = 0) -> dict[str, str]:
    """A worker's environment: the device, its compile cache, PARALLEL, this checkout first
    on the path, and Python's bytecode written and read as in a user's installation
    (PYTHONDONTWRITEBYTECODE dropped: with it set, every process compiles every module of
    tinygrad and kcc from source again, which no installed package does)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(DEV=dev, CACHEDB=cachedb, PARALLEL=str(parallel),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return env


def warm_installation(tmp: str) -> None:
    """Run the smallest program once on each device, untimed, in a throwaway compile cache:
    the bytecode of tinygrad and kcc and kcc's start-up caches are then written, as in an
    installation that has run before (a first process of a new program is still cold where
    it counts: tinygrad's compile cache is empty)."""
    for dev in DEVICES:
        run_worker("reductions", dev, os.path.join(tmp, f"warm.{dev.replace(':', '_')}.db"),
                   0, os.path.join(tmp, "warm.npz"), 0)


def run_worker(name: str, dev: str, cachedb: str, steady: int, out: str,
               parallel: int) -> dict[str, Any]:
    """Run one program on one device in a fresh process with the given CACHEDB; its JSON."""
    env = worker_env(dev, cachedb, parallel)
    st = now()
    r = subprocess.run([sys.executable, __file__, "--worker", name, "--steady", str(steady),
                        "--out", out], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{name} on {dev} failed:\n{r.stderr[-3000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["process"] = since(st)         # the whole process: start-up, imports, the calls
    assert (res["renderer"] == "KCCRenderer") == dev.endswith("KCC"), (dev, res["renderer"])
    return res


def same(a: str, b: str) -> str | None:
    """None when the two runs' outputs agree, else what differs."""
    with np.load(a) as x, np.load(b) as y:
        for k in x.files:
            g, w = x[k], y[k]
            if g.shape != w.shape or g.dtype != w.dtype:
                return f"{k}: {g.dtype}{g.shape} against {w.dtype}{w.shape}"
            if g.dtype.kind != "f":
                ok = np.array_equal(g, w)
            else:
                scale = max(1.0, float(np.abs(w).max()))
                ok = np.allclose(g, w, rtol=1e-4, atol=1e-5 * scale)
            if not ok:
                return f"{k}: differs"
    return None


def split_of(s: dict[str, list[float]], clock: int) -> tuple[float, float]:
    """(compile, tinygrad's scheduling and lowering) seconds of one call's split."""
    def get(k: str) -> float:
        return s.get(k, [0.0, 0.0])[clock]
    comp = get("compile")
    return comp, get("schedule") + get("lower") - get("render") - comp


def main() -> None:
    """Run the rounds (or, with --worker, one program in this process) and print the tables."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steady", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--parallel", type=int, default=0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    opt = ap.parse_args()
    if opt.worker:
        worker(opt.worker, opt.steady, opt.out)
        return
    names = [n for n in opt.only.split(",") if n] or list(PROGRAMS)
    rows: dict[tuple[str, str], dict[str, list[Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm_installation(tmp)
        for rnd in range(opt.rounds):
            for name in names:
                devs = DEVICES if rnd % 2 == 0 else DEVICES[::-1]
                outs = {}
                for dev in devs:
                    tag = f"{name}.{dev.replace(':', '_')}.{rnd}"
                    db = os.path.join(tmp, f"{tag}.db")
                    cold = run_worker(name, dev, db, 0, os.path.join(tmp, f"{tag}.cold.npz"),
                                      opt.parallel)
                    warm = run_worker(name, dev, db, opt.steady,
                                      os.path.join(tmp, f"{tag}.warm.npz"), opt.parallel)
                    outs[dev] = os.path.join(tmp, f"{tag}.cold.npz")
                    d = rows.setdefault((name, dev), {"cold": [], "warm": [], "steady": []})
                    d["cold"].append(cold)
                    d["warm"].append(warm)
                    d["steady"].append(warm)
                    bad = same(os.path.join(tmp, f"{tag}.warm.npz"), outs[dev])
                    if bad:
                        raise SystemExit(f"{name} on {dev}: second process differs: {bad}")
                bad = same(outs["CPU:KCC"], outs["CPU"])
                if bad:
                    raise SystemExit(f"{name}: DEV=CPU:KCC differs from DEV=CPU: {bad}")
                print(f"round {rnd} {name}: outputs match", file=sys.stderr, flush=True)
    print("wall-clock time:")
    print_table(names, rows, 0)
    print("\nCPU time (this process and its clang children):")
    print_table(names, rows, 1)


def _ms(x: float) -> str:
    return f"{x * 1e3:.0f}" if x >= 0.1 else f"{x * 1e3:.1f}" if x >= 0.001 else \
        f"{x * 1e3:.2f}"


def print_table(names: list[str], rows: dict[tuple[str, str], dict[str, list[Any]]],
                clock: int) -> None:
    """The markdown table of the medians, wall (clock 0) or CPU (clock 1) time."""
    med = statistics.median
    print("| program | run | DEV=CPU (ms) | compile | tinygrad | DEV=CPU:KCC (ms) | compile | "
          "tinygrad | CPU / KCC |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for phase, label in (("cold", "1st process, cold cache"), ("warm", "2nd process"),
                             ("steady", "steady, per call"),
                             ("proc", "whole 1st process (start-up, imports)")):
            cells = []
            walls = []
            for dev in DEVICES:
                runs = rows[(name, dev)]["cold" if phase == "proc" else phase]
                if phase == "proc":
                    wall = med([r["process"][clock] for r in runs])
                    cells += [_ms(wall), "", ""]
                    walls.append(wall)
                    continue
                if phase == "steady":       # every steady call of every round
                    calls = [(t, s) for r in runs for t, s in zip(r["steady"],
                                                                  r["steady_split"])]
                else:
                    calls = [(r["first"], r["split"]) for r in runs]
                wall = med([t[clock] for t, _ in calls])
                comp = med([split_of(s, clock)[0] for _, s in calls])
                tg = med([split_of(s, clock)[1] for _, s in calls])
                cells += [_ms(wall), _ms(comp), _ms(tg)]
                walls.append(wall)
            print(f"| {name} | {label} | " + " | ".join(cells) +
                  f" | {walls[0] / walls[1]:.2f}x |")


if __name__ == "__main__":
    main()
