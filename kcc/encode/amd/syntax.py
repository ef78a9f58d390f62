"""AMD assembly in LLVM's syntax: :func:`format_inst` prints an :class:`Inst` as llvm-mc-19
prints it (so llvm-mc reassembles it to the same bytes), :func:`parse_inst` reads such a line
back. Both are driven by the rows of :mod:`kcc.encode.amd.table`.

Symbolic immediates: ``s_waitcnt vmcnt(N) expcnt(N) lgkmcnt(N)`` (RDNA3 §4.4 / CDNA3 §4.4
field layouts below), ``s_delay_alu instid0(..) | instskip(..) | instid1(..)`` (RDNA3 §4.5),
``s_sendmsg sendmsg(MSG_...)`` (RDNA3 §4.6 / CDNA3 §4.6 message codes) and
``s_waitcnt_depctr depctr_va_vdst(N) ...`` (gfx11's dependency-counter wait, SOPP opcode 8;
field names as LLVM's assembler spells them, layout below). v_fmaak/v_fmamk's literal K is
printed as the hex dword, as llvm-mc-19 prints it.
"""
from __future__ import annotations

import re

from kcc.encode.amd.fields import AmdEncodeError, fits_e32, k_literal, lookup, src_code
from kcc.encode.amd.operands import SGPR, VGPR, FloatImm, Imm, Inst, Operand, Special
from kcc.encode.amd.table import FAMILY, INV_2PI, KINDS, LITERAL, SPECIAL_CODES, Row

__all__ = ["format_inst", "parse_inst", "waitcnt", "AmdAsmError"]


class AmdAsmError(ValueError):
    """A line of AMD assembly kcc cannot read."""


# s_waitcnt SIMM16 fields as (shift, bits) pieces, low piece first (RDNA3 §4.4 "S_WAITCNT":
# vmcnt [15:10], lgkmcnt [9:4], expcnt [2:0]; CDNA3 §4.4: vmcnt [3:0]+[15:14], expcnt [6:4],
# lgkmcnt [11:8]).
WAITCNT_FIELDS: dict[str, dict[str, tuple[tuple[int, int], ...]]] = {
    "gfx11": {"vmcnt": ((10, 6),), "expcnt": ((0, 3),), "lgkmcnt": ((4, 6),)},
    "gfx9": {"vmcnt": ((0, 4), (14, 2)), "expcnt": ((4, 3),), "lgkmcnt": ((8, 4),)},
}
_DELAY_ID = ("NO_DEP", "VALU_DEP_1", "VALU_DEP_2", "VALU_DEP_3", "VALU_DEP_4", "TRANS32_DEP_1",
             "TRANS32_DEP_2", "TRANS32_DEP_3", "FMA_ACCUM_CYCLE_1", "SALU_CYCLE_1",
             "SALU_CYCLE_2", "SALU_CYCLE_3")
_DELAY_SKIP = ("SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4")
# s_waitcnt_depctr SIMM16 fields, (name, shift, bits) in llvm-mc-19's printing order; each
# field's default is all ones ("don't wait"). Bits 5-6 belong to no field. Layout checked by
# assembling each field at 0 with llvm-mc-19 -mcpu=gfx1100.
DEPCTR_FIELDS: tuple[tuple[str, int, int], ...] = (
    ("depctr_hold_cnt", 7, 1), ("depctr_sa_sdst", 0, 1), ("depctr_va_vdst", 12, 4),
    ("depctr_va_sdst", 9, 3), ("depctr_va_ssrc", 8, 1), ("depctr_va_vcc", 1, 1),
    ("depctr_vm_vsrc", 2, 3))
_DEPCTR_MASK = sum(((1 << b) - 1) << sh for _, sh, b in DEPCTR_FIELDS)
_SENDMSG = {"gfx11": {"MSG_INTERRUPT": 1, "MSG_DEALLOC_VGPRS": 3},
            "gfx9": {"MSG_INTERRUPT": 1}}
_FLOAT_TEXT = {240: "0.5", 241: "-0.5", 242: "1.0", 243: "-1.0", 244: "2.0", 245: "-2.0",
               246: "4.0", 247: "-4.0", 248: "0.15915494"}
_OMOD = {1: "mul:2", 2: "mul:4", 3: "div:2"}
_CACHE_ORDER = {"gfx11": ("glc", "slc", "dlc"), "gfx9": ("sc0", "nt", "sc1")}


def _field_max(pieces: tuple[tuple[int, int], ...]) -> int:
    return (1 << sum(b for _, b in pieces)) - 1


def waitcnt(arch: str, vmcnt: int | None = None, expcnt: int | None = None,
            lgkmcnt: int | None = None) -> Inst:
    """``s_waitcnt`` waiting for the given counters (None: don't wait on that counter)."""
    return Inst("s_waitcnt", (Imm(_waitcnt_pack(FAMILY[arch], {
        k: v for k, v in (("vmcnt", vmcnt), ("expcnt", expcnt), ("lgkmcnt", lgkmcnt))
        if v is not None})),))


