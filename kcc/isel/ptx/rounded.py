"""PTX instruction selection, part 3: correctly rounded float32 RECIPROCAL and SQRT inline,
around the `.approx.ftz` instructions (a mixin of `kcc.isel.ptx.select.PtxSelector`).

`rcp.rn.f32` and `sqrt.rn.f32` are correctly rounded, but ptxas expands each into a fast path
plus an out-of-line slow-path subroutine (CALL; ~50 SASS instructions) for subnormal, huge and
special operands, which doubles the size of an elementwise kernel that divides once. These
sequences give the same bits (docs/semantics.md: RECIPROCAL and SQRT are correctly rounded,
round-to-nearest-even) without a CALL. They assume of the approximations only what the PTX ISA
documents (Floating Point Instructions: rcp.approx: maximum error 1 ulp over the full range;
rsqrt.approx: maximum relative error 2^-22.9, also below 1 ulp), with `.ftz` (subnormal inputs
read as zero, subnormal results written as zero). The proof is a test:
tests/isel/ptx/rcp_model.py models every instruction here from the ISA (the approximations as
*any* value within 1 ulp: the correctly rounded one moved by -1, 0, +1 ulp) and
tests/isel/ptx/test_ptx_rcp.py / test_ptx_sqrt.py compare the sequences with numpy's correctly
rounded float32 1/x and sqrt: 0 wrong on every significand of each binade where a scaling or
threshold changes (between those every step is invariant under power-of-two scaling) and on a
sample of every exponent; their exhaustive mode (all 2^32 inputs, ~3 h) was not run
(docs/transcendentals.md, CUDA float32 RECIPROCAL and SQRT).
"""

from __future__ import annotations

from kcc.encode.ptx import Imm, Reg
from kcc.isel.common import f32_bits


def fimm(v: float) -> Imm:
    """A float32 immediate (PTX `0f` hex literal)."""
    return Imm(f"0f{f32_bits(v):08X}")


