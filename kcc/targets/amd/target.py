"""The AMD GPU target: gfx1100 (RDNA3, wave32, the default) and gfx942 (CDNA3, wave64).

Pipeline steps: select (kcc/isel/amd/select.py) → allocate (the linear-scan allocator with SGPR/VGPR
classes, kcc/isel/amd/regs.py; the independent checker re-verifies it with
KCC_CHECK_ALLOC=1) → encode (expand pseudo instructions, place s_waitcnt, lay out branches:
kcc/isel/amd/lower.py). The result is a list of instructions and labels plus the facts the
kernel descriptor, the metadata and the manifest need.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from kcc.encode.amd.operands import SGPR, VGPR, Inst
from kcc.ir import Ops, UOp
from kcc.ir.mir import Label, MFunction, PReg, format_mir
from kcc.isel.amd.lower import (Lowering, insert_waits, listing, store_hazards,
                                trans_hazards)
from kcc.isel.amd.regs import ARCHES, AmdRegInfo, Arch, parse_preg
from kcc.isel.amd.select import AmdSelectError, Selected, select
from kcc.targets.amd.desc import desc_for
from kcc.regalloc import AllocationError, allocate, check_allocation
from kcc.targets.dims import is_symbolic
from kcc.targets.facts_read import read_object_facts
from kcc.targets.manifest import KernelDesc, LaunchError, describe_kernel
from kcc.targets.registry import Compiled, CompileError, DisasmError, Emit, TargetSpec

DEFAULT_ARCH = "gfx1100"


@dataclass(frozen=True)
class Spills:
    """What a kernel's spills need: bytes of private segment (scratch) per work-item for its
    VGPR slots, and how many SGPR and VGPR spill instructions it has (the metadata's
    ``.sgpr_spill_count`` / ``.vgpr_spill_count``)."""

    scratch_bytes: int = 0
    sgpr: int = 0
    vgpr: int = 0


@dataclass
class AmdCode:
    """One compiled kernel: its instructions (with labels), register counts and launch
    facts."""

    name: str
    items: list[Inst | Label]
    arch: Arch
    sgprs: int
    vgprs: int
    sel: Selected
    desc: KernelDesc
    asm: list[str] = field(default_factory=list)
    spills: Spills = Spills()


def _counts(items: list[Inst | Label]) -> tuple[int, int]:
    """Next free SGPR and VGPR (one past the highest register the code names)."""
    s = v = 0
    for it in items:
        if isinstance(it, Label):
            continue
        for o in it.ops:
            if isinstance(o, SGPR):
                s = max(s, o.index + o.count)
            elif isinstance(o, VGPR):
                v = max(v, o.index + o.count)
    return s, v


def _params(sink: UOp) -> list[UOp | None]:
    from kcc.ir.uop import toposort
    ps = {n.arg.slot: n for n in toposort([sink]) if n.op is Ops.PARAM}
    n = max(ps, default=-1) + 1
    return [ps.get(i) for i in range(n)]


def _top(fn: MFunction, bank: type) -> int:
    """One past the highest register of ``bank`` (SGPR or VGPR) an allocated function
    names."""
    top = 0
    for inst in fn.insts:
        for r in (*inst.uses(), *inst.defs()):
            if isinstance(r, PReg):
                p = parse_preg(r)
                if isinstance(p, bank):
                    top = max(top, p.index + p.count)
    return top


def allocate_spilling(fn: MFunction, arch: Arch, kernel: str) -> tuple[MFunction, AmdRegInfo]:
    """Allocate ``fn``; where SGPRs spill, again with lane VGPRs reserved for their slots, and
    where VGPR slots lie past a scratch offset's reach, again with a frame SGPR reserved.

    The first allocation has every register (a kernel that does not spill SGPRs or has a
    small spill area is done then, as before either existed). Its SGPR spills tell how many
    slot dwords the lanes must hold; the lane VGPRs are then the ones just past the highest
    VGPR it used (so the VGPR assignment, which never chose them, stays the same), or the top
    ones when the VGPRs ran out too. The frame SGPR is likewise the one past the highest SGPR
    used, or the top one. Each retry reserves at least one more lane VGPR or the frame SGPR,
    so it ends."""
    info = AmdRegInfo(arch, kernel)
    out = allocate(fn, info)
    while info.lane_dwords > len(info.lanes) * arch.wave or (info.far and info.base is None):
        lanes, base = info.lanes, info.base
        if info.lane_dwords > len(lanes) * arch.wave:
            n = max(-(-info.lane_dwords // arch.wave), len(lanes) + 1)
            low = _top(out, VGPR) if not lanes else min(lanes)
            first = low if low + n <= arch.vgprs else arch.vgprs - n
            if first < 1:                      # v0 holds the work-item ids at entry
                raise AllocationError(f"kernel too large for AMD: {kernel!r} needs more than "
                                      f"{arch.vgprs} VGPRs for its values and spilled SGPRs")
            lanes = tuple(range(first, first + n))
        if info.far and base is None:
            base = min(_top(out, SGPR), arch.sgprs - 1)
        info = AmdRegInfo(arch, kernel, lanes, base)
        out = allocate(fn, info)
    return out, info


class AmdTarget:
    """What the pipeline drives for AMD."""

    name = "amd"

    def __init__(self, arch: str = DEFAULT_ARCH):
        if arch not in ARCHES:
            raise AmdSelectError(f"unknown AMD arch {arch!r} (choose from "
                                 f"{', '.join(ARCHES)})")
        self.arch = ARCHES[arch]
        self.desc = desc_for(self.arch.family)
        self.check_alloc = os.environ.get("KCC_CHECK_ALLOC", "") not in ("", "0")

    def select(self, lin: list[UOp], sink: UOp) -> tuple[Selected, KernelDesc]:
        kd = describe_kernel(sink)
        if is_symbolic(kd.local_size):
            raise AmdSelectError("a lidx SPECIAL bound that depends on scalar arguments: the AMD "
                                 "target needs a constant workgroup size; a symbolic size is "
                                 "supported for gidx (the grid)")
        return select(lin, kd.name, _params(sink), self.arch), kd

    def allocate(self, state: tuple[Selected, KernelDesc]
                 ) -> tuple[Selected, KernelDesc, Spills]:
        sel, kd = state
        try:
            fn, info = allocate_spilling(sel.fn, self.arch, kd.name)
        except AllocationError as e:
            raise AmdSelectError(str(e)) from None
        if self.check_alloc:
            check_allocation(sel.fn, fn, info)
        out = Selected(fn, sel.lds_bytes, sel.workgroup_ids, sel.workitem_ids, sel.kernarg,
                       sel.kernarg_size)
        return out, kd, Spills(info.scratch_bytes, info.spills["s"], info.spills["v"])

    def encode(self, state: tuple[Selected, KernelDesc, Spills]) -> AmdCode:
        sel, kd, spills = state
        items = store_hazards(insert_waits(Lowering(self.arch).lower(sel.fn), self.arch),
                              self.arch)
        items = trans_hazards(items, self.arch)
        items = relax_branches(items, self.arch.name)
        s, v = _counts(items)
        flat = [kd.local_size[0] * kd.local_size[1] * kd.local_size[2]]
        kd.target = {"amd": {
            "arch": self.arch.name, "wave_size": self.arch.wave,
            "kernarg_size": sel.kernarg_size, "kernarg_align": 8,
            "kernarg_offsets": [off for off, _ in sel.kernarg],
            "sgpr_count": s, "vgpr_count": max(v, 1), "lds_bytes": sel.lds_bytes,
            "grid": kd.global_size, "block": kd.local_size,
            "workgroup_size": flat[0]}}
        if spills.scratch_bytes:
            # only a kernel that spills VGPRs has the fact (the others' manifests unchanged)
            kd.target["amd"]["scratch_bytes"] = spills.scratch_bytes
        return AmdCode(kd.name, items, self.arch, s, max(v, 1), sel, kd, listing(items),
                       spills)

    def listing(self, stage: str, state: Any) -> str:
        if stage in ("select", "allocate"):
            return format_mir(state[0].fn)
        return "\n".join([f"{state.name}:"] + state.asm) + "\n"


def compile_amd_code(sinks: list[UOp], arch: str = DEFAULT_ARCH,
                     dump_after: str | None = None, out: Any = None) -> list[AmdCode]:
    """Run the pipeline for every kernel; the per-kernel code before packaging."""
    from kcc.targets.manifest import duplicate_name
    from kcc.targets.pipeline import run_pipeline
    target = AmdTarget(arch)
    dup = duplicate_name(sinks)
    if dup:
        raise AmdSelectError(f"two kernels are named {dup!r}; symbols must be unique")
    return [run_pipeline(s, target, dump_after, out) for s in sinks]


# -- the registry entry ---------------------------------------------------------------------

def amd_kernel(c: AmdCode, machine: bytes = b"") -> Any:
    """The kernel as kcc.targets.amd.hsaco packages it (descriptor facts, metadata arguments)."""
    from kcc.encode.amd.operands import Special
    from kcc.targets.amd.hsaco import AmdKernel, KernelArg
    f = c.desc.target["amd"]
    args = []
    for a, (off, size) in zip(c.desc.args, c.sel.kernarg):
        name = a.name or f"arg{a.slot}"
        if a.kind == "buffer":
            args.append(KernelArg(name, off, 8))
        else:
            args.append(KernelArg(name, off, size, "by_value", None))
    uses_vcc = any(isinstance(o, Special) and o.name.startswith("vcc")
                   for it in c.items if not isinstance(it, Label) for o in it.ops)
    return AmdKernel(
        c.name, machine, next_free_vgpr=c.vgprs, next_free_sgpr=max(c.sgprs, 1),
        args=tuple(args), kernarg_size=f["kernarg_size"], kernarg_align=8,
        group_segment_size=f["lds_bytes"], uses_vcc=uses_vcc,
        private_segment_size=c.spills.scratch_bytes, sgpr_spill_count=c.spills.sgpr,
        vgpr_spill_count=c.spills.vgpr,
        workgroup_ids=c.sel.workgroup_ids, workitem_ids=c.sel.workitem_ids,
        max_flat_workgroup_size=max(f["workgroup_size"], 1), asm=tuple(c.asm))


def assembly(codes: list[AmdCode]) -> str:
    """LLVM-syntax assembly with each kernel's `.amdhsa_kernel` block and the
    `.amdgpu_metadata` (kcc.targets.amd.asm): llvm-mc + ld.lld build a code object from it."""
    from kcc.targets.amd.asm import write_asm
    return write_asm([amd_kernel(c) for c in codes], codes[0].arch.name)


def has_encoder() -> bool:
    """Whether kcc's AMD encoder (kcc.encode.amd.encoder) is present, so HSACO can be written."""
    import importlib.util
    return importlib.util.find_spec("kcc.encode.amd.encoder") is not None


