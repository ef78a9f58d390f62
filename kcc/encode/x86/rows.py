"""The x86-64 row templates: every encodable form, built as kcc.encode.x86.table's rows.

:func:`build` runs once; kcc/encode/x86/table.py keeps its result in the start-up cache while
this file, table.py and row.py are unchanged, so a compile imports this module only when the
cache is rebuilt. Row fields and operand kinds: :mod:`kcc.encode.x86.row`; section numbers are
the Intel SDM's.
"""
from __future__ import annotations

from kcc.encode.x86.row import ACCESS, CONDITION_CODES, KINDS, SLOTS, Operand, Row
from kcc.record import replace

_PARSED: dict[str, tuple[Operand, ...]] = {}


def _ops(spec: str) -> tuple[Operand, ...]:
    """Parse ``"kind/slot/access ..."`` (access r, w or rw); each distinct spec once (the
    rows share about 150 of them: built at every start-up)."""
    got = _PARSED.get(spec)
    if got is None:
        got = _PARSED[spec] = _parse_ops(spec)
    return got


def _parse_ops(spec: str) -> tuple[Operand, ...]:
    out = []
    for item in spec.split():
        kind, slot, acc = item.split("/")
        assert kind in KINDS and slot in SLOTS, item
        out.append(Operand(kind, slot, ACCESS[acc]))
    return tuple(out)


def _name(mnem: str, ops: tuple[Operand, ...]) -> str:
    kinds = [o.kind.removeprefix("s") if o.kind.startswith("simm") else o.kind for o in ops]
    return "_".join([mnem, *kinds])


_BUILT: list[Row] = []         # the rows as _build makes them (the module's ROWS: below)


def _add(mnem: str, group: str, enc: str, opcode: bytes, spec: str, **kw) -> str:
    ops = _ops(spec)
    form = kw.pop("form", None) or _name(mnem, ops)
    _BUILT.append(Row(form, mnem, group, enc, opcode, ops, **kw))
    return form


def _leg(mnem: str, group: str, opcode: str, spec: str, **kw) -> str:
    return _add(mnem, group, "legacy", bytes.fromhex(opcode), spec, **kw)


def _vex(mnem: str, group: str, pp: int, mmap: int, opcode: int, spec: str, **kw) -> str:
    return _add(mnem, group, "vex", bytes([opcode]), spec, pp=pp, mmap=mmap, **kw)


def _vxy(mnem: str, group: str, pp: int, mmap: int, opcode: int, spec: str, **kw) -> None:
    """128- and 256-bit VEX rows from one template: ``V`` is x/y, ``VM`` is xm/ym."""
    for v, vl in (("x", 0), ("y", 1)):
        s = " ".join(t.replace("VM/", v + "m/").replace("V/", v + "/") for t in spec.split())
        _vex(mnem, group, pp, mmap, opcode, s, vl=vl, **kw)


N, P66, PF3, PF2 = 0, 1, 2, 3          # VEX.pp values (§2.3.5.6)
M0F, M0F38, M0F3A = 1, 2, 3           # VEX.mmmmm values
GPR_SIZES = (8, 16, 32, 64)


def _sz(s: int) -> dict:
    """Operand-size attributes of a legacy GPR form (§2.2.1: REX.W; 66 for 16-bit)."""
    return {"prefixes": b"\x66" if s == 16 else b"", "w": s == 64}


def _hx(*b: int) -> str:
    return bytes(b).hex()


