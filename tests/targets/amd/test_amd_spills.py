"""AMD register spills (issue 20): a kernel that needs more SGPRs or VGPRs than the arch has
is compiled, not refused. SGPRs spill to lanes of a reserved VGPR (v_writelane/v_readlane),
VGPRs to the private segment (scratch_store/scratch_load); kcc's emulator runs the code
object against the reference interpreter, the allocation checker verifies every spill and fill
(and rejects corrupted ones), llvm-mc-19 assembles the `--emit asm` text and llvm-readelf-19
shows the private segment size in the metadata."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from amd_util import needs_llvm19
from x86_util import assert_same, random_inputs, reference

from kcc.encode.amd.operands import VGPR, Imm, Inst, Special
from kcc.frontend.parser import parse
from kcc.ir.mir import Inst as MInst
from kcc.ir.mir import Kind, PReg, RegOp, Role
from kcc.isel.amd.regs import ARCHES, SCRATCH_REACH, AmdRegInfo, SpillAreaError
from kcc.regalloc import CheckError, check_allocation
from kcc.targets.amd.target import (
    AmdTarget,
    allocate_spilling,
    compile_amd_code,
    emulate,
    hsaco,
)
from kcc.targets.amd.emu.core import WAVE, EmuError, Memory, Wave, Workgroup, execute
from kcc.targets.manifest import check_launch

ARCHS = ("gfx1100", "gfx942")


def vgpr_kernel(n: int = 270, lanes: int = 48) -> str:
    """n float32 values live at once in each of ``lanes`` work-items (a REG buffer written in
    order, read back reversed): more than the 256 VGPRs. 48 work-items: a partial second wave
    on gfx1100, a partial EXEC on gfx942, so scratch is per lane and under EXEC."""
    lines = ["# kcc-uop 1", f"%o = PARAM ParamArg(0, float32, {n * lanes})",
             f"%x = PARAM ParamArg(1, float32, {n * lanes})",
             f"%r = BUFFER ParamArg(2, float32, {n}, addrspace=REG)",
             f'%l = SPECIAL({lanes}) "lidx0" : weakint']
    for k in range(n):
        lines += [f"%a{k} = ADD(%l, {k * lanes}) : weakint", f"%i{k} = INDEX(%x, %a{k})",
                  f"%v{k} = LOAD(%i{k}) : float32",
                  f"%p{k} = INDEX(%r, {k})", f"%w{k} = STORE(%p{k}, %v{k})"]
    lines.append(f"%all = GROUP({', '.join(f'%w{k}' for k in range(n))})")
    lines.append("%ra = AFTER(%r, %all)")
    for k in range(n):
        lines += [f"%q{k} = INDEX(%ra, {n - 1 - k})", f"%u{k} = LOAD(%q{k}) : float32",
                  f"%j{k} = INDEX(%o, %a{k})", f"%t{k} = STORE(%j{k}, %u{k})"]
    lines.append(f"%g = GROUP({', '.join(f'%t{k}' for k in range(n))})")
    lines.append('SINK(%g) KernelInfo(name="vgprs")')
    return "\n".join(lines) + "\n"


def sgpr_kernel(n: int = 120) -> str:
    """n int32 scalar arguments (SGPRs, loaded at entry) all read again in every iteration of
    a loop: more than the 104 (gfx1100) / 100 (gfx942) SGPRs."""
    lines = ["# kcc-uop 1", "%o = PARAM ParamArg(0, int32, 64)"]
    lines += [f"%s{k} = PARAM ParamArg({k + 1}, int32, addrspace=ALU)" for k in range(n)]
    lines += ['%l = SPECIAL(64) "lidx0" : weakint', "%li = CAST(%l) int32",
              "%r = RANGE(3) (0, LOOP) : weakint", "%ri = CAST(%r) int32",
              "%a0 = MUL(%s0, %ri) : int32"]
    for k in range(1, n):
        lines.append(f"%a{k} = {['ADD', 'XOR', 'MUL'][k % 3]}(%a{k - 1}, %s{n - k}) : int32")
    lines += [f"%v = ADD(%a{n - 1}, %li) : int32", "%oi = INDEX(%o, %l)",
              "%old = LOAD(%oi) : int32", "%nv = ADD(%old, %v) : int32",
              "%st = STORE(%oi, %nv)", "%e = END(%st, %r)", 'SINK(%e) KernelInfo(name="sgprs")']
    return "\n".join(lines) + "\n"


def wide_kernel(ns: int = 56, nv: int = 140) -> str:
    """ns int64 scalar arguments (SGPR pairs) read in a loop and nv float64 values (VGPR
    pairs) live at once in each of 8 work-items: both register files overflow with 64-bit
    values. (Every work-item stores the same q[l], the loop's result.)"""
    lines = ["# kcc-uop 1", f"%o = PARAM ParamArg(0, float64, {nv * 8})",
             f"%x = PARAM ParamArg(1, float64, {nv * 8})", "%q = PARAM ParamArg(2, int64, 4)",
             f"%r = BUFFER ParamArg({ns + 3}, float64, {nv}, addrspace=REG)",
             '%w = SPECIAL(8) "lidx0" : weakint']
    lines += [f"%s{k} = PARAM ParamArg({k + 3}, int64, addrspace=ALU)" for k in range(ns)]
    for k in range(nv):
        lines += [f"%c{k} = ADD(%w, {k * 8}) : weakint", f"%i{k} = INDEX(%x, %c{k})",
                  f"%v{k} = LOAD(%i{k}) : float64",
                  f"%p{k} = INDEX(%r, {k})", f"%w{k} = STORE(%p{k}, %v{k})"]
    lines.append(f"%all = GROUP({', '.join(f'%w{k}' for k in range(nv))})")
    lines.append("%ra = AFTER(%r, %all)")
    for k in range(nv):
        lines += [f"%g{k} = INDEX(%ra, {nv - 1 - k})", f"%u{k} = LOAD(%g{k}) : float64",
                  f"%j{k} = INDEX(%o, %c{k})", f"%t{k} = STORE(%j{k}, %u{k})"]
    lines += ["%l = RANGE(4) (0, LOOP) : weakint", "%li = CAST(%l) int64",
              "%a0 = MUL(%s0, %li) : int64"]
    for k in range(1, ns):
        lines.append(f"%a{k} = {['ADD', 'XOR'][k % 2]}(%a{k - 1}, %s{ns - k}) : int64")
    lines += ["%qi = INDEX(%q, %l)", f"%qs = STORE(%qi, %a{ns - 1})", "%qe = END(%qs, %l)",
              f"%g = GROUP({', '.join(f'%t{k}' for k in range(nv))}, %qe)",
              'SINK(%g) KernelInfo(name="wide")']
    return "\n".join(lines) + "\n"


def buffers_kernel(n: int = 60) -> str:
    """n input buffers read in every iteration of a loop: their base addresses (SGPR pairs,
    the SADDR of each global_load) need more SGPRs than the arch has, so a load's address
    comes from a fill just before it (on gfx942 five wait states after the v_readlane)."""
    lines = ["# kcc-uop 1", "%o = PARAM ParamArg(0, float32, 64)"]
    lines += [f"%b{k} = PARAM ParamArg({k + 1}, float32, 64)" for k in range(n)]
    lines += ['%l = SPECIAL(16) "lidx0" : weakint', "%r = RANGE(4) (0, LOOP) : weakint",
              "%m = MUL(%r, 16) : weakint", "%ix = ADD(%m, %l) : weakint"]
    for k in range(n):
        lines += [f"%i{k} = INDEX(%b{k}, %ix)", f"%x{k} = LOAD(%i{k}) : float32"]
    lines.append("%a0 = ADD(%x0, %x1) : float32")
    lines += [f"%a{k - 1} = ADD(%a{k - 2}, %x{k}) : float32" for k in range(2, n)]
    lines += ["%oi = INDEX(%o, %ix)", f"%st = STORE(%oi, %a{n - 2})", "%e = END(%st, %r)",
              'SINK(%e) KernelInfo(name="bufs")']
    return "\n".join(lines) + "\n"


KERNELS = {"vgprs": vgpr_kernel, "sgprs": sgpr_kernel, "wide": wide_kernel,
           "buffers": buffers_kernel}
# what each kernel must spill: (SGPRs to lanes, VGPRs to scratch)
SPILLS = {"vgprs": (False, True), "sgprs": (True, False), "wide": (True, True),
          "buffers": (True, False)}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kind", list(KERNELS))
def test_spilling_kernel_runs_in_the_emulator_like_the_interpreter(kind: str,
                                                                    arch: str) -> None:
    """Before spilling existed each of these was 'kernel too large for AMD'."""
    sink = parse(KERNELS[kind]())
    (code,) = compile_amd_code([sink], arch)       # KCC_CHECK_ALLOC=1: the checker ran
    text = "\n".join(code.asm)
    lanes, scratch = SPILLS[kind]
    assert ("v_writelane_b32" in text and "v_readlane_b32" in text) == lanes
    assert ("scratch_store" in text and "scratch_load" in text) == scratch
    assert (code.spills.scratch_bytes > 0) == scratch and (code.spills.sgpr > 0) == lanes
    assert code.vgprs <= 256 and code.sgprs <= ARCHES[arch].sgprs
    if arch == "gfx942" and lanes:                # CDNA3 wait states around each fill
        assert re.search(r"v_readlane_b32 s\d+, v\d+, \d+\n\s+s_nop 4", text)
    data = hsaco([code])
    args = random_inputs(sink, 0)
    want = reference(sink, args)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    emulate(data, code.desc, check_launch(code.desc, got))
    assert_same(sink, got, want)


@needs_llvm19
@pytest.mark.parametrize("arch", ARCHS)
def test_spills_assemble_and_readelf_shows_the_private_segment(arch: str,
                                                                tmp_path: Path) -> None:
    """`--emit asm` assembles with llvm-mc-19 + ld.lld-19 to the same .text and descriptor
    as kcc's own code object; llvm-readelf-19 shows .private_segment_fixed_size and the
    spill counts in the metadata note, and the descriptor's PRIVATE_SEGMENT_FIXED_SIZE and
    ENABLE_PRIVATE_SEGMENT are set."""
    from kcc.targets.amd.target import assembly
    from kcc.targets.amd.hsaco_read import read_hsaco
    (code,) = compile_amd_code([parse(wide_kernel())], arch)
    size = code.spills.scratch_bytes
    (tmp_path / "k.s").write_text(assembly([code]))
    subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}",
                    "-filetype=obj", str(tmp_path / "k.s"), "-o", str(tmp_path / "k.o")],
                   check=True)
    subprocess.run(["ld.lld-19", "-shared", str(tmp_path / "k.o"), "-o",
                    str(tmp_path / "llvm.hsaco")], check=True)
    (tmp_path / "kcc.hsaco").write_bytes(hsaco([code]))
    for name in ("kcc.hsaco", "llvm.hsaco"):
        notes = subprocess.run(["llvm-readelf-19", "--notes", str(tmp_path / name)],
                               capture_output=True, text=True, check=True).stdout
        assert re.search(rf"\.private_segment_fixed_size:\s+{size}\b", notes), notes
        assert re.search(rf"\.vgpr_spill_count:\s+{code.spills.vgpr}\b", notes), notes
        assert re.search(rf"\.sgpr_spill_count:\s+{code.spills.sgpr}\b", notes), notes
        k = read_hsaco((tmp_path / name).read_bytes()).kernels["wide"]
        assert k.descriptor.private_segment_size == size and k.descriptor.private_segment
    ours = read_hsaco((tmp_path / "kcc.hsaco").read_bytes())
    theirs = read_hsaco((tmp_path / "llvm.hsaco").read_bytes())
    assert ours.code("wide") == theirs.code("wide")
    mine, llvm = ours.kernels["wide"].descriptor, theirs.kernels["wide"].descriptor
    assert replace(mine, entry_offset=0) == replace(llvm, entry_offset=0)  # (layouts differ)


