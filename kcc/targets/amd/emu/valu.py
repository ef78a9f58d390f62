"""Emulator semantics of vector ALU instructions (VOP1, VOP2, VOP3, VOP3SD, VOPC).

Meanings from "AMD RDNA3 Shader Instruction Set Architecture" §7 (VALU: §7.3 operands and
inline constants, §7.4 modifiers, §7.6 16-bit/64-bit ops, §7.9 VOPC) and the per-opcode
pseudocode of §15, and "AMD Instinct MI300 CDNA3 ISA" §6 and §13. Every op runs on all lanes
and writes only the active ones (EXEC). Float arithmetic is IEEE binary32/binary64 with
round-to-nearest-even and denormals kept (the descriptor's FLOAT_DENORM_MODE 3); a NaN an
operation creates is the default quiet NaN 0x7fc00000 (a NaN operand propagates, quieted).
V_RCP/V_RSQ/V_SQRT/V_EXP/V_LOG/V_SIN/V_COS are computed exactly rounded here; the hardware
is within 1 ULP, so code that depends on the exact approximation is not modelled (tests can
make V_RCP_F32 / V_SQRT_F32 flush denormals and be merely faithful: valu_div.FLUSH, APPROX).

Type letters of a form: f f32, h f16, w u16, j i16 (16-bit: the low half of the 32-bit
operand), F f64, u u32, i i32, b b32, Q u64, q i64 (64-bit operands are VGPR pairs / SGPR
pairs). A 16-bit float inline constant is the f16 encoding of its value.

Where a 16-bit result goes: the low half of the destination VGPR (kcc's decoder refuses
op_sel, so sources are always low halves too). The upper half is kept on gfx11 (RDNA3: a
VGPR holds two independent 16-bit halves, every 16-bit op writes only its half) and on gfx9
for the ops with an op_sel destination select (V_FMA_F16, V_DIV_FIXUP_F16, V_MAD_*16: "if
op_sel[3] is 0 the result is written to the 16 LSBs and the high 16 bits are preserved");
the other gfx9 16-bit ops write the result zero-extended, the legacy VOP1/VOP2 behaviour.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import numpy as np

from kcc.encode.amd.operands import Inst
from kcc.targets.amd.emu.core import Semantic, Wave, Workgroup

OPS: dict[str, Semantic] = {}
SIGNATURES: dict[str, str] = {}   # a vop() op's "D:SSS" type letters (tests feed it any bits)
WIDE = "FQq"
FLOAT = "fhF"
HALF = "hwj"  # 16-bit operand types
# gfx9 16-bit ops that keep the destination's upper half (see the module docstring)
GFX9_KEEP_HIGH = {"v_fma_f16", "v_div_fixup_f16", "v_mad_u16", "v_mad_i16", "v_mad_f16"}
_QNAN32 = np.uint32(0x7FC00000)
_QNAN64 = np.uint64(0x7FF8000000000000)


def _read(w: Wave, inst: Inst, i: int, t: str, nd: int | None = None) -> np.ndarray:
    """Source i (counted among the sources, after ``nd`` destinations) as the numpy type of
    letter t, with the VOP3 abs/neg modifiers of float operands applied (abs first)."""
    op = inst.ops[i + (_ndst(inst) if nd is None else nd)]
    raw = w.vread(op, 64 if t in WIDE else 16 if t == "h" else 32, is_float=t in FLOAT)
    if t == "f":
        v = raw.view(np.float32)
    elif t == "F":
        v = raw.view(np.float64)
    elif t == "h":
        v = (raw & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    elif t == "w":
        v = (raw & np.uint32(0xFFFF)).astype(np.uint16)
    elif t == "j":
        v = (raw & np.uint32(0xFFFF)).astype(np.uint16).view(np.int16)
    elif t == "i":
        v = raw.view(np.int32)
    elif t == "q":
        v = raw.view(np.int64)
    else:
        v = raw
    if t in FLOAT:
        absm, negm = inst.mod("abs"), inst.mod("neg")
        if absm and absm[i]:  # type: ignore[index]
            v = np.abs(v)
        if negm and negm[i]:  # type: ignore[index]
            v = -v
    return v


_DSTS: dict[str, int] = {}


def _ndst(inst: Inst) -> int:
    return _DSTS.get(_base(inst.name), 1)


def _base(name: str) -> str:
    return name[:-4] if name.endswith(("_e32", "_e64")) else name


# per float result type: its numpy type, the bits' type, the default NaN and the quiet bit
_FLOATS = {"h": (np.float16, np.uint16, np.uint16(0x7E00), np.uint16(1 << 9)),
           "f": (np.float32, np.uint32, _QNAN32, np.uint32(1 << 22)),
           "F": (np.float64, np.uint64, _QNAN64, np.uint64(1 << 51))}


def _bits(res: np.ndarray, t: str, srcs: list[np.ndarray]) -> np.ndarray:
    """A result of type t as register bits; float NaNs an op created become the default
    NaN, NaN operands propagate quieted."""
    fl = _FLOATS.get(t)
    if fl is not None:
        ftype, utype, qnan, quiet = fl
        r = np.asarray(res, ftype)
        u = r.view(utype).copy()
        nan = np.isnan(r)
        if nan.any():
            src_nan = np.zeros_like(nan)
            for s in srcs:
                if s.dtype.kind == "f":
                    src_nan |= np.isnan(s)
            u = np.where(nan & ~src_nan, qnan, u | np.where(nan, quiet, 0))
        return u.astype(utype).astype(np.uint64 if t == "F" else np.uint32)
    r = np.asarray(res)
    if t in "wj":
        return (r.astype(np.int64) & 0xFFFF).astype(np.uint32)
    if t in "Qq":
        return r.astype(np.int64).view(np.uint64) if r.dtype.kind == "i" else \
            r.astype(np.uint64)
    if r.dtype.kind == "b":
        r = r.astype(np.uint32)
    if r.dtype.kind == "f":
        raise AssertionError("float result for an integer destination")
    return (r.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32) if r.dtype.kind == "i" else \
        (r.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _output_mods(inst: Inst, res: np.ndarray, t: str, ieee: bool = True) -> np.ndarray:
    """VOP3 omod (x2, x4, /2) then clamp to [0, 1] (NaN clamps to 0) for float results.
    OMOD is ignored when the IEEE mode bit is set (the manuals' "Output modifiers"), which
    the descriptors of compute kernels set."""
    omod = inst.mod("omod", 0)
    if omod and not ieee:
        res = res * res.dtype.type({1: 2.0, 2: 4.0, 3: 0.5}[omod])  # type: ignore[index]
    if inst.mod("clamp", False):
        res = np.where(np.isnan(res), res.dtype.type(0), np.clip(res, 0, 1))
    return res


def write(w: Wave, inst: Inst, bits: np.ndarray, t: str) -> None:
    """Write a result of type t (register bits) to the VGPR destination; a 16-bit result
    goes to the low half, the upper half kept or zeroed per arch (module docstring)."""
    if t in HALF and (w.fam == "gfx11" or _base(inst.name) in GFX9_KEEP_HIGH):
        old = w.vread(inst.ops[0])
        bits = (old & np.uint32(0xFFFF0000)) | (bits.astype(np.uint32) & np.uint32(0xFFFF))
    w.vwrite(inst.ops[0], bits, 64 if t in WIDE else 32)


def vop(sig: str, fn: Callable[..., np.ndarray], *names: str, mode: bool = False) -> None:
    """A VALU op: ``sig`` is "D:SSS" type letters (destination, sources); ``mode``: fn also
    takes the wave's IEEE mode bit (``ieee=``)."""
    dt, st = sig.split(":")

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        srcs = [_read(w, inst, i, t) for i, t in enumerate(st)]
        with np.errstate(all="ignore"):
            res = fn(*srcs, ieee=w.ieee) if mode else fn(*srcs)
            if dt in FLOAT:
                res = _output_mods(inst, np.asarray(res, {"f": np.float32, "F": np.float64,
                                                          "h": np.float16}[dt]), dt, w.ieee)
        write(w, inst, _bits(res, dt, srcs), dt)
    for n in names:
        OPS[n] = run
        SIGNATURES[n] = sig


f32, f64 = np.float32, np.float64


def _u(x: np.ndarray) -> np.ndarray:
    return x.astype(np.uint64)


def _snan(a: np.ndarray) -> np.ndarray:
    """Lanes holding a signalling NaN (quiet bit clear)."""
    quiet = {np.dtype(np.float16): (np.uint16, 9), np.dtype(np.float32): (np.uint32, 22),
             np.dtype(np.float64): (np.uint64, 51)}
    ut, bit = quiet[a.dtype]
    return np.isnan(a) & ((a.view(ut) >> ut(bit)) & ut(1) == 0)


def _nan_rule(a: np.ndarray, b: np.ndarray, r: np.ndarray, ieee: bool) -> np.ndarray:
    """V_MIN/V_MAX NaN operands: a quiet NaN yields the other operand; in IEEE mode (set by
    compute kernel descriptors) a signalling NaN operand yields that NaN, quieted (by
    _bits), as IEEE 754-2008 minNum/maxNum (the mode register's IEEE bit: "floating point
    opcodes that support exception flag gathering quiet and propagate signalling NaN
    inputs", RDNA3 ISA §3.4 MODE / CDNA3 ISA §3.6)."""
    r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, r))
    if ieee:
        r = np.where(_snan(a), a, np.where(_snan(b), b, r))
    return r


