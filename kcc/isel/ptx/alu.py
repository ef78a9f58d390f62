"""PTX instruction selection, part 2: dtype facts and the ALU, compare, cast and half-precision
rules (a mixin of `kcc.isel.ptx.select.PtxSelector`, kept apart to hold modules under 700 lines).
The semantics choices are listed in kcc/isel/ptx/select.py's docstring.
"""

from __future__ import annotations

from kcc.encode.ptx import Imm, Reg
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import COMPARE, Ops
from kcc.ir.uop import UOp
from kcc.isel.common import SelectError, f32_bits, scalar_const

HALF = (dtypes.float16, dtypes.bfloat16)


def bank_of(dt: DType) -> str:
    """The register bank that holds a value of dt."""
    if dt.is_bool:
        return "pred"
    if dt in HALF:
        return "b16"
    if dt == dtypes.float32:
        return "f32"
    if dt == dtypes.float64:
        return "f64"
    if dt.is_int and not dt.is_weak:
        return "b64" if dt.itemsize == 8 else "b32"
    raise SelectError(f"no PTX register bank for {dt}")


def ity(dt: DType) -> str:
    """The integer type suffix of an op on dt's register (s32/u32/s64/u64)."""
    w = 64 if dt.itemsize == 8 else 32
    return f"{'s' if dt.is_signed else 'u'}{w}"


def fty(dt: DType) -> str:
    return "f64" if dt == dtypes.float64 else "f32"


def mem_type(dt: DType) -> str:
    """The ld/st type of an element of dt in memory (bool is one byte, 0 or 1)."""
    if dt.is_bool:
        return "u8"
    if dt in HALF:
        return "b16"
    if dt.is_float:
        return fty(dt)
    return f"{'s' if dt.is_signed else 'u'}{dt.bits}"


def param_type(dt: DType) -> str:
    """The `.param` type of a scalar argument of dt."""
    return mem_type(dt)


def sel_type(dt: DType) -> str:
    """The `selp`/`mov` type of a value of dt."""
    b = bank_of(dt)
    return {"b16": "b16", "b32": "b32", "b64": "b64", "f32": "f32", "f64": "f64"}[b]