def _waitcnt_pack(fam: str, counts: dict[str, int]) -> int:
    raw = 0
    for name, pieces in WAITCNT_FIELDS[fam].items():
        v = counts.get(name, _field_max(pieces))
        if not 0 <= v <= _field_max(pieces):
            raise AmdAsmError(f"{name}({v}) is out of range")
        for shift, bits in pieces:
            raw |= (v & ((1 << bits) - 1)) << shift
            v >>= bits
    return raw


def _waitcnt_text(fam: str, raw: int) -> str:
    vals = {}
    for name, pieces in WAITCNT_FIELDS[fam].items():
        v, pos = 0, 0
        for shift, bits in pieces:
            v |= ((raw >> shift) & ((1 << bits) - 1)) << pos
            pos += bits
        vals[name] = (v, _field_max(pieces))
    shown = [f"{k}({v})" for k, (v, top) in vals.items() if v != top]
    return " ".join(shown or [f"{k}({v})" for k, (v, _) in vals.items()])


def _delay_text(raw: int) -> str:
    id0, skip, id1 = raw & 0xF, (raw >> 4) & 7, (raw >> 7) & 0xF
    if raw >> 11 or id0 >= len(_DELAY_ID) or id1 >= len(_DELAY_ID) or skip >= len(_DELAY_SKIP):
        return hex(raw)
    parts = [f"instid0({_DELAY_ID[id0]})"] if id0 else []
    if skip:
        parts.append(f"instskip({_DELAY_SKIP[skip]})")
    if id1:
        parts.append(f"instid1({_DELAY_ID[id1]})")
    return " | ".join(parts) or "0"


def _depctr_text(raw: int) -> str:
    """llvm-mc-19's spelling: hex when bits outside the fields are set, else the fields that
    wait (not all ones), or every field when none does."""
    if raw & 0xFFFF & ~_DEPCTR_MASK or raw >> 16:
        return hex(raw & 0xFFFF)
    vals = [(n, (raw >> sh) & ((1 << b) - 1), (1 << b) - 1) for n, sh, b in DEPCTR_FIELDS]
    waits = [(n, v) for n, v, top in vals if v != top]
    return " ".join(f"{n}({v})" for n, v in (waits or [(n, v) for n, v, _ in vals]))


def _sendmsg_text(fam: str, raw: int) -> str:
    for name, v in _SENDMSG[fam].items():
        if v == raw:
            return f"sendmsg({name})"
    return f"sendmsg({raw})"


def _hex_signed(v: int) -> str:
    return f"-{-v:#x}" if v < 0 else f"{v:#x}"


def _src_text(arch: str, op: Operand, kind: str, what: str) -> str:
    if isinstance(op, (SGPR, VGPR, Special)):
        return str(op)
    code, lit = src_code(arch, op, kind, what)
    if code == LITERAL:
        return f"{lit:#x}"
    if code in _FLOAT_TEXT:
        return _FLOAT_TEXT[code]
    return str(code - 128 if code <= 192 else 192 - code)


def _imm_text(fam: str, kind: str, op: Operand) -> str:
    if not isinstance(op, Imm):
        raise AmdEncodeError(f"expected an immediate, got {op}")
    style = KINDS[kind].style
    v = op.value
    if style in ("label", "dec16"):       # LLVM prints branch offsets as unsigned 16 bits
        return str(v & 0xFFFF)
    if style == "hex16":
        return f"{v & 0xFFFF:#x}"
    if style == "waitcnt":
        return _waitcnt_text(fam, v)
    if style == "delay":
        return _delay_text(v)
    if style == "sendmsg":
        return _sendmsg_text(fam, v)
    if style == "depctr":
        return _depctr_text(v)
    raise AmdEncodeError(f"no text for immediate kind {kind}")


def _vop_encoding(arch: str, row: Row, inst: Inst, want: str | None) -> str:
    """The format an instruction is encoded in, as :func:`kcc.encode.amd.encode` picks it."""
    if row.fmt in ("VOP1", "VOP2", "VOPC"):
        if want == "e64" or (want is None and row.e64 and not fits_e32(arch, row, inst)):
            return row.promoted_fmt
    return row.fmt


