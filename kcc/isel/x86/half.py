"""x86 selection of float16 vectors (F16C): 4 or 8 lanes of float16 bits packed in an xmm (the
low 8 bytes, or all 16), as clang holds `__fp16` vectors. A mixin of X86Selector
(kcc/isel/x86/select.py).

kcc/targets/x86/arch.py makes them legal for the ops a float16 lane lifts to float32
(passes/decompose.py lift_half: CAST to float32, the float32 op, CAST back): so the vector ops
that reach this selector are loads and stores (VMOVQ / VMOVDQU), the two CASTs (VCVTPH2PS
widens exactly; VCVTPS2PH with imm8 = 0 rounds to nearest even, SDM Vol. 2A "VCVTPS2PH":
imm8[2] = 0 takes the rounding from imm8[1:0], 00b = round to nearest even), STACKs of scalars,
lane reads, constants and WHEREs (legalize_gates' selects), which move bits as uint16 lanes.
"""

from __future__ import annotations

from kcc.ir import Ops, UOp, dtypes
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86.base import SelectError, const_bytes, strong_const

F16 = dtypes.float16


def is_half_vector(u: UOp) -> bool:
    """u is a vector of float16 lanes (bits packed in an xmm)."""
    return bool(u.shape) and u.dtype == F16


class X86Half:
    """float16 vector rules (mixed into X86Selector)."""

    def half_load(self, mem: Mem, n: int) -> VReg:
        """n float16 from memory: VMOVQ (8 bytes, the rest of the xmm zeroed) or VMOVDQU."""
        t = self.new("vec")
        self.emit(self._half_move(n, load=True), t, mem)
        return t

    def half_store(self, mem: Mem, v: VReg, n: int) -> None:
        """n float16 to memory: VMOVQ m64 or VMOVDQU m128 (exactly 2n bytes written)."""
        self.emit(self._half_move(n, load=False), mem, v)

    @staticmethod
    def _half_move(n: int, load: bool) -> str:
        form = {4: ("vmovq_x_xm64", "vmovq_m64_x"), 8: ("vmovdqu_x_xm", "vmovdqu_m128_x")}
        if n not in form:
            raise SelectError(f"a vector of {n} x float16 is not legal on x86")
        return form[n][0 if load else 1]

    def half_vcast(self, x: UOp, dt: DType, n: int) -> VReg:
        """float32 ↔ float16 lanes: VCVTPS2PH (round to nearest even) / VCVTPH2PS (exact);
        int32 → float16 lanes through float32 (VCVTDQ2PS first)."""
        t = self.new("vec")
        if x.dtype == dtypes.int32 and dt == F16:
            # one rounding as a direct one: |x| < 2^24 is exact in float32, and |x| >= 2^24
            # rounds to at least 2^24 in float32, so to ±inf in float16 as x itself does
            # (float16's largest finite value is 65504; 65520 and beyond round to inf)
            f = self.new("vec")
            self.emit("vcvtdq2ps_x_xm" if n == 4 else "vcvtdq2ps_y_ym", f, self.reg(x))
            form = {4: "vcvtps2ph_xm64_x_imm8", 8: "vcvtps2ph_xm_y_imm8"}[n]
            self.emit(form, t, f, 0)
        elif x.dtype == dtypes.float32 and dt == F16:
            form = {4: "vcvtps2ph_xm64_x_imm8", 8: "vcvtps2ph_xm_y_imm8"}[n]
            self.emit(form, t, self.reg(x), 0)         # imm8 0: round to nearest even
        elif x.dtype == F16 and dt == dtypes.float32:
            form = {4: "vcvtph2ps_x_xm64", 8: "vcvtph2ps_y_xm"}[n]
            self.emit(form, t, self.reg(x))
        else:
            raise SelectError(f"vector CAST {x.dtype} → {dt} is not legal on x86")
        return t

    def half_const(self, values: list, n: int) -> VReg:
        """A float16 vector constant from .rodata (n lanes of bits)."""
        t = self.new("vec")
        data = b"".join(const_bytes(c, F16) for c in values)
        self.emit(self._half_move(n, load=True), t, Mem(), arg={"rip": self.pool.label(data)})
        return t

    def half_stack(self, u: UOp) -> VReg:
        """A STACK of float16 scalars: a constant, a splat, or each lane's bits (VPINSRW)."""
        n = u.shape[0]
        consts = [strong_const(s) for s in u.src]
        if all(c is not None for c in consts):
            return self.half_const(consts, n)
        if all(s is u.src[0] for s in u.src):
            return self.half_splat(u.src[0])
        return self.ivec_from([self.reg(s) for s in u.src], dtypes.uint16)

    def half_splat(self, s: UOp) -> VReg:
        """One float16 scalar in every lane: one VPBROADCASTW (AVX2, SDM "VPBROADCAST") from
        the xmm whose word 0 it is, else from a VMOVD of its bits, in place of a VPINSRW per
        lane (half_softmax's E_5_77_4 splats a row's max and sum: 8 inserts each)."""
        a = self.reg(s)
        x = self.half_xmm.get(a)
        if x is None:
            x = self.new("vec")
            self.emit("vmovd_x_rm32", x, a)
        t = self.new("vec")
        self.emit("vpbroadcastw_x_xm16", t, x)
        return t

    def half_lane(self, v: VReg, n: int, k: int) -> VReg:
        """Lane k's bits in a GPR (VPEXTRW zero-extends); lane 0 is also word 0 of v itself,
        which a widening or store of the scalar reads in place (select.py half_xmm)."""
        t = self.ivec_lane(v, dtypes.uint16, n, k)
        if k == 0:
            self.half_xmm[t] = v
        return t

    def half_where(self, u: UOp) -> VReg:
        """WHERE on float16 lanes moves bits: the same WHERE on uint16 lanes."""
        c, a, b = u.src
        bits = []
        for s in (a, b):
            w = UOp(Ops.BITCAST, (s,), dtypes.uint16)
            self.val[w] = self.reg(s)
            bits.append(w)
        return self.where(UOp(Ops.WHERE, (c, *bits)))