class AmdSpec(TargetSpec):
    """AMD GPUs: gfx1100 (RDNA3, wave32) and gfx942 (CDNA3, wave64)."""

    name = "amd"
    summary = "AMD GPU assembly (gfx1100 wave32, gfx942 wave64)"
    arches = tuple(ARCHES)
    default_arch = DEFAULT_ARCH
    emits = ((Emit("hsaco", ".hsaco", True),) if has_encoder() else ()) + \
        (Emit("asm", ".s", False),)

    def compile(self, sinks: list[UOp], arch: str, emit: str, dump_after: str | None = None,
                out: Any = None) -> Compiled:
        from kcc.passes.decompose import DecomposeError
        self.check_arch(arch)
        self.emit(emit)
        try:
            codes = compile_amd_code(sinks, arch, dump_after, out)
        except (AmdSelectError, DecomposeError) as e:
            raise CompileError(str(e)) from None
        data = hsaco(codes) if emit == "hsaco" else assembly(codes).encode()
        return Compiled(data, [c.desc for c in codes], arch, emit)

    lists = "an AMD code object (.hsaco)"

    def launch(self, data: bytes, desc: KernelDesc, values: list[Any]) -> None:
        """On an AMD GPU through HIP; without one, a LaunchError pointing to --emulate."""
        from kcc.targets.amd.hip_driver import HipError, HipUnavailable, launch_hip
        if not data.startswith(b"\x7fELF"):
            raise LaunchError("this is AMD assembly, not a code object: compile with "
                              "--emit hsaco to run it")
        self.check_facts(data, desc)
        try:
            launch_hip(data, desc, values)
        except HipUnavailable as e:
            raise LaunchError(f"cannot run on an AMD GPU here ({e}); use --emulate to run "
                              "the code object in kcc's AMD emulator") from None
        except HipError as e:
            raise LaunchError(f"HIP refused the launch: {e}") from None

    def emulate(self, data: bytes, desc: KernelDesc, values: list[Any]) -> None:
        """Run in kcc's emulator (kcc.targets.amd.emu.core); what it refuses is a LaunchError."""
        from kcc.targets.amd.emu.core import EmuError
        from kcc.targets.amd.hsaco_read import HsacoReadError
        if not data.startswith(b"\x7fELF"):
            raise LaunchError("this is AMD assembly, not a code object: compile with "
                              "--emit hsaco to emulate it")
        self.check_facts(data, desc)
        if not has_encoder():
            raise LaunchError("the AMD emulator needs kcc's AMD decoder (kcc.encode.amd.encoder), "
                              "which is not in this build")
        try:
            emulate(data, desc, values)
        except (EmuError, HsacoReadError) as e:
            raise LaunchError(f"AMD emulator: {e}") from None

    def describe(self, data: bytes) -> list[dict[str, Any]] | None:
        """The launch facts of the code object's .note.kcc (FactsError without one)."""
        return read_object_facts(data, "AMD code object", "code object")

    def claims(self, data: bytes, path: str) -> bool:
        from kcc.targets.amd.hsaco_read import is_hsaco
        return is_hsaco(data)

    def disasm(self, data: bytes, att: bool = False) -> str:
        """Each kernel's launch facts and instructions, from kcc's decoder."""
        from kcc.targets.amd.hsaco_read import HsacoReadError, listing
        if not has_encoder():
            raise DisasmError("listing AMD code needs kcc's AMD decoder (kcc.encode.amd.encoder), "
                              "which is not in this build")
        try:
            return listing(data)
        except HsacoReadError as e:
            raise DisasmError(str(e)) from None


