"""WMMA selection for AMD: tinygrad's tensor-core op as one matrix instruction.

A WMMA node (docs/semantics.md; its form and lane maps in kcc/ir/wmma.py) holds each lane's A,
B and C fragment vectors; tinygrad's AMD lowerings hand the same vectors to LLVM's
``llvm.amdgcn.wmma.*`` / ``llvm.amdgcn.mfma.*`` intrinsics, so element i of a fragment is
element i of the instruction's register operand:

| arch | in -> out | instruction (dims (N, M, K) 16, 16, 16) | A, B | C, D |
|---|---|---|---|---|
| gfx1100 | f16 -> f32 | v_wmma_f32_16x16x16_f16 | 16 f16, v8 | 8 f32, v8 |
| gfx1100 | bf16 -> f32 | v_wmma_f32_16x16x16_bf16 | 16 bf16, v8 | 8 f32, v8 |
| gfx1100 | f16 -> f16 | v_wmma_f16_16x16x16_f16 | 16 f16, v8 | 8 f16 (low halves), v8 |
| gfx1100 | i8 -> i32 | v_wmma_i32_16x16x16_iu8 neg_lo:[1,1,0] | 16 i8, v4 | 8 i32, v8 |
| gfx942 | f16 -> f32 | v_mfma_f32_16x16x16_f16 | 4 f16, v2 | 4 f32, v4 |
| gfx942 | bf16 -> f32 | v_mfma_f32_16x16x16_bf16 | 4 bf16, v2 | 4 f32, v4 |

(neg_lo:[1,1,0] on iu8: A and B are signed; an f16 C/D uses the low half of each of its 8 VGPRs,
op_sel 0, as tinygrad's HIP wrapper puts c[n] in element 2n of the 16-half operand.)

Registers: the fragments' element registers (a 16- or 8-bit value in the low bits of a 32-bit
register) are packed into one contiguous tuple per operand, register by register (``v_perm_b32``:
two halves, or four bytes with a ``v_lshl_or_b32``; classes v2, v4, v8, even-aligned as CDNA3
requires); the instruction writes D over C (C is a fresh tuple), and the result tuple's
registers are the result vector's elements (an f16 result zero-extended from its low half, kcc's
convention).

Hazards the hardware does not interlock are waited out after allocation, where the order is
final (kcc/isel/amd/lower.py, ``Lowering.matrix_waits``). The matrix ops also need EXEC all
ones, so WMMA is refused inside a per-lane loop (where EXEC may be partial).
"""

from __future__ import annotations

from typing import Any

from kcc.encode.amd.operands import Imm
from kcc.ir import wmma
from kcc.ir.dtype import DType
from kcc.ir.uop import UOp
from kcc.isel.amd.base import AmdSelectError, D, DPart

# instruction -> (family, A/B dwords, C/D registers, modifiers); kcc.ir.wmma names the form
_FORMS: dict[str, tuple[str, int, int, tuple]] = {
    "v_wmma_f32_16x16x16_f16": ("rdna3", 8, 8, ()),
    "v_wmma_f32_16x16x16_bf16": ("rdna3", 8, 8, ()),
    "v_wmma_f16_16x16x16_f16": ("rdna3", 8, 8, ()),
    "v_wmma_i32_16x16x16_iu8": ("rdna3", 4, 8, (("neg_lo", (1, 1, 0)),)),
    "v_mfma_f32_16x16x16_f16": ("cdna3", 2, 4, ()),
    "v_mfma_f32_16x16x16_bf16": ("cdna3", 2, 4, ()),
}


def instructions() -> dict[str, str]:
    """Instruction -> the family it belongs to, for tests and docs."""
    return {k: v[0] for k, v in _FORMS.items()}


