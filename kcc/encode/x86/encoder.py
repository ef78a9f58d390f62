"""x86-64 encoder: operands, the form-driven encoder, an Intel-syntax printer and an assembler
with branch relaxation. The forms are the rows of :mod:`kcc.encode.x86.table`.

References are to the Intel SDM Vol. 2 (ModRM/SIB §2.1, REX §2.2.1, VEX §2.3, EVEX §2.7).
"""
from __future__ import annotations

from kcc.encode.x86.row import CONDITION_CODES, FIXED_REGS, KINDS, VSIB_INDEX, Row
from kcc.encode.x86.table import FORMS, NOPS
from kcc.record import FieldTuple, field_at, record

__all__ = ["Reg", "Mem", "Imm", "Label", "Fixup", "EncodeError", "OperandRole", "FORMS",
           "CONDITION_CODES", "encode", "format_intel", "Assembler", "operand_roles",
           "writes_flags", "reads_flags", "reads_memory", "writes_memory", "is_two_address",
           "is_branch", "branch_forms", "implicit_uses", "implicit_defs", "reg_info",
           "nop_padding"]


class EncodeError(ValueError):
    """An instruction that cannot be encoded (unknown form, wrong operand, out of range)."""


@record(frozen=True)
class Reg:
    """A register by its Intel name: rax, eax, ax, al, r8d, xmm3, ymm12, zmm5, k1."""
    name: str


@record(frozen=True)
class Mem:
    """A memory operand ``size ptr [base + scale*index + disp]`` or ``[rip + label + disp]``."""
    size: int
    base: str | None
    index: str | None = None
    scale: int = 1
    disp: int = 0
    label: str | None = None


@record(frozen=True)
class Imm:
    """An immediate."""
    value: int


@record(frozen=True)
class Label:
    """A branch target."""
    name: str


@record(frozen=True)
class Fixup:
    """A field to patch: value = S + addend - P, P = address of the field at ``offset``."""
    offset: int
    kind: str        # "pc32" (RIP-relative data), "rel32" or "rel8" (branches)
    target: str
    addend: int


Op = Reg | Mem | Imm | Label


class RegInfo(FieldTuple):
    """Class ("gpr", "vec", "mask"), width in bytes and hardware number of a register.
    (kcc.record's FieldTuple: neither typing nor the collections package at start-up)"""
    __slots__ = ()
    _fields = ("cls", "size", "num")
    cls: str = field_at(0)
    size: int = field_at(1)
    num: int = field_at(2)

    def __new__(cls_, cls: str, size: int, num: int) -> RegInfo:
        return tuple.__new__(cls_, (cls, size, num))


def _registers() -> dict[str, RegInfo]:
    regs: dict[str, RegInfo] = {}
    legacy = ("ax", "cx", "dx", "bx", "sp", "bp", "si", "di")
    for n, b in enumerate(legacy):
        regs["r" + b] = RegInfo("gpr", 8, n)
        regs["e" + b] = RegInfo("gpr", 4, n)
        regs[b] = RegInfo("gpr", 2, n)
        regs[b[0] + "l" if n < 4 else b + "l"] = RegInfo("gpr", 1, n)
    for n in range(8, 16):
        for sfx, s in (("", 8), ("d", 4), ("w", 2), ("b", 1)):
            regs[f"r{n}{sfx}"] = RegInfo("gpr", s, n)
    for n in range(32):
        for p, s in (("xmm", 16), ("ymm", 32), ("zmm", 64)):
            regs[f"{p}{n}"] = RegInfo("vec", s, n)
    for n in range(8):
        regs[f"k{n}"] = RegInfo("mask", 8, n)
    return regs


REGISTERS: dict[str, RegInfo] = _registers()
_NEED_REX8 = frozenset({"spl", "bpl", "sil", "dil"})     # §2.2.1.2: byte regs 4-7 need REX
_GPR64 = {i.num: n for n, i in REGISTERS.items() if i.cls == "gpr" and i.size == 8}
_PTR = {1: "byte", 2: "word", 4: "dword", 8: "qword", 16: "xmmword", 32: "ymmword",
        64: "zmmword"}


