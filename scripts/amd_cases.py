"""Representative AMD assembly cases for every row of kcc's AMD tables.

The text is written by this module from each row's operand kinds, never by kcc's printer, and
then assembled by llvm-mc-19 in scripts/regen_golden.py. For each row: low registers, high
registers (v255, s100-s105, aligned tuples), SGPR and special-register sources, inline
integers (-16, 64, -1) and floats (0.5, -4.0, 1/(2*pi)), 32-bit literals, negative and
maximal offsets, and every modifier the format has (neg/abs/clamp/omod, glc/slc/dlc or
sc0/sc1/nt, DS offset0/offset1, the matrix ops' neg_lo/neg_hi/op_sel/clamp or cbsz/abid/blgp).
"""
from __future__ import annotations

from kcc.encode.amd.table import FAMILY, KINDS, WAVE_SIZE, Row

_FLOATS = ("f16", "f32", "f64")


def _v(i: int, n: int) -> str:
    return f"v{i}" if n == 1 else f"v[{i}:{i + n - 1}]"


def _s(i: int, n: int) -> str:
    return f"s{i}" if n == 1 else f"s[{i}:{i + n - 1}]"


def _align(i: int, n: int) -> int:
    a = 1 if n == 1 else 2 if n == 2 else 4
    return i - i % a


class _Gen:
    """Renders operand text for one row and arch."""

    def __init__(self, arch: str, row: Row) -> None:
        self.arch, self.row = arch, row
        self.fam = FAMILY[arch]
        self.wave = WAVE_SIZE[arch]
        self.top_s = 105 if self.fam == "gfx11" else 101

    def lane(self, style: str) -> str:
        if style == "vcc":
            return "vcc_lo" if self.wave == 32 else "vcc"
        if style == "null" and self.fam == "gfx11":
            return "null"
        i = self.top_s - 1 if style == "hi" else 4
        return _s(i, 1) if self.wave == 32 else _s(_align(i, 2), 2)

    def reg(self, kind: str, style: str, slot: int) -> str:
        """A register operand of kind, low or high, distinct per operand slot."""
        k = KINDS[kind]
        n = max(k.dwords, 1)
        if k.cls == "sreg" or style.startswith("s"):
            base = (self.top_s - 4 * slot - n + 1) if style.endswith("hi") else 2 + 4 * slot
            return _s(_align(base, n), n)
        base = (255 - 4 * slot - n + 1) if style == "hi" else 1 + 4 * slot
        if n > 1:
            base = _align(base, 2) if self.fam == "gfx9" or n > 1 else base
        return _v(base, n)


def _src(g: _Gen, kind: str, how: str, slot: int) -> str:
    """A source operand: 'v'/'vhi' VGPR, 's'/'shi' SGPR, 'int', 'float', 'lit', 'spec'."""
    k = KINDS[kind]
    n = k.dwords
    if how in ("v", "vhi") and not k.vgpr:
        how = "s" if how == "v" else "shi"
    if how in ("v", "vhi"):
        return g.reg(kind, "hi" if how == "vhi" else "lo", slot)
    if how in ("s", "shi"):
        return g.reg(kind, how, slot)
    if how == "int":
        return ("-16", "64", "-1")[slot % 3]
    if how == "float":
        return ("0.5", "-4.0", "0.15915494" if k.ctype != "f64" else "2.0")[slot % 3]
    if how == "lit":
        return {"f16": "0x3c01", "f64": "0x40080000"}.get(k.ctype, "0x12345678")
    if how == "spec":
        return ("vcc" if n == 2 else "vcc_lo") if slot % 2 else (
            "exec" if n == 2 else "exec_lo" if g.fam == "gfx11" else "m0")
    raise ValueError(how)


