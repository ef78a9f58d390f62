"""kcc's CUDA code against tinygrad's own PTX, SASS instruction by instruction (issue 25).

For each tinygrad computation of bench/gpu_vs_llvm.py (tinygrad 0.14, emulator sizes), every
kernel it runs is captured (kcc.tinygrad.capture) and lowered twice from the same AST: by
tinygrad's PTX renderer (the `.ptx.uop` kcc compiles with `-t cuda`) and, for comparison, by the
same renderer to PTX text (tinygrad.renderer.ptx.PTXRenderer, which constructs without a GPU).
Both PTX modules go through `ptxas -O3 -v -arch ARCH` (registers, spill stores/loads, shared
memory from its report) and the cubin through cuobjdump -sass (or nvdisasm), whose listing is
counted statically: every instruction except NOP padding and the `BRA` to itself that ends a
kernel, by class (FP32: F*, FP64: D*, MUFU, INT: integer/predicate/move, MEM: LD*/ST*/ATOM*/RED*,
CTRL: branches, EXIT, CALL/RET, barriers, BSSY/BSYNC, UNIF: uniform-datapath U*/S2UR/S2R/CS2R,
OTH: the rest); `sub` is the part of the total in out-of-line subroutines (ptxas's slow paths
of the correctly rounded div.rn/rcp.rn/sqrt.rn, reached by CALL only for subnormal, huge or
special operands). `ratio` is kcc/tinygrad of the totals, `inline` of the totals less `sub`.
The last line has both geomeans and the worst kernels.

    python bench/cuda_vs_tinygrad.py [--arch sm_80|sm_90] [--only add,exp2,...]
    python bench/cuda_vs_tinygrad.py --wmma [--arch sm_90] [--wmma-n 4096]

`--wmma`: instead, bench/gpu_wmma.py's tensor-core matmul (tinygrad's float16 N^3 graph with
its tensor-core optimization for its PTX renderer at ARCH, a float32 and a float16 accumulator):
kcc's cubin of that graph against tinygrad's own PTX for it, the whole kernel by class as above
plus the body of its innermost loop (the k loop: from a backward branch's target to the branch)
opcode by opcode: loads and stores by width (LDG.E.U16 is 16 bits, LDG.E 32, LDG.E.64 ...),
HMMA, the integer ops. The loop's body does not depend on N (only its trip count, N/16).

Static counts, not timed (no GPU needed; nothing runs): one run suffices. Without cuobjdump and
nvdisasm (`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`) it prints the ptxas facts and
says that the SASS columns are missing; without ptxas it stops and says so.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CLASSES = ("FP32", "FP64", "MUFU", "INT", "MEM", "CTRL", "UNIF", "OTH")
_INT = ("IADD", "IMAD", "IMUL", "LEA", "SHF", "SHL", "SHR", "LOP", "ISETP", "SEL", "MOV", "PRMT",
        "IABS", "IMNMX", "VIMNMX", "I2F", "F2I", "F2F", "I2I", "PLOP3", "P2R", "R2P", "FLO",
        "POPC", "BREV", "BMSK", "SGXT", "IDP", "IMMA", "I2FP", "F2IP", "VOTE", "SHFL")
_CTRL = ("BRA", "BRX", "JMP", "EXIT", "CALL", "RET", "BAR", "BSSY", "BSYNC", "WARPSYNC", "BPT",
         "YIELD", "KILL", "NANOSLEEP", "MEMBAR", "DEPBAR", "ERRBAR", "CCTL")
_MEM = ("LD", "ST", "ATOM", "RED", "LDG", "STG", "LDS", "STS", "LDL", "STL", "LDC", "LDSM")


def sass_class(op: str) -> str:
    """The class of one SASS opcode (its mnemonic before the first dot)."""
    base = op.split(".")[0]
    if base == "MUFU":
        return "MUFU"
    if base.startswith(("U", "S2R", "S2UR", "CS2R", "R2UR")) and base not in ("UNKNOWN",):
        return "UNIF"
    if base.startswith(("LD", "ST", "ATOM", "RED")) or base in _MEM:
        return "MEM"
    if base in _CTRL or base.startswith(("BRA", "BAR")):
        return "CTRL"
    if base.startswith("D") and base[1:] in ("ADD", "MUL", "FMA", "SETP", "MNMX"):
        return "FP64"
    if base.startswith(_INT):
        return "INT"
    if base.startswith(("F", "H")):       # FADD FMUL FFMA FSETP FSEL FMNMX FCHK FRND HADD2 ...
        return "FP32"
    return "OTH"


_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)")


def count_sass(listing: str) -> dict[str, dict[str, int]]:
    """Per kernel (`Function : NAME`), static instruction counts by class and in total; `sub`
    counts the instructions of out-of-line subroutines (from the first CALL target on: ptxas's
    slow paths of div.rn/rcp.rn/sqrt.rn, run only for subnormal, huge or special operands)."""
    out: dict[str, dict[str, int]] = {}
    insts: dict[str, list[tuple[int, str, str]]] = {}
    cur: list[tuple[int, str, str]] | None = None
    for line in listing.splitlines():
        fm = re.search(r"Function\s*:\s*(\S+)", line)
        if fm:
            cur = insts.setdefault(fm.group(1), [])
            continue
        m = _LINE.search(line)
        if m is not None and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    for name, code in insts.items():
        calls = [int(t, 16) for _, op, rest in code if op.startswith("CALL")
                 for t in re.findall(r"0x([0-9a-f]+)", rest)[:1]]
        first_sub = min(calls, default=None)
        c = out[name] = {k: 0 for k in (*CLASSES, "total", "sub")}
        for addr, op, rest in code:
            # padding: NOPs and the branch to itself after the last EXIT
            if op == "NOP" or (op == "BRA" and re.match(rf"\s+0x0*{addr:x}\s*;", rest)):
                continue
            c[sass_class(op)] += 1
            c["total"] += 1
            if first_sub is not None and addr >= first_sub:
                c["sub"] += 1
    return out


def find_sass_tool() -> tuple[str, list[str]] | None:
    """(executable, arguments) of cuobjdump -sass or nvdisasm -c; None when neither exists."""
    import shutil

    from kcc.targets.cuda.target import _wheel_tool
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        exe = shutil.which(tool) or _wheel_tool(tool)
        if exe is not None:
            return exe, args
    return None


def ptxas(ptx: str, arch: str, tmp: Path, stem: str) -> tuple[Path, dict[str, int]]:
    """ptxas -O3 -v: the cubin and, summed over the module's kernels, registers (max),
    spill stores/loads, stack frame and shared memory bytes."""
    from kcc.targets.cuda.target import find_ptxas
    exe = find_ptxas()
    if exe is None:
        raise SystemExit("ptxas not found: pip install nvidia-cuda-nvcc (or the CUDA toolkit)")
    src, cubin = tmp / f"{stem}.ptx", tmp / f"{stem}.cubin"
    src.write_text(ptx)
    r = subprocess.run([exe, "-O3", "-v", f"-arch={arch}", str(src), "-o", str(cubin)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ptxas refused {stem}: {r.stderr.strip()[:400]}")
    rep = r.stdout + r.stderr
    facts = {"regs": max((int(x) for x in re.findall(r"Used (\d+) registers", rep)), default=0),
             "spill": sum(int(a) + int(b) for a, b in
                          re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", rep)),
             "stack": sum(int(x) for x in re.findall(r"(\d+) bytes stack frame", rep)),
             "smem": sum(int(x) for x in re.findall(r"(\d+) bytes smem", rep))}
    return cubin, facts


def sass_counts(cubin: Path, tool: tuple[str, list[str]] | None) -> dict[str, int] | None:
    """Static SASS counts summed over the cubin's kernels (None without a SASS tool)."""
    if tool is None:
        return None
    r = subprocess.run([tool[0], *tool[1], str(cubin)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{Path(tool[0]).name} refused {cubin.name}: {r.stderr[:300]}")
    per = count_sass(r.stdout)
    tot = {c: 0 for c in (*CLASSES, "total", "sub")}
    for k in per.values():
        for c, n in k.items():
            tot[c] += n
    return tot


def measure(name: str, make: Any, arch: str, tmp: Path,
            tool: tuple[str, list[str]] | None) -> list[dict[str, Any]]:
    """Capture the computation's kernels; compile kcc's and tinygrad's PTX for each."""
    from tinygrad.helpers import Target
    from tinygrad.renderer.ptx import PTXRenderer

    from gpu_vs_llvm import captured_lowerings

    from kcc.frontend.parser import parse_result
    from kcc.targets.driver import compile_sinks
    from kcc.tinygrad.recording import lower
    ren = PTXRenderer(Target(device="CUDA", arch=arch))
    rows = []
    for _, k, text, ast in captured_lowerings(name, make, tmp, "ptx"):
        ptx_uop = k["gpu"].get("ptx")
        row: dict[str, Any] = {"comp": name, "kernel": f"{k['name']}#{k['index']}"}
        rows.append(row)
        if text is None:
            row["error"] = k["gpu"].get("ptx_error") or "no .ptx.uop lowering"
            continue
        sink = parse_result(text, ptx_uop).sink
        kptx = compile_sinks([sink], [ptx_uop], "cuda", arch, emit="ptx").data.decode()
        tptx = _tinygrad_module(ren.render(lower(ast, ren)), arch)
        stem = f"{name}_{k['index']}"
        try:
            kcub, kf = ptxas(kptx, arch, tmp, stem + "_kcc")
            tcub, tf = ptxas(tptx, arch, tmp, stem + "_tg")
        except RuntimeError as e:
            row["error"] = str(e)
            continue
        row.update(kf=kf, tf=tf, ks=sass_counts(kcub, tool), ts=sass_counts(tcub, tool))
    return rows


def _tinygrad_module(src: str, arch: str) -> str:
    """tinygrad's renderer leaves VERSION and TARGET placeholders that its PTXCompiler fills
    (tinygrad 0.14: PTX ISA 7.8 from sm_89 on, 7.5 below; the arch itself)."""
    ver = "7.8" if int(arch[3:]) >= 89 else "7.5"
    return src.replace(".version VERSION", f".version {ver}").replace(".target TARGET",
                                                                     f".target {arch}")


def loop_body(listing: str) -> list[str]:
    """The opcodes of the innermost loop of a one-kernel SASS listing: of the backward
    branches, the one whose target is latest (a nested loop starts after the loop around it;
    of sibling loops, the last), from its target to the branch; NOPs left out. [] when the
    kernel has no loop."""
    code = []
    for line in listing.splitlines():
        m = _LINE.search(line)
        if m is not None:
            code.append((int(m.group(1), 16), m.group(2), m.group(3)))
    back = [(tgt, addr) for addr, op, rest in code if op.startswith("BRA")
            for tgt in [int(t, 16) for t in re.findall(r"0x([0-9a-f]+)", rest)[:1]]
            if tgt < addr]
    if not back:
        return []
    start, end = max(back)
    return [op for addr, op, _ in code if start <= addr <= end and op != "NOP"]


def _loop_summary(ops: list[str]) -> str:
    """`n insts: OP:count ...`, memory and HMMA first, then the rest by count."""
    from collections import Counter
    c = Counter(ops)
    first = sorted((k for k in c if k.startswith(("LD", "ST", "HMMA"))), key=lambda k: -c[k])
    rest = sorted((k for k in c if k not in first), key=lambda k: (-c[k], k))
    return f"{len(ops)} insts: " + " ".join(f"{k}:{c[k]}" for k in first + rest)


def wmma(arch: str, n: int, tmp: Path, tool: tuple[str, list[str]] | None) -> str:
    """The `--wmma` report: per accumulator, kcc's and tinygrad's ptxas facts, SASS classes
    of the kernel and the innermost loop's opcodes."""
    from gpu_wmma import ACCS, lower_matmul

    from kcc.frontend.parser import parse_result
    from kcc.targets.driver import compile_sinks
    lines = [f"wmma {n}^3 float16 matmul, tinygrad's tensor-core graph for PTX, {arch}"]
    for acc in ACCS:
        low = lower_matmul(n, acc, arch)
        sink = parse_result(low.uop_text, low.name).sink
        kptx = compile_sinks([sink], [low.name], "cuda", arch, emit="ptx").data.decode()
        tptx = _tinygrad_module(low.ptx.decode(), arch)
        lines.append(f"{acc} accumulator: {low.name}, grid {low.global_size} block "
                     f"{low.local_size}, {low.wmmas} WMMA")
        for side, ptx in (("kcc", kptx), ("tinygrad", tptx)):
            cubin, f = ptxas(ptx, arch, tmp, f"wmma_{acc}_{side}")
            head = (f"  {side:<8} regs {f['regs']} spill {f['spill']} stack {f['stack']} "
                    f"smem {f['smem']}")
            if tool is None:
                lines.append(head + "  (no cuobjdump/nvdisasm: no SASS counts)")
                continue
            r = subprocess.run([tool[0], *tool[1], str(cubin)], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{Path(tool[0]).name} refused {cubin.name}: {r.stderr[:300]}")
            k = next(iter(count_sass(r.stdout).values()))
            lines.append(head + "  kernel " + " ".join(f"{c}:{k[c]}" for c in
                                                         (*CLASSES, "total") if k[c]))
            lines.append(f"  {'':<8} loop {_loop_summary(loop_body(r.stdout))}")
    return "\n".join(lines)


def report(rows: list[dict[str, Any]], arch: str, tool: Any) -> str:
    """The table (one kcc line, one tinygrad line per kernel) and the geomean line."""
    cols = " ".join(f"{c:>5}" for c in (*CLASSES, "total", "sub"))
    head = f"{'kernel':<30} {'side':<8} {cols}" + \
        f" {'regs':>4} {'spill':>5} {'smem':>5} {'ratio':>6} {'inline':>6}"
    lines = [f"arch {arch}" + ("" if tool else "  (no cuobjdump/nvdisasm: SASS columns missing; "
                                               "pip install nvidia-cuda-cuobjdump "
                                               "nvidia-cuda-nvdisasm)"), head]
    ratios: list[tuple[float, str]] = []
    inl: list[tuple[float, str]] = []
    for r in rows:
        label = f"{r['comp']}:{r['kernel']}"[:30]
        if "kf" not in r:
            lines.append(f"{label:<30} error: {r.get('error')}")
            continue
        ratio = None
        if r["ks"] and r["ts"]:
            ks, ts = r["ks"], r["ts"]
            ratio = ks["total"] / max(1, ts["total"])
            ratios.append((ratio, label))
            inl.append(((ks["total"] - ks["sub"]) / max(1, ts["total"] - ts["sub"]), label))
        for side, s, f in (("kcc", r["ks"], r["kf"]), ("tinygrad", r["ts"], r["tf"])):
            cols = " ".join(f"{s.get(c, 0):>5}" for c in (*CLASSES, "total", "sub")) if s else \
                " ".join(f"{'-':>5}" for _ in (*CLASSES, "total", "sub"))
            tail = f" {ratio:>6.2f} {inl[-1][0]:>6.2f}" if side == "kcc" and ratio is not None \
                else ""
            lines.append(f"{label if side == 'kcc' else '':<30} {side:<8} {cols} "
                         f"{f['regs']:>4} {f['spill']:>5} {f['smem']:>5}{tail}")
    if ratios:
        def geo(xs: list[tuple[float, str]]) -> float:
            return math.exp(sum(math.log(x) for x, _ in xs) / len(xs))
        worst, worst_inl = max(ratios), max(inl)
        lines.append(f"kcc/tinygrad-PTX static SASS instructions, {arch}: geomean "
                     f"{geo(ratios):.2f}x over {len(ratios)} kernels, worst {worst[1]} "
                     f"{worst[0]:.2f}x; without out-of-line subroutines geomean "
                     f"{geo(inl):.2f}x, worst {worst_inl[1]} {worst_inl[0]:.2f}x")
    elif not tool:
        lines.append("no SASS counts: cuobjdump and nvdisasm are both absent")
    return "\n".join(lines)


def main() -> None:
    from gpu_vs_llvm import _computations
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="sm_80", choices=("sm_80", "sm_90"))
    p.add_argument("--only", default=None, help="comma-separated computation names")
    p.add_argument("--wmma", action="store_true",
                   help="bench/gpu_wmma.py's tensor-core matmul instead (kernel and k loop)")
    p.add_argument("--wmma-n", type=int, default=4096, help="its M = N = K (default 4096)")
    a = p.parse_args()
    if a.wmma:
        with tempfile.TemporaryDirectory() as tmp:
            print(wmma(a.arch, a.wmma_n, Path(tmp), find_sass_tool()))
        return
    comps = _computations()
    names = a.only.split(",") if a.only else list(comps)
    tool = find_sass_tool()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            rows += measure(n, comps[n], a.arch, Path(tmp), tool)
    print(report(rows, a.arch, tool))


if __name__ == "__main__":
    main()
