"""Benchmark: kcc's x86 code against clang -O2 on tinygrad's own kernels.

    python bench/tinygrad_x86.py [--reps 15] [--only add,matmul] [--arch native]
                                 [--fp-contract off|fast|both] [--capture-dir DIR]

Each workload runs once in tinygrad (DEV=CPU, its default clang path) inside
`kcc.tinygrad.capture`, which writes every kernel as `.uop` with its arguments' values. For each
captured kernel this script then builds

- kcc: the `.uop` compiled in this process by
  `kcc.targets.x86.target.compile_x86` (the back-end time
  is measured here, in process);
- clang: the C source tinygrad rendered for the same kernel, compiled by tinygrad's own
  `ClangCompiler` (its flags: `-O2 -fPIC -ffreestanding -fno-math-errno -nostdlib
  -march=native …`, the `.o` tinygrad itself would load);

loads both objects into this process (kcc's ELF loader), runs both on the same 64-byte aligned
buffers holding the values tinygrad had, checks their outputs against each other and against
tinygrad's, and times them interleaved (median of --reps rounds after a warm-up; the order
reverses every other round). A threaded kernel (tinygrad's `core_id`, kcc's gidx0) is timed the
way tinygrad calls it, every worker index in sequence on one thread, for both; kcc's own
parallel launch (one thread per worker) is timed too, in rounds of its own after those.
Prints a Markdown table (docs/performance.md). Needs tinygrad 0.14
(`pip install 'kcc[tinygrad]'`).

The memory-bound add kernel is also read against the machine's memory bandwidth, measured in
the same rounds: `bench/bandwidth.py`'s STREAM-style copy and add peers (clang -O3 with
ordinary and non-temporal stores, libc memcpy, numpy) over the same element count run
interleaved with kcc's and clang's kernel, and the kernel's GB/s is printed as a share of the
best add peer (bytes as STREAM counts them: no write-allocate; `--no-bandwidth` leaves the
peers out).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bandwidth import Peers  # noqa: E402   (bench/bandwidth.py, beside this script)

WORKLOADS: dict[str, str] = {
    "add": "a + b, float32 16M",
    "exp2": "exp2(a) * a + 1, float32 16M",
    "sum": "row sum of 4096x4096 float32",
    "matmul": "512x512 @ 512x512 float32",
    "softmax": "softmax over rows of 4096x1024 float32",
    "conv2d": "conv2d 8x32x56x56 * 64x32x3x3, padding 1",
    "layernorm": "layernorm over rows of 4096x1024 float32",
}
# memory-bound kernels timed with the bandwidth peers (bench/bandwidth.py) in their rounds
BANDWIDTH_WORKLOADS = ("add",)
FLOPS = {"matmul": 2 * 512 ** 3, "conv2d": 2 * 8 * 64 * 56 * 56 * 32 * 9}


def build(name: str) -> Callable[[], Any]:
    """Inputs realized now; the returned thunk realizes the workload (captured)."""
    from tinygrad import Tensor
    Tensor.manual_seed(0)
    if name in ("add", "exp2"):
        a, b = Tensor.randn(1 << 24).realize(), Tensor.randn(1 << 24).realize()
        return (lambda: (a + b).realize()) if name == "add" else \
            (lambda: (a.exp2() * a + 1).realize())
    if name == "sum":
        x = Tensor.randn(4096, 4096).realize()
        return lambda: x.sum(axis=1).realize()
    if name == "matmul":
        a, b = Tensor.randn(512, 512).realize(), Tensor.randn(512, 512).realize()
        return lambda: (a @ b).realize()
    if name in ("softmax", "layernorm"):
        x = Tensor.randn(4096, 1024).realize()
        return (lambda: x.softmax(-1).realize()) if name == "softmax" else \
            (lambda: x.layernorm().realize())
    if name == "conv2d":
        x, w = Tensor.randn(8, 32, 56, 56).realize(), Tensor.randn(64, 32, 3, 3).realize()
        return lambda: x.conv2d(w, padding=1).realize()
    raise KeyError(name)


def c_sources(seen: set) -> list[tuple[str, tuple[int, ...], str]]:
    """(function name, buffer sizes in slot order, C source) of every program tinygrad rendered
    since the last call (keys in seen are skipped, then added), from its program cache (two
    kernels may share a name: the sizes tell them apart)."""
    from tinygrad.engine import realize
    from tinygrad.uop.ops import Ops
    out = []
    for key, prg in list(realize.to_program_cache.items()):
        if key in seen:
            continue
        seen.add(key)
        src = next((s for s in prg.src if s.op is Ops.SOURCE), None)
        if src is not None:
            head = src.arg[src.arg.index(prg.arg.function_name + "("):].split(")", 1)[0]
            sizes = tuple(int(m) for m in re.findall(r"data\d+_(\d+)\b", head))
            out.append((prg.arg.function_name, sizes, src.arg))
    return out


def source_of(k: "Kernel", srcs: list[tuple[str, tuple[int, ...], str]]) -> str:
    """The C source of captured kernel k (same name and buffer sizes in tinygrad slot order)."""
    sizes = tuple(a["size"] for a in sorted(k.args, key=lambda a: a["tinygrad_slot"])
                  if a["kind"] == "buffer")
    hits = [src for name, sz, src in srcs if name == k.name and sz == sizes]
    if len(hits) != 1:
        raise SystemExit(f"{k.name}: {len(hits)} C sources with buffer sizes {sizes}")
    return hits[0]


_INLINE_CAST = re.compile(r"(SPECIAL)\(CAST\((\d+)\) (int32)\)")


def readable(text: str) -> str:
    """The capture's importer writes a worker count as `SPECIAL(CAST(n) int32)`, an inline
    operand the .uop parser does not read: give the constant its own line."""
    out = []
    for k, line in enumerate(text.splitlines()):
        m = _INLINE_CAST.search(line)
        if m:
            out.append(f"%special_bound{k} = CAST({m.group(2)}) {m.group(3)}")
            line = line.replace(m.group(0), f"SPECIAL(%special_bound{k})")
        out.append(line)
    return "\n".join(out) + "\n"


def aligned(n: int, dt: np.dtype) -> np.ndarray:
    """A zeroed 64-byte aligned array of n elements."""
    raw = np.zeros(n * dt.itemsize + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + n * dt.itemsize].view(dt)


@dataclass
class Kernel:
    """One captured kernel with both implementations loaded and its buffers."""

    workload: str
    name: str
    uop: str
    workers: int
    args: list[dict]
    bufs: list[np.ndarray] = field(default_factory=list)
    want: dict[int, np.ndarray] = field(default_factory=dict)
    kcc_ms: float = 0.0
    kcc_fn: Any = None
    kcc_base_fn: Any = None
    same_as_base: bool = False      # the baseline object is byte-identical (a noise control)
    c_fn: Any = None
    kcc_par: Callable[[], None] | None = None
    loops: tuple[int, int] = (0, 0)
    src: str = ""
    moved: int = 0
    keep: list[Any] = field(default_factory=list)


def capture(names: list[str], out: Path,
            builder: Callable[[str], Callable[[], Any]] | None = None) -> list[Kernel]:
    """Run the workloads under kcc.tinygrad.capture; their kernels with tinygrad's C sources
    (builder: name → thunk, `build` unless given)."""
    import kcc.tinygrad
    kernels: list[Kernel] = []
    seen: set = set()
    c_sources(seen)
    for wl in names:
        d = out / wl
        run = (builder or build)(wl)
        # once kcc.tinygrad.capture (the module) is imported, the package attribute of that
        # name is the module, not the function: take the context manager class from it then
        cap = kcc.tinygrad.capture
        cap = getattr(cap, "Capture", cap)
        with cap(str(d), gpu=False):
            run()
        doc = json.loads((d / "capture.json").read_text())
        srcs = c_sources(seen)
        for k in doc["kernels"]:
            if k["uop"] is None:
                print(f"  {wl}: {k['name']} not captured: {k['error']}", file=sys.stderr)
                continue
            kernels.append(Kernel(wl, k["name"], str(d / k["uop"]), k["workers"], k["args"]))
            kernels[-1].src = source_of(kernels[-1], srcs)
            # beside the .uop: bench/compile_time.py --clang times clang on it
            (d / k["uop"]).with_suffix(".c").write_text(kernels[-1].src)
            for a in k["args"]:
                for key in ("in", "out"):
                    if key in a:
                        a[key] = str(d / a[key])
    return kernels


def prepare(k: Kernel, src: str, arch: str, contract: str, streaming: str = "auto",
            baseline: str | None = None) -> None:
    """Compile both, allocate the buffers with tinygrad's input values; with baseline, also
    kcc's object compiled with --streaming-stores=baseline (k.kcc_base_fn)."""
    from tinygrad.runtime.support.compiler_cpu import ClangCompiler

    from kcc.frontend.parser import parse
    from kcc.targets.x86.objload import LoadedObject
    from kcc.targets.x86.target import compile_x86, launch
    text = readable(Path(k.uop).read_text())
    t0 = time.perf_counter()
    kw = {"fp_contract": contract} if contract != "off" else {}
    obj, descs = compile_x86([parse(text, k.uop)], arch, streaming_stores=streaming, **kw)
    k.kcc_ms = (time.perf_counter() - t0) * 1e3
    base_obj = None
    if baseline is not None:
        base_obj, _ = compile_x86([parse(text, k.uop)], arch, streaming_stores=baseline, **kw)
    c_obj = ClangCompiler(["x86_64", "native"]).compile(src)
    lo, co = LoadedObject(obj), LoadedObject(c_obj)
    k.keep += [lo, co]
    k.loops = (loop_insts(obj), loop_insts(c_obj))
    vals: list[Any] = []
    for a in k.args:
        if a["kind"] == "buffer":
            init = np.load(a["in"])
            buf = aligned(a["size"], init.dtype)
            buf[:] = init
            k.bufs.append(buf)
            vals.append(buf)
            if "out" in a:
                k.want[len(k.bufs) - 1] = np.load(a["out"])
        else:
            vals.append(a["value"])
    desc = descs[0]
    from kcc.targets.manifest import check_launch
    args = check_launch(desc, vals)
    ptrs = [ctypes.c_void_p(b.ctypes.data) for b in k.bufs]
    # tinygrad's C takes the buffers in tinygrad's slot order (core_id last, as kcc's gidx0)
    bslots = [a["tinygrad_slot"] for a in k.args if a["kind"] == "buffer"]
    c_ptrs = [p for _, p in sorted(zip(bslots, ptrs), key=lambda x: x[0])]
    sig = [ctypes.c_void_p] * len(ptrs) + [ctypes.c_int]
    k.kcc_fn = lo.function(desc.name, None, sig)
    if base_obj is not None:
        bo = LoadedObject(base_obj)
        k.keep.append(bo)
        k.kcc_base_fn = bo.function(desc.name, None, sig)
        k.same_as_base = base_obj == obj
    k.c_fn = co.function(k.name, None, sig)
    k.keep += [c_ptrs, ptrs]
    k.kcc_par = lambda: launch(lo, desc, args)


