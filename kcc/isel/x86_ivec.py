"""x86 selection of int32/uint32 vectors (4 lanes in xmm, 8 in ymm; AVX2): arithmetic,
bitwise ops, shifts, MAX, compares as lane masks, loads/stores, STACK and lane access.
A mixin of X86Selector (kcc/isel/x86.py). The ops listed in INT_VECTOR_OPS are the ones the
x86 TargetDesc declares legal on such vectors; devectorize splits every other one.
"""

from __future__ import annotations

from kcc.ir import Ops, UOp, dtypes
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86_base import SelectError, const_bytes, strong_const, vw

INT_VECTOR_DTYPES = (dtypes.int32, dtypes.uint32)
INT_VECTOR_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.AND, Ops.OR, Ops.XOR, Ops.NEG,
                            Ops.MAX, Ops.SHL, Ops.SHR, Ops.MULACC, Ops.CMPLT, Ops.CMPEQ,
                            Ops.CMPNE, Ops.WHERE})
# one AVX2 form per op (SDM Vol. 2: PADDD, PSUBD, PMULLD, PAND, POR, PXOR, PSLLVD/PSRLVD/PSRAVD,
# PMAXSD/PMAXUD); the signed/unsigned choice is made where it matters
_THREE = {Ops.ADD: "vpaddd", Ops.SUB: "vpsubd", Ops.MUL: "vpmulld", Ops.AND: "vpand",
          Ops.OR: "vpor", Ops.XOR: "vpxor"}


def is_int_vector(u: UOp) -> bool:
    """u is a vector of int32/uint32 lanes (held in an xmm/ymm register)."""
    return bool(u.shape) and u.dtype in INT_VECTOR_DTYPES


class X86IVec:
    """int32/uint32 vector rules (mixed into X86Selector)."""

    def ivec_alu(self, u: UOp) -> VReg:
        """An ALU op on int32/uint32 vectors; compares give a 32-bit lane mask."""
        op = u.op
        x = u.src[0]
        dt, n = x.dtype, x.shape[0]
        w = vw(dt, n)
        three = f"_{w}_{w}_{w}m"
        a = self.reg(x)
        if op in _THREE:
            t = self.new("vec")
            self.emit(_THREE[op] + three, t, a, self.reg(u.src[1]))
            return t
        t = self.new("vec")
        if op is Ops.NEG:
            z = self.new("vec")
            self.emit("vzero", z)
            self.emit("vpsubd" + three, t, z, a)
        elif op is Ops.MAX:
            self.emit(("vpmaxsd" if dt.is_signed else "vpmaxud") + three, t, a,
                      self.reg(u.src[1]))
        elif op is Ops.SHL:
            self.emit("vpsllvd" + three, t, a, self.ivec_amount(u.src[1]))
        elif op is Ops.SHR:
            self.emit(("vpsravd" if dt.is_signed else "vpsrlvd") + three, t, a,
                      self.ivec_amount(u.src[1]))
        elif op is Ops.MULACC:
            p = self.new("vec")
            self.emit("vpmulld" + three, p, a, self.reg(u.src[1]))
            self.emit("vpaddd" + three, t, p, self.reg(u.src[2]))
        elif op is Ops.CMPEQ:
            self.emit("vpcmpeqd" + three, t, a, self.reg(u.src[1]))
        elif op is Ops.CMPNE:
            eq, ones = self.new("vec"), self.new("vec")
            self.emit("vpcmpeqd" + three, eq, a, self.reg(u.src[1]))
            self.emit("vpcmpeqd" + three, ones, a, a)          # all ones
            self.emit("vpxor" + three, t, eq, ones)
        elif op is Ops.CMPLT:
            b = self.reg(u.src[1])
            if not dt.is_signed:
                # unsigned a < b is signed (a ^ 2^31) < (b ^ 2^31)
                bias = self.ivec_splat_const(1 << 31, dt, n)
                a2, b2 = self.new("vec"), self.new("vec")
                self.emit("vpxor" + three, a2, a, bias)
                self.emit("vpxor" + three, b2, b, bias)
                a, b = a2, b2
            self.emit("vpcmpgtd" + three, t, b, a)           # PCMPGTD: b > a
        else:
            raise SelectError(f"{op.name} on vectors of {dt} has no x86 rule")
        return t

    def ivec_amount(self, b: UOp) -> VReg:
        """A shift-amount vector as 32-bit lanes (amounts of another integer dtype arrive as
        a STACK of scalars after devectorize; each lane is extended to 32 bits)."""
        if is_int_vector(b):
            return self.reg(b)
        if b.op is not Ops.STACK:
            raise SelectError(f"a vector shift amount of {b.dtype} has no x86 rule")
        return self.ivec_from([self.ext(x, 32) for x in b.src])

    def ivec_splat_const(self, c: int, dt: DType, n: int) -> VReg:
        """A vector of n lanes all holding the constant c (from .rodata)."""
        t = self.new("vec")
        w = vw(dt, n)
        self.emit(f"vmovdqu_{w}_{w}m", t, Mem(),
                  arg={"rip": self.pool.label(const_bytes(c, dt) * n)})
        return t

    def ivec_stack(self, u: UOp) -> VReg:
        """A STACK of int32/uint32 scalars: constants, a broadcast, or lane inserts."""
        dt, n = u.dtype, u.shape[0]
        w = vw(dt, n)
        consts = [strong_const(s) for s in u.src]
        t = self.new("vec")
        if all(c is not None for c in consts):
            data = b"".join(const_bytes(c, dt) for c in consts)
            self.emit(f"vmovdqu_{w}_{w}m", t, Mem(), arg={"rip": self.pool.label(data)})
        elif all(s is u.src[0] for s in u.src):
            x = self.new("vec")
            self.emit("vmovd_x_rm32", x, self.reg(u.src[0]))
            self.emit(f"vpbroadcastd_{w}_xm32", t, x)
        else:
            return self.ivec_from([self.reg(x) for x in u.src])
        return t

    def ivec_from(self, regs: list[VReg]) -> VReg:
        """An int32 vector from 4 or 8 GPRs: vmovd + vpinsrd per 128-bit half, vinserti128."""
        halves = []
        for h in range(0, len(regs), 4):
            acc = self.new("vec")
            self.emit("vmovd_x_rm32", acc, regs[h])
            for k, r in enumerate(regs[h + 1:h + 4], 1):
                t = self.new("vec")
                self.emit("vpinsrd_x_x_rm32_imm8", t, acc, r, k)
                acc = t
            halves.append(acc)
        if len(halves) == 1:
            return halves[0]
        y = self.new("vec")
        self.emit("vinserti128_y_y_xm_imm8", y, halves[0], halves[1], 1)
        return y

    def ivec_lane(self, v: VReg, n: int, k: int) -> VReg:
        """Lane k of an int32 vector, in a GPR (vextracti128 for the high half, vpextrd)."""
        src = v
        if n == 8 and k >= 4:
            hi = self.new("vec")
            self.emit("vextracti128_xm_y_imm8", hi, v, 1)
            src, k = hi, k - 4
        t = self.new("gpr")
        self.emit("vpextrd_rm32_x_imm8", t, src, k)
        return t