def _elements(sel: Any, u: UOp, n: int, what: str) -> list[Any]:
    """The n element registers of a fragment operand, as VGPRs (SGPRs and constants copied)."""
    if u.shape != (n,):
        raise AmdSelectError(f"WMMA: {what} has shape {u.shape}, the instruction takes {n}")
    r = sel.reg(u)
    regs = r if isinstance(r, tuple) else (r,)
    out = []
    for x in regs:
        if isinstance(x, tuple):
            raise AmdSelectError(f"WMMA: {what} holds a nested vector")
        out.append(sel.vgpr(x))
    return out


def _fragment(sel: Any, elems: list[Any], dt: DType | None) -> Any:
    """One contiguous VGPR tuple (class v2, v4 or v8) holding the elements: one to a register
    (dt None: the accumulator, whose f16 elements sit in low halves), 16-bit ones two to a
    register, 8-bit ones four. The tuple is written one register at a time (DPart: the tuple is
    DEF | USE there), so it never shares a register with an element, even a spilled one that
    is filled just before its use."""
    per = 1 if dt is None else 4 // dt.itemsize
    t = sel.new(f"v{len(elems) // per}")
    sel.emit(".def", D(t))
    # v_perm_b32 D, S0, S1, sel: selector byte 0-3 picks that byte of S1, 4-7 of S0, 0x0c a
    # zero byte (RDNA3 ISA V_PERM_B32), whatever the registers' upper bits hold:
    # perm(hi, lo, 0x05040100) = [lo.0, lo.1, hi.0, hi.1]; perm(b1, b0, 0x0c0c0400) =
    # [b0.0, b1.0, 0, 0]
    if per == 2:
        halves = sel.vconst(0x05040100)
    elif per == 4:
        bytes01 = sel.vconst(0x0C0C0400)
    for j in range(len(elems) // per):
        part = elems[per * j:per * j + per]
        if per == 1:
            sel.emit("v_mov_b32", DPart(t, j), part[0])
        elif per == 2:
            sel.emit("v_perm_b32", DPart(t, j), part[1], part[0], halves)
        else:
            lo, hi = sel.new("v"), sel.new("v")
            sel.emit("v_perm_b32", D(lo), part[1], part[0], bytes01)
            sel.emit("v_perm_b32", D(hi), part[3], part[2], bytes01)
            sel.emit("v_lshl_or_b32", DPart(t, j), hi, Imm(16), lo)
    return t


def select_wmma(sel: Any, u: UOp) -> None:
    """Select a WMMA node (see the module docstring); its value is the tuple of the result
    vector's element registers."""
    sh = wmma.shape_of(u)
    arch = sel.arch
    form = _FORMS.get(sh.name)
    if form is None or form[0] != arch.family:
        have = ", ".join(n for n, f in _FORMS.items() if f[0] == arch.family)
        raise AmdSelectError(f"WMMA {sh.device} {sh.dims} {sh.dtype_in}->{sh.dtype_out} on "
                             f"{sh.threads} threads ({sh.name}) has no {arch.name} instruction "
                             f"({arch.name} has {have})")
    if sel.lane_loops:
        raise AmdSelectError("WMMA inside a per-lane loop: the matrix ops need EXEC all ones")
    _, ab_dw, cd, mods = form
    din = u.src[0].dtype
    a, b = (_fragment(sel, _elements(sel, u.src[i], sh.per_lane[i], "AB"[i]), din)
            for i in (0, 1))
    assert sh.per_lane[0] * din.itemsize == 4 * ab_dw, "the form's A/B registers"
    c = _fragment(sel, _elements(sel, u.src[2], sh.per_lane[2], "C"), None)
    # D in C's registers (as llc writes it): A, B and C are all read, so live together and
    # apart, and D, being C, overlaps neither A nor B. Waits: lower.Lowering.matrix_waits.
    sel.emit(sh.name, D(c, mod=True), a, b, c, mods=mods)
    d = c
    outs = []
    for i in range(cd):
        r = sel.new("v")
        if u.dtype.itemsize == 2:
            sel.emit("v_bfe_u32", D(r), (d, i), Imm(0), Imm(16))
        else:
            sel.emit("v_mov_b32", D(r), (d, i))
        outs.append(r)
    sel.val[u] = tuple(outs)