def calls(fn: Any, ptrs: list[Any], workers: int) -> Callable[[], None]:
    """Every worker index in sequence, as tinygrad calls a threaded kernel."""
    def run() -> None:
        for w in range(workers):
            fn(*ptrs, w)
    return run


def check(k: Kernel, run: Callable[[], None]) -> tuple[bool, float]:
    """Run once from the input values; (close to tinygrad's outputs, max relative error)."""
    for i, a in enumerate(x for x in k.args if x["kind"] == "buffer"):
        k.bufs[i][:] = np.load(a["in"])
    run()
    ok, worst = True, 0.0
    for i, want in k.want.items():
        got = k.bufs[i]
        if got.dtype.kind == "f":
            # error relative to the output's scale: a sum near 0 has no meaningful relative error
            with np.errstate(all="ignore"):
                scale = float(np.nanmax(np.abs(want[np.isfinite(want)]), initial=1e-30))
                err = np.abs(got.astype(np.float64) - want) / scale
            same = (np.isnan(got) & np.isnan(want)) | (got == want)
            err = np.where(same, 0.0, err)
            worst = max(worst, float(np.nanmax(err, initial=0.0)))
            ok &= worst <= 1e-5 and bool(np.array_equal(np.isnan(got), np.isnan(want)))
        else:
            ok &= bool(np.array_equal(got, want))
    return ok, worst


