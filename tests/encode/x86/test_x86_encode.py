"""x86-64 encoder against independent oracles.

* golden/x86/*.s hold llvm-mc's bytes (and fixups) for Intel text written by
  scripts/regen_golden.py; kcc must produce the same bytes from the same form and operands.
* capstone decodes kcc's bytes back to the golden text. Normalization before comparing:
  lower case, single spaces, the ``{disp32}`` pseudo-prefix dropped; memory operands compared
  as (size, base, index, scale, disp) with ``N*reg``/``reg*N`` both accepted; immediates
  compared as integers modulo the form's immediate width (capstone prints sign-extended hex);
  capstone's ``vcmp<pred>ps`` aliases turned back into ``vcmpps ..., imm``; an embedded
  broadcast's ``{1toN}`` compared as its count N; a RIP-relative
  operand compares its label/addend through the fixup (the bytes hold 0), and a branch label
  compares as the address a zero displacement decodes to.
* format_intel text is assembled by llvm-mc (skipped only when llvm-mc is missing).
"""
from __future__ import annotations

import importlib.util
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from capstone import CS_ARCH_X86, CS_MODE_64, Cs

from kcc.encode.x86.encoder import (FORMS, Assembler, EncodeError, Fixup, Imm, Label, Mem, Reg,
                            branch_forms, encode, format_intel, is_branch, is_two_address,
                            nop_padding, operand_roles, reads_flags, reads_memory, writes_flags,
                            writes_memory)
from kcc.encode.x86.table import KINDS

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "golden" / "x86"
LLVM_MC = shutil.which("llvm-mc") or ("/usr/bin/llvm-mc" if Path("/usr/bin/llvm-mc").exists()
                                      else None)


@dataclass(frozen=True)
class Case:
    where: str
    form: str
    text: str
    data: bytes
    fixups: tuple[Fixup, ...]


def _load_cases() -> list[Case]:
    cases: list[Case] = []
    for path in sorted(GOLDEN.glob("*.s")):
        form = text = None
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines, 1):
            if line.startswith("; form: "):
                form, text = line[8:].strip(), lines[n].strip()
            elif line.startswith("; bytes: "):
                assert form and text, f"{path.name}:{n}: bytes without a form"
                cases.append(Case(f"{path.name}:{n - 1}", form, text,
                                  bytes.fromhex(line[9:]), ()))
            elif line.startswith("; fixup: "):
                off, kind, target, addend = line[9:].split()
                c = cases[-1]
                cases[-1] = Case(c.where, c.form, c.text, c.data,
                                 c.fixups + (Fixup(int(off), kind, target, int(addend)),))
    return cases


CASES = _load_cases()
_SIZES = {"byte": 1, "word": 2, "dword": 4, "qword": 8, "xmmword": 16, "ymmword": 32,
          "zmmword": 64}


def _parse_mem(text: str) -> Mem:
    m = re.fullmatch(r"(?:(\w+) ptr )?\[(.*)\]", text)
    assert m, text
    size = _SIZES[m.group(1)] if m.group(1) else 0
    base = index = label = None
    scale, disp = 1, 0
    for sign, term in re.findall(r"([+-]?)\s*([^\s+-]+)", m.group(2)):
        if re.fullmatch(r"\d+", term):
            disp += -int(term) if sign == "-" else int(term)
        elif "*" in term:
            a, b = term.split("*")
            scale, index = (int(a), b) if a.isdigit() else (int(b), a)
        elif term == "rip":
            pass
        elif "rip" in m.group(2) and label is None:
            label = term
        elif base is None:
            base = term
        else:
            index = term
    return Mem(size, base, index, scale, disp, label)


def _split_opmask(parts: list[str]) -> list[str]:
    """``xmm1 {k1}`` (a destination and its EVEX.aaa opmask) as two operands."""
    out = []
    for p in parts:
        m = re.fullmatch(r"(.+?) \{(k\d)\}(?: \{z\})?", p)      # a register or memory
        out += [m.group(1), m.group(2)] if m else [p]
    return out


