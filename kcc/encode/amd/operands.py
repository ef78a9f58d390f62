"""AMD GPU instruction operands and instructions: the one vocabulary the AMD layers share.

The instruction selector builds `Inst` values, the encoder turns them into bytes, the decoder
turns bytes back into them, the assembly printer writes them in LLVM's syntax and the emulator
executes them. Names and spellings follow the RDNA3 (gfx1100) and CDNA3 (gfx942) ISA manuals
and LLVM's AMDGPU assembler syntax (`v_add_f32 v1, v2, v3`, `s_load_b64 s[0:1], s[2:3], 0x8`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class SGPR:
    """Scalar register `s5`, or the aligned tuple `s[4:5]` when count > 1."""

    index: int
    count: int = 1

    def __str__(self) -> str:
        if self.count == 1:
            return f"s{self.index}"
        return f"s[{self.index}:{self.index + self.count - 1}]"


@dataclass(frozen=True)
class VGPR:
    """Vector register `v3`, or the tuple `v[2:3]` when count > 1."""

    index: int
    count: int = 1

    def __str__(self) -> str:
        if self.count == 1:
            return f"v{self.index}"
        return f"v[{self.index}:{self.index + self.count - 1}]"


@dataclass(frozen=True)
class Special:
    """A named special operand: vcc, vcc_lo, vcc_hi, exec, exec_lo, exec_hi, m0, null, scc."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Imm:
    """An immediate: an integer as written (offsets, simm16, inline ints), or the 32-bit pattern
    of a float/int source operand. The encoder picks an inline constant when the value has one
    for the operand's type, else a 32-bit literal."""

    value: int

    def __str__(self) -> str:
        return str(self.value) if -16 <= self.value <= 64 else hex(self.value & 0xFFFFFFFF)


@dataclass(frozen=True)
class FloatImm:
    """A float source operand written as a float (`0.5`, `-4.0`): inline when the table has it
    for the operand's type (RDNA3 ISA §7.3 / CDNA3 ISA §4.4 inline constants), else a literal."""

    value: float

    def __str__(self) -> str:
        return repr(float(self.value))


Operand = Union[SGPR, VGPR, Special, Imm, FloatImm]


@dataclass(frozen=True)
class Inst:
    """One instruction: its mnemonic as the manual/LLVM spells it, its operands in LLVM's order
    (destinations first), and modifiers as sorted (key, value) pairs, e.g. ("offset", -16),
    ("glc", True), ("neg", (1, 0, 0)), ("abs", (0, 1, 0)), ("clamp", True), ("omod", 2)."""

    name: str
    ops: tuple[Operand, ...] = ()
    mods: tuple[tuple[str, object], ...] = ()

    def mod(self, key: str, default: object = None) -> object:
        """The value of modifier key, or default when absent."""
        for k, v in self.mods:
            if k == key:
                return v
        return default