def timed(fns: dict[str, Callable[[], None]], reps: int,
          rounds: dict[str, list[float]] | None = None,
          clock: Callable[[], float] = time.perf_counter,
          before: Callable[[], None] | None = None) -> dict[str, float]:
    """Median seconds of each fn over reps interleaved rounds (one warm-up round first).

    Every other round runs the fns in reverse order, so each fn follows each other fn (and
    itself) equally often: what one call leaves in the caches (lines held by the other core
    after a threaded launch, a buffer just written) does not fall on one fn every round.
    clock: wall clock by default; `time.thread_time` counts only this thread's CPU time (on a
    time-shared host, not the time another process holds the core; only for fns that run on
    the calling thread). before, if given, runs untimed before every call (bench/bandwidth.py's
    Evictor: each call starts with caches that hold nothing of the call before)."""
    for f in fns.values():
        f()
    ts: dict[str, list[float]] = {n: [] for n in fns}
    order = list(fns.items())
    for r in range(reps):
        for n, f in (order if r % 2 == 0 else order[::-1]):
            if before is not None:
                before()
            t = clock()
            f()
            ts[n].append(clock() - t)
    if rounds is not None:
        rounds.update(ts)            # every round's seconds, in round order
    return {n: statistics.median(v) for n, v in ts.items()}


