"""The CUDA target: PTX from kcc.isel.ptx.select/kcc.encode.ptx, a cubin through ptxas, manifest
facts, and the launch path through libcuda (kcc.targets.cuda.driver).

    data, descs = compile_cuda([sink], arch="sm_90", emit="cubin")
    launch_cuda(data, descs[0], check_launch(descs[0], args))

Registers are virtual in PTX, so `allocate` is the identity: ptxas allocates, and its `-v`
report gives the register count the manifest records. One module holds every kernel (one
`.visible .entry` each). Launch dimensions: grid = the gidx bounds (constants, or expressions
of scalar arguments the loader evaluates per launch: kcc.targets.dims), block = the lidx
bounds (constants, declared to ptxas as `.maxntid`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kcc.encode.ptx import ARCH_PTX, Kernel, PtxError, module_text, sm_number
from kcc.ir import Ops, UOp
from kcc.isel.ptx.select import SelectError, select
from kcc.passes.target import TargetDesc
from kcc.targets.cuda.desc import CUDA
from kcc.targets.dims import is_symbolic
from kcc.targets.facts import FactsError, ptx_global
from kcc.targets.facts_read import read_cubin_global, read_ptx_global
from kcc.targets.manifest import KernelDesc, LaunchError, describe_kernel
from kcc.targets.registry import Compiled, CompileError, DisasmError, Emit, TargetSpec

ARCHES: tuple[str, ...] = tuple(ARCH_PTX)
PTXAS_HINT = ("install it with `pip install nvidia-cuda-nvcc` (it provides "
              "site-packages/nvidia/cu13/bin/ptxas) or the CUDA toolkit, or use --emit ptx")


class CudaCompileError(CompileError):
    """A CUDA compilation that cannot complete (no ptxas, ptxas refused the PTX, bad arch)."""


def find_ptxas() -> str | None:
    """ptxas on PATH, else the one the `nvidia-cuda-nvcc` wheel installs; None if neither."""
    p = shutil.which("ptxas")
    if p:
        return p
    for base in sys.path:
        for sub in ("cu13", "cu12", "cuda_nvcc"):
            cand = Path(base) / "nvidia" / sub / "bin" / "ptxas"
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return None


@dataclass
class Selected:
    """A kernel after isel (and after the identity allocation)."""

    kernel: Kernel
    desc: KernelDesc


class CudaTarget:
    """CUDA: select with kcc.isel.ptx.select; registers stay virtual; encode is PTX text."""

    name = "cuda"

    def __init__(self, arch: str = "sm_90"):
        if arch not in ARCH_PTX:
            raise CudaCompileError(f"unknown CUDA arch {arch!r} (choose from "
                                   f"{', '.join(ARCHES)})")
        self.arch = arch
        self.sm = sm_number(arch)
        self.desc: TargetDesc = CUDA

    def select(self, lin: list[UOp], sink: UOp) -> Selected:
        """Select the schedule; sink is the kernel as written, whose PARAMs give every
        argument slot (a PARAM the passes kept is the same node, by hash-consing)."""
        kd = describe_kernel(sink)
        written = {n.arg.slot: n for n in sink.toposort() if n.op is Ops.PARAM}
        live = {n.arg.slot: n for n in lin if n.op is Ops.PARAM}
        params = [live.get(i, written.get(i)) for i in range(max(written, default=-1) + 1)]
        k = select(lin, kd.name, params, self.sm)
        if is_symbolic(kd.local_size):
            raise SelectError("a lidx SPECIAL bound that depends on scalar arguments: the CUDA "
                              "target needs a constant block size (.maxntid); a symbolic size "
                              "is supported for gidx (the grid)")
        if any(s.startswith("lidx") for s in kd.specials):
            k.maxntid = tuple(kd.local_size)
        return Selected(k, kd)

    def allocate(self, s: Selected) -> Selected:
        """PTX registers are virtual: ptxas allocates them."""
        return s

    def encode(self, s: Selected) -> tuple[Kernel, KernelDesc]:
        shared = sum(size for _, size, _ in s.kernel.shared)
        s.desc.target = {"cuda": {"arch": self.arch, "ptx_version": ARCH_PTX[self.arch],
                                  "registers": None, "shared_bytes": shared,
                                  "local_bytes": sum(b for _, b, _ in s.kernel.local),
                                  "block": list(s.desc.local_size),
                                  "grid": list(s.desc.global_size)}}
        return s.kernel, s.desc

    def listing(self, stage: str, state: Any) -> str:
        if stage in ("select", "allocate"):
            from kcc.encode.ptx import kernel_text
            return kernel_text(state.kernel, self.sm)
        return module_text([state[0]], self.arch)


def run_ptxas(ptx: str, arch: str, ptxas: str | None = None) -> tuple[bytes, dict[str, dict]]:
    """Assemble PTX into a cubin with `ptxas -v`; returns it and per-kernel facts
    ({name: {"registers": n, "shared_bytes": n, "local_bytes": n}}) parsed from the report."""
    exe = ptxas or find_ptxas()
    if exe is None:
        raise CudaCompileError(f"ptxas was not found; {PTXAS_HINT}")
    with tempfile.TemporaryDirectory(prefix="kcc-ptxas-") as d:
        src, out = Path(d) / "k.ptx", Path(d) / "k.cubin"
        src.write_text(ptx)
        r = subprocess.run([exe, "-v", f"-arch={arch}", str(src), "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise CudaCompileError(f"ptxas rejected the PTX (exit {r.returncode}):\n"
                                   f"{r.stderr.strip() or r.stdout.strip()}")
        return out.read_bytes(), parse_ptxas_info(r.stderr + r.stdout)


_FN = re.compile(r"Compiling entry function '([^']+)'")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_STACK = re.compile(r"(\d+) bytes stack frame")


def parse_ptxas_info(text: str) -> dict[str, dict]:
    """Registers, shared and stack bytes per entry from `ptxas -v` output."""
    facts: dict[str, dict] = {}
    cur: dict | None = None
    for line in text.splitlines():
        m = _FN.search(line)
        if m:
            cur = facts.setdefault(m.group(1), {})
            continue
        if cur is None:
            continue
        if (m := _USED.search(line)):
            cur["registers"] = int(m.group(1))
            if (s := _SMEM.search(line)):
                cur["shared_bytes"] = int(s.group(1))
        if (m := _STACK.search(line)):
            cur["stack_bytes"] = int(m.group(1))
    return facts


def compile_cuda(sinks: list[UOp], arch: str = "sm_90", emit: str = "cubin",
                 dump_after: str | None = None, out: Any = None, extra_ptx: str = ""
                 ) -> tuple[bytes, list[KernelDesc]]:
    """Compile kernels into one CUDA module: a cubin (via ptxas) or PTX text (UTF-8 bytes).
    extra_ptx: module-scope declarations appended (an exported program's facts).

    The manifest facts (registers from `ptxas -v`) are filled whenever ptxas is available,
    also for `emit="ptx"`.
    """
    from kcc.targets.pipeline import compile_kernels
    if emit not in ("cubin", "ptx"):
        raise CudaCompileError(f"--emit for CUDA is 'cubin' or 'ptx', not {emit!r}")
    target = CudaTarget(arch)
    ptxas = find_ptxas()
    if emit == "cubin" and ptxas is None:
        raise CudaCompileError(f"a cubin needs ptxas, which was not found; {PTXAS_HINT}")
    kernels, descs = compile_kernels(sinks, target, (SelectError, PtxError), dump_after, out)
    try:
        ptx = module_text(kernels, arch) + ptx_global(descs) + extra_ptx
    except PtxError as e:
        raise CudaCompileError(str(e)) from None
    if ptxas is None:
        return ptx.encode(), descs
    cubin, facts = run_ptxas(ptx, arch, ptxas)
    for d in descs:
        f = facts.get(d.name, {})
        d.target["cuda"]["registers"] = f.get("registers")
        if "shared_bytes" in f:
            d.target["cuda"]["shared_bytes"] = f["shared_bytes"]
        if "stack_bytes" in f:
            d.target["cuda"]["stack_bytes"] = f["stack_bytes"]
    return (cubin if emit == "cubin" else ptx.encode()), descs


def disasm_cuda(data: bytes) -> str:
    """PTX text as is; a cubin as SASS through cuobjdump or nvdisasm (CudaCompileError when
    neither is present or both refuse it)."""
    if not data.startswith(b"\x7fELF"):
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise CudaCompileError("not PTX text (not UTF-8) and not a cubin (no ELF header)") \
                from None
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        exe = shutil.which(tool) or _wheel_tool(tool)
        if exe is None:
            continue
        with tempfile.TemporaryDirectory(prefix="kcc-sass-") as d:
            p = Path(d) / "k.cubin"
            p.write_bytes(data)
            r = subprocess.run([exe, *args, str(p)], capture_output=True, text=True, timeout=120)
            if r.returncode == 0:
                return r.stdout
    raise CudaCompileError("a cubin's SASS listing needs cuobjdump or nvdisasm, which were not "
                           "found (or refused the file); install them with `pip install "
                           "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`, or compile with "
                           "--emit ptx to read the PTX")


def _wheel_tool(tool: str) -> str | None:
    for base in sys.path:
        cand = Path(base) / "nvidia" / "cu13" / "bin" / tool
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def launch_cuda(module: bytes, desc: KernelDesc, args: list[Any]) -> None:
    """Run one kernel of a module on the GPU: copy buffers in, launch grid × block, copy the
    written buffers back into the caller's arrays. args are normalized by check_launch."""
    from kcc.targets.cuda.driver import Driver
    from kcc.targets.gpu_runtime import with_device_buffers
    drv = Driver.get()
    mod = drv.load_module(module)
    fn = drv.function(mod, desc.name)

    def run(pointers: dict[int, int]) -> None:
        params = [("ptr", pointers[a.slot]) if a.kind == "buffer" else ("val", np.asarray(v))
                  for a, v in zip(desc.args, args)]
        grid, block = desc.launch_dims(args)     # symbolic sizes: evaluated per launch
        if 0 not in grid + block:                # a dimension of 0 launches nothing
            drv.launch(fn, grid, block, params)
            drv.synchronize()
    try:
        with_device_buffers(drv, desc, args, run)
    finally:
        drv.unload_module(mod)


# -- the registry entry (kcc.targets.registry) --------------------------------------------------

def _is_ptx(data: bytes, path: str) -> bool:
    return path.endswith(".ptx") or b".entry" in data[:100000]


class CudaSpec(TargetSpec):
    """CUDA: one module of PTX entries, a cubin through ptxas; runs through libcuda."""

    name = "cuda"
    summary = "CUDA cubin (through ptxas) or PTX, run through libcuda"
    arches = ARCHES
    default_arch = "sm_90"
    emits = (Emit("cubin", ".cubin", True), Emit("ptx", ".ptx", True))
    lists = "a CUDA cubin or PTX"

    def compile(self, sinks: list[UOp], arch: str, emit: str, dump_after: str | None = None,
                out: Any = None) -> Compiled:
        self.check_arch(arch)
        self.emit(emit)
        try:
            data, descs = compile_cuda(sinks, arch, emit, dump_after, out)
        except CudaCompileError as e:
            raise CompileError(str(e)) from None
        return Compiled(data, descs, arch, emit)

    def describe(self, data: bytes) -> list[dict[str, Any]] | None:
        """The launch facts of the module's __kcc_launch array (cubin or PTX)."""
        if data[:4] == b"\x7fELF":
            facts = read_cubin_global(data)
        else:
            try:
                facts = read_ptx_global(data.decode())
            except UnicodeDecodeError:
                raise FactsError("not PTX text (not UTF-8) and not a cubin") from None
        if facts is None:
            raise FactsError("the module carries no kcc launch facts (__kcc_launch): it was "
                             "not written by this kcc; recompile it")
        return facts

    def launch(self, data: bytes, desc: KernelDesc, values: list[Any]) -> None:
        from kcc.targets.cuda.driver import CudaUnavailable
        self.check_facts(data, desc)
        try:
            launch_cuda(data, desc, values)
        except CudaUnavailable as e:
            raise LaunchError(f"cannot run on CUDA: {e}") from None

    def claims(self, data: bytes, path: str) -> bool:
        if data[:4] == b"\x7fELF":
            return int.from_bytes(data[18:20], "little") == 190      # EM_CUDA
        return _is_ptx(data, path)

    def disasm(self, data: bytes, att: bool = False) -> str:
        try:
            return disasm_cuda(data)
        except CudaCompileError as e:
            raise DisasmError(str(e)) from None


TARGET = CudaSpec()
