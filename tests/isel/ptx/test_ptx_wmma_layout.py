"""The fragment layout of kcc's mma.sync against the PTX ISA's tables.

`ISA` below transcribes the row/column formulas of PTX ISA 9.7.14.5.7 ("Matrix Fragments for
mma.m16n8k8") and 9.7.14.5.8 ("… mma.m16n8k16 with floating point type"): for lane `l`,
groupID = l >> 2 and threadID_in_group = l % 4, fragment element i (numbered "low to high"
across the operand's registers, two 16-bit elements per .f16x2/.b32 register) is at (row, col)
of A (M×K), B (K×N) or C/D (M×N). It is written from the ISA's text, not from kcc or tinygrad.

Two facts are checked for every form kcc writes:
1. the selection (the PTX text kcc emits) puts a WMMA operand's vector element i at the ISA's
   fragment position i: traced from the loads through the packing movs into the mma operands;
2. the IR's meaning of element i of lane l (kcc.ir.wmma, written from tinygrad's definition) is
   the ISA's (row, col) of fragment element i of lane l, for all 32 lanes.
Together: the mma computes, element for element, the WMMA the IR defines.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from kcc.encode.ptx import kernel_text
from kcc.isel.ptx.wmma import MMA_FORMS, MmaForm
from tests.isel.ptx.test_ptx_mma_forms import mma_kernel

Pos = Callable[[int, int], tuple[int, int]]     # (lane, i) → (row, col)


def _g(lane: int) -> int:
    return lane >> 2                 # groupID


def _t(lane: int) -> int:
    return lane % 4                  # threadID_in_group


# -- PTX ISA 9.7.14.5.8: m16n8k16, .f16/.bf16 --------------------------------------------------
def k16_a(lane: int, i: int) -> tuple[int, int]:
    row = _g(lane) if (0 <= i < 2 or 4 <= i < 6) else _g(lane) + 8
    col = _t(lane) * 2 + (i & 1) if i < 4 else _t(lane) * 2 + (i & 1) + 8
    return row, col


def k16_b(lane: int, i: int) -> tuple[int, int]:
    row = _t(lane) * 2 + (i & 1) if i < 2 else _t(lane) * 2 + (i & 1) + 8
    return row, _g(lane)


def c_frag(lane: int, i: int) -> tuple[int, int]:
    """C/D of m16n8k8 and m16n8k16, .f16 and .f32 alike."""
    row = _g(lane) if i < 2 else _g(lane) + 8
    return row, _t(lane) * 2 + (i & 1)


# -- PTX ISA 9.7.14.5.7: m16n8k8, .f16/.bf16 and .tf32 ------------------------------------------
def k8_a(lane: int, i: int) -> tuple[int, int]:
    row = _g(lane) if i < 2 else _g(lane) + 8
    return row, _t(lane) * 2 + (i & 1)


def k8_b(lane: int, i: int) -> tuple[int, int]:
    return _t(lane) * 2 + i, _g(lane)


def k8_tf32_a(lane: int, i: int) -> tuple[int, int]:
    row = _g(lane) if i in (0, 2) else _g(lane) + 8
    col = _t(lane) if i in (0, 1) else _t(lane) + 4
    return row, col


def k8_tf32_b(lane: int, i: int) -> tuple[int, int]:
    return (_t(lane) if i == 0 else _t(lane) + 4), _g(lane)


ISA: dict[tuple[str, str], tuple[Pos, Pos, Pos]] = {
    ("m16n8k16", "f16"): (k16_a, k16_b, c_frag),
    ("m16n8k16", "bf16"): (k16_a, k16_b, c_frag),
    ("m16n8k8", "f16"): (k8_a, k8_b, c_frag),
    ("m16n8k8", "tf32"): (k8_tf32_a, k8_tf32_b, c_frag),
}

FORMS = sorted(MMA_FORMS.items(), key=lambda kv: str(kv[0]))
IDS = [f"{d[2]}k-{i.name}-{o.name}" for (d, i, o), _ in FORMS]


def test_isa_tables_cover_each_matrix_once() -> None:
    """Sanity of the transcription: over 32 lanes, each table hits every element exactly once."""
    for form in (f for _, f in FORMS):
        tables = ISA[(form.shape, form.atype)]
        for table, (rows, cols), n in zip(tables, ((form.m, form.k), (form.k, form.n),
                                                   (form.m, form.n)), form.elements):
            seen = sorted(table(lane, i) for lane in range(32) for i in range(n))
            assert seen == [(r, c) for r in range(rows) for c in range(cols)], form


# -- 1. the PTX text: element i of an operand is fragment element i -----------------------------
_LD = re.compile(r"ld\.global\.\w+ (%\w+), \[%rd0(?:\+(\d+))?\];")
_PACK = re.compile(r"mov\.b32 (%r\d+), (?:\{(%\w+), (%\w+)\}|(%f\d+));")
_UNPACK = re.compile(r"mov\.b32 \{(%\w+), (%\w+)\}, (%r\d+);")
_ST = re.compile(r"st\.global\.\w+ \[%rd0\+\d+\], (%\w+);")
_MMA = re.compile(r"mma\.sync\S* \{([^}]*)\}, \{([^}]*)\}, \{([^}]*)\}, \{([^}]*)\};")


def fragment_order(form: MmaForm) -> tuple[list[int], list[int], list[int], list[int]]:
    """From kcc's PTX for `mma_kernel` (which loads A's, then B's, then C's elements from
    consecutive 4-byte slots, and stores D's elements in order after them): the load slot in
    each fragment position of A, B and C, low to high, and the fragment position of D that
    each stored element of D is."""
    text = kernel_text(mma_kernel(form, 80), 80)
    slot = {m.group(1): int(m.group(2) or 0) // 4 for m in _LD.finditer(text)}
    halves: dict[str, list[str]] = {}
    for m in _PACK.finditer(text):
        halves[m.group(1)] = [m.group(2), m.group(3)] if m.group(2) else [m.group(4)]
    mma = _MMA.search(text)
    assert mma is not None, text

    def order(regs: str) -> list[int]:
        out: list[int] = []
        for r in (x.strip() for x in regs.split(",")):
            out += [slot[h] for h in halves[r]] if r in halves else [slot[r]]
        return out
    dpos: dict[str, int] = {}
    for j, r in enumerate(x.strip() for x in mma.group(1).split(",")):
        dpos[r] = j
    for m in _UNPACK.finditer(text):            # an f16x2 D register: its low, high half
        j = dpos[m.group(3)]
        dpos[m.group(1)], dpos[m.group(2)] = 2 * j, 2 * j + 1
    d = [dpos[m.group(1)] for m in _ST.finditer(text)]
    return order(mma.group(2)), order(mma.group(3)), order(mma.group(4)), d


@pytest.mark.parametrize("key_form", FORMS, ids=IDS)
def test_operand_element_i_is_fragment_element_i(key_form) -> None:
    form = key_form[1]
    a, b, c, d = fragment_order(form)
    na, nb, nc = form.elements
    assert a == list(range(na))
    assert b == list(range(na, na + nb))
    assert c == list(range(na + nb, na + nb + nc))
    assert d == list(range(nc))


# -- 2. the IR's lane maps are the ISA's tables --------------------------------------------------
@pytest.mark.parametrize("key_form", FORMS, ids=IDS)
def test_ir_lane_map_is_the_isa_fragment_layout(key_form) -> None:
    from kcc.ir import wmma
    (dims, din, dout), form = key_form
    sh = wmma.find("CUDA", dims, 32, din.name, dout.name)
    if sh is None:
        assert form.atype == "tf32", f"the IR has no form for {form.opcode}"
        pytest.skip("the IR has no tf32 WMMA (float32 inputs rounded to tf32 are no kcc dtype)")
    assert sh.per_lane == form.elements
    for which, isa, ir in zip("ABC", ISA[(form.shape, form.atype)], (sh.a_at, sh.b_at, sh.c_at)):
        for lane in range(32):
            for i in range(form.elements["ABC".index(which)]):
                assert ir(lane, i) == isa(lane, i), (form.opcode, which, lane, i)


def test_every_cuda_form_of_the_ir_has_an_mma() -> None:
    from kcc.ir import wmma
    from kcc.ir.dtype import dtypes
    for sh in wmma.SHAPES:
        if sh.device == "CUDA":
            key = (sh.dims, dtypes.by_name(sh.dtype_in), dtypes.by_name(sh.dtype_out))
            assert key in MMA_FORMS, sh.name
