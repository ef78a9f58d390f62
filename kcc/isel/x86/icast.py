"""x86 selection of integer vector lane reads and lane-width casts (AVX2/AVX-512): float32
lanes to narrow integers (`vcast_narrow`), bool lanes to integers (`vcast_bool`), integer lanes
to half/twice their width (`vcast_int`: VPSHUFB/VPERMQ or VPMOV down, VPMOVSX/ZX up, reading a
narrow load in place) and one lane into a GPR (`ivec_lane`). A mixin of X86Selector
(kcc/isel/x86/select.py), split from kcc/isel/x86/ivec.py.
"""

from __future__ import annotations

from kcc.ir import UOp, dtypes
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86.base import const_bytes, fs, vw
from kcc.isel.x86.ivec import imov, rodata16
from kcc.isel.x86.kmask import cast_vex_compare

# the x86-64-v4 truncating down-converts (kcc/encode/x86/rows_late.py _down_convert_rows):
# (source, result) lane bytes → mnemonic, and the operand kinds of each width in bytes
_VPMOV = {(2, 1): "vpmovwb", (4, 1): "vpmovdb", (8, 1): "vpmovqb", (4, 2): "vpmovdw",
          (8, 2): "vpmovqw", (8, 4): "vpmovqd"}
_VPMOV_SRC = {16: "x", 32: "y", 64: "z"}
_VPMOV_DST = {32: "ym", 16: "xm", 8: "xm64", 4: "xm32", 2: "xm16"}
_SFX = {1: "b", 2: "w", 4: "d", 8: "q"}