def _fmax(a: np.ndarray, b: np.ndarray, ieee: bool = True) -> np.ndarray:
    """V_MAX: +0 > -0; NaN operands by _nan_rule."""
    r = np.where(a > b, a, b)
    zero = (a == 0) & (b == 0)
    r = np.where(zero, np.where(np.signbit(a) & np.signbit(b), a, np.abs(a)), r)
    return _nan_rule(a, b, r, ieee)


def _fmin(a: np.ndarray, b: np.ndarray, ieee: bool = True) -> np.ndarray:
    """V_MIN: -0 < +0; NaN operands by _nan_rule."""
    r = np.where(a < b, a, b)
    zero = (a == 0) & (b == 0)
    r = np.where(zero, np.where(np.signbit(a) | np.signbit(b), -np.abs(a), a), r)
    return _nan_rule(a, b, r, ieee)


def fma_odd(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a*b+c of binary32/binary16 values in binary64 rounded to odd: the product is exact
    in binary64, the sum is rounded to odd (TwoSum residual), so a final rounding to the
    narrower type (>= 2 bits shorter) is the correctly rounded fused result."""
    p = a.astype(f64) * b.astype(f64)
    cc = c.astype(f64)
    s = p + cc
    bb = s - p
    err = (p - (s - bb)) + (cc - bb)
    bits = s.view(np.uint64)
    odd = (bits & np.uint64(1)) == 1
    fix = (err != 0) & ~odd & np.isfinite(s)
    return np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Fused a*b+c in binary32, one rounding."""
    return fma_odd(a, b, c).astype(f32)


def _round64(q: Fraction) -> float:
    """A nonzero exact rational rounded to the nearest binary64, ties to even (int / int
    true division is correctly rounded, subnormals included); past the largest finite
    number it rounds to ±inf (IEEE 754 §7.4 overflow under roundTiesToEven), where Python
    raises instead."""
    try:
        return q.numerator / q.denominator
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Fused a*b+c in binary64, rounded once (per lane with exact rationals). Any operand
    bits give a result: NaN and infinite operands follow IEEE 754 §6 (inf·0 and inf - inf
    are invalid: NaN), a finite product plus an infinite c is c even where the product
    overflows binary64, an exactly zero product adds its signed zero to c, and an exact
    zero sum of nonzero terms is +0 (§6.3, round to nearest)."""
    out = np.empty(len(a), f64)
    for i, (x, y, z) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        if math.isnan(x) or math.isnan(y) or math.isnan(z) or math.isinf(x) or math.isinf(y):
            out[i] = x * y + z
        elif math.isinf(z):
            out[i] = z
        elif x == 0 or y == 0:
            out[i] = x * y + z          # the product is an exact signed zero
        else:
            exact = Fraction(x) * Fraction(y) + Fraction(z)
            out[i] = _round64(exact) if exact != 0 else 0.0
    return out


def _rsq64(a: np.ndarray) -> np.ndarray:
    """1/sqrt(a) rounded once to binary64: numpy's 1/np.sqrt(a) (two roundings, within an
    ULP) corrected per lane by exact comparisons with the midpoints to its neighbours
    (1/sqrt(a) > m ⟺ m²·a < 1 for m, a > 0; never a tie: 1/sqrt(a) is then irrational or
    exactly representable). Zeros, infinities, negatives and NaN as IEEE rsqrt."""
    with np.errstate(all="ignore"):
        r = 1 / np.sqrt(a)
    out = r.copy()
    for i, (x, y) in enumerate(zip(a.tolist(), r.tolist())):
        if not (x > 0 and math.isfinite(x)) or not math.isfinite(y):
            continue
        fx = Fraction(x)
        while True:
            up, down = math.nextafter(y, math.inf), math.nextafter(y, 0.0)
            if (Fraction(y) + Fraction(up)) ** 2 * fx < 4:       # true value above the
                y = up                                           # upper midpoint
            elif (Fraction(y) + Fraction(down)) ** 2 * fx > 4:   # below the lower one
                y = down
            else:
                break
        out[i] = y
    return out


def _sh(x: np.ndarray, bits: int = 31) -> np.ndarray:
    return (x & np.uint32(bits)).astype(np.uint32)


# --- float32 ----------------------------------------------------------------------------
vop("f:ff", lambda a, b: a + b, "v_add_f32")
vop("f:ff", lambda a, b: a - b, "v_sub_f32")
vop("f:ff", lambda a, b: b - a, "v_subrev_f32")
vop("f:ff", lambda a, b: a * b, "v_mul_f32")
vop("f:ff", _fmax, "v_max_f32", mode=True)
vop("f:ff", _fmin, "v_min_f32", mode=True)
# V_FMAMK_F32 D = S0 * K + S1 and V_FMAAK_F32 D = S0 * S1 + K (RDNA3 §15.2 / CDNA3 §13.2, fused,
# one rounding): in LLVM's operand order (vdst, src0, K, vsrc1 / vdst, src0, vsrc1, K) both
# are fma of the three sources as written, like V_FMA_F32.
vop("f:fff", _fma32, "v_fma_f32", "v_fmamk_f32", "v_fmaak_f32")
# V_MAD_F32 / V_MAC_F32 (gfx9): multiply rounded, then add rounded (not fused).
vop("f:fff", lambda a, b, c: (a * b) + c, "v_mad_f32")
vop("f:fff", lambda a, b, c, ieee: _fmax(_fmax(a, b, ieee), c, ieee), "v_max3_f32",
    mode=True)
vop("f:fff", lambda a, b, c, ieee: _fmin(_fmin(a, b, ieee), c, ieee), "v_min3_f32",
    mode=True)
vop("f:fff", lambda a, b, c, ieee: _fmax(_fmin(a, b, ieee),
                                         _fmin(_fmax(a, b, ieee), c, ieee), ieee),
    "v_med3_f32", mode=True)
# V_RCP_IFLAG_F32 is V_RCP_F32 that flags integer divide-by-zero (no result difference).
vop("f:f", lambda a: f32(1) / a, "v_rcp_iflag_f32")
vop("f:f", lambda a: (1 / np.sqrt(a.astype(f64))).astype(f32), "v_rsq_f32")
vop("f:f", lambda a: np.exp2(a.astype(f64)).astype(f32), "v_exp_f32")
vop("f:f", lambda a: np.log2(a.astype(f64)).astype(f32), "v_log_f32")
# V_SIN/V_COS take the angle in revolutions: sin(2*pi*x).
vop("f:f", lambda a: np.sin(2 * np.pi * a.astype(f64)).astype(f32), "v_sin_f32")
vop("f:f", lambda a: np.cos(2 * np.pi * a.astype(f64)).astype(f32), "v_cos_f32")
vop("f:f", np.floor, "v_floor_f32")
vop("f:f", np.ceil, "v_ceil_f32")
vop("f:f", np.trunc, "v_trunc_f32")
vop("f:f", np.rint, "v_rndne_f32")
# V_FRACT: x - floor(x), at most the largest float below 1.0; inf gives NaN.
vop("f:f", lambda a: np.where(np.isinf(a), f32(np.nan),
                             np.minimum(a - np.floor(a), np.nextafter(f32(1), f32(0)))),
    "v_fract_f32")
vop("f:fi", lambda a, e: np.ldexp(a, np.clip(e, -300, 300)), "v_ldexp_f32")
vop("f:i", lambda a: a.astype(f32), "v_cvt_f32_i32")
vop("f:u", lambda a: a.astype(f32), "v_cvt_f32_u32")
vop("f:h", lambda a: a.astype(f32), "v_cvt_f32_f16")
vop("h:f", lambda a: a.astype(np.float16), "v_cvt_f16_f32")
vop("f:F", lambda a: a.astype(f32), "v_cvt_f32_f64")
vop("F:f", lambda a: a.astype(f64), "v_cvt_f64_f32")
vop("F:i", lambda a: a.astype(f64), "v_cvt_f64_i32")
vop("F:u", lambda a: a.astype(f64), "v_cvt_f64_u32")
for _k in range(4):
    vop("f:u", lambda a, k=_k: ((a >> np.uint32(8 * k)) & np.uint32(0xFF)).astype(f32),
        f"v_cvt_f32_ubyte{_k}")


def _cvt_int(a: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """V_CVT_{I,U}32_F{32,64}: truncate; out of range saturates, NaN gives 0."""
    t = np.trunc(a.astype(f64))
    return np.where(np.isnan(t), 0, np.clip(t, lo, hi)).astype(np.int64)


vop("i:f", lambda a: _cvt_int(a, -2**31, 2**31 - 1), "v_cvt_i32_f32")
vop("u:f", lambda a: _cvt_int(a, 0, 2**32 - 1), "v_cvt_u32_f32")
vop("i:F", lambda a: _cvt_int(a, -2**31, 2**31 - 1), "v_cvt_i32_f64")
vop("u:F", lambda a: _cvt_int(a, 0, 2**32 - 1), "v_cvt_u32_f64")
vop("i:f", lambda a: np.where(np.isnan(a), 0, np.clip(np.floor(a.astype(f64) + 0.5),
                                                      -2**31, 2**31 - 1)).astype(np.int64),
    "v_cvt_rpi_i32_f32")
vop("i:f", lambda a: np.where(np.isnan(a), 0, np.clip(np.floor(a.astype(f64)), -2**31,
                                                      2**31 - 1)).astype(np.int64),
    "v_cvt_flr_i32_f32")

# --- float64 ----------------------------------------------------------------------------
vop("F:FF", lambda a, b: a + b, "v_add_f64")
vop("F:FF", lambda a, b: a * b, "v_mul_f64")
vop("F:FF", _fmax, "v_max_f64", mode=True)
vop("F:FF", _fmin, "v_min_f64", mode=True)
vop("F:FFF", _fma64, "v_fma_f64")
vop("F:F", lambda a: f64(1) / a, "v_rcp_f64")
vop("F:F", np.sqrt, "v_sqrt_f64")
vop("F:F", _rsq64, "v_rsq_f64")
vop("F:F", np.floor, "v_floor_f64")
vop("F:F", np.ceil, "v_ceil_f64")
vop("F:F", np.trunc, "v_trunc_f64")
vop("F:F", np.rint, "v_rndne_f64")
vop("F:Fi", lambda a, e: np.ldexp(a, np.clip(e, -3000, 3000)), "v_ldexp_f64")


vop("F:F", lambda a: np.where(np.isinf(a), np.nan,
                             np.minimum(a - np.floor(a), np.nextafter(1.0, 0.0))),
    "v_fract_f64")

# --- 32-bit integer ----------------------------------------------------------------------
vop("u:uu", lambda a, b: _u(a) + b, "v_add_nc_u32", "v_add_u32")
vop("u:uu", lambda a, b: a.astype(np.int64) - b, "v_sub_nc_u32", "v_sub_u32")
vop("u:uu", lambda a, b: b.astype(np.int64) - a, "v_subrev_nc_u32", "v_subrev_u32")
vop("u:uu", lambda a, b: _u(a) * b, "v_mul_lo_u32")
vop("u:uu", lambda a, b: (_u(a) * b) >> np.uint64(32), "v_mul_hi_u32")
vop("i:ii", lambda a, b: (a.astype(np.int64) * b) >> 32, "v_mul_hi_i32")
vop("u:uu", lambda a, b: _u(a & np.uint32(0xFFFFFF)) * (b & np.uint32(0xFFFFFF)),
    "v_mul_u32_u24")
vop("u:uu", lambda a, b: (_u(a & np.uint32(0xFFFFFF)) * (b & np.uint32(0xFFFFFF)))
    >> np.uint64(32), "v_mul_hi_u32_u24")


def _i24(x: np.ndarray) -> np.ndarray:
    return ((x.view(np.uint32) << np.uint32(8)).view(np.int32) >> 8).astype(np.int64)


vop("i:ii", lambda a, b: _i24(a) * _i24(b), "v_mul_i32_i24")
vop("u:uuu", lambda a, b, c: _u(a & np.uint32(0xFFFFFF)) * (b & np.uint32(0xFFFFFF)) + c,
    "v_mad_u32_u24")
vop("i:iii", lambda a, b, c: _i24(a) * _i24(b) + c, "v_mad_i32_i24")
vop("u:uu", np.bitwise_and, "v_and_b32")
vop("u:uu", np.bitwise_or, "v_or_b32")
vop("u:uu", np.bitwise_xor, "v_xor_b32")
vop("u:uu", lambda a, b: ~(a ^ b), "v_xnor_b32")
vop("u:u", np.invert, "v_not_b32")
vop("u:u", lambda a: a, "v_mov_b32")
# Shifts: the *rev forms shift S1 by S0[4:0].
vop("u:uu", lambda a, b: b << _sh(a), "v_lshlrev_b32")
vop("u:uu", lambda a, b: b >> _sh(a), "v_lshrrev_b32")
vop("i:ui", lambda a, b: b >> _sh(a).astype(np.int32), "v_ashrrev_i32")
vop("u:uu", lambda a, b: a << _sh(b), "v_lshl_b32")
vop("u:uu", lambda a, b: a >> _sh(b), "v_lshr_b32")
vop("u:uuu", lambda a, b, c: (_u(a << _sh(b)) + c), "v_lshl_add_u32")
vop("u:uuu", lambda a, b, c: ((a + b) << _sh(c)), "v_add_lshl_u32")
vop("u:uuu", lambda a, b, c: (a << _sh(b)) | c, "v_lshl_or_b32")
vop("u:uuu", lambda a, b, c: (a & b) | c, "v_and_or_b32")
vop("u:uuu", lambda a, b, c: a | b | c, "v_or3_b32")
vop("u:uuu", lambda a, b, c: a ^ b ^ c, "v_xor3_b32")
vop("u:uuu", lambda a, b, c: _u(a) + b + c, "v_add3_u32")
vop("u:uuu", lambda a, b, c: _u(a ^ b) + c, "v_xad_u32")
vop("u:uuu", lambda a, b, c: (a >> _sh(b)) & ((np.uint64(1) << _u(_sh(c))) - np.uint64(1)),
    "v_bfe_u32")


def _bfe_i(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    width = _sh(c).astype(np.int64)
    v = (a.view(np.uint32).astype(np.int64) >> _sh(b).astype(np.int64)) & ((1 << width) - 1)
    sign = (width > 0) & ((v >> np.maximum(width - 1, 0)) & 1 == 1)
    return np.where(sign, v - (1 << width), v)


vop("i:iuu", _bfe_i, "v_bfe_i32")
vop("u:uuu", lambda a, b, c: (a & b) | (~a & c), "v_bfi_b32")
vop("u:uu", lambda a, b: ((np.uint64(1) << _u(_sh(a))) - np.uint64(1)) << _u(_sh(b)),
    "v_bfm_b32")
vop("u:uuu", lambda a, b, c: ((_u(a) << np.uint64(32)) | b) >> _u(_sh(c)), "v_alignbit_b32")
vop("u:uuu", lambda a, b, c: ((_u(a) << np.uint64(32)) | b) >> _u((c & np.uint32(3)) * 8),
    "v_alignbyte_b32")
vop("u:uu", lambda a, b: np.maximum(a, b), "v_max_u32")
vop("u:uu", lambda a, b: np.minimum(a, b), "v_min_u32")
vop("i:ii", np.maximum, "v_max_i32")
vop("i:ii", np.minimum, "v_min_i32")
vop("u:uuu", lambda a, b, c: np.maximum(np.maximum(a, b), c), "v_max3_u32")
vop("u:uuu", lambda a, b, c: np.minimum(np.minimum(a, b), c), "v_min3_u32")
vop("i:iii", lambda a, b, c: np.maximum(np.maximum(a, b), c), "v_max3_i32")
vop("i:iii", lambda a, b, c: np.minimum(np.minimum(a, b), c), "v_min3_i32")
vop("u:uuu", lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c)),
    "v_med3_u32")
vop("i:iii", lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c)),
    "v_med3_i32")


def _bitrev(a: np.ndarray) -> np.ndarray:
    b = a.astype(np.uint32).view(np.uint8).reshape(-1, 4)[:, ::-1]
    return np.unpackbits(b, axis=1, bitorder="big")[:, ::-1].copy().reshape(-1, 32) \
        .dot(np.uint64(1) << np.arange(32, dtype=np.uint64)[::-1])


vop("u:u", lambda a: _bitrev(a), "v_bfrev_b32")


def _clz(a: np.ndarray) -> np.ndarray:
    """Leading zeros; 0xffffffff for 0 (V_CLZ_I32_U32 / V_FFBH_U32)."""
    n = np.full(a.shape, -1, np.int64)
    for bit in range(32):
        n = np.where((n < 0) & ((a >> np.uint32(31 - bit)) & np.uint32(1) == 1), bit, n)
    return n


def _ctz(a: np.ndarray) -> np.ndarray:
    """Trailing zeros; 0xffffffff for 0 (V_CTZ_I32_B32 / V_FFBL_B32)."""
    n = np.full(a.shape, -1, np.int64)
    for bit in range(32):
        n = np.where((n < 0) & ((a >> np.uint32(bit)) & np.uint32(1) == 1), bit, n)
    return n


vop("i:u", _clz, "v_clz_i32_u32", "v_ffbh_u32")
vop("i:u", _ctz, "v_ctz_i32_b32", "v_ffbl_b32")
vop("u:uu", lambda a, b: np.array([bin(int(x)).count("1") for x in a], np.uint64) + b,
    "v_bcnt_u32_b32")

# --- 64-bit integer ----------------------------------------------------------------------
vop("Q:uQ", lambda a, b: b << _u(a & np.uint32(63)), "v_lshlrev_b64")
vop("Q:uQ", lambda a, b: b >> _u(a & np.uint32(63)), "v_lshrrev_b64")
vop("q:uq", lambda a, b: b >> (a & np.uint32(63)).astype(np.int64), "v_ashrrev_i64")
# gfx942 V_LSHL_ADD_U64: D = (S0 << S1[2:0]) + S2 (shift 0..4).
vop("Q:QuQ", lambda a, b, c: (a << _u(b & np.uint32(7))) + c, "v_lshl_add_u64")
vop("Q:Q", lambda a: a, "v_mov_b64")


# --- VOPC: compares write a lane mask (VCC or an SGPR); v_cmpx also writes EXEC ---------
def _cmp_f(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Float compare: ordered lt/eq/le/gt/lg/ge/o, their negations nge/nlg/ngt/nle/neq/nlt/u
    (true when unordered), f and t."""
    un = np.isnan(a) | np.isnan(b)
    ordered = {"lt": a < b, "eq": a == b, "le": a <= b, "gt": a > b, "lg": (a < b) | (a > b),
               "ge": a >= b, "o": ~un}
    neg = {"nge": "ge", "nlg": "lg", "ngt": "gt", "nle": "le", "neq": "eq", "nlt": "lt",
           "u": "o"}
    if op in ordered:
        return ordered[op]
    if op in neg:
        return ~ordered[neg[op]]
    return np.full(a.shape, op in ("t", "tru"))