TARGET = AmdSpec()


# -- code objects and running (the encoder, HSACO writer and emulator of issue 9) --------------

def _branch_text(name: str, offset: int) -> str:
    return f"{name} {offset}"


# A SOPP branch reaches SIMM16 dwords from the next instruction: [-32768, 32767] (RDNA3 ISA
# §5.5 / CDNA3 ISA §4.5); the widest instruction kcc emits is 12 bytes (a VOP3 and a literal)
_REACH = 32767
_WIDEST = 12
_INVERSE = {"s_cbranch_scc0": "s_cbranch_scc1", "s_cbranch_scc1": "s_cbranch_scc0",
            "s_cbranch_vccz": "s_cbranch_vccnz", "s_cbranch_vccnz": "s_cbranch_vccz",
            "s_cbranch_execz": "s_cbranch_execnz", "s_cbranch_execnz": "s_cbranch_execz"}


def relax_branches(items: list[Inst | Label], arch: str) -> list[Inst | Label]:
    """``items`` with every branch within the reach of its 16-bit offset.

    A kernel whose code cannot reach 128 KiB (most) is returned as it is. Otherwise, while a
    branch lies out of reach: a conditional one becomes the inverted condition over an
    ``s_branch`` to the target; an ``s_branch`` is sent to an island placed within its reach
    toward the target — ``s_branch over; island: s_branch target; over:`` — which the code
    falling through skips. No register is needed (a far jump through s_setpc_b64 would need
    an SGPR pair after allocation). Each pass moves a branch at least ~128 KiB closer, so it
    ends."""
    if _WIDEST * len(items) <= 4 * _REACH:
        return items
    from kcc.encode.amd import encode, parse_inst
    from kcc.isel.amd.lower import inst_text
    out = list(items)
    size: dict[int, int] = {}

    def nbytes(it: Inst | Label) -> int:
        if isinstance(it, Label):
            return 0
        if it.mod("target") is not None:
            return 4
        n = size.get(id(it))
        if n is None:
            n = size[id(it)] = len(encode(arch, parse_inst(arch, inst_text(it))))
        return n

    fresh = 0
    while True:
        pos, at, labels = [], 0, {}
        for it in out:
            pos.append(at)
            if isinstance(it, Label):
                labels[it.name] = at
            at += nbytes(it)
        far = next((k for k, it in enumerate(out) if isinstance(it, Inst)
                    and it.mod("target") is not None
                    and not -_REACH - 1 <= (labels[str(it.mod("target"))] - pos[k] - 4) // 4
                    <= _REACH), None)
        if far is None:
            return out
        br = out[far]
        assert isinstance(br, Inst)
        target = str(br.mod("target"))
        fresh += 1
        if br.name != "s_branch":
            skip = f".Lfar{fresh}_skip"
            out[far:far + 1] = [Inst(_INVERSE[br.name], (), (("target", skip),)),
                                Inst("s_branch", (), (("target", target),)), Label(skip)]
            continue
        island, over = f".Lfar{fresh}_island", f".Lfar{fresh}_over"
        margin = 4 * _REACH - 64                 # room for the island itself
        if labels[target] > pos[far]:
            j = max(k for k in range(far + 1, len(out)) if pos[k] - pos[far] <= margin)
        else:
            j = min(k for k in range(far + 1) if pos[far] - pos[k] <= margin)
        out[far] = Inst("s_branch", (), (("target", island),))
        out[j:j] = [Inst("s_branch", (), (("target", over),)), Label(island),
                    Inst("s_branch", (), (("target", target),)), Label(over)]


