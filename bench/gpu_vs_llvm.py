"""kcc's AMD code against LLVM 19's, instruction by instruction, in kcc's AMD emulator (issue 25).

For each tinygrad computation below (tinygrad 0.14, emulator sizes: the workloads of
bench/tinygrad_x86.py, smaller), every kernel it runs is
captured (kcc.tinygrad.capture: the AST, the inputs and tinygrad's outputs) and lowered twice
from the same AST: by tinygrad's HIP renderer (the `.hip.uop` kcc compiles) and by tinygrad's
AMD LLVM IR renderer (tinygrad.renderer.llvmir.AMDLLVMRenderer, which constructs without a GPU),
whose IR goes through `opt-19 -O3`, `llc-19 -O3 -mattr=+cumode` (the feature tinygrad's
AMDLLVMCompiler sets) and `ld.lld-19 -shared`. On gfx1100 llc runs with
`--amdgpu-enable-vopd=0`: kcc's decoder (hence its emulator) has no VOPD dual-issue rows, so
LLVM's wave-instruction counts here are an upper bound by at most the VOPD pairs it would form.
On gfx942 LLVM uses packed-f32 VOP3P instructions (v_pk_add_f32, v_pk_mul_f32, v_pk_fma_f32),
which kcc's decoder and emulator run; `--no-pk-f32` compiles LLVM's side with
`-packed-fp32-ops` instead (LLVM's counts then overstate its VALU work), for comparison only.
Both code objects run in kcc's emulator (kcc.targets.amd.emu) on the captured inputs and each
side's launch (grid, block); the outputs must agree with tinygrad's CPU values (and so with each
other) to 1e-4 relative. Per kernel it prints dynamic wave-instruction counts by class
(kcc.targets.amd.emu.counters), static code size in bytes, VGPRs/SGPRs and LDS bytes from the
code objects' metadata, and the kcc/LLVM ratio of total dynamic instructions (`ratio`) and of
all but the `other` class (`no-oth`: s_delay_alu, s_clause, s_nop, s_endpgm... are scheduling
hints and program control, which LLVM emits and kcc mostly does not); the last line has the
geomean ratios and the worst kernel.

    python bench/gpu_vs_llvm.py [--arch gfx1100|gfx942] [--only add,exp2,...]

Not timed (the emulator models no timing): counts are deterministic, one run suffices.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLASSES = ("VALU", "SALU", "VMEM", "SMEM", "LDS", "waitcnt", "branch", "other")


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _computations() -> dict[str, Callable[[], Any]]:
    """name -> a function returning the tinygrad Tensor to realize (emulator sizes)."""
    from tinygrad import Tensor

    def t(*shape: int) -> Any:
        return Tensor(_rng().standard_normal(shape).astype(np.float32))
    return {
        "add": lambda: t(4096) + t(4096),
        "exp2": lambda: t(4096).exp2(),
        "sum": lambda: t(64, 256).sum(axis=1),
        "softmax": lambda: t(16, 128).softmax(axis=1),
        "matmul": lambda: t(32, 32) @ t(32, 32),
        "layernorm": lambda: t(16, 128).layernorm(),
        "conv2d": lambda: t(1, 4, 8, 8).conv2d(t(8, 4, 3, 3), padding=1),
    }


def _launch_from_uops(uops: list[Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(grid, block) from the SPECIAL indices of a GPU-lowered program: gidxN counts
    workgroups, lidxN work-items (tinygrad's AMD convention)."""
    from tinygrad.uop.ops import Ops
    grid, block = [1, 1, 1], [1, 1, 1]
    for u in uops:
        if u.op is Ops.SPECIAL:
            # the source is the dimension's size (no symbolic sizes in these computations)
            dim, n = int(u.arg[-1]), int(u.src[0].vmax)
            (grid if u.arg[0] == "g" else block)[dim] = n
    return tuple(grid), tuple(block)


def _llvm_hsaco(ir: str, arch: str, tmp: Path, name: str, no_pk_f32: bool = False) -> bytes:
    """tinygrad's AMD LLVM IR -> opt-19 -O3 -> llc-19 -O3 -> ld.lld-19 -shared."""
    ll, opt, obj, out = (tmp / f"{name}{s}" for s in (".ll", ".opt.ll", ".o", ".hsaco"))
    ll.write_text(ir)
    tgt = ["-mtriple=amdgcn-amd-amdhsa", f"-mcpu={arch}"]
    vopd = ["--amdgpu-enable-vopd=0"] if arch.startswith("gfx11") else []
    for cmd in (["opt-19", "-O3", *tgt, str(ll), "-S", "-o", str(opt)],
                ["llc-19", "-O3", *tgt, "-mattr=+cumode" + (",-packed-fp32-ops" * no_pk_f32),
                 *vopd, "-filetype=obj", str(opt), "-o", str(obj)],
                ["ld.lld-19", "-shared", str(obj), "-o", str(out)]):
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.read_bytes()