def loop_insts(obj: bytes) -> int:
    """Instructions in the deepest innermost loop of an object's .text, the longest of those
    (static: a backward jump whose body holds no other backward jump; deepest: inside the
    most other loops, so a copy loop in front of the nest, kcc/passes/stage.py, is not it)."""
    import io

    import capstone
    from elftools.elf.elffile import ELFFile
    text = ELFFile(io.BytesIO(obj)).get_section_by_name(".text").data()
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    insts = [(i.address, i.mnemonic, i.op_str) for i in md.disasm(text, 0)]
    addrs = [a for a, _, _ in insts]
    loops = []
    for k, (a, m, op) in enumerate(insts):
        if m.startswith("j") and op.startswith("0x") and int(op, 16) <= a:
            loops.append((addrs.index(int(op, 16)) if int(op, 16) in addrs else k, k))
    inner = [(s, e) for s, e in loops if not any(s <= s2 and e2 < e and (s2, e2) != (s, e)
                                                 for s2, e2 in loops)]
    def depth(s: int, e: int) -> int:
        return sum(s2 <= s and e <= e2 for s2, e2 in loops)
    return max(((depth(s, e), e - s + 1) for s, e in inner), default=(0, 0))[1]


def moved_bytes(k: Kernel) -> int:
    """Bytes of every buffer the kernel touches, each once (a lower bound on its traffic)."""
    return sum(b.nbytes for b in k.bufs)


