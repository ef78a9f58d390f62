"""x86 selection of integer vectors (AVX2, 16 bytes in xmm, 32 in ymm): int8…uint64 lanes for
the ops AVX2 has an instruction for — arithmetic, bitwise ops, per-lane shifts, MAX, compares as
lane masks — plus loads/stores, STACK and lane access. A mixin of X86Selector
(kcc/isel/x86/select.py).

VECTOR_OPS lists, per dtype, the ops the x86 TargetDesc declares legal on such vectors (a row of
the SDM that does it); devectorize splits every other op into scalars. Lane widths give the form
suffixes b/w/d/q (PADDB/W/D/Q …).
"""

from __future__ import annotations

from kcc.ir import Ops, UOp, dtypes
from kcc.ir.affine import affine
from kcc.ir.consts import const_int
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86.analysis import INT_COMMUTES   # the ops whose folded load may be either operand
from kcc.isel.x86.base import SelectError, const_bytes, strong_const, uint_of, vw

MappingProxyType = type(type.__dict__)  # types.MappingProxyType (no types module: start-up)
_SFX = {1: "b", 2: "w", 4: "d", 8: "q"}
_COMMON = frozenset({Ops.ADD, Ops.SUB, Ops.AND, Ops.OR, Ops.XOR, Ops.NEG, Ops.MAX,
                     Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE, Ops.WHERE})
# AVX2 has PMULLW/PMULLD (no 8- or 64-bit low multiply: bytes multiply as words, ivec_mul8),
# PSLLVD/Q and PSRLVD/Q, PSRAVD (no per-lane 8/16-bit shifts, no 64-bit arithmetic right shift;
# no byte shift at all: bytes shift as words and a mask, ivec_shift8).
_BYTE_OPS = _COMMON | {Ops.MUL, Ops.MULACC, Ops.SHL, Ops.SHR}
VECTOR_OPS = MappingProxyType({
    dtypes.int8: _BYTE_OPS, dtypes.uint8: _BYTE_OPS,
    dtypes.int16: _COMMON | {Ops.MUL, Ops.MULACC},
    dtypes.uint16: _COMMON | {Ops.MUL, Ops.MULACC},
    dtypes.int32: _COMMON | {Ops.MUL, Ops.MULACC, Ops.SHL, Ops.SHR, Ops.MULHI},
    dtypes.uint32: _COMMON | {Ops.MUL, Ops.MULACC, Ops.SHL, Ops.SHR, Ops.MULHI},
    dtypes.int64: _COMMON | {Ops.SHL},
    dtypes.uint64: _COMMON | {Ops.SHL, Ops.SHR},
})
INT_VECTOR_DTYPES = tuple(VECTOR_OPS)
# the integer lanes a float32/float16 vector converts to in one xmm (ivec vcast_narrow)
NARROW_INTS = frozenset({dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16})
# x86-64-v4: the ops on int32 x 16 (zmm) with an EVEX.512 row (kcc/encode/x86/table.py); a
# zmm integer value is made by these, a splat or a constant, and read by them, a BITCAST or
# a same-size integer CAST (nothing to do) and a lane read
_ZMM_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR,
                      Ops.NEG})
# ... and on int64/uint64 x 8 (float64 bit work: exp2's 2^k, sin's reduction): VPADDQ,
# VPSUBQ, the bitwise rows, VPSLLQ/VPSRLQ, VPMULLQ (AVX512DQ), and CMPEQ and WHERE as an
# opmask compare and blend (VPCMPEQQ k, VPBLENDMQ: sin's table lookup)
_ZMM_OPS64 = frozenset({Ops.ADD, Ops.SUB, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.NEG,
                        Ops.MUL, Ops.CMPEQ, Ops.WHERE, Ops.CMPLT, Ops.CMPNE, Ops.MAX})
# x86-64-v4: 64-bit lane MUL on xmm/ymm too (EVEX.128/256 VPMULLQ), and int64's arithmetic
# SHR (VPSRAQ / VPSRAVQ, AVX512F/VL: AVX2 has no 64-bit arithmetic shift)
V4_OPS64 = MappingProxyType({dt: VECTOR_OPS[dt] | {Ops.MUL, Ops.SHR}
                             for dt in (dtypes.int64, dtypes.uint64)})
