"""Emulator semantics of VALU rows outside valu.py's families: frexp (f16/f32/f64),
V_TRIG_PREOP_F64, the sign-bit count V_CLS_I32 / V_FFBH_I32, V_MUL_HI_I32_I24, the signed adds
with clamp V_ADD_NC_I32 / V_SUB_NC_I32 (gfx11) and V_ADD_I32 / V_SUB_I32 (gfx9), and V_NOP
(RDNA3 ISA §15 opcode pseudocode, CDNA3 ISA §13). Registered through valu.vop like the rest.
"""

from __future__ import annotations

import numpy as np

from kcc.encode.amd.operands import Inst
from kcc.targets.amd.emu.core import Semantic, Wave, Workgroup
from kcc.targets.amd.emu.valu import OPS, _bits, _clz, _i24, _read, vop


def frexp_mant(a: np.ndarray) -> np.ndarray:
    """V_FREXP_MANT: the significand in (-1, -0.5] / [0.5, 1) of C frexp() (the manual's
    "invariant S0 = significand * 2 ** exponent"; 0 stays 0, a denormal is normalized);
    inf and NaN give S0."""
    return np.where(np.isfinite(a), np.frexp(a)[0], a)


def frexp_exp(a: np.ndarray) -> np.ndarray:
    """V_FREXP_EXP: the exponent of C frexp() (0 for 0); inf and NaN give 0."""
    return np.where(np.isfinite(a), np.frexp(a)[1], 0).astype(np.int64)


vop("f:f", frexp_mant, "v_frexp_mant_f32")
vop("F:F", frexp_mant, "v_frexp_mant_f64")
vop("i:f", frexp_exp, "v_frexp_exp_i32_f32")
vop("i:F", frexp_exp, "v_frexp_exp_i32_f64")


def _cls(a: np.ndarray) -> np.ndarray:
    """V_CLS_I32 / V_FFBH_I32: leading bits equal to the sign bit (it included); -1 for 0
    and -1 (RDNA3 §15 VOP1 V_CLS_I32, CDNA3 V_FFBH_I32)."""
    n = _clz(np.where(a >> np.uint32(31) == 1, ~a, a).astype(np.uint32))
    return np.where((a == 0) | (a == np.uint32(0xFFFFFFFF)), -1, n)


vop("i:u", _cls, "v_cls_i32", "v_ffbh_i32")
vop("i:ii", lambda a, b: (_i24(a) * _i24(b)) >> 32, "v_mul_hi_i32_i24")


def _add_i32(sign: int) -> Semantic:
    """V_ADD_NC_I32 / V_SUB_NC_I32 (gfx11), V_ADD_I32 / V_SUB_I32 (gfx9, VOP3): D = S0 +- S1,
    wrapping; with the clamp bit the signed result saturates."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        a, b = _read(w, inst, 0, "i"), _read(w, inst, 1, "i")
        r = a.astype(np.int64) + sign * b.astype(np.int64)
        if inst.mod("clamp", False):
            r = np.clip(r, -2**31, 2**31 - 1)
        w.vwrite(inst.ops[0], _bits(r, "i", [a, b]))
    return run


OPS["v_add_nc_i32"] = OPS["v_add_i32"] = _add_i32(1)
OPS["v_sub_nc_i32"] = OPS["v_sub_i32"] = _add_i32(-1)
OPS["v_nop"] = lambda w, inst, wg: None


def _pi_bits(bits: int) -> int:
    """floor(pi * 2**bits), by Machin's formula pi = 16 atan(1/5) - 4 atan(1/239) in integer
    arithmetic with 64 guard bits (exact for the precision asked of it here)."""
    one = 1 << (bits + 64)

    def atan_inv(x: int) -> int:
        total, term, k, sign, x2 = 0, one // x, 1, 1, x * x
        while term:
            total += sign * (term // k)
            term //= x2
            k += 2
            sign = -sign
        return total
    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> 64


# 2/pi as the 1201 fraction bits b_1200 .. b_0 of the manual's V_TRIG_PREOP_F64 pseudocode
# ("(2.0/PI) == 0.{b_1200, ..., b_0}"), i.e. floor(2/pi * 2**1201); 32 extra bits of pi make
# the floor exact.
_TWO_OVER_PI = (2 << (1201 + 1201 + 32)) // _pi_bits(1201 + 32)


def _trig_preop_one(x: np.float64, index: int) -> float:
    """V_TRIG_PREOP_F64 for one lane (RDNA3 §15 / CDNA3 VOP3 pseudocode): shift = index[4:0]
    * 53, plus exponent(S0) - 1077 when the biased exponent exceeds 1077; the 53 bits of
    2/pi that the shift brings into the whole part (bits 1148 - shift .. 1200 - shift of the
    1201-bit fraction), scaled by 2**(-53 - shift), 2**128 more when exponent(S0) >= 1968."""
    e = int(np.float64(x).view(np.uint64) >> np.uint64(52)) & 0x7FF
    shift = (index & 31) * 53 + (e - 1077 if e > 1077 else 0)
    lo = 1148 - shift
    seg = (_TWO_OVER_PI >> lo if lo >= 0 else _TWO_OVER_PI << -lo) & ((1 << 53) - 1)
    scale = -53 - shift + (128 if e >= 1968 else 0)
    return float(np.ldexp(np.float64(seg), scale))


def _trig_preop(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([_trig_preop_one(x, int(i)) for x, i in zip(a, b)], np.float64)


vop("F:Fu", _trig_preop, "v_trig_preop_f64")
