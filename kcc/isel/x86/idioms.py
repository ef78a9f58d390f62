"""Small x86 selection idioms: a scalar integer WHERE in general-purpose registers (a CMOVcc
on the compare's own flags, or a bool times a constant), MIN of integer lanes written as a
complemented MAX. A mixin of X86Selector
(kcc/isel/x86/select.py), beside x86_alu's other WHERE rules and x86_ivec's lane ALU."""

from __future__ import annotations

from kcc.ir import Ops, UOp
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86.base import NOT_CC, isz, strong_const, vw
from kcc.isel.x86.ivec import uniform_const

_COMPARES = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
# c ? k : 0 from the bool's 0/1 by one LEA or shift: k → (shift, LEA scale)
_SCALE = {1: (0, 0), 2: (1, 0), 4: (2, 0), 8: (3, 0), 3: (0, 2), 5: (0, 4), 9: (0, 8)}


class X86Idioms:
    """Scalar GPR WHERE rules and complemented-MAX MIN (mixed into X86Selector)."""

    def int_where(self, u: UOp) -> VReg:
        """WHERE of GPR scalars: the constant-times-bool form when it applies, else a copy of
        one arm and a CMOVcc of the other on the compare's flags."""
        c, a, b = u.src
        dt = u.dtype
        w = isz(dt)
        t = self.bool_times_const(u)
        if t is not None:
            return t
        # a constant arm (a safe index's 0) is the CMOVcc source, the other arm the copy the
        # result takes its register from (its last use: the copy coalesces away)
        flip = strong_const(b) is not None and strong_const(a) is None
        yes = self.reg(b if flip else a)
        t = self.copy(self.reg(a if flip else b), dt)
        cc = self.int_flags(c)          # the compare's own flags, when c is one
        if cc is None:
            cc = self.klane_flags(c)    # a lane of an opmask: TEST of its bit (x86_kmask)
        if cc is None:
            g = self.reg(c)
            self.emit("test_rm8_r8", g, g)
            cc = "ne"
        self.emit(f"cmov{NOT_CC[cc] if flip else cc}_r{w}_rm{w}", t, yes)
        return t

    def bool_times_const(self, u: UOp) -> VReg | None:
        """WHERE(c, k, 0) for a bool c that is no single compare (`(x % 5 != 0) & (x < 0)`,
        tinygrad's floor-division fix-up) and k in 1, 2, 3, 4, 5, 8, 9: MOVZX of c's 0/1 and
        one shift or LEA (k = 1 + s, s in 2, 4, 8), not two constants, a copy, a TEST and a
        CMOVcc. A compare keeps the CMOVcc on its own flags (no SETcc)."""
        c, a, b = u.src
        k, z = strong_const(a), strong_const(b)
        if k is None or z is None or int(z) != 0 or isinstance(k, float) \
                or int(k) not in _SCALE or c.op in _COMPARES or self.range_check(c) is not None:
            return None
        shift, scale = _SCALE[int(k)]
        t = self.new("gpr")
        self.emit("movzx_r32_rm8", t, self.reg(c))      # bits 63:32 zeroed too (SDM §3.4.1.1)
        self.zext.add(t)
        if shift:
            self.emit("shl_rm32_imm8", t, shift)
        elif scale:
            r = self.new("gpr")
            self.emit("lea_r32_m", r, Mem(t, t, scale))
            self.zext.add(r)
            return r
        return t

    def complement_min(self, u: UOp) -> VReg | None:
        """XOR(MAX(XOR(x, ~0), c), ~0) on integer lanes (tinygrad's minimum: -max(-x, -c) in
        bits) as one VPMINS/U B/W/D of x and the constant ~c: NOT reverses the order of
        signed and of unsigned lanes alike, so max(~x, c) = ~min(x, ~c) exactly; None for
        another op (or lanes past a ymm, which VPMIN's VEX forms do not take)."""
        if u.op is not Ops.XOR or len(u.src) != 2:
            return None
        dt, n = u.dtype, u.shape[0]
        mask = (1 << dt.bits) - 1
        if dt.itemsize > 4 or dt.itemsize * n > 32 or not dt.is_int:
            return None
        m = _complemented(u, mask)
        if m is None or m.op is not Ops.MAX or m.dtype != dt:
            return None
        a, b = m.src
        c = uniform_const(b)
        if c is None:
            a, c = b, uniform_const(a)
        x = _complemented(a, mask) if c is not None else None
        if x is None:
            return None
        w = vw(dt, n)
        t = self.new("vec")
        self.emit(f"vpmin{'s' if dt.is_signed else 'u'}{'bwd'[dt.itemsize // 2]}"
                  f"_{w}_{w}_{w}m", t, self.reg(x), self.ivec_splat_const(~c & mask, dt, n))
        return t


def _complemented(u: UOp, mask: int) -> UOp | None:
    """x when u is XOR(x, ~0) or XOR(~0, x) (every bit of the lanes set), else None."""
    if u.op is not Ops.XOR or len(u.src) != 2:
        return None
    a, b = u.src
    for x, k in ((a, b), (b, a)):
        c = uniform_const(k)
        if c is not None and c & mask == mask:
            return x
    return None