ZMM_INT_OPS = MappingProxyType({dtypes.int32: _ZMM_OPS, dtypes.uint32: _ZMM_OPS,
                                dtypes.int64: _ZMM_OPS64 | {Ops.SHR},
                                dtypes.uint64: _ZMM_OPS64 | {Ops.SHR}})
# x << c combined with x >> (bits - c) by these is a rotate: the two shifts' bits never meet
_ROTATE_OPS = frozenset({Ops.OR, Ops.ADD, Ops.XOR})
_BITWISE = {Ops.AND: "vpand", Ops.OR: "vpor", Ops.XOR: "vpxor"}


def lane_steps(lanes: tuple[UOp, ...]) -> list[int] | None:
    """[c_k - c_0] when every lane is one affine sum of the same non-constant terms plus its
    own constant c_k (kcc/ir/affine.py; MULACC by a constant read as a product and a sum),
    so lane k is lane 0 + (c_k - c_0) modulo 2^bits (ADD, SUB, MUL, SHL wrap alike); None
    when some lanes differ in more than a constant, or when every lane is a constant."""
    memo: dict = {}
    got = [affine(x, memo=memo, mulacc=True) for x in lanes]
    if any(a is None for a in got) or not got[0][0]:    # type: ignore[index]
        return None
    terms, c0 = got[0]                                  # type: ignore[misc]
    if any(a[0] != terms for a in got[1:]):             # type: ignore[index]
        return None
    return [a[1] - c0 for a in got]                     # type: ignore[index]


def is_int_vector(u: UOp) -> bool:
    """u is a vector of integer lanes (held in an xmm/ymm register)."""
    return bool(u.shape) and u.dtype in VECTOR_OPS


