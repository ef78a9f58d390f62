"""Emulator semantics of the float division helpers V_DIV_SCALE, V_DIV_FMAS and V_DIV_FIXUP
(RDNA3 ISA §15 VOP3 / VOP3SD opcode pseudocode; CDNA3 §13 has the same opcodes and text).

The manual's pseudocode for these is known to be incomplete: its V_DIV_FMAS "2 ** 32 *
fma(...)" cannot undo V_DIV_SCALE's 2 ** 64 scaling, its "1.0 / 64'F(S1.f32) == DENORM.f64"
is never true for a float32 S1, one branch scales a denominator above 2 ** 126 up by 2 ** 64
(to infinity), and UNDERFLOW_F32 is never defined. The reading used here is the one under
which LLVM 19's IEEE division macro (v_div_scale ×2, v_rcp, Newton steps, v_div_fmas,
v_div_fixup: what llc-19 emits for ``fdiv float``/``fdiv double`` with denormals kept) is
correctly rounded for every operand pair, which tests/targets/amd/emu/test_emu_fdiv.py checks
against numpy, also with V_RCP_F32 / V_SQRT_F32 flushing denormals and V_SQRT_F32 only
faithful (the hardware's documented behaviour: FLUSH and APPROX below, which is why those two
instructions live here):

- V_DIV_SCALE (S0 the value to scale, S1 the denominator, S2 the numerator; k = 64 / 128,
  "denormal" of the operand's type): a zero S1 or S2 gives NaN with VCC set (VCC as a
  gfx11 part reports it, tinygrad's test/amd/hw/test_vop3.py); an exponent difference
  >= 96 / 768 scales the denominator up (VCC: the quotient is post-scaled up); a denormal
  S1 scales both operands up; a denominator whose reciprocal is denormal (|S1| > 2 ** 126
  / 2 ** 1022) scales the denominator down when the quotient is denormal too (VCC: post-
  scaled down; the manual's "ldexp(S0, 64)" there would overflow), else both operands down;
  a denormal quotient scales the numerator up (VCC); a tiny numerator (exponent field <= 23 /
  53) scales both up. So V_RCP never sees an operand with a denormal reciprocal.
- V_DIV_FMAS: fused S0 * S1 + S2, where VCC is set times 2 ** k if S2's exponent field is
  above the bias (|S2| >= 2) else 2 ** -k, rounded once (the direction as measured on a
  gfx11 part, tinygrad's test/amd/hw/test_vop3.py TestDivFmas).
- V_DIV_FIXUP: the manual's cases; UNDERFLOW (the exponent difference below -150 / -1075,
  i.e. |S2 / S1| < 2 ** -150 / 2 ** -1075, below half the smallest denormal) is ±0, the
  quotient rounded to nearest. A NaN quotient in the last case is ±inf (OVERFLOW: the
  macro's quotient overflowed its Newton steps, inf - inf; as a gfx11 part does, tinygrad's
  test/mockgpu/amd/emu.py errata list), where the manual's "exponent(S1) == 255" test is
  never reached.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import numpy as np

from kcc.encode.amd.operands import Inst
from kcc.targets.amd.emu.core import Semantic, Wave, Workgroup
from kcc.targets.amd.emu.valu import (_DSTS, OPS, _bits, _fma32, _fma64, _output_mods, _read,
                                      _round64, fma_odd, vop, write)

f32, f64 = np.float32, np.float64

# Tests' models of the hardware's approximations (the defaults: exact). FLUSH: V_RCP_F32 and
# V_SQRT_F32 flush denormal operands and results to zero of their sign (the transcendental
# unit's, as v_exp_f32's: kcc/isel/amd/alu.py sel_EXP2; LLVM 19 keeps such values away from
# both). APPROX, a numpy Generator: their results only as accurate as documented, an error
# below 1 ULP (RDNA3 ISA §7.x VOP1 transcendentals, LLVM AMDGPUUsage), i.e. either float32
# neighbour of an exact value that is not representable, chosen at random per lane. Code
# correct under these does not lean on the exactly rounded results the emulator gives.
FLUSH = False
APPROX: np.random.Generator | None = None


def _approx(fn: Callable[[np.ndarray], np.ndarray],
            side: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """A float32 op, exactly rounded by default, under FLUSH / APPROX as the hardware may
    be; side(a, r): the sign of (exact result - r), computed exactly in float64."""
    def run(a: np.ndarray) -> np.ndarray:
        tiny = np.finfo(f32).tiny
        if FLUSH:
            a = np.where(np.abs(a) < tiny, np.copysign(f32(0), a), a).astype(f32)
        r = fn(a)
        if APPROX is not None:
            s = side(a.astype(f64), r.astype(f64))
            other = np.nextafter(r, np.where(s > 0, f32(np.inf), f32(-np.inf)))
            pick = (s != 0) & np.isfinite(r) & (r != 0) & \
                (APPROX.integers(0, 2, r.shape) == 1)
            r = np.where(pick & np.isfinite(other), other, r).astype(f32)
        if FLUSH:
            r = np.where(np.abs(r) < tiny, np.copysign(f32(0), r), r).astype(f32)
        return r
    return run


# V_RCP_IFLAG_F32 (valu.py) is V_RCP_F32 flagging integer division by zero: exact, as before.
vop("f:f", _approx(lambda a: f32(1) / a, lambda a, r: np.sign(a) * np.sign(1 - a * r)),
    "v_rcp_f32")
vop("f:f", _approx(np.sqrt, lambda a, r: np.sign(a - r * r)), "v_sqrt_f32")

# per type letter: numpy float, bits type, mantissa bits, exponent mask, the 0/0 and
# inf/inf NaN of V_DIV_FIXUP, quiet bit
_T = {"h": (np.float16, np.uint16, 10, 0x1F, 0xFE00, 1 << 9),
      "f": (np.float32, np.uint32, 23, 0xFF, 0xFFC00000, 1 << 22),
      "F": (np.float64, np.uint64, 52, 0x7FF, 0xFFF8000000000000, 1 << 51)}
# V_DIV_SCALE per type: exponent difference that sets VCC, scale exponent, "numerator tiny",
# the largest denominator whose reciprocal is normal, the exponent bias
_SCALE = {"f": (96, 64, 23, 2.0 ** 126, 127), "F": (768, 128, 53, 2.0 ** 1022, 1023)}
# V_DIV_FIXUP underflow exponent difference (f16 has none)
_UNDERFLOW = {"f": -150, "F": -1075}


def _exponent(x: np.ndarray, t: str) -> np.ndarray:
    ftype, utype, mbits, emask = _T[t][:4]
    return ((x.view(utype) >> utype(mbits)) & utype(emask)).astype(np.int64)


def _denorm(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)


def _div_scale(t: str) -> Semantic:
    """V_DIV_SCALE: VDST = S0 scaled by 2 ** ±k where the Newton-Raphson steps of a
    division S2 / S1 would meet denormal terms, SDST (VCC) = the quotient needs
    post-scaling (module docstring); S0 is unchanged where no branch applies."""
    thr, k, tiny, big, _ = _SCALE[t]

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        s0, s1, s2 = (_read(w, inst, i, t) for i in range(3))
        with np.errstate(all="ignore"):
            up, down = np.ldexp(s0, k), np.ldexp(s0, -k)
            quot_den = _denorm(s2 / s1)
            rcp_den = np.isfinite(s1) & (np.abs(s1) > big)
            ediff = _exponent(s2, t) - _exponent(s1, t)
            conds = [(s2 == 0) | (s1 == 0), ediff >= thr, _denorm(s1), rcp_den & quot_den,
                     rcp_den, quot_den, _exponent(s2, t) <= tiny]
            res = np.select(conds, [np.full_like(s0, np.nan), np.where(s0 == s1, up, s0), up,
                                    np.where(s0 == s1, down, s0), down,
                                    np.where(s0 == s2, up, s0), up], s0)
            vcc = np.select(conds, [True, True, False, True, False, True, False], False)
            res = _output_mods(inst, res.astype(_T[t][0]), t, w.ieee)
        write(w, inst, _bits(res, t, [s0, s1, s2]), t)
        w.mask_operand_write(inst.ops[1], vcc)
    return run


def _scaled_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, e: np.ndarray,
                t: str) -> np.ndarray:
    """(a * b + c) * 2 ** e rounded once to type t. float32: the fused sum rounded to odd in
    float64 (kcc.targets.amd.emu.valu.fma_odd), scaled exactly (|e| = 64 keeps it far inside
    float64's range), then rounded to float32: one correct rounding, denormals included.
    float64: per lane with exact rationals."""
    with np.errstate(all="ignore"):
        if t == "f":
            return (fma_odd(a, b, c) * np.ldexp(np.float64(1), e)).astype(np.float32)
        out = _fma64(a, b, c)
    for i, (x, y, z, s) in enumerate(zip(a.tolist(), b.tolist(), c.tolist(), e.tolist())):
        r = float(out[i])
        if r != 0 and np.isfinite(r) and all(np.isfinite(v) for v in (x, y, z)):
            exact = (Fraction(x) * Fraction(y) + Fraction(z)) * Fraction(2) ** int(s)
            out[i] = _round64(exact)
        else:
            out[i] = r * 2.0 ** int(s)      # 0, ±inf, NaN: unchanged by the factor
    return out


def _div_fmas(t: str) -> Semantic:
    """V_DIV_FMAS: fused S0 * S1 + S2, post-scaled where VCC is set (module docstring)."""
    k, bias = _SCALE[t][1], _SCALE[t][4]

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        a, b, c = (_read(w, inst, i, t) for i in range(3))
        vcc = w.bits(w.mask_value("vcc"))
        with np.errstate(all="ignore"):
            res = (_fma64 if t == "F" else _fma32)(a, b, c)
            if vcc.any():
                e = np.where(_exponent(c, t) > bias, k, -k)
                res = np.where(vcc, _scaled_fma(a, b, c, e, t), res)
            res = _output_mods(inst, res, t, w.ieee)
        write(w, inst, _bits(res, t, [a, b, c]), t)
    return run


def _div_fixup(t: str) -> Semantic:
    """V_DIV_FIXUP: S0 (the quotient) with the sign of S1 ^ S2 and division's special cases
    of S2 / S1: a NaN operand (S2 first) quieted, 0/0 and inf/inf the negative quiet NaN,
    x/0 and inf/y infinity, x/inf and 0/y zero, a quotient below half the smallest denormal
    zero (module docstring)."""
    ftype, utype, mbits, emask, negnan, quiet = _T[t]
    top = utype(8 * np.dtype(utype).itemsize - 1)

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        q, d, n = (_read(w, inst, i, t) for i in range(3))
        sign = (np.signbit(d) ^ np.signbit(n)).astype(utype) << top
        inf = utype(emask << mbits)
        conds = [np.isnan(n), np.isnan(d), (d == 0) & (n == 0), np.isinf(d) & np.isinf(n),
                 (d == 0) | np.isinf(n), np.isinf(d) | (n == 0)]
        if t in _UNDERFLOW:
            conds.append(_exponent(n, t) - _exponent(d, t) < _UNDERFLOW[t])
        picks = [n.view(utype) | utype(quiet), d.view(utype) | utype(quiet),
                 np.full_like(sign, negnan), np.full_like(sign, negnan), sign | inf, sign]
        if t in _UNDERFLOW:
            picks.append(sign)
        conds.append(np.isnan(q))                  # the macro's quotient overflowed
        picks.append(sign | inf)
        bits = np.select(conds, picks, (q.view(utype) & ~(utype(1) << top)) | sign)
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
