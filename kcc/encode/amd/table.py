"""AMD GPU instruction forms as data: one frozen :class:`Row` per instruction form per family.

The rows themselves live in :mod:`kcc.encode.amd.gfx11` (RDNA3, gfx1100, wave32) and
:mod:`kcc.encode.amd.gfx9` (CDNA3, gfx942, wave64) as text tables, one line per form:

    FORMAT  OPCODE  MNEMONIC  DSTS:SRCS  [flags]

DSTS and SRCS are comma-separated operand kinds (:data:`KINDS`) in LLVM's operand order. The
format decides which encoding field each operand goes in (:func:`_fields`), so a row carries
(field, kind) pairs and nothing else is needed to encode, decode or print it. Every group the
rest of kcc asks about (the forms of a family, which have a VOP3 encoding, which read VCC, ...)
is computed from these rows by the functions below; nothing here is a hand-kept opcode set.

Formats (RDNA3 ISA = "AMD RDNA3 Shader Instruction Set Architecture" §16 "Microcode Formats";
CDNA3 ISA = "AMD Instinct MI300 CDNA3 ISA" §12 "Microcode Formats"):
  SOP2, SOP1, SOPK, SOPC, SOPP (RDNA3 §16.1 / CDNA3 §12.1 scalar ALU and program control),
  SMEM (RDNA3 §16.2 / CDNA3 §12.2), VOP2, VOP1, VOPC (RDNA3 §16.3 / CDNA3 §12.3),
  VOP3 and VOP3SD (RDNA3 §16.3.4-16.3.5; CDNA3 §12.3.4 VOP3A and §12.3.5 VOP3B),
  DS (RDNA3 §16.5 / CDNA3 §12.6), FLAT/GLOBAL/SCRATCH (RDNA3 §16.8 / CDNA3 §12.9),
  VOP3P (RDNA3 §16.3 "VOP3P": here only the matrix ops v_wmma_*; CDNA3 §12.3 "VOP3P-MAI": the
  matrix ops v_mfma_*, opcodes 0x40 and up; CDNA3 §12.3.6 "VOP3P": the packed-f32 ops
  v_pk_*_f32 / v_pk_mov_b32, opcodes below 0x40; one format name, the family and opcode
  decide the layout).
Flags: ``e64`` a VOP1/VOP2/VOPC form that also has a VOP3 (or VOP3SD) encoding, which LLVM
spells with an ``_e32``/``_e64`` suffix; ``off2`` a DS form with two 8-bit offsets.
A VOPC form without a destination is a gfx11 ``v_cmpx`` (it writes EXEC only).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache

ARCHES: tuple[str, ...] = ("gfx1100", "gfx942")
WAVE_SIZE: dict[str, int] = {"gfx1100": 32, "gfx942": 64}
FAMILY: dict[str, str] = {"gfx1100": "gfx11", "gfx942": "gfx9"}

FLAGS: tuple[str, ...] = ("e64", "off2")
FORMATS: tuple[str, ...] = ("SOP2", "SOP1", "SOPK", "SOPC", "SOPP", "SMEM", "VOP2", "VOP1",
                            "VOPC", "VOP3", "VOP3SD", "VOP3P", "DS", "FLAT", "GLOBAL",
                            "SCRATCH")


@dataclass(frozen=True)
class Kind:
    """What an operand kind accepts and how wide it is.

    cls: "src" (any source: VGPR, SGPR, special register, inline constant or literal, as the
    field allows), "vreg", "sreg", "lane" (a wave-wide lane mask: VCC, an SGPR or an SGPR pair),
    "imm" (an immediate field printed in ``style``), "saddr" (SGPR pair or ``off``), "vaddr",
    or "lit": the mandatory 32-bit literal constant K of v_fmaak_*/v_fmamk_* (RDNA3 §16.3.1
    "VOP2": the literal dword that follows the instruction is the third operand, never a
    register or an inline constant), held in the ``simm32`` field.
    dwords: register count (0 for immediates). ctype: the constant table of RDNA3 §7.3.2 /
    CDNA3 §4.4.2 used for inline constants: "f32", "f16", "f64" (integer operands use the table
    of their width, as the hardware does). "sb32" is a 32-bit source that cannot be a VGPR
    (v_readlane/v_writelane lane selects and values).
    """
    cls: str
    dwords: int
    ctype: str = "f32"
    style: str = ""
    vgpr: bool = True      # "src" kinds: False for scalar-only sources (lane selects)


def _kinds() -> dict[str, Kind]:
    k = {
        "f32": Kind("src", 1), "b32": Kind("src", 1), "i32": Kind("src", 1),
        "u32": Kind("src", 1), "f16": Kind("src", 1, "f16"), "b16": Kind("src", 1, "f16"),
        "i16": Kind("src", 1, "f16"), "u16": Kind("src", 1, "f16"),
        "f64": Kind("src", 2, "f64"), "b64": Kind("src", 2, "f64"), "i64": Kind("src", 2, "f64"),
        "u64": Kind("src", 2, "f64"),
        # gfx942 packed f32 (v_pk_*_f32): a VGPR/SGPR pair or an f32 inline constant
        "pk64": Kind("src", 2, "f32"),
        "sb32": Kind("src", 1, vgpr=False),
        "lane": Kind("lane", 0),
        "saddr": Kind("saddr", 2), "saddr32": Kind("saddr", 1), "vaddr": Kind("vaddr", 0),
        "soff": Kind("imm", 0, style="soff"),       # SMEM: offset or SGPR soffset
        "label": Kind("imm", 0, style="label"),     # SOPP branch: signed dwords from next
        "hex16": Kind("imm", 0, style="hex16"), "dec16": Kind("imm", 0, style="dec16"),
        "waitcnt": Kind("imm", 0, style="waitcnt"), "delay": Kind("imm", 0, style="delay"),
        "sendmsg": Kind("imm", 0, style="sendmsg"),
        "depctr": Kind("imm", 0, style="depctr"),
        # v_fmaak/v_fmamk's literal K: the f32 pattern, or an f16 one in the low 16 bits
        "k32": Kind("lit", 0, "f32"), "k16": Kind("lit", 0, "f16"),
    }
    for n in (1, 2, 3, 4, 8, 16):
        k[f"v{32 * n}"] = Kind("vreg", n)
        k[f"s{32 * n}"] = Kind("sreg", n)
    # A matrix op's accumulator source (C): a VGPR tuple or an inline constant, no SGPR and
    # no literal (llvm-mc-19 refuses both for v_wmma_* / v_mfma_*).
    for n in (4, 8):
        k[f"c{32 * n}"] = Kind("src", n)
    return k


KINDS: dict[str, Kind] = _kinds()


@dataclass(frozen=True)
class Row:
    """One instruction form of one family: LLVM's mnemonic, format, opcode and operands as
    (encoding field, kind) pairs in LLVM's operand order."""
    arch: str
    name: str
    fmt: str
    op: int
    ops: tuple[tuple[str, str], ...]
    flags: tuple[str, ...] = ()

    @property
    def e64(self) -> bool:
        """A VOP1/VOP2/VOPC form that also has a VOP3/VOP3SD encoding."""
        return "e64" in self.flags

    @property
    def two_offsets(self) -> bool:
        """A DS form with two 8-bit offsets (offset0/offset1) instead of one 16-bit offset."""
        return "off2" in self.flags

    def fields(self) -> dict[str, str]:
        """Field name -> kind."""
        return dict(self.ops)

    @property
    def promoted_fmt(self) -> str:
        """The VOP3 format of this VOP1/VOP2/VOPC form (VOP3SD when it writes a lane mask
        next to a VGPR: the carry-out forms; VOPC's mask lands in VOP3's VDST field)."""
        f = self.fields()
        return "VOP3SD" if "vdst" in f and "sdst" in f else "VOP3"