def format_inst(arch: str, inst: Inst) -> str:
    """One instruction as LLVM's AMDGPU assembly syntax (as llvm-mc-19 prints it)."""
    fam = FAMILY[arch]
    row, want = lookup(arch, inst.name)
    if len(inst.ops) != len(row.ops):
        raise AmdEncodeError(f"{inst.name}: expected {len(row.ops)} operands, got "
                             f"{len(inst.ops)}")
    enc = _vop_encoding(arch, row, inst, want)
    name = row.name
    if row.e64:
        name += "_e32" if enc == row.fmt else "_e64"
    neg, ab = inst.mod("neg") or (0, 0, 0), inst.mod("abs") or (0, 0, 0)
    parts = []
    for (field, kind), op in zip(row.ops, inst.ops):
        k = KINDS[kind] if kind != "lane" else None
        if k is not None and k.cls == "imm" and k.style != "soff":
            parts.append(_imm_text(fam, kind, op))
        elif k is not None and k.style == "soff":
            parts.append(_hex_signed(op.value) if isinstance(op, Imm) else str(op))
        elif k is not None and k.cls == "lit":
            parts.append(hex(k_literal(op, kind, f"{inst.name} K")))
        elif k is not None and k.cls == "src":
            t = _src_text(arch, op, kind, f"{inst.name} {field}")
            i = int(field[-1]) if field.startswith("src") else -1
            if i >= 0 and ab[i]:
                t = f"|{t}|"
            if i >= 0 and neg[i]:
                t = f"-{t}"
            parts.append(t)
        else:
            parts.append(str(op))
    text = f"{name} {', '.join(parts)}" if parts else name
    return text + "".join(f" {m}" for m in _mod_words(fam, row, inst))


def _mod_words(fam: str, row: Row, inst: Inst) -> list[str]:
    m = dict(inst.mods)
    out: list[str] = []
    if row.fmt == "SMEM":
        if m.get("offset"):
            out.append(f"offset:{_hex_signed(m['offset'])}")
        out += [k for k in ("glc", "dlc") if m.get(k)]
    elif row.fmt in ("FLAT", "GLOBAL", "SCRATCH"):
        if m.get("offset"):
            out.append(f"offset:{m['offset']}")
        out += [k for k in _CACHE_ORDER[fam] if m.get(k)]
    elif row.fmt == "DS":
        out += [f"{k}:{m[k]}" for k in ("offset", "offset0", "offset1") if m.get(k)]
        if m.get("gds"):
            out.append("gds")
    elif row.fmt == "VOP3P":
        # llvm-mc-19's order: op_sel, neg_lo, neg_hi, clamp (gfx11); cbsz, abid, blgp (gfx9)
        for k in ("op_sel", "op_sel_hi", "neg_lo", "neg_hi"):
            if m.get(k):
                out.append(f"{k}:[{','.join(str(int(b)) for b in m[k])}]")
        if m.get("clamp"):
            out.append("clamp")
        out += [f"{k}:{m[k]}" for k in ("cbsz", "abid", "blgp") if m.get(k)]
    else:
        if m.get("clamp"):
            out.append("clamp")
        if m.get("omod"):
            out.append(_OMOD[m["omod"]])
    return out


# ----------------------------------------------------------------------------- parser
_REG = re.compile(r"([sv])(?:(\d+)|\[(\d+):(\d+)\])$")
_FLAG_MODS = ("clamp", "glc", "slc", "dlc", "sc0", "sc1", "nt", "gds")


def _operand(arch: str, text: str, kind: str) -> tuple[Operand, bool, bool]:
    """(operand, neg, abs) of one operand's text."""
    neg = ab = False
    t = text.strip()
    k = KINDS.get(kind)
    if k is not None and k.cls == "src":
        if t.startswith("-") and (t[1:2] in ("|", "v", "s") or t[1:].isalpha()):
            neg, t = True, t[1:]
        if t.startswith("|") and t.endswith("|"):
            ab, t = True, t[1:-1]
    m = _REG.match(t)
    if m:
        lo = int(m.group(2) if m.group(2) is not None else m.group(3))
        hi = int(m.group(4)) if m.group(4) is not None else lo
        return (SGPR if m.group(1) == "s" else VGPR)(lo, hi - lo + 1), neg, ab
    if t == "off" or t in SPECIAL_CODES[FAMILY[arch]]:
        return Special(t), neg, ab
    try:
        if re.fullmatch(r"-?\d+\.\d*(e[-+]?\d+)?", t):
            f = float(t)
            return FloatImm(INV_2PI if t == "0.15915494" else f), neg, ab
        return Imm(int(t, 0)), neg, ab
    except ValueError:
        raise AmdAsmError(f"bad operand {text!r}") from None