def _gpr_rows() -> None:
    # ALU group 1 (SDM "ADD"/"OR"/"AND"/"SUB"/"XOR"/"CMP"): opcodes base+0..5, 80/81/83 /digit.
    for mnem, d in (("add", 0), ("or", 1), ("and", 4), ("sub", 5), ("xor", 6), ("cmp", 7)):
        base, dst = d * 8, "r" if mnem == "cmp" else "rw"
        for s in GPR_SIZES:
            wide = s != 8
            mr = _leg(mnem, "gpr", _hx(base + wide), f"rm{s}/rm/{dst} r{s}/reg/r",
                      flags="w", **_sz(s))
            _leg(mnem, "gpr", _hx(base + 2 + wide), f"r{s}/reg/{dst} rm{s}/rm/r",
                 flags="w", rr_form=mr, **_sz(s))
            ik = {8: "imm8", 16: "imm16", 32: "imm32", 64: "simm32"}[s]
            _leg(mnem, "gpr", _hx(0x80 + wide), f"rm{s}/rm/{dst} {ik}/imm/r", digit=d,
                 flags="w", acc_opcode=bytes([base + 4 + wide]), **_sz(s))
            if wide:
                _leg(mnem, "gpr", "83", f"rm{s}/rm/{dst} simm8/imm/r", digit=d, flags="w",
                     **_sz(s))
    for s in GPR_SIZES:
        wide = s != 8
        ik = {8: "imm8", 16: "imm16", 32: "imm32", 64: "simm32"}[s]
        _leg("test", "gpr", _hx(0x84 + wide), f"rm{s}/rm/r r{s}/reg/r", flags="w", **_sz(s))
        _leg("test", "gpr", _hx(0xF6 + wide), f"rm{s}/rm/r {ik}/imm/r", digit=0, flags="w",
             acc_opcode=bytes([0xA8 + wide]), **_sz(s))
        # MOV (SDM "MOV"): 88/89 store, 8A/8B load, B0+r/B8+r imm, C6/C7 /0 imm.
        mr = _leg("mov", "gpr", _hx(0x88 + wide), f"rm{s}/rm/w r{s}/reg/r", **_sz(s))
        _leg("mov", "gpr", _hx(0x8A + wide), f"r{s}/reg/w rm{s}/rm/r", rr_form=mr, **_sz(s))
        oi = None
        if s != 64:
            oi = _leg("mov", "gpr", _hx((0xB8 if wide else 0xB0)), f"r{s}/opreg/w {ik}/imm/r",
                      **_sz(s))
        _leg("mov", "gpr", _hx(0xC6 + wide), f"rm{s}/rm/w {ik}/imm/r", digit=0, rr_form=oi,
             **_sz(s))
        # Group 3 (F6/F7): NOT /2, NEG /3, MUL /4, DIV /6, IDIV /7; rdx:rax implicit.
        wide_regs = ("rax",) if s == 8 else ("rax", "rdx")
        _leg("not", "gpr", _hx(0xF6 + wide), f"rm{s}/rm/rw", digit=2, **_sz(s))
        _leg("neg", "gpr", _hx(0xF6 + wide), f"rm{s}/rm/rw", digit=3, flags="w", **_sz(s))
        _leg("mul", "gpr", _hx(0xF6 + wide), f"rm{s}/rm/r", digit=4, flags="w",
             implicit_uses=("rax",), implicit_defs=wide_regs, **_sz(s))
        for mnem, d in (("div", 6), ("idiv", 7)):
            _leg(mnem, "gpr", _hx(0xF6 + wide), f"rm{s}/rm/r", digit=d, flags="w",
                 implicit_uses=wide_regs, implicit_defs=wide_regs, **_sz(s))
        # Group 2 shifts/rotates: C0/C1 ib, D0/D1 (by 1), D2/D3 (by cl).
        for mnem, d in (("rol", 0), ("ror", 1), ("shl", 4), ("shr", 5), ("sar", 7)):
            _leg(mnem, "gpr", _hx(0xC0 + wide), f"rm{s}/rm/rw imm8/imm/r", digit=d, flags="w",
                 one_opcode=bytes([0xD0 + wide]), **_sz(s))
            _leg(mnem, "gpr", _hx(0xD2 + wide), f"rm{s}/rm/rw cl/fixed/r", digit=d, flags="w",
                 **_sz(s))
    _leg("movabs", "gpr", "b8", "r64/opreg/w imm64/imm/r", w=True)
    for s in (16, 32, 64):
        _leg("imul", "gpr", "0faf", f"r{s}/reg/rw rm{s}/rm/r", flags="w", **_sz(s))
        _leg("imul", "gpr", "6b", f"r{s}/reg/w rm{s}/rm/r simm8/imm/r", flags="w", **_sz(s))
        ik = {16: "imm16", 32: "imm32", 64: "simm32"}[s]
        _leg("imul", "gpr", "69", f"r{s}/reg/w rm{s}/rm/r {ik}/imm/r", flags="w", **_sz(s))
    for s in (32, 64):
        for src in (8, 16):
            _leg("movzx", "gpr", _hx(0x0F, 0xB6 + (src == 16)), f"r{s}/reg/w rm{src}/rm/r",
                 **_sz(s))
            _leg("movsx", "gpr", _hx(0x0F, 0xBE + (src == 16)), f"r{s}/reg/w rm{src}/rm/r",
                 **_sz(s))
        # POPCNT/LZCNT/TZCNT: mandatory F3 prefix before REX (§2.1.1, §2.2.1).
        for mnem, op in (("popcnt", 0xB8), ("lzcnt", 0xBD), ("tzcnt", 0xBC)):
            _leg(mnem, "gpr", _hx(0x0F, op), f"r{s}/reg/w rm{s}/rm/r", prefixes=b"\xf3",
                 w=s == 64, flags="w")
    _leg("movsxd", "gpr", "63", "r64/reg/w rm32/rm/r", w=True)
    _leg("lea", "gpr", "8d", "r64/reg/w m/rm/r", w=True)
    # LEA r32, m: a 64-bit address sum truncated to 32 bits (no 67 prefix), for int32 index math
    _leg("lea", "gpr", "8d", "r32/reg/w m/rm/r")
    _leg("cdq", "gpr", "99", "", implicit_uses=("rax",), implicit_defs=("rdx",))
    _leg("cqo", "gpr", "99", "", w=True, implicit_uses=("rax",), implicit_defs=("rdx",))
    _leg("push", "gpr", "50", "r64/opreg/r", implicit_uses=("rsp",), implicit_defs=("rsp",))
    _leg("pop", "gpr", "58", "r64/opreg/w", implicit_uses=("rsp",), implicit_defs=("rsp",))
    _leg("ret", "gpr", "c3", "", implicit_uses=("rsp",), implicit_defs=("rsp",))
    _leg("nop", "gpr", "90", "")


def _cc_rows() -> None:
    for i, cc in enumerate(CONDITION_CODES):
        _leg(f"set{cc}", "cc", _hx(0x0F, 0x90 + i), "rm8/rm/w", digit=0, flags="r")
        for s in (32, 64):
            _leg(f"cmov{cc}", "cc", _hx(0x0F, 0x40 + i), f"r{s}/reg/rw rm{s}/rm/r", flags="r",
                 **_sz(s))
        _leg(f"j{cc}", "cc", _hx(0x70 + i), "rel8/rel/r", flags="r")
        _leg(f"j{cc}", "cc", _hx(0x0F, 0x80 + i), "rel32/rel/r", flags="r")
    _leg("jmp", "cc", "eb", "rel8/rel/r")
    _leg("jmp", "cc", "e9", "rel32/rel/r")