def _fields(fmt: str, dsts: list[str], srcs: list[str]) -> tuple[tuple[str, str], ...]:
    """Assign each operand to its encoding field by the format's layout."""
    if fmt in ("SOP2", "SOP1", "SOPC"):
        names = (["sdst"] if dsts else []) + ["ssrc0", "ssrc1"][:len(srcs)]
        return tuple(zip(names, dsts + srcs))
    if fmt == "SOPK":
        return tuple(zip(["sdst", "simm16"], dsts + srcs))
    if fmt == "SOPP":
        return tuple(("simm16", s) for s in srcs)
    if fmt == "SMEM":
        return tuple(zip(["sdata", "sbase", "offset"], dsts + srcs))
    if fmt in ("VOP1", "VOP2", "VOPC", "VOP3", "VOP3SD", "VOP3P"):
        d = ["vdst", "sdst"] if fmt in ("VOP2", "VOP3SD") else ["vdst"]
        if fmt == "VOPC":
            d = ["sdst"]
        # A literal K takes no source field: it is the dword after the instruction (simm32),
        # so v_fmamk's S1 after it is still VSRC1.
        names = iter(["src0", "src1", "src2"])
        return tuple(zip(d, dsts)) + tuple(
            ("simm32" if KINDS[s].cls == "lit" else next(names), s) for s in srcs)
    if fmt in ("FLAT", "GLOBAL", "SCRATCH", "DS"):
        # The first source is the address; then data (DS: data0, data1) and saddr.
        out = [("vdst", dsts[0])] if dsts else []
        data = ["data0", "data1"] if fmt == "DS" else ["data"]
        for i, s in enumerate(srcs):
            saddr = s.startswith("saddr")
            out.append(("addr" if i == 0 else "saddr" if saddr else data.pop(0), s))
        return tuple(out)
    raise ValueError(f"unknown format {fmt}")