def written_bytes(k: Kernel) -> int:
    """Bytes of the buffers the kernel writes (tinygrad's outputs), each once."""
    bufs = [a for a in k.args if a["kind"] == "buffer"]
    return sum(b.nbytes for b, a in zip(k.bufs, bufs) if "out" in a)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--arch", default="native")
    ap.add_argument("--fp-contract", default="off", choices=("off", "fast", "both"))
    ap.add_argument("--streaming-stores", default="auto", choices=("auto", "never", "always"),
                    help="kcc's --streaming-stores for the kcc column")
    ap.add_argument("--streaming-baseline", choices=("auto", "never", "always"),
                    help="also time kcc compiled with this --streaming-stores, in the same "
                    "rounds (column 'kcc baseline')")
    ap.add_argument("--no-bandwidth", action="store_true", help="do not time the memory "
                    "bandwidth peers (bench/bandwidth.py) with the add kernel")
    ap.add_argument("--capture-dir", type=Path, help="keep the captured kernels here "
                    "(DIR/WORKLOAD/k000_NAME.uop and tinygrad's C as .c, for "
                    "bench/compile_time.py) instead of a "
                    "temporary folder")
    opt = ap.parse_args()
    try:
        import kcc.tinygrad  # noqa: F401
    except ImportError as e:
        sys.exit(f"bench/tinygrad_x86.py needs tinygrad 0.14 (pip install 'kcc[tinygrad]'): {e}")
    names = [n for n in opt.only.split(",") if n]
    contracts = ["off", "fast"] if opt.fp_contract == "both" else [opt.fp_contract]
    with tempfile.TemporaryDirectory() as tmp:
        kernels = capture(names, opt.capture_dir or Path(tmp))
        rows, bw_rows = [], []
        for contract in contracts:
            for k0 in kernels:
                k = Kernel(k0.workload, k0.name, k0.uop, k0.workers, k0.args, src=k0.src)
                prepare(k, k.src, opt.arch, contract, opt.streaming_stores,
                        opt.streaming_baseline)
                c_ptrs, ptrs = k.keep[-2], k.keep[-1]
                kfn, cfn = calls(k.kcc_fn, ptrs, k.workers), calls(k.c_fn, c_ptrs, k.workers)
                ok_k, err_k = check(k, kfn)
                ok_c, err_c = check(k, cfn)
                fns = {"kcc": kfn, "clang": cfn}
                if k.kcc_base_fn is not None:
                    fns["kcc baseline"] = calls(k.kcc_base_fn, ptrs, k.workers)
                    ok_b, _ = check(k, fns["kcc baseline"])
                    ok_k &= ok_b
                bw = None
                if k.workload in BANDWIDTH_WORKLOADS and not opt.no_bandwidth:
                    # STREAM-style peers over the output's element count, in the same rounds
                    bw = Peers(max(b.size for b in k.bufs))
                    bad = bw.check()
                    if bad:
                        sys.exit(f"bandwidth peers computed wrong results: {', '.join(bad)}")
                    fns.update(bw.fns())
                per_round: dict[str, list[float]] = {}
                t = timed(fns, opt.reps, per_round)
                if k.workers > 1 and k.kcc_par is not None:
                    # timed apart: interleaved with the sequential calls, the threaded launch
                    # leaves half the input in the other core's caches for the call after it
                    # (softmax max read kcc/clang 1.1-1.2 right after it, 0.85 otherwise)
                    t.update(timed({"kcc parallel": k.kcc_par}, opt.reps))
                k.moved = moved_bytes(k)
                k.bufs, k.want, k.kcc_par, k.kcc_fn, k.c_fn = [], {}, None, None, None
                k.kcc_base_fn = None
                k.keep.clear()                   # free the buffers before the next kernel
                t["rounds"] = per_round           # type: ignore[assignment]
                rows.append((contract, k, t, ok_k and ok_c, (err_k, err_c)))
                if bw is not None:
                    bw.close()
                    bw_rows.append((contract, k, t, bw, per_round))
    report(rows, opt)
    report_bandwidth(bw_rows)