def _avx_move_rows() -> None:
    # Full-register moves: load/reg-reg form ("RM") and store form ("MR"); llvm-mc turns a
    # reg-reg move whose source alone is xmm8-15 into the MR opcode to keep the 2-byte VEX.
    for mnem, pp, ld, st in (("vmovups", N, 0x10, 0x11), ("vmovupd", P66, 0x10, 0x11),
                             ("vmovaps", N, 0x28, 0x29), ("vmovapd", P66, 0x28, 0x29),
                             ("vmovdqu", PF3, 0x6F, 0x7F), ("vmovdqa", P66, 0x6F, 0x7F)):
        _vxy(mnem, "avx_move", pp, M0F, ld, "V/reg/w VM/rm/r", rev_opcode=st)
        _vex(mnem, "avx_move", pp, M0F, st, "m128/rm/w x/reg/r")
        _vex(mnem, "avx_move", pp, M0F, st, "m256/rm/w y/reg/r", vl=1)
    for mnem, pp, sz in (("vmovss", PF3, 32), ("vmovsd", PF2, 64)):
        _vex(mnem, "avx_move", pp, M0F, 0x10, f"x/reg/w m{sz}/rm/r")
        _vex(mnem, "avx_move", pp, M0F, 0x11, f"m{sz}/rm/w x/reg/r")
        _vex(mnem, "avx_move", pp, M0F, 0x10, "x/reg/w x/vvvv/r x/rm/r", rev_opcode=0x11)
    _vex("vmovd", "avx_move", P66, M0F, 0x6E, "x/reg/w rm32/rm/r")
    _vex("vmovd", "avx_move", P66, M0F, 0x7E, "rm32/rm/w x/reg/r")
    _vex("vmovq", "avx_move", P66, M0F, 0x6E, "x/reg/w r64/rm/r", w=True)
    _vex("vmovq", "avx_move", P66, M0F, 0x7E, "r64/rm/w x/reg/r", w=True)
    _vex("vmovq", "avx_move", PF3, M0F, 0x7E, "x/reg/w xm64/rm/r", rev_opcode=0xD6,
         rev_pp=P66)
    _vex("vmovq", "avx_move", P66, M0F, 0xD6, "m64/rm/w x/reg/r")
    for mnem, pp in (("vmovmskps", N), ("vmovmskpd", P66)):
        _vxy(mnem, "avx_move", pp, M0F, 0x50, "r32/reg/w V/rm/r")
    _vxy("vpmovmskb", "avx_move", P66, M0F, 0xD7, "r32/reg/w V/rm/r")
    # Broadcasts (VEX.66.0F38.W0), sources are xmm or a scalar in memory.
    for mnem, op, src in (("vpbroadcastb", 0x78, "xm8"), ("vpbroadcastw", 0x79, "xm16"),
                          ("vpbroadcastd", 0x58, "xm32"), ("vpbroadcastq", 0x59, "xm64"),
                          ("vbroadcastss", 0x18, "xm32")):
        _vxy(mnem, "avx_move", P66, M0F38, op, f"V/reg/w {src}/rm/r")
    _vex("vbroadcastsd", "avx_move", P66, M0F38, 0x19, "y/reg/w xm64/rm/r", vl=1)
    # Element insert/extract (VEX.128.66.0F3A unless noted).
    _vex("vinsertps", "avx_move", P66, M0F3A, 0x21, "x/reg/w x/vvvv/r xm32/rm/r imm8/imm/r")
    _vex("vpinsrb", "avx_move", P66, M0F3A, 0x20, "x/reg/w x/vvvv/r r32m8/rm/r imm8/imm/r")
    _vex("vpinsrw", "avx_move", P66, M0F, 0xC4, "x/reg/w x/vvvv/r r32m16/rm/r imm8/imm/r")
    _vex("vpinsrd", "avx_move", P66, M0F3A, 0x22, "x/reg/w x/vvvv/r rm32/rm/r imm8/imm/r")
    _vex("vpinsrq", "avx_move", P66, M0F3A, 0x22, "x/reg/w x/vvvv/r rm64/rm/r imm8/imm/r",
         w=True)
    _vex("vpextrb", "avx_move", P66, M0F3A, 0x14, "r32m8/rm/w x/reg/r imm8/imm/r")
    _vex("vpextrw", "avx_move", P66, M0F, 0xC5, "r32/reg/w x/rm/r imm8/imm/r")
    _vex("vpextrw", "avx_move", P66, M0F3A, 0x15, "m16/rm/w x/reg/r imm8/imm/r")
    _vex("vpextrd", "avx_move", P66, M0F3A, 0x16, "rm32/rm/w x/reg/r imm8/imm/r")
    _vex("vpextrq", "avx_move", P66, M0F3A, 0x16, "rm64/rm/w x/reg/r imm8/imm/r", w=True)
    _vex("vextractps", "avx_move", P66, M0F3A, 0x17, "rm32/rm/w x/reg/r imm8/imm/r")
    for f, i in (("f", 0), ("i", 0x20)):
        _vex(f"vextract{f}128", "avx_move", P66, M0F3A, 0x19 + i, "xm/rm/w y/reg/r imm8/imm/r",
             vl=1)
        _vex(f"vinsert{f}128", "avx_move", P66, M0F3A, 0x18 + i,
             "y/reg/w y/vvvv/r xm/rm/r imm8/imm/r", vl=1)
    _vex("vpermq", "avx_move", P66, M0F3A, 0x00, "y/reg/w ym/rm/r imm8/imm/r", vl=1, w=True)
    _vex("vpermpd", "avx_move", P66, M0F3A, 0x01, "y/reg/w ym/rm/r imm8/imm/r", vl=1, w=True)
    _vex("vpermd", "avx_move", P66, M0F38, 0x36, "y/reg/w y/vvvv/r ym/rm/r", vl=1)
    _vex("vpermps", "avx_move", P66, M0F38, 0x16, "y/reg/w y/vvvv/r ym/rm/r", vl=1)
    # UNPCKLPS/UNPCKHPS (VEX.0F 14/15) and the PD forms (VEX.66.0F 14/15): interleave lanes.
    for mnem, pp, op in (("vunpcklps", N, 0x14), ("vunpckhps", N, 0x15),
                         ("vunpcklpd", P66, 0x14), ("vunpckhpd", P66, 0x15)):
        _vxy(mnem, "avx_move", pp, M0F, op, "V/reg/w V/vvvv/r VM/rm/r")
    _vex("vmovddup", "avx_move", PF2, M0F, 0x12, "x/reg/w xm64/rm/r")
    _vex("vmovddup", "avx_move", PF2, M0F, 0x12, "y/reg/w ym/rm/r", vl=1)
    _vxy("vshufps", "avx_move", N, M0F, 0xC6, "V/reg/w V/vvvv/r VM/rm/r imm8/imm/r")
    # VPERMILPS imm (VEX.66.0F3A.W0 04 /r ib): the same in-lane selection of one source.
    _vxy("vpermilps", "avx_move", P66, M0F3A, 0x04, "V/reg/w VM/rm/r imm8/imm/r")
    # VBROADCASTF128 ymm, m128 (VEX.256.66.0F38.W0 1A /r): a 128-bit block to both halves.
    _vex("vbroadcastf128", "avx_move", P66, M0F38, 0x1A, "y/reg/w m128/rm/r", vl=1)
    # VPERM2F128 (VEX.256.66.0F3A.W0 06 /r ib): each half is any 128-bit half of two sources.
    _vex("vperm2f128", "avx_move", P66, M0F3A, 0x06, "y/reg/w y/vvvv/r ym/rm/r imm8/imm/r",
         vl=1)
    _vxy("vshufpd", "avx_move", P66, M0F, 0xC6, "V/reg/w V/vvvv/r VM/rm/r imm8/imm/r")
    _vxy("vpshufd", "avx_move", P66, M0F, 0x70, "V/reg/w VM/rm/r imm8/imm/r")
    _vxy("vpshufb", "avx_move", P66, M0F38, 0x00, "V/reg/w V/vvvv/r VM/rm/r")
    # BLENDPS imm (VEX.66.0F3A.WIG 0C /r ib): lane i from the second source where imm8 bit i
    # is set (SDM "BLENDPS"); runs on ports 0/1/5, where INSERTPS runs on port 5 only
    _vxy("vblendps", "avx_move", P66, M0F3A, 0x0C, "V/reg/w V/vvvv/r VM/rm/r imm8/imm/r")
    for mnem, op in (("vblendvps", 0x4A), ("vblendvpd", 0x4B), ("vpblendvb", 0x4C)):
        _vxy(mnem, "avx_move", P66, M0F3A, op, "V/reg/w V/vvvv/r VM/rm/r V/is4/r")
    _vex("vzeroupper", "avx_move", N, M0F, 0x77, "")


