"""Emulator semantics of the 16-bit vector ALU ops: float16 arithmetic, 16-bit integer
arithmetic and shifts, their conversions and compares (RDNA3 ISA §7.6 "16-bit math" and the
§15 VOP1/VOP2/VOP3/VOPC opcode pseudocode; CDNA3 ISA §6 and §13).

Operands and results are the low 16 bits of a 32-bit operand; where the result goes (upper
half kept or zeroed) is :func:`kcc.targets.amd.emu.valu.write`. Float16 arithmetic is IEEE
binary16, round-to-nearest-even, denormals kept (FLOAT_DENORM_MODE_16_64 3): numpy computes a
half add/sub/mul/div/sqrt in binary32 and rounds to binary16, which is the correctly rounded
result (binary32 has more than 2*11+2 bits, so double rounding is innocuous); a fused
multiply-add rounds to odd in binary64 first (:func:`~kcc.targets.amd.emu.valu.fma_odd`).
Transcendentals are exactly rounded here (the hardware is within 1 ULP), as for f32.
"""

from __future__ import annotations

import numpy as np

from kcc.encode.amd.operands import Inst
from kcc.targets.amd.emu.core import Wave, Workgroup
from kcc.targets.amd.emu.valu import (OPS, _bits, _cmp_f, _cmp_i, _class, _fmax, _fmin,
                                      _output_mods, _read, _vopc, fma_odd, vop, write)
from kcc.targets.amd.emu.valu_more import frexp_exp, frexp_mant

h16, f64 = np.float16, np.float64


def _sh16(x: np.ndarray) -> np.ndarray:
    """A 16-bit shift's amount: S0[3:0]."""
    return (x & 15).astype(np.int64)


# --- float16 arithmetic -------------------------------------------------------------------
vop("h:hh", lambda a, b: a + b, "v_add_f16")
vop("h:hh", lambda a, b: a - b, "v_sub_f16")
vop("h:hh", lambda a, b: b - a, "v_subrev_f16")
vop("h:hh", lambda a, b: a * b, "v_mul_f16")
vop("h:hh", _fmax, "v_max_f16", mode=True)
vop("h:hh", _fmin, "v_min_f16", mode=True)
# V_FMAMK_F16 / V_FMAAK_F16 (gfx11 VOP2 with a literal K): fma of the sources in LLVM's
# operand order, as for f32 (valu.py)
vop("h:hhh", lambda a, b, c: fma_odd(a, b, c).astype(h16), "v_fma_f16", "v_fmamk_f16",
    "v_fmaak_f16")
# V_LDEXP_F16: S0.f16 * 2 ** S1.i16 (exactly: one rounding, to a denormal or infinity).
vop("h:hj", lambda a, e: np.ldexp(a.astype(f64), np.clip(e, -100, 100)).astype(h16),
    "v_ldexp_f16")
vop("h:h", np.floor, "v_floor_f16")
vop("h:h", np.ceil, "v_ceil_f16")
vop("h:h", np.trunc, "v_trunc_f16")
vop("h:h", np.rint, "v_rndne_f16")
vop("h:h", lambda a: np.where(np.isinf(a), h16(np.nan),
                             np.minimum(a - np.floor(a), np.nextafter(h16(1), h16(0)))),
    "v_fract_f16")
vop("h:h", frexp_mant, "v_frexp_mant_f16")
vop("j:h", frexp_exp, "v_frexp_exp_i16_f16")
vop("h:h", np.sqrt, "v_sqrt_f16")
vop("h:h", lambda a: h16(1) / a, "v_rcp_f16")
vop("h:h", lambda a: (1 / np.sqrt(a.astype(f64))).astype(h16), "v_rsq_f16")
vop("h:h", lambda a: np.exp2(a.astype(f64)).astype(h16), "v_exp_f16")
vop("h:h", lambda a: np.log2(a.astype(f64)).astype(h16), "v_log_f16")
# angle in revolutions, as V_SIN_F32/V_COS_F32
vop("h:h", lambda a: np.sin(2 * np.pi * a.astype(f64)).astype(h16), "v_sin_f16")
vop("h:h", lambda a: np.cos(2 * np.pi * a.astype(f64)).astype(h16), "v_cos_f16")