def machine_code(code: AmdCode) -> bytes:
    """The kernel's bytes: every instruction through the encoder (parsed from the listing's
    LLVM syntax), branches resolved to SOPP word offsets from the next instruction."""
    from kcc.encode.amd import encode
    from kcc.encode.amd.syntax import parse_inst
    from kcc.isel.amd.lower import inst_text
    arch = code.arch.name
    sizes: list[int] = []
    enc: list[bytes | None] = []
    labels: dict[str, int] = {}
    pos = 0
    for it in code.items:
        if isinstance(it, Label):
            labels[it.name] = pos
            enc.append(None)
            sizes.append(0)
            continue
        if it.mod("target") is not None:
            enc.append(None)
            sizes.append(4)                   # SOPP: one dword
        else:
            b = encode(arch, parse_inst(arch, inst_text(it)))
            enc.append(b)
            sizes.append(len(b))
        pos += sizes[-1]
    out = bytearray()
    for it, b in zip(code.items, enc):
        if isinstance(it, Label):
            continue
        if b is None:
            off = (labels[it.mod("target")] - (len(out) + 4)) // 4
            if not -_REACH - 1 <= off <= _REACH:  # (relax_branches keeps every one in reach)
                raise ValueError(f"{it.name} to {it.mod('target')}: {off} dwords is out of "
                                 "reach of a SOPP offset")
            b = encode(arch, parse_inst(arch, _branch_text(it.name, off)))
        out += b
    return bytes(out)