def reg_info(name: str) -> RegInfo:
    """Class, width and number of a register name; EncodeError if it is unknown."""
    try:
        return REGISTERS[name]
    except KeyError:
        hint = " (ah/bh/ch/dh are not supported)" if name in ("ah", "bh", "ch", "dh") else ""
        raise EncodeError(f"unknown x86 register {name!r}{hint}") from None


# ----------------------------------------------------------------------------- row queries
@record(frozen=True)
class OperandRole:
    """How one explicit operand is used: access "def"/"use"/"defuse", register class (None
    for immediates, labels and memory-only operands), whether memory is allowed, and the
    fixed 64-bit register it must be (e.g. "rcx" for a shift count) or None."""
    access: str
    cls: str | None
    may_be_mem: bool
    fixed: str | None = None


def _row(form: str) -> Row:
    try:
        return FORMS[form]
    except KeyError:
        raise EncodeError(f"unknown x86 form {form!r}") from None


def operand_roles(form: str) -> tuple[OperandRole, ...]:
    """Per explicit operand of ``form``: def/use/defuse, register class, memory allowed."""
    out = []
    for o in _row(form).operands:
        k = KINDS[o.kind]
        out.append(OperandRole(o.access, k.cls, k.mem_size is not None and k.mem_size > 0,
                               FIXED_REGS.get(o.kind)))
    return tuple(out)


def writes_flags(form: str) -> bool:
    """True when the form writes (or leaves undefined) RFLAGS."""
    return "w" in _row(form).flags


def reads_flags(form: str) -> bool:
    """True when the form reads RFLAGS (Jcc, SETcc, CMOVcc)."""
    return "r" in _row(form).flags


def _mem_access(form: str, ops: tuple, acc: tuple[str, ...]) -> bool:
    row = _row(form)
    for i, o in enumerate(row.operands):
        k = KINDS[o.kind]
        if o.access in acc and k.mem_size:        # mem_size 0 is lea's address-only operand
            if not ops or isinstance(ops[i], Mem):
                return True
    return False


def reads_memory(form: str, *ops: Op) -> bool:
    """Whether the form loads from memory; without ``ops``, whether it can."""
    return _mem_access(form, ops, ("use", "defuse"))


def writes_memory(form: str, *ops: Op) -> bool:
    """Whether the form stores to memory; without ``ops``, whether it can."""
    return _mem_access(form, ops, ("def", "defuse"))


def is_two_address(form: str) -> bool:
    """True when an operand is both read and written (dest must equal the first source)."""
    return any(o.access == "defuse" for o in _row(form).operands)


# the branch forms (a rel8/rel32 operand) and each branch mnemonic's forms by width, derived
# from the rows once: the assembler asks about every item of every function
# Relaxable branches (jcc, jmp) to labels of the same code; CALL's rel32 is no branch here: its
# callee may lie outside (a fixup), and it has no rel8 form to relax to.
_BRANCH_FORMS = frozenset(form for form, mnem, _ in FORMS.rel if mnem != "call")
_REL_FORMS: dict[str, dict[str, str]] = {}
for _form, _mnem, _kind in FORMS.rel:
    _REL_FORMS.setdefault(_mnem, {})[_kind] = _form


class _RmPositions(dict):
    """Each form's "rm" operand positions (at most one, _self_check), found when first
    asked for (the form table makes its rows when first asked for: kcc.encode.x86.table)."""

    def __missing__(self, form: str) -> tuple[int, ...]:
        at = self[form] = tuple(k for k, o in enumerate(FORMS[form].operands)
                                if o.slot == "rm")
        return at


_RM_AT = _RmPositions()


def is_branch(form: str) -> bool:
    """True for jmp/jcc forms (a ``rel8``/``rel32`` operand)."""
    if form in _BRANCH_FORMS:
        return True
    _row(form)                              # EncodeError for an unknown form
    return False