def _vop_cases(g: _Gen, row: Row) -> list[str]:
    f = row.fields()
    srcs = [(fld, kd) for fld, kd in row.ops if fld.startswith("src")]
    vop3 = row.fmt in ("VOP3", "VOP3SD")
    out: list[str] = []

    def render(hows: list[str], dst: str, lane: str, e64: bool, mods: str = "",
               negabs: bool = False) -> str:
        parts = []
        name = row.name + ("_e64" if e64 and not vop3 else "")
        si = 0
        if g.fam == "gfx9" and (vop3 or e64):
            # CDNA3 VOP3 reads at most one SGPR (the constant bus, CDNA3 ISA §4.5).
            seen, hows = False, list(hows)
            for i, h in enumerate(hows):
                if h.startswith("s") or (h.startswith("v") and not KINDS[srcs[i][1]].vgpr):
                    if seen:
                        hows[i] = "int"
                    seen = True
        for fld, kd in row.ops:
            if kd == "lane":
                parts.append(g.lane(lane if (e64 or vop3) else "vcc"))
            elif fld in ("vdst",):
                parts.append(g.reg(kd, dst, 0))
            else:
                t = _src(g, kd, hows[si], si + 1)
                if negabs and kd in _FLOATS and hows[si].startswith("v"):
                    # VOP3SD has no ABS field (its bits hold SDST): neg only.
                    sd = row.fmt == "VOP3SD" or (row.fmt == "VOP2" and "sdst" in f)
                    t = (f"-{t}" if si != 1 else t) if sd else (
                        f"-{t}" if si == 0 else f"|{t}|" if si == 1 else f"-|{t}|")
                parts.append(t)
                si += 1
        return f"{name} {', '.join(parts)}{mods}".strip()

    ns = sum(1 for _, kd in srcs if kd != "lane")
    allv = ["v"] * ns
    if not row.ops:
        return [row.name]
    if row.fmt == "VOP1" and f.get("vdst") == "s32":     # v_readfirstlane_b32 s, v
        return [f"{row.name} s1, v2", f"{row.name} s{g.top_s}, v255"]
    out.append(render(allv, "lo", "lo", False))
    out.append(render(["vhi"] * ns, "hi", "hi", False))
    if ns:
        k0 = KINDS[srcs[0][1]]
        out.append(render(["s"] + allv[1:], "lo", "lo", False))
        out.append(render(["int"] + allv[1:], "lo", "lo", False))
        out.append(render(["float"] + allv[1:], "hi", "lo", False))
        if not (g.fam == "gfx9" and vop3):
            out.append(render(["lit"] + allv[1:], "lo", "lo", False))
        if k0.dwords == 1 and ns >= 1:
            out.append(render(["spec"] + allv[1:], "lo", "lo", False))
    if row.e64 or vop3:
        # The VOP3 encoding: SGPR/constant in src1, a lane mask in an SGPR, modifiers.
        if ns >= 2:
            out.append(render(["v", "s"] + allv[2:], "lo", "hi", True))
            out.append(render(["v", "int"] + allv[2:], "hi", "lo", True))
        else:
            out.append(render(allv, "lo", "hi", True))
        if row.fmt == "VOP3SD" and g.fam == "gfx11":
            out.append(render(allv, "lo", "null", True))
        floats = [kd for _, kd in srcs if kd in _FLOATS]
        if floats:
            out.append(render(allv, "lo", "lo", True, negabs=True))
            dst = f.get("vdst")
            if dst in _FLOATS and row.fmt != "VOPC":
                out.append(render(allv, "hi", "lo", True, " clamp"))
                if dst in ("f32", "f64"):
                    out.append(render(allv, "lo", "lo", True, " mul:2"))
                    out.append(render(allv, "lo", "lo", True, " clamp div:2", negabs=True))
    return list(dict.fromkeys(out))


def _matrix_cases(g: _Gen, row: Row) -> list[str]:
    """VOP3P matrix ops (v_wmma_* on gfx1100, v_mfma_* on gfx942): low, high and odd
    register tuples (gfx942 wants them 64-bit aligned: llvm-mc refuses the odd ones), an
    inline constant accumulator, and the modifiers of each family; llvm-mc refuses the
    modifiers a form does not take and those cases are left out."""
    n = [KINDS[kd].dwords for _, kd in row.ops]
    lo, at = [], 0
    for d in n[:3]:
        lo.append(_v(at, d))
        at += d
    lo.append(lo[0])
    hi, top = [], 256
    for d in n:
        top -= d
        hi.append(_v(top, d))
    odd = [_v(1 + sum(n[:i]), d) for i, d in enumerate(n[:3])] + [_v(1, n[0])]
    mods = ([" neg_lo:[1,0,0] neg_hi:[0,1,0]", " neg_lo:[1,1,0] clamp", " op_sel:[0,0,1]",
             " neg_lo:[0,0,1]", " clamp"] if g.fam == "gfx11" else
            [" cbsz:1 abid:2 blgp:3", " blgp:7", " cbsz:4 abid:15"])
    out = [", ".join(lo), ", ".join(hi), ", ".join(odd)]
    out += [", ".join(lo[:3] + [c]) for c in ("1.0", "0", "-1")]
    out += [", ".join(lo) + m for m in mods]
    return [f"{row.name} {t}" for t in out]