def report(rows: list, opt: Any) -> None:
    """The Markdown table and the geomean of kcc/clang."""
    print(f"median of {opt.reps} interleaved rounds, --arch {opt.arch}, kcc "
          f"--streaming-stores={opt.streaming_stores}; times in ms")
    print()
    print("| workload | kernel | fp-contract | workers | kcc | clang | kcc/clang | kcc GB/s |"
          " GFLOP/s kcc / clang | kcc parallel | inner loop insts kcc / clang | compile ms |"
          " outputs (error kcc / clang) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {}
    for contract, k, t, ok, err in rows:
        r = t["kcc"] / t["clang"]
        ratios.setdefault(contract, []).append(r)
        gbs = k.moved / t["kcc"] / 1e9
        fl = FLOPS.get(k.workload) if sum(1 for c, x, *_ in rows if x.workload == k.workload
                                           and c == contract) == 1 else None
        flt = f"{fl / t['kcc'] / 1e9:.1f} / {fl / t['clang'] / 1e9:.1f}" if fl else "–"
        par = f"{t['kcc parallel'] * 1e3:.2f}" if "kcc parallel" in t else "–"
        print(f"| {k.workload} | {k.name} | {contract} | {k.workers} | {t['kcc'] * 1e3:.2f} | "
              f"{t['clang'] * 1e3:.2f} | {r:.2f} | {gbs:.1f} | {flt} | {par} | "
              f"{k.loops[0]} / {k.loops[1]} | "
              f"{k.kcc_ms:.0f} | {'ok' if ok else 'MISMATCH'} ({err[0]:.0e} / {err[1]:.0e}) |")
    print()
    if opt.streaming_baseline:
        print()
        print(f"kcc --streaming-stores={opt.streaming_stores} against "
              f"--streaming-stores={opt.streaming_baseline} in the same rounds:")
        for contract, k, t, ok, err in rows:
            same = "; the same object: the host's noise" if k.same_as_base else ""
            pr = t["rounds"]
            q = sorted(a / b for a, b in zip(pr["kcc"], pr["kcc baseline"]))
            print(f"  {k.workload} {k.name}: {t['kcc'] / t['kcc baseline']:.2f} of the medians"
                  f", per round median {statistics.median(q):.2f} (quartiles "
                  f"{q[len(q) // 4]:.2f}–{q[3 * len(q) // 4]:.2f}); baseline/clang "
                  f"{t['kcc baseline'] / t['clang']:.2f}{same}")
    for contract, rs in ratios.items():
        gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
        print(f"geomean kcc/clang (fp-contract {contract}): {gm:.2f} over {len(rs)} kernels; "
              f"worst {max(rs):.2f}")
    if not all(ok for *_, ok, _ in rows):
        sys.exit(1)


def report_bandwidth(bw_rows: list) -> None:
    """The bandwidth peers timed with a kernel, and the kernel's GB/s as a share of the best
    add peer: the ratio of the kernel's time to that peer's in each round (both ran in the
    same minute), the median over rounds and its spread; and of the medians."""
    for contract, k, t, bw, per_round in bw_rows:
        print()
        print(f"memory bandwidth, {k.workload} {k.name} (fp-contract {contract}): peers over "
              f"{bw.n} float32 in the same interleaved rounds, one thread; GB/s counts what "
              "a loop reads and writes (no write-allocate)")
        print()
        print("\n".join(bw.table(t)))
        print()
        copy, gc = bw.best(t, "copy")
        add, ga = bw.best(t, "add")
        print(f"best copy {gc:.1f} GB/s ({copy}); best add {ga:.1f} GB/s ({add})")
        ref = per_round[f"bw: {add}"]
        for who in ("kcc", "clang"):
            g = k.moved / t[who] / 1e9
            share = sorted(r / w for r, w in zip(ref, per_round[who]))
            print(f"{who} {k.name}: {g:.1f} GB/s = {100 * g / ga:.0f}% of the best add "
                  f"({100 * g / gc:.0f}% of the best copy); per round {100 * share[0]:.0f}–"
                  f"{100 * share[-1]:.0f}%, median {100 * statistics.median(share):.0f}%")


if __name__ == "__main__":
    main()
