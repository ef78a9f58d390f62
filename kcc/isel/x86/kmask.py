"""x86-64-v4 selection of bool vectors as AVX-512 opmasks (k1-k7, one bit per lane) and of
WHERE on them as masked blends and zero-masked moves. A mixin of X86Selector
(kcc/isel/x86/select.py).

An opmask has one bit per lane whatever the lanes' width, so a compare of int64 lanes can pick
float32 lanes without resizing a mask, and the compares, blends and moves here are EVEX forms
that every operand of may be xmm16-31 (the VEX compares into a vector and VBLENDV are
restricted to xmm0-15). Each rule returns None where it has no opmask form; the selector then
keeps the vector-mask rules of x86_vec/x86_ivec (which run beside these: kcc/isel/dce.py
removes whichever form nobody reads).
"""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.consts import const_int, strong_int
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.ir.ranges import never_negative
from kcc.isel.common import SelectError
from kcc.isel.x86.base import (CMP_EQ_OQ, CMP_LT_OS, CMP_NEQ_UQ, fs, positive_zero,
                               strong_const, vw)
from kcc.isel.x86.ivec import INT_VECTOR_DTYPES, is_int_vector, uniform_const
from kcc.isel.x86.regs import reg_class

_COMPARES = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
_KLOGIC = {Ops.AND: "kand", Ops.OR: "kor", Ops.XOR: "kxor"}
# VPCMP imm8[2:0], the comparison predicate (SDM Vol. 2 "VPCMPD/VPCMPUD"): 0 EQ, 1 LT, 4 NEQ
_VPCMP_PRED = {Ops.CMPEQ: 0, Ops.CMPLT: 1, Ops.CMPNE: 4}
_SFX = {1: "b", 2: "w", 4: "d", 8: "q"}


def _ksfx(lanes: int) -> str:
    """The mask-instruction width covering `lanes` bits: KANDB (8), W (16), D (32), Q (64)."""
    return "b" if lanes <= 8 else "w" if lanes <= 16 else "d" if lanes <= 32 else "q"


def _all_true(u: UOp) -> bool:
    """u is a STACK of the constant true in every lane."""
    return u.op is Ops.STACK and all(strong_const(x) is not None and bool(strong_const(x))
                                     for x in u.src)


# the most AND/OR/XOR nodes of a bool tree add_bool_tree takes as lane masks
_TREE_MAX = 7


def _one_vex_compare(c: UOp, width: int) -> bool:
    """c compares vector lanes of `width` bytes in one VEX instruction into a lane mask:
    VCMPPS/PD (any predicate), VPCMPEQ, VPCMPGT (a signed CMPLT). An integer CMPNE (compare,
    then NOT: two more) or an unsigned CMPLT (its bias flips first) is cheaper as an opmask."""
    if c.op not in _COMPARES or not c.src[0].shape or c.src[0].dtype.itemsize != width:
        return False
    dt = c.src[0].dtype
    if reg_class(dt) == "vec":
        return True
    return is_int_vector(c.src[0]) and (c.op is Ops.CMPEQ or
                                        (c.op is Ops.CMPLT and dt.is_signed))


def compare_tree(b: UOp, width: int) -> bool:
    """b is an AND/OR/XOR tree (at most _TREE_MAX of them) whose leaves are compares of
    vector lanes of `width` bytes, each one VEX instruction (_one_vex_compare): their lane
    masks combine bitwise with no resize, so the tree is a lane mask of that width in as
    many micro-ops as its opmask takes (x86_vec.bool_vec), none of them on port 5 alone."""
    todo, ops = [b], 0
    while todo:
        n = todo.pop()
        if n.op in _KLOGIC:
            ops += 1
            if ops > _TREE_MAX:
                return False
            todo.extend(n.src)
        elif not _one_vex_compare(n, width):
            return False
    return ops > 0