def _avx_fp_rows() -> None:
    three = "V/reg/w V/vvvv/r VM/rm/r"
    for base, op in (("add", 0x58), ("mul", 0x59), ("sub", 0x5C), ("min", 0x5D),
                     ("div", 0x5E), ("max", 0x5F), ("sqrt", 0x51), ("cmp", 0xC2)):
        imm = " imm8/imm/r" if base == "cmp" else ""
        _vex(f"v{base}ss", "avx_fp", PF3, M0F, op, f"x/reg/w x/vvvv/r xm32/rm/r{imm}")
        _vex(f"v{base}sd", "avx_fp", PF2, M0F, op, f"x/reg/w x/vvvv/r xm64/rm/r{imm}")
        spec = "V/reg/w VM/rm/r" if base == "sqrt" else three + imm
        _vxy(f"v{base}ps", "avx_fp", N, M0F, op, spec)
        _vxy(f"v{base}pd", "avx_fp", P66, M0F, op, spec)
    for base, op in (("and", 0x54), ("andn", 0x55), ("or", 0x56), ("xor", 0x57)):
        _vxy(f"v{base}ps", "avx_fp", N, M0F, op, three)
        _vxy(f"v{base}pd", "avx_fp", P66, M0F, op, three)
    # FMA (VEX.66.0F38): packed 98/A8/B8 (+1 scalar), W0 single / W1 double; fmsub +2,
    # fnmadd +4 (SDM "VFMADD132PS..." tables).
    acc = "V/reg/rw V/vvvv/r VM/rm/r"
    fma = [(f"vfmadd{o}", b) for o, b in (("132", 0x98), ("213", 0xA8), ("231", 0xB8))]
    fma += [("vfmsub231", 0xBA), ("vfnmadd231", 0xBC)]
    for name, op in fma:
        _vxy(name + "ps", "avx_fp", P66, M0F38, op, acc)
        _vxy(name + "pd", "avx_fp", P66, M0F38, op, acc, w=True)
        _vex(name + "ss", "avx_fp", P66, M0F38, op + 1, "x/reg/rw x/vvvv/r xm32/rm/r")
        _vex(name + "sd", "avx_fp", P66, M0F38, op + 1, "x/reg/rw x/vvvv/r xm64/rm/r", w=True)
    for mnem, op in (("vroundps", 0x08), ("vroundpd", 0x09)):
        _vxy(mnem, "avx_fp", P66, M0F3A, op, "V/reg/w VM/rm/r imm8/imm/r")
    _vex("vroundss", "avx_fp", P66, M0F3A, 0x0A, "x/reg/w x/vvvv/r xm32/rm/r imm8/imm/r")
    _vex("vroundsd", "avx_fp", P66, M0F3A, 0x0B, "x/reg/w x/vvvv/r xm64/rm/r imm8/imm/r")


def _avx_cvt_rows() -> None:
    for pp, t in ((PF3, "ss"), (PF2, "sd")):
        _vex(f"vcvtsi2{t}", "avx_cvt", pp, M0F, 0x2A, "x/reg/w x/vvvv/r rm32/rm/r")
        _vex(f"vcvtsi2{t}", "avx_cvt", pp, M0F, 0x2A, "x/reg/w x/vvvv/r rm64/rm/r", w=True)
        src = "xm32" if t == "ss" else "xm64"
        _vex(f"vcvtt{t}2si", "avx_cvt", pp, M0F, 0x2C, f"r32/reg/w {src}/rm/r")
        _vex(f"vcvtt{t}2si", "avx_cvt", pp, M0F, 0x2C, f"r64/reg/w {src}/rm/r", w=True)
    _vex("vcvtss2sd", "avx_cvt", PF3, M0F, 0x5A, "x/reg/w x/vvvv/r xm32/rm/r")
    _vex("vcvtsd2ss", "avx_cvt", PF2, M0F, 0x5A, "x/reg/w x/vvvv/r xm64/rm/r")
    _vxy("vcvtdq2ps", "avx_cvt", N, M0F, 0x5B, "V/reg/w VM/rm/r")
    _vxy("vcvttps2dq", "avx_cvt", PF3, M0F, 0x5B, "V/reg/w VM/rm/r")
    # Widening (dst twice the source width) and narrowing conversions.
    for mnem, pp, mmap, op in (("vcvtdq2pd", PF3, M0F, 0xE6), ("vcvtps2pd", N, M0F, 0x5A),
                               ("vcvtph2ps", P66, M0F38, 0x13)):
        _vex(mnem, "avx_cvt", pp, mmap, op, "x/reg/w xm64/rm/r")
        _vex(mnem, "avx_cvt", pp, mmap, op, "y/reg/w xm/rm/r", vl=1)
    for mnem, op in (("vcvttpd2dq", 0xE6), ("vcvtpd2ps", 0x5A)):
        _vex(mnem, "avx_cvt", P66, M0F, op, "x/reg/w xm/rm/r")
        _vex(mnem, "avx_cvt", P66, M0F, op, "x/reg/w ym/rm/r", vl=1)
    _vex("vcvtps2ph", "avx_cvt", P66, M0F3A, 0x1D, "xm64/rm/w x/reg/r imm8/imm/r")
    _vex("vcvtps2ph", "avx_cvt", P66, M0F3A, 0x1D, "xm/rm/w y/reg/r imm8/imm/r", vl=1)
    # PMOVZX/PMOVSX (VEX.66.0F38 30-35 / 20-25): memory source is dst-width / expansion.
    for i, (sfx, x_src, y_src) in enumerate((("bw", "xm64", "xm"), ("bd", "xm32", "xm64"),
                                            ("bq", "xm16", "xm32"), ("wd", "xm64", "xm"),
                                            ("wq", "xm32", "xm64"), ("dq", "xm64", "xm"))):
        for pfx, op in (("vpmovzx", 0x30), ("vpmovsx", 0x20)):
            _vex(pfx + sfx, "avx_cvt", P66, M0F38, op + i, f"x/reg/w {x_src}/rm/r")
            _vex(pfx + sfx, "avx_cvt", P66, M0F38, op + i, f"y/reg/w {y_src}/rm/r", vl=1)
    for mnem, mmap, op in (("vpacksswb", M0F, 0x63), ("vpackuswb", M0F, 0x67),
                           ("vpackssdw", M0F, 0x6B), ("vpackusdw", M0F38, 0x2B)):
        _vxy(mnem, "avx_cvt", P66, mmap, op, "V/reg/w V/vvvv/r VM/rm/r")