def vector_widths(dt: DType) -> tuple[int, ...]:
    """Legal lane counts of an integer vector: a ymm and an xmm of dt, and for byte lanes
    the low 8 bytes of an xmm (VMOVQ loads and stores them; lane-wise ops run on the whole
    xmm, its upper lanes unread): a loop of 8 iterations over int8 widened to 8 lanes beside
    int32 x 8 in a ymm (VPMOVSXBD ymm, xmm/m64 widens them, SDM "PMOVSX")."""
    return (32 // dt.itemsize, 16 // dt.itemsize) + ((8,) if dt.itemsize == 1 else ())


def rodata16(data: bytes) -> bytes:
    """A constant vector's bytes padded with zeros to a 16-byte multiple: an 8-byte vector
    (byte lanes x 8) is loaded as a whole xmm (VMOVDQU), which must not read past its data."""
    return data + bytes(-len(data) % 16)


def imov(w: str) -> str:
    """The integer vector load form of register width w (VMOVDQU32 on zmm: EVEX names the
    element size)."""
    return "vmovdqu32_z_zm" if w == "z" else f"vmovdqu_{w}_{w}m"


def uniform_const(b: UOp) -> int | None:
    """The integer every lane of vector b holds when b is a STACK of one constant, else None."""
    if b.op is not Ops.STACK:
        return None
    vals = {const_int(x) for x in b.src}
    return vals.pop() if len(vals) == 1 and None not in vals else None


def _rotate(u: UOp) -> tuple[UOp, int] | None:
    """(x, c) when u is OR/ADD/XOR of SHL(x, c) and a logical SHR(x, bits - c), 0 < c < bits,
    on unsigned lanes: x rotated left by c (the shifted-out bits of one are the zero bits of
    the other, so the three ops agree)."""
    a, b = u.src
    if a.op is Ops.SHR:
        a, b = b, a
    if a.op is not Ops.SHL or b.op is not Ops.SHR or a.src[0] is not b.src[0] \
            or a.dtype.is_signed:
        return None
    c, d = uniform_const(a.src[1]), uniform_const(b.src[1])
    bits = a.dtype.bits
    if c is None or d is None or not 0 < c < bits or c + d != bits:
        return None
    return a.src[0], c


def shift_terms(c: int, bits: int) -> tuple[int, int, str] | None:
    """(a, b, op) with c = 2^a op 2^b modulo 2^bits (op "+" or "-"; b = -1: 2^a alone), for
    a constant with at most two set bits or one less than a power of two; None otherwise."""
    c &= (1 << bits) - 1
    if c == 0:
        return None
    ones = [i for i in range(bits) if c >> i & 1]
    if len(ones) == 1:
        return ones[0], -1, "+"
    if len(ones) == 2:
        return ones[1], ones[0], "+"
    k = c.bit_length()
    if c + 1 == 1 << k and k < bits:
        return k, 0, "-"
    return None


class X86IVec:
    """Integer vector rules (mixed into X86Selector)."""

    def ivec_mul_const(self, t: VReg, a: VReg, c: UOp, dt: DType, w: str) -> bool:
        """t = a * c for 64-bit lanes and c a splat of 2^a ± 2^b (shift_terms) as shifts and
        one add or subtract, exact modulo 2^64: VPMULLQ is three µops and 15 cycles on Intel
        (a VPSLLQ or VPADDQ one µop, one cycle); whether it was emitted. Narrower lanes keep
        VPMULLD/VPMULLW (two µops or one), as clang does."""
        k = uniform_const(c)
        if dt.itemsize != 8 or k is None:
            return False
        terms = shift_terms(k, 64)
        if terms is None:
            return False
        hi, lo, sign = terms
        three = f"_{w}_{w}_{w}m"

        def shifted(n: int) -> VReg:
            if n == 0:
                return a
            r = self.new("vec")
            if n == 1:              # x + x: one VPADDQ on a port a shift does not need
                self.emit("vpaddq" + three, r, a, a)
            else:
                self.emit(f"vpsllq_{w}_{'zm' if w == 'z' else w}_imm8", r, a, n)
            return r

        if lo < 0:                  # 2^hi alone (x * 1 is simplify's: left to VPMULLQ)
            if hi == 0:
                return False
            if hi == 1:
                self.emit("vpaddq" + three, t, a, a)
            else:
                self.emit(f"vpsllq_{w}_{'zm' if w == 'z' else w}_imm8", t, a, hi)
            return True
        self.emit(f"vp{'add' if sign == '+' else 'sub'}q" + three, t, shifted(hi), shifted(lo))
        return True

    low_word: frozenset[UOp] = frozenset()     # select() sets it: analysis.low_word_muls

    def mul_sfx(self, u: UOp, s: str) -> str:
        """The VPMULL element suffix of u's product: "w" for an int32 product only its low 16
        bits of each lane are read of (analysis.low_word_muls: VPMULLW, one µop, where
        VPMULLD is two on Intel), else the lanes' own."""
        return "w" if s == "d" and u in self.low_word else s

    def rm(self, u: UOp) -> VReg | Mem:
        """u as an r/m operand: the place of a load deferred for it (analysis.foldable_loads,
        read in place) when that place has no index register, else its register (a deferred
        load is read into one where it is used, X86Selector.reg). A VEX three-operand op
        with an indexed memory operand is un-laminated into two µops before the scheduler
        (Intel's optimization manual, "Micro-fusion"), so folding saves nothing there and
        measured slower: uint16_max's r_4_8_8, seven VPMAXUW [rsi + rdx*2 + k], ran 5.35 ->
        5.8 ns a call."""
        m = self.deferred.get(u)
        if m is not None and m.index is None:
            return self.deferred.pop(u)
        return self.reg(u)

    def ivec_alu(self, u: UOp) -> VReg:
        """An ALU op on integer vectors; compares give a lane mask as wide as the lanes."""
        op = u.op
        x = u.src[0]
        dt, n = x.dtype, x.shape[0]
        w = vw(dt, n)
        three = f"_{w}_{w}_{w}m"
        s = _SFX[dt.itemsize]
        if op in _ROTATE_OPS and self.evex and dt.itemsize in (4, 8):
            rot = _rotate(u)
            if rot is not None:         # x86-64-v4: one VPROLD/VPROLQ (SDM "VPROLD")
                t = self.new("vec")
                self.emit(f"vprol{s}_{w}_{w}m_imm8", t, self.reg(rot[0]), rot[1])
                return t
        if op in (Ops.SHL, Ops.SHR) and dt.itemsize > 1:
            c = uniform_const(u.src[1])
            if c is not None and 0 <= c < dt.bits:
                # a shift of every lane by one constant: the immediate form (SDM "PSLLW/PSLLD/
                # PSLLQ", "PSRLW/…", "PSRAW/PSRAD"), no amount vector to keep in a register
                kind = "vpsll" if op is Ops.SHL else "vpsra" if dt.is_signed else "vpsrl"
                if kind == "vpsra" and dt.itemsize == 8 and self.evex:
                    t = self.new("vec")                         # VPSRAQ (AVX512F/VL)
                    self.emit(f"vpsraq_{w}_{w}m_imm8", t, self.reg(x), c)
                    return t
                if not (kind == "vpsra" and dt.itemsize == 8):   # VPSRAQ is AVX-512 only
                    t = self.new("vec")
                    a = self.rm(x) if self.evex else self.reg(x)
                    self.emit(f"{kind}{s}_{w}_{shift_source(w, a)}_imm8", t, a, c)
                    return t
        if op is Ops.MULHI:
            return self.ivec_mulhi(u)
        if op in (Ops.MUL, Ops.MULACC) and dt.itemsize == 1:
            return self.ivec_mul8(u)
        if op in (Ops.SHL, Ops.SHR) and dt.itemsize == 1:
            return self.ivec_shift8(u)
        if op is Ops.ADD and (got := self.add_bool_lanes(u)) is not None:
            return got                  # acc + CAST(compare): acc - lane mask (x86_kmask)
        y = u.src[1] if len(u.src) > 1 else None
        if op in INT_COMMUTES and x in self.deferred and y not in self.deferred \
                and not (op is Ops.MUL and dt.itemsize == 8 and uniform_const(y) is not None):
            x, y = y, x         # the load read in place is the r/m operand (analysis.py)
        a = self.reg(x)
        t = self.new("vec")
        if op in (Ops.ADD, Ops.SUB):
            self.emit(f"vp{op.name.lower()}{s}" + three, t, a, self.rm(y))
        elif op in _BITWISE:
            # EVEX names the element size of a bitwise op (VPANDD, VPORD, VPXORD)
            mnem = _BITWISE[op] + ("d" if w == "z" else "")
            self.emit(mnem + three, t, a, self.rm(y))
        elif op is Ops.MUL:
            if not self.ivec_mul_const(t, a, y, dt, w):
                self.emit(f"vpmull{self.mul_sfx(u, s)}" + three, t, a, self.rm(y))
        elif op is Ops.MULACC:
            p = self.new("vec")
            self.emit(f"vpmull{self.mul_sfx(u, s)}" + three, p, a, self.reg(u.src[1]))
            self.emit(f"vpadd{s}" + three, t, p, self.reg(u.src[2]))
        elif op is Ops.NEG:
            z = self.new("vec")
            self.emit("vzero", z)
            self.emit(f"vpsub{s}" + three, t, z, a)
        elif op is Ops.MAX:
            if dt.itemsize <= 4:                   # VPMAXS/U B/W/D (SDM "PMAXSB", "PMAXUB")
                self.emit(f"vpmax{'s' if dt.is_signed else 'u'}{s}" + three, t, a, self.rm(y))
                return t
            b = self.reg(y)
            if self.evex:                          # x86-64-v4: an opmask and VPBLENDM
                return self.kmax(dt, n, a, b)
            return self.blend(dt, n, a, b, self.ivec_less(dt, n, a, b))   # a < b ? b : a
        elif op is Ops.SHL:
            self.emit(f"vpsllv{s}" + three, t, a, self.ivec_amount(u.src[1], dt, n))
        elif op is Ops.SHR:
            kind = "vpsrav" if dt.is_signed else "vpsrlv"
            self.emit(f"{kind}{s}" + three, t, a, self.ivec_amount(u.src[1], dt, n))
        elif op is Ops.CMPEQ:
            self.emit(f"vpcmpeq{s}" + three, t, a, self.reg(u.src[1]))
        elif op is Ops.CMPNE:
            eq, ones = self.new("vec"), self.new("vec")
            self.emit(f"vpcmpeq{s}" + three, eq, a, self.reg(u.src[1]))
            self.emit(f"vpcmpeq{s}" + three, ones, a, a)          # all ones
            self.emit("vpxor" + three, t, eq, ones)
        elif op is Ops.CMPLT:
            return self.ivec_less(dt, n, a, self.reg(u.src[1]))
        else:
            raise SelectError(f"{op.name} on vectors of {dt} has no x86 rule")
        return t

    def ivec_minmax(self, u: UOp) -> VReg | None:
        """WHERE(x < y, y, x) as MAX(x, y) and WHERE(x < y, x, y) as MIN(x, y) on integer
        lanes of an xmm/ymm (the same lanes: the compare's dtype is the WHERE's): one
        VPMAX/VPMIN S/U B/W/D (SDM "PMAXSB", "PMINUB"), not a compare and a blend; None
        for another WHERE."""
        c, a, b = u.src
        dt, n = u.dtype, u.shape[0]
        if c.op is not Ops.CMPLT or c.src[0].dtype != dt or dt.itemsize > 4 \
                or dt.itemsize * n > 32 or {a, b} != {c.src[0], c.src[1]} or a is b:
            return None
        w = vw(dt, n)
        t = self.new("vec")
        self.emit(f"vp{'max' if a is c.src[1] else 'min'}{'s' if dt.is_signed else 'u'}"
                  f"{_SFX[dt.itemsize]}_{w}_{w}_{w}m", t, self.reg(c.src[0]), self.reg(c.src[1]))
        return t

    def ivec_mul8(self, u: UOp) -> VReg:
        """MUL (and MULACC's product, then VPADDB) of int8/uint8 lanes as 16-bit lanes: the
        low byte of a word product depends only on the factors' low bytes, so VPMULLW of a
        and b gives the even bytes' products (masked to the low byte) and VPMULLW of a and b
        shifted down by 8 the odd bytes' (shifted back up); one OR merges them. The low 8
        bits of a product are the same for signed and unsigned lanes (SDM "PMULLW")."""
        x, y = u.src[0], u.src[1]
        dt, n = x.dtype, x.shape[0]
        w = vw(dt, n)
        three = f"_{w}_{w}_{w}m"
        if uniform_const(y) is None and uniform_const(x) is not None:
            x, y = y, x                         # the product commutes: the constant second
        k = uniform_const(y)
        t = None if k is None else self.mul8_const(self.reg(x), k, n)
        if t is None:
            t = self.mul8(self.reg(x), self.reg(y), n)
        if u.op is Ops.MULACC:
            s = self.new("vec")
            self.emit("vpaddb" + three, s, t, self.reg(u.src[2]))
            return s
        return t

    def mul8_const(self, a: VReg, k: int, n: int) -> VReg | None:
        """a * k on n byte lanes for k = ±(2^p ± 2^q) modulo 256 (shift_terms) as byte
        doublings (VPADDB x, x), word shifts masked to the byte (VPSLLW, VPAND) and one add or
        subtract: int8_arith's x*3 is two VPADDB, where mul8 takes two VPMULLW and five more
        ops (clang adds x + x + x). Exact modulo 256, as the low byte of any product; None
        for another constant (mul8 then)."""
        w = vw(dtypes.uint8, n)
        three = f"_{w}_{w}_{w}m"
        k &= 0xFF
        neg = shift_terms(k, 8) is None and (-k & 0xFF) != 0 and shift_terms(-k & 0xFF, 8)
        terms = shift_terms(-k & 0xFF if neg else k, 8)
        if terms is None:
            return None
        hi, lo, sign = terms
        doubled = [a]                           # a, 2a, 4a: shared by both terms

        def shifted(p: int) -> VReg:
            """a << p in each byte."""
            if p <= 2:                          # doublings: one µop each, no mask
                while len(doubled) <= p:
                    d = self.new("vec")
                    self.emit("vpaddb" + three, d, doubled[-1], doubled[-1])
                    doubled.append(d)
                return doubled[p]
            sh, r = self.new("vec"), self.new("vec")
            self.emit(f"vpsllw_{w}_{w}_imm8", sh, a, p)
            self.emit("vpand" + three, r, sh,
                      self.ivec_splat_const((0xFF << p) & 0xFF, dtypes.uint8, n))
            return r

        if lo < 0:
            r = shifted(hi)
        else:
            r = self.new("vec")
            self.emit(f"vp{'add' if sign == '+' else 'sub'}b" + three, r, shifted(hi),
                      shifted(lo))
        if not neg:
            return r
        z, t = self.new("vec"), self.new("vec")
        self.emit("vzero", z)
        self.emit("vpsubb" + three, t, z, r)
        return t

    def mul8(self, a: VReg, b: VReg, n: int) -> VReg:
        """The low bytes of n byte lanes' products (ivec_mul8)."""
        w = vw(dtypes.uint8, n)
        three = f"_{w}_{w}_{w}m"
        even, ah, bh, odd0, odd, lo, t = (self.new("vec") for _ in range(7))
        self.emit("vpmullw" + three, even, a, b)
        self.emit(f"vpsrlw_{w}_{w}_imm8", ah, a, 8)
        self.emit(f"vpsrlw_{w}_{w}_imm8", bh, b, 8)
        self.emit("vpmullw" + three, odd0, ah, bh)
        self.emit(f"vpsllw_{w}_{w}_imm8", odd, odd0, 8)
        self.emit("vpand" + three, lo, even, self.ivec_splat_const(0x00FF, dtypes.uint16, n // 2))
        self.emit("vpor" + three, t, lo, odd)
        return t

    def byte_table(self, table: list[int], n: int) -> VReg:
        """A 16-byte table repeated in each 128-bit block of n byte lanes (VPSHUFB looks up
        within a block, SDM "PSHUFB")."""
        t = self.new("vec")
        self.emit(imov(vw(dtypes.uint8, n)), t, Mem(),
                  arg={"rip": self.pool.label(bytes(table + [0] * (16 - len(table)))
                                              * max(1, n // 16))})
        return t

    def ivec_shift8(self, u: UOp) -> VReg:
        """SHL/SHR of int8/uint8 lanes: x86 has no byte shift (SDM "PSLLW/PSLLD/PSLLQ": words
        and up). Only amounts 0..7 are defined (docs/semantics.md). By a constant c: VPSLLW/
        VPSRLW of the words and a VPAND that clears the bits crossed from the neighbour byte
        (0xFF << c or 0xFF >> c); x << 1 is x + x. By per-lane amounts s: SHL multiplies by
        2^s (VPSHUFB of a table of powers, mul8); SHR takes x >> 4, >> 2, >> 1 (masked) where
        s's bits 2, 1, 0 are set, moved in turn to each byte's sign bit for VPBLENDVB (VPSLLW
        by 5, then VPADDB doubling). Arithmetic SHR: the logical result r, then (r ^ m) - m with m =
        0x80 >> s, the shifted sign bit, which sign-extends it."""
        x, b = u.src
        dt, n = x.dtype, x.shape[0]
        w = vw(dt, n)
        three = f"_{w}_{w}_{w}m"
        a, c = self.reg(x), uniform_const(b)
        if c == 0:
            return a
        if c == 1 and u.op is Ops.SHL:              # x + x: one VPADDB, no mask
            t = self.new("vec")
            self.emit("vpaddb" + three, t, a, a)
            return t
        if c is not None and 0 <= c < 8:
            sh, r = self.new("vec"), self.new("vec")
            kind = "vpsllw" if u.op is Ops.SHL else "vpsrlw"
            self.emit(f"{kind}_{w}_{w}_imm8", sh, a, c)
            keep = (0xFF << c) & 0xFF if u.op is Ops.SHL else 0xFF >> c
            self.emit("vpand" + three, r, sh, self.ivec_splat_const(keep, dtypes.uint8, n))
            m = self.ivec_splat_const(0x80 >> c, dtypes.uint8, n) \
                if dt.is_signed and u.op is Ops.SHR else None
        else:
            s = self.ivec_amount(b, dt, n)
            if u.op is Ops.SHL:
                pow2 = self.new("vec")
                self.emit("vpshufb" + three, pow2, self.byte_table([1 << i for i in range(8)],
                                                                   n), s)
                return self.mul8(a, pow2, n)
            k, r = self.new("vec"), a
            self.emit(f"vpsllw_{w}_{w}_imm8", k, s, 5)        # s's bit 2 in each sign bit
            for step in (4, 2, 1):
                sh, part, nr = self.new("vec"), self.new("vec"), self.new("vec")
                self.emit(f"vpsrlw_{w}_{w}_imm8", sh, r, step)
                self.emit("vpand" + three, part, sh,
                          self.ivec_splat_const(0xFF >> step, dtypes.uint8, n))
                self.emit(f"vpblendvb{three}_{w}", nr, r, part, k)
                r = nr
                if step > 1:
                    k2 = self.new("vec")
                    self.emit("vpaddb" + three, k2, k, k)      # the next bit of s
                    k = k2
            m = None
            if dt.is_signed:
                m = self.new("vec")
                self.emit("vpshufb" + three, m, self.byte_table([0x80 >> i for i in range(8)],
                                                                n), s)
        if m is None:
            return r
        f, t = self.new("vec"), self.new("vec")
        self.emit("vpxor" + three, f, r, m)
        self.emit("vpsubb" + three, t, f, m)
        return t

    def ivec_mulhi(self, u: UOp) -> VReg:
        """MULHI of int32/uint32 lanes: VPMULUDQ of the even lanes and of the odd ones shifted
        down (SDM "PMULUDQ": dword 0 of each qword, a 64-bit product), the high dwords merged;
        signed lanes as mulhi_u(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0)."""
        x, y = u.src
        dt, n = x.dtype, x.shape[0]
        w = vw(dt, n)
        three = f"_{w}_{w}_{w}m"
        a, b = self.reg(x), self.reg(y)
        odd_a, odd_b = self.new("vec"), self.new("vec")
        self.emit(f"vpsrlq_{w}_{w}_imm8", odd_a, a, 32)
        self.emit(f"vpsrlq_{w}_{w}_imm8", odd_b, b, 32)
        even, odd = self.new("vec"), self.new("vec")
        self.emit("vpmuludq" + three, even, a, b)
        self.emit("vpmuludq" + three, odd, odd_a, odd_b)
        even_hi, odd_hi, t = self.new("vec"), self.new("vec"), self.new("vec")
        self.emit(f"vpsrlq_{w}_{w}_imm8", even_hi, even, 32)
        mask = self.ivec_splat_const(0xFFFFFFFF00000000, dtypes.uint64, n // 2)
        self.emit("vpand" + three, odd_hi, odd, mask)
        self.emit("vpor" + three, t, even_hi, odd_hi)
        if dt.is_signed:
            for p, q in ((a, b), (b, a)):
                sign, part, t2 = self.new("vec"), self.new("vec"), self.new("vec")
                self.emit(f"vpsrad_{w}_{w}_imm8", sign, p, 31)
                self.emit("vpand" + three, part, sign, q)
                self.emit("vpsubd" + three, t2, t, part)
                t = t2
        return t

    def ivec_less(self, dt: DType, n: int, a: VReg, b: VReg) -> VReg:
        """The lane mask a < b: PCMPGT (signed) of b and a; unsigned lanes are compared as
        signed after flipping their sign bits."""
        w = vw(dt, n)
        three = f"_{w}_{w}_{w}m"
        if not dt.is_signed:
            bias = self.ivec_splat_const(1 << (dt.bits - 1), dt, n)
            a2, b2 = self.new("vec"), self.new("vec")
            self.emit("vpxor" + three, a2, a, bias)
            self.emit("vpxor" + three, b2, b, bias)
            a, b = a2, b2
        t = self.new("vec")
        self.emit(f"vpcmpgt{_SFX[dt.itemsize]}" + three, t, b, a)
        return t

    def ivec_amount(self, b: UOp, dt: DType, n: int) -> VReg:
        """A shift-amount vector with lanes as wide as the shifted ones (amounts of another
        integer dtype arrive as a STACK of scalars after devectorize)."""
        if b.op is Ops.STACK and b.dtype.itemsize != dt.itemsize:
            # a STACK of amounts of another width (maybe wider than a legal vector: uint64 x 8
            # beside int32 x 8) is built from its scalars at the shifted lanes' width
            consts = [strong_const(x) for x in b.src]
            if all(c is not None for c in consts):
                # an amount >= bits is unspecified: keeping its low bits is as good as any
                data = rodata16(b"".join(const_bytes(int(c) & ((1 << dt.bits) - 1), dt)
                                         for c in consts))
                t = self.new("vec")
                w = vw(dt, n)
                self.emit(imov(w), t, Mem(), arg={"rip": self.pool.label(data)})
                return t
            return self.ivec_from([self.ext(x, dt.bits if dt.itemsize == 8 else 32)
                                   for x in b.src], dt)
        if is_int_vector(b):
            if b.dtype.itemsize == dt.itemsize:
                return self.reg(b)
            # lanes of another width: read each (vpextr* zero-extends) and re-insert
            return self.ivec_from([self.ivec_lane(self.reg(b), b.dtype, n, k)
                                   for k in range(n)], dt)
        if b.op is not Ops.STACK:
            raise SelectError(f"a vector shift amount of {b.dtype} has no x86 rule")
        return self.ivec_from([self.ext(x, dt.bits if dt.itemsize == 8 else 32)
                               for x in b.src], dt)

    def ivec_splat_const(self, c: int, dt: DType, n: int) -> VReg:
        """A vector of n lanes all holding the constant c (from .rodata)."""
        t = self.new("vec")
        w = vw(dt, n)
        self.emit(imov(w), t, Mem(),
                  arg={"rip": self.pool.label(rodata16(const_bytes(c, dt) * n))})
        return t

    def ivec_stack(self, u: UOp) -> VReg:
        """A STACK of integer scalars: constants, a broadcast, or lane inserts."""
        dt, n = u.dtype, u.shape[0]
        w = vw(dt, n)
        consts = [strong_const(s) for s in u.src]
        if all(c is not None for c in consts):
            t = self.new("vec")
            data = rodata16(b"".join(const_bytes(c, dt) for c in consts))
            self.emit(imov(w), t, Mem(), arg={"rip": self.pool.label(data)})
            return t
        if all(s is u.src[0] for s in u.src):
            x, t = self.new("vec"), self.new("vec")
            if dt.itemsize == 8:
                self.emit("vmovq_x_r64", x, self.reg(u.src[0]))
            else:
                self.emit("vmovd_x_rm32", x, self.reg(u.src[0]))
            self.emit(f"vpbroadcast{_SFX[dt.itemsize]}_{w}_xm{dt.bits}", t, x)
            return t
        steps = lane_steps(u.src) if dt.itemsize in (4, 8) else None
        if steps is not None:
            return self.ivec_steps(self.reg(u.src[0]), steps, dt, n)
        return self.ivec_from([self.reg(x) for x in u.src], dt)

    def ivec_steps(self, x0: VReg, steps: list[int], dt: DType, n: int) -> VReg:
        """Lanes x0 + steps[k] (an index vector [4i, 4i+1, 4i+2, 4i+3]): one broadcast of x0
        and one VPADDD/Q of the constant steps from .rodata, instead of a VPINSR per lane
        (a chain of n dependent inserts, SDM "PINSRD": 2 uops each)."""
        w, s = vw(dt, n), _SFX[dt.itemsize]
        x, b, t = self.new("vec"), self.new("vec"), self.new("vec")
        if dt.itemsize == 8:
            self.emit("vmovq_x_r64", x, x0)
        else:
            self.emit("vmovd_x_rm32", x, x0)
        self.emit(f"vpbroadcast{s}_{w}_xm{dt.bits}", b, x)
        mask = (1 << dt.bits) - 1
        data = b"".join(const_bytes(k & mask, uint_of(dt.itemsize)) for k in steps)
        self.emit(f"vpadd{s}_{w}_{w}_{w}m", t, b, Mem(), arg={"rip": self.pool.label(data)})
        return t

    def ivec_from(self, regs: list[VReg], dt: DType) -> VReg:
        """An integer vector from GPRs (one lane each): vpinsr{b,w,d,q} into each 128-bit
        half, then vinserti128."""
        per = 16 // dt.itemsize
        s = _SFX[dt.itemsize]
        src = {1: "r32m8", 2: "r32m16", 4: "rm32", 8: "rm64"}[dt.itemsize]
        if len(regs) * dt.itemsize == 64:              # a zmm (int32 x 16): two ymm halves
            half = len(regs) // 2
            return self.join_z(self.ivec_from(regs[:half], dt), self.ivec_from(regs[half:], dt))
        halves = []
        for h in range(0, len(regs), per):
            acc = self.new("vec")
            self.emit("vzero", acc)
            for k, r in enumerate(regs[h:h + per]):
                t = self.new("vec")
                self.emit(f"vpinsr{s}_x_x_{src}_imm8", t, acc, r, k)
                acc = t
            halves.append(acc)
        if len(halves) == 1:
            return halves[0]
        if len(halves) != 2:
            raise SelectError(f"a vector of {len(regs)} x {dt} is wider than a ymm register")
        y = self.new("vec")
        self.emit("vinserti128_y_y_xm_imm8", y, halves[0], halves[1], 1)
        return y


def shift_source(w: str, a: VReg | Mem) -> str:
    """The source kind of a shift by an immediate: a load folded in (x86-64-v4, EVEX rows
    with ModRM.rm memory: u64_shift's E_50, as clang) or the EVEX.512 row's zm; else the VEX
    row's register (its ModRM.rm is a register only, and two bytes shorter)."""
    return f"{w}m" if w == "z" or isinstance(a, Mem) else w