def _cmp_i(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    table = {"lt": a < b, "eq": a == b, "le": a <= b, "gt": a > b, "ne": a != b,
             "lg": a != b, "ge": a >= b}
    return table[op] if op in table else np.full(a.shape, op == "t")


def _class(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """V_CMP_CLASS: bit of S1 for the class of S0: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal,
    4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf."""
    bits = a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    quiet_bit = {2: 9, 4: 22, 8: 51}[a.dtype.itemsize]
    tiny = np.finfo(a.dtype).tiny
    neg = np.signbit(a)
    cls = np.select(
        [np.isnan(a) & ((bits >> type(bits[0])(quiet_bit)) & 1 == 0), np.isnan(a),
         np.isinf(a) & neg, np.isinf(a), a == 0, np.abs(a) < tiny],
        [0, 1, 2, 9, np.where(neg, 5, 6), np.where(neg, 4, 7)], np.where(neg, 3, 8))
    return ((mask.astype(np.int64) >> cls) & 1) == 1


def _vopc(name: str, types: str, pred: Callable[..., np.ndarray]) -> None:
    cmpx = name.startswith("v_cmpx_")

    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        nd = 1 if len(inst.ops) == 3 else 0
        res = pred(*[_read(w, inst, i, t, nd) for i, t in enumerate(types)])
        if nd:
            w.mask_operand_write(inst.ops[0], res)
        if cmpx:
            w.set_exec(w.mask_int(res & w.exec))
    OPS[name] = run


for _x in ("v_cmp_", "v_cmpx_"):
    for _c in ("f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle",
               "neq", "nlt", "t", "tru"):
        _vopc(f"{_x}{_c}_f32", "ff", lambda a, b, c=_c: _cmp_f(c, a, b))
        _vopc(f"{_x}{_c}_f64", "FF", lambda a, b, c=_c: _cmp_f(c, a, b))
    for _c in ("f", "lt", "eq", "le", "gt", "ne", "lg", "ge", "t"):
        for _t, _ty in (("i32", "ii"), ("u32", "uu"), ("i64", "qq"), ("u64", "QQ")):
            _vopc(f"{_x}{_c}_{_t}", _ty, lambda a, b, c=_c: _cmp_i(c, a, b))
    _vopc(f"{_x}class_f32", "fu", _class)
    _vopc(f"{_x}class_f64", "Fu", _class)


# --- lane masks as operands: carries, cndmask --------------------------------------------
def _carry(name: str, fn: Callable[..., tuple[np.ndarray, np.ndarray]], cin: bool) -> None:
    """VOP2/VOP3SD carry forms: vdst, sdst(carry/borrow out), src0, src1[, carry in]."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        vdst, sdst, a, b = inst.ops[:4]
        x, y = w.vread(a).astype(np.int64), w.vread(b).astype(np.int64)
        c = w.mask_operand_read(inst.ops[4]).astype(np.int64) if cin else 0
        res, out = fn(x, y, c)
        w.vwrite(vdst, (res & 0xFFFFFFFF).astype(np.uint32))
        w.mask_operand_write(sdst, out)
    OPS[name] = run


_carry("v_add_co_u32", lambda x, y, c: (x + y, (x + y) >> 32 != 0), False)
_carry("v_sub_co_u32", lambda x, y, c: (x - y, y > x), False)
_carry("v_subrev_co_u32", lambda x, y, c: (y - x, x > y), False)
for _n in ("v_add_co_ci_u32", "v_addc_co_u32"):
    _carry(_n, lambda x, y, c: (x + y + c, (x + y + c) >> 32 != 0), True)
for _n in ("v_sub_co_ci_u32", "v_subb_co_u32"):
    _carry(_n, lambda x, y, c: (x - y - c, y + c > x), True)
for _n in ("v_subrev_co_ci_u32", "v_subbrev_co_u32"):
    _carry(_n, lambda x, y, c: (y - x - c, x + c > y), True)


def _mad64(signed: bool) -> Semantic:
    """V_MAD_U64_U32 / V_MAD_I64_I32: vdst(64) = S0 * S1 + S2(64); sdst = carry out."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        vdst, sdst, a, b, c = inst.ops
        x, y = w.vread(a), w.vread(b)
        z = w.vread(c, 64)
        res, out = [], []
        for xi, yi, zi in zip(x.tolist(), y.tolist(), z.tolist()):
            if signed:
                xi = xi - (1 << 32) if xi >> 31 else xi
                yi = yi - (1 << 32) if yi >> 31 else yi
                zi = zi - (1 << 64) if zi >> 63 else zi
            r = xi * yi + zi
            res.append(r & (2**64 - 1))
            out.append(not (-2**63 <= r < 2**63) if signed else r >> 64 != 0)
        w.vwrite(vdst, np.array(res, np.uint64), 64)
        w.mask_operand_write(sdst, np.array(out, bool))
    return run


OPS["v_mad_u64_u32"] = _mad64(False)
OPS["v_mad_i64_i32"] = _mad64(True)


def _cndmask(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """V_CNDMASK_B32: D = mask[lane] ? S1 : S0 (abs/neg apply to float operands in VOP3)."""
    vdst, a, b, m = inst.ops
    x, y = _read(w, inst, 0, "f").view(np.uint32), _read(w, inst, 1, "f").view(np.uint32)
    if not (inst.mod("abs") or inst.mod("neg")):
        x, y = w.vread(a), w.vread(b)
    w.vwrite(vdst, np.where(w.mask_operand_read(m), y, x))


OPS["v_cndmask_b32"] = _cndmask


def _readfirstlane(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """V_READFIRSTLANE_B32: the lowest active lane (lane 0 when EXEC is 0)."""
    ex = np.nonzero(w.exec)[0]
    lane = int(ex[0]) if len(ex) else 0
    w.swrite(inst.ops[0], int(w.vread(inst.ops[1])[lane]))


def _readlane(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """V_READLANE_B32: S0 in lane S1 (mod wave size), regardless of EXEC."""
    lane = w.sread(inst.ops[2]) % w.lanes
    w.swrite(inst.ops[0], int(w.vread(inst.ops[1])[lane]))


def _writelane(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """V_WRITELANE_B32: write S0 to lane S1 of VDST, regardless of EXEC."""
    lane = w.sread(inst.ops[2]) % w.lanes
    only = np.zeros(w.lanes, bool)
    only[lane] = True
    w.vwrite(inst.ops[0], np.full(w.lanes, w.sread(inst.ops[1]), np.uint32), lanes=only)


OPS["v_readfirstlane_b32"] = _readfirstlane
OPS["v_readlane_b32"] = _readlane
OPS["v_writelane_b32"] = _writelane
for _n in ("v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_add_co_ci_u32",
           "v_addc_co_u32", "v_sub_co_ci_u32", "v_subb_co_u32", "v_subrev_co_ci_u32",
           "v_subbrev_co_u32", "v_mad_u64_u32", "v_mad_i64_i32"):
    _DSTS[_n] = 2


def _fmac(w: Wave, inst: Inst, wg: Workgroup) -> None:
    """V_FMAC_F32 / V_FMAC_F64 (fused) / V_MAC_F32 (gfx9, unfused): D = S0 * S1 + D."""
    name = _base(inst.name)
    t = "F" if name == "v_fmac_f64" else "f"
    a, b = _read(w, inst, 0, t), _read(w, inst, 1, t)
    d = w.vread(inst.ops[0], 64 if t == "F" else 32).view(np.float64 if t == "F" else f32)
    with np.errstate(all="ignore"):
        res = _fma64(a, b, d) if t == "F" else _fma32(a, b, d) if name == "v_fmac_f32" \
            else (a * b) + d
        res = _output_mods(inst, res, t, w.ieee)
    w.vwrite(inst.ops[0], _bits(res, t, [a, b, d]), 64 if t == "F" else 32)


OPS["v_fmac_f32"] = OPS["v_mac_f32"] = OPS["v_fmac_f64"] = _fmac

VECTOR_OPS = OPS


def _mbcnt(high: bool) -> Semantic:
    """V_MBCNT_{LO,HI}_U32_B32: D = popcount(S0 & ThreadMask[31:0 or 63:32]) + S1, where
    ThreadMask has a bit set for every lane below the current one."""
    def run(w: Wave, inst: Inst, wg: Workgroup) -> None:
        s0, s1 = w.vread(inst.ops[1]), w.vread(inst.ops[2])
        lane = np.arange(w.lanes, dtype=np.int64)
        below = np.clip(lane - (32 if high else 0), 0, 32)
        mask = ((np.int64(1) << below) - 1).astype(np.uint64)
        hits = s0.astype(np.uint64) & mask
        count = np.array([bin(int(x)).count("1") for x in hits], np.uint64)
        w.vwrite(inst.ops[0], ((count + s1) & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    return run


OPS["v_mbcnt_lo_u32_b32"] = _mbcnt(False)
OPS["v_mbcnt_hi_u32_b32"] = _mbcnt(True)


def _perm(a: np.ndarray, b: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """V_PERM_B32: each result byte picks from {S0, S1} (bytes 0-3 of S1, 4-7 of S0) by the
    matching byte of S2: 0-7 a byte, 8-11 the sign of byte 1, 3, 5, 7 spread to 0x00/0xff,
    12 gives 0x00 and 13-255 give 0xff."""
    data = (a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)
    out = np.zeros(a.shape, np.uint64)
    for k in range(4):
        s = ((sel >> np.uint32(8 * k)) & np.uint32(0xFF)).astype(np.uint64)
        pick = (data >> (np.minimum(s, 7) * np.uint64(8))) & np.uint64(0xFF)
        sign_byte = (data >> (((s & np.uint64(3)) * np.uint64(2) + np.uint64(1)) * np.uint64(8)
                              + np.uint64(7))) & np.uint64(1)
        byte = np.where(s < 8, pick, np.where(s < 12, sign_byte * np.uint64(0xFF),
                                              np.where(s == 12, 0, 0xFF)))
        out |= byte.astype(np.uint64) << np.uint64(8 * k)
    return out


vop("u:uuu", _perm, "v_perm_b32")
