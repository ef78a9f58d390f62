"""x86 instruction selection of memory: buffers' bases, addresses (base + index*scale + disp,
SDM Vol. 1 §3.7.5), INDEX/SHRINK places, LOAD (folded into its reader where analysis.py
allows) and STORE (streaming stores where stream.py picks them): the X86Selector's memory
half (select.py)."""

from __future__ import annotations

from kcc.ir import UOp, dtypes
from kcc.ir.affine import affine
from kcc.ir.consts import const_int
from kcc.ir.dtype import DType
from kcc.ir.mir import Mem, VReg
from kcc.ir.ops import Ops
from kcc.isel.x86.base import (Place, SelectError, fits32, fs, isz, positive_zero,
                               strong_const, vw)
from kcc.isel.x86.half import is_half_vector
from kcc.isel.x86.ivec import is_int_vector
from kcc.isel.x86.regs import RSP, reg_class
from kcc.isel.x86.stream import stream_form


class X86Mem:
    """LOAD, STORE and their places (a mixin of X86Selector)."""

    def buffer(self, b: UOp) -> tuple[str, object]:
        while b not in self.bufs and b.op is Ops.AFTER:
            b = b.src[0]
        return self.bufs[b]

    def address(self, buf: UOp, idx: UOp, dt: DType) -> Mem:
        """[base + idx*itemsize + disp], folding a constant index or a constant addend."""
        kind, base = self.buffer(buf)
        disp = base if kind == "frame" else 0
        breg = RSP if kind == "frame" else base
        scale = dt.itemsize
        c = self.imm(idx)
        if c is not None and fits32(c * scale + disp):
            return Mem(breg, None, 1, disp + c * scale)
        if idx.op is Ops.ADD:
            k = self.imm(idx.src[1])
            if k is not None and fits32(k * scale + disp):
                return Mem(breg, self.ext(idx.src[0], 64), scale, disp + k * scale)
        if idx.op is Ops.MULACC:
            # a*b + k where a*b is an induction sum of an open loop (tinygrad's row base r*13
            # beside r*13 + c: int64_sum r_7_13): its register, k a displacement, as for ADD
            k, m = self.imm(idx.src[2]), UOp(Ops.MUL, idx.src[:2])
            if k is not None and fits32(k * scale + disp) and m in self.val \
                    and any(n is m for lp in self.loops for n, _, _ in self.ivs.get(lp[0], ())):
                return Mem(breg, self.ext(m, 64), scale, disp + k * scale)
        near = self.affine_near(idx)
        if near is not None and fits32(near[1] * scale + disp):
            return Mem(breg, self.ext(near[0], 64), scale, disp + near[1] * scale)
        return Mem(breg, self.ext(idx, 64), scale, disp)

    def affine_near(self, idx: UOp) -> tuple[UOp, int] | None:
        """(an index addressed before at this loop path, k) when idx is that index + k: the
        same affine terms (MULACC by a constant a product and a sum), another constant.
        tinygrad's upcast lanes store to 4i, 4i+1, … each through its own MULACC (an LEA a
        lane); as lane 0's register plus a displacement they need none. Modulo 2^bits idx
        is that index + k (ADD/SUB/MUL/SHL wrap alike), and an index in range is both
        without wrapping, so the 64-bit sum addresses the same element."""
        if idx.op not in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.SHL, Ops.MULACC) \
                or not idx.dtype.is_int or idx.dtype.is_weak:
            return None
        got = affine(idx, memo=self.affine_memo, mulacc=True)
        if got is None or not got[0]:
            return None
        key = (frozenset(got[0].items()), idx.dtype, tuple(lp[0] for lp in self.loops))
        seen = self.affine_seen.setdefault(key, (idx, got[1]))
        if seen[0] is idx:
            return None
        return seen[0], got[1] - seen[1]

    def sel_INDEX(self, u: UOp) -> None:
        """A place in a buffer, or one lane of a vector value."""
        base = u.src[0]
        if base.kind == "value":
            k = const_int(u.src[1])
            if base.dtype.is_bool:
                self.val[u] = self.mask_lane(base, k)
            elif is_int_vector(base) and base not in self.lane_mem:
                self.val[u] = self.ivec_lane(self.reg(base), base.dtype, base.shape[0], k)
            elif is_half_vector(base):
                self.val[u] = self.half_lane(self.reg(base), base.shape[0], k)
            elif base in self.lane_mem:
                # a lane of a vector load read lane by lane: a scalar load of the lane, or
                # its user's memory operand (reg() loads it when the user does not fold it)
                m = self.lane_mem[base]
                m = Mem(m.base, m.index, m.scale, m.disp + k * u.dtype.itemsize)
                if self.nusers[u] - self.splat_uses[u] <= 1:
                    self.deferred[u] = m
                else:                       # read by several: loaded once, here
                    self.val[u] = self.load(Place(m, u.dtype, 1))
            else:
                # extracted when a rule reads it (most readers take the vector's lanes
                # themselves: x86_select.lazy_lane)
                v = self.lazy_lane(u, self.reg(base), base.dtype, base.shape[0], k)
                if v is not None:
                    self.val[u] = v
            return
        self.places[u] = self.place(base, u.src[1], u.dtype, 1)

    def sel_SHRINK(self, u: UOp) -> None:
        """A place of n contiguous elements (a vector access)."""
        self.places[u] = self.place(u.src[0], u.src[1], u.dtype, u.shape[0])

    def place(self, buf: UOp, idx: UOp, dt: DType, lanes: int) -> Place:
        """A memory place, or the register variable of a promoted REG buffer element."""
        kind, cells = self.buffer(buf)
        if kind == "vars":
            return Place(None, dt, lanes, cells[int(strong_const(idx)), lanes])
        return Place(self.address(buf, idx, dt), dt, lanes)

    def sel_LOAD(self, u: UOp) -> None:
        """A load; gated loads were rewritten by legalize_gates to a safe index + WHERE, but
        for x86-64-v4's masked loads (TargetDesc.masked_load; x86_kmask) and per-lane gates
        (TargetDesc.lane_gates: x86_kmask on v4, VMASKMOV on v3)."""
        p = self.places[u.src[0]]
        if len(u.src) == 3 and (t := self.const_gate_load(u, p)) is not None:
            self.val[u] = t
            return
        if len(u.src) == 3:
            if u.src[2].shape and not self.evex and p.var is None:
                # a per-lane gate on x86-64-v3: a load masked by a vector (x86_vec)
                self.val[u] = self.mask_load(u, p.mem, p.dtype, p.lanes)
                return
            if not self.evex or p.var is not None:
                raise AssertionError("gated LOAD reached x86 isel (legalize_gates did not run)")
            self.val[u] = self.kload(u, p.mem, p.dtype, p.lanes)
            return
        ahead = self.prefetch.get(u)
        if ahead is not None and p.mem is not None:   # (x86_prefetch.py picked the load)
            m = p.mem
            self.emit("prefetcht0_m8", Mem(m.base, m.index, m.scale, m.disp + ahead))
        if u in self.foldable and p.var is None:
            self.deferred[u] = p.mem      # its one user reads it as a memory operand
            return
        if u in self.lane_loads and p.var is None:
            self.lane_mem[u] = p.mem      # each lane read from memory (x86_analysis)
            return
        self.val[u] = self.load(p)

    def const_gate_load(self, u: UOp, p: Place) -> VReg | None:
        """A load of 4 or 8 dwords in bounds gated by constant lanes, 0 else: VBLENDPS of zero."""
        # (triu_int's E_8_2_4 after unroll_tiny: 7 rows of int8 loads at constant lane masks;
        # v4's MOV, KMOVW and zero-masked VMOVDQU32 a row, or v3's mask load and VPMASKMOVD,
        # were 0.95x clang; one VBLENDPS imm8 reading memory, whose lanes are all in the
        # buffer, so reading the masked-off ones cannot fault, is 1.15x in a hand-written
        # test of it). None: any other load.
        place, alt, gate = u.src
        n = p.lanes
        if p.var is not None or p.dtype.itemsize != 4 or n not in (4, 8) \
                or place.op is not Ops.SHRINK or place.src[0].op is not Ops.PARAM \
                or gate.op is not Ops.STACK or len(gate.src) != n \
                or not positive_zero(alt, p.dtype):
            return None
        bits = [strong_const(g) for g in gate.src]
        start = const_int(place.src[1])
        if any(b is None for b in bits) or start is None or start < 0 \
                or start + n > place.src[0].shape[0]:
            return None
        w = "x" if n == 4 else "y"
        z, t = self.new("vec"), self.new("vec")
        self.emit("vzero", z)
        self.emit(f"vblendps_{w}_{w}_{w}m_imm8", t, z, p.mem,
                  sum(1 << k for k, b in enumerate(bits) if b))
        return t

    def folded(self, u: UOp) -> Mem | None:
        """The memory operand of a deferred load of u (its user reads it in place), or None."""
        return self.deferred.pop(u, None)

    def load(self, p: Place) -> VReg:
        dt = p.dtype
        if p.var is not None:
            return self.copy(p.var, dt, p.lanes)   # a snapshot: later stores redefine var
        if reg_class(dt) == "vec":
            t = self.new("vec")
            if p.lanes == 1:
                self.emit(f"vmovs{fs(dt)}_x_m{dt.bits}", t, p.mem)
            else:
                w = vw(dt, p.lanes)
                self.emit(f"vmovup{fs(dt)}_{w}_{w}m", t, p.mem)
            return t
        if p.lanes != 1 and dt == dtypes.float16:
            return self.half_load(p.mem, p.lanes)          # float16 lanes (x86_half)
        if p.lanes != 1:
            if not dt.is_int:
                raise SelectError(f"vector load of {p.lanes} x {dt} is not legal on x86")
            t = self.new("vec")
            if dt.itemsize * p.lanes == 8:          # byte lanes x 8: the xmm's low qword
                self.emit("vmovq_x_xm64", t, p.mem)
                return t
            w = vw(dt, p.lanes)
            self.emit(f"vmovdqu_{w}_{w}m", t, p.mem)
            return t
        t = self.new("gpr")
        if dt.itemsize == 8:
            self.emit("mov_r64_rm64", t, p.mem)
        elif dt.itemsize == 4:
            self.emit("mov_r32_rm32", t, p.mem)
        else:
            ext = "movsx" if dt.is_signed else "movzx"
            self.emit(f"{ext}_r32_rm{dt.bits}", t, p.mem)
            self.widened[t] = dt
        return t

    def sel_STORE(self, u: UOp) -> None:
        """A store; a gated store writes a frame scratch slot instead when its gate is false."""
        p = self.places[u.src[0]]
        mem = p.mem
        if p.var is not None:                     # promoted REG element: a register move
            v = self.reg(u.src[1])
            if p.var.cls == "gpr":
                self.emit(f"mov_r{isz(p.dtype)}_rm{isz(p.dtype)}", p.var, v)
            else:
                w = vw(p.dtype, p.lanes)
                self.emit(f"vmovaps_{w}_{w}m", p.var, v)
            return
        if len(u.src) == 3 and self.evex and self.kstore(u, mem, p.dtype, p.lanes):
            return                                # x86-64-v4: a masked store (x86_kmask)
        if len(u.src) == 3:
            a = self.new("gpr")
            self.emit("lea_r64_m", a, mem)
            s = self.new("gpr")
            self.scratch_used = True
            self.emit("lea_r64_m", s, Mem(RSP, None, 1, 0))
            g = self.reg(u.src[2])
            self.emit("test_rm8_r8", g, g)
            self.emit("cmove_r64_rm64", a, s)
            mem = Mem(a, None, 1, 0)
        dt = p.dtype
        bits = dt.itemsize * p.lanes * 8
        if dt == dtypes.bool and p.lanes > 1:
            # a bool vector (TargetDesc.bool_stores): its lanes as 0/1 bytes, stored whole
            b = self.vcast_bool(u.src[1], dtypes.uint8, p.lanes)
            form = {32: "vmovd_rm32_x", 64: "vmovq_m64_x", 128: "vmovdqu_m128_x"}[bits]
            self.emit(form, mem, b)
            return
        v = self.reg(u.src[1])
        if reg_class(dt) == "vec":
            if p.lanes == 1:
                self.emit(f"vmovs{fs(dt)}_m{dt.bits}_x", mem, v)
            else:
                w = vw(dt, p.lanes)
                self.emit(self.streaming(u, f"vmovup{fs(dt)}_m{bits}_{w}"), mem, v)
        elif p.lanes > 1 and dt == dtypes.float16:
            self.half_store(mem, v, p.lanes)             # float16 lanes (x86_half)
        elif p.lanes > 1 and bits == 64:       # byte lanes x 8: the xmm's low qword
            self.emit("vmovq_m64_x", mem, v)
        elif p.lanes > 1 and bits == 32:       # byte lanes x 4 (narrow_stores): its low dword
            self.emit("vmovd_rm32_x", mem, v)
        elif p.lanes > 1:                      # int32/uint32 vector
            w = vw(dt, p.lanes)
            # (a zmm: int32 x 16 from a widening cast, TargetDesc.narrow_stores on v4)
            form = "vmovdqu32_m512_z" if w == "z" else f"vmovdqu_m{bits}_{w}"
            self.emit(self.streaming(u, form), mem, v)
        elif dt == dtypes.float16 and v in self.half_xmm:
            # the bits where VCVTPS2PH left them: VPEXTRW m16 stores word 0 (SDM Vol. 2B)
            self.emit("vpextrw_m16_x_imm8", mem, self.half_xmm[v], 0)
        else:
            b = dt.bits
            self.emit(f"mov_rm{b}_r{b}", mem, v)


    def streaming(self, u: UOp, form: str) -> str:
        """Store form, or its non-temporal twin when STORE u streams (x86_stream.py)."""
        return stream_form(u, form, self.stream, self.stream_align)