def cast_vex_compare(c: UOp, dt: DType, n: int, evex: bool = False) -> bool:
    """Rule `cast_vex_compare`: CAST(c) to float lanes of c's width in an xmm/ymm, c a compare
    or compare_tree of one-VEX-instruction compares, is their lane mask ANDed with 1.0s
    (x86_icast.vcast_bool): VANDPS on ports 0, 1 and 5, where the opmask's compare takes port
    5 alone and its zero-masked move ports 0 and 5 (cast_bool2f r_64_4: 0.93x clang's speed,
    then 1.03x). Integer lanes of 4 or 8 bytes from one compare of float lanes (x86-64-v4
    only: `evex`) likewise, the mask ANDed with a register of 1s (VPAND, ports 0, 1 and 5, as
    clang lowers argmax's last `(x[j] == max) * 1` lane: argmax_3d r_4_8_8, whose other seven
    compares go to opmasks, 0.96x clang's time, then 1.00x); not a VPSRL of the mask, which
    runs on ports 0 and 1 only (bool_sum r_333_77's tail lost 2% with it). An integer compare
    keeps its opmask: VPCMPD k reads either operand from memory, VPCMPGTD only its second."""
    if vw(dt, n) == "z":
        return False
    if dt.is_float:
        return _one_vex_compare(c, dt.itemsize) or compare_tree(c, dt.itemsize)
    return evex and dt.is_int and dt.itemsize in (4, 8) and c.op in _COMPARES \
        and c.src[0].dtype.is_float and _one_vex_compare(c, dt.itemsize)