def branch_forms(form: str) -> tuple[str, str]:
    """The (rel8, rel32) pair of forms for a branch mnemonic, found from the rows."""
    pair = _REL_FORMS.get(_row(form).mnemonic, {})
    if set(pair) != {"rel8", "rel32"}:
        raise EncodeError(f"{form!r} is not a relaxable branch")
    return pair["rel8"], pair["rel32"]


def implicit_uses(form: str) -> tuple[str, ...]:
    """64-bit registers read but not named (e.g. rax, rdx for div)."""
    return _row(form).implicit_uses


def implicit_defs(form: str) -> tuple[str, ...]:
    """64-bit registers written but not named (e.g. rdx for cqo)."""
    return _row(form).implicit_defs


# ----------------------------------------------------------------------------- checking
def _check(row: Row, ops: tuple) -> None:
    if len(ops) != len(row.operands):
        raise EncodeError(f"{row.form}: expected {len(row.operands)} operands, got {len(ops)}")
    vec_limit = 32 if row.enc == "evex" or row.evex_form is not None else 16
    for i, (o, v) in enumerate(zip(row.operands, ops)):
        k = KINDS[o.kind]
        if isinstance(v, Reg):
            info = REGISTERS.get(v.name)
            if info is not None and k.cls is not None and info.cls == k.cls \
                    and info.size == k.reg_size and info.num < vec_limit \
                    and o.kind not in FIXED_REGS:
                continue                    # the common case, without building messages
            info = reg_info(v.name)
            where = f"{row.form} operand {i} ({o.kind})"
            if k.cls is None or info.cls != k.cls or info.size != k.reg_size:
                raise EncodeError(f"{where}: register {v.name} not allowed")
            if o.kind in FIXED_REGS and v.name != o.kind:
                raise EncodeError(f"{where}: must be {o.kind}")
            if o.slot == "aaa" and info.num == 0:
                raise EncodeError(f"{where}: k0 as an opmask means no masking (§2.7.1)")
            if info.cls == "vec" and info.num >= vec_limit:
                raise EncodeError(f"{where}: {v.name} needs EVEX; this form is {row.enc}")
            continue
        where = f"{row.form} operand {i} ({o.kind})"
        if isinstance(v, Mem):
            if k.mem_size is None:
                raise EncodeError(f"{where}: memory operand not allowed")
            if k.mem_size and v.size != k.mem_size:
                raise EncodeError(f"{where}: memory size {v.size}, form needs {k.mem_size}")
            _check_mem(v, where, o.kind)
        elif isinstance(v, Imm):
            if o.slot != "imm":
                raise EncodeError(f"{where}: immediate not allowed")
            lo = -(1 << (k.imm_bits - 1))
            hi = (1 << (k.imm_bits - (1 if k.imm_signed else 0))) - 1
            if not lo <= v.value <= hi:
                raise EncodeError(f"{where}: immediate {v.value} out of range [{lo}, {hi}]")
        elif isinstance(v, Label):
            if o.slot != "rel":
                raise EncodeError(f"{where}: label not allowed")
        else:
            raise EncodeError(f"{where}: not an operand: {v!r}")


def _check_mem(m: Mem, where: str, kind: str = "") -> None:
    vsib = VSIB_INDEX.get(kind)
    if vsib is not None:
        # VSIB (§2.3.12): a vector index is required, and no RIP-relative form exists
        info = None if m.index is None else reg_info(m.index)
        if info is None or (info.cls, info.size) != vsib or m.label is not None:
            raise EncodeError(f"{where}: VSIB needs a {vsib[1] * 8}-bit vector index")
    for r in (m.base, m.index if vsib is None else None):
        if r is not None:
            info = reg_info(r)
            if info.cls != "gpr" or info.size != 8:
                raise EncodeError(f"{where}: address register {r} must be a 64-bit GPR")
    if m.index == "rsp":
        raise EncodeError(f"{where}: rsp cannot be an index (§2.1.5 Table 2-3)")
    if m.scale not in (1, 2, 4, 8):
        raise EncodeError(f"{where}: scale {m.scale} not in 1, 2, 4, 8")
    if m.label is not None and (m.base is not None or m.index is not None):
        raise EncodeError(f"{where}: RIP-relative [rip + {m.label}] takes no base or index")
    if m.label is None and m.base is None and m.index is None:
        raise EncodeError(f"{where}: absolute addresses are not supported")
    if not -(1 << 31) <= m.disp < (1 << 31):
        raise EncodeError(f"{where}: displacement {m.disp} does not fit 32 bits")