def _symbolic(fam: str, style: str, text: str) -> Imm:
    t = text.strip()
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", t):
        return Imm(int(t, 0))
    if style == "waitcnt":
        counts = {k: int(v, 0) for k, v in re.findall(r"(\w+)\((\w+)\)", t)}
        bad = set(counts) - set(WAITCNT_FIELDS[fam])
        if bad:
            raise AmdAsmError(f"unknown s_waitcnt counter {sorted(bad)[0]}")
        return Imm(_waitcnt_pack(fam, counts))
    if style == "delay":
        raw = 0
        for key, val in re.findall(r"(\w+)\((\w+)\)", t):
            table = _DELAY_SKIP if key == "instskip" else _DELAY_ID
            if val not in table or key not in ("instid0", "instskip", "instid1"):
                raise AmdAsmError(f"bad s_delay_alu field {key}({val})")
            raw |= table.index(val) << {"instid0": 0, "instskip": 4, "instid1": 7}[key]
        return Imm(raw)
    if style == "depctr":
        raw = _DEPCTR_MASK
        fields = {n: (sh, b) for n, sh, b in DEPCTR_FIELDS}
        found = re.findall(r"(\w+)\((\w+)\)", t)
        if not found or re.sub(r"\w+\(\w+\)", "", t).strip():
            raise AmdAsmError(f"bad s_waitcnt_depctr operand {text!r}")
        for key, val in found:
            if key not in fields or not 0 <= int(val, 0) < 1 << fields[key][1]:
                raise AmdAsmError(f"bad s_waitcnt_depctr field {key}({val})")
            sh, b = fields[key]
            raw = raw & ~(((1 << b) - 1) << sh) | int(val, 0) << sh
        return Imm(raw)
    if style == "sendmsg":
        m = re.fullmatch(r"sendmsg\((\w+)\)", t)
        if m and m.group(1) in _SENDMSG[fam]:
            return Imm(_SENDMSG[fam][m.group(1)])
        if m:
            return Imm(int(m.group(1), 0))
    raise AmdAsmError(f"bad immediate {text!r}")


def parse_inst(arch: str, text: str) -> Inst:
    """Parse one line of LLVM-syntax AMD assembly (comments after ';' or '//' ignored)."""
    fam = FAMILY[arch]
    line = re.split(r"//|;", text, maxsplit=1)[0].strip()
    if not line:
        raise AmdAsmError("empty line")
    name, _, rest = line.partition(" ")
    try:
        row, _ = lookup(arch, name)
    except AmdEncodeError as e:
        raise AmdAsmError(str(e)) from None
    rest = rest.strip()
    if len(row.ops) == 1 and KINDS[row.ops[0][1]].style in ("waitcnt", "delay", "sendmsg",
                                                             "depctr"):
        return Inst(name, (_symbolic(fam, KINDS[row.ops[0][1]].style, rest),))
    # commas inside brackets belong to a modifier (op_sel:[0,0,1])
    pieces = [p.strip() for p in re.split(r",(?![^\[]*\])", rest)] if rest else []
    mods_text: list[str] = []
    if pieces:
        last = pieces[-1].split()
        pieces[-1:] = last[:1]
        mods_text = last[1:]
        if not row.ops and pieces == [""]:
            pieces = []
    if not row.ops and pieces:
        mods_text, pieces = pieces[0].split() + mods_text, []
    if len(pieces) != len(row.ops):
        raise AmdAsmError(f"{name}: expected {len(row.ops)} operands, got {len(pieces)}")
    ops: list[Operand] = []
    neg, ab = [0, 0, 0], [0, 0, 0]
    for (field, kind), p in zip(row.ops, pieces):
        k = KINDS.get(kind)
        if k is not None and k.cls == "imm" and k.style != "soff":
            imm = _symbolic(fam, k.style, p)
            if k.style == "label":          # a branch offset is signed: 65533 is -3
                imm = Imm((imm.value & 0xFFFF) - (0x10000 if imm.value & 0x8000 else 0))
            ops.append(imm)
            continue
        op, n, a = _operand(arch, p, kind)
        if (n or a) and field.startswith("src"):
            i = int(field[-1])
            neg[i], ab[i] = int(n), int(a)
        ops.append(op)
    mods: dict[str, object] = {}
    if any(neg):
        mods["neg"] = tuple(neg)
    if any(ab):
        mods["abs"] = tuple(ab)
    for word in mods_text:
        key, _, val = word.partition(":")
        if key in _FLAG_MODS and not val:
            mods[key] = True
        elif key in ("mul", "div") and val:
            mods["omod"] = {"mul:2": 1, "mul:4": 2, "div:2": 3}[word]
        elif key in ("offset", "offset0", "offset1", "cbsz", "abid", "blgp") and val:
            mods[key] = int(val, 0)
        elif (key in ("op_sel", "op_sel_hi", "neg_lo", "neg_hi")
              and re.fullmatch(r"\[[01](,[01]){1,2}\]", val)):
            # two bits on gfx942's two-source v_pk_* ops, three elsewhere
            mods[key] = tuple(int(b) for b in val[1:-1].split(","))
            if key == "op_sel_hi" and all(mods[key]):       # the default: printed by no one
                del mods[key]
        else:
            raise AmdAsmError(f"{name}: unknown modifier {word!r}")
    return Inst(name, tuple(ops), tuple(sorted(mods.items())))
