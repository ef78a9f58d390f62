"""A numpy model of the PTX instructions kcc's float32 RECIPROCAL and SQRT sequences use
(kcc/isel/ptx/rounded.py), written from the PTX ISA's definitions and independent of kcc:

- `fma(a, b, c, mode)`: `fma.{rn,rz,rm,rp}.f32`, a·b + c rounded once (PTX ISA, Floating Point
  Instructions: fma), subnormals kept (no `.ftz`). Exact here: a·b of two float32 is exact in
  float64, the sum's rounding error is recovered exactly (TwoSum), and the pair is rounded to
  float32 through a round-to-odd float64 (53 ≥ 24 + 2 bits, so the second rounding is the only
  one), then adjusted for the directed modes.
- `mul`/`add`: `.rn` float32 ops, numpy's own float32 arithmetic (IEEE, correctly rounded,
  subnormals kept).
- `rcp_approx_ftz(a, k)` / `rsqrt_approx_ftz(a, k)`: the `.approx.ftz.f32` instructions, whose
  only documented property is an error bound (rcp: at most 1 ulp; rsqrt: relative 2^-22.9, below
  1 ulp too). The model returns the correctly rounded value moved by `k` ulps (k ∈ {-1, 0, +1}):
  every float32 within 1 ulp of the exact value is one of those three, so a sequence that is
  exact for all three k is exact for *any* implementation within the bound. `.ftz`: a subnormal
  input is read as a zero of its sign, a subnormal result is written as one.

Everything is vectorized over float32 arrays (bit patterns through `bits`/`from_bits`).
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
F64 = np.float64


def from_bits(u: np.ndarray) -> np.ndarray:
    return np.asarray(u, dtype=np.uint32).view(np.float32)


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def _f32(v: float) -> np.float32:
    return np.float32(v)


def _ftz(x: np.ndarray) -> np.ndarray:
    """Flush subnormals to a zero of the same sign (PTX `.ftz`)."""
    x = np.asarray(x, dtype=F32)
    sub = (np.abs(x) < F32(2.0 ** -126)) & (x != 0)
    return np.where(sub, np.copysign(F32(0), x), x).astype(F32)


def _round_pair(s: np.ndarray, e: np.ndarray, mode: str) -> np.ndarray:
    """float32 rounding (mode) of the exact value s + e (float64 s, e with |e| ≤ ulp(s)/2)."""
    with np.errstate(invalid="ignore", over="ignore"):
        odd = (s.view(np.uint64) & np.uint64(1)).astype(bool)
        toward = np.where(e > 0, F64(np.inf), F64(-np.inf))
        ro = np.where((e != 0) & ~odd, np.nextafter(s, toward), s)    # round to odd
        r = ro.astype(F32)                                            # then RN to float32
        if mode == "rn":
            return r
        exact = s + e                                 # only compared against, below
        r64 = r.astype(F64)
        # r above/below the exact value: compare r - s (exact: close values) with e
        d = r64 - s
        above = np.where(np.isfinite(d), d > e, r64 > exact)
        below = np.where(np.isfinite(d), d < e, r64 < exact)
        down = np.nextafter(r, F32(-np.inf))
        up = np.nextafter(r, F32(np.inf))
        if mode == "rm":
            return np.where(above, down, r).astype(F32)
        if mode == "rp":
            return np.where(below, up, r).astype(F32)
        if mode == "rz":
            pos = exact > 0
            out = np.where(pos & above, down, r)
            out = np.where(~pos & below, up, out)
            return out.astype(F32)
    raise ValueError(mode)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str = "rn") -> np.ndarray:
    """`fma.<mode>.f32 d, a, b, c` exactly (no `.ftz`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        a64, b64, c64 = (np.asarray(v, dtype=F32).astype(F64) for v in (a, b, c))
        p = a64 * b64                                  # exact: 24 + 24 bits
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)                # TwoSum: s + e == p + c exactly
        e = np.where(np.isfinite(s), e, F64(0))
        e = np.where(np.isnan(e), F64(0), e)
        # a float32 overflow is decided by s alone (|e| is tiny against it)
        return _round_pair(s, e, mode)


def mul(a: np.ndarray, b: np.ndarray, mode: str = "rn") -> np.ndarray:
    """`mul.<mode>.f32` (no `.ftz`)."""
    if mode == "rn":
        with np.errstate(over="ignore", invalid="ignore"):
            return (np.asarray(a, dtype=F32) * np.asarray(b, dtype=F32)).astype(F32)
    return fma(a, b, np.zeros_like(np.asarray(a, dtype=F32)), mode)


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`add.rn.f32` (no `.ftz`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.asarray(a, dtype=F32) + np.asarray(b, dtype=F32)).astype(F32)