@pytest.mark.parametrize("arch", ARCHS)
def test_spill_area_past_a_scratch_offset_runs_like_the_interpreter(arch: str,
                                                                    tmp_path: Path) -> None:
    """A spill area larger than a scratch instruction's offset reaches (4 KiB per work-item:
    once 'kernel too large for AMD'): the far slots are addressed from the frame SGPR
    (SADDR, set by s_movk_i32 just before), the descriptor's private segment covers them,
    the checker verified the allocation, the emulator runs it like the interpreter and, with
    LLVM 19, llvm-mc assembles the `--emit asm` text to the same code and private segment."""
    from amd_util import HAVE_LLVM19, llvm_link

    from kcc.targets.amd.hsaco_read import read_hsaco
    from kcc.targets.amd.target import assembly
    sink = parse(vgpr_kernel(700, lanes=40))
    (code,) = compile_amd_code([sink], arch)       # KCC_CHECK_ALLOC=1: the checker ran
    text = "\n".join(code.asm)
    assert code.spills.scratch_bytes > SCRATCH_REACH
    far = re.findall(r"s_movk_i32 (s\d+), 0x1000\n\s+scratch_(?:store|load)_\w+ "
                     r"[^\n]*, (s\d+) offset:(\d+)", text)
    assert far and all(a == b and int(o) < SCRATCH_REACH for a, b, o in far)
    assert code.sgprs <= ARCHES[arch].sgprs
    data = hsaco([code])
    d = read_hsaco(data).kernels["vgprs"].descriptor
    assert d.private_segment and d.private_segment_size == code.spills.scratch_bytes
    args = random_inputs(sink, 0)
    want = reference(sink, args)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    emulate(data, code.desc, check_launch(code.desc, got))
    assert_same(sink, got, want)
    if HAVE_LLVM19:
        theirs = read_hsaco(llvm_link(tmp_path, arch, assembly([code])))
        assert theirs.code("vgprs") == read_hsaco(data).code("vgprs")
        assert theirs.kernels["vgprs"].descriptor.private_segment_size == d.private_segment_size