def _facts(data: bytes, kernel: str) -> dict[str, int]:
    """Static size and register/LDS use from a code object's descriptor and metadata."""
    from kcc.targets.amd.hsaco_read import read_hsaco
    k = read_hsaco(data).kernels[kernel]
    return {"bytes": k.code_size, "vgpr": int(k.metadata.get(".vgpr_count", -1)),
            "sgpr": int(k.metadata.get(".sgpr_count", -1)),
            "lds": int(k.descriptor.group_segment_size)}


def _emulate(data: bytes, kernel: str, bufs: list[np.ndarray], grid: tuple[int, ...],
             block: tuple[int, ...]) -> tuple[list[np.ndarray], dict[str, int]]:
    from kcc.targets.amd.emu.core import run_hsaco
    from kcc.targets.amd.emu.counters import counting
    arrs = [b.copy() for b in bufs]
    with counting() as counts:
        run_hsaco(data, kernel, arrs, grid, block)
    return arrs, dict(counts)


def _agree(got: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype.kind == "f":
        return bool(np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True))
    return bool(np.array_equal(got, want))


def captured_lowerings(name: str, make: Callable[[], Any], tmp: Path,
                       style: str) -> Iterator[tuple[Path, dict[str, Any], str | None, Any]]:
    """Capture the computation's kernels (kcc.tinygrad.capture under tmp/name); per kernel its
    capture folder, its capture.json entry, the .uop text of its GPU lowering `style` ("hip",
    "ptx"; None when there is none) and the AST tinygrad lowered it from (for the peer's own
    renderer)."""
    import kcc.tinygrad
    out = tmp / name
    with kcc.tinygrad.capture(str(out)) as cap:
        make().realize()
    man = json.loads((out / "capture.json").read_text())
    for k in man["kernels"]:
        f = k["gpu"].get(style)
        text = (out / f).read_text() if f else None
        ast = None if text is None else next(
            (cap.asts[kk] for (kk, st), imp in cap.gpu_imported.items()
             if st == style and imp.text == text), None)
        yield out, k, text, ast


def measure(name: str, make: Callable[[], Any], arch: str, tmp: Path,
            no_pk_f32: bool = False) -> list[dict[str, Any]]:
    """Capture the computation's kernels and measure each on both sides."""
    from tinygrad.helpers import Target
    from tinygrad.renderer.llvmir import AMDLLVMRenderer

    from kcc.frontend.parser import parse_result
    from kcc.targets.amd.emu.core import EmuError
    from kcc.targets.driver import compile_sinks
    from kcc.tinygrad.recording import lower
    ren = AMDLLVMRenderer(Target(device="AMD", arch=arch))
    rows = []
    for out, k, text, ast in captured_lowerings(name, make, tmp, "hip"):
        hip = k["gpu"].get("hip")
        row: dict[str, Any] = {"comp": name, "kernel": f"{k['name']}#{k['index']}"}
        rows.append(row)
        if not hip or not k["args"] or any(a["kind"] != "buffer" for a in k["args"]):
            row["error"] = k["gpu"].get("hip_error") or "scalar arguments not measured"
            continue
        args = sorted(k["args"], key=lambda a: a["slot"])
        ins = [np.load(out / a["in"]) for a in args]
        want = {i: np.load(out / a["out"]) for i, a in enumerate(args) if "out" in a}
        # kcc: the HIP renderer's lowering through kcc's AMD back end
        sink = parse_result(text, hip).sink
        comp = compile_sinks([sink], [hip], "amd", arch)
        desc = comp.descs[0]
        kgrid, kblock = desc.launch_dims(ins)
        try:
            kres, kcount = _emulate(comp.data, desc.name, ins, tuple(kgrid), tuple(kblock))
        except EmuError as e:
            row["error"] = f"kcc's code object does not emulate: {e}"
            continue
        # LLVM: the AMD LLVM renderer's lowering of the same AST, tinygrad-slot order
        uops = lower(ast, ren)
        ir = ren.render(uops)
        fn = re.search(r"define amdgpu_kernel void @(\w+)\(", ir)
        assert fn is not None
        lgrid, lblock = _launch_from_uops(uops)
        ldata = _llvm_hsaco(ir, arch, tmp, f"{name}_{k['index']}", no_pk_f32)
        by_ts = {a["tinygrad_slot"]: i for i, a in enumerate(args)}
        lins = [ins[by_ts[ts]] for ts in sorted(by_ts)]
        try:
            lres_ts, lcount = _emulate(ldata, fn.group(1), lins, lgrid, lblock)
        except EmuError as e:    # LLVM's code may use what kcc's decoder/emulator lacks
            row["error"] = f"LLVM's code object does not emulate: {e}"
            continue
        lres = [lres_ts[sorted(by_ts).index(a["tinygrad_slot"])] for a in args]
        ok_k = all(_agree(kres[i], w) for i, w in want.items())
        ok_l = all(_agree(lres[i], w) for i, w in want.items())
        row.update(kcc=kcount, llvm=lcount, kfacts=_facts(comp.data, desc.name),
                   lfacts=_facts(ldata, fn.group(1)), agree=ok_k and ok_l,
                   launch=f"{kgrid}x{kblock}" + ("" if (tuple(kgrid), tuple(kblock)) ==
                                                 (lgrid, lblock) else f" llvm {lgrid}x{lblock}"))
        if not (ok_k and ok_l):
            row["error"] = f"values differ from tinygrad's: kcc {'ok' if ok_k else 'WRONG'}, " \
                f"llvm {'ok' if ok_l else 'WRONG'}"
    return rows


