"""x86 selection of tinygrad's float minimum, NEG(MAX(NEG a, NEG b)), and of its chains, as
VMINSS/VMINPS. A mixin of X86Selector (through X86Vec, kcc/isel/x86/vec.py).

MAX(x, y) = x < y ? y : x, so NEG(MAX(NEG a, NEG b)) is (-a < -b) ? b : a, and -a < -b holds
exactly when b < a (negation reverses the order of every non-NaN value, ±0 compare equal
either way, a NaN compares false both ways): (b < a) ? b : a, which is `vminps dst, b, a` (SDM
MINPS: the first source where it is less, else the second, NaN and equal zeros included).
The chosen operand's bits are a's or b's, as the two sign flips leave them.

A minimum over more elements is a chain, min_nan's r_8_4:
NEG(MAX(MAX(MAX(NEG a, NEG b), NEG c), NEG d)). An inner MAX(NEG a, NEG b) is
NEG(vmin(b, a)) by the same argument (its sign flipped, bit for bit), so it is itself the NEG
of a value and the MAX above it is one more VMIN: the whole chain is three VMINs and no XOR
(clang folds it so), where the rule for one level left three XORs of a -0.0 around VMAXes.
An inner MAX joins only where the MAX above it is its one reader (its value is not needed).
Not for integers: NEG wraps at the minimum (-MIN = MIN). The NEGs and MAXes, selected
already, go (dce) where nothing else reads them.

A minimum also comes as a select, WHERE(a < b, a, b) (exp2's upper clamp,
kcc/passes/transcendental.py, has it in every kernel that calls exp2): that is
`vminps dst, a, b` itself (the first source where it is less, else the second: NaN and equal
zeros give b, as the select does), one instruction where the compare and blend were two.
"""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir import UOp, dtypes
from kcc.ir.ops import Ops
from kcc.ir.dtype import DType
from kcc.ir.mir import VReg
from kcc.isel.x86.base import fs, vw


def _vmin_form(dt: DType, lanes: int) -> str | None:
    """The VMINPS/PD (lanes > 1) or VMINSS/SD form of lanes of dt, register or memory second
    source; None for another dtype or a width the target's rows lack (a zmm on x86-64-v3)."""
    if dt not in (dtypes.float32, dtypes.float64):
        return None
    w = vw(dt, lanes)
    form = f"vminp{fs(dt)}_{w}_{w}_{w}m" if lanes > 1 else f"vmins{fs(dt)}_x_x_xm{dt.bits}"
    return form if form in FORMS else None


class X86FMin:
    """The float-minimum rules (mixed into X86Selector)."""

    def fmin_where(self, dt: DType, lanes: int, a: UOp, b: UOp) -> VReg | None:
        """WHERE(a < b, a, b) on float32/float64 lanes as one VMIN (module docstring); None
        where the width has no form (a zmm on x86-64-v3 keeps the compare and blend)."""
        form = _vmin_form(dt, lanes)
        if form is None:
            return None
        t = self.new("vec")
        self.emit(form, t, self.reg(a), self.reg(b))
        return t

    def neg_max_neg(self, u: UOp, dt: DType, lanes: int) -> VReg | None:
        """u = NEG(MAX(x, y)) on float32/float64 lanes where x and y are each a NEG or a
        MAX of the same kind read only here, as VMINs (see the module docstring); else None."""
        if u.op is not Ops.NEG or dt not in (dtypes.float32, dtypes.float64):
            return None
        mx = u.src[0]
        if mx.op is not Ops.MAX:
            return None
        form = _vmin_form(dt, lanes)
        if form is None:
            return None
        order: list[UOp] = []            # the chain's MAXes, each after the MAXes it reads
        stack: list[tuple[UOp, bool]] = [(mx, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            stack.append((n, True))
            for x in n.src:
                if x.op is Ops.NEG:
                    continue
                if x.op is not Ops.MAX or self.nusers[x] != 1 or x.dtype != dt \
                        or x.shape != u.shape:
                    return None
                stack.append((x, False))
        got: dict[UOp, VReg] = {}

        def neg_of(x: UOp) -> VReg:
            """The register holding -x: the NEG's operand, or an inner MAX's VMIN."""
            return self.reg(x.src[0]) if x.op is Ops.NEG else got[x]

        for n in order:
            t = self.new("vec")
            self.emit(form, t, neg_of(n.src[1]), neg_of(n.src[0]))
            got[n] = t
        return got[mx]