class X86KMask:
    """Opmask rules (mixed into X86Selector; used only when its `evex` is set)."""

    def kbool(self, u: UOp) -> VReg | None:
        """The opmask of a bool vector u, or None: a compare of vector lanes, AND/OR/XOR of
        opmasks, XOR with all-true (NOT), a STACK of constants or of one scalar bool."""
        if not u.shape or u.shape[0] < 2:
            return None
        k = self.kval.get(u)
        if k is not None:
            return k
        if u.op in _COMPARES and u.src[0].shape:
            k = self.kcompare(u)
        elif u.op in _KLOGIC:
            k = self.klogic(u)
        elif u.op is Ops.STACK:
            memo = self.kstacks
            key = (u, tuple(lp[0] for lp in self.loops))    # built where it is first read
            if key not in memo:
                memo[key] = self.kstack(u)
            return memo[key]
        else:
            return None
        if k is not None:
            self.kval[u] = k
        return k

    def lane_mask(self, u: UOp) -> VReg:
        """An opmask's bool vector read as a lane-mask vector after all: made where it is
        read, once per loop nest (made inside a loop, it would be undefined after a loop that
        ran no iteration)."""
        memo = self.lane_masks
        key = (u, tuple(lp[0] for lp in self.loops))
        if key not in memo:
            self.sel_alu_value(u)
            memo[key] = self.val.pop(u)
        return memo[key]

    def kcompare(self, u: UOp) -> VReg | None:
        """A vector compare into an opmask: VCMPPS/PD (float) or VPCMP[U]B/W/D/Q (integer)."""
        a_u, b_u = u.src
        dt, lanes = a_u.dtype, a_u.shape[0]
        w = vw(dt, lanes)
        if reg_class(dt) == "vec":
            pred = {Ops.CMPLT: CMP_LT_OS, Ops.CMPEQ: CMP_EQ_OQ, Ops.CMPNE: CMP_NEQ_UQ}[u.op]
            form = f"vcmpp{fs(dt)}_k_{w}_{w}m_imm8"
        elif is_int_vector(a_u):
            pred = _VPCMP_PRED[u.op]
            u_ = "u" if u.op is Ops.CMPLT and not dt.is_signed else ""
            form = f"vpcmp{u_}{_SFX[dt.itemsize]}_k_{w}_{w}m_imm8"
        else:
            return None
        if form not in FORMS:
            return None
        k = self.new("mask")
        self.emit(form, k, *self.compare_operands(u), pred)
        return k

    def compare_operands(self, u: UOp, fold: bool = True) -> tuple[VReg, VReg | Mem]:
        """The compare u's two operands for VCMP/VPCMP: a load analysis.foldable_loads folded
        into u as the second, its place read in place (peeked, not taken: a lane-mask form,
        x86_vec.fmask, may read it too), EQ/NE commuting it there; registers otherwise, or
        where not ``fold`` (a zmm compare done on halves)."""
        a_u, b_u = u.src
        if u.op is not Ops.CMPLT and a_u in self.deferred:
            a_u, b_u = b_u, a_u
        m = self.deferred.get(b_u) if fold else None
        return self.reg(a_u), m if m is not None else self.reg(b_u)

    def klogic(self, u: UOp) -> VReg | None:
        """AND/OR/XOR of two opmasks as KAND/KOR/KXOR; XOR with all-true as KNOT."""
        a, b = u.src
        sfx = _ksfx(u.shape[0])
        if u.op is Ops.XOR and (_all_true(a) or _all_true(b)):
            ka = self.kbool(b if _all_true(a) else a)
            if ka is None:
                return None
            k = self.new("mask")
            self.emit(f"knot{sfx}_k_k", k, ka)
            return k
        ka, kb = self.kbool(a), self.kbool(b)
        if ka is None or kb is None:
            return None
        k = self.new("mask")
        self.emit(f"{_KLOGIC[u.op]}{sfx}_k_k_k", k, ka, kb)
        return k

    def kstack(self, u: UOp) -> VReg | None:
        """A STACK of constant bools (their bits through a GPR), of one scalar bool 0/1
        (negated: all ones or zero, KMOVW/D takes the low 32 bits) or of scalar bools (one
        bit each) as an opmask."""
        lanes = u.shape[0]
        if lanes > 32:
            return None
        consts = [strong_const(x) for x in u.src]
        g = self.new("gpr")
        if all(c is not None for c in consts):
            bits = sum(1 << i for i, c in enumerate(consts) if c)
            self.emit("mov_r32_imm32", g, bits - (1 << 32) if bits >= 1 << 31 else bits)
        elif all(x is u.src[0] for x in u.src) and u.src[0].dtype == dtypes.bool:
            self.emit("movzx_r32_rm8", g, self.reg(u.src[0]))
            self.emit("neg_rm32", g)              # 1 -> all ones, 0 -> 0
        elif all(x.dtype == dtypes.bool and not x.shape for x in u.src):
            # lanes of a compare devectorize split (no vector form of its operands): bit i
            # from bool i, shifted into place and ORed
            self.emit("movzx_r32_rm8", g, self.reg(u.src[0]))
            for i, x in enumerate(u.src[1:], 1):
                b = self.new("gpr")
                self.emit("movzx_r32_rm8", b, self.reg(x))
                self.emit("shl_rm32_imm8", b, i)
                self.emit("or_r32_rm32", g, b)
        else:
            return None
        k = self.new("mask")
        self.emit("kmovw_k_r32" if lanes <= 16 else "kmovd_k_r32", k, g)
        return k

    def kwhere(self, u: UOp, k: VReg) -> VReg | None:
        """WHERE(k, a, b) per lane: +0 as b is a zero-masked move of a (VMOVUPS/UPD/DQU
        {k}{z}: a just-loaded a is read by it, masked-off lanes not at all), else VBLENDMPS/PD
        or VPBLENDMB/W/D/Q (the second source where k is set)."""
        _, a, b = u.src
        dt, lanes = u.dtype, u.shape[0]
        w = vw(dt, lanes)
        if reg_class(dt) == "vec":
            move, blend = f"vmovup{fs(dt)}", f"vblendmp{fs(dt)}"
        elif is_int_vector(u):
            move = f"vmovdqu{dt.bits}"
            blend = f"vpblendm{_SFX[dt.itemsize]}"
        else:
            return None
        t = self.new("vec")
        if positive_zero(b, dt):
            form = f"{move}_{w}_kz_{w}m"
            if form in FORMS:
                m = self.folded(a)
                self.emit(form, t, k, m if m is not None else self.reg(a))
                return t
        form = f"{blend}_{w}_k_{w}_{w}m"
        if form not in FORMS:
            return None
        no = self.reg(b)
        m = self.folded(a)
        self.emit(form, t, k, no, m if m is not None else self.reg(a))
        return t


    def add_bool_lanes(self, u: UOp) -> VReg | None:
        """ADD(acc, CAST(compare)) of integer lanes in an xmm/ymm (a count of true lanes:
        bool_sum, argmax's `(x == max) * idx` sums) as acc - the compare's lane mask (all ones,
        -1, where true): VCMPPS/VPCMPEQ into a vector and VPSUB, two micro-ops where the
        opmask's 0/1 lanes (VCMPPS k, VMOVDQU32 {k}{z} of 1s) and VPADD take three (and the
        opmask compare port 5 alone); the CAST's own instructions then have no reader (dce).
        None for other ADDs, a zmm (no VEX compare into one) or a bool vector that is not a
        compare (its mask would be built, not compared). Rule `add_bool_tree`: an AND/OR/XOR
        of such compares (compare_tree; sort's `(j < i+1) & (x[j] == x[i])` counts) is one
        VANDPS/VORPS/VXORPS of their masks before the VPSUB, where the opmask form's KANDB
        takes port 0 and each compare into k port 5 (sort_rows r_4_256_2_4_256_4: 1.33x
        clang's time before, its compares into k the bound)."""
        dt, n = u.dtype, u.shape[0]
        if vw(dt, n) == "z" or not dt.is_int:
            return None
        for acc, c in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
            if c.op is Ops.CAST and c.dtype == dt and c.src[0].dtype.is_bool \
                    and (c.src[0].op in _COMPARES and c.src[0].src[0].shape
                         or compare_tree(c.src[0], dt.itemsize)):
                m = self.bool_vec(c.src[0], dt.itemsize)
                t = self.new("vec")
                w = vw(dt, n)
                self.emit(f"vpsub{_SFX[dt.itemsize]}_{w}_{w}_{w}m", t, self.reg(acc), m)
                return t
        return None

    def where_lane_mask(self, u: UOp) -> VReg | None:
        """WHERE(compare, all ones, 0) of integer lanes in an xmm/ymm (a bool OR/MAX
        reduction's lanes, passes/widen_reduce.py _bool_lanes) is the compare's lane mask
        itself, all ones where true: VCMPPS/VPCMPEQ into a vector, nothing more (the opmask's
        zero-masked move of a ones register would be a second instruction). None otherwise,
        and for a compare of lanes of another width (its mask would be resized: any_all
        r_64_4's float32 x 16 into uint16 lanes, which the opmask's VMOVDQU16 takes whole).
        Rule `where_tree_and`: WHERE(tree, y, 0) of an AND/OR/XOR of compares (compare_tree;
        decompose.bool_mulacc's `CAST(b) * y` in sort's index sums) is VPAND of the tree's
        lane mask and y: its compares and VPANDs run on ports 0, 1 and 5 where the opmask
        form's compares take port 5 alone and its KANDB port 0."""
        c, a, b = u.src
        if not is_int_vector(u) or vw(u.dtype, u.shape[0]) == "z":
            return None
        if uniform_const(b) == 0 and compare_tree(c, u.dtype.itemsize):
            m = self.bool_vec(c, u.dtype.itemsize)
            if uniform_const(a) in (-1, (1 << u.dtype.bits) - 1):
                return m
            t = self.new("vec")
            w = vw(u.dtype, u.shape[0])
            self.emit(f"vpand_{w}_{w}_{w}m", t, m, self.reg(a))
            return t
        if c.op not in _COMPARES or not c.src[0].shape \
                or c.src[0].dtype.itemsize != u.dtype.itemsize \
                or uniform_const(b) != 0 \
                or uniform_const(a) not in (-1, (1 << u.dtype.bits) - 1):
            return None
        return self.bool_vec(c, u.dtype.itemsize)

    def kmax(self, dt: DType, n: int, a: VReg, b: VReg) -> VReg:
        """MAX of integer lanes without a VPMAX form here: a < b (VPCMP[U] into k) picks b
        (VPBLENDM), so no VEX compare and VPBLENDVB."""
        w = vw(dt, n)
        u_ = "" if dt.is_signed else "u"
        k, t = self.new("mask"), self.new("vec")
        self.emit(f"vpcmp{u_}{_SFX[dt.itemsize]}_k_{w}_{w}m_imm8", k, a, b, _VPCMP_PRED[Ops.CMPLT])
        self.emit(f"vpblendm{_SFX[dt.itemsize]}_{w}_k_{w}_{w}m", t, k, a, b)
        return t

    def klane_logic(self, u: UOp) -> VReg | None:
        """A scalar AND/OR/XOR of lane j of two bool vectors of one lane count (tinygrad's
        `(0 < x[j]) | (y[j] < -1)` per upcast lane, each lane then stored): lane j of their
        opmasks' KAND/KOR/KXOR, made once per loop nest for every lane (IR ops are
        lane-wise, docs/semantics.md), instead of two lane reads and a GPR op a lane."""
        a, b = u.src
        if u.shape or u.op not in _KLOGIC or a.op is not Ops.INDEX or b.op is not Ops.INDEX:
            return None
        va, vb = a.src[0], b.src[0]
        j = const_int(a.src[1])
        if j is None or j != const_int(b.src[1]) or va.kind != "value" \
                or vb.kind != "value" or not (va.dtype.is_bool and vb.dtype.is_bool) \
                or va.shape != vb.shape:
            return None
        ka, kb = self.kbool(va), self.kbool(vb)
        if ka is None or kb is None:
            return None
        memo = self.klane_ops
        key = (u.op, va, vb, tuple(lp[0] for lp in self.loops))
        if key not in memo:
            k = self.new("mask")
            self.emit(f"{_KLOGIC[u.op]}{_ksfx(va.shape[0])}_k_k_k", k, ka, kb)
            memo[key] = k
        return self.klane(memo[key], j)

    def kbits(self, k: VReg) -> VReg:
        """An opmask's bits in a GPR (KMOVD), once per opmask and loop nest: every lane read
        of it (klane, klane_flags) starts from this one copy, not a KMOVD (port 0, 3 cycles)
        each (cross_entropy's r_8 reads its 8 gates' lanes one by one)."""
        memo = self.kbit_regs
        key = (k, tuple(lp[0] for lp in self.loops))
        if key not in memo:
            g = self.new("gpr")
            self.emit("kmovd_r32_k", g, k)
            memo[key] = g
        return memo[key]

    def lane_opmask(self, c: UOp) -> tuple[VReg, int] | None:
        """(opmask, lane) for c = INDEX(bool vector, constant lane) whose vector is an
        opmask of at most 32 lanes (KMOVD takes 32 bits), else None."""
        if not self.evex or c.op is not Ops.INDEX or c.shape or len(c.src) != 2:
            return None
        k, j = self.kval.get(c.src[0]), const_int(c.src[1])
        if k is None or j is None or not 0 <= j < min(c.src[0].shape[0], 32):
            return None
        return k, j

    def klane_flags(self, c: UOp) -> str | None:
        """Flags for a CMOVcc on a lane of an opmask (lane_opmask): TEST of its bit in the
        opmask's KMOVD copy (kbits), "ne" where set; not KMOVD, SHR, AND and TEST per lane.
        None for another kind of c."""
        kl = self.lane_opmask(c)
        if kl is None:
            return None
        self.emit("test_rm32_imm32", self.kbits(kl[0]), 1 << kl[1])
        return "ne"

    def klane(self, k: VReg, lane: int) -> VReg:
        """Lane `lane` of an opmask as a bool (0/1) in a GPR: a copy of its KMOVD (kbits),
        a shift, AND 1."""
        t = self.copy(self.kbits(k), dtypes.int32)
        if lane:
            self.emit("shr_rm32_imm8", t, lane)
        self.emit("and_rm32_imm8", t, 1)
        return t

    def kgate(self, c: UOp, lanes: int = 1) -> VReg:
        """A scalar bool (0/1 in a GPR) as an opmask: bit 0 (MOVZX, KMOVW), or for lanes > 1
        its value in each of 32 bits (negated first: all ones or zero; KMOVD)."""
        memo = self.kgates
        key = (c, lanes > 1, tuple(lp[0] for lp in self.loops))
        if key not in memo and lanes == 1 and (kl := self.lane_opmask(c)) is not None \
                and kl[1] < 16:     # (KSHIFTRW shifts the low 16 bits)
            # a lane of an opmask gating a scalar: the forms kgate serves read bit 0 alone
            # (VMOVSS/SD {k}, and VMOVUPS {k}{z} of a scalar whose other lanes are
            # don't-cares), so the opmask itself for lane 0, else one KSHIFTRW bringing the
            # lane to bit 0; not KMOVD, SHR, AND, MOVZX and KMOVW (cross_entropy's r_8)
            k, j = kl
            if j:
                t = self.new("mask")
                self.emit("kshiftrw_k_k_imm8", t, k, j)
                k = t
            memo[key] = k
        if key not in memo:
            k = self.new("mask")
            g = self.gate_ones(c) if lanes > 1 else None
            if g is None:
                g = self.new("gpr")
                self.emit("movzx_r32_rm8", g, self.reg(c))
                if lanes > 1:
                    self.emit("neg_rm32", g)
            # all 32 bits (KMOVD) for any lane count: one mask serves gates of 8 and 32 lanes
            self.emit("kmovd_k_r32" if lanes > 1 else "kmovw_k_r32", k, g)
            memo[key] = k
        return memo[key]

    def gate_ones(self, c: UOp) -> VReg | None:
        """The integer compare c as all ones or zero in a GPR straight from its flags (CMP,
        CMOVcc of a -1 into a zero: two steps after the operands), not its SETcc bool
        through MOVZX and NEG (three); None for another kind of c (a uniform vector gate's
        mask: embedding's `idx < 8` a row)."""
        if c.shape:
            return None
        if self.range_check(c) is None and (c.op not in _COMPARES
                                            or reg_class(c.src[0].dtype) != "gpr"):
            return None
        cc = self.int_flags(c)
        if cc is None:
            return None         # (not reached: int_flags takes every GPR compare)
        if cc == "b" or cc == "l" and c.op is Ops.CMPLT and all(never_negative(s) for s in c.src):
            # the carry of an unsigned compare (CMP sets CF exactly when a < b unsigned, and
            # a signed a < b of two non-negative values is the same; a range check
            # `lo <= x < hi` is one unsigned compare of x - lo, int_flags' "b") as -CF: one
            # SBB of a register with itself (clang's embedding E_8_5, index_rows' E_9_77 row
            # gate), not a copy and a CMOVcc, nor SETB, MOVZX and NEG
            g = self.new("gpr")
            self.emit("sbb_self", g)
            return g
        i32 = dtypes.int32
        # (MOVs after the CMP: they leave the flags as they are)
        ones, g = self.reg(strong_int(-1, i32)), self.copy(self.reg(strong_int(0, i32)), i32)
        self.emit(f"cmov{cc}_r32_rm32", g, ones)
        return g

    def kstore(self, u: UOp, mem: Mem, dt: DType, lanes: int) -> bool:
        """A gated STORE of a float scalar or vector, or an integer vector, as one merge-masked
        store (VMOVSS/SD, VMOVUPS/UPD, VMOVDQU8/16/32/64 [mem] {k}, v): a lane whose gate is
        false is not written and raises no fault (SDM Vol. 1 §15.6.1), so no scratch address.
        False where it has no such form (a GPR value). A gate is a scalar bool (the .uop
        verifier's rule): its opmask has it in every lane."""
        gate = u.src[2]
        if reg_class(dt) == "vec":
            form = f"vmovs{fs(dt)}_m{dt.bits}_k_x" if lanes == 1 else \
                f"vmovup{fs(dt)}_m{dt.bits * lanes}_k_{vw(dt, lanes)}"
        elif lanes > 1 and dt in INT_VECTOR_DTYPES:
            form = f"vmovdqu{dt.bits}_m{dt.bits * lanes}_k_{vw(dt, lanes)}"
        else:
            return False
        if form not in FORMS or lanes > 32:
            return False
        self.emit(form, mem, self.kgate(gate, lanes), self.reg(u.src[1]))
        return True

    def kwhere_scalar(self, u: UOp) -> VReg | None:
        """WHERE(c, LOAD, b) on a scalar float whose load is deferred to its user (tinygrad's
        gated loads: the padding of a conv): one masked VMOVSS/SD from memory, zero-masked
        for b = +0, else merging into a copy of b."""
        c, a, b = u.src
        dt = u.dtype
        if reg_class(dt) != "vec" or a not in self.deferred or c.shape:
            return None
        if positive_zero(b, dt):
            k = self.kgate(c)
            t = self.new("vec")
            self.emit(f"vmovs{fs(dt)}_x_kz_m{dt.bits}", t, k, self.folded(a))
            return t
        t = self.copy(self.reg(b), dt)
        self.emit(f"vmovs{fs(dt)}_x_k_m{dt.bits}", t, self.kgate(c), self.folded(a))
        return t

    def kwhere_bool(self, u: UOp) -> VReg | None:
        """WHERE(c, a, b) on a float scalar whose c is a bool in a GPR (an integer compare, a
        gate): c's opmask (kgate: MOVZX, KMOVW, shared with the masked loads and other WHEREs
        of that gate in these loops) and one VMOVUPS/PD {k}{z} (register form) for b = +0,
        else VBLENDMPS/PD {k} (SDM Vol. 2: the second source where k is set), instead of
        the mask made in an xmm (MOVZX, NEG, VMOVQ) and a VBLENDVPS per WHERE. Lane 0 is the
        value; the other lanes of the xmm are don't-cares."""
        c, a, b = u.src
        dt = u.dtype
        if reg_class(dt) != "vec" or c.shape:
            return None
        k, t = self.kgate(c), self.new("vec")
        if positive_zero(b, dt):
            self.emit(f"vmovup{fs(dt)}_x_kz_xm", t, k, self.reg(a))
        else:
            self.emit(f"vblendmp{fs(dt)}_x_k_x_xm", t, k, self.reg(b), self.reg(a))
        return t

    def kload(self, u: UOp, mem: Mem, dt: DType, lanes: int) -> VReg:
        """A gated LOAD as one masked load, the opmask from the gate (KMOVW/D): zero-masked
        for a +0 alt, else merging into a copy of alt (VMOVSS/SD, VMOVUPS/UPD,
        VMOVDQU8-64 {k}); where the gate is false nothing is read, so nothing faults (SDM
        Vol. 1 §15.6.1) whatever the address. A per-lane gate (a bool vector) is its opmask
        as it is (kbool: a vector compare's k register), lane j masking element j."""
        _, alt, gate = u.src
        if gate.shape:
            # a per-lane gate (TargetDesc.lane_gates): its own opmask, one bit per lane
            k = self.kbool(gate)
            if k is None:
                raise SelectError(f"a per-lane gate of {lanes} lanes with no opmask form "
                                  f"({gate.op.name})")
        else:
            k = self.kgate(gate, lanes)
        if reg_class(dt) == "vec":
            mnem = f"vmovs{fs(dt)}" if lanes == 1 else f"vmovup{fs(dt)}"
        else:
            mnem = f"vmovdqu{dt.bits}"
        w = vw(dt, lanes)
        src = f"m{dt.bits}" if lanes == 1 else f"{w}m"
        if positive_zero(alt, dt):
            t = self.new("vec")
            self.emit(f"{mnem}_x_kz_{src}" if lanes == 1 else f"{mnem}_{w}_kz_{src}", t, k, mem)
            return t
        t = self.copy(self.reg(alt), dt, lanes)
        self.emit(f"{mnem}_x_k_{src}" if lanes == 1 else f"{mnem}_{w}_k_{src}", t, k, mem)
        return t
