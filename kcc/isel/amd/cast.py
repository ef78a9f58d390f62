"""CAST selection for AMD: docs/semantics.md's conversion table with v_cvt_* (RDNA3 ISA §7.x /
CDNA3 ISA §12, VOP1 conversions: float→int truncates and saturates, NaN → 0; int→float and
float→float round to nearest even with the mode kcc sets; denormals kept).

int64/uint64 → float32/float16/bfloat16 and float64 → float16/bfloat16 need one rounding that
no v_cvt gives; the target description marks them non-native and kcc/passes/decompose.py
rounds to odd in a wider float first (odd_cast, bf16_cast), so they never reach selection.
"""

from __future__ import annotations

from typing import Any

from kcc.encode.amd.operands import Imm
from kcc.ir.dtype import DType, dtypes
from kcc.ir.uop import UOp
from kcc.isel.amd.base import AmdSelectError, D, is_wide

_F16, _F32, _F64 = dtypes.float16, dtypes.float32, dtypes.float64


def _clamp(sel: Any, r: Any, dt: DType) -> Any:
    """A saturated 32-bit conversion result clamped to a narrower integer dtype."""
    if dt.itemsize >= 4:
        return r
    if dt.is_signed:
        lo, hi = sel.vconst_reg(-(1 << (dt.bits - 1))), sel.vconst_reg((1 << (dt.bits - 1)) - 1)
        t, u = sel.new("v"), sel.new("v")
        sel.emit("v_max_i32", D(t), r, lo)
        sel.emit("v_min_i32", D(u), t, hi)
        return u
    t = sel.new("v")
    sel.emit("v_min_u32", D(t), r, sel.vconst_reg((1 << dt.bits) - 1))
    return t


def _vop1(sel: Any, name: str, src: Any, wide_out: bool) -> Any:
    r = sel.new("v2" if wide_out else "v")
    sel.emit(name, D(r), src)
    return r


def _float_to_f32(sel: Any, x: UOp) -> Any:
    """A float16/float32 source as a float32 VGPR (exact)."""
    v = sel.vsrc(x)
    if x.dtype == _F16:
        return _vop1(sel, "v_cvt_f32_f16", v, False)
    return sel.vgpr(v) if not isinstance(v, Imm) else sel.vsrc_reg(x)


def cast(sel: Any, x: UOp, dt: DType) -> Any:
    """The register holding CAST(x) to dt."""
    s = x.dtype
    if s == dt:
        return sel.reg(x)
    if dt.is_bool:
        return _to_bool(sel, x)
    if s.is_bool:
        bit = sel.from_mask(sel.reg(x))
        if dt.is_float:
            return _from_32(sel, bit, dt, "u32")
        return sel.pair(bit, sel.vconst_reg(0)) if is_wide(dt) else bit
    if not s.is_float and not dt.is_float:
        return _int_to_int(sel, x, dt)
    if not s.is_float:
        if is_wide(s) and dt == _F64:
            return _i64_to_f64(sel, x)
        if is_wide(s):
            raise AmdSelectError(f"CAST {s} → {dt} should have been decomposed for AMD")
        v = sel.vgpr(sel.reg(x))
        return _from_32(sel, v, dt, "i32" if s.is_signed else "u32")
    if not dt.is_float:
        if is_wide(dt):
            return _f_to_i64(sel, x, dt)
        signed = dt.is_signed
        if s == _F64:
            r = _vop1(sel, f"v_cvt_{'i' if signed else 'u'}32_f64", sel.vsrc_reg(x), False)
        else:
            f = _float_to_f32(sel, x)
            r = _vop1(sel, f"v_cvt_{'i' if signed else 'u'}32_f32", f, False)
        return _clamp(sel, r, dt)
    # float → float
    if s == _F64:
        if dt == _F16:
            raise AmdSelectError("CAST float64 → float16 should have been decomposed for AMD")
        return _vop1(sel, "v_cvt_f32_f64", sel.vsrc_reg(x), False)
    f = _float_to_f32(sel, x)
    if dt == _F32:
        return f
    if dt == _F64:
        return _vop1(sel, "v_cvt_f64_f32", f, True)
    if dt == _F16:
        return sel.normalize(_vop1(sel, "v_cvt_f16_f32", f, False), dtypes.uint16)
    raise AmdSelectError(f"CAST {s} → {dt} should have been decomposed for AMD")


