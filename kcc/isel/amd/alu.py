"""The ALU rules of the AMD selector: one `sel_OP` per op, SALU for uniform ≤ 32-bit integer
values, VALU otherwise. Semantics are docs/semantics.md's, the instructions' meaning the
RDNA3/CDNA3 ISA manuals':
- float compares: v_cmp_lt_f32 / v_cmp_eq_f32 are ordered (false on NaN), v_cmp_neq_f32 is
  unordered not-equal (true on NaN), exactly CMPLT/CMPEQ/CMPNE;
- MAX on floats is decomposed before selection (v_max_f32 is IEEE maxNum); integer MAX is
  v_max_i32/u32, the same function;
- float → int: v_cvt_i32_f32 / v_cvt_u32_f32 (and _f64) truncate and saturate, NaN → 0
  (RDNA3 ISA §7.x "VOP1 conversions"); narrower integers clamp the 32-bit result;
- MULACC on floats is v_fma_f32/f64 (fused, one rounding);
- shifts take the amount modulo the operand width (the hardware uses the low 5/6 bits).
"""

from __future__ import annotations

from typing import Any

from kcc.encode.amd.operands import Imm
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp
from kcc.isel.amd.base import AmdSelectError, Base, D, DPart, const_bits, is_wide
from kcc.isel.amd.matrix import select_wmma
from kcc.isel.common import strong_const

_F32, _F64 = dtypes.float32, dtypes.float64
_HALF = (dtypes.float16, dtypes.bfloat16)


def _cmp_suffix(dt: DType) -> str:
    if dt.is_float:
        return f"f{dt.bits}"
    size = 64 if dt.itemsize == 8 else 32
    return f"{'i' if dt.is_signed else 'u'}{size}"


