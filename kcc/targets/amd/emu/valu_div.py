"""Emulator semantics of the float division helpers V_DIV_SCALE, V_DIV_FMAS and V_DIV_FIXUP
(RDNA3 ISA §15 VOP3 / VOP3SD opcode pseudocode; CDNA3 §13 has the same opcodes, its text
was not compared).

The manual's pseudocode for these is known to be incomplete (its V_DIV_FMAS "2 ** 32 *
fma(...)" cannot undo V_DIV_SCALE's 2 ** 64 scaling, and UNDERFLOW_F32/OVERFLOW_F32 are never
defined), so the cases it does not settle are refused, an EmuError at the instruction, not
guessed: V_DIV_SCALE with a denormal denominator or quotient or a tiny numerator (exponent
field <= 23 / 53), V_DIV_FMAS on a lane with VCC set whose fused result is finite and
nonzero (a power-of-2 factor leaves NaN, inf and 0 unchanged, so those lanes are exact
whatever the factor), and V_DIV_FIXUP's underflow/overflow cases and a NaN quotient in its
last case. None arises in llc's division macro for finite operands within ~2 ** 96 of each
other and not tiny, nor for a zero, infinite or NaN operand.
"""

from __future__ import annotations

import numpy as np

from kcc.encode.amd.operands import Inst
from kcc.targets.amd.emu.core import Semantic, Wave, Workgroup
from kcc.targets.amd.emu.valu import (_DSTS, OPS, _bits, _fma32, _fma64, _output_mods, _read,
                                      write)

# per type letter: numpy float, bits type, mantissa bits, exponent mask, the 0/0 and
# inf/inf NaN of V_DIV_FIXUP, quiet bit
_T = {"h": (np.float16, np.uint16, 10, 0x1F, 0xFE00, 1 << 9),
      "f": (np.float32, np.uint32, 23, 0xFF, 0xFFC00000, 1 << 22),
      "F": (np.float64, np.uint64, 52, 0x7FF, 0xFFF8000000000000, 1 << 51)}
# V_DIV_SCALE per type: exponent difference that sets VCC, scale exponent, "numerator tiny"
_SCALE = {"f": (96, 64, 23), "F": (768, 128, 53)}
# V_DIV_FIXUP underflow exponent difference (f16 has none)
_UNDERFLOW = {"f": -150, "F": -1075}


def _exponent(x: np.ndarray, t: str) -> np.ndarray:
    ftype, utype, mbits, emask = _T[t][:4]
    return ((x.view(utype) >> utype(mbits)) & utype(emask)).astype(np.int64)


def _denorm(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)


def _div_scale(t: str) -> Semantic:
    """V_DIV_SCALE: VDST = S0 scaled by 2 ** +-k where the Newton-Raphson steps of a
    division S2 / S1 would meet subnormal terms, SDST (VCC) = the quotient needs
    post-scaling; S0 is unchanged where no branch applies."""
    thr, k, tiny = _SCALE[t]

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        s0, s1, s2 = (_read(w, inst, i, t) for i in range(3))
        with np.errstate(all="ignore"):
            up, down = np.ldexp(s0, k), np.ldexp(s0, -k)
            quot_den = _denorm(s2 / s1)
            rcp_den = _denorm(np.float64(1) / s1.astype(np.float64))
            ediff = _exponent(s2, t) - _exponent(s1, t)
            conds = [(s2 == 0) | (s1 == 0), ediff >= thr, _denorm(s1), rcp_den & quot_den,
                     rcp_den, quot_den, _exponent(s2, t) <= tiny]
        first = np.argmax(np.array(conds + [np.ones_like(conds[0])]), axis=0)
        if (np.isin(first, (2, 3, 5, 6)) & w.exec).any():
            raise w.error("a denormal denominator or quotient or a tiny numerator: this case "
                          "of v_div_scale is not emulated")
        with np.errstate(all="ignore"):
            res = np.select(conds, [np.full_like(s0, np.nan), np.where(s0 == s1, up, s0), up,
                                    np.where(s0 == s1, up, s0), down,
                                    np.where(s0 == s2, up, s0), up], s0)
            vcc = np.select(conds, [False, True, False, True, False, True, False], False)
            res = _output_mods(inst, res.astype(_T[t][0]), t, w.ieee)
        write(w, inst, _bits(res, t, [s0, s1, s2]), t)
        w.mask_operand_write(inst.ops[1], vcc)
    return run


def _div_fmas(t: str) -> Semantic:
    """V_DIV_FMAS: fused S0 * S1 + S2 where VCC is clear (post-scaled lanes: module doc)."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        a, b, c = (_read(w, inst, i, t) for i in range(3))
        with np.errstate(all="ignore"):
            res = (_fma64 if t == "F" else _fma32)(a, b, c)
        scaled = w.bits(w.mask_value("vcc")) & np.isfinite(res) & (res != 0)
        if (scaled & w.exec).any():
            raise w.error("VCC is set: the post-scaled quotient of v_div_fmas is not "
                          "emulated (the manual's 2 ** 32 factor contradicts v_div_scale)")
        with np.errstate(all="ignore"):
            res = _output_mods(inst, res, t, w.ieee)
        write(w, inst, _bits(res, t, [a, b, c]), t)
    return run


def _div_fixup(t: str) -> Semantic:
    """V_DIV_FIXUP: S0 (the quotient) with the sign of S1 ^ S2 and division's special cases
    of S2 / S1: a NaN operand (S2 first) quieted, 0/0 and inf/inf the negative quiet NaN,
    x/0 and inf/y infinity, x/inf and 0/y zero."""
    ftype, utype, mbits, emask, negnan, quiet = _T[t]
    top = utype(8 * np.dtype(utype).itemsize - 1)

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        q, d, n = (_read(w, inst, i, t) for i in range(3))
        sign = (np.signbit(d) ^ np.signbit(n)).astype(utype) << top
        inf = utype(emask << mbits)
        conds = [np.isnan(n), np.isnan(d), (d == 0) & (n == 0), np.isinf(d) & np.isinf(n),
                 (d == 0) | np.isinf(n), np.isinf(d) | (n == 0)]
        odd = np.isnan(q)
        if t in _UNDERFLOW:
            odd |= (_exponent(n, t) - _exponent(d, t) < _UNDERFLOW[t]) | \
                (_exponent(d, t) == emask)
        if (odd & ~np.any(conds, axis=0) & w.exec).any():
            raise w.error("an underflow/overflow or NaN-quotient case of v_div_fixup: not "
                          "emulated")
        bits = np.select(conds, [n.view(utype) | utype(quiet), d.view(utype) | utype(quiet),
                                 np.full_like(sign, negnan), np.full_like(sign, negnan),
                                 sign | inf, sign], (q.view(utype) & ~(utype(1) << top)) | sign)
        bits = bits.astype(utype)
        if inst.mod("clamp", False) or inst.mod("omod", 0):
            with np.errstate(all="ignore"):
                bits = _output_mods(inst, bits.view(ftype), t, w.ieee).view(utype)
        write(w, inst, bits.astype(np.uint64 if t == "F" else np.uint32), t)
    return run


for _t, _sfx in (("f", "f32"), ("F", "f64")):
    OPS[f"v_div_scale_{_sfx}"] = _div_scale(_t)
    _DSTS[f"v_div_scale_{_sfx}"] = 2
    OPS[f"v_div_fmas_{_sfx}"] = _div_fmas(_t)
for _t, _sfx in (("h", "f16"), ("f", "f32"), ("F", "f64")):
    OPS[f"v_div_fixup_{_sfx}"] = _div_fixup(_t)
