"""Emulator semantics of the matrix ops: gfx1100 ``v_wmma_*`` (RDNA3 ISA §7.9 "Wave Matrix
Multiply Accumulate", VOP3P) and gfx942 ``v_mfma_*`` (CDNA3 ISA §7 "Matrix Arithmetic
Instructions", VOP3P-MAI). Each computes D = A x B + C for 16x16 tiles, with A (M x K), B
(K x N), C and D (M x N) spread over the lanes of the wave as the manuals lay them out:

gfx1100, wave32, M = N = K = 16 (AMD's "WMMA on RDNA3" guide; LLVM's
``llvm.amdgcn.wmma.*`` intrinsics take the same per-lane vectors):
  A: lane l < 16 holds row m = l; its k-th element is element k of the lane's source vector
     (16 halves in 8 VGPRs, element 2j the low half of VGPR j; iu8: 16 bytes in 4 VGPRs,
     element k byte k). B: lane l < 16 holds column n = l the same way. Lanes 16-31 must hold
     a copy of lanes 0-15 (the hardware reads one of the copies): a differing copy is an
     error here, as kcc must never rely on which one is read.
  C, D: VGPR i of lane l is element (m, n) = (2i + l // 16, l % 16); f16 C/D use the low
     halves (op_sel[2] = 0) or the high halves (op_sel[2] = 1), the other half of D is kept.
gfx942, wave64, 16x16x16 (AMD's matrix instruction calculator for CDNA3):
  A: element (i, k) is item k % 4 (4 halves in 2 VGPRs, item 2j the low half of VGPR j) of
     lane i + 16 * (k // 4); B: element (k, j) is item k % 4 of lane j + 16 * (k // 4);
  C, D: element (i, j) is VGPR i % 4 of lane j + 16 * (i // 4).

Arithmetic: the manuals do not give the hardware's internal order and precision, so the
emulator computes kcc's definition of WMMA (docs/semantics.md, "WMMA"): for each (m, n),
acc = C as binary32, then for k = 0 .. 15 in order acc = fma(A[m][k], B[k][n], acc) rounded to
binary32 (the f16/bf16 product is exact in binary64; the sum is rounded to odd there and then
to binary32: one rounding), D = acc rounded once to the result type (f16: round to nearest
even). So ``kcc run --check --emulate`` compares a WMMA kernel with the interpreter bit for
bit; a GPU agrees with both within the rounding of 16 additions. iu8: exact integer sums,
wrapped to 32 bits (CLAMP: saturated); NEG_LO[0]/[1] say A/B are signed. On f16/bf16 sources
NEG_LO/NEG_HI negate the low/high 16-bit halves of A (bit 0) or B (bit 1). EXEC must be all
ones (the manuals require it of these ops); CBSZ/ABID/BLGP (gfx942 broadcasts) and modifiers
on C are not emulated and raise :class:`~kcc.targets.amd.emu.core.EmuError`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kcc.encode.amd.operands import VGPR, Inst, Operand
from kcc.targets.amd.emu.core import Wave, Workgroup
from kcc.targets.amd.emu.valu import OPS, _bits, fma_odd


@dataclass(frozen=True)
class Form:
    """One matrix op: its family, input type ("f16", "bf16", "iu8") and accumulator type
    ("f32", "f16", "i32")."""

    fam: str
    a: str
    c: str


FORMS: dict[str, Form] = {
    "v_wmma_f32_16x16x16_f16": Form("gfx11", "f16", "f32"),
    "v_wmma_f32_16x16x16_bf16": Form("gfx11", "bf16", "f32"),
    "v_wmma_f16_16x16x16_f16": Form("gfx11", "f16", "f16"),
    "v_wmma_i32_16x16x16_iu8": Form("gfx11", "iu8", "i32"),
    "v_mfma_f32_16x16x16_f16": Form("gfx9", "f16", "f32"),
    "v_mfma_f32_16x16x16_bf16": Form("gfx9", "bf16", "f32"),
}


def _tuple(w: Wave, op: Operand, n: int, half: bool = False) -> np.ndarray:
    """VGPRs ``op`` .. ``op + n - 1`` as uint32 [n, lanes]; an inline constant is broadcast
    (``half``: its 16-bit encoding, in both halves, whichever op_sel reads)."""
    if not isinstance(op, VGPR):
        v = w.vread(op, 16 if half else 32)
        if half:
            v = (v & np.uint32(0xFFFF)) * np.uint32(0x10001)
        return np.repeat(v[None, :], n, axis=0)
    if op.count != n or op.index + n > w.v.shape[0]:
        raise w.error(f"{op} is not {n} VGPRs within the kernel's {w.v.shape[0]}")
    w.check_pending(("v", op.index, n))
    return w.v[op.index:op.index + n].copy()


def _halves(regs: np.ndarray) -> np.ndarray:
    """uint32 [n, lanes] -> uint16 [lanes, 2n]: element 2j the low half of register j."""
    return np.ascontiguousarray(regs.T).view(np.uint16)


def _as_float(h: np.ndarray, kind: str) -> np.ndarray:
    """16-bit patterns as binary64 values (bf16: the high half of a binary32)."""
    if kind == "f16":
        return h.view(np.float16).astype(np.float64)
    return (h.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def _negate(h: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """NEG_LO/NEG_HI of a packed 16-bit source: flip the sign of even/odd elements."""
    out = h.copy()
    if lo:
        out[:, 0::2] ^= np.uint16(0x8000)
    if hi:
        out[:, 1::2] ^= np.uint16(0x8000)
    return out


def _check_exec(w: Wave) -> None:
    if not w.exec.all():
        raise w.error("a matrix op needs EXEC all ones (the ISA requires it)")


def _operands(w: Wave, inst: Inst, f: Form) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A (M x K), B (K x N) and C (M x N) of one op, in the lane layouts of the module
    docstring: A and B as binary64 (f16/bf16) or int64 (iu8), C as its register bits."""
    _, sa, sb, sc = inst.ops
    neg_lo, neg_hi = inst.mod("neg_lo") or (0, 0, 0), inst.mod("neg_hi") or (0, 0, 0)
    if neg_lo[2] or neg_hi[2] or any(inst.mod(k) for k in ("cbsz", "abid", "blgp")):
        raise w.error(f"{inst.name}: modifiers on C and broadcasts are not emulated")
    if f.a == "iu8" and any(neg_hi):
        raise w.error(f"{inst.name}: neg_hi is not defined for iu8")
    if f.c != "i32" and inst.mod("clamp"):
        raise w.error(f"{inst.name}: clamp is not emulated for float results")
    ndw = 8 if f.fam == "gfx11" else 2
    if f.a == "iu8":
        ndw = 4
    ra, rb = _tuple(w, sa, ndw), _tuple(w, sb, ndw)
    nc = 8 if f.fam == "gfx11" else 4
    rc = _tuple(w, sc, nc, half=f.c == "f16")
    if f.a == "iu8":
        bytes_a = np.ascontiguousarray(ra.T).view(np.uint8)
        bytes_b = np.ascontiguousarray(rb.T).view(np.uint8)
        va = bytes_a.view(np.int8).astype(np.int64) if neg_lo[0] else bytes_a.astype(np.int64)
        vb = bytes_b.view(np.int8).astype(np.int64) if neg_lo[1] else bytes_b.astype(np.int64)
    else:
        va = _as_float(_negate(_halves(ra), neg_lo[0], neg_hi[0]), f.a)
        vb = _as_float(_negate(_halves(rb), neg_lo[1], neg_hi[1]), f.a)
    if f.fam == "gfx11":
        for name, v in (("A", va), ("B", vb)):
            if not np.array_equal(v[:16], v[16:], equal_nan=v.dtype.kind == "f"):
                raise w.error(f"{inst.name}: lanes 16-31 of {name} differ from lanes 0-15")
        a, b = va[:16], vb[:16].T                       # a[m, k], b[k, n]
        c = np.empty((16, 16), np.uint32)
        for i in range(8):
            c[2 * i] = rc[i, :16]
            c[2 * i + 1] = rc[i, 16:]
        return a, b, c
    a = np.empty((16, 16), va.dtype)
    b = np.empty((16, 16), vb.dtype)
    c = np.empty((16, 16), np.uint32)
    for g in range(4):                                  # lanes 16g .. 16g + 15
        a[:, 4 * g:4 * g + 4] = va[16 * g:16 * g + 16]
        b[4 * g:4 * g + 4, :] = vb[16 * g:16 * g + 16].T
        c[4 * g:4 * g + 4, :] = rc[:, 16 * g:16 * g + 16]
    return a, b, c