def hsaco(codes: list[AmdCode]) -> bytes:
    """One code object (kcc.targets.amd.hsaco) holding the kernels and, in its `.note.kcc`, their
    launch facts with the AMD target facts (kcc.targets.facts)."""
    from kcc.targets.amd.hsaco import write_hsaco
    from kcc.targets.facts import elf_note
    return write_hsaco([amd_kernel(c, machine_code(c)) for c in codes], codes[0].arch.name,
                       elf_note([c.desc for c in codes]))


def emulate(data: bytes, desc: KernelDesc, values: list[Any]) -> None:
    """Run one kernel of a code object in kcc's AMD emulator (values normalized by
    manifest.check_launch; buffers updated in place). A scalar below 4 bytes goes in as an
    integer (its kernarg slot is 4 bytes, kernarg_layout)."""
    import numpy as np

    from kcc.targets.amd.emu.core import run_hsaco
    args: list[Any] = []
    for a, v in zip(desc.args, values):
        if a.kind == "buffer":
            args.append(v)
        elif np.asarray(v).dtype.itemsize < 4:
            x = np.asarray(v)
            args.append(int(x.view(f"u{x.dtype.itemsize}")) if x.dtype.kind in "fb"
                        else int(x))
        else:
            args.append(np.asarray(v))
    grid, block = desc.launch_dims(values)       # symbolic sizes: evaluated per launch
    if 0 not in grid:                            # a dimension of 0 launches nothing
        run_hsaco(data, desc.name, args, tuple(grid), tuple(block))
