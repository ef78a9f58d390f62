"""What the AMD encoder, decoder and syntax share: the error types, the instruction lookup by
mnemonic and arch, lane-mask sizes, source-operand codes (inline constants, literals, registers:
RDNA3 ISA §16 / CDNA3 ISA §12 "Microcode Formats") and the small field packers."""
from __future__ import annotations

from kcc.encode.amd.operands import SGPR, VGPR, FloatImm, Imm, Inst, Operand, Special
from kcc.encode.amd.table import (
    FAMILY,
    KINDS,
    LITERAL,
    MAX_SGPR,
    SPECIAL_CODES,
    SPECIAL_NAMES,
    WAVE_SIZE,
    Row,
    by_name,
    code_float,
    float_bits,
    inline_float_codes,
)


class AmdEncodeError(ValueError):
    """An instruction the AMD encoder cannot encode (unknown form, bad operand)."""


class AmdDecodeError(ValueError):
    """Bytes that are no instruction form of kcc's tables."""


_VOP_E32 = ("VOP1", "VOP2", "VOPC")
_PREFIX = {  # bits [31:26] of the 64-bit formats (RDNA3 §16, CDNA3 §12)
    "gfx11": {"SMEM": 0x3D, "VOP3": 0x35, "DS": 0x36, "FLAT": 0x37},
    "gfx9": {"SMEM": 0x30, "VOP3": 0x34, "DS": 0x36, "FLAT": 0x37},
}
_SEG = {"FLAT": 0, "SCRATCH": 1, "GLOBAL": 2}
_SEG_FMT = {v: k for k, v in _SEG.items()}
_CACHE = {"gfx11": ("glc", "slc", "dlc"), "gfx9": ("sc0", "sc1", "nt")}


def lookup(arch: str, name: str) -> tuple[Row, str | None]:
    """The row of a mnemonic and the encoding its suffix asks for ("e32", "e64" or None)."""
    table = by_name(arch)
    for suffix in ("_e32", "_e64"):
        base = name.removesuffix(suffix)
        if base != name and base in table and table[base].fmt in _VOP_E32:
            return table[base], suffix[1:]
    if name in table:
        return table[name], None
    raise AmdEncodeError(f"{arch}: unknown instruction {name!r}")


def lane_dwords(arch: str) -> int:
    """SGPRs in a lane mask: 1 on wave32 (gfx1100), 2 on wave64 (gfx942)."""
    return WAVE_SIZE[arch] // 32


def kind_dwords(arch: str, kind: str) -> int:
    """Registers an operand of this kind spans."""
    return lane_dwords(arch) if kind == "lane" else KINDS[kind].dwords


# ----------------------------------------------------------------------------- operands
def _scalar_code(arch: str, op: Operand, n: int, what: str) -> int:
    """Code of an SGPR or special register in a 7/8/9-bit scalar field."""
    fam = FAMILY[arch]
    if isinstance(op, SGPR):
        if op.count != n:
            raise AmdEncodeError(f"{what}: {op} is {op.count} SGPRs, expected {n}")
        if op.index + n - 1 > MAX_SGPR[fam]:
            raise AmdEncodeError(f"{what}: {op} is past s{MAX_SGPR[fam]}")
        if n > 1 and op.index % (2 if n == 2 else 4):
            raise AmdEncodeError(f"{what}: {op} is not aligned")
        return op.index
    if isinstance(op, Special) and op.name in SPECIAL_CODES[fam]:
        code = SPECIAL_CODES[fam][op.name]
        if SPECIAL_NAMES[fam].get((code, n)) == op.name or op.name in ("null", "scc", "vccz",
                                                                      "execz"):
            return code
        raise AmdEncodeError(f"{what}: {op} is not a {n}-dword operand")
    raise AmdEncodeError(f"{what}: expected a scalar register, got {op}")