def _pk_cases(g: _Gen, row: Row) -> list[str]:
    """gfx942 packed-f32 VOP3P ops: low and high VGPR pairs, an SGPR pair, inline
    constants, and each modifier (one bit per source)."""
    n = len(row.ops) - 1
    lo = ", ".join(_v(2 * i, 2) for i in range(n + 1))
    hi = ", ".join(_v(254 - 2 * i, 2) for i in range(n + 1))
    sg = ", ".join([_v(0, 2), _s(2, 2)] + [_v(4 + 2 * i, 2) for i in range(n - 1)])
    const = ", ".join([_v(0, 2), _v(2, 2)] + ["1.0", "-4"][:n - 1])
    ones = lambda pat: "[" + ",".join(pat[:n]) + "]"
    mods = [f" op_sel:{ones('101')}", f" op_sel_hi:{ones('010')}",
            f" neg_lo:{ones('110')} neg_hi:{ones('011')}", " clamp",
            f" op_sel:{ones('111')} op_sel_hi:{ones('000')} clamp"]
    out = [lo, hi, sg, const] + [lo + m for m in mods]
    return [f"{row.name} {t}" for t in out]


def _fmak_cases(g: _Gen, row: Row) -> list[str]:
    """v_fmaak/v_fmamk (a mandatory literal K): low and high VGPRs, src0 as an SGPR, a special
    register, an inline integer or float and the same literal as K, and K written as hex, as a
    float and as small and negative integers."""
    f16 = row.fields()["simm32"] == "k16"
    k, kf = ("0x3c01", "0x3800") if f16 else ("0x3727c5ac", "0x3f000000")

    def render(src0: str, kt: str, hi: bool = False) -> str:
        regs = iter(["v255", "v251", "v247"] if hi else ["v1", "v5", "v9"])
        parts = [next(regs)]
        for fld, _ in row.ops[1:]:
            if fld == "src0":
                next(regs)                 # src1 keeps its own register
            parts.append(kt if fld == "simm32" else src0 if fld == "src0" else next(regs))
        return f"{row.name} {', '.join(parts)}"
    out = [render("v5", k), render("v251", k, True), render("s2", k), render("vcc_lo", k),
           render("-16", k), render("0.5", k), render(k, k), render("v5", "1.0"),
           render("v5", "64"), render("v5", "-1"), render("v5", kf)]
    return list(dict.fromkeys(out))


def _waitcnt(g: _Gen) -> list[str]:
    hi = "vmcnt(40)" if g.fam == "gfx9" else "vmcnt(62)"
    return ["vmcnt(0) lgkmcnt(0)", "vmcnt(1)", "expcnt(2) lgkmcnt(3)", "lgkmcnt(0)",
            "vmcnt(0) expcnt(0) lgkmcnt(0)", hi]


def _scalar_cases(g: _Gen, row: Row) -> list[str]:
    kinds = [kd for _, kd in row.ops]
    if row.fmt == "SOPP":
        if not kinds:
            return [row.name]
        return [f"{row.name} {v}" for v in {
            "label": ["3", "-3", "0"], "dec16": ["0", "7"], "hex16": ["0x1", "0x3f"],
            "waitcnt": _waitcnt(g),
            "delay": ["instid0(VALU_DEP_1)",
                      "instid0(VALU_DEP_2) | instskip(NEXT) | instid1(VALU_DEP_1)",
                      "instid0(SALU_CYCLE_1)",
                      "instid0(TRANS32_DEP_1) | instskip(SKIP_2) | instid1(VALU_DEP_3)"],
            "sendmsg": (["sendmsg(MSG_DEALLOC_VGPRS)", "sendmsg(MSG_INTERRUPT)"]
                        if g.fam == "gfx11" else ["sendmsg(MSG_INTERRUPT)"]),
            "depctr": ["0xfff", "depctr_va_vdst(0)", "depctr_vm_vsrc(0)",
                       "depctr_va_vdst(3) depctr_vm_vsrc(2) depctr_sa_sdst(0)", "0xffe3",
                       "0x0", "0xff9f"],
        }[kinds[0]]]
    if row.fmt == "SOPK":
        if kinds[0] == "s32" and row.ops[0][0] == "sdst" and row.name.startswith("s_waitcnt_"):
            return [f"{row.name} null, 0x0", f"{row.name} s5, 0x3"]
        return [f"{row.name} s1, 0x1234", f"{row.name} s{g.top_s}, 0xffff",
                f"{row.name} {'m0' if row.ops[0][0] == 'sdst' else 's7'}, 0x7"]
    if row.fmt == "SMEM":
        n = KINDS[kinds[0]].dwords
        lo, hi = g.reg(kinds[0], "lo", 0), _s(_align(g.top_s - n + 1 - 4, n), n)
        glc = " glc dlc" if g.fam == "gfx11" else " glc"
        return [f"{row.name} {lo}, s[2:3], 0x24", f"{row.name} {hi}, s[100:101], -0x100",
                f"{row.name} {lo}, s[4:5], s7", f"{row.name} {lo}, s[4:5], m0 offset:0x10",
                f"{row.name} {lo}, s[4:5], 0xfff00{glc}"]
    # SOP1/SOP2/SOPC: destinations then scalar sources.
    def render(dst: str, hows: list[str]) -> str:
        parts, si = [], 0
        for fld, kd in row.ops:
            if fld == "sdst":
                parts.append(g.reg(kd, dst, 0) if dst in ("lo", "hi") else dst)
            else:
                parts.append(_src(g, kd, hows[si], si + 1))
                si += 1
        return f"{row.name} {', '.join(parts)}"
    ns = sum(1 for fld, _ in row.ops if fld.startswith("ssrc"))
    out = [render("lo", ["s"] * ns), render("hi", ["shi"] * ns)]
    if ns:
        rest = ["s"] * (ns - 1)
        out += [render("lo", ["int"] + rest), render("lo", ["float"] + rest),
                render("lo", rest + ["lit"]), render("lo", ["spec"] + rest)]
        wide = KINDS[row.ops[-1][1]].dwords == 2
        if ns == 2:
            out.append(render("lo", ["int", "spec" if not wide else "s"]))
    has_dst = row.ops and row.ops[0][0] == "sdst"
    if has_dst and KINDS[row.ops[0][1]].dwords == 1 and ns:
        out.append(render("m0" if g.fam == "gfx9" else "vcc_lo", ["s"] * ns))
    return list(dict.fromkeys(out))


