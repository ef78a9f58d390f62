"""x86 selection of float and vector values: float ALU (scalar ss/sd, packed ps/pd on
xmm/ymm/zmm), compare masks and blends, lanes, STACK building (the vector casts: vcast.py).
A mixin of X86Selector (kcc/isel/x86/select.py)."""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir import UOp, dtypes
from kcc.ir.ops import Ops
from kcc.ir.consts import const_int
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.isel.x86.base import (CMP_EQ_OQ, CMP_LT_OS, CMP_NEQ_UQ, ROUND_TRUNC, SelectError,
                               const_bytes, fs, imm_form, positive_zero, strong_const, uint_of,
                               vw)
from kcc.isel.x86.fmin import X86FMin
from kcc.isel.x86.gather import X86Gather
from kcc.isel.x86.ivec import ZMM_INT_OPS, is_int_vector
from kcc.isel.x86.transpose import X86Transpose
from kcc.isel.x86.vgather import X86VGather
from kcc.isel.x86.regs import reg_class
from kcc.isel.x86.shuf import X86Shuf
from kcc.isel.x86.vcast import X86VCast


# vector bool ops on lane masks: bitwise, so the float forms serve every lane width (and have
# EVEX zmm rows)
_BOOL_OPS = {Ops.AND: "vandps", Ops.OR: "vorps", Ops.XOR: "vxorps"}


def _xmm_lanes(s: UOp) -> tuple[UOp, int] | None:
    """(v, k) when s is lane k of a 4-lane float32 vector value v (one xmm), else None."""
    if s.op is not Ops.INDEX or s.src[0].kind != "value" or s.dtype != dtypes.float32:
        return None
    k = const_int(s.src[1])
    if s.src[0].shape != (4,) or k is None:
        return None
    return s.src[0], k