def src_code(arch: str, op: Operand, kind: str, what: str = "source") -> tuple[int, int | None]:
    """9-bit source code of an operand and the literal dword it needs, if any (RDNA3 §7.3,
    CDNA3 §4.4 source operand encoding)."""
    k = KINDS[kind] if kind != "lane" else None
    n = kind_dwords(arch, kind)
    if isinstance(op, VGPR):
        if op.count != n:
            raise AmdEncodeError(f"{what}: {op} is {op.count} VGPRs, expected {n}")
        if k is not None and not k.vgpr:
            raise AmdEncodeError(f"{what}: {op} cannot be a VGPR here")
        return 256 + op.index, None
    if isinstance(op, (SGPR, Special)):
        return _scalar_code(arch, op, n, what), None
    if k is None:
        raise AmdEncodeError(f"{what}: a lane mask must be an SGPR or VCC, got {op}")
    wide_float = kind.startswith("f") and n == 2
    if isinstance(op, Imm):
        v = op.value
        if -16 <= v <= 64:
            return (128 + v if v >= 0 else 192 - v), None
        pattern = v << 32 if wide_float and 0 <= v <= 0xFFFFFFFF else v
        code = inline_float_codes(k.ctype).get(pattern & ((1 << (32 * n)) - 1))
        if code is not None:
            return code, None
        if wide_float and v > 0xFFFFFFFF:
            if v & 0xFFFFFFFF:
                raise AmdEncodeError(f"{what}: f64 literal {v:#x} has nonzero low dword")
            return LITERAL, v >> 32
        if not -(1 << 31) <= v <= 0xFFFFFFFF:
            raise AmdEncodeError(f"{what}: {v:#x} does not fit a 32-bit literal")
        return LITERAL, v & 0xFFFFFFFF
    if isinstance(op, FloatImm):
        bits = float_bits(op.value, k.ctype)
        code = inline_float_codes(k.ctype).get(bits)
        if code is not None:
            return code, None
        if k.ctype == "f64":
            if bits & 0xFFFFFFFF:
                raise AmdEncodeError(f"{what}: {op.value} needs a 64-bit literal")
            return LITERAL, bits >> 32
        return LITERAL, bits
    raise AmdEncodeError(f"{what}: bad operand {op!r}")


def k_literal(op: Operand, kind: str, what: str = "K") -> int:
    """The dword of a mandatory literal K (kinds "k32"/"k16": v_fmaak/v_fmamk, RDNA3 §16.3.1):
    an integer is the bit pattern (negative ones two's complement), a float is rounded to the
    kind's type; a 16-bit K sits in the low half of the dword, the high half zero (as
    llvm-mc-19 writes it)."""
    k = KINDS[kind]
    bits = 16 if k.ctype == "f16" else 32
    if isinstance(op, FloatImm):
        return float_bits(op.value, k.ctype)
    if isinstance(op, Imm) and -(1 << (bits - 1)) <= op.value < (1 << bits):
        return op.value & ((1 << bits) - 1)
    raise AmdEncodeError(f"{what}: a {bits}-bit literal constant, got {op}")


def src_operand(arch: str, code: int, kind: str, literal: int | None) -> Operand:
    """The operand a source code stands for (the inverse of :func:`src_code`)."""
    fam = FAMILY[arch]
    n = kind_dwords(arch, kind)
    if code >= 256:
        return VGPR(code - 256, n)
    if code <= MAX_SGPR[fam]:
        return SGPR(code, n)
    name = SPECIAL_NAMES[fam].get((code, n)) or SPECIAL_NAMES[fam].get((code, 1))
    if name is not None and (n == 1 or name in ("null", "scc", "vccz", "execz") or
                             (code, n) in SPECIAL_NAMES[fam]):
        return Special(name)
    if 128 <= code <= 192:
        return Imm(code - 128)
    if 193 <= code <= 208:
        return Imm(192 - code)
    if 240 <= code <= 248:
        return FloatImm(code_float(code))
    if code == LITERAL:
        if literal is None:
            raise AmdDecodeError("literal operand without a literal dword")
        return Imm(literal)
    raise AmdDecodeError(f"unsupported source operand code {code}")


def _vgpr(op: Operand, n: int, what: str) -> int:
    if not isinstance(op, VGPR) or op.count != n:
        raise AmdEncodeError(f"{what}: expected {n} VGPR(s), got {op}")
    return op.index


def _mods(inst: Inst, allowed: tuple[str, ...]) -> dict[str, object]:
    m = dict(inst.mods)
    bad = sorted(set(m) - set(allowed))
    if bad:
        raise AmdEncodeError(f"{inst.name}: modifier(s) {', '.join(bad)} not allowed here")
    return m


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _fit(v: object, bits: int, signed: bool, what: str) -> int:
    if not isinstance(v, int):
        raise AmdEncodeError(f"{what}: expected an integer, got {v!r}")
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= v <= hi:
        raise AmdEncodeError(f"{what}: {v} is outside [{lo}, {hi}]")
    return v & ((1 << bits) - 1)


def _words(*ws: int, literal: int | None = None) -> bytes:
    out = b"".join(w.to_bytes(4, "little") for w in ws)
    return out + (literal.to_bytes(4, "little") if literal is not None else b"")


def _one_literal(lits: list[int | None], what: str) -> int | None:
    vals = {v for v in lits if v is not None}
    if len(vals) > 1:
        raise AmdEncodeError(f"{what}: more than one literal value")
    return vals.pop() if vals else None




def fits_e32(arch: str, row: Row, inst: Inst) -> bool:
    if inst.mods:
        return False
    vcc = "vcc_lo" if lane_dwords(arch) == 1 else "vcc"
    for (field, kind), op in zip(row.ops, inst.ops):
        if kind == "lane" and op != Special(vcc):
            return False
        if field == "src1" and kind != "lane" and not isinstance(op, VGPR):
            return False
    return True