def _i64_to_f64(sel: Any, x: UOp) -> Any:
    """hi·2^32 and lo are exact in float64; one v_add_f64 rounds their sum once."""
    r = sel.vgpr(sel.reg(x))
    hi, lo = sel.hi32(r), sel.lo32(r)
    hf = _vop1(sel, f"v_cvt_f64_{'i' if x.dtype.is_signed else 'u'}32", hi, True)
    lf = _vop1(sel, "v_cvt_f64_u32", lo, True)
    sh, out = sel.new("v2"), sel.new("v2")
    sel.emit("v_ldexp_f64", D(sh), hf, Imm(32))
    sel.emit("v_add_f64", D(out), sh, lf)
    return out


def _f_to_i64(sel: Any, x: UOp, dt: DType) -> Any:
    """t = trunc(x) (float64); hi = cvt32(floor(t·2^-32)), lo = cvt_u32(t - hi·2^32), both
    saturating: out-of-range values saturate hi and push lo past its range the same way, so
    the pair is INT64_MAX/MIN (UINT64_MAX/0) as documented, and NaN gives 0 twice."""
    v = sel.vsrc_reg(x)
    if x.dtype != _F64:
        v = _vop1(sel, "v_cvt_f64_f32", _float_to_f32(sel, x), True)
    t, q, f = sel.new("v2"), sel.new("v2"), sel.new("v2")
    sel.emit("v_trunc_f64", D(t), v)
    sel.emit("v_ldexp_f64", D(q), t, sel.vconst_reg(-32))     # -32 is no inline constant
    sel.emit("v_floor_f64", D(f), q)
    k = "i" if dt.is_signed else "u"
    hi = _vop1(sel, f"v_cvt_{k}32_f64", f, False)
    hb = _vop1(sel, f"v_cvt_f64_{k}32", hi, True)
    hs, rest = sel.new("v2"), sel.new("v2")
    sel.emit("v_ldexp_f64", D(hs), hb, Imm(32))
    sel.emit("v_add_f64", D(rest), t, hs, mods=(("neg", (0, 1, 0)),))
    lo = _vop1(sel, "v_cvt_u32_f64", rest, False)
    return sel.pair(lo, hi)


def _from_32(sel: Any, v: Any, dt: DType, src: str) -> Any:
    """A 32-bit integer (src "i32" or "u32") converted to float dtype dt (float16 through
    float32)."""
    if dt == _F64:
        return _vop1(sel, f"v_cvt_f64_{src}", v, True)
    f = _vop1(sel, f"v_cvt_f32_{src}", v, False)
    return f if dt == _F32 else sel.normalize(_vop1(sel, "v_cvt_f16_f32", f, False),
                                               dtypes.uint16)


def _to_bool(sel: Any, x: UOp) -> Any:
    """x != 0 as a lane mask (NaN → true, ±0 → false)."""
    s = x.dtype
    m = sel.new(sel.arch.mask_cls)
    if s.is_float and s != _F16:
        sel.emit(f"v_cmp_neq_f{s.bits}", D(m), Imm(0), sel.vsrc(x))
        return m
    if s == _F16:
        t = sel.new("v")
        sel.emit("v_and_b32", D(t), sel.vconst_reg(0x7FFF), sel.vsrc_reg(x))
        sel.emit("v_cmp_ne_u32", D(m), Imm(0), t)
        return m
    r = sel.reg(x)
    if not isinstance(r, tuple) and r.cls == "s":
        sel.emit("s_cmp_lg_u32", r, Imm(0))
        sel.emit(f"s_cselect_b{sel.arch.wave}", D(m), Imm(-1), Imm(0))
        return m
    sel.emit(f"v_cmp_ne_u{64 if is_wide(s) else 32}", D(m), Imm(0), sel.vsrc(x))
    return m


def _int_to_int(sel: Any, x: UOp, dt: DType) -> Any:
    """Keep the low bits; widening sign-extends a signed source, zero-extends otherwise."""
    s = x.dtype
    r = sel.reg(x)
    if is_wide(s) and is_wide(dt):
        return r
    if is_wide(s):
        lo = sel.lo32(r)
        return sel.normalize(lo, dt) if lo.cls == "v" else sel.snormalize(lo, dt)
    if is_wide(dt):
        v = sel.vgpr(r)
        if s.is_signed:
            hi = sel.new("v")
            sel.emit("v_ashrrev_i32", D(hi), Imm(31), v)
        else:
            hi = sel.vconst_reg(0)
        return sel.pair(v, hi)
    # the normalized 32-bit form already is the result's unless it must be re-extended
    n, k = dt.itemsize, s.itemsize
    if n == 4 or (n > k and (dt.is_signed or not s.is_signed)) or \
            (n == k and dt.is_signed == s.is_signed):
        return r
    if r.cls == "s":
        return sel.snormalize(r, dt)
    return sel.normalize(r, dt)