class X86ICast:
    """Integer vector lane reads and width casts (mixed into X86Selector)."""

    def vcast_narrow(self, x: UOp, dt: DType, n: int) -> VReg:
        """float32 (or float16, widened exactly by VCVTPH2PS) x 4/8 → int8/uint8/int16/uint16
        lanes, packed in an xmm's low bytes as ivec_lane reads them: truncate, saturate, NaN
        → 0 (docs/semantics.md) by the scalar from_float's steps on every lane at once —
        NaN lanes cleared (CMPPS ORD_Q mask, AND), clamped to dt's range in float (MAXPS,
        MINPS: both bounds exact in float32), CVTTPS2DQ (exact in range) — then packed to
        16 and 8 bits by VPACKSSDW/VPACKUSDW and VPACKSSWB/VPACKUSWB, whose saturation
        never fires on values already in range (SDM "PACKSSDW", "PACKUSDW", "PACKUSWB")."""
        f32 = dtypes.float32
        w, v = vw(f32, n), self.reg(x)
        if x.dtype == dtypes.float16:
            f = self.new("vec")
            self.emit("vcvtph2ps_x_xm64" if n == 4 else "vcvtph2ps_y_xm", f, v)
            v = f
        m, f0, c1, c2, t = (self.new("vec") for _ in range(5))
        self.emit(f"vcmpps_{w}_{w}_{w}m_imm8", m, v, v, 7)
        self.emit(f"vandps_{w}_{w}_{w}m", f0, v, m)
        self.emit(f"vmaxps_{w}_{w}_{w}m", c1, f0, self.materialize(float(dt.min()), f32, n))
        self.emit(f"vminps_{w}_{w}_{w}m", c2, c1, self.materialize(float(dt.max()), f32, n))
        self.emit(f"vcvttps2dq_{w}_{w}m", t, c2)
        hi = t
        if n == 8:
            hi = self.new("vec")
            self.emit("vextracti128_xm_y_imm8", hi, t, 1)
        p = self.new("vec")
        self.emit("vpackusdw_x_x_xm" if dt == dtypes.uint16 else "vpackssdw_x_x_xm", p, t, hi)
        if dt.itemsize == 2:
            return p
        b = self.new("vec")
        self.emit("vpackuswb_x_x_xm" if dt == dtypes.uint8 else "vpacksswb_x_x_xm", b, p, p)
        return b

    def bool_ones(self, dt: DType, n: int) -> VReg:
        """A register of n 1s of dt for bool casts: a lone .rodata load, once per loop level,
        that LICM keeps out of the loop. Rule `bool_ones_reg`: the lane-mask form's VANDPS
        reads it too, not a .rodata operand of its own (cast_bool2f r_64_4's 32 VANDPS would
        be 32 more loads beside its 32, the two load ports its bound)."""
        key = (("bool 1s", dt, n), len(self.loops))
        c = self.const_cache.get(key)
        if c is None:
            one = const_bytes(1, dt) if dt.is_int else const_bytes(1.0, dt)
            w = vw(dt, n)
            c = self.const_cache[key] = self.new("vec")
            self.emit(f"vmovups_{w}_{w}m", c, Mem(),
                      arg={"rip": self.pool.label(rodata16(one * n))})
        return c

    def vcast_bool(self, x: UOp, dt: DType, n: int) -> VReg:
        """bool lanes → 0/1 integer or 0.0/1.0 float lanes (docs/semantics.md, CAST)."""
        w = vw(dt, n)
        k = None
        vex = cast_vex_compare(x, dt, n, self.evex)
        if self.evex and not vex:
            k = self.kbool(x)
        if k is not None:
            # x86-64-v4: the opmask picks 1 from a register of 1s, zero elsewhere (VMOVDQU/UPS
            # {k}{z})
            move = f"vmovdqu{dt.bits}" if dt.is_int else f"vmovup{fs(dt)}"
            t = self.new("vec")
            self.emit(f"{move}_{w}_kz_{w}m", t, k, self.bool_ones(dt, n))
            return t
        # a lane mask is all ones where true: its top bit shifted down (VPSRLW/D/Q), 0 - mask
        # on bytes (VPSUBB), or the bits of 1.0 ANDed in (VANDPS/PD)
        m = self.bool_vec(x, dt.itemsize)
        t = self.new("vec")
        if dt.is_float:
            self.emit(f"vandp{fs(dt)}_{w}_{w}_{w}m", t, m, self.bool_ones(dt, n))
        elif vex:
            self.emit(f"vpand_{w}_{w}_{w}m", t, m, self.bool_ones(dt, n))
        elif dt.itemsize == 1:
            z = self.new("vec")
            self.emit("vzero", z)
            self.emit(f"vpsubb_{w}_{w}_{w}m", t, z, m)
        else:
            self.emit(f"vpsrl{_SFX[dt.itemsize]}_{w}_{w}_imm8" if w != "z"
                      else f"vpsrl{_SFX[dt.itemsize]}_z_zm_imm8", t, m, dt.bits - 1)
        return t

    def vcast_int(self, x: UOp, dt: DType, n: int) -> VReg:
        """Integer lanes to lanes of half or twice their size, a ymm ↔ an xmm, or byte lanes
        x 8 (an xmm's low 8 bytes) ↔ 16-bit lanes in an xmm or 32-bit lanes in a ymm (the
        widths x86_desc makes legal): narrowing keeps each lane's low part (the value modulo
        2^bits, docs/semantics.md): VPSHUFB gathers the low bytes of each 128-bit block's
        lanes into its low bytes, VPERMQ (imm 0b1000) joins the two blocks' low qwords; to
        8 bytes from a ymm, block 1 gathers its bytes to bytes 4-7 instead and VEXTRACTI128 +
        VPOR join them; on x86-64-v4 one VPMOV{W,D,Q}{B,W,D} does (truncation); widening
        is VPMOVSX (signed source) or VPMOVZX (SDM "PMOVSX", "PMOVZX"), reading the
        source's low n lanes."""
        sd = x.dtype
        if sd.itemsize < dt.itemsize and x in self.deferred:
            v, t = self.deferred.pop(x), self.new("vec")     # the load read in place
        else:
            v, t = self.reg(x), self.new("vec")
        if sd.itemsize > dt.itemsize:
            big, small = sd.itemsize, dt.itemsize
            if self.evex and n * big in _VPMOV_SRC:
                # x86-64-v4: one VPMOV{W,D,Q}{B,W,D} truncates every lane (SDM "VPMOVDB/
                # VPMOVSDB/VPMOVUSDB" and its siblings), the result's upper part zeroed
                mnem = _VPMOV[(big, small)]
                self.emit(f"{mnem}_{_VPMOV_DST[n * small]}_{_VPMOV_SRC[n * big]}", t, v)
                return t
            to8 = n * small == 8
            ctl = bytearray(b"\x80" * 32)
            blocks = 2 if n * big == 32 else 1
            for blk in range(blocks):
                at = 16 * blk + (4 * blk if to8 and blocks == 2 else 0)
                for e in range(16 // big):
                    for b in range(small):
                        ctl[at + e * small + b] = e * big + b
            w = "y" if blocks == 2 else "x"
            c = self.new("vec")
            self.emit(imov(w), c, Mem(), arg={"rip": self.pool.label(bytes(ctl[:16 * blocks]))})
            self.emit(f"vpshufb_{w}_{w}_{w}m", c, v, c)
            if blocks == 1:
                return c
            if to8:
                hi = self.new("vec")
                self.emit("vextracti128_xm_y_imm8", hi, c, 1)
                self.emit("vpor_x_x_xm", t, c, hi)
                return t
            self.emit("vpermq_y_ym_imm8", t, c, 0x08)
            return t
        kind = "vpmovsx" if sd.is_signed else "vpmovzx"
        src = n * sd.itemsize
        form = "_y_xm" if n * dt.itemsize == 32 and src == 16 else \
            {16: "_z_xm", 32: "_z_ym"}[src] if n * dt.itemsize == 64 and dt.itemsize == 4 else \
            f"_{vw(dt, n)}_xm{src * 8}"
        self.emit(f"{kind}{_SFX[sd.itemsize]}{_SFX[dt.itemsize]}{form}", t, v)
        return t

    def ivec_lane(self, v: VReg, dt: DType, n: int, k: int) -> VReg:
        """Lane k of an integer vector, in a GPR (vextracti128 for the high half, vpextr*)."""
        if dt.itemsize * n == 64:                  # a zmm (a float32 x 16 compare's mask)
            lo, hi = self.split_z(v)
            return self.ivec_lane(hi if k >= n // 2 else lo, dt, n // 2, k % (n // 2))
        per = 16 // dt.itemsize
        src = v
        if n > per and k >= per:
            hi = self.new("vec")
            self.emit("vextracti128_xm_y_imm8", hi, v, 1)
            src, k = hi, k - per
        t = self.new("gpr")
        if k == 0 and dt.itemsize in (4, 8):
            # lane 0 of dwords/qwords: VMOVD/VMOVQ, one µop where VPEXTRD/Q takes two (a
            # shuffle-port one; uops.info), the same bits zero-extended (SDM "MOVD/MOVQ")
            self.emit("vmovd_rm32_x" if dt.itemsize == 4 else "vmovq_r64_x", t, src)
            return t
        form = {1: "vpextrb_r32m8_x_imm8", 2: "vpextrw_r32_x_imm8", 4: "vpextrd_rm32_x_imm8",
                8: "vpextrq_rm64_x_imm8"}[dt.itemsize]
        self.emit(form, t, src, k)
        return t
