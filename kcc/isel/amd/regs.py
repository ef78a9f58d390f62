"""AMD GPU registers as the selector and the linear-scan allocator see them, per arch.

Register classes (a class is one value's register or aligned tuple):
  s, s2, s4: an SGPR, an even-aligned SGPR pair, a 4-aligned SGPR quad (SMEM and 64-bit SALU
             operands must be aligned: RDNA3 ISA §3.3.1 / CDNA3 ISA §3.3, SGPR alignment);
  v, v2, v4: a VGPR, and VGPR pairs/quads starting at an even VGPR (CDNA3 requires even-aligned
             VGPR tuples, §3.6.4; RDNA3 does not, and the same rule keeps one allocator).
A lane mask (a per-lane bool, EXEC, a carry) is one SGPR in wave32 and a pair in wave64.

The tuple `s[4:5]` consists of the units s4 and s5 (`reg_units`), so the allocator sees that it
conflicts with s4, s5 and with `s[4:7]`. There is nothing to spill to short of scratch memory,
which this back end does not use: running out of registers is the error "kernel too large for
AMD" naming the kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kcc.encode.amd.operands import SGPR, VGPR
from kcc.ir.mir import Inst, Kind, PReg, RegOp, Role
from kcc.regalloc.target import AllocationError


@dataclass(frozen=True)
class Arch:
    """What differs between the two AMD families kcc targets."""

    name: str            # gfx1100, gfx942
    family: str          # rdna3, cdna3
    wave: int            # 32, 64
    sgprs: int           # allocatable SGPRs s0..s(sgprs-1) (VCC and friends are extra)
    vgprs: int

    @property
    def mask_cls(self) -> str:
        """The register class of a lane mask."""
        return "s" if self.wave == 32 else "s2"


ARCHES = {"gfx1100": Arch("gfx1100", "rdna3", 32, 104, 256),
          "gfx942": Arch("gfx942", "cdna3", 64, 100, 256)}

_SIZE = {"s": 1, "s2": 2, "s4": 4, "v": 1, "v2": 2, "v4": 4}
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


class AmdRegInfo:
    """The allocator's view of an arch's registers (kcc.regalloc.TargetRegInfo)."""

    callee_saved: set[PReg] = set()

    def __init__(self, arch: Arch, kernel: str):
        self.arch, self.kernel = arch, kernel
        self.classes: dict[str, list[PReg]] = {}
        for bank, total in (("s", arch.sgprs), ("v", arch.vgprs)):
            for n in (1, 2, 4):
                step = 1 if n == 1 else (n if bank == "s" else 2)
                self.classes[bank + ("" if n == 1 else str(n))] = [
                    preg(bank, i, n) for i in range(0, total - n + 1, step)]

    def reg_units(self, p: PReg) -> tuple[str, ...]:
        """The single registers a tuple consists of."""
        r = parse_preg(p)
        bank = "s" if isinstance(r, SGPR) else "v"
        return tuple(f"{bank}{i}" for i in range(r.index, r.index + r.count))

    def spill_slot_size(self, cls: str) -> int:
        """Slot bytes (asked before a spill is made; the spill itself is refused)."""
        return 4 * _SIZE[cls]

    def make_move(self, cls: str, dst: PReg, src: PReg) -> Inst:
        """A copy: s_mov_b32/s_mov_b64/v_mov_b32 (tuples become per-register moves)."""
        return Inst("copy", [RegOp(dst, Role.DEF), RegOp(src, Role.USE)], kind=Kind.MOVE)

    def make_spill(self, cls: str, src: PReg, slot_offset: int, size: int) -> Inst:
        """Refused: kcc does not spill AMD registers to scratch memory."""
        raise AllocationError(f"kernel too large for AMD: {self.kernel!r} needs more "
                              f"{'SGPRs' if cls.startswith('s') else 'VGPRs'} than "
                              f"{self.arch.name} has and kcc does not spill to scratch")

    make_fill = make_spill
