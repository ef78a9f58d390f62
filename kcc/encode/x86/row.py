"""The vocabulary of the x86-64 form table (kcc/encode/x86/table.py): the frozen Row of one
encodable form, its operands (kind, slot, access), the operand kinds (KINDS: what register
or memory each accepts), the condition codes of the conditional forms, and FormTable (form
name → Row, each Row made from its cached bytes when first asked for).

Encoding fields follow the Intel SDM Vol. 2 opcode tables: ``/r`` and ``/digit`` (ModRM.reg,
§2.1.3), ``+r`` (register in the low 3 opcode bits, §3.1.1.1), ``ib/iw/id/io`` immediates and
``cb/cd`` branch displacements. VEX fields are named as in §2.3.5 (pp, mmmmm map, W, L) and EVEX
fields as in §2.7.1 (the same plus L'L and the disp8*N scale of §2.7.5).
"""

from __future__ import annotations

import marshal

from kcc.record import fields, record

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

# Condition codes in tttn order (SDM Vol. 2 Appendix B.1.4.7, Table B-10): the index is the
# low nibble of Jcc/SETcc/CMOVcc opcodes.
CONDITION_CODES: tuple[str, ...] = (
    "o", "no", "b", "ae", "e", "ne", "be", "a", "s", "ns", "p", "np", "l", "ge", "le", "g")


@record(frozen=True)
class KindInfo:
    """What an operand kind accepts: a register of ``cls``/``reg_size`` and/or memory."""
    cls: str | None          # "gpr", "vec", "mask" or None (immediate, label, memory only)
    reg_size: int | None     # register width in bytes when a register is allowed
    mem_size: int | None     # access width in bytes when memory is allowed (0: address only)
    imm_bits: int = 0        # immediate width (imm/rel kinds)
    imm_signed: bool = False  # True: the value must fit the signed range (sign-extended imm)


def _kinds() -> dict[str, KindInfo]:
    k: dict[str, KindInfo] = {}
    for s in (1, 2, 4, 8):
        b = s * 8
        k[f"r{b}"] = KindInfo("gpr", s, None)
        k[f"rm{b}"] = KindInfo("gpr", s, s)
        k[f"m{b}"] = KindInfo(None, None, s)
    k["r32m8"] = KindInfo("gpr", 4, 1)     # vpinsrb/vpextrb: r32 or m8
    k["r32m16"] = KindInfo("gpr", 4, 2)    # vpinsrw: r32 or m16
    k["m"] = KindInfo(None, None, 0)       # lea: address only, no access
    k["cl"] = KindInfo("gpr", 1, None)     # shift count, fixed register cl
    for name, s in (("x", 16), ("y", 32), ("z", 64)):
        k[name] = KindInfo("vec", s, None)
        k[name + "m"] = KindInfo("vec", s, s)
        k[f"m{s * 8}"] = KindInfo(None, None, s)
    for s in (1, 2, 4, 8):
        k[f"xm{s * 8}"] = KindInfo("vec", 16, s)   # xmm register or a scalar in memory
    for s in (4, 8):
        # EVEX embedded broadcast (§2.7.5): one s-byte element in memory, read into every
        # lane (`dword ptr [mem]{1to16}`); only on rows with EVEX.b = 1
        k[f"m{s * 8}bcst"] = KindInfo(None, None, s)
    # VSIB memory (§2.3.12 "Vector SIB (VSIB) Memory Addressing"): a GPR base and a vector
    # index whose every dword lane addresses one element; vm32z: a zmm of 16 dword indexes
    k["vm32z"] = KindInfo(None, None, 64)
    k["vm32y"] = KindInfo(None, None, 32)           # a ymm of 8 dword indexes
    k["k"] = KindInfo("mask", 8, None)              # AVX-512 opmask register k0-k7
    k["km64"] = KindInfo("mask", 8, 8)              # opmask or its 64 bits in memory
    # the opmask of a zero-masking operation (EVEX.z = 1, §2.7.1 "EVEX.z": masked-off lanes
    # of the destination become zero instead of keeping their value); written "{k1} {z}"
    k["kz"] = KindInfo("mask", 8, None)
    k["imm8"] = KindInfo(None, None, None, 8)       # raw byte: -128..255
    k["simm8"] = KindInfo(None, None, None, 8, True)
    k["imm16"] = KindInfo(None, None, None, 16)
    k["imm32"] = KindInfo(None, None, None, 32)
    k["simm32"] = KindInfo(None, None, None, 32, True)
    k["imm64"] = KindInfo(None, None, None, 64)
    k["rel8"] = KindInfo(None, None, None, 8, True)
    k["rel32"] = KindInfo(None, None, None, 32, True)
    return k


KINDS: dict[str, KindInfo] = _kinds()
# the VSIB kinds: the register their index is (kcc/encode/x86/encoder.py _check_mem)
VSIB_INDEX: dict[str, tuple[str, int]] = {"vm32z": ("vec", 64), "vm32y": ("vec", 32)}