def parse_rows(arch: str, text: str) -> tuple[Row, ...]:
    """Rows from a family's text table (see the module docstring for the line format)."""
    rows: list[Row] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fmt, op, name, sig, *flags = line.split()
        if fmt not in FORMATS or ":" not in sig:
            raise ValueError(f"{arch} table line {n}: bad row {line!r}")
        d, s = sig.split(":")
        dsts, srcs = [x for x in d.split(",") if x], [x for x in s.split(",") if x]
        for kd in dsts + srcs:
            if kd not in KINDS:
                raise ValueError(f"{arch} table line {n}: unknown kind {kd!r}")
        for fl in flags:
            if fl not in FLAGS:
                raise ValueError(f"{arch} table line {n}: unknown flag {fl!r}")
        rows.append(Row(arch, name, fmt, int(op, 0), _fields(fmt, dsts, srcs), tuple(flags)))
    return tuple(rows)


# ----------------------------------------------------------------------------- derived groups
@lru_cache(maxsize=None)
def rows(arch: str) -> tuple[Row, ...]:
    """Every row of one family."""
    if arch == "gfx1100":
        from kcc.encode.amd.gfx11 import ROWS
    elif arch == "gfx942":
        from kcc.encode.amd.gfx9 import ROWS
    else:
        raise KeyError(f"unknown AMD arch {arch!r} (known: {', '.join(ARCHES)})")
    return ROWS


@lru_cache(maxsize=None)
def by_name(arch: str) -> dict[str, Row]:
    """Mnemonic -> row, for one family (mnemonics are unique per family)."""
    out: dict[str, Row] = {}
    for r in rows(arch):
        if r.name in out:
            raise ValueError(f"{arch}: duplicate row {r.name}")
        out[r.name] = r
    return out


@lru_cache(maxsize=None)
def by_opcode(arch: str) -> dict[tuple[str, int], tuple[Row, bool]]:
    """(format, opcode) -> (row, promoted) for decoding (VOP3SD forms under "VOP3", whose
    opcode space they share); promoted rows are the VOP3/VOP3SD encodings of VOP1/VOP2/VOPC
    forms at their derived VOP3 opcode."""
    out: dict[tuple[str, int], tuple[Row, bool]] = {}
    for r in rows(arch):
        keys = [(("VOP3" if r.fmt == "VOP3SD" else r.fmt, r.op), False)]
        if r.e64:
            keys.append((("VOP3", vop3_opcode(arch, r)), True))
        for key, promoted in keys:
            if key in out:
                raise ValueError(f"{arch}: {r.name} and {out[key][0].name} share {key}")
            out[key] = (r, promoted)
    return out