class X86Vec(X86Shuf, X86Gather, X86VGather, X86Transpose, X86FMin, X86VCast):
    """Float and vector rules (mixed into X86Selector); lane permutations in X86Shuf."""

    # -- vectors ------------------------------------------------------------------------------
    def lane(self, v: VReg, dt: DType, lanes: int, k: int) -> VReg:
        """Lane k of a vector register, as a scalar in the low lane of a new xmm."""
        if dt.itemsize * lanes == 64:
            lo, hi = self.split_z(v)
            half = lanes // 2
            return self.lane(hi if k >= half else lo, dt, half, k % half)
        src = v
        if dt.itemsize * lanes == 32 and dt.itemsize * k >= 16:
            hi = self.new("vec")
            self.emit("vextractf128_xm_y_imm8", hi, v, 1)
            src, k = hi, k - 16 // dt.itemsize
        if k == 0:
            # lane 0 is the low lane already, which is all a scalar reads (its upper lanes
            # are never read: a shuffle would have filled them with copies of lane 0 anyway)
            return src
        if dt == dtypes.float32 and k == 1:
            # a 64-bit shift (VPSRLQ runs on ports 0/1, a shuffle only on port 5, where a
            # chain of lane reads queues: half_max_nan's MAX over 8 lanes); lanes 2 and 3
            # stay one shuffle each (a shift of the high qword would be two instructions:
            # softmax_rows' row sums read every lane once)
            t = self.new("vec")
            self.emit("vpsrlq_x_x_imm8", t, src, 32)
            return t
        t = self.new("vec")
        if dt == dtypes.float32:
            self.emit("vshufps_x_x_xm_imm8", t, src, src, k)
        else:
            self.emit("vshufpd_x_x_xm_imm8", t, src, src, k)
        return t

    def mask_lane(self, base: UOp, k: int) -> VReg:
        """Lane k of a vector compare's (or bool op's) mask as a bool (0/1) in a GPR."""
        if self.evex and base in self.kval:
            return self.klane(self.kval[base], k)    # x86-64-v4: a bit of its opmask
        if base.op in _BOOL_OPS and base.shape:
            width, m = self.mask_width(base), self.reg(base)
        elif base.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) and base.src[0].shape:
            width, m = base.src[0].dtype.itemsize, self.reg(base)
        else:
            raise SelectError("a lane of this bool vector is not selectable on x86")
        # the mask's lanes are as wide as the compared values: read one as an unsigned int
        t = self.ivec_lane(m, uint_of(width), base.shape[0], k)
        self.emit("and_rm32_imm8", t, 1)
        return t

    # -- bool vectors: lane masks combined by vector AND/OR/XOR ------------------------------
    def mask_width(self, u: UOp) -> int:
        """The lane width (bytes) a bool vector op computes its mask in: that of the first
        vector compare under it (no resize there), else 4. First: the one a breadth-first
        walk through the bool ops (srcs in order) meets first, i.e. the nearest, and among
        the nearest the one whose path takes the earliest srcs. That is found per node from
        its srcs' answers (nearest src, ties to the earlier src), once per node: a DAG of
        bool ops costs its nodes, not a walk per op nor a step per path."""
        memo = self.mask_widths               # node → (distance, width) or None
        work = [(u, False)]
        while work:
            n, ready = work.pop()
            if n in memo:
                continue
            if n.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) and n.src[0].shape:
                w = n.src[0].dtype.itemsize
                memo[n] = (0, w) if w * n.shape[0] <= 64 else None
            elif n.op not in _BOOL_OPS:
                memo[n] = None
            elif not ready:
                work.append((n, True))
                work.extend((s, False) for s in n.src if s not in memo)
            else:
                best = None
                for s in n.src:            # (a strict < keeps the earlier src on a tie)
                    got = memo[s]
                    if got is not None and (best is None or got[0] + 1 < best[0]):
                        best = (got[0] + 1, got[1])
                memo[n] = best
        got = memo[u]
        return 4 if got is None else got[1]

    def bool_vec(self, u: UOp, width: int) -> VReg:
        """A bool vector as a lane mask of `width`-byte lanes (all ones where true): compares
        (resized when their operands are of another width), STACKs of bools, and AND/OR/XOR
        of those as one VANDPS/VORPS/VXORPS (bitwise, so any lane width)."""
        memo = self.bool_masks
        lanes = u.shape[0]
        key = (u, width, tuple(lp[0] for lp in self.loops))
        if key in memo:
            return memo[key]
        if u.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) and u.src[0].shape:
            w0 = u.src[0].dtype.itemsize
            m = self.reg(u)
            if w0 != width:
                m = self.mask_resize(m, w0, uint_of(width), lanes)
        elif u.op is Ops.STACK and all(strong_const(x) is not None for x in u.src):
            data = b"".join((b"\xff" if strong_const(x) else b"\0") * width for x in u.src)
            m = self.new("vec")
            w = vw(uint_of(width), lanes)
            self.emit(f"vmovups_{w}_{w}m", m, Mem(), arg={"rip": self.pool.label(data)})
        elif u.op is Ops.STACK:
            m = self.mask_of(u.src, uint_of(width))
        elif u.op in _BOOL_OPS:
            w = vw(uint_of(width), lanes)
            a, b = (self.bool_vec(x, width) for x in u.src)
            m = self.new("vec")
            self.emit(f"{_BOOL_OPS[u.op]}_{w}_{w}_{w}m", m, a, b)
        else:
            raise SelectError(f"a vector bool {u.op.name} is not selectable on x86")
        memo[key] = m
        return m

    def sel_STACK(self, u: UOp) -> VReg | None:
        """Build a vector from scalars: a constant from .rodata, else lane inserts."""
        dt, n = u.dtype, u.shape[0]
        widest = 64 if self.evex and dt in ZMM_INT_OPS else 32      # int32 x 16 on v4
        if is_int_vector(u) and dt.itemsize * n > widest:
            # wider than a ymm (uint64 x 8 shift amounts beside int32 x 8): only its lanes
            # are used, each where it is needed
            return None
        w = self.wider.get(u)
        if w is not None and self.val.get(w) is not None:
            # a wider splat of the same scalar holds these lanes low (analysis.wider_splats)
            self.val[u] = self.val[w]
            return self.val[u]
        if is_int_vector(u):
            # lanes of integer vectors move like float lanes of their width (x86_shuf)
            self.val[u] = self.shuffle(u) or self.ivec_stack(u)
            return self.val[u]
        if reg_class(dt) != "vec":
            # bools, other ints, halves: only their lanes are used (INDEX, a WHERE's mask)
            return None
        t = self.vgather(u)                # loads at an index vector's lanes: VGATHERDPS (v4)
        if t is None:
            t = self.transpose8(u)         # a column of an 8 x 8 block of memory: shuffles
        if t is None:
            t = self.shuffle(u)            # every lane a lane of a vector: shuffles
        if t is None:
            t = self.gather(u)             # loads at constant offsets: one VGATHERDPS (v4)
        if t is not None:
            self.val[u] = t
            return t
        consts = [strong_const(s) for s in u.src]
        w = vw(dt, n)
        if all(s is u.src[0] for s in u.src) and consts[0] is None:
            t = self.new("vec")       # a splat: one broadcast (AVX2 takes a register source)
            v4 = _xmm_lanes(u.src[0])
            if v4 is not None and n in (4, 8):
                # a lane of an xmm to every lane: one in-register shuffle (SHUFPS, imm8 picks
                # the source lane of each destination lane), doubled for a ymm
                v, k = v4
                self.emit("vshufps_x_x_xm_imm8", t, self.reg(v), self.reg(v), k * 0x55)
                if n == 8:
                    y = self.new("vec")
                    self.emit("vinsertf128_y_y_xm_imm8", y, t, t, 1)
                    t = y
            elif dt == dtypes.float32 and (g := self.gated_splat(u.src[0], 0, dt, w)) is not None:
                t = g                             # a gated scalar load: broadcast, then AND
            elif dt == dtypes.float32:
                m = self.loaded_mem(u.src[0])     # a scalar just loaded: broadcast from memory
                self.emit(f"vbroadcastss_{w}_xm32", t, m if m is not None else self.reg(u.src[0]))
            elif w in ("y", "z"):           # float64 x4 / x8 (a zmm too: not just 2 lanes)
                m = self.loaded_mem(u.src[0])
                self.emit(f"vbroadcastsd_{w}_xm64", t, m if m is not None else self.reg(u.src[0]))
            elif (m := self.loaded_mem(u.src[0])) is not None:
                self.emit("vmovddup_x_xm64", t, m)      # MOVDDUP m64: the scalar twice
            else:
                a = self.reg(u.src[0])
                self.emit("vunpcklpd_x_x_xm", t, a, a)
        elif all(c is not None for c in consts):
            t = self.new("vec")
            data = b"".join(const_bytes(c, dt) for c in consts)
            if data == bytes(len(data)):
                self.emit("vzero", t)          # all zero bits (tinygrad's accumulator start)
            else:
                self.emit(f"vmovup{fs(dt)}_{w}_{w}m", t, Mem(),
                          arg={"rip": self.pool.label(data)})
        else:
            t = self.build(u.src, dt)
        self.val[u] = t
        return t

    def build(self, srcs: tuple[UOp, ...], dt: DType) -> VReg:
        """A vector register holding the scalar float srcs in order (xmm, ymm or zmm)."""
        nbytes = dt.itemsize * len(srcs)
        if nbytes <= 16:
            return self.build128(srcs, dt)
        c = 16 // dt.itemsize
        if all(srcs[i:i + c] == srcs[:c] for i in range(c, len(srcs), c)):
            # every 128-bit block the same (a column repeated): built once, then repeated
            return self.repeat(self.build128(srcs[:c], dt), nbytes)
        half = len(srcs) // 2
        lo, hi = self.build(srcs[:half], dt), self.build(srcs[half:], dt)
        t = self.new("vec")
        if nbytes == 64:
            self.emit("vinsertf64x4_z_z_ym_imm8", t, lo, hi, 1)
        else:
            self.emit("vinsertf128_y_y_xm_imm8", t, lo, hi, 1)
        return t

    def build128(self, srcs: tuple[UOp, ...], dt: DType) -> VReg:
        """An xmm holding the scalar float srcs in order (one scalar repeated: a broadcast)."""
        if len(srcs) > 1 and all(s is srcs[0] for s in srcs):
            g = self.gated_splat(srcs[0], 0, dt, "x") if len(srcs) == 4 else None
            if g is not None:
                return g                          # a gated scalar load: broadcast, then AND
            m = self.loaded_mem(srcs[0]) if dt == dtypes.float32 else None
            t = self.new("vec")
            self.emit("vbroadcastss_x_xm32" if dt == dtypes.float32 else "vmovddup_x_xm64", t,
                      m if m is not None else self.reg(srcs[0]))
            return t
        acc = self.reg(srcs[0])
        for k, s in enumerate(srcs[1:], 1):
            t = self.new("vec")
            v4 = _xmm_lanes(s) if dt == dtypes.float32 else None
            if v4 is not None:
                # INSERTPS reads lane count_s (imm8[7:6]) of its source: no extract first
                self.emit("vinsertps_x_x_xm32_imm8", t, acc, self.reg(v4[0]),
                          (v4[1] << 6) | (k << 4))
            elif dt == dtypes.float32:
                # a scalar just loaded is read by the INSERTPS itself (a memory source: count_s
                # is ignored, SDM "INSERTPS"): a load deferred for it (foldable_loads), else
                # one already emitted, whose VMOVSS then goes (dce)
                m = self.folded(s)
                if m is None and self.loaded_once(s):
                    m = self.loaded_mem(s)
                if m is not None:
                    # a scalar in memory: VBROADCASTSS m32 (a load-port micro-op alone) and
                    # VBLENDPS (ports 0/1/5), where VINSERTPS m32 also takes port 5, which
                    # F16C conversions and shuffles queue on (half_softmax's strided lanes)
                    b = self.new("vec")
                    self.emit("vbroadcastss_x_xm32", b, m)
                    self.emit("vblendps_x_x_xm_imm8", t, acc, b, 1 << k)
                else:
                    self.emit("vinsertps_x_x_xm32_imm8", t, acc, self.reg(s), k << 4)
            else:
                self.emit("vunpcklpd_x_x_xm", t, acc, self.reg(s))
            acc = t
        return acc

    def loaded_once(self, s: UOp) -> bool:
        """Whether s's load has no user but STACK lanes (each may read memory: VMOVSS goes)."""
        # (a load another op also reads stays: re-reading it for VBROADCASTSS + VBLENDPS is a
        # second load and two micro-ops where VINSERTPS of its register is one; cummax_777's
        # r_3_4_4, whose row's first element is a lane and a MAX operand)
        return self.nusers[s] == self.stack_reads[s]

    def falu(self, u: UOp) -> VReg:
        """Float ALU (scalar ss/sd, packed ps/pd on xmm/ymm/zmm)."""
        dt, lanes = u.dtype, (u.shape[0] if u.shape else 1)
        if self.evex and lanes > 1:
            t = self.embedded_broadcast(u, dt, lanes)
            if t is not None:
                return t
        if (m := self.neg_max_neg(u, dt, lanes)) is not None:
            return m
        if u.op in (Ops.ADD, Ops.MUL) and u.src[0] in self.deferred:
            # a folded load as the left operand: ADD and MUL commute (NaN payloads are free)
            return self.fop(u.op, dt, lanes, [self.reg(u.src[1]), self.fsrc(u.src[0])])
        if u.op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV):
            b = self.fsrc(u.src[1])         # a constant right operand is read from .rodata
            return self.fop(u.op, dt, lanes, [self.reg(u.src[0]), b])
        return self.fop(u.op, dt, lanes, [self.reg(x) for x in u.src])

    def embedded_broadcast(self, u: UOp, dt: DType, lanes: int) -> VReg | None:
        """x86-64-v4: a packed op one of whose operands is a splat just broadcast from memory
        reads that scalar itself, `vmulps zmm, zmm, dword ptr [mem]{1to16}` (EVEX.b, SDM
        Vol. 2 §2.7.5); the VBROADCASTSS then has no user and goes (dce). Only a splat with
        this one user: another keeps the broadcast, and the re-read would only keep its
        address registers live longer (spilled, reloaded: conv2d). The operand in the
        r/m slot: ADD, MUL and MULACC's product commute (NaN payloads are free), SUB and FDIV
        broadcast their second operand, MAX(a, b) = vmaxps(b, a) its first."""
        slots = {Ops.ADD: (1, 0), Ops.MUL: (1, 0), Ops.MULACC: (1, 0), Ops.SUB: (1,),
                 Ops.FDIV: (1,), Ops.MAX: (0,)}.get(u.op)
        if slots is None or dt not in (dtypes.float32, dtypes.float64):
            return None
        name = {Ops.ADD: "vadd", Ops.MUL: "vmul", Ops.SUB: "vsub", Ops.FDIV: "vdiv",
                Ops.MAX: "vmax", Ops.MULACC: "vfmadd231"}[u.op]
        w = vw(dt, lanes)
        form = f"{name}p{fs(dt)}_{w}_{w}_m{dt.bits}bcst"
        for k in slots:
            b = u.src[k]
            if b.op is not Ops.STACK or any(x is not b.src[0] for x in b.src) \
                    or self.nusers[b] != 1 or form not in FORMS or b in self.wider:
                continue
            other = u.src[1 - k]
            if other in self.deferred:
                continue                 # that load folds into the plain form instead
            ra = self.reg(other)
            acc = self.reg(u.src[2]) if u.op is Ops.MULACC else None
            m = self.broadcast_mem(b)    # after the registers: nothing emitted after it
            if m is None:
                continue
            # MULACC: a*b+c fused, one rounding, into a copy of c (a register-to-register
            # copy neither writes memory nor redefines m's address registers)
            t = self.new("vec") if acc is None else self.copy(acc, dt, lanes)
            self.emit(form, t, ra, m)
            return t
        return None

    def fform(self, op: Ops, dt: DType, lanes: int) -> str:
        """The form computing op on lanes of dt."""
        w, s = vw(dt, lanes), fs(dt)
        packed = lanes > 1
        kind = f"p{s}_{w}_{w}_{w}m" if packed else f"s{s}_x_x_xm{dt.bits}"
        basic = {Ops.ADD: "vadd", Ops.SUB: "vsub", Ops.MUL: "vmul", Ops.FDIV: "vdiv",
                 Ops.MAX: "vmax", Ops.RECIPROCAL: "vdiv"}
        if op in basic:
            return basic[op] + kind
        if op is Ops.NEG:
            return f"vxorp{s}_{w}_{w}_{w}m"
        if op is Ops.SQRT:
            return f"vsqrtp{s}_{w}_{w}m" if packed else f"vsqrts{s}_x_x_xm{dt.bits}"
        if op is Ops.TRUNC:
            # x86-64-v4: VRNDSCALE (EVEX, so xmm16-31 and a whole zmm), whose imm8[1:0] and [3]
            # are VROUND's and [7:4] = 0 keeps no fraction bits (SDM Vol. 2 "VRNDSCALEPS")
            r = "vrndscale" if self.evex else "vround"
            return f"{r}p{s}_{w}_{w}m_imm8" if packed else f"{r}s{s}_x_x_xm{dt.bits}_imm8"
        if op is Ops.MULACC:
            return f"vfmadd231p{s}_{w}_{w}_{w}m" if packed else \
                f"vfmadd231s{s}_x_x_xm{dt.bits}"
        raise SelectError(f"{op.name} on {dt} has no x86 rule (it should be decomposed)")

    def fop(self, op: Ops, dt: DType, lanes: int, srcs: list) -> VReg:
        """op on registers (or a .rodata operand) of lanes x dt; a zmm op without an EVEX form
        here is done on its two ymm halves."""
        form = self.fform(op, dt, lanes)
        if form not in FORMS:
            if dt.itemsize * lanes != 64:
                raise SelectError(f"no x86 form {form} for {op.name} on {lanes} x {dt}")
            parts = [self.split_z(self.as_reg(x, dt, lanes)) for x in srcs]
            lo = self.fop(op, dt, lanes // 2, [p[0] for p in parts])
            hi = self.fop(op, dt, lanes // 2, [p[1] for p in parts])
            return self.join_z(lo, hi)
        t = self.new("vec")
        if op is Ops.MAX:
            # MAX(a, b) = a < b ? b : a. vmaxps dst, x, y returns y unless x > y (SDM MAXPS:
            # the second source is returned on NaN or equal zeros), so max(b, a) is exact.
            self.emit(form, t, srcs[1], srcs[0])
        elif op is Ops.NEG:
            self.emit(form, t, srcs[0], self.materialize(-0.0, dt, lanes))
        elif op is Ops.RECIPROCAL:
            self.emit(form, t, self.materialize(1.0, dt, lanes), srcs[0])
        elif op is Ops.SQRT:
            self.emit(form, t, *([srcs[0]] if lanes > 1 else [srcs[0], srcs[0]]))
        elif op is Ops.TRUNC:
            self.emit(form, t, *([srcs[0]] if lanes > 1 else [srcs[0], srcs[0]]), ROUND_TRUNC)
        elif op is Ops.MULACC:
            # fused a*b+c: one rounding, as docs/semantics.md defines MULACC
            t = self.copy(srcs[2], dt, lanes)
            self.emit(form, t, srcs[0], srcs[1])
        else:
            b, arg = srcs[1] if isinstance(srcs[1], tuple) else (srcs[1], None)
            self.emit(form, t, srcs[0], b, arg=arg)
        return t

    def as_reg(self, x: VReg | tuple, dt: DType, lanes: int) -> VReg:
        """x as a register: a (.rodata operand, label) pair is loaded."""
        if not isinstance(x, tuple):
            return x
        t = self.new("vec")
        self.emit(f"vmovup{fs(dt)}_{vw(dt, lanes)}_{vw(dt, lanes)}m", t, x[0], arg=x[1])
        return t

    def split_z(self, v: VReg) -> tuple[VReg, VReg]:
        """The low and high ymm halves of a zmm register."""
        lo, hi = self.new("vec"), self.new("vec")
        self.emit("vmovaps_y_ym", lo, v)           # the low 256 bits are the ymm view
        self.emit("vextractf64x4_ym_z_imm8", hi, v, 1)
        return lo, hi

    def join_z(self, lo: VReg, hi: VReg) -> VReg:
        """A zmm register from two ymm halves."""
        t = self.new("vec")
        self.emit("vinsertf64x4_z_z_ym_imm8", t, lo, hi, 1)
        return t

    def fsrc(self, u: UOp) -> VReg | tuple[Mem, object]:
        """A float operand for an r/m slot: a constant is read from .rodata in place (a
        (memory operand, rip label) pair)."""
        m = self.folded(u)
        if m is not None:
            return m, None                  # a load read in place
        c = strong_const(u)
        if c is None or u.op is Ops.STACK:
            return self.reg(u)
        lanes = u.shape[0] if u.shape else 1
        return Mem(), {"rip": self.pool.label(const_bytes(c, u.dtype) * lanes)}

    def fmask(self, u: UOp) -> VReg:
        """A float compare as an all-ones/zero lane mask in a vector register."""
        a_u = u.src[0]
        dt = a_u.dtype
        lanes = a_u.shape[0] if a_u.shape else 1
        pred = {Ops.CMPLT: CMP_LT_OS, Ops.CMPEQ: CMP_EQ_OQ, Ops.CMPNE: CMP_NEQ_UQ}[u.op]
        # a load folded into the compare read in place (x86_kmask.compare_operands)
        ra, rb = self.compare_operands(u, fold=dt.itemsize * lanes < 64)
        return self.cmp_mask(pred, dt, lanes, ra, rb)

    def cmp_mask(self, pred: int, dt: DType, lanes: int, ra: VReg, rb: VReg | Mem) -> VReg:
        """vcmp{s,p}{s,d} with predicate pred; a zmm compare is done on ymm halves so the mask
        stays a vector of lanes (AVX-512 would give a k register)."""
        if dt.itemsize * lanes == 64:
            (a0, a1), (b0, b1) = self.split_z(ra), self.split_z(rb)
            return self.join_z(self.cmp_mask(pred, dt, lanes // 2, a0, b0),
                               self.cmp_mask(pred, dt, lanes // 2, a1, b1))
        m = self.new("vec")
        if lanes > 1:
            w = vw(dt, lanes)
            form = f"vcmpp{fs(dt)}_{w}_{w}_{w}m_imm8"
        else:
            form = f"vcmps{fs(dt)}_x_x_xm{dt.bits}_imm8"
        self.emit(form, m, ra, rb, pred)
        return m

    def lane_test(self, u: UOp) -> VReg | None:
        """A scalar bool OR (AND) tree whose leaves include one float compare of every lane
        of one xmm/ymm vector against one scalar, the same compare on the same side (tinygrad's
        any/all over an upcast float4: `acc | (1.0 < v[0]) | … | (1.0 < v[3])`): those leaves
        as one VCMPPS of the vector with the scalar broadcast, VMOVMSKPS of the mask (a bit a
        lane, SDM "MOVMSKPS") and TEST (any: SETNE) or CMP with all bits (all: SETE); the
        other leaves ORed (ANDed) in. None when no such group of leaves exists. The tree's
        inner nodes are expanded only when this tree is their one user (nothing computed
        twice); a compare's lanes give the scalar compare's bits (the same predicate)."""
        if u in self.bool_inner:
            return None                 # its tree's root looks at these leaves too
        leaves, stack = [], [u]
        while stack:
            x = stack.pop()
            if x.op is u.op and not x.shape and (x is u or self.nusers[x] == 1):
                stack.extend(x.src)
            else:
                leaves.append(x)
        groups: dict[tuple, dict[int, UOp]] = {}
        for c in leaves:
            if c.op not in (Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE) or c.shape:
                continue
            for side in (0, 1):
                lane, s = c.src[side], c.src[1 - side]
                j = const_int(lane.src[1]) if lane.op is Ops.INDEX else None
                if j is None or not lane.src[0].shape or s.shape \
                        or lane.src[0].dtype not in (dtypes.float32, dtypes.float64):
                    continue
                groups.setdefault((c.op, side, s, lane.src[0]), {})[j] = c
        for (op, side, s, v), lanes in groups.items():
            n, dt = v.shape[0], v.dtype
            if sorted(lanes) != list(range(n)) or dt.itemsize * n not in (16, 32):
                continue
            w = vw(dt, n)
            b = self.new("vec")
            if dt == dtypes.float32:
                self.emit(f"vbroadcastss_{w}_xm32", b, self.reg(s))
            else:
                self.emit("vmovddup_x_xm64" if w == "x" else "vbroadcastsd_y_xm64", b,
                          self.reg(s))
            ops = (b, self.reg(v)) if side == 1 else (self.reg(v), b)
            pred = {Ops.CMPLT: CMP_LT_OS, Ops.CMPEQ: CMP_EQ_OQ, Ops.CMPNE: CMP_NEQ_UQ}[op]
            m = self.cmp_mask(pred, dt, n, *ops)
            bits, t = self.new("gpr"), self.new("gpr")
            self.emit(f"vmovmskp{fs(dt)}_r32_{w}", bits, m)
            if u.op is Ops.OR:
                self.emit("test_rm32_r32", bits, bits)
                self.emit("setne_rm8", t)
            else:
                self.emit(imm_form("cmp", "32", (1 << n) - 1), bits, (1 << n) - 1)
                self.emit("sete_rm8", t)
            mnem = "or" if u.op is Ops.OR else "and"
            for c in leaves:
                if c not in lanes.values():
                    t = self._bool_join(mnem, t, self.reg(c))
            return t
        return None

    def _bool_join(self, mnem: str, a: VReg, b: VReg) -> VReg:
        """a OR/AND b of two scalar bools in GPRs."""
        t = self.copy(a, dtypes.bool)
        self.emit(f"{mnem}_r32_rm32", t, b)
        return t

    def fcompare(self, u: UOp) -> VReg:
        """A float compare as a bool: the mask's low bit, moved to a GPR. A vector compare
        stays a lane mask (all ones / zero per lane of the operands' width) in a vector
        register: WHERE blends with it and a lane INDEX turns one lane into a bool."""
        if u.shape:
            return self.fmask(u)
        m = self.fmask(u)
        t = self.new("gpr")
        self.emit("vmovd_rm32_x", t, m)
        self.emit("and_rm32_imm8", t, 1)
        return t

    def bool_mask(self, c: UOp, dt: DType, lanes: int) -> VReg:
        """A lane mask of dt-wide lanes from a STACK of scalar bools (0/1 in GPRs) or a vector
        bool op."""
        if c.op in _BOOL_OPS:
            return self.bool_vec(c, dt.itemsize)
        if c.op is not Ops.STACK:
            raise SelectError(f"a vector WHERE on {dt} needs a mask of {dt.bits}-bit lanes "
                              f"(a compare of {dt} values or a STACK of bools)")
        return self.mask_of(c.src, dt)

    def mask_of(self, bools: tuple[UOp, ...], dt: DType) -> VReg:
        """A vector of dt-wide lanes, all ones where the scalar bool is true."""
        if dt.itemsize * len(bools) == 64:
            half = len(bools) // 2
            return self.join_z(self.mask_of(bools[:half], dt), self.mask_of(bools[half:], dt))
        lanes = []
        for b in bools:
            z = self.new("gpr")
            self.emit("movzx_r32_rm8", z, self.reg(b))
            self.emit("neg_rm64", z)              # 0 → 0, 1 → all ones
            lanes.append(z)
        return self.ivec_from(lanes, uint_of(dt.itemsize))

    def mask_resize(self, m: VReg, width: int, dt: DType, lanes: int) -> VReg:
        """A lane mask of `width`-byte lanes as a mask of dt-wide lanes. A mask lane is all
        ones or zero, so doubling is a sign extension (VPMOVSX, SDM "PMOVSX": each element
        sign-extended), halving a signed saturating pack (VPACKSSDW/WB: -1 and 0 stay) and
        8 → 4 bytes keeps the low dword of each qword (SHUFPS imm 0x88); a result wider than
        a ymm, or another ratio: each lane's low bit (vpextr*), negated, re-inserted."""
        new = dt.itemsize
        if width * lanes <= 32 and new * lanes <= 32:
            return self._mask_resize_fast(m, width, new, lanes)
        bits = []
        for k in range(lanes):
            z = self.ivec_lane(m, uint_of(width), lanes, k)
            self.emit("and_rm32_imm8", z, 1)
            self.emit("neg_rm64", z)              # 0 → 0, 1 → all ones
            bits.append(z)
        if dt.itemsize * lanes == 64:
            half = lanes // 2
            return self.join_z(self.ivec_from(bits[:half], uint_of(dt.itemsize)),
                               self.ivec_from(bits[half:], uint_of(dt.itemsize)))
        return self.ivec_from(bits, uint_of(dt.itemsize))

    def _mask_resize_fast(self, m: VReg, width: int, new: int, lanes: int) -> VReg:
        """mask_resize within ymm registers: by factors of two, one or two instructions each."""
        while width != new:
            t = self.new("vec")
            if new > width:
                sfx = {1: "bw", 2: "wd", 4: "dq"}[width]
                src = width * lanes             # bytes read: the source's low part
                form = f"vpmovsx{sfx}_" + ("y_xm" if 2 * src == 32 else f"x_xm{src * 8}")
                self.emit(form, t, m)
                width *= 2
                m = t
                continue
            lo, hi = m, m
            if width * lanes == 32:
                hi = self.new("vec")
                self.emit("vextractf128_xm_y_imm8", hi, m, 1)
            if width == 8:
                self.emit("vshufps_x_x_xm_imm8", t, lo, hi, 0x88)
            else:
                self.emit("vpacksswb_x_x_xm" if width == 2 else "vpackssdw_x_x_xm", t, lo, hi)
            width //= 2
            m = t
        return m

    def blend(self, dt: DType, lanes: int, no: VReg, yes: VReg, m: VReg) -> VReg:
        """m ? yes : no per lane (vblendvps/pd read each lane's sign bit); zmm by halves."""
        if dt.itemsize * lanes == 64:
            (n0, n1), (y0, y1), (m0, m1) = self.split_z(no), self.split_z(yes), self.split_z(m)
            return self.join_z(self.blend(dt, lanes // 2, n0, y0, m0),
                               self.blend(dt, lanes // 2, n1, y1, m1))
        w = vw(dt, lanes)
        t = self.new("vec")
        # bitwise selection by the mask's lane width: vblendvps/pd read each 32/64-bit lane's
        # sign bit, vpblendvb each byte's (a mask lane is all ones or all zeros)
        form = {4: "vblendvps", 8: "vblendvpd"}.get(dt.itemsize, "vpblendvb")
        self.emit(f"{form}_{w}_{w}_{w}m_{w}", t, no, yes, m)
        return t

    def mask_load(self, u: UOp, mem: Mem, dt: DType, lanes: int) -> VReg:
        """A LOAD gated lane by lane on x86-64-v3 (TargetDesc.lane_gates): VMASKMOVPS/PD or
        VPMASKMOVD/Q under the gate as a lane mask of dt-wide lanes (SDM Vol. 2 "VMASKMOV":
        each lane's sign bit; a masked-off lane is 0, reads nothing and raises no fault), then
        a blend with alt unless alt is +0."""
        _, alt, gate = u.src
        m = self.bool_vec(gate, dt.itemsize)
        w = vw(dt, lanes)
        if reg_class(dt) == "vec":
            mnem = "vmaskmovps" if dt.itemsize == 4 else "vmaskmovpd"
        else:
            mnem = "vpmaskmovd" if dt.itemsize == 4 else "vpmaskmovq"
        t = self.new("vec")
        self.emit(f"{mnem}_{w}_{w}_m{dt.bits * lanes}", t, m, mem)
        if positive_zero(alt, dt):
            return t
        return self.blend(dt, lanes, self.reg(alt), t, m)