def parse_operands(form: str, text: str) -> tuple:
    """Rebuild kcc operands from golden Intel text using the form's operand kinds."""
    text = text.removeprefix("{disp32} ").removeprefix("{evex} ")
    _, _, rest = text.partition(" ")
    parts = _split_opmask([p.strip() for p in rest.split(",")] if rest else [])
    ops = []
    for o, p in zip(FORMS[form].operands, parts, strict=True):
        if o.slot == "rel":
            ops.append(Label(p))
        elif o.slot == "imm":
            ops.append(Imm(int(p, 0)))
        elif "[" in p:
            mem = _parse_mem(re.sub(r"\{1to\d+\}$", "", p))    # the broadcast is the form's
            size = KINDS[o.kind].mem_size or 8          # lea: any size, printed without ptr
            ops.append(Mem(size, mem.base, mem.index, mem.scale, mem.disp, mem.label))
        else:
            ops.append(Reg(p))
    return tuple(ops)


def _hex(b: bytes) -> str:
    return b.hex(" ")


# ----------------------------------------------------------------------------- golden
def test_golden_files_present():
    assert len(CASES) > 2000, "run scripts/regen_golden.py"


def test_every_form_has_a_golden_case():
    covered = {c.form for c in CASES}
    missing = sorted(set(FORMS) - covered)
    assert not missing, f"forms without golden cases: {missing[:20]} ({len(missing)})"
    unknown = sorted(covered - set(FORMS))
    assert not unknown, f"golden cases for unknown forms: {unknown[:20]}"


def test_golden_bytes_and_fixups():
    bad = []
    for c in CASES:
        try:
            data, fixups = encode(c.form, *parse_operands(c.form, c.text))
        except EncodeError as e:
            bad.append(f"{c.where}: {c.text}\n    error: {e}")
            continue
        if data != c.data or tuple(fixups) != c.fixups:
            bad.append(f"{c.where}: {c.form}: {c.text}\n    llvm-mc: {_hex(c.data)} "
                       f"{list(c.fixups)}\n    kcc:     {_hex(data)} {fixups}")
    assert not bad, f"{len(bad)} mismatches of {len(CASES)}:\n" + "\n".join(bad[:40])


def test_format_intel_reproduces_golden_text():
    bad = []
    for c in CASES:
        want = c.text.removeprefix("{disp32} ").removeprefix("{evex} ")
        got = format_intel(c.form, *parse_operands(c.form, c.text))
        if got != want:
            bad.append(f"{c.where}: golden {want!r}\n    kcc    {got!r}")
    assert not bad, "\n".join(bad[:40])


# ----------------------------------------------------------------------------- capstone
_VCMP = ("eq lt le unord neq nlt nle ord eq_uq nge ngt false neq_oq ge gt true eq_os lt_oq "
         "le_oq unord_s neq_us nlt_uq nle_uq ord_s eq_us nge_uq ngt_uq false_os neq_os ge_oq "
         "gt_oq true_us").split()

_VPCMP = "eq lt le false neq nlt nle true".split()


def _norm(text: str, form: str, length: int) -> tuple:
    """Canonical (mnemonic, operands) of Intel text from either golden or capstone."""
    text = re.sub(r"\s+", " ", text.lower().removeprefix("{disp32} ").removeprefix(
        "{evex} ").strip())
    mnem, _, rest = text.partition(" ")
    parts = _split_opmask([p.strip() for p in rest.split(",")] if rest else [])
    m = re.fullmatch(r"vcmp(\w+?)(ps|pd|ss|sd)", mnem)
    if m and m.group(1) in _VCMP:                     # capstone's predicate aliases
        mnem = "vcmp" + m.group(2)
        parts.append(str(_VCMP.index(m.group(1))))
    row = FORMS[form]
    m = re.fullmatch(r"vpcmp(eq|lt|le|false|neq|nlt|nle|true)(u?[bwdq])", mnem)
    if m and row.mnemonic.startswith("vpcmp") and row.imm_operand is not None:
        mnem = "vpcmp" + m.group(2)                   # VPCMP's predicate aliases
        parts.append(str(_VPCMP.index(m.group(1))))
    out = []
    for o, p in zip(row.operands, parts, strict=True):
        k = KINDS[o.kind]
        if o.slot == "rel":
            out.append(length if not re.fullmatch(r"0x[0-9a-f]+|\d+", p) else int(p, 0))
        elif o.slot == "imm":
            out.append(int(p, 0) & ((1 << k.imm_bits) - 1))
        elif "[" in p:
            # capstone prints hex displacements and reg*scale; map both to the golden shape
            p = re.sub(r"0x[0-9a-f]+", lambda h: str(int(h.group(0), 16)), p)
            bcst = re.search(r"\{1to(\d+)\}$", p)     # EVEX embedded broadcast: compared too
            mem = _parse_mem(p[:bcst.start()] if bcst else p)
            if "rip" in p:                            # label and disp live in the fixup
                mem = Mem(mem.size, "rip")
            out.append((mem, int(bcst.group(1)) if bcst else None))
        else:
            out.append(p)
    return mnem, tuple(out)


