"""x86 selection of integer/bool ALU ops, compares, WHERE and every scalar cast.
A mixin of X86Selector (kcc/isel/x86/select.py)."""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir import UOp, dtypes
from kcc.ir.ops import Ops
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, RegOp, Role, VReg
from kcc.isel.x86.base import (CMP_LT_OS, CMP_NEQ_UQ, SelectError, fs, imm_form, isz,
                               positive_zero, strong_const, vw)
from kcc.isel.x86.ivec import is_int_vector
from kcc.isel.x86.regs import RAX, RDX, reg_class

# float16/bfloat16 bit patterns in GPRs: their compares were lifted to float32 (decompose)
_HALF_BITS = (dtypes.float16, dtypes.bfloat16)


class X86Alu:
    """Integer ALU, WHERE and cast rules (mixed into X86Selector)."""

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

    # -- casts --------------------------------------------------------------------------------
    def sel_CAST(self, u: UOp) -> None:
        """Value conversion between any two dtypes (docs/semantics.md, CAST)."""
        x, dt = u.src[0], u.dtype
        if strong_const(u) is not None:
            return                      # a strong constant: materialized where used
        if u.shape:
            self.val[u] = self.vcast(u)
            return
        sd = x.dtype
        if sd == dt:
            self.val[u] = self.reg(x)
        elif dt.is_bool:
            self.val[u] = self.to_bool(x)
        elif reg_class(sd) == "vec" and reg_class(dt) == "vec":
            t = self.new("vec")
            form = "vcvtss2sd_x_x_xm32" if sd == dtypes.float32 else "vcvtsd2ss_x_x_xm64"
            self.emit(form, t, self.reg(x), self.reg(x))
            self.val[u] = t
        elif sd.is_float and dt.is_float:
            self.val[u] = self.half_cast(x, dt)
        elif sd.is_float:
            self.val[u] = self.from_float(x, dt)
        elif dt.is_float:
            self.val[u] = self.to_float(x, dt)
        else:
            self.val[u] = self.int_to_int(x, dt)

    def half_cast(self, x: UOp, dt: DType) -> VReg:
        """Casts among float16/bfloat16 and the other floats, through an exact float32."""
        f = self.to_f32(x) if reg_class(x.dtype) == "gpr" else self.reg(x)
        fd = dtypes.float32 if reg_class(x.dtype) == "gpr" else x.dtype
        if dt == dtypes.float64:
            t = self.new("vec")
            self.emit("vcvtss2sd_x_x_xm32", t, f, f)
            return t
        if dt == dtypes.float32:
            return f
        if fd == dtypes.float64:
            f = self.f64_to_f32_odd(f)
        return self.from_f32(f, dt)

    def f64_to_f32_odd(self, x: VReg) -> VReg:
        """float64 → float32 rounded to odd: truncate, then set the last bit if inexact.
        A float32 rounded to odd (24 bits ≥ 11 + 2) rounds once more to float16/bfloat16
        exactly as a single rounding of x would (Boldo & Melquiond, round-to-odd)."""
        t = self.new("vec")
        self.emit("vcvtsd2ss_x_x_xm64", t, x, x)            # nearest even
        back = self.new("vec")
        self.emit("vcvtss2sd_x_x_xm32", back, t, t)
        bits = self.new("gpr")
        self.emit("vmovd_rm32_x", bits, t)
        ne = self.new("vec")
        self.emit("vcmpsd_x_x_xm64_imm8", ne, back, x, CMP_NEQ_UQ)   # inexact (or NaN)
        # |v| is v AND 0x7FFF…F (the sign bit off; as a float64 that constant is a NaN, so it is
        # given as bytes): the largest finite float64 (0x7FEF…F) also cleared the exponent's
        # low bit, making |inf| 2^1023, so -1.8e308 rounded to odd as the NaN 0xFF800001
        absmask = self.new("vec")
        self.emit("vmovsd_x_m64", absmask, Mem(),
                  arg={"rip": self.pool.label(((1 << 63) - 1).to_bytes(8, "little"))})
        ab, ax = self.new("vec"), self.new("vec")
        self.emit("vandpd_x_x_xm", ab, back, absmask)
        self.emit("vandpd_x_x_xm", ax, x, absmask)
        gt = self.new("vec")
        self.emit("vcmpsd_x_x_xm64_imm8", gt, ax, ab, CMP_LT_OS)    # rounded away from zero
        down = self.new("gpr")
        self.emit("vmovd_rm32_x", down, gt)                 # -1 where |t| > |x|, else 0
        rz = self.copy(bits, dtypes.uint32)
        self.emit("add_r32_rm32", rz, down)                 # truncated: one ulp back
        self.emit("or_rm32_imm8", rz, 1)                    # sticky bit: round to odd
        inexact = self.new("gpr")
        self.emit("vmovd_rm32_x", inexact, ne)
        self.emit("test_rm32_r32", inexact, inexact)
        self.emit("cmovne_r32_rm32", bits, rz)
        out = self.new("vec")
        self.emit("vmovd_x_rm32", out, bits)
        return out

    def int_to_int(self, x: UOp, dt: DType) -> VReg:
        """Narrowing keeps the low bits (nothing to do); widening extends by the source sign."""
        if dt.itemsize <= x.dtype.itemsize:
            return self.reg(x)
        return self.ext(x, 64 if dt.itemsize == 8 else 32)

    def to_bool(self, x: UOp) -> VReg:
        """x != 0 (a NaN is true): a compare against zero."""
        sd = x.dtype
        t = self.new("gpr")
        if reg_class(sd) == "vec" or sd.name in ("float16", "bfloat16"):
            f = self.reg(x) if reg_class(sd) == "vec" else self.to_f32(x)
            fd = sd if reg_class(sd) == "vec" else dtypes.float32
            z = self.new("vec")
            self.emit("vzero", z)
            m = self.new("vec")
            self.emit(f"vcmps{fs(fd)}_x_x_xm{fd.bits}_imm8", m, f, z, CMP_NEQ_UQ)
            self.emit("vmovd_rm32_x", t, m)
            self.emit("and_rm32_imm8", t, 1)
            return t
        w = isz(sd)
        a = self.ext(x, int(w))
        self.emit(f"test_rm{w}_r{w}", a, a)
        self.emit("setne_rm8", t)
        return t

    def to_f32(self, x: UOp) -> VReg:
        """A float16/bfloat16 bit pattern (GPR) widened exactly to float32 (xmm)."""
        t = self.new("vec")
        v = self.reg(x)
        if x.dtype == dtypes.float16:
            # the bits in word 0 of an xmm: the one from_f32 rounded them in when there is one
            # (no GPR round trip), else moved there. Only word 0 is read (VCVTPH2PS converts
            # word k to lane k, SDM Vol. 2A; the scalar users read lane 0), so the GPR's bits
            # above 15 need no MOVZX
            h = self.half_xmm.get(v)
            if h is None:
                h = self.new("vec")
                self.emit("vmovd_x_rm32", h, v)
            self.emit("vcvtph2ps_x_xm64", t, h)     # F16C: exact widening
        else:
            bits = self.copy(v, dtypes.uint32)
            self.emit("shl_rm32_imm8", bits, 16)   # bfloat16 is the high half of a float32
            self.emit("vmovd_x_rm32", t, bits)     # (SHL drops the bits above 15)
        return t

    def from_f32(self, f: VReg, dt: DType) -> VReg:
        """A float32 rounded (nearest even) to a float16/bfloat16 bit pattern in a GPR."""
        t = self.new("gpr")
        if dt == dtypes.float16:
            h = self.new("vec")
            self.emit("vcvtps2ph_xm64_x_imm8", h, f, 0)   # imm8 0: round to nearest even
            self.emit("vmovd_rm32_x", t, h)
            self.half_xmm[t] = h        # to_f32 and STORE read the bits there (the MOV to
            return t                    # the GPR is then dead: kcc/isel/dce.py drops it)
        # bfloat16: (bits + 0x7fff + ((bits >> 16) & 1)) >> 16, NaN kept quiet (| 0x40).
        bits = self.new("gpr")
        self.emit("vmovd_rm32_x", bits, f)
        odd = self.copy(bits, dtypes.uint32)
        self.emit("shr_rm32_imm8", odd, 16)
        self.emit("and_rm32_imm8", odd, 1)
        self.emit("add_r32_rm32", odd, bits)
        self.emit("add_rm32_imm32", odd, 0x7FFF)
        self.emit("shr_rm32_imm8", odd, 16)
        nan = self.copy(bits, dtypes.uint32)
        self.emit("shr_rm32_imm8", nan, 16)
        self.emit("or_rm32_imm8", nan, 0x40)
        m = self.new("vec")
        self.emit("vcmpss_x_x_xm32_imm8", m, f, f, 3)    # UNORD_Q: true for NaN
        isnan = self.new("gpr")
        self.emit("vmovd_rm32_x", isnan, m)
        self.emit("test_rm32_r32", isnan, isnan)
        self.emit("cmovne_r32_rm32", odd, nan)
        return odd

    def to_float(self, x: UOp, dt: DType) -> VReg:
        """An integer or bool converted (rounded to nearest even) to a float dtype."""
        sd = x.dtype
        target = dt if reg_class(dt) == "vec" else dtypes.float32
        t = self.new("vec")
        z = self.new("vec")
        self.emit("vzero", z)
        cvt = f"vcvtsi2s{fs(target)}_x_x_rm"
        if self.evex and sd in (dtypes.uint32, dtypes.uint64):
            # x86-64-v4: VCVTUSI2SS/SD (AVX512F, SDM "VCVTUSI2SS") reads the GPR as unsigned
            # and rounds by MXCSR (nearest), as the zero-extended or halved paths below do
            self.emit(f"vcvtusi2s{fs(target)}_x_x_rm{sd.bits}", t, z, self.reg(x))
        elif sd.itemsize < 4 or sd.is_bool:
            self.emit(cvt + "32", t, z, self.ext(x, 32))
        elif sd == dtypes.int32:
            self.emit(cvt + "32", t, z, self.reg(x))
        elif sd in (dtypes.uint32, dtypes.int64):
            self.emit(cvt + "64", t, z, self.ext(x, 64))
        else:
            t = self.u64_to_float(x, target, z)
        if reg_class(dt) == "vec":
            return t
        return self.from_f32(t, dt)

    def u64_to_float(self, x: UOp, dt: DType, z: VReg) -> VReg:
        """uint64 → float: values ≥ 2^63 convert (x >> 1 | x & 1) and double (round-to-odd
        halving keeps the final rounding exact); selected by x's sign bit, no branch."""
        v = self.reg(x)
        cvt = f"vcvtsi2s{fs(dt)}_x_x_rm64"
        lo = self.new("vec")
        self.emit(cvt, lo, z, v)
        half = self.copy(v, dtypes.uint64)
        self.emit("shr_rm64_imm8", half, 1)
        bit = self.copy(v, dtypes.uint64)
        self.emit("and_rm64_imm8", bit, 1)
        self.emit("or_r64_rm64", half, bit)
        hi = self.new("vec")
        self.emit(cvt, hi, z, half)
        hi2 = self.new("vec")
        self.emit(f"vadds{fs(dt)}_x_x_xm{dt.bits}", hi2, hi, hi)
        m = self.new("vec")
        self.emit("vmovq_x_r64", m, v)
        t = self.new("vec")
        self.emit("vblendvpd_x_x_xm_x", t, lo, hi2, m)   # sign of the low qword = x's bit 63
        return t

    def from_float(self, x: UOp, dt: DType) -> VReg:
        """Float → integer: truncate toward zero, saturate to dt's range, NaN gives 0
        (docs/semantics.md). vcvtt* alone returns the "integer indefinite" value out of range,
        so the input is first cleared of NaN and clamped in the float domain."""
        sd = x.dtype
        f = self.reg(x) if reg_class(sd) == "vec" else self.to_f32(x)
        fd = sd if reg_class(sd) == "vec" else dtypes.float32
        s, b = fs(fd), fd.bits
        # NaN → +0.0: AND with the ORD_Q (7) mask, all ones exactly where x is not NaN
        m = self.new("vec")
        self.emit(f"vcmps{s}_x_x_xm{b}_imm8", m, f, f, 7)
        f0 = self.new("vec")
        self.emit(f"vandp{s}_x_x_xm", f0, f, m)
        cvt = f"vcvtts{s}2si_r64_xm{b}"
        if dt == dtypes.uint64:
            return self.float_to_u64(f0, fd)
        t = self.new("gpr")
        if dt == dtypes.int64:
            self.emit(cvt, t, f0)
            # x >= 2^63 converts to INT64_MIN (indefinite): saturate to INT64_MAX instead
            self.saturate_high(f0, fd, 2.0 ** 63, t, (1 << 63) - 1)
            return t
        lo, hi = dt.min(), dt.max()
        # clamp to [lo, hi] in float: vmaxs returns the 2nd source unless the 1st is greater
        c1, c2 = self.new("vec"), self.new("vec")
        self.emit(f"vmaxs{s}_x_x_xm{b}", c1, f0, self.materialize(float(lo), fd))
        self.emit(f"vmins{s}_x_x_xm{b}", c2, c1, self.materialize(float(hi), fd))
        self.emit(cvt, t, c2)              # in range of int64: exact truncation
        if float(fd.np.type(hi)) != hi:    # hi rounded up in this float format: clamp again
            top = self.materialize(hi, dtypes.int64)
            self.emit("cmp_r64_rm64", t, top)
            self.emit("cmovg_r64_rm64", t, top)
        return t

    def saturate_high(self, f: VReg, fd: DType, limit: float, t: VReg, value: int) -> None:
        """t = value where the float f >= limit (GE_OS compare, no branch)."""
        m = self.new("vec")
        self.emit(f"vcmps{fs(fd)}_x_x_xm{fd.bits}_imm8", m, f, self.materialize(limit, fd), 13)
        ge = self.new("gpr")
        self.emit("vmovd_rm32_x", ge, m)
        self.emit("test_rm32_r32", ge, ge)
        self.emit("cmovne_r64_rm64", t, self.materialize(value, dtypes.uint64))

    def float_to_u64(self, f0: VReg, fd: DType) -> VReg:
        """NaN-free float → uint64, saturating: negatives give 0, >= 2^64 gives 2^64-1;
        values >= 2^63 convert f - 2^63 and set bit 63 (no branch)."""
        s, b = fs(fd), fd.bits
        f = self.new("vec")
        self.emit(f"vmaxs{s}_x_x_xm{b}", f, f0, self.materialize(0.0, fd))
        cvt = f"vcvtts{s}2si_r64_xm{b}"
        lo = self.new("gpr")
        self.emit(cvt, lo, f)
        big = self.materialize(2.0 ** 63, fd)
        d = self.new("vec")
        self.emit(f"vsubs{s}_x_x_xm{b}", d, f, big)
        hi = self.new("gpr")
        self.emit(cvt, hi, d)
        self.emit("xor_r64_rm64", hi, self.materialize(1 << 63, dtypes.uint64))
        m = self.new("vec")
        self.emit(f"vcmps{s}_x_x_xm{b}_imm8", m, f, big, 13)   # GE_OS
        ge = self.new("gpr")
        self.emit("vmovd_rm32_x", ge, m)
        self.emit("test_rm32_r32", ge, ge)
        self.emit("cmovne_r64_rm64", lo, hi)
        self.saturate_high(f, fd, 2.0 ** 64, lo, (1 << 64) - 1)
        return lo

    def sel_BITCAST(self, u: UOp) -> None:
        """Reinterpret bits: vmovd/vmovq between register files, nothing within one."""
        x, dt = u.src[0], u.dtype
        a, b = reg_class(x.dtype), reg_class(dt)
        if a == b or u.shape:            # a vector is in a vector register either way
            self.val[u] = self.reg(x)
            return
        t = self.new(b)
        q = dt.itemsize == 8
        m = self.folded(x) if b == "gpr" else None
        if m is not None:                # a float load read as integer bits (x86_analysis)
            self.emit("mov_r64_rm64" if q else "mov_r32_rm32", t, m)
        elif b == "vec":
            self.emit("vmovq_x_r64" if q else "vmovd_x_rm32", t, self.reg(x))
        else:
            self.emit("vmovq_r64_x" if q else "vmovd_rm32_x", t, self.reg(x))
        self.val[u] = t