def report(rows: list[dict[str, Any]], arch: str) -> str:
    """The table (one kcc line and one LLVM line per kernel) and the geomean line."""
    head = f"{'kernel':<28} {'side':<5} " + " ".join(f"{c:>7}" for c in (*CLASSES, "total")) + \
        f" {'bytes':>6} {'vgpr':>4} {'sgpr':>4} {'lds':>5} {'ratio':>6} {'no-oth':>6}"
    lines = [f"arch {arch}", head]
    ratios: list[tuple[float, str]] = []
    cores: list[float] = []
    for r in rows:
        label = f"{r['comp']}:{r['kernel']}"[:28]
        if "kcc" not in r:
            lines.append(f"{label:<28} error: {r.get('error')}")
            continue
        ratio = r["kcc"]["total"] / max(1, r["llvm"]["total"])
        core = (r["kcc"]["total"] - r["kcc"]["other"]) / \
            max(1, r["llvm"]["total"] - r["llvm"]["other"])
        ratios.append((ratio, label))
        cores.append(core)
        for side, c, f in (("kcc", r["kcc"], r["kfacts"]), ("llvm", r["llvm"], r["lfacts"])):
            lines.append(f"{label if side == 'kcc' else '':<28} {side:<5} " +
                         " ".join(f"{c.get(k, 0):>7}" for k in (*CLASSES, "total")) +
                         f" {f['bytes']:>6} {f['vgpr']:>4} {f['sgpr']:>4} {f['lds']:>5}" +
                         (f" {ratio:>6.2f} {core:>6.2f}" if side == "kcc" else ""))
        if r.get("error"):
            lines.append(f"{'':<28} error: {r['error']}")
        lines.append(f"{'':<28} launch {r['launch']}")
    if ratios:
        geo = math.exp(sum(math.log(x) for x, _ in ratios) / len(ratios))
        geo_core = math.exp(sum(math.log(x) for x in cores) / len(cores))
        worst = max(ratios)
        lines.append(f"kcc/LLVM dynamic wave instructions, {arch}: geomean {geo:.2f}x "
                     f"({geo_core:.2f}x without 'other') over {len(ratios)} kernels; worst "
                     f"{worst[1]} {worst[0]:.2f}x")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="gfx1100", choices=("gfx1100", "gfx942"))
    p.add_argument("--only", default=None, help="comma-separated computation names")
    p.add_argument("--no-pk-f32", action="store_true",
                   help="llc with -packed-fp32-ops (gfx942: no v_pk_*_f32; LLVM then spends "
                        "one VALU per float instead, for comparison only)")
    a = p.parse_args()
    comps = _computations()
    names = a.only.split(",") if a.only else list(comps)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            rows += measure(n, comps[n], a.arch, Path(tmp), a.no_pk_f32)
    print(report(rows, a.arch + (" (llc -packed-fp32-ops)" if a.no_pk_f32 else "")))


if __name__ == "__main__":
    main()