class PtxAlu:
    """The ALU half of the selector: needs `new`, `emit`, `reg`, `const`, `normalize`, `sm`."""

    # -- ALU -----------------------------------------------------------------------------------
    def alu(self, u: UOp) -> Reg:
        """Every ALU op (unary, binary, compare, WHERE, MULACC) on scalars."""
        op = u.op
        if u.shape != ():
            raise SelectError(f"vector {op.name} of {u.shape[0]} lanes reached PTX isel "
                              "(devectorize makes every ALU op scalar for CUDA)")
        if op is Ops.EXP2 and u.dtype == dtypes.float32:
            return self.exp2_f32(self.reg(u.src[0]))
        if op in (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.THREEFRY):
            raise SelectError(f"{op.name} has no PTX instruction of the required accuracy; "
                              "kcc.passes.decompose must rewrite it before isel")
        if op in COMPARE:
            return self.compare(u)
        if op is Ops.WHERE:
            return self.where(u)
        dt = u.dtype
        if op is Ops.MAX:
            return self.max(u)
        if dt.is_bool:
            return self.bool_alu(u)
        if dt in HALF:
            # widen exactly, compute in float32, round once to the dtype
            f = self.falu(op, [self.to_f32(s) for s in u.src], dtypes.float32)
            return self.from_f32(f, dt)
        if dt.is_float:
            if op is Ops.FDIV and scalar_const(u.src[0]) == 1.0:
                # RECIPROCAL arrives as FDIV(1, x) (kcc.passes.decompose): the same correctly
                # rounded 1/x; float32 is kcc's inline sequence (kcc/isel/ptx/rounded.py),
                # float64 `rcp.rn` (ptxas's slow path is smaller than div.rn's)
                return self.falu(Ops.RECIPROCAL, [self.reg(u.src[1])], dt)
            return self.falu(op, [self.reg(s) for s in u.src], dt)
        return self.ialu(u)

    def falu(self, op: Ops, srcs: list[Reg], dt: DType) -> Reg:
        """Float ops with explicit IEEE rounding (PTX ISA 9.7.3)."""
        if dt == dtypes.float32 and op is Ops.RECIPROCAL:
            return self.rcp_f32(srcs[0])        # kcc/isel/ptx/rounded.py: no CALL
        if dt == dtypes.float32 and op is Ops.SQRT:
            return self.sqrt_f32(srcs[0])
        t, d = fty(dt), self.new(bank_of(dt))
        forms = {Ops.ADD: "add.rn", Ops.SUB: "sub.rn", Ops.MUL: "mul.rn", Ops.FDIV: "div.rn",
                 Ops.MULACC: "fma.rn", Ops.NEG: "neg", Ops.SQRT: "sqrt.rn",
                 Ops.RECIPROCAL: "rcp.rn", Ops.TRUNC: "cvt.rzi"}
        if op not in forms:
            raise SelectError(f"{op.name} is not defined on {dt}")
        if op is Ops.TRUNC:
            self.emit(f"cvt.rzi.{t}.{t}", d, srcs[0])
        else:
            self.emit(f"{forms[op]}.{t}", d, *srcs)
        return d

    def exp2_f32(self, x: Reg) -> Reg:
        """float32 EXP2 around `ex2.approx.ftz.f32` (PTX ISA, Floating Point Instructions: ex2);
        -inf -> +0, +inf -> +inf, NaN -> NaN, ±0 -> 1. Accuracy: NVIDIA states 2 ulp for
        exp2f, this instruction (docs/transcendentals.md, CUDA).

        For x < -125 it computes ex2(x + 64) · 2^-64: the add is exact there, ex2's result is
        normal (so `.ftz` flushes nothing that matters: below x = -190 the result rounds to 0
        anyway), and the predicated multiply rounds a subnormal result once, an error ≤ 2^-22.5
        relative + ½ ulp ≈ 1.9 ulp of the subnormal spacing. Without `.ftz` ptxas would add
        its own scaling, ex2(x/2)², which doubles the relative error before that rounding. At
        x ≥ -125 the result is ≥ 2^-125 (1 - 2^-22.5): normal. A subnormal x is flushed to 0,
        whose ex2 (1) is the correctly rounded 2^x there. SASS: FSETP, @P FADD, MUFU.EX2,
        @P FMUL, as many as ptxas's own scaling."""
        p, s, d = self.new("pred"), self.new("f32"), self.new("f32")
        self.emit("setp.lt.f32", p, x, Imm(f"0f{f32_bits(-125.0):08X}"))
        self.emit("mov.f32", s, x)
        self.emit("add.rn.f32", s, s, Imm(f"0f{f32_bits(64.0):08X}"), guard=p)
        self.emit("ex2.approx.ftz.f32", d, s)
        self.emit("mul.rn.f32", d, d, Imm(f"0f{f32_bits(2.0 ** -64):08X}"), guard=p)
        return d

    def ialu(self, u: UOp) -> Reg:
        """Integer ops on the 32/64-bit register (wrapping), re-normalized to the width."""
        op, dt = u.op, u.dtype
        t, w = ity(dt), ("64" if dt.itemsize == 8 else "32")
        k = scalar_const(u.src[1]) if op in (Ops.SHL, Ops.SHR) else None
        if isinstance(k, int) and not isinstance(k, bool):
            # a constant amount, reduced here (the modulo below): no register for it and no
            # and.b32 at run time
            d = self.new(bank_of(dt))
            form = f"shl.b{w}" if op is Ops.SHL else f"shr.{t}"
            self.emit(form, d, self.reg(u.src[0]), Imm(str(k % dt.bits)))
            return self.normalize(d, dt)
        srcs = [self.reg(s) for s in u.src]
        d = self.new(bank_of(dt))
        if op in (Ops.SHL, Ops.SHR):
            amt = srcs[1]
            if u.src[1].dtype.itemsize == 8:        # the shift amount is a .u32 (9.7.8.8)
                a32 = self.new("b32")
                self.emit("cvt.u32.u64", a32, amt)
                amt = a32
            # PTX clamps amounts ≥ the width; the IR leaves them undefined and the interpreter
            # takes them modulo the dtype's bits: do the same so results agree everywhere.
            m = self.new("b32")
            self.emit("and.b32", m, amt, Imm(str(dt.bits - 1)))
            amt = m
            form = f"shl.b{w}" if op is Ops.SHL else f"shr.{t}"
            self.emit(form, d, srcs[0], amt)
            return self.normalize(d, dt)
        forms = {Ops.ADD: f"add.{t}", Ops.SUB: f"sub.{t}", Ops.MUL: f"mul.lo.{t}",
                 Ops.CDIV: f"div.{t}", Ops.CMOD: f"rem.{t}", Ops.NEG: f"neg.s{w}",
                 Ops.AND: f"and.b{w}", Ops.OR: f"or.b{w}", Ops.XOR: f"xor.b{w}",
                 Ops.MULACC: f"mad.lo.{t}", Ops.MULHI: f"mul.hi.{t}"}
        if op not in forms:
            raise SelectError(f"{op.name} is not defined on {dt}")
        self.emit(forms[op], d, *srcs)
        return self.normalize(d, dt)

    def bool_alu(self, u: UOp) -> Reg:
        """AND/OR/XOR on predicates."""
        if u.op not in (Ops.AND, Ops.OR, Ops.XOR):
            raise SelectError(f"{u.op.name} is not defined on bool")
        d = self.new("pred")
        self.emit(f"{u.op.name.lower()}.pred", d, *(self.reg(s) for s in u.src))
        return d

    def max(self, u: UOp) -> Reg:
        """MAX(a, b) = a < b ? b : a: setp.lt + selp (floats, halves), max (integers), or."""
        a, b = u.src
        dt = u.dtype
        if dt.is_bool:
            d = self.new("pred")
            self.emit("or.pred", d, self.reg(a), self.reg(b))
            return d
        if dt.is_int:
            d = self.new(bank_of(dt))
            self.emit(f"max.{ity(dt)}", d, self.reg(a), self.reg(b))
            return d
        p = self.lt(a, b)
        d = self.new(bank_of(dt))
        self.emit(f"selp.{sel_type(dt)}", d, self.reg(b), self.reg(a), p)
        return d

    def lt(self, a: UOp, b: UOp) -> Reg:
        return self.setp("lt", a, b)

    def setp(self, cmp: str, a: UOp, b: UOp) -> Reg:
        """setp.cmp on two values of one dtype (halves compare exactly in float32)."""
        dt = a.dtype
        if dt in HALF:
            x, y, t = self.to_f32(a), self.to_f32(b), "f32"
        else:
            x, y = self.reg(a), self.reg(b)
            t = fty(dt) if dt.is_float else ity(dt)
        p = self.new("pred")
        self.emit(f"setp.{cmp}.{t}", p, x, y)
        return p

    def compare(self, u: UOp) -> Reg:
        """CMPLT setp.lt (ordered), CMPNE setp.neu/ne (unordered), CMPEQ setp.eq (9.7.6.1)."""
        a, b = u.src
        dt = a.dtype
        if dt.is_bool:
            x, y = self.reg(a), self.reg(b)
            d = self.new("pred")
            if u.op is Ops.CMPLT:                       # a < b ⇔ !a & b
                na = self.new("pred")
                self.emit("not.pred", na, x)
                self.emit("and.pred", d, na, y)
            elif u.op is Ops.CMPNE:
                self.emit("xor.pred", d, x, y)
            else:
                ne = self.new("pred")
                self.emit("xor.pred", ne, x, y)
                self.emit("not.pred", d, ne)
            return d
        isf = dt.is_float
        cmp = {Ops.CMPLT: "lt", Ops.CMPNE: "neu" if isf else "ne", Ops.CMPEQ: "eq"}[u.op]
        return self.setp(cmp, a, b)

    def where(self, u: UOp) -> Reg:
        """selp d, a, b, c (9.7.6.3); on predicates (c & a) | (!c & b)."""
        c, a, b = (self.reg(s) for s in u.src)
        dt = u.dtype
        if dt.is_bool:
            t1, nc, t2, d = (self.new("pred") for _ in range(4))
            self.emit("and.pred", t1, c, a)
            self.emit("not.pred", nc, c)
            self.emit("and.pred", t2, nc, b)
            self.emit("or.pred", d, t1, t2)
            return d
        d = self.new(bank_of(dt))
        self.emit(f"selp.{sel_type(dt)}", d, a, b, c)
        return d

    # -- halves ----------------------------------------------------------------------------------
    def to_f32(self, x: UOp) -> Reg:
        """A float16/bfloat16 value widened exactly to float32."""
        return self.half_to_f32(self.reg(x), x.dtype)

    def half_to_f32(self, h: Reg, dt: DType) -> Reg:
        f = self.new("f32")
        if dt == dtypes.float16:
            self.emit("cvt.f32.f16", f, h)
            return f
        # bfloat16 is the high half of a float32
        r, s = self.new("b32"), self.new("b32")
        self.emit("cvt.u32.u16", r, h)
        self.emit("shl.b32", s, r, Imm("16"))
        self.emit("mov.b32", f, s)
        return f

    def from_f32(self, f: Reg, dt: DType) -> Reg:
        """float32 → float16/bfloat16, rounded to nearest even."""
        h = self.new("b16")
        if dt == dtypes.float16:
            self.emit("cvt.rn.f16.f32", h, f)
            return h
        # Integer rounding on every arch (sm_75 has no bf16 cvt, and cvt.rn.bf16.f32 gives a
        # canonical NaN where the IR keeps sign and payload): (bits + 0x7fff + ((bits >> 16)
        # & 1)) >> 16, and a NaN becomes (bits >> 16) | 0x40 (docs/semantics.md).
        bits, odd, r, nan, res = (self.new("b32") for _ in range(5))
        self.emit("mov.b32", bits, f)
        self.emit("shr.u32", odd, bits, Imm("16"))
        self.emit("and.b32", odd, odd, Imm("1"))
        self.emit("add.u32", r, bits, odd)
        self.emit("add.u32", r, r, Imm("0x7FFF"))
        self.emit("shr.u32", r, r, Imm("16"))
        self.emit("shr.u32", nan, bits, Imm("16"))
        self.emit("or.b32", nan, nan, Imm("0x40"))
        p = self.new("pred")
        self.emit("setp.nan.f32", p, f, f)
        self.emit("selp.b32", res, nan, r, p)
        self.emit("cvt.u16.u32", h, res)
        return h

    # -- casts -----------------------------------------------------------------------------------
    def sel_CAST(self, u: UOp) -> None:
        """Value conversion between any two dtypes (docs/semantics.md, CAST)."""
        if scalar_const(u) is not None:
            return              # materialized where used
        if u.shape != ():
            raise SelectError("a vector CAST reached PTX isel (devectorize makes it scalar)")
        self.val[u] = self.cast(u.src[0], u.dtype)

    def cast(self, x: UOp, dt: DType) -> Reg:
        """The value of x converted to dt."""
        sd = x.dtype
        v = self.reg(x)
        if sd == dt:
            return v
        if dt.is_bool:
            return self.to_bool(v, sd)
        if sd.is_bool:
            one = 1.0 if dt.is_float else 1
            d = self.new(bank_of(dt))
            self.emit(f"selp.{sel_type(dt)}", d, self.const(one, dt), self.const(0 * one, dt), v)
            return d
        if sd in HALF:
            v, sd = self.half_to_f32(v, sd), dtypes.float32
            if sd == dt:
                return v
        if dt in HALF:
            if dt == dtypes.float16 and sd != dtypes.float32:
                h = self.new("b16")            # one rounding, straight from the source
                self.emit(f"cvt.rn.f16.{fty(sd) if sd.is_float else ity(sd)}", h, v)
                return h
            if sd == dtypes.float64:
                raise SelectError("CAST float64 → bfloat16 is not supported on CUDA (it would "
                                  "round twice); CAST through float32 explicitly")
            f = v if sd == dtypes.float32 else self.int_to_float(v, sd, dtypes.float32)
            return self.from_f32(f, dt)
        if sd.is_float and dt.is_float:
            d = self.new(bank_of(dt))
            rnd = ".rn" if dt.itemsize < sd.itemsize else ""
            self.emit(f"cvt{rnd}.{fty(dt)}.{fty(sd)}", d, v)
            return d
        if dt.is_float:
            return self.int_to_float(v, sd, dt)
        if sd.is_float:
            return self.float_to_int(v, sd, dt)
        return self.int_to_int(v, sd, dt)

    def to_bool(self, v: Reg, sd: DType) -> Reg:
        """x != 0 (a NaN is true: setp.neu)."""
        if sd in HALF:
            v, sd = self.half_to_f32(v, sd), dtypes.float32
        p = self.new("pred")
        if sd.is_float:
            self.emit(f"setp.neu.{fty(sd)}", p, v, self.const(0.0, sd))
        else:
            self.emit(f"setp.ne.{ity(sd)}", p, v, Imm("0"))
        return p

    def int_to_float(self, v: Reg, sd: DType, dt: DType) -> Reg:
        """cvt.rn.fNN.{s,u}NN: rounded to nearest even (9.7.9.21)."""
        d = self.new(bank_of(dt))
        self.emit(f"cvt.rn.{fty(dt)}.{ity(sd)}", d, v)
        return d

    def float_to_int(self, v: Reg, sd: DType, dt: DType) -> Reg:
        """cvt.rzi: truncation toward zero; a narrow int takes the low bits of an int32.

        NaN → 0 is kept explicitly where the hardware does not give it: on an H200 (sm_90,
        driver 580) `cvt.rzi` of a NaN gave the destination's INT_MIN (its unsigned 2^(n-1))
        for every 64-bit destination and every float64 source, and 0 only from float32 to
        32 bits and narrower (bench/gpu_check.py's cast rows, docs/performance.md)."""
        wide = dt.itemsize == 8
        d = self.new("b64" if wide else "b32")
        # 9.7.9.21: float-to-integer conversions saturate to dt's range
        self.emit(f"cvt.rzi.{ity(dt) if wide else mem_type(dt)}.{fty(sd)}", d, v)
        if wide or sd == dtypes.float64:
            p, z = self.new("pred"), self.new(d.bank)
            self.emit(f"setp.nan.{fty(sd)}", p, v, v)
            self.emit(f"selp.b{64 if wide else 32}", z, Imm("0"), d, p)
            d = z
        return d if wide else self.normalize(d, dt)    # dt's value extended, explicitly

    def int_to_int(self, v: Reg, sd: DType, dt: DType) -> Reg:
        """Widening extends by the source's sign; narrowing keeps the low bits."""
        if dt.itemsize == 8:
            if sd.itemsize == 8:
                return v                   # int64 ↔ uint64: the same bits
            d = self.new("b64")
            self.emit(f"cvt.{ity(dt)}.{ity(sd)}", d, v)
            return d
        if sd.itemsize == 8:
            d = self.new("b32")
            self.emit("cvt.u32.u64", d, v)
            v = d
        return self.normalize(v, dt) if dt.itemsize < 4 else v

    def sel_BITCAST(self, u: UOp) -> None:
        """Reinterpret bits: a mov between banks (9.7.9.1), or nothing within one."""
        x, dt = u.src[0], u.dtype
        sd = x.dtype
        if sd.is_bool or dt.is_bool:
            # a bool is a predicate here, not a byte: its bits are 0 or 1, so the
            # reinterpretation is the 0/1 conversion (selp, or setp.ne for a byte → bool)
            self.val[u] = self.cast(x, dt)
            return
        v = self.reg(x)
        a, b = bank_of(sd), bank_of(dt)
        if a == b:
            self.val[u] = self.normalize(v, dt) if dt.itemsize < 4 else v
            return
        d = self.new(b)
        if a == "b16":                      # half bits → a 16-bit int in a 32-bit register
            self.emit(f"cvt.{'s' if dt.is_signed else 'u'}32.{'s' if dt.is_signed else 'u'}16",
                      d, v)
        elif b == "b16":
            self.emit("cvt.u16.u32", d, v)
        else:
            self.emit(f"mov.b{dt.bits}", d, v)
        self.val[u] = d
