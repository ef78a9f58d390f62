"""x86 selection of every scalar CAST and BITCAST (docs/semantics.md: integer casts keep the
low bits, float to integer truncates and saturates, NaN to 0). A mixin of X86Selector
(kcc/isel/x86/select.py); alu.py has the ALU ops, compares and WHERE."""

from __future__ import annotations

import _struct as struct  # struct's own C functions, without struct.py (start-up)

from kcc.ir import UOp, dtypes
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86.base import (CMP_LT_OS, CMP_NEQ_UQ, fs, isz,
                               strong_const)
from kcc.isel.x86.regs import reg_class


class X86Cast:
    """Scalar CAST and BITCAST rules (mixed into X86Selector)."""

    # -- casts --------------------------------------------------------------------------------
    def sel_CAST(self, u: UOp) -> None:
        """Value conversion between any two dtypes (docs/semantics.md, CAST)."""
        x, dt = u.src[0], u.dtype
        if strong_const(u) is not None:
            return                      # a strong constant: materialized where used
        if u.shape:
            self.val[u] = self.vcast(u)
            return
        sd = x.dtype
        if sd == dt:
            self.val[u] = self.reg(x)
        elif dt.is_bool:
            self.val[u] = self.to_bool(x)
        elif reg_class(sd) == "vec" and reg_class(dt) == "vec":
            t = self.new("vec")
            form = "vcvtss2sd_x_x_xm32" if sd == dtypes.float32 else "vcvtsd2ss_x_x_xm64"
            self.emit(form, t, self.reg(x), self.reg(x))
            self.val[u] = t
        elif sd.is_float and dt.is_float:
            self.val[u] = self.half_cast(x, dt)
        elif sd.is_float:
            self.val[u] = self.from_float(x, dt)
        elif dt.is_float:
            self.val[u] = self.to_float(x, dt)
        else:
            self.val[u] = self.int_to_int(x, dt)

    def half_cast(self, x: UOp, dt: DType) -> VReg:
        """Casts among float16/bfloat16 and the other floats, through an exact float32."""
        f = self.to_f32(x) if reg_class(x.dtype) == "gpr" else self.reg(x)
        fd = dtypes.float32 if reg_class(x.dtype) == "gpr" else x.dtype
        if dt == dtypes.float64:
            t = self.new("vec")
            self.emit("vcvtss2sd_x_x_xm32", t, f, f)
            return t
        if dt == dtypes.float32:
            return f
        if fd == dtypes.float64:
            f = self.f64_to_f32_odd(f)
        return self.from_f32(f, dt)

    def f64_to_f32_odd(self, x: VReg) -> VReg:
        """float64 → float32 rounded to odd: truncate, then set the last bit if inexact.
        A float32 rounded to odd (24 bits ≥ 11 + 2) rounds once more to float16/bfloat16
        exactly as a single rounding of x would (Boldo & Melquiond, round-to-odd)."""
        t = self.new("vec")
        self.emit("vcvtsd2ss_x_x_xm64", t, x, x)            # nearest even
        back = self.new("vec")
        self.emit("vcvtss2sd_x_x_xm32", back, t, t)
        bits = self.new("gpr")
        self.emit("vmovd_rm32_x", bits, t)
        ne = self.new("vec")
        self.emit("vcmpsd_x_x_xm64_imm8", ne, back, x, CMP_NEQ_UQ)   # inexact (or NaN)
        # |v| is v AND 0x7FFF…F (the sign bit off; as a float64 that constant is a NaN, so it is
        # given as bytes): the largest finite float64 (0x7FEF…F) also cleared the exponent's
        # low bit, making |inf| 2^1023, so -1.8e308 rounded to odd as the NaN 0xFF800001
        absmask = self.new("vec")
        self.emit("vmovsd_x_m64", absmask, Mem(),
                  arg={"rip": self.pool.label(((1 << 63) - 1).to_bytes(8, "little"))})
        ab, ax = self.new("vec"), self.new("vec")
        self.emit("vandpd_x_x_xm", ab, back, absmask)
        self.emit("vandpd_x_x_xm", ax, x, absmask)
        gt = self.new("vec")
        self.emit("vcmpsd_x_x_xm64_imm8", gt, ax, ab, CMP_LT_OS)    # rounded away from zero
        down = self.new("gpr")
        self.emit("vmovd_rm32_x", down, gt)                 # -1 where |t| > |x|, else 0
        rz = self.copy(bits, dtypes.uint32)
        self.emit("add_r32_rm32", rz, down)                 # truncated: one ulp back
        self.emit("or_rm32_imm8", rz, 1)                    # sticky bit: round to odd
        inexact = self.new("gpr")
        self.emit("vmovd_rm32_x", inexact, ne)
        self.emit("test_rm32_r32", inexact, inexact)
        self.emit("cmovne_r32_rm32", bits, rz)
        out = self.new("vec")
        self.emit("vmovd_x_rm32", out, bits)
        return out

    def int_to_int(self, x: UOp, dt: DType) -> VReg:
        """Narrowing keeps the low bits (nothing to do); widening extends by the source sign."""
        if dt.itemsize <= x.dtype.itemsize:
            return self.reg(x)
        return self.ext(x, 64 if dt.itemsize == 8 else 32)

    def to_bool(self, x: UOp) -> VReg:
        """x != 0 (a NaN is true): a compare against zero."""
        sd = x.dtype
        t = self.new("gpr")
        if reg_class(sd) == "vec" or sd.name in ("float16", "bfloat16"):
            f = self.reg(x) if reg_class(sd) == "vec" else self.to_f32(x)
            fd = sd if reg_class(sd) == "vec" else dtypes.float32
            z = self.new("vec")
            self.emit("vzero", z)
            m = self.new("vec")
            self.emit(f"vcmps{fs(fd)}_x_x_xm{fd.bits}_imm8", m, f, z, CMP_NEQ_UQ)
            self.emit("vmovd_rm32_x", t, m)
            self.emit("and_rm32_imm8", t, 1)
            return t
        w = isz(sd)
        a = self.ext(x, int(w))
        self.emit(f"test_rm{w}_r{w}", a, a)
        self.emit("setne_rm8", t)
        return t

    def to_f32(self, x: UOp) -> VReg:
        """A float16/bfloat16 bit pattern (GPR) widened exactly to float32 (xmm)."""
        t = self.new("vec")
        v = self.reg(x)
        if x.dtype == dtypes.float16:
            # the bits in word 0 of an xmm: the one from_f32 rounded them in when there is one
            # (no GPR round trip), else moved there. Only word 0 is read (VCVTPH2PS converts
            # word k to lane k, SDM Vol. 2A; the scalar users read lane 0), so the GPR's bits
            # above 15 need no MOVZX
            h = self.half_xmm.get(v)
            if h is None:
                h = self.new("vec")
                self.emit("vmovd_x_rm32", h, v)
            self.emit("vcvtph2ps_x_xm64", t, h)     # F16C: exact widening
        else:
            bits = self.copy(v, dtypes.uint32)
            self.emit("shl_rm32_imm8", bits, 16)   # bfloat16 is the high half of a float32
            self.emit("vmovd_x_rm32", t, bits)     # (SHL drops the bits above 15)
        return t

    def from_f32(self, f: VReg, dt: DType) -> VReg:
        """A float32 rounded (nearest even) to a float16/bfloat16 bit pattern in a GPR."""
        t = self.new("gpr")
        if dt == dtypes.float16:
            h = self.new("vec")
            self.emit("vcvtps2ph_xm64_x_imm8", h, f, 0)   # imm8 0: round to nearest even
            self.emit("vmovd_rm32_x", t, h)
            self.half_xmm[t] = h        # to_f32 and STORE read the bits there (the MOV to
            return t                    # the GPR is then dead: kcc/isel/dce.py drops it)
        # bfloat16: (bits + 0x7fff + ((bits >> 16) & 1)) >> 16, NaN kept quiet (| 0x40).
        bits = self.new("gpr")
        self.emit("vmovd_rm32_x", bits, f)
        odd = self.copy(bits, dtypes.uint32)
        self.emit("shr_rm32_imm8", odd, 16)
        self.emit("and_rm32_imm8", odd, 1)
        self.emit("add_r32_rm32", odd, bits)
        self.emit("add_rm32_imm32", odd, 0x7FFF)
        self.emit("shr_rm32_imm8", odd, 16)
        nan = self.copy(bits, dtypes.uint32)
        self.emit("shr_rm32_imm8", nan, 16)
        self.emit("or_rm32_imm8", nan, 0x40)
        m = self.new("vec")
        self.emit("vcmpss_x_x_xm32_imm8", m, f, f, 3)    # UNORD_Q: true for NaN
        isnan = self.new("gpr")
        self.emit("vmovd_rm32_x", isnan, m)
        self.emit("test_rm32_r32", isnan, isnan)
        self.emit("cmovne_r32_rm32", odd, nan)
        return odd

    def to_float(self, x: UOp, dt: DType) -> VReg:
        """An integer or bool converted (rounded to nearest even) to a float dtype."""
        sd = x.dtype
        target = dt if reg_class(dt) == "vec" else dtypes.float32
        if sd == dtypes.uint8 and target == dtypes.float32:
            t = self.byte_to_float(x)
            return t if reg_class(dt) == "vec" else self.from_f32(t, dt)
        t = self.new("vec")
        z = self.new("vec")
        self.emit("vzero", z)
        cvt = f"vcvtsi2s{fs(target)}_x_x_rm"
        if self.evex and sd in (dtypes.uint32, dtypes.uint64):
            # x86-64-v4: VCVTUSI2SS/SD (AVX512F, SDM "VCVTUSI2SS") reads the GPR as unsigned
            # and rounds by MXCSR (nearest), as the zero-extended or halved paths below do
            self.emit(f"vcvtusi2s{fs(target)}_x_x_rm{sd.bits}", t, z, self.reg(x))
        elif sd.itemsize < 4 or sd.is_bool:
            self.emit(cvt + "32", t, z, self.ext(x, 32))
        elif sd == dtypes.int32:
            self.emit(cvt + "32", t, z, self.reg(x))
        elif sd in (dtypes.uint32, dtypes.int64):
            self.emit(cvt + "64", t, z, self.ext(x, 64))
        else:
            t = self.u64_to_float(x, target, z)
        if reg_class(dt) == "vec":
            return t
        return self.from_f32(t, dt)

    def byte_to_float(self, x: UOp) -> VReg:
        """uint8 → float32 as a load from a 256-entry .rodata table of the byte values."""
        # exact (every byte value is a float32), and a load-port micro-op where VCVTSI2SS is two
        # (one on port 5) and a VXORPS: uint8_mean's r_9_37 converts a byte an addition, which
        # clang (and kcc) did by VCVTSI2SS. The table's address is computed once per loop level
        # (a LEA that x86's LICM `alone` moves out of its loop); the index is the MOVZX'd byte
        # itself. Not int8: its MOVSX r32 leaves bits 63:32 zero, no 64-bit index without a
        # second extension.
        key = (("byte floats",), len(self.loops))
        base = self.const_cache.get(key)
        if base is None:
            data = struct.pack("<256f", *range(256))
            base = self.const_cache[key] = self.new("gpr")
            self.emit("lea_r64_m", base, Mem(), arg={"rip": self.pool.label(data)})
        i = self.ext(x, 64)
        t = self.new("vec")
        self.emit("vmovss_x_m32", t, Mem(base, i, 4, 0))
        return t

    def u64_to_float(self, x: UOp, dt: DType, z: VReg) -> VReg:
        """uint64 → float: values ≥ 2^63 convert (x >> 1 | x & 1) and double (round-to-odd
        halving keeps the final rounding exact); selected by x's sign bit, no branch."""
        v = self.reg(x)
        cvt = f"vcvtsi2s{fs(dt)}_x_x_rm64"
        lo = self.new("vec")
        self.emit(cvt, lo, z, v)
        half = self.copy(v, dtypes.uint64)
        self.emit("shr_rm64_imm8", half, 1)
        bit = self.copy(v, dtypes.uint64)
        self.emit("and_rm64_imm8", bit, 1)
        self.emit("or_r64_rm64", half, bit)
        hi = self.new("vec")
        self.emit(cvt, hi, z, half)
        hi2 = self.new("vec")
        self.emit(f"vadds{fs(dt)}_x_x_xm{dt.bits}", hi2, hi, hi)
        m = self.new("vec")
        self.emit("vmovq_x_r64", m, v)
        t = self.new("vec")
        self.emit("vblendvpd_x_x_xm_x", t, lo, hi2, m)   # sign of the low qword = x's bit 63
        return t

    def from_float(self, x: UOp, dt: DType) -> VReg:
        """Float → integer: truncate toward zero, saturate to dt's range, NaN gives 0
        (docs/semantics.md). vcvtt* alone returns the "integer indefinite" value out of range,
        so the input is first cleared of NaN and clamped in the float domain."""
        sd = x.dtype
        f = self.reg(x) if reg_class(sd) == "vec" else self.to_f32(x)
        fd = sd if reg_class(sd) == "vec" else dtypes.float32
        s, b = fs(fd), fd.bits
        # NaN → +0.0: AND with the ORD_Q (7) mask, all ones exactly where x is not NaN
        m = self.new("vec")
        self.emit(f"vcmps{s}_x_x_xm{b}_imm8", m, f, f, 7)
        f0 = self.new("vec")
        self.emit(f"vandp{s}_x_x_xm", f0, f, m)
        cvt = f"vcvtts{s}2si_r64_xm{b}"
        if dt == dtypes.uint64:
            return self.float_to_u64(f0, fd)
        t = self.new("gpr")
        if dt == dtypes.int64:
            self.emit(cvt, t, f0)
            # x >= 2^63 converts to INT64_MIN (indefinite): saturate to INT64_MAX instead
            self.saturate_high(f0, fd, 2.0 ** 63, t, (1 << 63) - 1)
            return t
        lo, hi = dt.min(), dt.max()
        # clamp to [lo, hi] in float: vmaxs returns the 2nd source unless the 1st is greater
        c1, c2 = self.new("vec"), self.new("vec")
        self.emit(f"vmaxs{s}_x_x_xm{b}", c1, f0, self.materialize(float(lo), fd))
        self.emit(f"vmins{s}_x_x_xm{b}", c2, c1, self.materialize(float(hi), fd))
        self.emit(cvt, t, c2)              # in range of int64: exact truncation
        if float(fd.np.type(hi)) != hi:    # hi rounded up in this float format: clamp again
            top = self.materialize(hi, dtypes.int64)
            self.emit("cmp_r64_rm64", t, top)
            self.emit("cmovg_r64_rm64", t, top)
        return t

    def saturate_high(self, f: VReg, fd: DType, limit: float, t: VReg, value: int) -> None:
        """t = value where the float f >= limit (GE_OS compare, no branch)."""
        m = self.new("vec")
        self.emit(f"vcmps{fs(fd)}_x_x_xm{fd.bits}_imm8", m, f, self.materialize(limit, fd), 13)
        ge = self.new("gpr")
        self.emit("vmovd_rm32_x", ge, m)
        self.emit("test_rm32_r32", ge, ge)
        self.emit("cmovne_r64_rm64", t, self.materialize(value, dtypes.uint64))

    def float_to_u64(self, f0: VReg, fd: DType) -> VReg:
        """NaN-free float → uint64, saturating: negatives give 0, >= 2^64 gives 2^64-1;
        values >= 2^63 convert f - 2^63 and set bit 63 (no branch)."""
        s, b = fs(fd), fd.bits
        f = self.new("vec")
        self.emit(f"vmaxs{s}_x_x_xm{b}", f, f0, self.materialize(0.0, fd))
        cvt = f"vcvtts{s}2si_r64_xm{b}"
        lo = self.new("gpr")
        self.emit(cvt, lo, f)
        big = self.materialize(2.0 ** 63, fd)
        d = self.new("vec")
        self.emit(f"vsubs{s}_x_x_xm{b}", d, f, big)
        hi = self.new("gpr")
        self.emit(cvt, hi, d)
        self.emit("xor_r64_rm64", hi, self.materialize(1 << 63, dtypes.uint64))
        m = self.new("vec")
        self.emit(f"vcmps{s}_x_x_xm{b}_imm8", m, f, big, 13)   # GE_OS
        ge = self.new("gpr")
        self.emit("vmovd_rm32_x", ge, m)
        self.emit("test_rm32_r32", ge, ge)
        self.emit("cmovne_r64_rm64", lo, hi)
        self.saturate_high(f, fd, 2.0 ** 64, lo, (1 << 64) - 1)
        return lo

    def sel_BITCAST(self, u: UOp) -> None:
        """Reinterpret bits: vmovd/vmovq between register files, nothing within one."""
        x, dt = u.src[0], u.dtype
        a, b = reg_class(x.dtype), reg_class(dt)
        if a == b or u.shape:            # a vector is in a vector register either way
            self.val[u] = self.reg(x)
            return
        t = self.new(b)
        q = dt.itemsize == 8
        m = self.folded(x) if b == "gpr" else None
        if m is not None:                # a float load read as integer bits (x86_analysis)
            self.emit("mov_r64_rm64" if q else "mov_r32_rm32", t, m)
        elif b == "vec":
            self.emit("vmovq_x_r64" if q else "vmovd_x_rm32", t, self.reg(x))
        else:
            self.emit("vmovq_r64_x" if q else "vmovd_rm32_x", t, self.reg(x))
        self.val[u] = t
