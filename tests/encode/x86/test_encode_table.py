"""kcc/encode/x86/encoder.py's process-wide table of encoded instructions (`_ENCODED`): an
instruction a previous assembly encoded takes its bytes from the table, which are the bytes of
encoding it afresh; only equal (form, operands) share an entry; a bad operand is refused with
its form in the table; the table is emptied once it passes its bound."""

from __future__ import annotations

import pytest

from kcc.encode.x86 import encoder
from kcc.encode.x86.encoder import Assembler, EncodeError, Imm, Label, Mem, Reg, encode


def _program() -> list[tuple]:
    return [("mov_r64_rm64", Reg("rax"), Mem(8, "rdi", disp=8)),
            ("mov_r64_rm64", Reg("r9"), Mem(8, "rdi", "rcx", 4, 8)),
            ("add_rm32_imm32", Mem(4, "rsi"), Imm(1000)),
            ("vaddps_y_y_ym", Reg("ymm1"), Reg("ymm2"), Reg("ymm3")),
            ("vaddps_y_y_ym", Reg("ymm9"), Reg("ymm2"), Mem(32, None, label="c0")),
            ("ret",)]


def _assemble(prog: list[tuple]) -> tuple[bytes, list]:
    a = Assembler()
    a.label("top")
    for form, *ops in prog:
        a.emit(form, *ops)
    a.emit("jne_rel32", Label("top"))
    return a.finish()


def _fresh(prog: list[tuple]) -> bytes:
    """The program's bytes, each instruction encoded by `encode` (no table), the branch too."""
    body = b"".join(encode(form, *ops)[0] for form, *ops in prog)
    return body + encode("jne_rel8", Label("top"))[0][:1] + (-(len(body) + 2) & 0xFF).to_bytes(
        1, "little")


def test_table_hits_give_the_fresh_bytes(monkeypatch) -> None:
    monkeypatch.setattr(encoder, "_ENCODED", {})
    first, fx1 = _assemble(_program())
    assert len(encoder._ENCODED) == len(_program())       # every non-branch instruction
    second, fx2 = _assemble(_program())                    # every one from the table
    assert first == second == _fresh(_program())
    assert fx1 == fx2 and [f.target for f in fx1] == ["c0"]


def test_only_equal_instructions_share_an_entry(monkeypatch) -> None:
    monkeypatch.setattr(encoder, "_ENCODED", {})
    _assemble(_program())
    # operands that differ in one field (a register, a displacement, a label, an immediate)
    # are encoded, not taken from a neighbour's entry
    other = [("mov_r64_rm64", Reg("rax"), Mem(8, "rdi", disp=16)),
             ("mov_r64_rm64", Reg("r9"), Mem(8, "rdi", "rcx", 8, 8)),
             ("add_rm32_imm32", Mem(4, "rsi"), Imm(1001)),
             ("vaddps_y_y_ym", Reg("ymm1"), Reg("ymm2"), Reg("ymm4")),
             ("vaddps_y_y_ym", Reg("ymm9"), Reg("ymm2"), Mem(32, None, label="c1")),
             ("ret",)]
    code, fixups = _assemble(other)
    assert code == _fresh(other)
    assert [f.target for f in fixups] == ["c1"]


def test_a_bad_operand_is_refused_with_its_form_in_the_table(monkeypatch) -> None:
    monkeypatch.setattr(encoder, "_ENCODED", {})
    _assemble(_program())
    a = Assembler()
    with pytest.raises(EncodeError):
        a.emit("mov_r64_rm64", Reg("eax"), Mem(8, "rdi", disp=8))   # a 32-bit register


def test_the_table_is_emptied_past_its_bound(monkeypatch) -> None:
    monkeypatch.setattr(encoder, "_ENCODED", {})
    monkeypatch.setattr(encoder, "_ENCODED_MAX", 3)
    first, _ = _assemble(_program())
    assert len(encoder._ENCODED) == 6                     # filled past the bound ...
    second, _ = _assemble(_program()[:2])                 # ... emptied before the next one
    assert len(encoder._ENCODED) == 2
    assert first.startswith(second[:-2])


def test_an_entry_keeps_its_row(monkeypatch) -> None:
    # the key holds the row's id; the entry holds the row, so no other row takes that id
    monkeypatch.setattr(encoder, "_ENCODED", {})
    _assemble(_program())
    for (row_id, _), (_, row) in encoder._ENCODED.items():
        assert id(row) == row_id and encoder.FORMS[row.form] is row
