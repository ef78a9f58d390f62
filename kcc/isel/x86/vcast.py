"""x86 selection of vector CASTs between float and integer lanes and float32↔float64
(CVTDQ2PS/CVTTPS2DQ with NaN and saturation fix-ups, docs/semantics.md; the integer lane-width
casts are icast.py's). A mixin of X86Vec (kcc/isel/x86/vec.py)."""

from __future__ import annotations

from kcc.ir import UOp, dtypes
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86.base import (SelectError,
                               const_bytes, vw)
from kcc.isel.x86.ivec import NARROW_INTS


class X86VCast:
    """Vector CAST rules (mixed into X86Vec)."""

    def vcast_i32(self, x: UOp, dt: DType, n: int) -> VReg:
        """int32 → float32: CVTDQ2PS (rounds to nearest, MXCSR's default). float32 → int32:
        truncate, saturate, NaN → 0 (docs/semantics.md): NaN lanes are cleared first (CMPPS
        ORD_Q mask, AND), CVTTPS2DQ gives 0x80000000 for every lane out of range, which is
        right below -2^31; lanes >= 2^31 (CMPPS GE_OS mask) are flipped to 0x7FFFFFFF by XOR
        with the all-ones mask."""
        w, v = vw(dtypes.float32, n), self.reg(x)
        t = self.new("vec")
        if dt == dtypes.float32:
            self.emit(f"vcvtdq2ps_{w}_{w}m", t, v)
            return t
        cmp = f"vcmpps_{w}_{w}_{w}m_imm8"
        m, f0, big, hi, out = (self.new("vec") for _ in range(5))
        self.emit(cmp, m, v, v, 7)
        self.emit(f"vandps_{w}_{w}_{w}m", f0, v, m)
        self.emit(f"vcvttps2dq_{w}_{w}m", t, f0)
        data = const_bytes(2.0 ** 31, dtypes.float32) * n
        self.emit(f"vmovups_{w}_{w}m", big, Mem(), arg={"rip": self.pool.label(data)})
        self.emit(cmp, hi, f0, big, 13)
        self.emit(f"vxorps_{w}_{w}_{w}m", out, t, hi)
        return out

    def vcast_u32(self, x: UOp, n: int) -> VReg:
        """uint32 → float32 on 4 or 8 lanes, rounded to nearest once as the scalar conversion
        (CVTSI2SS of the zero-extended 64-bit value) is: AVX2 converts only signed lanes, so
        the value is split into its high and low 16 bits (each exact as a float32 and as a
        signed int32) and recombined by one FMA, hi * 65536 + lo, whose product is exact and
        whose sum rounds once (SDM "VFMADD231PS": one rounding of the infinitely precise
        result). x86-64-v4 has VCVTUDQ2PS (AVX512VL, SDM "VCVTUDQ2PS"): one instruction,
        rounded by MXCSR (nearest) as well."""
        w, v = vw(dtypes.float32, n), self.reg(x)
        if self.evex:
            t = self.new("vec")
            self.emit(f"vcvtudq2ps_{w}_{w}m", t, v)
            return t
        hi, lo0, lo, fhi, flo = (self.new("vec") for _ in range(5))
        self.emit(f"vpsrld_{w}_{w}_imm8", hi, v, 16)
        self.emit(f"vpslld_{w}_{w}_imm8", lo0, v, 16)
        self.emit(f"vpsrld_{w}_{w}_imm8", lo, lo0, 16)
        self.emit(f"vcvtdq2ps_{w}_{w}m", fhi, hi)
        self.emit(f"vcvtdq2ps_{w}_{w}m", flo, lo)
        t = self.copy(flo, dtypes.float32, n)
        self.emit(f"vfmadd231ps_{w}_{w}_{w}m", t, fhi, self.materialize(65536.0, dtypes.float32, n))
        return t

    def vcast(self, u: UOp) -> VReg:
        """Vector casts between float32 and float64, int32 ↔ float32, and between integers of
        one size (nothing to do)."""
        x, dt = u.src[0], u.dtype
        n = u.shape[0]
        if x.dtype.is_bool:
            return self.vcast_bool(x, dt, n)
        if x.dtype in (dtypes.float32, dtypes.float16) and dt in NARROW_INTS:
            return self.vcast_narrow(x, dt, n)      # clamped, converted, packed (x86_ivec)
        if dtypes.float16 in (x.dtype, dt):
            return self.half_vcast(x, dt, n)        # F16C (x86_half)
        if {x.dtype, dt} == {dtypes.int32, dtypes.float32}:
            return self.vcast_i32(x, dt, n)
        if (x.dtype, dt) == (dtypes.uint32, dtypes.float32):
            return self.vcast_u32(x, n)
        if x.dtype.is_int and dt.is_int and x.dtype.itemsize == dt.itemsize:
            return self.reg(x)          # the same bits: modulo 2^bits either way
        if x.dtype in (dtypes.int64, dtypes.uint64) and dt == dtypes.float64 and self.evex:
            # x86-64-v4: VCVTQQ2PD / VCVTUQQ2PD (AVX512DQ), rounded to nearest as the scalar
            # conversion is (kcc/targets/x86/arch.py _vector_cast_v4)
            t, w = self.new("vec"), vw(dt, n)
            self.emit(f"vcvt{'' if x.dtype.is_signed else 'u'}qq2pd_{w}_{w}m", t, self.reg(x))
            return t
        if x.dtype == dtypes.float64 and dt == dtypes.uint64 and self.evex:
            # truncate, saturate, NaN → 0 (docs/semantics.md): MAXPD(x, 0) is x > 0 ? x : 0
            # (SDM "MAXPD": the second operand when unordered), so NaN and negative lanes
            # are 0; VCVTTPD2UQQ (AVX512DQ) gives 2^64 - 1 for the lanes >= 2^64
            w = vw(dt, n)
            z, m, t = self.new("vec"), self.new("vec"), self.new("vec")
            self.emit("vzero", z)
            self.emit(f"vmaxpd_{w}_{w}_{w}m", m, self.reg(x), z)
            self.emit(f"vcvttpd2uqq_{w}_{w}m", t, m)
            return t
        if x.dtype.is_int and dt.is_int:
            return self.vcast_int(x, dt, n)
        if x.dtype == dtypes.float32 and dt == dtypes.float64 and n == 8:
            # 8 x float32 (ymm) → 8 x float64 (zmm): each xmm half widens to a ymm
            v = self.reg(x)
            hi = self.new("vec")
            self.emit("vextractf128_xm_y_imm8", hi, v, 1)
            lo_d, hi_d = self.new("vec"), self.new("vec")
            self.emit("vcvtps2pd_y_xm", lo_d, v)
            self.emit("vcvtps2pd_y_xm", hi_d, hi)
            return self.join_z(lo_d, hi_d)
        if x.dtype == dtypes.float64 and dt == dtypes.float32 and n == 8:
            lo, hi = self.split_z(self.reg(x))
            lo_s, hi_s = self.new("vec"), self.new("vec")
            self.emit("vcvtpd2ps_x_ym", lo_s, lo)
            self.emit("vcvtpd2ps_x_ym", hi_s, hi)
            t = self.new("vec")
            self.emit("vinsertf128_y_y_xm_imm8", t, lo_s, hi_s, 1)
            return t
        t = self.new("vec")
        if x.dtype == dtypes.float32 and dt == dtypes.float64:
            self.emit(f"vcvtps2pd_{vw(dt, n)}_xm" + ("64" if n == 2 else ""), t, self.reg(x))
        elif x.dtype == dtypes.float64 and dt == dtypes.float32:
            self.emit(f"vcvtpd2ps_x_{vw(x.dtype, n)}m", t, self.reg(x))
        else:
            raise SelectError(f"vector CAST {x.dtype} → {dt} is not legal on x86")
        return t