class AmdAlu(Base):
    """ALU selection; `val` maps a node to its register (a tuple for a vector)."""

    uniform: set[UOp]

    # -- values ---------------------------------------------------------------------------
    def reg(self, u: UOp) -> Any:
        """The register (tuple for a vector) holding u's value."""
        if u in self.val:
            return self.val[u]
        if u.op is Ops.AFTER:
            return self.reg(u.src[0])
        c = strong_const(u)
        if c is None and u.op is Ops.CONST and isinstance(u.arg, (int, float)):
            raise AmdSelectError(f"an untyped constant {u.arg!r} reached the AMD selector")
        if c is not None:
            return self.const_reg(c, u.dtype)
        if u.op is Ops.STACK:
            return tuple(self.reg(s) for s in u.src)
        raise AmdSelectError(f"{u.op.name} has no value at this point of the schedule")

    def const_reg(self, v: Any, dt: DType) -> Any:
        """A constant in a register: a lane mask, an SGPR, or a VGPR pair (64-bit)."""
        bits = const_bits(v, dt)
        if dt.is_bool:
            m = self.new(self.arch.mask_cls)
            self.emit(f"s_mov_b{self.arch.wave}", D(m), Imm(-1 if v else 0))
            return m
        if is_wide(dt):
            r = self.new("v2")
            self.emit(".vlit64", D(r), Imm(bits & (2 ** 64 - 1)))
            return r
        r = self.new("s")
        self.emit("s_mov_b32", D(r), Imm(_s32(bits)))
        return r

    def sreg(self, u: UOp) -> Any:
        """A SALU source: an SGPR or a 32-bit immediate."""
        c = strong_const(u)
        if c is not None and not u.dtype.is_bool:
            return Imm(_s32(const_bits(c, u.dtype)))
        r = self.reg(u)
        if not r.cls.startswith("s"):
            raise AmdSelectError(f"{u.op.name} is not uniform where a scalar was needed")
        return r

    def vsrc(self, u: UOp, f64: bool = False) -> Any:
        """A VALU source: a VGPR (pair), a 32-bit SGPR (emit's legal_scalars copies it into a
        VGPR where the instruction cannot read it), an inline constant or a literal; `f64`:
        the operand of a float64 VALU instruction (which takes the inline floats)."""
        c = strong_const(u)
        if c is not None and not u.dtype.is_bool:
            return self.vconst(const_bits(c, u.dtype), is_wide(u.dtype),
                               f64 and u.dtype == _F64)
        r = self.reg(u)
        return r if getattr(r, "cls", None) == "s" and not u.dtype.is_bool else self.vgpr(r)

    def is_salu(self, u: UOp) -> bool:
        """Whether u is computed by the SALU: uniform, ≤ 32-bit integer, operands scalar."""
        dt = u.src[0].dtype if u.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else u.dtype
        if u not in self.uniform or dt.is_float or dt in _HALF or is_wide(dt) or dt.is_bool:
            return False
        for s in u.src:
            if s.dtype.is_bool:
                return False
            if strong_const(s) is None:
                r = self.reg(s)
                if isinstance(r, tuple) or not r.cls.startswith("s") or r.cls != "s":
                    return False
        return True

    def lo32(self, r: Any) -> Any:
        """The low 32 bits of a 64-bit register pair."""
        t = self.new("s" if r.cls.startswith("s") else "v")
        self.emit("s_mov_b32" if t.cls == "s" else "v_mov_b32", D(t), (r, 0))
        return t

    def hi32(self, r: Any) -> Any:
        """The high 32 bits of a 64-bit register pair."""
        t = self.new("s" if r.cls.startswith("s") else "v")
        self.emit("s_mov_b32" if t.cls == "s" else "v_mov_b32", D(t), (r, 1))
        return t

    def pair(self, lo: Any, hi: Any) -> Any:
        """A VGPR pair from two 32-bit values (registers, VGPR or SGPR)."""
        return self.pack([lo, hi])

    def widen_u32(self, r: Any) -> Any:
        """A 32-bit value zero-extended to a VGPR pair."""
        return self.pair(r, self.vconst_reg(0))

    def vconst_reg(self, bits: int) -> Any:
        t = self.new("v")
        self.emit("v_mov_b32", D(t), Imm(_s32(bits)))
        return t

    def to_mask(self, r: Any) -> Any:
        """A 0/1 VGPR as a lane mask."""
        m = self.new(self.arch.mask_cls)
        self.emit("v_cmp_ne_u32", D(m), Imm(0), self.vgpr(r))
        return m

    def from_mask(self, m: Any) -> Any:
        """A lane mask as 0/1 in a VGPR."""
        r = self.new("v")
        self.emit("v_cndmask_b32", D(r), Imm(0), Imm(1), m)
        return r

    def select_value(self, m: Any, a: Any, b: Any, dt: DType) -> Any:
        """m ? a : b for registers of dt."""
        if dt.is_bool:
            t1, t2, r = (self.new(self.arch.mask_cls) for _ in range(3))
            self.emit(self.mask_op("s_and"), D(t1), m, a)
            self.emit(self.mask_op("s_and_not1"), D(t2), b, m)
            self.emit(self.mask_op("s_or"), D(r), t1, t2)
            return r
        a, b = self.vgpr(a), self.vgpr(b)
        if is_wide(dt):
            r = self.new("v2")
            self.emit(".cndmask64", D(r), b, a, m)
            return r
        r = self.new("v")
        self.emit("v_cndmask_b32", D(r), b, a, m)
        return r

    def copy_into(self, dst: Any, src: Any, dt: DType) -> None:
        """dst = src in the lanes of EXEC, src of any register kind."""
        if dt.is_bool and dst.cls.startswith("v"):
            src = self.from_mask(src) if not src.cls.startswith("v") else src
            self.emit("v_mov_b32", D(dst), src)
        elif dt.is_bool and self.lane_loops:
            # SALU writes every lane: keep the bits of lanes outside EXEC (a finished lane
            # of a per-lane loop keeps its value)
            t1, t2 = self.new(self.arch.mask_cls), self.new(self.arch.mask_cls)
            self.emit(self.mask_op("s_and"), D(t1), src, self.exec)
            self.emit(self.mask_op("s_and_not1"), D(t2), dst, self.exec)
            self.emit(self.mask_op("s_or"), D(dst, mod=True), t1, t2)
        elif dt.is_bool:
            self.emit(f"s_mov_b{self.arch.wave}", D(dst), src)
        elif is_wide(dt):
            self.emit(".vmov", D(dst), src)
        else:
            # in a per-lane loop EXEC is narrower than where src may have been defined: a
            # finished lane keeps dst, so this copy must stay a copy (regs.is_copy)
            self.emit("v_mov_b32_e32" if self.lane_loops else "v_mov_b32", D(dst), src)

    def normalize(self, r: Any, dt: DType) -> Any:
        """Re-extend a ≤ 16-bit integer (or a half's bit pattern) in a 32-bit VGPR."""
        if dt.itemsize >= 4 or dt.is_bool:
            return r
        t = self.new("v")
        signed = dt.is_int and dt.is_signed
        self.emit("v_bfe_i32" if signed else "v_bfe_u32", D(t), r, Imm(0), Imm(8 * dt.itemsize))
        return t

    def snormalize(self, r: Any, dt: DType) -> Any:
        """normalize for an SGPR."""
        if dt.itemsize >= 4:
            return r
        t = self.new("s")
        if dt.is_signed:
            self.emit(f"s_sext_i32_i{dt.bits}", D(t), r)
        else:
            self.emit("s_and_b32", D(t), r, Imm((1 << dt.bits) - 1))
        return t

    # -- rules ----------------------------------------------------------------------------
    def _salu2(self, u: UOp, name: str) -> None:
        r = self.new("s")
        self.emit(name, D(r), self.sreg(u.src[0]), self.sreg(u.src[1]))
        self.val[u] = self.snormalize(r, u.dtype)

    def _vop(self, u: UOp, name: str, *srcs: UOp, wide: bool = False) -> Any:
        r = self.new("v2" if wide else "v")
        f64 = name.startswith("v_") and name.endswith("_f64")
        self.emit(name, D(r), *(self.vsrc(s, f64) for s in srcs))
        return r

    def _mask2(self, u: UOp, base: str) -> None:
        r = self.new(self.arch.mask_cls)
        self.emit(self.mask_op(base), D(r), self.reg(u.src[0]), self.reg(u.src[1]))
        self.val[u] = r

    def _lanes(self, u: UOp) -> bool:
        if u.shape != ():
            raise AmdSelectError(f"a vector {u.op.name} reached the AMD selector (lanes are "
                                 "scalar: devectorize should have split it)")
        return False

    def _int_binop(self, u: UOp, salu: str, valu: str, valu64: str | None) -> None:
        self._lanes(u)
        dt = u.dtype
        if self.is_salu(u):
            return self._salu2(u, salu)
        if is_wide(dt):
            if valu64 is None:
                raise AmdSelectError(f"{u.op.name} on {dt} is not supported on AMD")
            self.val[u] = self._vop(u, valu64, *u.src, wide=True)
            return
        self.val[u] = self.normalize(self._vop(u, valu, *u.src), dt)

    def sel_ADD(self, u: UOp) -> None:
        """s_add_i32 / v_add_nc_u32 / v_add_f32 / v_add_f64; 64-bit ints as a carry pair."""
        dt = u.dtype
        if dt.is_float:
            self.val[u] = self._vop(u, f"v_add_f{dt.bits}", *u.src, wide=is_wide(dt))
        else:
            self._int_binop(u, "s_add_i32", "v_add_nc_u32", ".add64")

    def sel_SUB(self, u: UOp) -> None:
        """s_sub_i32 / v_sub_nc_u32 / v_sub_f32 (v_add_f64 with -b for float64)."""
        dt = u.dtype
        if dt == _F64:
            r = self.new("v2")
            self.emit("v_add_f64", D(r), self.vsrc(u.src[0], True), self.vsrc(u.src[1], True),
                      mods=(("neg", (0, 1, 0)),))
            self.val[u] = r
        elif dt.is_float:
            self.val[u] = self._vop(u, "v_sub_f32", *u.src)
        else:
            self._int_binop(u, "s_sub_i32", "v_sub_nc_u32", ".sub64")

    def sel_MUL(self, u: UOp) -> None:
        """s_mul_i32 / v_mul_lo_u32 / v_mul_f32 / v_mul_f64; 64-bit ints from 32-bit parts."""
        dt = u.dtype
        if dt.is_float:
            self.val[u] = self._vop(u, f"v_mul_f{dt.bits}", *u.src, wide=is_wide(dt))
        elif is_wide(dt) and not self.is_salu(u):
            self.val[u] = self._mul64(self.vsrc_reg(u.src[0]), self.vsrc_reg(u.src[1]))
        else:
            self._int_binop(u, "s_mul_i32", "v_mul_lo_u32", None)

    def _mul64(self, a: Any, b: Any) -> Any:
        """(a1·2^32 + a0)(b1·2^32 + b0) mod 2^64 = a0·b0 + (a0·b1 + a1·b0 + hi(a0·b0))·2^32,
        as plain instructions into a pair written one register at a time (so the allocator
        sees every temporary's and the result's life: nothing overlaps a source that is read
        later, even one filled from a spill slot)."""
        add = "v_add_nc_u32"
        x, y, s, h = self.new("v"), self.new("v"), self.new("v"), self.new("v")
        self.emit("v_mul_lo_u32", D(x), (a, 0), (b, 1))
        self.emit("v_mul_lo_u32", D(y), (a, 1), (b, 0))
        self.emit(add, D(s), x, y)
        self.emit("v_mul_hi_u32", D(h), (a, 0), (b, 0))
        r = self.new("v2")
        self.emit(".def", D(r))
        self.emit(add, DPart(r, 1), s, h)
        self.emit("v_mul_lo_u32", DPart(r, 0), (a, 0), (b, 0))
        return r

    def vsrc_reg(self, u: UOp) -> Any:
        """A VALU source that must be a register (not an inline constant)."""
        s = self.vsrc(u)
        if isinstance(s, Imm):
            wide = is_wide(u.dtype)
            r = self.new("v2" if wide else "v")
            self.emit(".vlit64" if wide else "v_mov_b32", D(r), s)
            return r
        return s

    def sel_MULACC(self, u: UOp) -> None:
        """v_fma_f32 / v_fma_f64: a·b + c rounded once."""
        dt = u.dtype
        if not dt.is_float or dt in _HALF:
            raise AmdSelectError(f"MULACC on {dt} reached the AMD selector")
        self.val[u] = self._vop(u, f"v_fma_f{dt.bits}", *u.src, wide=is_wide(dt))

    def sel_NEG(self, u: UOp) -> None:
        """Floats: flip the sign bit (v_xor_b32, also of NaN and 0); ints: 0 - x."""
        dt = u.dtype
        x = u.src[0]
        if dt.is_float:
            r = self.new("v2" if is_wide(dt) else "v")
            src = self.vsrc_reg(x)
            self.emit(".fneg64" if is_wide(dt) else "v_xor_b32", D(r),
                      *(() if is_wide(dt) else (self.vconst_reg(0x80000000),)), src)
            self.val[u] = r
        elif self.is_salu(u):
            r = self.new("s")
            self.emit("s_sub_i32", D(r), Imm(0), self.sreg(x))
            self.val[u] = self.snormalize(r, dt)
        elif is_wide(dt):
            r = self.new("v2")
            self.emit(".sub64", D(r), self.vconst(0, True), self.vsrc(x))
            self.val[u] = r
        else:
            r = self.new("v")
            self.emit("v_sub_nc_u32", D(r), Imm(0), self.vsrc(x))
            self.val[u] = self.normalize(r, dt)

    def _logic(self, u: UOp, op: str) -> None:
        if u.dtype.is_bool:
            return self._mask2(u, f"s_{op}")
        self._int_binop(u, f"s_{op}_b32", f"v_{op}_b32", f".{op}64")

    def sel_AND(self, u: UOp) -> None:
        """Bitwise AND (lane masks for bool)."""
        self._logic(u, "and")

    def sel_OR(self, u: UOp) -> None:
        """Bitwise OR (lane masks for bool)."""
        self._logic(u, "or")

    def sel_XOR(self, u: UOp) -> None:
        """Bitwise XOR (lane masks for bool)."""
        self._logic(u, "xor")

    def _shift(self, u: UOp, salu: str, valu: str, valu64: str) -> None:
        dt = u.dtype
        a, n = u.src
        k = strong_const(n)
        if self.is_salu(u) and dt.itemsize == 4:
            return self._salu2(u, salu)
        if k is not None:
            amt = Imm(int(k) % dt.bits)          # the interpreter's amount modulo the width
        elif is_wide(n.dtype):
            amt = self.vgpr(self.lo32(self.reg(n)))   # the hardware reads the low 6 bits
        else:
            amt = self.vsrc(n)
        if dt.itemsize < 4 and k is None:
            # the amount modulo the width, as the interpreter (an amount ≥ bits is unspecified)
            m = self.new("v")
            self.emit("v_and_b32", D(m), Imm(dt.bits - 1), amt)
            amt = m
        r = self.new("v2" if is_wide(dt) else "v")
        # the VOP2 "rev" forms take the amount first
        self.emit(valu64 if is_wide(dt) else valu, D(r), amt, self.vsrc(a))
        self.val[u] = self.normalize(r, dt)

    def sel_SHL(self, u: UOp) -> None:
        """s_lshl_b32 / v_lshlrev_b32 / v_lshlrev_b64."""
        self._shift(u, "s_lshl_b32", "v_lshlrev_b32", "v_lshlrev_b64")

    def sel_SHR(self, u: UOp) -> None:
        """Arithmetic for signed dtypes, logical for unsigned."""
        if u.dtype.is_signed:
            self._shift(u, "s_ashr_i32", "v_ashrrev_i32", "v_ashrrev_i64")
        else:
            self._shift(u, "s_lshr_b32", "v_lshrrev_b32", "v_lshrrev_b64")

    def sel_MAX(self, u: UOp) -> None:
        """Integer MAX: s_max / v_max (a < b ? b : a is max for integers); bool: OR."""
        dt = u.dtype
        if dt.is_bool:               # false < true: MAX is OR
            return self._mask2(u, "s_or")
        if dt.is_float:
            raise AmdSelectError(f"MAX on {dt} reached the AMD selector")
        if is_wide(dt):              # a < b ? b : a with a 64-bit compare
            m = self.new(self.arch.mask_cls)
            a, b = self.vsrc(u.src[0]), self.vsrc(u.src[1])
            self.emit(f"v_cmp_lt_{_cmp_suffix(dt)}", D(m), a, b)
            self.val[u] = self.select_value(m, self.reg(u.src[1]), self.reg(u.src[0]), dt)
            return
        s = "i32" if dt.is_signed else "u32"
        self._int_binop(u, f"s_max_{s}", f"v_max_{s}", None)

    def _compare(self, u: UOp, op: str) -> None:
        a, b = u.src
        dt = a.dtype
        if dt.is_bool:
            if op == "ne":
                return self._mask2(u, "s_xor")
            if op == "eq":
                return self._mask2(u, "s_xnor")
            r = self.new(self.arch.mask_cls)       # a < b on bools: !a & b
            self.emit(self.mask_op("s_and_not1"), D(r), self.reg(b), self.reg(a))
            self.val[u] = r
            return
        if dt in _HALF:
            raise AmdSelectError(f"a {dt} compare reached the AMD selector")
        m = self.new(self.arch.mask_cls)
        if self.is_salu(u):
            s = "i32" if dt.is_signed else "u32"
            cop = {"lt": "lt", "eq": "eq", "ne": "lg"}[op]
            self.emit(f"s_cmp_{cop}_{s}", self.sreg(a), self.sreg(b))
            self.emit(f"s_cselect_b{self.arch.wave}", D(m), Imm(-1), Imm(0))
        else:
            if op == "ne" and dt.is_float:
                op = "neq"
            f64 = dt == _F64
            self.emit(f"v_cmp_{op}_{_cmp_suffix(dt)}", D(m), self.vsrc(a, f64),
                      self.vsrc(b, f64))
        self.val[u] = m

    def sel_CMPLT(self, u: UOp) -> None:
        """v_cmp_lt (ordered: false on NaN) / s_cmp_lt + s_cselect."""
        self._compare(u, "lt")

    def sel_CMPEQ(self, u: UOp) -> None:
        """v_cmp_eq (ordered) / s_cmp_eq; bools: XNOR of the masks."""
        self._compare(u, "eq")

    def sel_CMPNE(self, u: UOp) -> None:
        """v_cmp_neq_f (unordered: true on NaN) / v_cmp_ne / s_cmp_lg; bools: XOR."""
        self._compare(u, "ne")

    def sel_WHERE(self, u: UOp) -> None:
        """v_cndmask_b32 (per half for 64-bit); bools: mask arithmetic."""
        c, a, b = u.src
        self._lanes(u)
        if u in self.uniform and self.is_salu_where(u):
            r = self.new("s")
            self.emit("s_cmp_lg_u32", self.lo_mask(self.reg(c)), Imm(0))
            self.emit("s_cselect_b32", D(r), self.sreg(a), self.sreg(b))
            self.val[u] = r
            return
        self.val[u] = self.select_value(self.reg(c), self.reg(a), self.reg(b), u.dtype)

    def is_salu_where(self, u: UOp) -> bool:
        dt = u.dtype
        if dt.is_float or is_wide(dt) or dt.is_bool or dt in _HALF:
            return False
        return all(strong_const(s) is not None or self.reg(s).cls == "s" for s in u.src[1:])

    def lo_mask(self, m: Any) -> Any:
        """A 32-bit SGPR that is 0 exactly when the (uniform) mask is 0."""
        return m if m.cls == "s" else self.lo32(m)

    def sel_TRUNC(self, u: UOp) -> None:
        """v_trunc_f32 / v_trunc_f64: round toward zero, sign of zero kept."""
        dt = u.dtype
        self.val[u] = self._vop(u, f"v_trunc_f{dt.bits}", u.src[0], wide=is_wide(dt))

    def sel_BITCAST(self, u: UOp) -> None:
        """Same bits: the register itself, re-normalized for ≤ 16-bit integers."""
        x, dt = u.src[0], u.dtype
        if x.dtype.is_bool or dt.is_bool:
            r = self.reg(x)
            self.val[u] = self.to_mask(r) if dt.is_bool else self.from_mask(r)
            return
        r = self.reg(x)
        if dt.itemsize < 4:
            self.val[u] = self.normalize(self.vgpr(r), dt if dt.is_int else dtypes.uint16)
        else:
            self.val[u] = r

    def sel_CAST(self, u: UOp) -> None:
        """Conversions: v_cvt_* (kcc/isel/amd/cast.py)."""
        from kcc.isel.amd.cast import cast
        if strong_const(u) is not None:
            return                  # a constant: materialized where it is used
        self._lanes(u)
        self.val[u] = cast(self, u.src[0], u.dtype)

    def _unsupported(self, u: UOp) -> None:
        raise AmdSelectError(f"{u.op.name} on {u.dtype} should have been decomposed for AMD")

    def _fconst(self, x: float) -> Imm:
        """A float32 source constant: an inline float or integer where the encoding has one,
        else a literal (`legal_literals` moves what the instruction cannot hold)."""
        return Imm(_s32(const_bits(x, _F32)))

    def sel_EXP2(self, u: UOp) -> None:
        """float32 EXP2: v_exp_f32, documented at 1 ulp (LLVM AMDGPUUsage, llvm.exp2) but
        without subnormal results (RDNA3 ISA §7.x / CDNA3 ISA: the transcendental unit
        flushes them). So, as LLVM 19 lowers llvm.exp2.f32: below x = -126 the argument is
        raised by 64 and the result scaled by 2^-64, one exact-or-rounding multiply that rounds
        a subnormal result once. NaN fails the compare and passes through; -inf gives 0,
        +inf and x ≥ 128 give inf (the instruction's specials)."""
        if u.dtype != _F32:
            raise AmdSelectError(f"EXP2 on {u.dtype} should have been decomposed for AMD")
        self._lanes(u)
        x = self.vsrc_reg(u.src[0])
        m = self.new(self.arch.mask_cls)
        self.emit("v_cmp_gt_f32", D(m), self._fconst(-126.0), x)
        t = self.new("v")
        self.emit("v_add_f32", D(t), self._fconst(64.0), x)
        s = self.new("v")
        self.emit("v_cndmask_b32", D(s), x, t, m)
        e = self.new("v")
        self.emit("v_exp_f32", D(e), s)
        k = self.new("v")
        self.emit("v_cndmask_b32", D(k), self._fconst(1.0), self._fconst(2.0 ** -64), m)
        r = self.new("v")
        self.emit("v_mul_f32", D(r), k, e)
        self.val[u] = r

    def sel_LOG2(self, u: UOp) -> None:
        """float32 LOG2: v_log_f32, documented at 1 ulp (LLVM AMDGPUUsage, llvm.log2) but
        not for subnormal arguments. As LLVM 19 lowers llvm.log2.f32: an argument below
        2^-126 is multiplied by 2^32 (exact) and 32 subtracted from the result (±0 → -inf,
        negative → NaN either way). NaN, +inf and negatives are the instruction's specials."""
        if u.dtype != _F32:
            raise AmdSelectError(f"LOG2 on {u.dtype} should have been decomposed for AMD")
        self._lanes(u)
        x = self.vsrc_reg(u.src[0])
        m = self.new(self.arch.mask_cls)
        self.emit("v_cmp_gt_f32", D(m), self._fconst(2.0 ** -126), x)
        t = self.new("v")
        self.emit("v_mul_f32", D(t), self._fconst(2.0 ** 32), x)
        s = self.new("v")
        self.emit("v_cndmask_b32", D(s), x, t, m)
        e = self.new("v")
        self.emit("v_log_f32", D(e), s)
        k = self.new("v")
        self.emit("v_cndmask_b32", D(k), Imm(0), self._fconst(32.0), m)
        r = self.new("v")
        self.emit("v_sub_f32", D(r), e, k)
        self.val[u] = r

    def sel_FDIV(self, u: UOp) -> None:
        """float32 FDIV: LLVM 19's correctly rounded v_div_scale/v_rcp/v_div_fmas/v_div_fixup
        sequence (kcc/isel/amd/fdiv.py); float64 is decomposed before selection."""
        from kcc.isel.amd.fdiv import select_fdiv
        self._lanes(u)
        self.val[u] = select_fdiv(self, u)

    def sel_SQRT(self, u: UOp) -> None:
        """float32 SQRT: v_sqrt_f32 corrected by its neighbours (kcc/isel/amd/fdiv.py)."""
        from kcc.isel.amd.fdiv import select_sqrt
        self._lanes(u)
        self.val[u] = select_sqrt(self, u)

    sel_RECIPROCAL = sel_SIN = _unsupported
    sel_CDIV = sel_CMOD = sel_THREEFRY = _unsupported

    def sel_WMMA(self, u: UOp) -> None:
        """A tensor-core matrix multiply: v_wmma_* / v_mfma_* (kcc/isel/amd/matrix.py)."""
        select_wmma(self, u)


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v