def vop3_opcode(arch: str, row: Row) -> int:
    """VOP3 opcode of a VOP1/VOP2/VOPC form: RDNA3 §16.3.4 places VOPC at 0-255, VOP2 at
    256+op and VOP1 at 384+op; CDNA3 §12.3.4 places VOPC at 0-255, VOP2 at 256+op, VOP1 at
    320+op."""
    base = {"VOPC": 0, "VOP2": 0x100, "VOP1": 0x180 if FAMILY[arch] == "gfx11" else 0x140}
    return base[row.fmt] + row.op


def formats_of(arch: str) -> dict[str, tuple[Row, ...]]:
    """Format -> rows of that format, for one family."""
    out: dict[str, list[Row]] = {}
    for r in rows(arch):
        out.setdefault(r.fmt, []).append(r)
    return {k: tuple(v) for k, v in out.items()}


def reads_vcc_implicitly(row: Row) -> bool:
    """Forms whose e32 encoding reads or writes VCC without naming a field for it (carry
    in/out, v_cndmask's selector, VOPC's destination)."""
    return row.fmt in ("VOP2", "VOPC") and any(k == "lane" for _, k in row.ops)


# ----------------------------------------------------------------------------- constants
# Inline constants (RDNA3 ISA §7.3.2 "Inline Constants", CDNA3 ISA §4.4.2): source codes
# 128..192 are the integers 0..64, 193..208 are -1..-16, 240..248 the floats below, each as
# the bit pattern of the operand's type; 255 means a 32-bit literal dword follows.
INLINE_FLOATS: tuple[float, ...] = (0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0)
INV_2PI = 0.15915494309189535          # 1/(2*pi), code 248
_INV_2PI_BITS = {"f32": 0x3E22F983, "f16": 0x3118, "f64": 0x3FC45F306DC9C882}
LITERAL = 255


def float_bits(value: float, ctype: str) -> int:
    """The bit pattern of value in the operand's float type (1/(2*pi) rounds by the table)."""
    fmt = {"f32": "<f", "f16": "<e", "f64": "<d"}[ctype]
    if value == INV_2PI or abs(value - INV_2PI) < 1e-7:
        return _INV_2PI_BITS[ctype]
    return int.from_bytes(struct.pack(fmt, value), "little")


@lru_cache(maxsize=None)
def inline_float_codes(ctype: str) -> dict[int, int]:
    """Bit pattern (of ctype) -> source code, for the inline float constants."""
    out = {float_bits(f, ctype): 240 + i for i, f in enumerate(INLINE_FLOATS)}
    out[_INV_2PI_BITS[ctype]] = 248
    return out


def code_float(code: int) -> float:
    """The float an inline float source code stands for."""
    return INV_2PI if code == 248 else INLINE_FLOATS[code - 240]


# Named scalar source/destination codes (RDNA3 §3.3 / CDNA3 §3.3 "SGPRs" operand tables).
SPECIAL_CODES: dict[str, dict[str, int]] = {
    "gfx11": {"vcc_lo": 106, "vcc_hi": 107, "vcc": 106, "null": 124, "m0": 125,
              "exec_lo": 126, "exec_hi": 127, "exec": 126, "vccz": 251, "execz": 252,
              "scc": 253},
    "gfx9": {"flat_scratch_lo": 102, "flat_scratch_hi": 103, "flat_scratch": 102,
             "vcc_lo": 106, "vcc_hi": 107, "vcc": 106, "m0": 124, "exec_lo": 126,
             "exec_hi": 127, "exec": 126, "vccz": 251, "execz": 252, "scc": 253},
}
# Names the decoder gives a code, by register count (64-bit operands print the pair name).
SPECIAL_NAMES: dict[str, dict[tuple[int, int], str]] = {
    fam: {**{(c, 1): n for n, c in names.items() if n not in ("vcc", "exec", "flat_scratch")},
          **{(c, 2): n for n, c in names.items() if n in ("vcc", "exec", "flat_scratch")}}
    for fam, names in SPECIAL_CODES.items()}
MAX_SGPR: dict[str, int] = {"gfx11": 105, "gfx9": 101}
# The "no register" code of address fields: null on gfx11 (RDNA3 §16.8), 0x7f on CDNA3 §12.9.
OFF_CODE: dict[str, int] = {"gfx11": 0x7C, "gfx9": 0x7F}