# Where an operand goes in the encoding: ModRM.reg, ModRM.rm (register or memory), VEX/EVEX
# vvvv, the is4 register in imm8[7:4] (§2.3.5.8 "/is4"), the low opcode bits ("+r"), an
# immediate, a branch displacement, nowhere (a fixed register such as cl), or EVEX.aaa (the
# opmask of a masked operation, §2.7.1; written "xmm1 {k1}" after the destination).
SLOTS = ("reg", "rm", "vvvv", "is4", "opreg", "imm", "rel", "fixed", "aaa")
ACCESS = {"r": "use", "w": "def", "rw": "defuse"}
FIXED_REGS = {"cl": "rcx"}


@record(frozen=True)
class Operand:
    """One explicit operand of a form."""
    kind: str     # key of KINDS
    slot: str     # one of SLOTS
    access: str   # "use", "def" or "defuse"


@record(frozen=True)
class Row:
    """One instruction form. ``opcode`` holds, for legacy forms, every opcode byte including
    0F escapes; for VEX/EVEX forms, the single opcode byte after the map (``mmap``)."""
    form: str
    mnemonic: str
    group: str                    # golden file group
    enc: str                      # "legacy" | "vex" | "evex"
    opcode: bytes
    operands: tuple[Operand, ...]
    prefixes: bytes = b""         # legacy: 66 operand-size and/or mandatory F3, emitted first
    w: bool = False               # legacy REX.W, or VEX/EVEX .W
    pp: int = 0                   # VEX/EVEX implied prefix: 0 none, 1 66, 2 F3, 3 F2
    mmap: int = 1                 # VEX/EVEX opcode map: 1 0F, 2 0F38, 3 0F3A
    vl: int = 0                   # VEX.L (0: 128, 1: 256) / EVEX L'L (2: 512)
    digit: int | None = None      # "/digit": ModRM.reg opcode extension
    flags: str = ""               # "w": writes RFLAGS, "r": reads RFLAGS
    implicit_uses: tuple[str, ...] = ()
    implicit_defs: tuple[str, ...] = ()
    # Alternate encodings llvm-mc picks for the same text (kept so bytes match the oracle):
    rr_form: str | None = None    # all r/m operands are registers: encode as this form
    acc_opcode: bytes | None = None   # r/m operand is al/ax/eax/rax: short accumulator form
    one_opcode: bytes | None = None   # shift/rotate count 1: the D0/D1 "by 1" form
    rev_opcode: int | None = None     # VEX reg-reg: swap reg/rm (the "MR" opcode) to avoid
    rev_pp: int | None = None         # the 3-byte VEX when only the source is xmm8-15
    disp8_n: int = 1              # EVEX compressed disp8 scale N (§2.7.5)
    evex_form: str | None = None  # VEX form: its EVEX twin, used when it names xmm16-31
    bcst: bool = False            # EVEX.b = 1 with a memory operand: embedded broadcast

    @property
    def imm_operand(self) -> Operand | None:
        """The immediate operand, if any."""
        return next((o for o in self.operands if o.slot == "imm"), None)


FIELDS = tuple(f.name for f in fields(Row))
_AT_OPERANDS = FIELDS.index("operands")


_OPERANDS: dict[tuple, tuple[Operand, ...]] = {}     # each distinct operand list, one tuple


def _row_of(vals: tuple) -> Row:
    """One row from its dumped field values: its fields set as its frozen __init__ sets
    them (without the ~23 `object.__setattr__` calls), its operands shared with every row
    of the same operand list."""
    spec = vals[_AT_OPERANDS]
    ops = _OPERANDS.get(spec)
    if ops is None:
        ops = _OPERANDS[spec] = tuple(Operand(*o) for o in spec)
    r = object.__new__(Row)
    r.__dict__.update(zip(FIELDS, vals))
    r.__dict__["operands"] = ops
    return r


class FormTable(dict):
    """form name → Row, a Row made from its cached bytes when first asked for: a compile
    uses a few dozen of the ~1,250 forms, and making every Row was a tenth of a small
    compile's start-up. `table[form]` (a Row once made is a plain dict entry), `form in
    table`, get, iteration, len and keys answer for every form without making one; values,
    items and == make them all first (in the rows' order)."""

    def __init__(self, raw: dict[str, int], rel: tuple, blob: Callable[[int], bytes]):
        super().__init__()
        self._raw = raw         # form → its row's index (the rows' order)
        self._blob = blob       # a row's index → its marshalled field values
        self.rel = rel          # (form, mnemonic, kind) of each branch-target operand

    def __missing__(self, form: str) -> Row:
        row = self[form] = _row_of(marshal.loads(self._blob(self._raw[form])))
        return row

    def __contains__(self, form: object) -> bool:
        return form in self._raw

    def get(self, form: str, default: Any = None) -> Any:       # type: ignore[override]
        if form in self._raw:
            return self[form]
        return default

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def keys(self) -> Any:                                      # type: ignore[override]
        return self._raw.keys()

    def _all(self) -> None:
        """Every Row made, the entries in the rows' order."""
        if dict.__len__(self) != len(self._raw):
            rows = [self[f] for f in self._raw]
            dict.clear(self)
            dict.update(self, zip(self._raw, rows))

    def values(self) -> Any:                                    # type: ignore[override]
        self._all()
        return dict.values(self)

    def items(self) -> Any:                                     # type: ignore[override]
        self._all()
        return dict.items(self)

    def __eq__(self, other: object) -> bool:
        self._all()
        return dict.__eq__(self, other)

    __hash__ = None                                             # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<FormTable of {len(self)} x86 forms>"