def _nudge(x: np.ndarray, k: int) -> np.ndarray:
    """x moved by k float32 ulps (k ∈ {-1, 0, 1}); infinities, zeros and NaN stay."""
    if k == 0:
        return x
    with np.errstate(invalid="ignore"):
        y = np.nextafter(x, F32(np.inf) if k > 0 else F32(-np.inf)).astype(F32)
    keep = ~np.isfinite(x) | (x == 0)
    return np.where(keep, x, y).astype(F32)


def rcp_approx_ftz(a: np.ndarray, k: int) -> np.ndarray:
    """`rcp.approx.ftz.f32`: within 1 ulp of 1/a (the correctly rounded value moved k ulps),
    subnormal inputs read as ±0 (→ ±inf), subnormal results written as ±0; ±inf → ±0."""
    a = _ftz(a)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = (F32(1) / a).astype(F32)
    return _ftz(_nudge(r, k))


def rsqrt_approx_ftz(a: np.ndarray, k: int) -> np.ndarray:
    """`rsqrt.approx.ftz.f32`: within 1 ulp of 1/sqrt(a) (the correctly rounded value moved k
    ulps; the ISA's relative 2^-22.9 is less than that); subnormal inputs read as ±0 (→ ±inf),
    negative → NaN, +inf → +0."""
    a = _ftz(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        # float64 sqrt then divide: within 2^-52 relative, so r is one of the two float32
        # neighbours of the exact value (maybe not the nearer one near a tie), and r moved by
        # -1, 0, +1 ulp still covers both neighbours: every value within 1 ulp
        r = (F64(1) / np.sqrt(a.astype(F64))).astype(F32)
    return _ftz(_nudge(r, k))


def copysign(mag: float, s: np.ndarray) -> np.ndarray:
    """`copysign.f32` of a constant magnitude onto s's sign bit."""
    return np.copysign(F32(mag), np.asarray(s, dtype=F32)).astype(F32)


# -- the two sequences, instruction by instruction as kcc/isel/ptx/rounded.py emits them ------

def rcp_seq(b: np.ndarray, k: int) -> np.ndarray:
    """kcc's float32 RECIPROCAL, with `rcp.approx.ftz` k ulps off the correctly rounded value."""
    b = np.asarray(b, dtype=F32)
    ab = np.abs(b)                                             # abs.f32
    big = ab >= F32(2.0 ** 126)                                # setp.ge.f32
    tiny = ab < F32(2.0 ** -126)                               # setp.lt.f32
    bs = np.where(tiny, mul(ab, F32(2.0 ** 24)), ab)           # mov; @tiny mul.rn
    bs = np.where(big, mul(ab, F32(2.0 ** -149)), bs).astype(F32)  # @big mul.rn
    y0 = rcp_approx_ftz(bs, k)                                 # rcp.approx.ftz.f32
    nb = -bs                                                   # neg.f32
    e0 = fma(nb, y0, F32(1))                                   # fma.rn
    r1 = fma(y0, e0, y0, "rp")                                 # fma.rp
    e1 = fma(nb, r1, F32(1))                                   # fma.rn
    x = fma(r1, e1, r1)                                        # fma.rn
    c = fma(nb, x, F32(1.5), "rm")                             # fma.rm
    v = fma(x, F32(1), c, "rz")                                # add.rz (= fma.rz by 1)
    d = np.where(tiny, mul(x, F32(2.0 ** 24)), x)              # mov; @tiny mul.rn
    d = np.where(big, mul(v, F32(2.0 ** -149), "rz"), d)       # @big mul.rz
    m = np.where(np.isnan(d), y0, d)                           # setp.nan; selp
    return np.copysign(m, b).astype(F32)                       # copysign


def sqrt_seq(a: np.ndarray, k: int) -> np.ndarray:
    """kcc's float32 SQRT, with `rsqrt.approx.ftz` k ulps off the correctly rounded value."""
    a = np.asarray(a, dtype=F32)
    tiny = a < F32(2.0 ** -96)                                 # setp.lt.f32
    as_ = np.where(tiny, mul(a, F32(2.0 ** 64)), a).astype(F32)  # mov; @tiny mul.rn
    rs = rsqrt_approx_ftz(as_, k)                              # rsqrt.approx.ftz.f32
    y = mul(as_, rs)                                           # mul.rn
    h = mul(rs, F32(0.5))                                      # mul.rn
    r = fma(-h, y, F32(0.5))                                   # neg; fma.rn
    y1 = fma(y, r, y)                                          # fma.rn
    h1 = fma(h, r, h)                                          # fma.rn
    d = fma(-y1, y1, as_)                                      # neg; fma.rn
    y2 = fma(d, h1, y1)                                        # fma.rn
    y2 = np.where(tiny, mul(y2, F32(2.0 ** -32)), y2)          # @tiny mul.rn
    sp = (a == F32(np.inf)) | (a == 0)                         # setp.eq ×2; or.pred
    return np.where(sp, a, y2).astype(F32)                     # @sp mov


def wrong(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where got differs from want bit for bit (any NaN matches any NaN)."""
    same = (bits(got) == bits(want)) | (np.isnan(got) & np.isnan(want))
    return ~same