def _fmac16(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """V_FMAC_F16: D.f16 = S0 * S1 + D.f16, fused."""
    a, b = _read(w, inst, 0, "h"), _read(w, inst, 1, "h")
    d = (w.vread(inst.ops[0]) & np.uint32(0xFFFF)).astype(np.uint16).view(h16)
    with np.errstate(all="ignore"):
        res = _output_mods(inst, fma_odd(a, b, d).astype(h16), "h", w.ieee)
    write(w, inst, _bits(res, "h", [a, b, d]), "h")


OPS["v_fmac_f16"] = _fmac16

# --- conversions ----------------------------------------------------------------------------
vop("h:j", lambda a: a.astype(h16), "v_cvt_f16_i16")
vop("h:w", lambda a: a.astype(h16), "v_cvt_f16_u16")
# float to integer: truncate, saturate out of range, NaN gives 0 (as the f32 forms)
vop("j:h", lambda a: np.where(np.isnan(a), 0, np.clip(np.trunc(a.astype(f64)), -2**15,
                                                      2**15 - 1)).astype(np.int64),
    "v_cvt_i16_f16")
vop("w:h", lambda a: np.where(np.isnan(a), 0, np.clip(np.trunc(a.astype(f64)), 0,
                                                      2**16 - 1)).astype(np.int64),
    "v_cvt_u16_f16")
vop("i:j", lambda a: a.astype(np.int64), "v_cvt_i32_i16")
vop("u:w", lambda a: a.astype(np.int64), "v_cvt_u32_u16")


def _f16_rtz(a: np.ndarray) -> np.ndarray:
    """binary32 to binary16 rounding toward zero: the nearest-even result, stepped one
    toward zero when it lies farther from zero than the exact value (it is then the
    neighbour above in magnitude); an overflow gives the largest finite half."""
    r = a.astype(h16)
    over = np.isfinite(a) & (np.abs(r.astype(np.float32)) > np.abs(a))
    r = np.where(over, np.nextafter(r, h16(0)), r)
    return r


def _pkrtz(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """V_CVT_PK_RTZ_F16_F32: D[15:0] = f16(S0), D[31:16] = f16(S1), round toward zero."""
    lo, hi = _bits(_f16_rtz(a), "h", [a]), _bits(_f16_rtz(b), "h", [b])
    return lo | (hi << np.uint32(16))


vop("u:ff", _pkrtz, "v_cvt_pk_rtz_f16_f32", "v_cvt_pkrtz_f16_f32")

# --- 16-bit integer ---------------------------------------------------------------------------
vop("w:ww", lambda a, b: a.astype(np.int64) + b, "v_add_nc_u16", "v_add_u16")
vop("w:ww", lambda a, b: a.astype(np.int64) - b, "v_sub_nc_u16", "v_sub_u16")
vop("w:ww", lambda a, b: a.astype(np.int64) * b, "v_mul_lo_u16")
# the *rev shifts shift S1 by S0[3:0]
vop("w:ww", lambda a, b: b.astype(np.int64) << _sh16(a), "v_lshlrev_b16")
vop("w:ww", lambda a, b: b.astype(np.int64) >> _sh16(a), "v_lshrrev_b16")
vop("j:wj", lambda a, b: b.astype(np.int64) >> _sh16(a), "v_ashrrev_i16")
vop("w:ww", np.maximum, "v_max_u16")
vop("w:ww", np.minimum, "v_min_u16")
vop("j:jj", np.maximum, "v_max_i16")
vop("j:jj", np.minimum, "v_min_i16")
# V_MAD_U32_U16: D.u32 = S0.u16 * S1.u16 + S2.u32
vop("u:wwu", lambda a, b, c: a.astype(np.uint64) * b + c, "v_mad_u32_u16")
# V_MAD_U16 (gfx11) and gfx9's V_MAD_LEGACY_U16: D.u16 = S0.u16 * S1.u16 + S2.u16, modulo
# 2^16 (the legacy form has no op_sel: its result is written zero-extended, as the other
# gfx9 16-bit ops outside GFX9_KEEP_HIGH)
vop("w:www", lambda a, b, c: a.astype(np.int64) * b + c, "v_mad_u16", "v_mad_legacy_u16")
# V_PACK_B32_F16: D[31:16] = S1.f16, D[15:0] = S0.f16; a move of the bits (after the neg/abs
# source modifiers), no rounding or NaN quieting
vop("b:hh", lambda a, b: (b.view(np.uint16).astype(np.uint32) << 16) | a.view(np.uint16),
    "v_pack_b32_f16")

# --- compares -------------------------------------------------------------------------------
for _x in ("v_cmp_", "v_cmpx_"):
    for _c in ("f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle",
               "neq", "nlt", "t", "tru"):
        _vopc(f"{_x}{_c}_f16", "hh", lambda a, b, c=_c: _cmp_f(c, a, b))
    for _c in ("f", "lt", "eq", "le", "gt", "ne", "lg", "ge", "t"):
        _vopc(f"{_x}{_c}_i16", "jj", lambda a, b, c=_c: _cmp_i(c, a, b))
        _vopc(f"{_x}{_c}_u16", "ww", lambda a, b, c=_c: _cmp_i(c, a, b))
    _vopc(f"{_x}class_f16", "hw", _class)
