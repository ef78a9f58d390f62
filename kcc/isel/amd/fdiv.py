"""float32 FDIV and SQRT on AMD: correctly rounded hardware sequences, as LLVM 19 lowers an
IEEE ``fdiv float`` and ``llvm.sqrt.f32`` with denormals kept (kcc's descriptors:
FLOAT_DENORM_MODE 3, kcc/targets/amd/hsaco.py; facts from llc-19's output for gfx1100 and
gfx942, the code not copied).

FDIV a / b (RECIPROCAL arrives as FDIV(1, x), kcc/passes/decompose.py), 11 VALU:

    v_div_scale_f32 d, vcc, b, b, a      the denominator, scaled by 2^±64 where the steps
    v_div_scale_f32 n, vcc, a, b, a      would meet denormals; VCC: post-scale the quotient
    v_rcp_f32       r, d                 1/d within 1 ULP
    v_fma_f32       e, -d, r, 1.0        one Newton step on r
    v_fma_f32       r, e, r, r
    v_mul_f32       q, n, r              q ≈ n/d, then one correction
    v_fma_f32       e, -d, q, n
    v_fma_f32       q, e, r, q
    v_fma_f32       e, -d, q, n          the exact residual
    v_div_fmas_f32  q, e, r, q           q + e·r rounded once (and post-scaled where VCC)
    v_div_fixup_f32 q, q, b, a           sign, zeros, infinities, NaN, underflow

V_DIV_FMAS reads VCC implicitly (RDNA3 ISA §15 / CDNA3 ISA §13 opcode text): VCC is not an
allocatable register (kcc/isel/amd/regs.py), the sequence is emitted in one piece and nothing
between the second v_div_scale and v_div_fmas writes VCC (the allocator's spill code does not).
On gfx9 a VALU write of VCC followed by v_div_fmas within 4 wait states is a hazard (LLVM's
GCNHazardRecognizer, checkDivFMasHazards): 7 VALU instructions lie between them here.
What the emulator takes V_DIV_SCALE/FMAS/FIXUP to compute, and its check on llc-19's own
division macro against numpy: kcc/targets/amd/emu/valu_div.py, test_emu_fdiv.py.

SQRT x, 16 VALU: x < 2^-96 (denormals included) is scaled by 2^32 (exact) so that v_sqrt_f32 and
the residuals below see normal values only; s = v_sqrt_f32 (within 1 ULP), then its float32
neighbours s- and s+ (the bit pattern ∓ 1) are tested by fma(-s-, s, x) ≤ 0 → s- and
fma(-s+, s, x) > 0 → s+: the residual x - s·s± is exact in sign, and the midpoint
(s + s±)/2 squared is s·s± + (ulp/2)², while x - s·s± is a multiple of ulp² (x's own grid
at that scale), so each test tells on which side of a midpoint sqrt(x) lies. The scaled root
is multiplied by 2^-16 (exact); ±0 and +inf (v_cmp_class 0x260) are x itself; a negative x
or NaN gives v_sqrt_f32's NaN, which the tests leave alone (compares with NaN are false).
"""

from __future__ import annotations

from typing import Any

from kcc.encode.amd.operands import Imm
from kcc.ir.dtype import dtypes
from kcc.ir.uop import UOp
from kcc.isel.amd.base import AmdSelectError, D

_NEG0 = (("neg", (1, 0, 0)),)          # VOP3 neg modifier on src0
_CLASS_ZERO_PINF = 0x260               # V_CMP_CLASS bits: 5 -0, 6 +0, 9 +inf


def select_fdiv(sel: Any, u: UOp) -> Any:
    """The register of FDIV(a, b) on float32 (module docstring)."""
    if u.dtype != dtypes.float32:
        raise AmdSelectError(f"FDIV on {u.dtype} should have been decomposed for AMD")
    a, b = sel.vsrc(u.src[0]), sel.vsrc(u.src[1])
    vcc = sel.vcc

    def v(name: str, *ops: Any, mods: tuple = ()) -> Any:
        r = sel.new("v")
        sel.emit(name, D(r), *ops, mods=mods)
        return r
    d = v("v_div_scale_f32", vcc, b, b, a)
    n = v("v_div_scale_f32", vcc, a, b, a)       # VCC as v_div_fmas reads it
    r = v("v_rcp_f32", d)
    e = v("v_fma_f32", d, r, sel._fconst(1.0), mods=_NEG0)
    r = v("v_fma_f32", e, r, r)
    q = v("v_mul_f32", n, r)
    e = v("v_fma_f32", d, q, n, mods=_NEG0)
    q = v("v_fma_f32", e, r, q)
    e = v("v_fma_f32", d, q, n, mods=_NEG0)
    q = v("v_div_fmas_f32", e, r, q)
    return v("v_div_fixup_f32", q, b, a)


def select_sqrt(sel: Any, u: UOp) -> Any:
    """The register of SQRT(x) on float32 (module docstring)."""
    if u.dtype != dtypes.float32:
        raise AmdSelectError(f"SQRT on {u.dtype} should have been decomposed for AMD")
    x = sel.vsrc_reg(u.src[0])
    f = sel._fconst

    def v(name: str, *ops: Any, mods: tuple = ()) -> Any:
        r = sel.new("v")
        sel.emit(name, D(r), *ops, mods=mods)
        return r

    def mask(name: str, *ops: Any) -> Any:
        m = sel.new(sel.arch.mask_cls)
        sel.emit(name, D(m), *ops)
        return m
    small = mask("v_cmp_gt_f32", f(2.0 ** -96), x)
    s = v("v_cndmask_b32", x, v("v_mul_f32", f(2.0 ** 32), x), small)
    root = v("v_sqrt_f32", s)
    dn = v("v_add_nc_u32", Imm(-1), root)
    up = v("v_add_nc_u32", Imm(1), root)
    below = v("v_fma_f32", dn, root, s, mods=_NEG0)    # x - s-·s
    above = v("v_fma_f32", up, root, s, mods=_NEG0)    # x - s+·s
    root = v("v_cndmask_b32", root, dn, mask("v_cmp_ge_f32", Imm(0), below))
    root = v("v_cndmask_b32", root, up, mask("v_cmp_lt_f32", Imm(0), above))
    root = v("v_cndmask_b32", root, v("v_mul_f32", f(2.0 ** -16), root), small)
    return v("v_cndmask_b32", root, s, mask("v_cmp_class_f32", s, Imm(_CLASS_ZERO_PINF)))