def _avx_int_rows() -> None:
    three = "V/reg/w V/vvvv/r VM/rm/r"
    for mnem, op in (("vpaddb", 0xFC), ("vpaddw", 0xFD), ("vpaddd", 0xFE), ("vpaddq", 0xD4),
                     ("vpsubb", 0xF8), ("vpsubw", 0xF9), ("vpsubd", 0xFA), ("vpsubq", 0xFB),
                     ("vpmullw", 0xD5), ("vpmuludq", 0xF4), ("vpand", 0xDB),
                     ("vpandn", 0xDF), ("vpor", 0xEB), ("vpxor", 0xEF), ("vpcmpeqb", 0x74),
                     ("vpcmpeqw", 0x75), ("vpcmpeqd", 0x76), ("vpcmpgtb", 0x64),
                     ("vpcmpgtw", 0x65), ("vpcmpgtd", 0x66), ("vpunpcklbw", 0x60),
                     ("vpunpcklwd", 0x61), ("vpunpckldq", 0x62), ("vpunpcklqdq", 0x6C),
                     ("vpunpckhbw", 0x68), ("vpunpckhwd", 0x69), ("vpunpckhdq", 0x6A),
                     ("vpunpckhqdq", 0x6D)):
        _vxy(mnem, "avx_int", P66, M0F, op, three)
    for mnem, op, w in (("vpmulld", 0x40, False), ("vpcmpeqq", 0x29, False),
                        ("vpcmpgtq", 0x37, False), ("vpminsd", 0x39, False),
                        ("vpminud", 0x3B, False), ("vpmaxsd", 0x3D, False),
                        ("vpmaxud", 0x3F, False), ("vpsrlvd", 0x45, False),
                        ("vpsrlvq", 0x45, True), ("vpsravd", 0x46, False),
                        ("vpsllvd", 0x47, False), ("vpsllvq", 0x47, True)):
        _vxy(mnem, "avx_int", P66, M0F38, op, three, w=w)
    # Shifts by immediate: VEX.vvvv is the destination, ModRM.rm the source (§2.3.5.5,
    # "VEX.vvvv encodes the destination register" for the 71/72/73 /digit forms).
    for mnem, op, d in (("vpsrlw", 0x71, 2), ("vpsraw", 0x71, 4), ("vpsllw", 0x71, 6),
                        ("vpsrld", 0x72, 2), ("vpsrad", 0x72, 4), ("vpslld", 0x72, 6),
                        ("vpsrlq", 0x73, 2), ("vpsrldq", 0x73, 3), ("vpsllq", 0x73, 6),
                        ("vpslldq", 0x73, 7)):
        _vxy(mnem, "avx_int", P66, M0F, op, "V/vvvv/w V/rm/r imm8/imm/r", digit=d)
    _vxy("vptest", "avx_int", P66, M0F38, 0x17, "V/reg/r VM/rm/r", flags="w")


def _evex_rows() -> None:
    """AVX-512F/DQ forms on zmm (EVEX.512, no masking, no broadcast): full-vector memory
    operands use disp8*N with N = 64 (§2.7.5, Table 2-34 "Full Mem"/"Full")."""
    def ev(mnem: str, pp: int, mmap: int, op: int, spec: str, w: bool = False,
           n: int = 64) -> str:
        return _add(mnem, "evex", "evex", bytes([op]), spec, pp=pp, mmap=mmap, w=w, vl=2,
                    disp8_n=n)
    for mnem, pp, ld, st, w in (("vmovups", N, 0x10, 0x11, False),
                                ("vmovupd", P66, 0x10, 0x11, True),
                                ("vmovaps", N, 0x28, 0x29, False),
                                ("vmovdqu32", PF3, 0x6F, 0x7F, False),
                                ("vmovdqu64", PF3, 0x6F, 0x7F, True)):
        ev(mnem, pp, M0F, ld, "z/reg/w zm/rm/r", w)
        ev(mnem, pp, M0F, st, "m512/rm/w z/reg/r", w)
    three = "z/reg/w z/vvvv/r zm/rm/r"
    for base, op in (("add", 0x58), ("mul", 0x59), ("sub", 0x5C), ("min", 0x5D),
                     ("div", 0x5E), ("max", 0x5F), ("xor", 0x57), ("and", 0x54),
                     ("or", 0x56)):
        ev(f"v{base}ps", N, M0F, op, three)
        ev(f"v{base}pd", P66, M0F, op, three, True)
    ev("vsqrtps", N, M0F, 0x51, "z/reg/w zm/rm/r")
    for name, op in (("vfmadd132", 0x98), ("vfmadd213", 0xA8), ("vfmadd231", 0xB8)):
        ev(name + "ps", P66, M0F38, op, "z/reg/rw z/vvvv/r zm/rm/r")
        ev(name + "pd", P66, M0F38, op, "z/reg/rw z/vvvv/r zm/rm/r", True)
    for mnem, op in (("vpaddd", 0xFE), ("vpsubd", 0xFA), ("vpxord", 0xEF), ("vpandd", 0xDB)):
        ev(mnem, P66, M0F, op, three)
    ev("vpaddq", P66, M0F, 0xD4, three, True)
    ev("vpmulld", P66, M0F38, 0x40, three)
    ev("vcvtdq2ps", N, M0F, 0x5B, "z/reg/w zm/rm/r")
    ev("vcvttps2dq", PF3, M0F, 0x5B, "z/reg/w zm/rm/r")
    # 256-bit halves of a zmm (EVEX.512.66.0F3A.W1 1B/1A /r ib): Tuple4 of 64-bit elements,
    # so disp8 scales by N = 32 (§2.7.5, Table 2-35).
    ev("vextractf64x4", P66, M0F3A, 0x1B, "ym/rm/w z/reg/r imm8/imm/r", True, n=32)
    ev("vinsertf64x4", P66, M0F3A, 0x1A, "z/reg/w z/vvvv/r ym/rm/r imm8/imm/r", True, n=32)
    # 128-bit blocks of a zmm (EVEX.512.66.0F3A.W0 18/19 /r ib, VBROADCASTF32X4 0F38 1A):
    # Tuple4 of 32-bit elements, N = 16 (§2.7.5, Table 2-35); VSHUFF32X4 (0F3A 23 /r ib)
    # picks any block of the first source for the low two, of the second for the high two.
    ev("vinsertf32x4", P66, M0F3A, 0x18, "z/reg/w z/vvvv/r xm/rm/r imm8/imm/r", n=16)
    ev("vextractf32x4", P66, M0F3A, 0x19, "xm/rm/w z/reg/r imm8/imm/r", n=16)
    ev("vbroadcastf32x4", P66, M0F38, 0x1A, "z/reg/w m128/rm/r", n=16)
    ev("vshuff32x4", P66, M0F3A, 0x23, "z/reg/w z/vvvv/r zm/rm/r imm8/imm/r")
    # In-block shuffles and interleaves on zmm (EVEX.512 forms of the VEX rows, Full N = 64).
    ev("vshufps", N, M0F, 0xC6, "z/reg/w z/vvvv/r zm/rm/r imm8/imm/r")
    ev("vpermilps", P66, M0F3A, 0x04, "z/reg/w zm/rm/r imm8/imm/r")
    ev("vunpcklps", N, M0F, 0x14, three)
    ev("vunpckhps", N, M0F, 0x15, three)
    ev("vunpcklpd", P66, M0F, 0x14, three, True)
    ev("vunpckhpd", P66, M0F, 0x15, three, True)
    # Broadcasts from a scalar: Tuple1 Scalar, N = element size (§2.7.5 Table 2-35).
    ev("vbroadcastss", P66, M0F38, 0x18, "z/reg/w xm32/rm/r", n=4)
    ev("vpbroadcastd", P66, M0F38, 0x58, "z/reg/w xm32/rm/r", n=4)
    ev("vbroadcastsd", P66, M0F38, 0x19, "z/reg/w xm64/rm/r", True, n=8)
    ev("vpbroadcastq", P66, M0F38, 0x59, "z/reg/w xm64/rm/r", True, n=8)