class PtxRounded:
    """Needs `new` and `emit` of the selector."""

    def rcp_f32(self, b: Reg) -> Reg:
        """Correctly rounded float32 1/b without a CALL (17 SASS instructions on sm_80).

        The work is on |b| (the sign is copied back at the end: 1/b has b's sign, and
        1/±0 = ±inf, 1/±inf = ±0). Range: `rcp.approx.ftz` reads bs = |b|·s, s = 2^24 for
        |b| < 2^-126 (subnormal b, which `.ftz` would flush), 2^-149 for |b| ≥ 2^126 (whose
        1/b is subnormal or 2^-126, which `.ftz` would flush), else 1; each scaling is exact and
        leaves bs normal with a normal reciprocal. With y0 within 1 ulp of 1/bs:
          e0 = 1 - bs·y0          exact (fma): |e0| < 2^-22
          r1 = RP(y0 + y0·e0)     the Newton value N0 ≤ 1/bs rounded *upward*: RD or RU(1/bs)
          e1 = 1 - bs·r1          exact
          X  = RN(r1 + r1·e1)     = RN(1/bs)
        With r1 rounded to nearest instead, the second step fails where bs's significand is all
        ones and r1 is the power of two below 1/bs (r1·(1+e1) is then exactly the midpoint and
        ties to even; tests/isel/ptx/rcp_model.py finds exactly those inputs): rounding up makes
        r1 the power of two above there. Output: tiny b: x = X·2^24 (exact, or the correctly
        rounded overflow to inf). Huge b: x lies on the subnormal grid 2^-149, Q = 1/bs =
        x·2^149 ∈ (2^21, 2^23], and X = RN24(Q) may be a half-integer that a second rounding
        would tie to even. c = RM(1.5 - bs·X) = RM(½ + e2) (e2 = 1 - bs·X exactly, its sign the
        side of X the true Q lies on) is ½ when Q = X, above ½ when Q > X and strictly below
        ½ when Q < X; v = RZ(X + c) then is X+½ moved one grid step down exactly when Q < X,
        and RZ(v·2^-149) truncates it onto the subnormal grid: floor(Q + ½)·2^-149 = RN(x) (Q
        is never a half-integer: 2^150/(2k+1) is not a float). Specials: b = ±0 → y0 = inf,
        b = ±inf → y0 = 0, and NaN give a NaN X; then y0 is the answer (`setp.nan`)."""
        bs, nb = self.new("f32"), self.new("f32")
        big, tiny, nan = self.new("pred"), self.new("pred"), self.new("pred")
        ab, y0, e0, r1, e1, x, c, v, d, m = (self.new("f32") for _ in range(10))
        self.emit("abs.f32", ab, b)
        self.emit("setp.ge.f32", big, ab, fimm(2.0 ** 126))
        self.emit("setp.lt.f32", tiny, ab, fimm(2.0 ** -126))
        self.emit("mov.f32", bs, ab)
        self.emit("mul.rn.f32", bs, ab, fimm(2.0 ** 24), guard=tiny)
        self.emit("mul.rn.f32", bs, ab, fimm(2.0 ** -149), guard=big)
        self.emit("rcp.approx.ftz.f32", y0, bs)
        self.emit("neg.f32", nb, bs)
        self.emit("fma.rn.f32", e0, nb, y0, fimm(1.0))
        self.emit("fma.rp.f32", r1, y0, e0, y0)
        self.emit("fma.rn.f32", e1, nb, r1, fimm(1.0))
        self.emit("fma.rn.f32", x, r1, e1, r1)
        # huge b: Q = 1/bs rounded onto the integers (the subnormal grid), ties broken by e2
        self.emit("fma.rm.f32", c, nb, x, fimm(1.5))
        self.emit("add.rz.f32", v, x, c)
        self.emit("mov.f32", d, x)
        self.emit("mul.rn.f32", d, x, fimm(2.0 ** 24), guard=tiny)
        self.emit("mul.rz.f32", d, v, fimm(2.0 ** -149), guard=big)
        self.emit("setp.nan.f32", nan, d, d)
        self.emit("selp.f32", m, y0, d, nan)
        self.emit("copysign.f32", m, b, m)
        return m

    def sqrt_f32(self, a: Reg) -> Reg:
        """Correctly rounded float32 sqrt(a) without a CALL (15 SASS instructions on sm_80).

        Range: for a < 2^-96 (subnormal and tiny a, zero, negatives) the work is done on
        as = a·2^64 and the result scaled by 2^-32 (both exact), so the residual as - y1² below
        is a normal number (for a ≥ 2^-96 it is ≥ as·2^-48-ish, far above 2^-126; for smaller
        a it would fall onto the subnormal grid and lose bits). With rs within 1 ulp of
        1/sqrt(as), the Goldschmidt step and Markstein's final correction:
          y  = RN(as·rs), h = rs/2     ≈ sqrt(as), 1/(2·sqrt(as))
          r  = ½ - h·y                 (fma)
          y1 = y + y·r, h1 = h + h·r   (fma) y1 within 1 ulp, h1 within ½ ulp
          d  = as - y1²                (fma)
          y2 = RN(y1 + d·h1)           = RN(sqrt(as))
        Specials: a = ±0 and +inf are their own square roots (`setp` + a predicated `mov`:
        rsqrt gives inf/0 there and the products NaN); a < 0 and NaN give NaN through rs."""
        tiny, sp, sinf, szero = (self.new("pred") for _ in range(4))
        as_, rs, y, h, nh, r = (self.new("f32") for _ in range(6))
        y1, h1, ny1, d, y2 = (self.new("f32") for _ in range(5))
        self.emit("setp.lt.f32", tiny, a, fimm(2.0 ** -96))
        self.emit("mov.f32", as_, a)
        self.emit("mul.rn.f32", as_, a, fimm(2.0 ** 64), guard=tiny)
        self.emit("rsqrt.approx.ftz.f32", rs, as_)
        self.emit("mul.rn.f32", y, as_, rs)
        self.emit("mul.rn.f32", h, rs, fimm(0.5))
        self.emit("neg.f32", nh, h)
        self.emit("fma.rn.f32", r, nh, y, fimm(0.5))
        self.emit("fma.rn.f32", y1, y, r, y)
        self.emit("fma.rn.f32", h1, h, r, h)
        self.emit("neg.f32", ny1, y1)
        self.emit("fma.rn.f32", d, ny1, y1, as_)
        self.emit("fma.rn.f32", y2, d, h1, y1)
        self.emit("mul.rn.f32", y2, y2, fimm(2.0 ** -32), guard=tiny)
        self.emit("setp.eq.f32", sinf, a, Imm("0f7F800000"))
        self.emit("setp.eq.f32", szero, a, fimm(0.0))
        self.emit("or.pred", sp, sinf, szero)
        self.emit("mov.f32", y2, a, guard=sp)
        return y2
