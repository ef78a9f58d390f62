"""Emulator semantics of VALU rows outside valu.py's families: frexp (f16/f32/f64), the
sign-bit count V_CLS_I32 / V_FFBH_I32, V_MUL_HI_I32_I24, the signed adds with clamp
V_ADD_NC_I32 / V_SUB_NC_I32 (gfx11) and V_ADD_I32 / V_SUB_I32 (gfx9), and V_NOP (RDNA3 ISA
§15 opcode pseudocode, CDNA3 ISA §13). Registered through valu.vop like the rest.
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