def _bcst_rows() -> None:
    """Float ALU forms whose memory operand is one element broadcast to every lane (EVEX.b = 1,
    SDM Vol. 2 §2.7.5 "EVEX.b ... embedded broadcast"; the `m32bcst`/`m64bcst` operands of
    the opcode tables, e.g. "EVEX.512.0F.W0 59 /r VMULPS zmm1, zmm2, zmm3/m512/m32bcst"), on
    zmm (EVEX.512) and, AVX-512VL, on xmm/ymm (EVEX.128/256). disp8 scales by the element
    size (Table 2-34: Full with EVEX.b = 1, N = 4 or 8)."""
    for v, vl in (("x", 0), ("y", 1), ("z", 2)):
        for base, op in (("add", 0x58), ("mul", 0x59), ("sub", 0x5C), ("min", 0x5D),
                         ("div", 0x5E), ("max", 0x5F)):
            for sfx, pp, w, size in (("ps", N, False, 32), ("pd", P66, True, 64)):
                _add(f"v{base}{sfx}", "evex_bcst", "evex", bytes([op]),
                     f"{v}/reg/w {v}/vvvv/r m{size}bcst/rm/r", pp=pp, mmap=M0F, w=w, vl=vl,
                     disp8_n=size // 8, bcst=True)
        for name, op in (("vfmadd132", 0x98), ("vfmadd213", 0xA8), ("vfmadd231", 0xB8)):
            for sfx, w, size in (("ps", False, 32), ("pd", True, 64)):
                _add(name + sfx, "evex_bcst", "evex", bytes([op]),
                     f"{v}/reg/rw {v}/vvvv/r m{size}bcst/rm/r", pp=P66, mmap=M0F38, w=w,
                     vl=vl, disp8_n=size // 8, bcst=True)


# EVEX twins (x86-64-v4): VEX.128/256 forms that AVX-512VL (with BW and DQ, which v4 also
# has) encodes as EVEX.128/256 too, so that they can name xmm16-31/ymm16-31 (EVEX.R', V', X
# as bit 4 of a register, §2.7.2). The encoder uses a twin only when an operand is one of
# those registers, as llvm-mc does. Some have another mnemonic in EVEX (the element size of a
# bitwise op or a 128-bit block is part of the name there):
_EVEX_NAMES = {"vmovdqu": "vmovdqu32", "vmovdqa": "vmovdqa32", "vpand": "vpandd",
               "vpandn": "vpandnd", "vpor": "vpord", "vpxor": "vpxord",
               "vextractf128": "vextractf32x4", "vinsertf128": "vinsertf32x4",
               "vextracti128": "vextracti32x4", "vinserti128": "vinserti32x4",
               "vbroadcastf128": "vbroadcastf32x4"}
# ... and these have no EVEX form with vector operands: compares write a k mask in EVEX, and
# blends by a vector mask (/is4) or an imm8 (EVEX blends by a k mask), PTEST, ROUND, MOVMSK,
# VPERM2F128 and VZEROUPPER are VEX only.
_VEX_ONLY = ("vcmp", "vpcmpeq", "vpcmpgt", "vblendv", "vblendps", "vpblendvb", "vptest",
             "vround", "vmovmsk", "vpmovmskb", "vperm2f128", "vzeroupper")
# EVEX.W1 where the VEX row is W0/WIG: 64-bit elements (the VEX forms ignore W there).
_EVEX_W1 = frozenset({"vmovddup", "vmovq", "vpaddq", "vpsubq", "vpmuludq", "vpunpcklqdq",
                      "vpunpckhqdq", "vpsrlq", "vpsllq", "vpbroadcastq"})


def _evex_w(row: Row) -> bool:
    """EVEX.W of a twin: a conversion's W names its source element size (W1 for pd/sd), a
    GPR operand's width decides for the scalar integer conversions, else W1 for 64-bit
    elements (SDM Vol. 2 opcode tables, "EVEX.128.66.0F.W1 58 /r VADDPD" ...)."""
    m = row.mnemonic
    if m in ("vcvtsi2ss", "vcvtsi2sd", "vcvttss2si", "vcvttsd2si"):
        return row.w
    if m.startswith(("vcvtpd2", "vcvttpd2", "vcvtsd2")):
        return True
    if m.startswith(("vcvt", "vpmov")):
        return False
    return row.w or m in _EVEX_W1 or not m.startswith("vp") and m.endswith(("pd", "sd"))


def _evex_twins(start: int = 0) -> None:
    """Add the EVEX twin of every VEX form (from _BUILT[start] on) that has one and point the
    VEX row at it."""
    for i, row in enumerate(list(_BUILT)):
        if i < start or row.enc != "vex" or row.mnemonic.startswith(_VEX_ONLY):
            continue
        mnem = _EVEX_NAMES.get(row.mnemonic, row.mnemonic)
        mem = [KINDS[o.kind].mem_size for o in row.operands if KINDS[o.kind].mem_size]
        # disp8*N (§2.7.5): for every form here N is the size of the memory operand (Full,
        # Half, Quarter and Eighth Mem, Tuple1 Scalar/Fixed, Tuple4 and DUP alike)
        twin = Row(_name(mnem, row.operands) + "_evex", mnem, "evex_vl", "evex", row.opcode,
                   row.operands, w=_evex_w(row), pp=row.pp, mmap=row.mmap, vl=row.vl,
                   digit=row.digit, flags=row.flags, disp8_n=mem[0] if mem else 1)
        _BUILT.append(twin)
        _BUILT[i] = replace(row, evex_form=twin.form)


def _mask_rows() -> None:
    """AVX-512 opmask forms: KMOVQ (VEX.L0.0F.W1 90/91 /r, AVX512BW), compares into a k
    register (EVEX.0F.W0 / 66.0F.W1 C2 /r ib, "VCMPPS k1, xmm2, xmm3/m128, imm8") and the
    blend by a k register (EVEX.66.0F38 65 /r "VBLENDMPS xmm1 {k1}, xmm2, xmm3/m128": lanes
    whose mask bit is set come from the second source). Full-vector memory: N = VL bytes."""
    _vex("kmovq", "evex_mask", N, M0F, 0x90, "k/reg/w km64/rm/r", w=True)
    _vex("kmovq", "evex_mask", N, M0F, 0x91, "m64/rm/w k/reg/r", w=True)
    for v, vl, n in (("x", 0, 16), ("y", 1, 32), ("z", 2, 64)):
        for t, pp, w in (("s", N, False), ("d", P66, True)):
            _add(f"vcmpp{t}", "evex_mask", "evex", bytes([0xC2]),
                 f"k/reg/w {v}/vvvv/r {v}m/rm/r imm8/imm/r", pp=pp, mmap=M0F, w=w, vl=vl,
                 disp8_n=n)
            _add(f"vblendmp{t}", "evex_mask", "evex", bytes([0x65]),
                 f"{v}/reg/w k/aaa/r {v}/vvvv/r {v}m/rm/r", pp=P66, mmap=M0F38, w=w, vl=vl,
                 disp8_n=n)


def _kmask_rows() -> None:
    """x86-64-v4 opmask forms of integer compares, masked blends, zero-masked moves and mask
    logic, and VRNDSCALE (the EVEX rounding that can name xmm16-31; VROUND is VEX only).

    - VPCMP[U]B/W/D/Q k1, v2, v3/m, imm8 (EVEX.66.0F3A 3F/3E: W0 b, W1 w, AVX512BW; 1F/1E:
      W0 d, W1 q, AVX512F): imm8[2:0] the predicate (0 EQ, 1 LT, 2 LE, 4 NE, 5 NLT, 6 NLE),
      signed or (U) unsigned; one mask bit per lane.
    - VPBLENDMB/W/D/Q v1 {k1}, v2, v3/m (EVEX.66.0F38 66: W0 b, W1 w; 64: W0 d, W1 q): a lane
      whose mask bit is set comes from the second source.
    - VMOVUPS/UPD, VMOVDQU8/16/32/64 v1 {k1} {z}, v2/m (EVEX 0F 10, F2/F3 0F 6F): lanes off in
      k1 become zero, and a masked-off element of a memory source raises no fault (SDM Vol. 1
      §15.6.1, "memory fault-suppression"; Vol. 2 §2.7). Full-vector memory: N = VL bytes.
    - KAND/KOR/KXOR B/W/D/Q k1, k2, k3 (VEX.L1 0F 41/45/47: 66 W0 b (AVX512DQ), W0 w, 66 W1
      d and W1 q (AVX512BW)); KNOT k1, k2 (VEX.L0 0F 44, same pp/W); KMOVW/KMOVD k1, r32
      (VEX.L0 0F 92: W0, F2 W0): a mask's bits from a GPR; KMOVD r32, k1 (F2 0F 93 W0) back.
    - VRNDSCALEPS/PD v1, v2/m, imm8 (EVEX.66.0F3A 08 W0 / 09 W1) and VRNDSCALESS/SD x1, x2,
      x3/m32/m64, imm8 (0A W0 / 0B W1, Tuple1 Scalar: N = 4/8): imm8[1:0] the rounding mode,
      [3] suppress precision (as VROUND's), [7:4] = 0 keeps no fraction bits."""
    # the masked moves: mnemonic, pp, load opcode, store opcode, W (SDM Vol. 2: MOVUPS/MOVUPD
    # 0F 10/11, VMOVDQU8/16 F2 0F 6F/7F, VMOVDQU32/64 F3 0F 6F/7F)
    masked_moves = (("vmovups", N, 0x10, 0x11, False), ("vmovupd", P66, 0x10, 0x11, True),
                    ("vmovdqu8", PF2, 0x6F, 0x7F, False), ("vmovdqu16", PF2, 0x6F, 0x7F, True),
                    ("vmovdqu32", PF3, 0x6F, 0x7F, False), ("vmovdqu64", PF3, 0x6F, 0x7F, True))
    for v, vl, n in (("x", 0, 16), ("y", 1, 32), ("z", 2, 64)):
        for sfx, wide, w in (("b", True, False), ("w", True, True), ("d", False, False),
                             ("q", False, True)):
            for u in ("", "u"):
                _add(f"vpcmp{u}{sfx}", "evex_mask", "evex",
                     bytes([(0x3F if wide else 0x1F) - (u == "u")]),
                     f"k/reg/w {v}/vvvv/r {v}m/rm/r imm8/imm/r", pp=P66, mmap=M0F3A, w=w,
                     vl=vl, disp8_n=n)
            _add(f"vpblendm{sfx}", "evex_mask", "evex", bytes([0x66 if wide else 0x64]),
                 f"{v}/reg/w k/aaa/r {v}/vvvv/r {v}m/rm/r", pp=P66, mmap=M0F38, w=w, vl=vl,
                 disp8_n=n)
        for mnem, pp, op, _, w in masked_moves:
            _add(mnem, "evex_mask", "evex", bytes([op]), f"{v}/reg/w kz/aaa/r {v}m/rm/r",
                 pp=pp, mmap=M0F, w=w, vl=vl, disp8_n=n)
            # merge-masking: lanes off in k1 keep the destination's (read: rw)
            _add(mnem, "evex_mask", "evex", bytes([op]), f"{v}/reg/rw k/aaa/r {v}m/rm/r",
                 pp=pp, mmap=M0F, w=w, vl=vl, disp8_n=n)
        # ... and their merge-masked stores (EVEX 0F 11, F2/F3 0F 7F): lanes off in k1 are
        # not written and raise no fault (the same §15.6.1); "[mem] {k1}, v"
        for mnem, pp, _, op, w in masked_moves:
            _add(mnem, "evex_mask", "evex", bytes([op]), f"m{n * 8}/rm/w k/aaa/r {v}/reg/r",
                 pp=pp, mmap=M0F, w=w, vl=vl, disp8_n=n)
        for mnem, op, w in (("vrndscaleps", 0x08, False), ("vrndscalepd", 0x09, True)):
            _add(mnem, "evex_mask", "evex", bytes([op]), f"{v}/reg/w {v}m/rm/r imm8/imm/r",
                 pp=P66, mmap=M0F3A, w=w, vl=vl, disp8_n=n)
    # VMOVSS/VMOVSD xmm1 {k1} {z}, m32/m64 (EVEX.LIG.F3/F2.0F W0/W1 10 /r, Tuple1 Scalar): the
    # element if k1 bit 0 is set, else zero ({z}) or xmm1's own (merge-masking: the
    # destination is read); either way no fault, the masked-off element is not read
    for mnem, pp, w, bits in (("vmovss", PF3, False, 32), ("vmovsd", PF2, True, 64)):
        _add(mnem, "evex_mask", "evex", bytes([0x10]), f"x/reg/w kz/aaa/r m{bits}/rm/r",
             pp=pp, mmap=M0F, w=w, disp8_n=bits // 8)
        _add(mnem, "evex_mask", "evex", bytes([0x10]), f"x/reg/rw k/aaa/r m{bits}/rm/r",
             pp=pp, mmap=M0F, w=w, disp8_n=bits // 8)
        _add(mnem, "evex_mask", "evex", bytes([0x11]), f"m{bits}/rm/w k/aaa/r x/reg/r",
             pp=pp, mmap=M0F, w=w, disp8_n=bits // 8)
    for mnem, op, w, bits in (("vrndscaless", 0x0A, False, 32), ("vrndscalesd", 0x0B, True, 64)):
        _add(mnem, "evex_mask", "evex", bytes([op]),
             f"x/reg/w x/vvvv/r xm{bits}/rm/r imm8/imm/r", pp=P66, mmap=M0F3A, w=w,
             disp8_n=bits // 8)
    for sfx, pp, w in (("b", P66, False), ("w", N, False), ("d", P66, True), ("q", N, True)):
        for name, op in (("kand", 0x41), ("kor", 0x45), ("kxor", 0x47)):
            _vex(name + sfx, "evex_mask", pp, M0F, op, "k/reg/w k/vvvv/r k/rm/r", vl=1, w=w)
        _vex("knot" + sfx, "evex_mask", pp, M0F, 0x44, "k/reg/w k/rm/r", w=w)
    _vex("kmovw", "evex_mask", N, M0F, 0x92, "k/reg/w r32/rm/r")
    _vex("kmovd", "evex_mask", PF2, M0F, 0x92, "k/reg/w r32/rm/r")
    _vex("kmovd", "evex_mask", PF2, M0F, 0x93, "r32/reg/w k/rm/r")


def _stream_rows() -> None:
    """Non-temporal stores and SFENCE (kcc/isel/x86/stream.py), added after every other row
    (with their own EVEX twins) so that the golden cases of the rows before keep their
    register rotation. SDM "MOVNTPS/MOVNTPD/MOVNTDQ — Store Packed ... Using Non-Temporal
    Hint": VEX.128/256 and EVEX.512 0F 2B (ps), 66 0F 2B (pd, EVEX.W1), 66 0F E7 (dq, W0) /r;
    the memory operand must be aligned to its size (#GP otherwise). "SFENCE" (NP 0F AE F8):
    every store before it, non-temporal ones included, is globally visible before any store
    after it."""
    start = len(_BUILT)
    for mnem, pp, op, w in (("vmovntps", N, 0x2B, False), ("vmovntpd", P66, 0x2B, True),
                            ("vmovntdq", P66, 0xE7, False)):
        _vex(mnem, "avx_move", pp, M0F, op, "m128/rm/w x/reg/r")
        _vex(mnem, "avx_move", pp, M0F, op, "m256/rm/w y/reg/r", vl=1)
        _add(mnem, "evex", "evex", bytes([op]), "m512/rm/w z/reg/r", pp=pp, mmap=M0F, w=w,
             vl=2, disp8_n=64)
    _evex_twins(start)
    _leg("sfence", "gpr", "0faef8", "")


def _permute_rows() -> None:
    """Lane permutations by an index vector on zmm (kcc/isel/x86/shuf.py `permute`), added
    after every other row so that the golden cases of the rows before keep their register
    rotation. Full, N = 64 (§2.7.5): VPERMPS zmm1, zmm2 (the indexes), zmm3/m512
    (EVEX.512.66.0F38.W0 16 /r) picks any of 16 lanes of zmm3; VPERMI2PS zmm1 (the indexes,
    overwritten), zmm2, zmm3/m512 (EVEX.512.66.0F38.W0 77 /r) any of the 32 lanes of both
    tables (index bit 4 selects zmm3): SDM Vol. 2 "VPERMPS", "VPERMI2PS"."""
    for mnem, op, spec in (("vpermps", 0x16, "z/reg/w z/vvvv/r zm/rm/r"),
                           ("vpermi2ps", 0x77, "z/reg/rw z/vvvv/r zm/rm/r")):
        _add(mnem, "evex", "evex", bytes([op]), spec, pp=P66, mmap=M0F38, w=False, vl=2,
             disp8_n=64)


def _call_rows() -> None:
    """CALL rel32 (SDM Vol. 2 "CALL": E8 cd), added after every other row so that the golden
    cases of the rows before keep their register rotation. Not relaxed (there is no rel8
    form); a callee outside the assembled code stays a rel32 fixup, an R_X86_64_PLT32
    relocation in an object (psABI 4.4). Only the program runtime (kcc/targets/x86/program.py)
    emits it: kernels call nothing."""
    _leg("call", "cc", "e8", "rel32/rel/r", implicit_uses=("rsp",), implicit_defs=("rsp",))


def build() -> list[Row]:
    """Every row, built from the templates above (in this order: the golden files' order);
    each call builds them anew."""
    _BUILT.clear()
    _gpr_rows()
    _cc_rows()
    _avx_move_rows()
    _avx_fp_rows()
    _avx_cvt_rows()
    _avx_int_rows()
    _evex_rows()
    _evex_twins()
    _bcst_rows()
    _mask_rows()
    _kmask_rows()
    _stream_rows()
    _permute_rows()
    _call_rows()
    from kcc.encode.x86 import rows_late    # (imported here: it builds on this module)
    rows_late.build_late()
    for row in _BUILT:                # what the encoder assumes of every row
        slots = [o.slot for o in row.operands]
        assert slots.count("rm") <= 1 and slots.count("reg") <= 1, row.form
        assert row.rev_opcode is None or row.enc == "vex", row.form
    assert len(CONDITION_CODES) == 16
    return list(_BUILT)
