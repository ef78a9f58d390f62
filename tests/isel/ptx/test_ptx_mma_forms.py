"""Every mma.sync form kcc writes (kcc.isel.ptx.wmma.MMA_FORMS) is PTX that ptxas assembles for
every arch from sm_80 on (sm_80, 86, 89, 90, 100, 120), with its fragments packed into the
registers the form takes; below sm_80 the form is refused by name before any PTX is written."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kcc.encode.ptx import (
    ARCH_PTX,
    Addr,
    Imm,
    Inst,
    Kernel,
    PtxError,
    Sym,
    kernel_text,
    module_text,
    sm_number,
)
from kcc.isel.ptx.select import PtxSelector
from kcc.isel.ptx.wmma import MMA_FORMS, MmaForm
from tests.support.ptx_util import PTXAS, needs_ptxas

MMA_ARCHES = [a for a in ARCH_PTX if sm_number(a) >= 80]    # every arch kcc knows with mma
FORMS = sorted(MMA_FORMS.items(), key=lambda kv: str(kv[0]))
IDS = [f"{d[2]}k-{i.name}-{o.name}" for (d, i, o), _ in FORMS]


def mma_kernel(form: MmaForm, sm: int) -> Kernel:
    """A kernel that loads every fragment element from a buffer, runs the mma, and stores D."""
    s = PtxSelector("mma_k", [], sm)
    base = s.new("b64")
    s.pemit("ld.param.u64", base, Addr(Sym("mma_k_param_0")))
    off = 0

    def load(n: int, t: str) -> list:
        nonlocal off
        bank = "f32" if t in ("f32", "tf32") else "b16"
        mem = "f32" if bank == "f32" else "b16"
        out = []
        for _ in range(n):
            r = s.new(bank)
            s.emit(f"ld.global.{mem}", r, Addr(base, off))
            off += 4
            out.append(r)
        return out

    a = load(form.elements[0], form.atype)
    b = load(form.elements[1], form.atype)
    c = load(form.elements[2], form.ctype)
    d = s.mma(form, a, b, c)
    for r in d:
        s.emit(f"st.global.{'f32' if r.bank == 'f32' else 'b16'}", Addr(base, off), r)
        off += 4
    return Kernel("mma_k", [("mma_k_param_0", "u64")], s.pro + s.body + [Inst("ret")],
                  dict(s.counts))


@pytest.mark.parametrize("key_form", FORMS, ids=IDS)
def test_each_form_packs_its_fragments(key_form) -> None:
    """The mma has as many D/A/B/C registers as its form; 16-bit elements go in pairs."""
    (dims, _din, _dout), form = key_form
    text = kernel_text(mma_kernel(form, 80), 80)
    line = next(ln.strip() for ln in text.splitlines() if "mma.sync" in ln)
    assert line.startswith(form.opcode + " ")
    groups = [g.split(",") for g in re.findall(r"\{([^}]*)\}", line)]
    assert [len(g) for g in groups] == [form.regs(2), form.regs(0), form.regs(1), form.regs(2)]
    assert form.m * form.k == 32 * form.elements[0]
    assert form.n * form.k == 32 * form.elements[1]
    assert form.m * form.n == 32 * form.elements[2]
    assert (form.n, form.m, form.k) == dims


@needs_ptxas
@pytest.mark.parametrize("arch", MMA_ARCHES)
@pytest.mark.parametrize("key_form", FORMS, ids=IDS)
def test_ptxas_assembles_every_form(key_form, arch: str, tmp_path: Path) -> None:
    form = key_form[1]
    ptx = module_text([mma_kernel(form, int(arch[3:]))], arch)
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + ptx


def test_mma_below_sm_80_is_refused_by_name() -> None:
    form = next(iter(MMA_FORMS.values()))
    with pytest.raises(PtxError, match="needs sm_80"):
        module_text([mma_kernel(form, 75)], "sm_75")


def test_an_immediate_is_not_a_fragment() -> None:
    """The form row checks the operand count (4 vectors: D, A, B, C)."""
    form = next(iter(MMA_FORMS.values()))
    k = Kernel("k", [], [Inst(form.opcode, (Imm("0"),))])
    with pytest.raises(PtxError, match="takes 4 operands"):
        kernel_text(k, 80)
