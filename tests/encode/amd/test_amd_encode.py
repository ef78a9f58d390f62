"""AMD encoder, decoder and printer against llvm-mc-19's bytes and text.

golden/amd/<arch>/*.s hold, for every row of kcc's AMD tables, cases written by
scripts/amd_cases.py and assembled by llvm-mc-19 (text as llvm-mc printed it, bytes as it
encoded them). kcc must parse each text to an Inst that encodes to the same bytes, decode the
bytes to the same Inst and print it back as the same text. These tests need no LLVM; the
reassembly test runs llvm-mc-19 when it is installed.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from kcc.encode.amd import AmdDecodeError, AmdEncodeError, encode
from kcc.encode.amd.decode import decode, disassemble
from kcc.encode.amd.operands import SGPR, VGPR, FloatImm, Imm, Inst, Special
from kcc.encode.amd.syntax import format_inst, parse_inst, waitcnt
from kcc.encode.amd.table import ARCHES, FORMATS, by_opcode, formats_of, rows

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "golden" / "amd"
LLVM_MC = shutil.which("llvm-mc-19")
MATTR = {"gfx1100": "+wavefrontsize32,-real-true16", "gfx942": "+wavefrontsize64"}


@dataclass(frozen=True)
class Case:
    arch: str
    where: str
    row: str
    text: str
    data: bytes


def load_cases(arch: str) -> list[Case]:
    """Every golden case of one arch, in file order."""
    out: list[Case] = []
    for path in sorted((GOLDEN / arch).glob("*.s")):
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if line.startswith("; row: "):
                assert lines[n + 2].startswith("; bytes: "), f"{path.name}:{n + 1}"
                out.append(Case(arch, f"{arch}/{path.name}:{n + 2}", line[7:].strip(),
                                lines[n + 1].strip(), bytes.fromhex(lines[n + 2][9:])))
    return out


CASES = {arch: load_cases(arch) for arch in ARCHES}


def _report(bad: list[str], total: int) -> None:
    if bad:
        pytest.fail(f"{len(bad)} of {total} cases differ:\n" + "\n".join(bad[:25]))


def _hex(b: bytes) -> str:
    return b.hex(" ")


@pytest.mark.parametrize("arch", ARCHES)
def test_every_row_has_golden_cases(arch: str) -> None:
    have = {c.row for c in CASES[arch]}
    missing = [r.name for r in rows(arch) if r.name not in have]
    assert not missing, f"{arch} rows without a golden case: {missing}"
    assert set(have) <= {r.name for r in rows(arch)}, "golden cases of rows that do not exist"


@pytest.mark.parametrize("arch", ARCHES)
def test_encoder_matches_llvm_mc(arch: str) -> None:
    bad = []
    for c in CASES[arch]:
        try:
            got = encode(arch, parse_inst(arch, c.text))
        except (AmdEncodeError, ValueError) as e:
            bad.append(f"{c.where}: {c.text}\n    error: {e}")
            continue
        if got != c.data:
            bad.append(f"{c.where}: {c.text}\n    llvm-mc: {_hex(c.data)}\n    kcc:     "
                       f"{_hex(got)}")
    _report(bad, len(CASES[arch]))


@pytest.mark.parametrize("arch", ARCHES)
def test_decoder_and_printer_match_llvm_mc(arch: str) -> None:
    bad = []
    for c in CASES[arch]:
        try:
            inst, size = decode(arch, c.data)
            text = format_inst(arch, inst)
            parsed = parse_inst(arch, c.text)
        except (AmdDecodeError, AmdEncodeError, ValueError) as e:
            bad.append(f"{c.where}: {c.text}\n    error: {e}")
            continue
        if size != len(c.data) or text != c.text or inst != parsed:
            bad.append(f"{c.where}: size {size}/{len(c.data)}\n    llvm-mc: {c.text}\n"
                       f"    kcc:     {text}\n    decoded {inst}\n    parsed  {parsed}")
    _report(bad, len(CASES[arch]))


@pytest.mark.parametrize("arch", ARCHES)
def test_golden_covers_every_format_and_encoding(arch: str) -> None:
    """Each format has cases, and every VOP3-capable VOP1/VOP2/VOPC row has an _e64 case."""
    assert set(formats_of(arch)) == set(FORMATS)
    e64 = {c.row for c in CASES[arch] if c.text.split()[0].endswith("_e64")}
    missing = [r.name for r in rows(arch) if r.e64 and r.name not in e64]
    assert not missing, f"{arch}: e64 rows without an _e64 case: {missing}"


def test_decoder_names_unknown_words_and_offsets() -> None:
    data = bytes.fromhex("0000b0bf") + bytes.fromhex("ffffffff")
    with pytest.raises(AmdDecodeError, match=r"0xffffffff at offset 0x104"):
        list(disassemble("gfx1100", data, base=0x100))
    with pytest.raises(AmdDecodeError, match=r"truncated"):
        decode("gfx942", bytes.fromhex("0000ffd1"))      # VOP3 needs 8 bytes


def test_opcode_tables_have_no_collisions() -> None:
    for arch in ARCHES:
        assert len(by_opcode(arch)) == len(rows(arch)) + sum(r.e64 for r in rows(arch))


def test_encoder_choices_and_errors() -> None:
    # No suffix: e32 when it fits, VOP3 when src1 is an SGPR or a modifier is set.
    a = Inst("v_add_f32", (VGPR(1), VGPR(2), VGPR(3)))
    assert encode("gfx1100", a) == bytes.fromhex("02070206")
    b = Inst("v_add_f32", (VGPR(1), VGPR(2), SGPR(3)))
    assert len(encode("gfx1100", b)) == 8
    assert format_inst("gfx1100", b) == "v_add_f32_e64 v1, v2, s3"
    # 1.0 as a float, as its f32 bit pattern and, for an integer op, the same inline code.
    one = encode("gfx942", Inst("v_add_f32", (VGPR(1), FloatImm(1.0), VGPR(3))))
    assert one == encode("gfx942", Inst("v_add_f32", (VGPR(1), Imm(0x3F800000), VGPR(3))))
    assert len(one) == 4
    lit = encode("gfx942", Inst("v_add_f32", (VGPR(1), FloatImm(3.0), VGPR(3))))
    assert lit[4:] == (0x40400000).to_bytes(4, "little")
    with pytest.raises(AmdEncodeError, match="no literal"):
        encode("gfx942", Inst("v_fma_f32", (VGPR(1), VGPR(2), VGPR(3), Imm(0x1234))))
    with pytest.raises(AmdEncodeError, match="unknown instruction"):
        encode("gfx942", Inst("s_load_b32", (SGPR(0), SGPR(0, 2), Imm(0))))
    with pytest.raises(AmdEncodeError, match="expected 2"):
        encode("gfx1100", Inst("s_load_b64", (SGPR(0), SGPR(0, 2), Imm(0))))
    with pytest.raises(AmdEncodeError, match="outside"):
        encode("gfx1100", Inst("global_load_b32", (VGPR(0), VGPR(1), SGPR(0, 2)),
                               (("offset", 5000),)))
    with pytest.raises(AmdEncodeError, match="lane mask is vcc_lo"):
        encode("gfx1100", Inst("v_cndmask_b32_e32", (VGPR(0), VGPR(1), VGPR(2), SGPR(4))))


def test_waitcnt_helper_packs_each_family() -> None:
    assert encode("gfx1100", waitcnt("gfx1100", vmcnt=0, lgkmcnt=0)) == bytes.fromhex("070089bf")
    assert encode("gfx942", waitcnt("gfx942", vmcnt=0, lgkmcnt=0)) == bytes.fromhex("70008cbf")
    assert format_inst("gfx942", waitcnt("gfx942", vmcnt=40)) == "s_waitcnt vmcnt(40)"


@pytest.mark.skipif(LLVM_MC is None, reason="llvm-mc-19 not installed (apt-get install llvm-19)")
@pytest.mark.parametrize("arch", ARCHES)
def test_printed_text_reassembles_to_the_same_bytes(arch: str) -> None:
    """format_inst of every decoded golden case, fed back to llvm-mc-19, gives its bytes."""
    cases = CASES[arch]
    texts = [format_inst(arch, decode(arch, c.data)[0]) for c in cases]
    proc = subprocess.run([LLVM_MC, "-triple=amdgcn", f"-mcpu={arch}", f"-mattr={MATTR[arch]}",
                           "-show-encoding"], input="\n".join(texts) + "\n",
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:2000]
    enc = [line.split("encoding: [")[1].rstrip("]") for line in proc.stdout.splitlines()
           if "encoding: [" in line]
    assert len(enc) == len(cases)
    bad = [f"{c.where}: {t}\n    want {_hex(c.data)}\n    got  {e}"
           for c, t, e in zip(cases, texts, enc)
           if bytes(int(x, 16) for x in e.split(",")) != c.data]
    _report(bad, len(cases))


def test_specials_and_tuples_print_as_llvm() -> None:
    i = Inst("s_and_saveexec_b64", (SGPR(2, 2), Special("vcc")))
    assert format_inst("gfx942", i) == "s_and_saveexec_b64 s[2:3], vcc"
    assert decode("gfx942", encode("gfx942", i))[0] == i
