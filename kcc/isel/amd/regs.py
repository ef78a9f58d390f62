"""AMD GPU registers as the selector and the linear-scan allocator see them, per arch.

Register classes (a class is one value's register or aligned tuple):
  s, s2, s4: an SGPR, an even-aligned SGPR pair, a 4-aligned SGPR quad (SMEM and 64-bit SALU
             operands must be aligned: RDNA3 ISA §3.3.1 / CDNA3 ISA §3.3, SGPR alignment);
  v, v2, v4, v8: a VGPR, and VGPR pairs/quads/octets starting at an even VGPR (CDNA3 requires
             even-aligned VGPR tuples, §3.6.4; RDNA3 does not, and the same rule keeps one
             allocator); v8 holds a WMMA fragment (kcc/isel/amd/matrix.py).
A lane mask (a per-lane bool, EXEC, a carry) is one SGPR in wave32 and a pair in wave64.

The tuple `s[4:5]` consists of the units s4 and s5 (`reg_units`), so the allocator sees that it
conflicts with s4, s5 and with `s[4:7]`.

Spills (when a kernel needs more registers than the arch has): the allocator's frame is one
byte-addressed area; a slot of `size` bytes at frame offset `off` lives
- for an SGPR value, in lanes off/4 … off/4 + size/4 - 1 of the *lane VGPRs* (lane L is lane
  L % wave of VGPR `lane_vgprs[L // wave]`): `v_writelane_b32` stores each dword, `v_readlane_b32`
  reloads it (RDNA3 ISA §6.6 / CDNA3 ISA §6.5: both ignore EXEC, so a spill inside a gated
  region keeps every dword). The lane VGPRs are taken out of the allocatable classes
  (`AmdRegInfo(lanes=...)`; kcc/targets/amd/target.py reserves them after a first allocation shows
  how many dwords the SGPR slots need);
- for a VGPR value, at byte `off` of each work-item's private segment (scratch), stored and
  loaded with `scratch_store`/`scratch_load` in the form that names no address register
  (`scratch_store_dword off, v1, off offset:N`; AMDGPUUsage: gfx1100 and gfx942 have
  *architected flat scratch*: the hardware sets FLAT_SCRATCH from the dispatch when the
  descriptor's ENABLE_PRIVATE_SEGMENT is set, so no prologue is needed). Under a narrowed EXEC
  only the active lanes are stored and reloaded, which are the lanes the value has there.
  The OFFSET immediate reaches bytes 0 … 4095 (`SCRATCH_REACH`); a slot past it is addressed
  from the *frame SGPR*, which holds the slot's 4 KiB-aligned base (`s_movk_i32`/`s_mov_b32`
  just before the access, the scratch instruction naming it as SADDR, the rest in OFFSET).
  That SGPR is taken out of the SGPR classes (`AmdRegInfo(base=...)`, reserved by
  kcc/targets/amd/target.py when a first allocation's spill area outgrows the reach), and
  each far spill and fill names it as a clobber, so the checker sees it written there.
The spills and fills are pseudo instructions (`.spill_s`, `.fill_s`, `.spill_v`, `.fill_v`)
that kcc/isel/amd/lower.py expands; `slot_home` tells the allocation checker which VGPR holds an
SGPR slot, so it sees any other write to that VGPR destroy the slots in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kcc.encode.amd.operands import SGPR, VGPR
from kcc.ir.mir import Inst, Kind, PReg, RegOp, Role
from kcc.regalloc.target import AllocationError, TargetRegInfo


@dataclass(frozen=True)
class Arch:
    """What differs between the two AMD families kcc targets."""

    name: str            # gfx1100, gfx942
    family: str          # rdna3, cdna3
    wave: int            # 32, 64
    sgprs: int           # allocatable SGPRs s0..s(sgprs-1) (VCC and friends are extra)
    vgprs: int
    scratch_max: int     # bytes of private segment a work-item may have (see SCRATCH_MAX)

    @property
    def mask_cls(self) -> str:
        """The register class of a lane mask."""
        return "s" if self.wave == 32 else "s2"


#: the most scratch a wave can have is what COMPUTE_TMPRING_SIZE.WAVESIZE counts (LLVM's
#: getMaxWaveScratchSize, AMDGPUUsage): 15 bits of 256-byte granules on gfx11, 13 bits of
#: 1 KiB granules on gfx9 (gfx942); a work-item's share is that over the wave size. Past it
#: the waves' scratch areas would overlap.
SCRATCH_MAX = {"gfx1100": 256 * ((1 << 15) - 1) // 32, "gfx942": 1024 * ((1 << 13) - 1) // 64}

ARCHES = {"gfx1100": Arch("gfx1100", "rdna3", 32, 104, 256, SCRATCH_MAX["gfx1100"]),
          "gfx942": Arch("gfx942", "cdna3", 64, 100, 256, SCRATCH_MAX["gfx942"])}

#: pseudo instructions expanded one register (or 32-bit half) at a time, in place
_IN_PLACE = frozenset({".def", ".vmov", ".vpair", ".vlit64", ".add64", ".sub64", ".and64", ".or64",
                       ".xor64", ".cndmask64", ".fneg64"})
#: parallel copies between a VGPR tuple and one VGPR per register of it (``.split``: a vector
#: load's lanes, ``.join``: a vector store's data), which read every source before writing
#: (kcc/isel/amd/lower.py ``Lowering.parallel``) and which the allocator puts in place
#: (``subreg_copy``) where it can, so they expand to nothing
_PARALLEL = frozenset({".split", ".join"})
_SIZE = {"s": 1, "s2": 2, "s4": 4, "v": 1, "v2": 2, "v4": 4, "v8": 8}
_NAME = re.compile(r"^([sv])(?:(\d+)|\[(\d+):(\d+)\])$")


def preg(bank: str, index: int, count: int) -> PReg:
    """The physical register (tuple) of `count` registers of bank "s"/"v" from `index`."""
    cls = bank + ("" if count == 1 else str(count))
    name = f"{bank}{index}" if count == 1 else f"{bank}[{index}:{index + count - 1}]"
    return PReg(name, cls)


def parse_preg(p: PReg) -> SGPR | VGPR:
    """A physical register as the operand type the encoder takes."""
    m = _NAME.match(p.name)
    if m is None:
        raise ValueError(f"{p.name} is not an AMD register")
    lo = int(m.group(2) if m.group(2) is not None else m.group(3))
    n = 1 if m.group(2) is not None else int(m.group(4)) - lo + 1
    return SGPR(lo, n) if m.group(1) == "s" else VGPR(lo, n)


#: the scratch offsets an instruction reaches from no address register: the 13-bit signed
#: immediate of the SCRATCH encoding (RDNA3 ISA §10.1 / CDNA3 ISA §9.1; llvm-mc-19: "expected
#: a 13-bit signed offset") names 0 … 4095 (negative offsets are not used: gfx942 has LLVM's
#: NegativeScratchOffsetBug). Slots from here on are addressed from the frame SGPR.
SCRATCH_REACH = 4096


class SpillAreaError(AllocationError):
    """The spill area outgrew the private segment the hardware gives a work-item."""


class AmdRegInfo(TargetRegInfo):
    """The allocator's view of an arch's registers (kcc.regalloc.TargetRegInfo).

    ``lanes`` are the VGPR numbers that hold spilled SGPRs (taken out of the VGPR classes),
    ``base`` the number of the frame SGPR (taken out of the SGPR classes) or None.
    After an allocation, ``lane_dwords`` is how many SGPR-slot dwords its spills and fills
    named (the lanes the allocation needs: more than ``len(lanes) * wave`` means it must be
    redone with more lane VGPRs), ``far`` whether a VGPR slot lies past ``SCRATCH_REACH`` (it
    must be redone with a frame SGPR if it had none), ``scratch_bytes`` how many bytes of
    private segment its VGPR spills need, and ``spills`` the spill count per bank ("s",
    "v")."""

    callee_saved: set[PReg] = set()

    def __init__(self, arch: Arch, kernel: str, lanes: tuple[int, ...] = (),
                 base: int | None = None):
        self.arch, self.kernel, self.lanes, self.base = arch, kernel, lanes, base
        taken = {"s": set() if base is None else {base}, "v": set(lanes)}
        self.classes: dict[str, list[PReg]] = {}
        for bank, total in (("s", arch.sgprs), ("v", arch.vgprs)):
            for n in (1, 2, 4, 8) if bank == "v" else (1, 2, 4):
                step = 1 if n == 1 else (n if bank == "s" else 2)
                self.classes[bank + ("" if n == 1 else str(n))] = [
                    preg(bank, i, n) for i in range(0, total - n + 1, step)
                    if not taken[bank] & set(range(i, i + n))]
        self.lane_dwords = 0
        self.far = False
        self.scratch_bytes = 0
        self.spills = {"s": 0, "v": 0}

    def reg_units(self, p: PReg) -> tuple[str, ...]:
        """The single registers a tuple consists of."""
        r = parse_preg(p)
        bank = "s" if isinstance(r, SGPR) else "v"
        return tuple(f"{bank}{i}" for i in range(r.index, r.index + r.count))

    def spill_slot_size(self, cls: str) -> int:
        """Slot bytes: 4 per register of the class (a VGPR slot holds 4 bytes per lane)."""
        return 4 * _SIZE[cls]

    def is_copy(self, inst: Inst) -> bool:
        """A selector copy the allocator may coalesce: `v_mov_b32 d, s` of one VGPR into
        another (kcc/isel/amd/alu.py `copy_into` spells a copy under a narrowed EXEC, which
        keeps the inactive lanes of d, `v_mov_b32_e32`, so it is never one)."""
        if inst.op != "v_mov_b32" or len(inst.operands) != 2 or inst.kind is not Kind.OP:
            return False
        d, s = inst.operands
        return (isinstance(inst.arg, tuple) and inst.arg[0] == (0, 1)
                and isinstance(d, RegOp) and isinstance(s, RegOp) and d.role is Role.DEF
                and s.role is Role.USE and getattr(d.reg, "cls", None) == "v"
                and getattr(s.reg, "cls", None) == "v")

    def make_move(self, cls: str, dst: PReg, src: PReg) -> Inst:
        """A copy: s_mov_b32/s_mov_b64/v_mov_b32 (tuples become per-register moves)."""
        return Inst("copy", [RegOp(dst, Role.DEF), RegOp(src, Role.USE)], kind=Kind.MOVE)

    def _lane(self, slot_offset: int, size: int) -> tuple[PReg | None, int]:
        """The lane VGPR and first lane of an SGPR slot (None while too few are reserved: the
        allocation is then redone with more). A slot is aligned to its size and a wave is a
        multiple of 4 lanes, so a slot never straddles two VGPRs."""
        first = slot_offset // 4
        self.lane_dwords = max(self.lane_dwords, first + size // 4)
        k = first // self.arch.wave
        if k >= len(self.lanes):
            return None, first % self.arch.wave
        return preg("v", self.lanes[k], 1), first % self.arch.wave

    def _scratch(self, slot_offset: int, size: int) -> tuple[PReg, ...]:
        """Record a VGPR slot; what its spill or fill clobbers: the frame SGPR for a slot past
        the offset's reach (nothing while none is reserved: the allocation is then redone
        with one)."""
        self.scratch_bytes = max(self.scratch_bytes, slot_offset + size)
        if slot_offset + size > self.arch.scratch_max:
            raise SpillAreaError(
                f"kernel too large for AMD: {self.kernel!r} needs a spill area of more than "
                f"{self.arch.scratch_max} bytes per work-item, the private segment "
                f"{self.arch.name} gives one (COMPUTE_TMPRING_SIZE.WAVESIZE)")
        if slot_offset < SCRATCH_REACH:
            return ()
        self.far = True
        return () if self.base is None else (preg("s", self.base, 1),)

    def make_spill(self, cls: str, src: PReg, slot_offset: int, size: int) -> Inst:
        """A store of ``src`` to its slot: ``.spill_s`` (v_writelane per dword; operands: the
        value, then the lane VGPR it writes) or ``.spill_v`` (a scratch store; clobbering the
        frame SGPR for a slot past the offset's reach)."""
        if cls.startswith("s"):
            self.spills["s"] += 1
            home, lane = self._lane(slot_offset, size)
            ops = [RegOp(src, Role.USE)]
            if home is not None:
                ops.append(RegOp(home, Role.DEF | Role.USE))
            return Inst(".spill_s", ops, kind=Kind.SPILL, arg=(size, lane), slot=slot_offset)
        self.spills["v"] += 1
        return Inst(".spill_v", [RegOp(src, Role.USE)], self._scratch(slot_offset, size),
                    kind=Kind.SPILL, arg=(size, 0), slot=slot_offset)

    def make_fill(self, cls: str, dst: PReg, slot_offset: int, size: int) -> Inst:
        """A reload of ``dst`` from its slot: ``.fill_s`` (v_readlane per dword; operands: the
        value, then the lane VGPR it reads) or ``.fill_v`` (a scratch load; clobbering the
        frame SGPR for a slot past the offset's reach)."""
        if cls.startswith("s"):
            home, lane = self._lane(slot_offset, size)
            ops = [RegOp(dst, Role.DEF)]
            if home is not None:
                ops.append(RegOp(home, Role.USE))
            return Inst(".fill_s", ops, kind=Kind.FILL, arg=(size, lane), slot=slot_offset)
        return Inst(".fill_v", [RegOp(dst, Role.DEF)], self._scratch(slot_offset, size),
                    kind=Kind.FILL, arg=(size, 0), slot=slot_offset)

    def early_clobber(self, inst: Inst) -> bool:
        """A pseudo instruction (kcc/isel/amd/lower.py expands it after allocation) other
        than those whose expansion works register by register, each reading its sources'
        registers j before writing its result's register j: their operands are aligned
        tuples of one size (or SGPR masks, immediates), so a result meets a source in the
        same registers or not at all. Any other pseudo may write a result before reading
        every source (a multi-register ``.pack`` did: a fill landing in the tuple was read
        after being overwritten), so the checker keeps its results off its sources."""
        return inst.op.startswith(".") and inst.op not in _IN_PLACE | _PARALLEL

    def subreg_copy(self, inst: Inst) -> tuple[int, tuple[int, ...]] | None:
        """``.split`` (results r0…rn-1, then the tuple) and ``.join`` (the tuple, then one
        source per register, a source possibly repeated): the tuple's operand and each
        register's, read off the instruction's template (kcc/isel/amd/base.py)."""
        if inst.op not in _PARALLEL or not inst.arg:
            return None
        tmpl = inst.arg[0]
        if inst.op == ".split":
            return tmpl[-1], tuple(tmpl[:-1])
        return tmpl[0], tuple(tmpl[1:])

    def slot_bytes(self, inst: Inst) -> int:
        """The bytes a spill or fill stores or loads (its ``arg``)."""
        return int(inst.arg[0])

    def slot_home(self, inst: Inst) -> PReg | None:
        """The register an SGPR spill or fill keeps its slot in (its lane VGPR); None for a
        slot in memory (scratch)."""
        if inst.op in (".spill_s", ".fill_s") and len(inst.operands) > 1:
            reg = inst.operands[1]
            assert isinstance(reg, RegOp) and isinstance(reg.reg, PReg)
            return reg.reg
        return None
