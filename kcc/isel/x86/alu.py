"""x86 selection of integer/bool ALU ops, compares and WHERE (the scalar casts: cast.py).
A mixin of X86Selector (kcc/isel/x86/select.py)."""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir import UOp, dtypes
from kcc.ir.ops import Ops
from kcc.ir.mir import Mem, RegOp, Role, VReg
from kcc.isel.x86.base import (HIGH_ONLY, SelectError, fs, imm_form, isz,
                               positive_zero, strong_const, vw)
from kcc.isel.x86.ivec import is_int_vector
from kcc.isel.x86.regs import RAX, RDX, reg_class

# float16/bfloat16 bit patterns in GPRs: their compares were lifted to float32 (decompose)
_HALF_BITS = (dtypes.float16, dtypes.bfloat16)


class X86Alu:
    """Integer ALU, compare and WHERE rules (mixed into X86Selector)."""

    # -- ALU ----------------------------------------------------------------------------------
    def sel_alu(self, u: UOp) -> None:
        """Dispatch an ALU op by the class of its operands: vector registers or GPRs."""
        if self.evex and u.dtype.is_bool and u.shape and u.shape[0] > 1 \
                and self.kbool(u) is not None:
            # x86-64-v4: the bool vector as an opmask, which WHEREs and lane reads take
            # (x86_kmask); its lane-mask vector only where something else reads it (reg)
            self.lazy_masks.add(u)
            return
        self.sel_alu_value(u)

    def sel_alu_value(self, u: UOp) -> None:
        """An ALU op's value, by the class of its operands: vector registers or GPRs."""
        op = u.op
        operand = u.src[1] if op is Ops.WHERE else u.src[0]
        dt = operand.dtype
        if op is not Ops.WHERE and is_int_vector(operand):
            t = self.complement_min(u)      # XOR(MAX(XOR(x, ~0), c), ~0): VPMIN (x86_idioms)
            self.val[u] = t if t is not None else self.ivec_alu(u)
        elif op in (Ops.AND, Ops.OR, Ops.XOR) and dt.is_bool and u.shape:
            self.val[u] = self.bool_vec(u, self.mask_width(u))   # a lane mask (x86_vec)
        elif op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
            self.val[u] = (self.fcompare(u) if reg_class(dt) == "vec" else self.icompare(u))
        elif op is Ops.WHERE:
            self.val[u] = self.where(u)
        elif reg_class(dt) == "vec":
            self.val[u] = self.falu(u)
        else:
            self.val[u] = self.ialu(u)

    def ialu(self, u: UOp) -> VReg:
        """Integer and bool ALU in general-purpose registers."""
        op, dt = u.op, u.dtype
        if u.shape:
            raise SelectError(f"vector {op.name} on {dt} is not legal on x86 (devectorize)")
        w = isz(dt)
        if op in (Ops.OR, Ops.AND) and dt.is_bool:
            t = self.lane_test(u)       # any/all of one vector's compares (x86_vec)
            if t is not None:
                return t
        if self.evex and dt.is_bool and (k := self.klane_logic(u)) is not None:
            return k                             # lane j of two opmasks' KAND/KOR/KXOR
        if op is Ops.AND and self.range_check(u) is not None:
            t = self.new("gpr")                  # 0 <= x < n: one unsigned compare
            self.emit(f"set{self.int_flags(u)}_rm8", t)
            return t
        two = {Ops.ADD: "add", Ops.SUB: "sub", Ops.AND: "and", Ops.OR: "or", Ops.XOR: "xor"}
        if op in two:
            t = self.copy(self.reg(u.src[0]), dt)
            c = self.imm(u.src[1])
            if c is not None:
                self.emit(imm_form(two[op], w, c), t, c)
            else:
                self.emit(f"{two[op]}_r{w}_rm{w}", t, self.reg(u.src[1]))
            return t
        if op is Ops.MUL:
            t = self.new("gpr")
            c = self.imm(u.src[1])
            if c is not None and c > 1 and c & (c - 1) == 0:
                t = self.copy(self.reg(u.src[0]), dt)       # * 2^k: a shift (1-cycle)
                self.emit(f"shl_rm{w}_imm8", t, c.bit_length() - 1)
            elif c in (3, 5, 9) and w in ("32", "64"):
                # x + x*(c-1): one 2-component LEA (1 cycle, ports 1 and 5) where IMUL takes
                # 3 cycles on port 1, which a division by a constant's MULHI also needs
                # (idiv_i64's x % 5); the low w bits of the address are the product's
                x = self.reg(u.src[0])
                self.emit(f"lea_r{w}_m", t, Mem(x, x, c - 1, 0))
            elif c is not None:
                form = f"imul_r{w}_rm{w}_imm{8 if -128 <= c <= 127 else 32}"
                self.emit(form, t, self.reg(u.src[0]), c)
            else:
                t = self.copy(self.reg(u.src[0]), dt)
                self.emit(f"imul_r{w}_rm{w}", t, self.reg(u.src[1]))
            return t
        if op is Ops.MULACC:
            return self.mulacc(u, w)
        if op is Ops.NEG:
            t = self.copy(self.reg(u.src[0]), dt)
            self.emit(f"neg_rm{w}", t)
            return t
        if op in (Ops.SHL, Ops.SHR):
            return self.shift(u)
        if op in (Ops.CDIV, Ops.CMOD):
            return self.divide(u)
        if op is Ops.MULHI:
            return self.mulhi(u)
        if op is Ops.MAX:
            # a < b ? b : a with the flags of one compare
            a, b = self.ext(u.src[0], int(w)), self.ext(u.src[1], int(w))
            t = self.copy(a, dt)
            self.emit(f"cmp_r{w}_rm{w}", a, b)
            cc = "l" if dt.is_signed else "b"
            self.emit(f"cmov{cc}_r{w}_rm{w}", t, b)
            return t
        raise SelectError(f"{op.name} on {dt} has no x86 rule (it should be decomposed)")

    def mulacc(self, u: UOp, w: str) -> VReg:
        """a*b + c on GPRs. tinygrad's upcast indices are `i*k + j` with constant k and j: with
        k in 1, 2, 3, 4, 5, 8, 9 one LEA computes it (no flags, no constant in a register);
        else IMUL by an immediate, then ADD of an immediate. With j in a register, k in 1, 2, 4,
        8 is one LEA `[j + a*k]`, else IMUL then LEA. LEA r32 keeps the low 32 bits of
        the 64-bit address sum (SDM Vol. 2A "LEA": operand size 32, address size 64), which is
        the int32 wrap of the product and sum, zero-extended as every 32-bit op's result."""
        a, k, j = u.src
        c, d = self.imm(k), self.imm(j)
        if c is not None and d is not None:
            x = self.reg(a)
            mem = {1: Mem(x, None, 1, d), 2: Mem(x, x, 1, d), 4: Mem(None, x, 4, d),
                   8: Mem(None, x, 8, d), 3: Mem(x, x, 2, d), 5: Mem(x, x, 4, d),
                   9: Mem(x, x, 8, d)}.get(c)
            if mem is not None:
                t = self.new("gpr")
                self.emit(f"lea_r{w}_m", t, mem)
                return t
        if c in (1, 2, 4, 8) and d is None and w in ("32", "64"):
            t = self.new("gpr")                 # j + a*c: one LEA (scale 1, 2, 4, 8)
            self.emit(f"lea_r{w}_m", t, Mem(self.reg(j), self.reg(a), c, 0))
            return t
        if c is not None:
            t = self.new("gpr")
            self.emit(f"imul_r{w}_rm{w}_imm{8 if -128 <= c <= 127 else 32}", t, self.reg(a), c)
        else:
            t = self.copy(self.reg(a), u.dtype)
            self.emit(f"imul_r{w}_rm{w}", t, self.reg(k))
        if d is not None:
            if d:                               # (a zero addend: the product alone)
                self.emit(imm_form("add", w, d), t, d)
        elif w in ("32", "64"):
            # the product stays in its own register and LEA adds j into a new one: a product
            # invariant in the loop (a row's `row * M` where j is the column) then leaves it
            # (kcc/isel/licm.py), where ADD in place kept it there
            s = self.new("gpr")
            self.emit(f"lea_r{w}_m", s, Mem(t, self.reg(j), 1, 0))
            return s
        else:
            self.emit(f"add_r{w}_rm{w}", t, self.reg(j))
        return t

    def shift(self, u: UOp) -> VReg:
        """SHL/SHR: logical for unsigned, arithmetic right shift for signed dtypes."""
        dt = u.dtype
        w = isz(dt)
        mnem = "shl" if u.op is Ops.SHL else ("sar" if dt.is_signed else "shr")
        src = self.reg(u.src[0]) if u.op is Ops.SHL else self.ext(u.src[0], int(w))
        t = self.copy(src, dt)
        c = self.imm(u.src[1])
        if c is not None:
            self.emit(f"{mnem}_rm{w}_imm8", t, c & 0xFF)
        else:
            self.emit(f"{mnem}_rm{w}_cl", t, self.reg(u.src[1]))
        return t

    def mulhi(self, u: UOp) -> VReg:
        """MULHI: 64-bit by the one-operand MUL/IMUL (rdx:rax = rax * r/m64, SDM "MUL",
        "IMUL"), narrower by a 64-bit IMUL of the extended operands and a shift by the width."""
        dt = u.dtype
        if dt == dtypes.uint64:
            return self.mulhi_mulx(u)
        if dt.itemsize == 8:
            lo, hi, dead = self.copy(self.reg(u.src[0]), dt), self.new("gpr"), self.new("gpr")
            self.emit("imul_rm64" if dt.is_signed else "mul_rm64", self.reg(u.src[1]),
                      extra=(RegOp(lo, Role.USE, fixed=RAX), RegOp(dead, Role.DEF, fixed=RAX),
                             RegOp(hi, Role.DEF, fixed=RDX)))
            return hi
        c = strong_const(u.src[1])
        if c is not None and -(1 << 31) <= int(c) < (1 << 31):     # the extended value
            t = self.new("gpr")
            self.emit("imul_r64_rm64_imm32", t, self.ext(u.src[0], 64), int(c))
        else:
            t = self.copy(self.ext(u.src[0], 64), dt)
            self.emit("imul_r64_rm64", t, self.ext(u.src[1], 64))
        self.emit(f"{'sar' if dt.is_signed else 'shr'}_rm64_imm8", t, dt.bits)
        return t

    def mulhi_mulx(self, u: UOp) -> VReg:
        """MULHI of uint64 by BMI2's MULX (x86-64-v3 and up): rdx is only read, so the dividend
        stays where it is (no copy into rax as MUL needs) and the high half goes to any
        register (u64_div's E_50: one instruction fewer per element, as clang's). The
        dividend's later users (the round-up's x - hi) read it from rdx after the MULX, as a
        value the MULX defines there: else the allocator copies it into rdx, a live value
        kept elsewhere; restored when the loop closes (select.py kept). The low half is never
        read: arg HIGH_ONLY has the encoder name the high half's register for both results
        (kcc/targets/x86/code.py), as clang does."""
        x = u.src[0]
        hi, dead, again = self.new("gpr"), self.new("gpr"), self.new("gpr")
        old = self.reg(x)
        self.emit("mulx_r64_r64_rm64", hi, dead, self.reg(u.src[1]),
                  extra=(RegOp(old, Role.USE, fixed=RDX), RegOp(again, Role.DEF, fixed=RDX)),
                  arg=HIGH_ONLY)
        if old in self.zext:
            self.zext.add(again)
        self.val[x] = again
        self.kept.append((x, old, len(self.loops)))
        return hi

    def divide(self, u: UOp) -> VReg:
        """CDIV/CMOD: idiv/div with the dividend in rdx:rax (SDM IDIV), truncating."""
        dt = u.dtype
        w = isz(dt)
        c = strong_const(u.src[1])
        if c is not None and int(c) > 1 and int(c) & (int(c) - 1) == 0:
            return self.divide_pow2(u, int(c).bit_length() - 1)
        a, b = self.ext(u.src[0], int(w)), self.ext(u.src[1], int(w))
        minus1 = None
        if c is None or int(c) in (0, -1):
            # idiv traps on a zero divisor and on INT_MIN / -1; the semantics make those
            # results unspecified but never a trap (WHERE evaluates both arms). Divide by 1
            # instead, and for -1 negate the quotient (wrapping: INT_MIN / -1 = INT_MIN).
            one = self.materialize(1, dt)
            safe = self.copy(b, dt)
            self.emit(f"test_rm{w}_r{w}", b, b)
            self.emit(f"cmove_r{w}_rm{w}", safe, one)
            if dt.is_signed:
                self.emit(f"cmp_rm{w}_imm8", b, -1)
                if u.op is Ops.CDIV:
                    minus1 = self.new("gpr")
                    self.emit("sete_rm8", minus1)
                self.emit(f"cmove_r{w}_rm{w}", safe, one)
            b = safe
        lo, hi = self.copy(a, dt), self.new("gpr")
        if dt.is_signed:
            self.emit("cqo" if w == "64" else "cdq",
                      extra=(RegOp(hi, Role.DEF, fixed=RDX), RegOp(lo, Role.USE, fixed=RAX)))
        else:
            self.emit("mov_r32_imm32", hi, 0)
        q, r = self.new("gpr"), self.new("gpr")
        self.emit(f"{'idiv' if dt.is_signed else 'div'}_rm{w}", b,
                  extra=(RegOp(lo, Role.USE, fixed=RAX), RegOp(hi, Role.USE, fixed=RDX),
                         RegOp(q, Role.DEF, fixed=RAX), RegOp(r, Role.DEF, fixed=RDX)))
        if u.op is Ops.CMOD:
            return r
        if minus1 is not None:
            neg = self.copy(q, dt)
            self.emit(f"neg_rm{w}", neg)
            self.emit("test_rm8_r8", minus1, minus1)
            self.emit(f"cmovne_r{w}_rm{w}", q, neg)
        return q

    def divide_pow2(self, u: UOp, k: int) -> VReg:
        """CDIV/CMOD by 2^k without a division: a shift/mask, with the truncation bias
        (2^k - 1 added to a negative dividend) when the dividend may be negative."""
        dt = u.dtype
        w = isz(dt)
        bits = 64 if w == "64" else 32
        x = self.ext(u.src[0], bits)
        r = self.ranges.get(u.src[0])
        if not dt.is_signed or (r is not None and r[0] >= 0):
            t = self.copy(x, dt)
            if u.op is Ops.CDIV:
                self.emit(f"shr_rm{w}_imm8", t, k)
            elif k < 32:
                self.emit(imm_form("and", w, (1 << k) - 1), t, (1 << k) - 1)
            else:       # the mask is no sign-extended imm32 (SDM "AND"): from a register
                self.emit("and_r64_rm64", t, self.materialize((1 << k) - 1, dt))
            return t
        # bias = (x >> (bits-1)) >>> (bits-k): 2^k - 1 for negative x, else 0
        bias = self.copy(x, dt)
        self.emit(f"sar_rm{w}_imm8", bias, bits - 1)
        self.emit(f"shr_rm{w}_imm8", bias, bits - k)
        q = self.copy(x, dt)
        self.emit(f"add_r{w}_rm{w}", q, bias)
        self.emit(f"sar_rm{w}_imm8", q, k)
        if u.op is Ops.CDIV:
            return q
        m = self.copy(q, dt)                     # x - (q << k)
        self.emit(f"shl_rm{w}_imm8", m, k)
        t = self.copy(x, dt)
        self.emit(f"sub_r{w}_rm{w}", t, m)
        return t

    def icompare(self, u: UOp) -> VReg:
        """Integer/bool compare: cmp on extended operands, then setcc into a bool."""
        cc = self.cmp_flags(u)
        t = self.new("gpr")
        self.emit(f"set{cc}_rm8", t)
        return t

    def cmp_flags(self, u: UOp) -> str:
        """CMP of the integer compare u's extended operands; returns the condition code that
        reads u's value from the flags (for SETcc or CMOVcc); a constant on the left becomes
        the immediate, the condition swapped."""
        cc = self.any_lanes_flags(u)     # x != 0 of an OR lane tree: VPTEST (x86_anylanes)
        if cc is not None:
            return cc
        a_u, b_u = u.src
        dt = a_u.dtype
        w = isz(dt)
        cc = {Ops.CMPNE: "ne", Ops.CMPEQ: "e",
              Ops.CMPLT: "l" if dt.is_signed else "b"}[u.op]
        c = self.imm(b_u)
        if c is None and dt.itemsize >= 4 and (c := self.imm(a_u)) is not None:
            # a constant on the left (tinygrad's `254 < i`, a padding gate): `cmp b, imm`
            # with the swapped condition (c < b is b > c: SETG/SETA, SDM Vol. 1 B.1), not
            # the constant moved into a register first
            a_u, b_u = b_u, a_u
            cc = {"l": "g", "b": "a"}.get(cc, cc)
        a = self.ext(a_u, int(w))
        if c is not None and dt.itemsize >= 4:
            self.emit(imm_form("cmp", w, c), a, c)
        else:
            self.emit(f"cmp_r{w}_rm{w}", a, self.ext(b_u, int(w)))
        return cc

    def range_check(self, c: UOp) -> tuple[UOp, int] | None:
        """(x, n) when the scalar bool c is ``(-1 < x) & (x < n)`` for a signed integer x of
        at least 32 bits and a constant 0 <= n < 2^31 (a gather's or a padding's index gate):
        that is 0 <= x < n, which one unsigned compare reads: x as unsigned is below n exactly
        then, a negative x being 2^31 or more (SDM Vol. 1 §7.3.2.4, CMP then JB/SETB)."""
        if c.op is not Ops.AND or c.shape or len(c.src) != 2:
            return None
        a, b = c.src
        if b.op is Ops.CMPLT and self.imm(b.src[0]) == -1:
            a, b = b, a
        if a.op is not Ops.CMPLT or b.op is not Ops.CMPLT or self.imm(a.src[0]) != -1:
            return None
        x, n = a.src[1], self.imm(b.src[1])
        if b.src[0] is not x or n is None or not 0 <= n < 2 ** 31 or not x.dtype.is_signed \
                or x.dtype.itemsize < 4 or reg_class(x.dtype) != "gpr":
            return None
        return x, n

    def int_flags(self, c: UOp) -> str | None:
        """Flags for the integer compare c, set right here for a CMOVcc that reads them (no
        SETcc and TEST of its bool): x != 0 and x == 0 are TEST x, x; (x AND k) != 0 with k
        an immediate is TEST x, k (SDM Vol. 2B "TEST": ZF from the AND, nothing written); any
        other is cmp_flags' CMP. Returns the condition code, or None for another kind of c.
        The bool c is still selected where it stands; kcc/isel/dce.py drops it if unread."""
        rc = self.range_check(c)
        if rc is not None:
            w = isz(rc[0].dtype)
            self.emit(imm_form("cmp", w, rc[1]), self.ext(rc[0], int(w)), rc[1])
            return "b"
        if c.op not in (Ops.CMPNE, Ops.CMPEQ, Ops.CMPLT) or c.shape \
                or reg_class(c.src[0].dtype) != "gpr" or c.src[0].dtype in _HALF_BITS:
            return None
        if (cc := self.any_lanes_flags(c)) is not None:
            return cc
        a_u, b_u = c.src
        dt = a_u.dtype
        if self.imm(b_u) == 0 and c.op is not Ops.CMPLT:
            w = isz(dt)
            m = self.imm(a_u.src[1]) if a_u.op is Ops.AND else None
            if m is not None and dt.itemsize == 4 and 0 <= m < 2 ** 31:
                x = self.reg(a_u.src[0])       # bits 31..0 are the value: AND reads no more
                self.emit("test_rm32_imm32", x, m)
            else:
                x = self.ext(a_u, int(w))
                self.emit(f"test_rm{w}_r{w}", x, x)
            return "ne" if c.op is Ops.CMPNE else "e"
        return self.cmp_flags(c)

    def where(self, u: UOp) -> VReg:
        """WHERE: cmov for GPR values; vblendv for float values (mask from the compare)."""
        c, a, b = u.src
        dt = u.dtype
        if dt == dtypes.float16 and u.shape:
            return self.half_where(u)           # bits, as uint16 lanes (x86_half)
        if reg_class(dt) == "gpr" and not u.shape:
            return self.int_where(u)
        lanes = u.shape[0] if u.shape else 1
        if c.op is Ops.CMPLT and a is c.src[1] and b is c.src[0] and c.src[0].dtype == dt \
                and reg_class(dt) == "vec":
            # WHERE(a < b, b, a) is MAX(a, b) exactly (docs/semantics.md defines MAX so): one
            # vmaxps/pd instead of a compare and a blend (tinygrad writes max this way)
            return self.fop(Ops.MAX, dt, lanes, [self.reg(b), self.reg(a)])
        if c.op is Ops.CMPLT and a is c.src[0] and b is c.src[1] and c.src[0].dtype == dt \
                and reg_class(dt) == "vec" and (t := self.fmin_where(dt, lanes, a, b)):
            return t                        # WHERE(a < b, a, b): one vminps/pd
        t = self.ivec_minmax(u) if is_int_vector(u) else None
        if t is not None:
            return t                        # WHERE(x < y, y, x): VPMAX/VPMIN (x86_ivec)
        if (t := self.where_lane_mask(u)) is not None:
            return t                        # WHERE(compare, ~0, 0): its lane mask (x86_kmask)
        compare = c.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
        # (a WHERE read only as splats keeps the AND form below: x86_shuf.gated_splat then
        # broadcasts its load from memory)
        if self.evex and lanes == 1 and u not in self.splat_only:
            t = self.kwhere_scalar(u)
            if t is not None:
                return t
        if self.evex and lanes > 1 and u not in self.splat_only:
            # x86-64-v4: the bool vector's opmask (selected with it, sel_alu) and one masked
            # blend or zero-masked move (zmm whole, every operand may be xmm16-31); the
            # vector-mask form is dead unless something else reads it (kcc/isel/dce.py)
            k = self.kbool(c)
            t = self.kwhere(u, k) if k is not None else None
            if t is not None:
                return t
        if compare and c.shape and c.src[0].dtype.itemsize == dt.itemsize:
            m = self.reg(c)                 # a vector compare is already a lane mask
        elif compare and not c.shape and reg_class(c.src[0].dtype) == "vec" \
                and c.src[0].dtype.itemsize == dt.itemsize:
            m = self.fmask(c)
        elif compare and c.shape:
            # a compare of lanes of another width (int64 x 4 selecting float32 x 4)
            m = self.mask_resize(self.reg(c), c.src[0].dtype.itemsize, dt, lanes)
        elif lanes > 1:
            m = self.bool_mask(c, dt, lanes)
        elif self.evex and u not in self.splat_only \
                and (t := self.kwhere_bool(u)) is not None:
            return t
        else:
            # bool 0/1 → all-ones mask in the low lane: movzx, neg, vmovq
            z = self.new("gpr")
            self.emit("movzx_r32_rm8", z, self.reg(c))
            self.emit("neg_rm64", z)
            m = self.new("vec")
            self.emit("vmovq_x_r64", m, z)
        if positive_zero(b, dt):
            # m ? a : +0.0 is a AND m (all-ones lanes keep a's bits, zero lanes give +0.0's):
            # one instruction and no zero register (a gated load's usual alt)
            w = vw(dt, lanes)
            form = f"vandp{fs(dt)}_{w}_{w}_{w}m"
            if form in FORMS:
                t = self.new("vec")
                # the mask (often hoisted out of the loop, then spilled) in the r/m operand,
                # where the allocator can read it from its slot without a reload
                self.emit(form, t, self.reg(a), m)
                uniform = lanes > 1 and c.op is Ops.STACK and all(s is c.src[0] for s in c.src)
                if a.op is Ops.LOAD and (lanes == 1 or uniform):
                    # a gated load: a splat of it may AND a broadcast from memory instead
                    # (x86_shuf.gated_splat); the scalar mask's lane 0 is the gate's
                    self.gated[u] = (a, m, uniform)
                return t
        return self.blend(dt, lanes, self.reg(b), self.reg(a), m)