def test_cli_run_check_emulate_a_spilling_kernel(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kcc.cli import main
    src = tmp_path / "K.uop"
    src.write_text(sgpr_kernel(110))
    r = CliRunner().invoke(main, ["run", str(src), "-t", "amd", "--arch", "gfx942", "--check",
                                  "--emulate", "-o", str(tmp_path / "out")])
    assert r.exit_code == 0 and "amd matches the interpreter" in r.output, r.output


class _Keep(AmdTarget):
    """The AMD target, keeping what its allocate step was given and made."""

    def allocate(self, state):
        out = super().allocate(state)
        self.before, self.after = state[0].fn, out[0].fn
        return out


def _allocated(text: str, arch: str):
    """The selected function of a kernel, its allocation (spills included, checked) and the
    register info it was allocated with."""
    from kcc.targets.pipeline import run_pipeline
    target = _Keep(arch)
    run_pipeline(parse(text), target)
    fn, info = allocate_spilling(target.before, target.arch, "k")
    check_allocation(target.before, fn, info)
    return target.before, fn, info


def _replace(fn, i: int, inst: MInst):
    insts = list(fn.insts)
    insts[i] = inst
    return replace(fn, insts=insts)


@pytest.mark.parametrize("arch", ARCHS)
def test_checker_rejects_corrupted_spills(arch: str) -> None:
    """The allocation checker verifies every spill and fill: a fill from another slot, a
    scratch fill from another offset and a write of the lane VGPR between an SGPR spill and
    its fill are each rejected."""
    before, fn, info = _allocated(wide_kernel(), arch)
    fills = [i for i, x in enumerate(fn.insts) if x.kind is Kind.FILL]
    sfill = next(i for i in fills if fn.insts[i].op == ".fill_s")
    vfill = next(i for i in fills if fn.insts[i].op == ".fill_v")
    slots = {(x.slot, x.op) for x in fn.insts if x.kind is Kind.SPILL}
    # (1) an SGPR fill reading another SGPR slot (its own lane VGPR, another lane)
    x = fn.insts[sfill]
    other = next(s for s, op in sorted(slots) if op == ".spill_s" and s != x.slot
                 and s % x.arg[0] == 0 and s // 4 // WAVE[arch] == x.slot // 4 // WAVE[arch])
    bad = replace(x, slot=other, arg=(x.arg[0], other // 4 % WAVE[arch]))
    with pytest.raises(CheckError):
        check_allocation(before, _replace(fn, sfill, bad), info)
    # (2) a VGPR fill from another scratch offset
    x = fn.insts[vfill]
    other = next(s for s, op in sorted(slots) if op == ".spill_v" and s != x.slot
                 and s % x.arg[0] == 0)
    with pytest.raises(CheckError):
        check_allocation(before, _replace(fn, vfill, replace(x, slot=other)), info)
    # (3) the lane VGPR overwritten (a copy into it) right before an SGPR fill
    x = fn.insts[sfill]
    home = x.operands[1].reg
    clobber = MInst("copy", [RegOp(home, Role.DEF), RegOp(PReg("v0", "v"), Role.USE)],
                    kind=Kind.MOVE)
    insts = list(fn.insts)
    insts.insert(sfill, clobber)
    with pytest.raises(CheckError, match="holding nothing"):
        check_allocation(before, replace(fn, insts=insts), info)
    # (4) a fill that names another lane VGPR than the spills of its slot
    moved = replace(x, operands=[x.operands[0], RegOp(PReg("v3", "v"), Role.USE)])
    with pytest.raises(CheckError, match="kept in"):
        check_allocation(before, _replace(fn, sfill, moved), info)


def test_far_slots_clobber_the_frame_sgpr_and_past_the_hardware_a_clear_error() -> None:
    """A VGPR slot within a scratch offset's reach names no register; past it, the frame
    SGPR (after ``far`` says one is needed); past the private segment the hardware gives a
    work-item, a clear error."""
    info = AmdRegInfo(ARCHES["gfx1100"], "big")
    assert not info.make_spill("v", PReg("v1", "v"), SCRATCH_REACH - 4, 4).clobbers
    assert not info.far
    info.make_spill("v", PReg("v1", "v"), SCRATCH_REACH, 4)
    assert info.far
    info = AmdRegInfo(ARCHES["gfx942"], "big", base=99)
    assert "s99" not in {p.name for p in info.classes["s"]}
    assert {p.name for p in info.classes["s2"]} >= {"s[96:97]"}
    assert "s[98:99]" not in {p.name for p in info.classes["s2"]}
    far = info.make_fill("v", PReg("v1", "v"), SCRATCH_REACH + 16, 4)
    assert far.clobbers == (PReg("s99", "s"),)
    top = ARCHES["gfx942"].scratch_max
    info.make_spill("v", PReg("v1", "v"), top - 4, 4)           # the last dword the hardware has
    with pytest.raises(SpillAreaError, match="kernel too large for AMD: 'big'.*131056 bytes"):
        info.make_spill("v", PReg("v1", "v"), top, 4)


def test_lane_vgprs_leave_the_vgpr_classes() -> None:
    info = AmdRegInfo(ARCHES["gfx942"], "k", lanes=(10, 11))
    names = {p.name for cls in ("v", "v2", "v4") for p in info.classes[cls]}
    assert not {"v10", "v11", "v[10:11]", "v[8:11]", "v[10:13]"} & names
    assert {"v9", "v12", "v[8:9]", "v[12:13]", "v[12:15]"} <= names


# -- the emulator's private segment ----------------------------------------------------------

def _wave(arch: str, size: int, active: int) -> Wave:
    w = Wave(arch, 16, WAVE[arch])
    w.scratch = np.full((WAVE[arch], size), 0xA5, np.uint8)
    w.set_exec((1 << active) - 1)
    return w


def _run(w: Wave, *insts: Inst) -> None:
    wg = Workgroup(np.zeros(16, np.uint8), Memory())
    for inst in insts:
        w.pc, w.next_pc = 0x1000, 0x1008
        execute(w, inst, wg)


@pytest.mark.parametrize("arch", ARCHS)
def test_emulated_scratch_is_private_per_lane(arch: str) -> None:
    """Each lane has its own private segment at the same offsets; only active lanes store
    and load; a load is pending until s_waitcnt vmcnt."""
    n = WAVE[arch]
    store = "scratch_store_dwordx2" if arch == "gfx942" else "scratch_store_b64"
    load = "scratch_load_dwordx2" if arch == "gfx942" else "scratch_load_b64"
    off = Special("off")
    w = _wave(arch, 64, n)
    w.v[2] = np.arange(n)
    w.v[3] = np.arange(n) + 1000
    _run(w, Inst(store, (off, VGPR(2, 2), off), (("offset", 8),)))
    w.set_exec((1 << 3) - 1)                       # three lanes
    w.v[2] = 7
    w.v[3] = 7
    _run(w, Inst(store, (off, VGPR(2, 2), off), (("offset", 8),)))
    w.set_exec((1 << n) - 1)
    _run(w, Inst(load, (VGPR(4, 2), off, off), (("offset", 8),)))
    with pytest.raises(EmuError, match="s_waitcnt"):
        _run(w, Inst("v_mov_b32", (VGPR(6), VGPR(4))))
    _run(w, Inst("s_waitcnt", (Imm(0),)))
    assert w.v[4].tolist() == [7] * 3 + list(range(3, n))
    assert w.v[5].tolist() == [7] * 3 + [k + 1000 for k in range(3, n)]
    assert bytes(w.scratch[0, :8]) == b"\xa5" * 8   # untouched bytes keep the pattern


@pytest.mark.parametrize("arch", ARCHS)
def test_emulated_scratch_outside_the_private_segment_is_an_error(arch: str) -> None:
    load = "scratch_load_dword" if arch == "gfx942" else "scratch_load_b32"
    off = Special("off")
    w = _wave(arch, 16, 1)
    _run(w, Inst(load, (VGPR(1), off, off), (("offset", 12),)))   # the last dword: fine
    with pytest.raises(EmuError, match="outside the 16-byte private segment"):
        _run(w, Inst(load, (VGPR(2), off, off), (("offset", 16),)))
    w.scratch = None
    with pytest.raises(EmuError, match="no private segment"):
        _run(w, Inst(load, (VGPR(3), off, off), (("offset", 0),)))


@pytest.mark.parametrize("arch", ARCHS)
def test_far_slots_past_32_kib_set_the_frame_sgpr_with_a_literal(arch: str) -> None:
    """A slot past s_movk_i32's 16-bit reach gets its base from s_mov_b32 with a literal;
    the lowered spill and fill run in the emulator (SADDR + OFFSET per lane) and the fill
    reloads what the spill stored, at the slot's address."""
    from kcc.isel.amd.lower import Lowering
    s9, v2, v4 = PReg("s9", "s"), PReg("v2", "v"), PReg("v4", "v")
    slot = 40000                                       # 36864 + 3136
    spill = MInst(".spill_v", [RegOp(v2, Role.USE)], (s9,), kind=Kind.SPILL, arg=(4, 0),
                  slot=slot)
    fill = MInst(".fill_v", [RegOp(v4, Role.DEF)], (s9,), kind=Kind.FILL, arg=(4, 0),
                 slot=slot)
    low = Lowering(ARCHES[arch])
    low.slot(spill)
    low.slot(fill)
    names = [(i.name, i.mod("offset")) for i in low.out]
    assert names[0] == ("s_mov_b32", None) and low.out[0].ops[1] == Imm(36864)
    assert names[1][1] == names[3][1] == 3136 and low.out[1].ops[2] == low.out[3].ops[2]
    n = WAVE[arch]
    w = _wave(arch, slot + 16, n)
    w.v[2] = np.arange(n) + 7
    _run(w, *low.out, Inst("s_waitcnt", (Imm(0),)))
    assert w.v[4].tolist() == list(range(7, n + 7))
    assert w.scratch[1, slot:slot + 4].view(np.uint32)[0] == 8     # lane 1's own segment
    with pytest.raises(ValueError, match="without the frame SGPR"):  # a far slot needs it
        Lowering(ARCHES[arch]).slot(replace(fill, clobbers=()))