def _mem_cases(g: _Gen, row: Row) -> list[str]:
    gfx11 = g.fam == "gfx11"
    cache = " glc slc dlc" if gfx11 else " sc0 sc1 nt"
    if row.fmt == "DS":
        two = "2addr" in row.name or "read2" in row.name or "write2" in row.name

        def render(style: str, mods: str) -> str:
            parts = []
            for i, (fld, kd) in enumerate(row.ops):
                parts.append(g.reg("v32" if fld == "addr" else kd, style, i))
            return f"{row.name} {', '.join(parts)}{mods}"
        if two:
            return [render("lo", ""), render("hi", " offset0:1 offset1:255"),
                    render("lo", " offset1:7")]
        return [render("lo", ""), render("hi", " offset:65535"), render("lo", " offset:16")]

    def render(style: str, addr: str, mods: str) -> str:
        parts = []
        for i, (fld, kd) in enumerate(row.ops):
            if fld == "addr":
                if row.fmt == "FLAT":
                    parts.append(g.reg("v64", style, i))
                elif addr == "sgpr":
                    parts.append(g.reg("v32", style, i))
                elif addr in ("off", "st") and row.fmt == "SCRATCH":
                    parts.append("off")
                else:
                    parts.append(g.reg("v64" if row.fmt == "GLOBAL" else "v32", style, i))
            elif fld == "saddr":
                if addr == "off" and row.fmt == "GLOBAL" or addr in ("vgpr", "st"):
                    parts.append("off")
                elif kd == "saddr32":
                    parts.append("s2" if style == "lo" else f"s{g.top_s}")
                else:
                    parts.append("s[2:3]" if style == "lo" else f"s[{_align(g.top_s - 1, 2)}:"
                                 f"{_align(g.top_s - 1, 2) + 1}]")
            else:
                parts.append(g.reg(kd, style, i))
        return f"{row.name} {', '.join(parts)}{mods}"
    if row.fmt == "FLAT":
        return [render("lo", "", ""), render("hi", "", " offset:4095"),
                render("lo", "", " offset:8" + cache)]
    if row.fmt == "SCRATCH":
        # "st": no address register at all (the form kcc's spills and fills use)
        return [render("lo", "vgpr", " offset:8"), render("hi", "off", " offset:-16"),
                render("lo", "off", cache), render("hi", "st", " offset:4092")]
    return [render("lo", "sgpr", ""), render("hi", "off", " offset:-4096"),
            render("lo", "sgpr", " offset:4095" + cache), render("hi", "sgpr", " offset:-16")]


def amd_cases(arch: str, row: Row) -> list[str]:
    """The representative cases of one row, as assembly text for llvm-mc."""
    g = _Gen(arch, row)
    if row.fmt == "VOP3P":
        return _pk_cases(g, row) if row.name.startswith("v_pk_") else _matrix_cases(g, row)
    if "simm32" in row.fields():
        return _fmak_cases(g, row)
    if row.fmt.startswith("VOP"):
        return _vop_cases(g, row)
    if row.fmt.startswith("S"):
        if row.fmt == "SCRATCH":
            return _mem_cases(g, row)
        return _scalar_cases(g, row)
    return _mem_cases(g, row)