# ----------------------------------------------------------------------------- ModRM/SIB
class _ModRM(FieldTuple):
    __slots__ = ()
    _fields = ("body", "b", "x", "rip_at")
    body: bytes = field_at(0)   # ModRM [SIB] [disp]
    b: int = field_at(1)        # REX.B / VEX.B source: bit 3 of base or rm register
    x: int = field_at(2)        # REX.X / VEX.X: bit 3 of index; EVEX reg-rm: bit 4 of rm
    rip_at: int = field_at(3)   # offset of the disp32 inside body for RIP-relative, else -1

    def __new__(cls, body: bytes, b: int, x: int, rip_at: int) -> _ModRM:
        return tuple.__new__(cls, (body, b, x, rip_at))


def _modrm(reg: int, rm: Reg | Mem, n: int) -> _ModRM:
    """ModRM/SIB/displacement (§2.1.5 Tables 2-2, 2-3); ``n`` is the EVEX disp8 scale."""
    if isinstance(rm, Reg):
        num = reg_info(rm.name).num
        return _ModRM(bytes([0xC0 | (reg & 7) << 3 | num & 7]), num >> 3 & 1, num >> 4 & 1, -1)
    if rm.label is not None:
        # mod=00 rm=101: RIP + disp32 in 64-bit mode (§2.2.1.6).
        return _ModRM(bytes([(reg & 7) << 3 | 5]) + b"\0\0\0\0", 0, 0, 1)
    base = None if rm.base is None else reg_info(rm.base).num
    index = None if rm.index is None else reg_info(rm.index).num
    disp = rm.disp
    if base is None:
        mod, dbytes = 0, disp.to_bytes(4, "little", signed=True)   # SIB base=101, mod=00
    elif disp == 0 and base & 7 != 5:      # rbp/r13 as base always need a displacement
        mod, dbytes = 0, b""
    elif disp % n == 0 and -128 <= disp // n <= 127:     # disp8 (EVEX: disp8*N, §2.7.5)
        mod, dbytes = 1, (disp // n).to_bytes(1, "little", signed=True)
    else:
        mod, dbytes = 2, disp.to_bytes(4, "little", signed=True)
    if index is None and base is not None and base & 7 != 4:
        body = bytes([mod << 6 | (reg & 7) << 3 | base & 7])
    else:                                   # SIB: rsp/r12 base, an index, or no base
        sib_index = 4 if index is None else index & 7
        sib_base = 5 if base is None else base & 7
        scale = {1: 0, 2: 1, 4: 2, 8: 3}[rm.scale]
        body = bytes([mod << 6 | (reg & 7) << 3 | 4, scale << 6 | sib_index << 3 | sib_base])
    bb = 0 if base is None else base >> 3 & 1
    xx = 0 if index is None else index >> 3 & 1
    return _ModRM(body + dbytes, bb, xx, -1)


# ----------------------------------------------------------------------------- encoder
def _num(op: Reg) -> int:
    return reg_info(op.name).num


def _encode_row(row: Row, ops: tuple, swap: bool = False) -> tuple[bytes, list[Fixup]]:
    """Encode checked operands with ``row``; ``swap`` exchanges the reg and rm slots and uses
    the row's reverse ("MR") opcode."""
    slots: dict[str, Op] = {}
    imm_size = 0
    for o, v in zip(row.operands, ops):
        slot = o.slot
        if swap and slot in ("reg", "rm"):
            slot = "rm" if slot == "reg" else "reg"
        slots[slot] = v
        if slot in ("imm", "rel"):
            imm_size = KINDS[o.kind].imm_bits // 8
    trail = imm_size + ("is4" in slots)     # bytes after the disp32 (is4 is an imm8)
    opcode = row.opcode
    pp = row.pp
    if swap:
        opcode, pp = bytes([row.rev_opcode]), row.rev_pp if row.rev_pp is not None else row.pp
    reg_field = row.digit if row.digit is not None else (
        _num(slots["reg"]) if "reg" in slots else 0)
    modrm = _modrm(reg_field, slots["rm"], row.disp8_n) if "rm" in slots else None
    if "opreg" in slots:                    # "+r": register number in opcode bits 2:0
        num = _num(slots["opreg"])
        opcode = opcode[:-1] + bytes([opcode[-1] | num & 7])
        modrm = _ModRM(b"", num >> 3 & 1, 0, -1)
    r_bit = reg_field >> 3 & 1
    if row.enc == "legacy":
        prefix = _legacy_prefix(row, ops, r_bit, modrm)
    else:
        vvvv = _num(slots["vvvv"]) if "vvvv" in slots else 0
        m = slots.get("rm")
        if isinstance(m, Mem) and m.index is not None and m.index[0] in "xyz":
            # a VSIB index: SIB.index and X hold its bits 2:0 and 3, EVEX.V' its bit 4
            # (§2.7.1 Table 2-30; the form has no vvvv register, vvvv stays 1111b)
            vvvv |= reg_info(m.index).num & 16
        if row.enc == "vex":
            prefix = _vex_prefix(row, pp, r_bit, modrm, vvvv)
        else:
            aaa = _num(slots["aaa"]) if "aaa" in slots else 0
            z = any(o.kind == "kz" for o in row.operands)
            prefix = _evex_prefix(row, pp, reg_field, modrm, vvvv, aaa, z)
    out = bytearray(prefix + opcode)
    fixups: list[Fixup] = []
    if modrm is not None:
        if modrm.rip_at >= 0:
            m = slots["rm"]
            assert isinstance(m, Mem) and m.label is not None
            # Value S + A - P must equal target - (address of next instruction): the
            # disp32 is followed by 4 bytes of itself and ``trail`` immediate bytes.
            fixups.append(Fixup(len(out) + modrm.rip_at, "pc32", m.label,
                                m.disp - 4 - trail))
        out += modrm.body
    if "is4" in slots:                      # /is4: register number in imm8[7:4] (§2.3.5.8)
        out.append(_num(slots["is4"]) << 4)
    if "imm" in slots:
        value = slots["imm"].value
        out += (value & ((1 << 8 * imm_size) - 1)).to_bytes(imm_size, "little")
    if "rel" in slots:
        fixups.append(Fixup(len(out), f"rel{imm_size * 8}", slots["rel"].name, -imm_size))
        out += bytes(imm_size)
    return bytes(out), fixups


def _legacy_prefix(row: Row, ops: tuple, r: int, modrm: _ModRM | None) -> bytes:
    """Legacy prefixes then REX = 0100WRXB (§2.2.1.2); REX is required for W, any extended
    register, or the byte registers spl/bpl/sil/dil."""
    x = modrm.x if modrm is not None else 0
    b = modrm.b if modrm is not None else 0
    rex = row.w << 3 | r << 2 | x << 1 | b
    need = rex != 0 or any(isinstance(v, Reg) and v.name in _NEED_REX8 for v in ops)
    return row.prefixes + (bytes([0x40 | rex]) if need else b"")


def _vex_prefix(row: Row, pp: int, r: int, modrm: _ModRM | None, vvvv: int) -> bytes:
    """2-byte C5 form when X=B=0, W=0 and map 0F, else the 3-byte C4 form (§2.3.5.1)."""
    x = modrm.x if modrm is not None else 0
    b = modrm.b if modrm is not None else 0
    tail = (~vvvv & 15) << 3 | row.vl << 2 | pp
    if not x and not b and not row.w and row.mmap == 1:
        return bytes([0xC5, (r ^ 1) << 7 | tail])
    return bytes([0xC4, (r ^ 1) << 7 | (x ^ 1) << 6 | (b ^ 1) << 5 | row.mmap,
                  row.w << 7 | tail])


def _evex_prefix(row: Row, pp: int, reg: int, modrm: _ModRM | None, vvvv: int,
                 aaa: int, z: bool = False) -> bytes:
    """62 P0 P1 P2 (§2.7.1, Table 2-30): P0 = R X B R' 0 mmm, P1 = W vvvv 1 pp,
    P2 = z L'L b V' aaa; R/X/B/R'/vvvv/V' are stored inverted. For a register rm, EVEX.X
    holds bit 4 of its number (§2.7.2); for memory it is the index's bit 3. aaa is the
    opmask register (0: no masking); z zeroes the masked-off lanes instead of merging."""
    assert modrm is not None
    x = modrm.x
    p0 = ((reg >> 3 & 1) ^ 1) << 7 | (x ^ 1) << 6 | (modrm.b ^ 1) << 5 | \
        ((reg >> 4 & 1) ^ 1) << 4 | row.mmap
    p1 = row.w << 7 | (~vvvv & 15) << 3 | 4 | pp
    p2 = z << 7 | row.vl << 5 | row.bcst << 4 | ((vvvv >> 4 & 1) ^ 1) << 3 | aaa & 7
    return bytes([0x62, p0, p1, p2])


def encode(form: str, *ops: Op) -> tuple[bytes, list[Fixup]]:
    """Encode one instruction of ``form``. Returns its bytes and fixups (RIP-relative labels
    as "pc32", branch labels as "rel8"/"rel32", each with an S + A - P addend)."""
    row = _row(form)
    _check(row, ops)
    return _encode_checked(row, ops)


def _needs_evex(row: Row, ops: tuple) -> bool:
    """A VEX form naming a vector register 16-31, which only its EVEX twin can (§2.7.2)."""
    return row.evex_form is not None and any(
        isinstance(v, Reg) and REGISTERS[v.name].cls == "vec" and REGISTERS[v.name].num >= 16
        for v in ops)


def _encode_checked(row: Row, ops: tuple) -> tuple[bytes, list[Fixup]]:
    if _needs_evex(row, ops):
        row = FORMS[row.evex_form]          # type: ignore[index]
    # The alternates below are the encodings llvm-mc chooses for the same assembly text;
    # both are correct, matching them keeps the golden comparison byte-exact.
    rm_ops = [ops[k] for k in _RM_AT[row.form]]
    if row.rr_form is not None and all(isinstance(v, Reg) for v in rm_ops):
        return _encode_row(FORMS[row.rr_form], ops)
    if row.acc_opcode is not None and isinstance(ops[0], Reg) and _num(ops[0]) == 0:
        # Accumulator short forms (SDM "ADD AL, imm8" / "ADD EAX, imm32" ...): no ModRM.
        imm_op = row.imm_operand
        assert imm_op is not None
        size = KINDS[imm_op.kind].imm_bits // 8
        rex = b"\x48" if row.w else b""
        value = ops[1].value & ((1 << 8 * size) - 1)
        return row.prefixes + rex + row.acc_opcode + value.to_bytes(size, "little"), []
    if row.one_opcode is not None and ops[1].value == 1:
        one = Row(row.form, row.mnemonic, row.group, row.enc, row.one_opcode,
                  row.operands[:1], row.prefixes, row.w, digit=row.digit)
        return _encode_row(one, ops[:1])
    if row.rev_opcode is not None and isinstance(rm_ops[0], Reg):
        reg_op = next(v for o, v in zip(row.operands, ops) if o.slot == "reg")
        if _num(reg_op) < 8 <= _num(rm_ops[0]):
            return _encode_row(row, ops, swap=True)
    return _encode_row(row, ops)


# ----------------------------------------------------------------------------- printer
def _fmt_mem(m: Mem, sized: bool) -> str:
    if m.label is not None:
        inner = f"rip + {m.label}"
        terms: list[str] = []
    else:
        inner = ""
        terms = [m.base] if m.base else []
        if m.index:
            terms.append(f"{m.scale}*{m.index}" if m.scale != 1 else m.index)
        inner = " + ".join(terms)
    if m.disp or not inner:
        sign = "-" if m.disp < 0 else "+"
        inner = f"{inner} {sign} {abs(m.disp)}" if inner else str(m.disp)
    text = f"[{inner}]"
    return f"{_PTR[m.size]} ptr {text}" if sized else text


def format_intel(form: str, *ops: Op) -> str:
    """Intel-syntax text of one instruction, as llvm-mc reads it, e.g.
    ``vaddps ymm0, ymm1, ymmword ptr [rdi + 4*rax + 8]`` (the EVEX twin's mnemonic where a VEX
form names xmm16-31, e.g. ``vpxord``). Branches print the plain mnemonic
    (``jne .L1``) for both the rel8 and rel32 forms."""
    row = _row(form)
    _check(row, ops)
    if _needs_evex(row, ops):
        row = FORMS[row.evex_form]          # type: ignore[index]
    parts = []
    for o, v in zip(row.operands, ops):
        if o.slot == "aaa":
            parts[-1] += f" {{{v.name}}}"          # the opmask follows the destination
            if o.kind == "kz":
                parts[-1] += " {z}"
        elif isinstance(v, Reg):
            parts.append(v.name)
        elif isinstance(v, Mem):
            text = _fmt_mem(v, KINDS[o.kind].mem_size != 0)
            if row.bcst:                    # the element count: vector bytes / element bytes
                text += f"{{1to{(16 << row.vl) // v.size}}}"
            parts.append(text)
        elif isinstance(v, Imm):
            parts.append(str(v.value))
        else:
            parts.append(v.name)
    return f"{row.mnemonic} {', '.join(parts)}" if parts else row.mnemonic


# ----------------------------------------------------------------------------- assembler
def nop_padding(n: int) -> bytes:
    """``n`` bytes of no-ops: 10-byte NOPs, then one NOP of the rest (as llvm-mc pads)."""
    longest = len(NOPS[-1])
    out = NOPS[-1] * (n // longest)
    return out + (NOPS[n % longest - 1] if n % longest else b"")


# Every non-branch instruction this process encoded: (id of its row, its operands) → its bytes
# and fixups, a function of the two alone (not of its address). A compile's instructions are
# mostly its previous compiles' (tinygrad's BEAM compiles many versions of one kernel in one
# process; kernels share prologues, loads, stores), so they skip the operand checks and the
# encoding. An entry holds its row too, so that the id in its key names that row while the
# entry lives (a test may replace a form's row; a new row could take a freed row's id).
# Cleared when it grows past _ENCODED_MAX entries, so a long process holds a bounded table.
_ENCODED: dict[tuple, tuple[tuple[bytes, list[Fixup]], Row]] = {}
_ENCODED_MAX = 1 << 16


class Assembler:
    """Assembles a sequence of instructions, labels and alignments. Branches to labels defined
    here are relaxed: rel8 where the displacement fits, else rel32; RIP-relative operands whose
    label is defined here are resolved; the rest stay as "pc32" fixups. Alignments are
    relative to the start of the code: place it at a multiple of ``max_align``."""

    def __init__(self) -> None:
        self._items: list[tuple[str, Row | None, tuple]] = []
        self._labels: dict[str, int] = {}
        self._aligns: dict[int, int] = {}
        self.max_align = 1
        # each instruction's (row, operands) → the first item of it; an item equal to an
        # earlier one → that one (its checks passed, and its bytes and fixups, which do not
        # depend on its position unless it is a branch, are the same: a kernel with
        # non-temporal stores holds its body twice, half of exp2's items)
        self._first: dict[tuple, int] = {}
        self._same: dict[int, int] = {}

    def align(self, n: int) -> None:
        """Pad with NOPs so that the next item starts at a multiple of ``n`` (a power of 2)."""
        if n < 1 or n & (n - 1):
            raise EncodeError(f"alignment {n} is not a power of 2")
        self._aligns[len(self._items)] = n
        self._items.append(("", None, ()))
        self.max_align = max(self.max_align, n)

    def label(self, name: str) -> None:
        """Define ``name`` at the current position."""
        if name in self._labels:
            raise EncodeError(f"label {name!r} defined twice")
        self._labels[name] = len(self._items)
        self._items.append((name, None, ()))

    def emit(self, form: str, *ops: Op) -> None:
        """Append one instruction (a branch form of either width may be given)."""
        row = _row(form)
        key = (id(row), ops)          # (rows live in FORMS: one object per form)
        first = self._first.get(key)
        if first is None:
            if key not in _ENCODED:          # (one in the table passed these checks before)
                _check(row, ops)
            self._first[key] = len(self._items)
        else:
            self._same[len(self._items)] = first
        self._items.append(("", row, ops))

    def finish(self) -> tuple[bytes, list[Fixup]]:
        """Lay out, relax branches, resolve local labels; return bytes and remaining fixups."""
        encoded: list[tuple[bytes, list[Fixup]]] = []
        long: set[int] = set()
        branch = [row is not None and row.form in _BRANCH_FORMS for _, row, _ in self._items]
        for i, (_, row, ops) in enumerate(self._items):
            if branch[i]:
                if ops[0].name not in self._labels:
                    raise EncodeError(f"branch to undefined label {ops[0].name!r}")
        # only a branch's bytes depend on `long` and an alignment's on its address: every
        # other item is encoded once, or takes the encoding of an equal item before it
        fixed: list[tuple[bytes, list[Fixup]] | None] = []
        same = self._same
        table = _ENCODED
        if len(table) > _ENCODED_MAX:
            table.clear()
        for i, (_, row, ops) in enumerate(self._items):
            if branch[i]:
                fixed.append(None)
                continue
            j = same.get(i)
            if j is not None:
                fixed.append(fixed[j])
            elif row is None:
                fixed.append((b"", []))
            else:
                key = (id(row), ops)
                hit = table.get(key)
                if hit is None:
                    hit = table[key] = (_encode_checked(row, ops), row)
                fixed.append(hit[0])
        while True:                      # `long` only grows, so this reaches a fixed point
            encoded = []
            addr = [0]
            for i, f in enumerate(fixed):
                if i in self._aligns:
                    f = (nop_padding(-addr[-1] % self._aligns[i]), [])
                elif f is None:
                    f = self._encode_item(i, long)
                encoded.append(f)
                addr.append(addr[-1] + len(f[0]))
            grew = False
            for i, (b, fx) in enumerate(encoded):
                for f in fx:
                    if f.kind == "rel8":
                        target = addr[self._labels[f.target]]
                        if not -128 <= target + f.addend - (addr[i] + f.offset) <= 127:
                            long.add(i)
                            grew = True
            if not grew:
                break
        out = bytearray()
        rest: list[Fixup] = []
        for i, (b, fx) in enumerate(encoded):
            start = len(out)
            out += b
            for f in fx:
                p = start + f.offset
                if f.target not in self._labels:
                    rest.append(Fixup(p, f.kind, f.target, f.addend))
                    continue
                value = addr[self._labels[f.target]] + f.addend - p
                size = 1 if f.kind == "rel8" else 4
                out[p:p + size] = value.to_bytes(size, "little", signed=True)
        return bytes(out), rest

    def _encode_item(self, i: int, long: set[int]) -> tuple[bytes, list[Fixup]]:
        _, row, ops = self._items[i]
        if row is None:
            return b"", []
        if row.form in _BRANCH_FORMS:
            short, near = branch_forms(row.form)
            row = FORMS[near if i in long else short]
        return _encode_checked(row, ops)