def _result(w: Wave, inst: Inst, f: Form, a: np.ndarray, b: np.ndarray,
            c: np.ndarray) -> np.ndarray:
    """D (M x N) as register bits (uint32; f16 in the low 16 bits)."""
    if f.c == "i32":
        acc = c.view(np.int32).astype(np.int64) + a @ b
        if inst.mod("clamp"):
            acc = np.clip(acc, -2**31, 2**31 - 1)
        return (acc & 0xFFFFFFFF).astype(np.uint32)
    sel = 1 if (inst.mod("op_sel") or (0, 0, 0))[2] else 0
    if f.c == "f16":
        cv = ((c >> np.uint32(16 * sel)) & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    else:
        cv = c.view(np.float32)
    acc = cv.astype(np.float32)
    with np.errstate(all="ignore"):                    # inf * 0 is NaN, as IEEE says
        for k in range(16):
            acc = fma_odd(a[:, k:k + 1], b[k:k + 1, :], acc).astype(np.float32)
        t = "h" if f.c == "f16" else "f"
        res = acc.astype(np.float16) if t == "h" else acc
    return _bits(res, t, [a, b, cv])


def _write(w: Wave, inst: Inst, f: Form, d: np.ndarray) -> None:
    """Scatter D (M x N) to the destination tuple in the family's lane layout."""
    vd = inst.ops[0]
    n = 8 if f.fam == "gfx11" else 4
    if not isinstance(vd, VGPR) or vd.count != n or vd.index + n > w.v.shape[0]:
        raise w.error(f"{inst.name}: destination {vd} is not {n} VGPRs")
    w.check_pending(("v", vd.index, n))
    regs = np.empty((n, w.lanes), np.uint32)
    if f.fam == "gfx11":
        for i in range(8):
            regs[i, :16], regs[i, 16:] = d[2 * i], d[2 * i + 1]
    else:
        for g in range(4):
            regs[:, 16 * g:16 * g + 16] = d[4 * g:4 * g + 4, :]
    if f.c == "f16":
        sel = 16 if (inst.mod("op_sel") or (0, 0, 0))[2] else 0
        old = w.v[vd.index:vd.index + n]
        keep = np.uint32(0xFFFF0000 if sel == 0 else 0x0000FFFF)
        regs = (old & keep) | ((regs & np.uint32(0xFFFF)) << np.uint32(sel))
    w.v[vd.index:vd.index + n] = regs


def _matrix(w: Wave, inst: Inst, wg: Workgroup) -> None:
    f = FORMS[inst.name]
    if f.fam != w.fam:
        raise w.error(f"{inst.name} is not a {w.arch} instruction")
    _check_exec(w)
    a, b, c = _operands(w, inst, f)
    _write(w, inst, f, _result(w, inst, f, a, b, c))


for _name in FORMS:
    OPS[_name] = _matrix