def test_capstone_decodes_kcc_bytes_to_golden_text():
    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    bad = []
    for c in CASES:
        data, _ = encode(c.form, *parse_operands(c.form, c.text))
        insns = list(cs.disasm(data, 0))
        if len(insns) != 1 or insns[0].size != len(data):
            bad.append(f"{c.where}: {c.text}: capstone decoded {len(insns)} insns "
                       f"from {_hex(data)}")
            continue
        got = f"{insns[0].mnemonic} {insns[0].op_str}"
        try:
            ok = _norm(got, c.form, len(data)) == _norm(c.text, c.form, len(data))
        except (ValueError, AssertionError) as e:
            ok, got = False, f"{got} ({e})"
        if not ok:
            bad.append(f"{c.where}: golden {c.text!r}\n    capstone {got!r}")
    assert not bad, f"{len(bad)} disagreements:\n" + "\n".join(bad[:40])


# ----------------------------------------------------------------------------- llvm-mc live
def _regen_module():
    spec = importlib.util.spec_from_file_location("regen_golden",
                                                  ROOT / "scripts" / "regen_golden.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(LLVM_MC is None, reason="llvm-mc not installed")
def test_format_intel_assembles_to_kcc_bytes_with_llvm_mc():
    regen = _regen_module()
    lines, want = [], []
    for c in CASES:
        ops = parse_operands(c.form, c.text)
        text = format_intel(c.form, *ops)
        # format_intel prints branches without a width; ask llvm-mc for the rel32 one.
        if any(o.kind == "rel32" for o in FORMS[c.form].operands):
            text = "{disp32} " + text
        if FORMS[c.form].enc == "evex":
            text = "{evex} " + text     # an EVEX twin of a VEX form names xmm0-15 too
        lines.append(text)
        want.append(encode(c.form, *ops))
    got = regen.llvm_encode(LLVM_MC, lines,
                            ["-triple=x86_64", "-x86-asm-syntax=intel", "-output-asm-variant=1"])
    bad = [f"{t}\n    llvm-mc {h}\n    kcc     {_hex(d)}"
           for t, (h, _), (d, _) in zip(lines, got, want) if h != _hex(d)]
    assert not bad, "\n".join(bad[:40])


# ----------------------------------------------------------------------------- assembler
def _decode_branches(code: bytes) -> list[tuple[int, int, int]]:
    """(address, size, target) of every jmp/jcc capstone finds in ``code``."""
    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    out = []
    for i in cs.disasm(code, 0):
        if i.mnemonic.startswith("j"):
            out.append((i.address, i.size, int(i.op_str, 0)))
    assert sum(i.size for i in cs.disasm(code, 0)) == len(code)
    return out


@pytest.mark.parametrize("gap,short", [(0, True), (127 - 2, True), (128 - 2, False),
                                       (300, False)])
def test_assembler_relaxes_forward_branch(gap, short):
    a = Assembler()
    a.emit("jne_rel32", Label("end"))     # either width may be given; the assembler picks
    for _ in range(gap):
        a.emit("nop")
    a.emit("jmp_rel8", Label("end"))      # 2 bytes if short, 5 if not
    a.label("end")
    a.emit("ret")
    code, fixups = a.finish()
    assert fixups == []
    (j0, s0, t0), (j1, s1, t1) = _decode_branches(code)
    end = len(code) - 1
    assert t0 == end and t1 == end
    assert s1 == 2                        # the second branch is always near its target
    # The first branch reaches past gap nops and the 2-byte jmp: fits rel8 iff <= 127.
    assert s0 == (2 if short else 6)
    assert (gap + 2 <= 127) == short


def test_assembler_backward_branch_and_boundary():
    a = Assembler()
    a.label("top")
    for _ in range(126):
        a.emit("nop")
    a.emit("jl_rel32", Label("top"))     # disp = -(126 + 2) = -128: fits rel8
    a.label("top2")
    for _ in range(127):
        a.emit("nop")
    a.emit("jmp_rel8", Label("top2"))    # -(127 + 2) = -129: needs rel32
    code, _ = a.finish()
    (a0, s0, t0), (a1, s1, t1) = _decode_branches(code)
    assert (s0, t0) == (2, 0)
    assert (s1, t1) == (5, 128)


def test_assembler_chain_relaxation_and_rip_fixups():
    # A short branch that only becomes too long once a later branch grows.
    a = Assembler()
    a.emit("je_rel8", Label("far"))
    for _ in range(60):
        a.emit("nop")
    a.emit("jmp_rel8", Label("farther"))
    for _ in range(63):
        a.emit("nop")
    a.label("far")
    a.emit("mov_r64_rm64", Reg("rax"), Mem(8, None, label="const0", disp=8))
    for _ in range(200):
        a.emit("nop")
    a.label("farther")
    a.emit("add_rm32_imm32", Mem(4, None, label="local"), Imm(1000))
    a.label("local")
    a.emit("ret")
    code, fixups = a.finish()
    branches = _decode_branches(code)
    far = branches[0][2]
    assert [s for _, s, _ in branches] == [6, 5]
    assert code[far:far + 3] == bytes.fromhex("48 8b 05")
    # Unresolved data label stays a fixup, at the disp32, with addend disp - 4.
    assert fixups == [Fixup(far + 3, "pc32", "const0", 8 - 4)]
    # Local RIP label: resolved against the next instruction (after the imm32).
    add_at = branches[1][2]
    disp = int.from_bytes(code[add_at + 2:add_at + 6], "little", signed=True)
    assert add_at + 10 + disp == len(code) - 1


def _padding_golden() -> dict[int, bytes]:
    """golden/x86/align/p2align.s: gap length → llvm-mc's NOP bytes."""
    out, n = {}, None
    for line in (GOLDEN / "align" / "p2align.s").read_text().splitlines():
        if line.startswith("; padding: "):
            n = int(line[11:])
        elif line.startswith("; bytes: "):
            assert n is not None
            out[n] = bytes.fromhex(line[9:])
    return out


def test_nop_padding_is_llvm_mcs_and_decodes_to_nops():
    golden = _padding_golden()
    assert sorted(golden) == list(range(1, 64)), "run scripts/regen_golden.py"
    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    for n, want in golden.items():
        got = nop_padding(n)
        assert got == want, f"{n}: kcc {got.hex(' ')} / llvm-mc {want.hex(' ')}"
        insns = list(cs.disasm(got, 0))
        assert sum(i.size for i in insns) == n and {i.mnemonic for i in insns} == {"nop"}
    assert nop_padding(0) == b""


@pytest.mark.parametrize("lead,body", [(0, 10), (3, 10), (31, 118), (1, 119), (5, 200)])
def test_assembler_aligns_loop_heads(lead, body):
    """A loop head after `lead` bytes starts at a multiple of 32 and its back branch reaches
    it; where the padding pushes a forward branch past rel8, that branch grows."""
    a = Assembler()
    a.emit("jmp_rel8", Label("out"))
    for _ in range(lead):
        a.emit("nop")
    a.align(32)
    a.label("head")
    for _ in range(body):
        a.emit("nop")
    a.emit("jne_rel8", Label("head"))
    a.label("out")
    a.emit("ret")
    code, _ = a.finish()
    assert a.max_align == 32
    (j0, s0, t0), (j1, s1, t1) = _decode_branches(code)
    head = -(-(s0 + lead) // 32) * 32
    assert t1 == head and t0 == len(code) - 1
    assert code[s0 + lead:head] == nop_padding(head - s0 - lead)
    assert s1 == (2 if body + 2 <= 128 else 6)
    assert s0 == (2 if len(code) - 1 - 2 <= 127 else 5)


def test_assembler_rejects_bad_alignment():
    with pytest.raises(EncodeError, match="power of 2"):
        Assembler().align(24)


def test_assembler_rejects_undefined_branch_label():
    a = Assembler()
    a.emit("jmp_rel32", Label("nowhere"))
    with pytest.raises(EncodeError, match="nowhere"):
        a.finish()


# ----------------------------------------------------------------------------- queries/errors
def test_operand_roles_and_groups():
    r = operand_roles("add_r64_rm64")
    assert [(x.access, x.cls, x.may_be_mem) for x in r] == [("defuse", "gpr", False),
                                                           ("use", "gpr", True)]
    assert [x.access for x in operand_roles("vfmadd231ps_y_y_ym")] == ["defuse", "use", "use"]
    assert [x.cls for x in operand_roles("vmovd_x_rm32")] == ["vec", "gpr"]
    assert operand_roles("shl_rm32_cl")[1].fixed == "rcx"
    assert writes_flags("add_rm32_imm8") and writes_flags("vptest_y_ym")
    assert not writes_flags("mov_r64_rm64") and not writes_flags("lea_r64_m")
    assert not writes_flags("not_rm64")
    assert reads_flags("cmovl_r64_rm64") and reads_flags("jne_rel8") and reads_flags("sete_rm8")
    assert not reads_flags("add_r64_rm64")
    assert is_two_address("vfmadd231ps_x_x_xm") and is_two_address("cmovb_r32_rm32")
    assert not is_two_address("vaddps_y_y_ym") and not is_two_address("imul_r64_rm64_imm8")
    assert is_branch("jmp_rel8") and not is_branch("ret")
    assert branch_forms("jge_rel32") == ("jge_rel8", "jge_rel32")
    m = Mem(32, "rdi")
    assert reads_memory("vaddps_y_y_ym", Reg("ymm0"), Reg("ymm1"), m)
    assert not reads_memory("vaddps_y_y_ym", Reg("ymm0"), Reg("ymm1"), Reg("ymm2"))
    assert writes_memory("vmovups_m256_y") and not reads_memory("vmovups_m256_y")
    assert not reads_memory("lea_r64_m") and reads_memory("add_rm64_r64")
    assert writes_memory("add_rm64_r64", Mem(8, "rdi"), Reg("rax"))


@pytest.mark.parametrize("form,ops,match", [
    ("nope_r64", (), "unknown x86 form"),
    ("add_r64_rm64", (Reg("eax"), Reg("rcx")), "not allowed"),
    ("add_r64_rm64", (Reg("rax"),), "expected 2 operands"),
    ("add_rm64_imm8", (Reg("rax"), Imm(128)), "out of range"),
    ("add_rm64_imm32", (Reg("rax"), Imm(1 << 31)), "out of range"),
    ("vblendvps_y_y_ym_y", (Reg("ymm16"), Reg("ymm1"), Reg("ymm2"), Reg("ymm3")),
     "needs EVEX"),
    ("vptest_x_xm", (Reg("xmm1"), Reg("xmm31")), "needs EVEX"),
    ("vaddps_y_y_ym", (Reg("ymm0"), Reg("ymm1"), Mem(16, "rdi")), "memory size"),
    ("mov_r64_rm64", (Reg("rax"), Mem(8, "rdi", "rsp")), "rsp cannot be an index"),
    ("mov_r64_rm64", (Reg("rax"), Mem(8, "rdi", "rcx", 3)), "scale"),
    ("mov_r64_rm64", (Reg("rax"), Mem(8, "edi")), "64-bit GPR"),
    ("mov_r8_rm8", (Reg("ah"), Reg("al")), "ah/bh/ch/dh"),
    ("shl_rm32_cl", (Reg("eax"), Reg("dl")), "not allowed|must be cl"),
    ("mov_r64_rm64", (Reg("rax"), Mem(8, None)), "absolute"),
    ("mov_r64_rm64", (Reg("rax"), Mem(8, "rdi", disp=1 << 31)), "32 bits"),
    ("vpinsrb_x_x_r32m8_imm8", (Reg("xmm0"), Reg("xmm1"), Reg("sil"), Imm(1)), "not allowed"),
    # VSIB: a gather's index is a zmm, and only a gather's
    ("vgatherdps_z_k_vm32z", (Reg("zmm0"), Reg("k1"), Mem(64, "rdi", "rcx", 4)), "VSIB"),
    ("vgatherdps_z_k_vm32z", (Reg("zmm0"), Reg("k1"), Mem(64, "rdi", "ymm1", 4)), "VSIB"),
    ("vgatherdps_z_k_vm32z", (Reg("zmm0"), Reg("k1"), Mem(64, "rdi")), "VSIB"),
    ("vmovups_z_zm", (Reg("zmm0"), Mem(64, "rdi", "zmm1", 4)), "64-bit GPR"),
])
def test_bad_operands_raise_clear_errors(form, ops, match):
    with pytest.raises(EncodeError, match=match):
        encode(form, *ops)
