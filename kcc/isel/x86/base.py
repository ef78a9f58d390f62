"""Shared pieces of the x86 instruction selector: errors, the constant pool, operand-width
helpers and the encodings' magic numbers (vcmp predicates, vround modes)."""

from __future__ import annotations

import _struct as struct  # struct's own C functions, without struct.py (start-up)

from kcc.encode.x86.table import FORMS, KINDS
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.dtype import DType
from kcc.ir.mir import Inst, Mem, PReg, RegOp, Role, VReg
from kcc.isel.common import SelectError, commit_const, strong_const  # noqa: F401
from kcc.isel.x86.regs import RCX
from kcc.record import field, record

SCRATCH_BYTES = 64          # frame slot a false-gated store writes instead of memory
ROLE = {"use": Role.USE, "def": Role.DEF, "defuse": Role.DEF | Role.USE}
# vcmpss/vcmpps predicates (SDM Vol. 2, CMPPS Table 3-1): LT_OS and EQ_OQ are false on NaN,
# NEQ_UQ is true on NaN — exactly the .uop compare semantics.
CMP_LT_OS, CMP_EQ_OQ, CMP_NEQ_UQ = 1, 0, 4
# the condition code true exactly where cc is false (SDM Vol. 1 B.1: the pairs differ in
# the low bit of the Jcc/SETcc/CMOVcc opcode)
NOT_CC = {"e": "ne", "ne": "e", "l": "ge", "ge": "l", "g": "le", "le": "g",
          "b": "ae", "ae": "b", "a": "be", "be": "a", "s": "ns", "ns": "s"}
ROUND_TRUNC = 0b1011        # vround imm8: truncate (bits 1:0 = 11), suppress precision (bit 3)
# Pseudo forms expanded by the target after allocation (roles of their register operands).
# sbb_self: SBB r32, r32 of one register, -CF (all ones where the carry is set; it reads the
# flags and writes them, kcc/targets/x86/target.py _flags_of)
PSEUDO_ROLES: dict[str, tuple[str, ...]] = {"vzero": ("def",), "sbb_self": ("def",)}
# Inst.arg of a MULX whose low half nobody reads: encoded with the high half's register for
# both destinations (kcc/targets/x86/code.py; SDM "MULX": equal destinations get the high half)
HIGH_ONLY = "high_only"


def writes_memory(inst: Inst) -> bool:
    """Whether a selected instruction writes memory: a machine-IR memory operand in a slot its
    form's row writes (def or defuse; CMP/TEST read a memory first operand, a store form writes
    one, KMOVQ m64 too). A pseudo writes none; an instruction with no row (control flow, what
    the target inserts) counts as a store when it has a memory operand at all."""
    if inst.op in PSEUDO_ROLES:
        return False
    row = FORMS.get(inst.op)
    if row is None:
        return any(isinstance(v, Mem) for v in inst.operands)
    return any(isinstance(v, Mem) and o.access != "use"
               for o, v in zip(row.operands, inst.operands))


# Per form, one tuple per explicit operand: (role, whether the register class is checked, the
# class the row wants, a fixed register (cl), whether a def is a 32-bit write that zeroes
# bits 63:32, whether the role writes); built on a form's first use (the selector's emit runs
# per instruction).
OPERAND_PLANS: dict[str, tuple[tuple[Role, bool, str | None, PReg | None, bool, bool], ...]] = {}


def operand_plan(form: str) -> tuple[tuple[Role, bool, str | None, PReg | None, bool, bool], ...]:
    """The operand plan of a form (a pseudo form's or a row's), kept in OPERAND_PLANS."""
    if form in PSEUDO_ROLES:
        plan = tuple((ROLE[a], False, None, None, False, RegOp(RCX, ROLE[a]).is_def)
                     for a in PSEUDO_ROLES[form])
    else:
        plan = tuple((ROLE[o.access], True, KINDS[o.kind].cls, RCX if o.kind == "cl" else None,
                      o.kind in ("r32", "rm32"), RegOp(RCX, ROLE[o.access]).is_def)
                     for o in FORMS[form].operands)
    OPERAND_PLANS[form] = plan
    return plan


@record
class ConstPool:
    """The .rodata constants: deduplicated by bytes, each aligned to its own size."""

    items: dict[bytes, str] = field(default_factory=dict)

    def label(self, data: bytes) -> str:
        """The label of a constant with these bytes."""
        if data not in self.items:
            self.items[data] = f".LC{len(self.items)}"
        return self.items[data]


@record
class Place:
    """A selected INDEX/SHRINK: its memory operand, element dtype and lane count."""

    mem: Mem | None
    dtype: DType
    lanes: int
    var: VReg | None = None      # a REG buffer element promoted to a register


def positive_zero(u: UOp, dt: DType) -> bool:
    """Whether u is the constant +0.0 of dt (a scalar, or a STACK of it in every lane)."""
    if u.op is Ops.STACK:
        if any(s is not u.src[0] for s in u.src):
            return False
        u = u.src[0]
    c = strong_const(u)
    return c is not None and const_bytes(c, dt) == bytes(dt.itemsize)


def isz(dt: DType) -> str:
    """The integer op width of dt: 8/16/32-bit values use the 32-bit forms."""
    return "64" if dt.itemsize == 8 else "32"


def vw(dt: DType, lanes: int) -> str:
    """x, y or z: the vector register width holding `lanes` elements of dt."""
    return {32: "y", 64: "z"}.get(dt.itemsize * lanes, "x")


def fs(dt: DType) -> str:
    """The AVX type letter: s (single, float32) or d (double, float64)."""
    return "s" if dt == dtypes.float32 else "d"


def imm_form(mnem: str, width: str, value: int) -> str:
    """The `op r/m, imm` form for a 32/64-bit op: the sign-extended imm8 encoding (opcode 83,
    SDM "ADD"…) when the value fits a byte — what assemblers pick — else imm32."""
    return f"{mnem}_rm{width}_imm{8 if -128 <= value <= 127 else 32}"


def uint_of(itemsize: int) -> DType:
    """The unsigned integer dtype of a lane width (to read a mask lane or build one)."""
    return {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[itemsize]


def fits32(v: int) -> bool:
    return -(1 << 31) <= v < (1 << 31)


def const_bytes(v: int | float | bool, dt: DType) -> bytes:
    """The little-endian bytes of a scalar constant of dt."""
    if dt == dtypes.float32:
        return struct.pack("<f", v)
    if dt == dtypes.float64:
        return struct.pack("<d", v)
    # v is already rounded to the half dtype (commit_const), so these conversions are exact;
    # before this, int(v) truncated a float16/bfloat16 constant (-0.0 became +0.0, 1.5 became 1)
    if dt == dtypes.float16:
        if v == v:      # struct's "e" is exact on a value already float16 (consts.round_half)
            return struct.pack("<e", v)
        import numpy as np  # a NaN only: numpy's bits (its payload); numpy's import is ~90 ms
        return np.float16(v).tobytes()
    if dt == dtypes.bfloat16:
        return struct.pack("<f", v)[2:]          # the high half of the float32
    return (int(v) & ((1 << dt.bits) - 1)).to_bytes(dt.itemsize, "little")
