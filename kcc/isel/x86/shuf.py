"""x86 selection of lane permutations: a STACK whose every lane is a lane of a vector value
of its dtype (a shuffle, a splat, a 128-bit block concat or broadcast, a transpose); float32
and float64, and 32/64-bit integer lanes with the float forms of their width (lanes only move).
A mixin of X86Selector (kcc/isel/x86/select.py), called by X86Vec.sel_STACK.

The result is cut into 128-bit blocks (4 float32 or 2 float64 lanes), the unit of the in-lane
shuffles: SHUFPS/SHUFPD, UNPCKLPS/UNPCKHPS and VPERMILPS apply one selection to each 128-bit
lane of a ymm/zmm (SDM Vol. 2, "SHUFPS": "the same selection for each 128-bit lane").

- Every lane one lane of one vector: a splat. From a vector just loaded, VBROADCASTSS/SD reads
  the element from memory (no shuffle); else one SHUFPS and, for ymm/zmm, VBROADCASTSS.
- Every block is one 128-bit block of a source in one and the same lane order p: the source
  blocks are concatenated (nothing when they are a vector's own blocks in order, one wider load
  when they were just loaded from consecutive addresses; VBROADCASTF128
  / VBROADCASTF32X4 from memory or VINSERTF128 / VSHUFF32X4 when one block repeats; else
  VINSERTF128 / VINSERTF32X4, reading a just-loaded block from memory), then one wide SHUFPS
  applies p. tinygrad's matmul tile needs this: (a0[k]×4, a1[k]×4, …) is the concat of the rows
  a0, a1, … (shared by every k) and one SHUFPS per k.
- Otherwise each block is built on its own: lanes 0-1 from one source block and 2-3 from one
  (SHUFPS, one instruction); else a pair (l0, l1) in one register (the source itself, UNPCKL/HPS
  when both lanes have one position, else SHUFPS) and another for (l2, l3), joined by SHUFPS.
  A 4×4 transpose is then 4 UNPCK + 4 SHUFPS, each UNPCK shared by two outputs.

Every emitted shuffle is remembered by (form, sources, imm) for the loop nest it was emitted
in, so lane groups that share a concat or an interleave compute it once.
"""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.consts import const_int
from kcc.ir.dtype import DType
from kcc.ir.mir import Inst, Kind, Mem, VReg
from kcc.isel.x86.analysis import schedule_facts
from kcc.isel.x86.base import positive_zero, strong_const, vw, writes_memory
from kcc.isel.x86.regs import RSP

Block = tuple[UOp, int]          # (source vector value, 128-bit block number)
_SCAN = 256                      # how far back a just-loaded vector's load is looked for


def _frame_only(inst: Inst) -> bool:
    """Whether every memory operand an instruction writes is a fixed place of kcc's own frame
    ([rsp + disp]: a REG buffer or a spill slot), which no buffer argument can point into."""
    row = FORMS.get(inst.op)
    if row is None:
        return False
    return all(v.base == RSP and v.index is None for o, v in zip(row.operands, inst.operands)
               if isinstance(v, Mem) and o.access != "use")


def reread_facts(inst: Inst) -> tuple[Inst, bool, bool, tuple, int]:
    """What ``_reread`` asks of an instruction (selected instructions are never changed in
    place): (inst, a zeroing idiom, an ordinary OP with a row, its DEF registers, 0 when it
    writes no memory, 1 when only kcc's frame, 2 otherwise)."""
    op = inst.op
    is_op = inst.kind is Kind.OP
    plain = is_op and op in FORMS
    store = 0
    if plain and writes_memory(inst):
        store = 1 if _frame_only(inst) else 2
    return inst, is_op and op == "vzero", plain, tuple(inst.defs()), store


def splat_only_wheres(lin: list[UOp], facts: tuple | None = None) -> frozenset[UOp]:
    """Float32 WHEREs of a LOAD and +0.0 (gated loads after legalize_gates) read only as
    splats: every user a STACK of copies of it (a scalar), or (a vector) an INDEX of a lane
    whose every user is such a STACK. `gated_splat` broadcasts those from memory and ANDs the
    mask, so on x86-64-v4 they keep that form instead of an opmask move whose result would be
    shuffled (one FP operation a lane either way, and the broadcast's load is free). facts:
    analysis.schedule_facts(lin), whose users it reads, when the caller has them."""
    if facts is None:
        facts = schedule_facts(lin)
    users: dict[UOp, list[UOp]] = facts[1]

    def splats(s: UOp) -> bool:
        us = users.get(s, [])
        return bool(us) and all(x.op is Ops.STACK and len(x.src) > 1
                                and all(y is s for y in x.src) for x in us)
    out = set()
    for u in lin:
        if u.op is not Ops.WHERE or u.dtype != dtypes.float32 or u.src[1].op is not Ops.LOAD \
                or not positive_zero(u.src[2], u.dtype):
            continue
        if not u.shape:
            ok = splats(u)
        else:
            us = users.get(u, [])
            ok = bool(us) and all(x.op is Ops.INDEX and splats(x) for x in us)
        if ok:
            out.add(u)
    return frozenset(out)


def _imm4(p: tuple[int, ...]) -> int:
    """SHUFPS/VPERMILPS imm8: two bits per destination lane."""
    return p[0] | p[1] << 2 | p[2] << 4 | p[3] << 6


class X86Shuf:
    """Lane-permutation rules (mixed into X86Selector)."""

    def _shuf_memo(self) -> dict:
        memo = getattr(self, "_shufs", None)
        if memo is None:
            memo = self._shufs = {}
        return memo

    def _once(self, form: str, *ops: object) -> VReg:
        """Emit form (destination first, then ops) unless the same op on the same sources was
        emitted in this loop nest or an enclosing one; the register holding its result."""
        key = (form, *((("m", o.base, o.index, o.scale, o.disp) if isinstance(o, Mem) else o)
                       for o in ops))
        hit = self._memo_get(key)
        if hit is not None:
            return hit
        t = self.new("vec")
        self.emit(form, t, *ops)
        self._memo_put(key, t)
        return t

    def _memo_get(self, key: tuple) -> VReg | None:
        """The register of key's value when it was made in this loop nest or an enclosing one
        (a register made in a sibling loop does not hold it here)."""
        hit = self._shuf_memo().get(key)
        path = tuple(lp[0] for lp in self.loops)
        return hit[1] if hit is not None and path[:len(hit[0])] == hit[0] else None

    def _memo_put(self, key: tuple, t: VReg) -> None:
        """Remember t as key's value for this loop nest and the loops inside it."""
        self._shuf_memo()[key] = (tuple(lp[0] for lp in self.loops), t)

    def _rodata_zmm(self, data: bytes) -> VReg:
        """A new zmm loaded with the 64 bytes of data from .rodata (a permutation's or a
        gather's index vector)."""
        t = self.new("vec")
        self.emit("vmovups_z_zm", t, Mem(), arg={"rip": self.pool.label(data)})
        return t

    def shuffle(self, u: UOp) -> VReg | None:
        """A STACK of lanes of float (or 32/64-bit integer) vectors as shuffles; None when a
        lane is not one. Lanes only move, so integer lanes use the float forms of their width."""
        vt, n = u.dtype, len(u.src)
        if vt.is_int and vt.itemsize in (1, 2) and vt.itemsize * n == 16:
            return self.byte_shuffle(u)
        dt = {4: dtypes.float32, 8: dtypes.float64}.get(vt.itemsize) \
            if (vt.is_float or vt.is_int) and not vt.is_weak else None
        if dt is None or dt.itemsize * n not in (16, 32, 64):
            return None
        lanes: list[tuple[UOp, int]] = []
        for s in u.src:
            if s.op is not Ops.INDEX or s.src[0].kind != "value":
                # a scalar lane: only a permutation takes it (a splat of one scalar is a
                # broadcast, sel_STACK's, which an ALU may read from memory as {1toN})
                return None if all(x is s for x in u.src) else self.permute(u)
            v, k = s.src[0], const_int(s.src[1])
            if k is None or v.dtype != vt or len(v.shape) != 1 \
                    or dt.itemsize * v.shape[0] not in (16, 32, 64):
                return None
            lanes.append((v, k))
        c = 16 // dt.itemsize
        if all(ln == lanes[0] for ln in lanes):
            return self.splat(lanes[0][0], lanes[0][1], dt, n)
        t = self.blend_imm(lanes, dt, n)
        if t is not None:
            return t
        blocks = [lanes[i:i + c] for i in range(0, n, c)]
        one = [self._one_block(b, c) for b in blocks]
        if all(o is not None for o in one) and len({o[1] for o in one}) == 1:
            srcs, p = [o[0] for o in one], one[0][1]
            x = self.blocks_reg(srcs, dt)
            if p == tuple(range(c)):
                return x
            return self.in_block(x, p, dt, n)
        t = self.permute(u)
        if t is not None:
            return t
        if dt.itemsize * n == 64 and dt == dtypes.float64:
            return None                          # no zmm SHUFPD here: lane inserts instead
        if all(b == blocks[0] for b in blocks):
            t = self.repeated_block(blocks[0], dt, n)
            return t if t is not None else self.repeat(self.block_of_lanes(blocks[0], dt),
                                                        n * dt.itemsize)
        regs = [self.block_of_lanes(b, dt) for b in blocks]
        return self.concat(regs, dt)

    def blend_imm(self, lanes: list[tuple[UOp, int]], dt: DType, n: int) -> VReg | None:
        """Lane j of one of two n-lane vectors at lane j each, in an xmm or ymm (slp_blend's
        two-op groups: sort's minimums and maximums): one VBLENDPS by an immediate, bit i
        taking 32-bit lane i from the second source (SDM Vol. 2 "BLENDPS"; a 64-bit lane is
        two of them). None for another STACK."""
        wide = dt.itemsize * n == 64 and self.evex
        if dt.itemsize * n not in (16, 32) and not wide \
                or any(k != j for j, (_, k) in enumerate(lanes)):
            return None
        srcs = list(dict.fromkeys(v for v, _ in lanes))
        if len(srcs) != 2 or any(v.shape != (n,) for v in srcs):
            return None
        if wide:
            return self.blend_mask(lanes, srcs, dt, n)
        per = dt.itemsize // 4                     # 32-bit lanes a lane
        imm = 0
        for j, (v, _) in enumerate(lanes):
            if v is srcs[1]:
                imm |= ((1 << per) - 1) << (j * per)
        w = "y" if dt.itemsize * n == 32 else "x"
        t = self.new("vec")
        self.emit(f"vblendps_{w}_{w}_{w}m_imm8", t, self.reg(srcs[0]), self.reg(srcs[1]), imm)
        return t

    def blend_mask(self, lanes: list[tuple[UOp, int]], srcs: list[UOp], dt: DType,
                   n: int) -> VReg:
        """blend_imm's zmm form (x86-64-v4, no VBLENDPS of a zmm): one VBLENDMPS/PD by an
        opmask, bit j taking lane j from the second source (SDM Vol. 2 "VBLENDMPS"); the
        mask, a MOV and a KMOVW, is made once per loop nest (sort_rows E_2048_2_2: 16 lanes
        of minimums and maximums, a VPERMI2PS and its index reload an iteration before)."""
        bits = sum(1 << j for j, (v, _) in enumerate(lanes) if v is srcs[1])
        key = ("blend_mask", bits)
        k = self._memo_get(key)
        if k is None:
            g = self.new("gpr")
            self.emit("mov_r32_imm32", g, bits)
            k = self.new("mask")
            self.emit("kmovw_k_r32", k, g)
            self._memo_put(key, k)
        t = self.new("vec")
        form = "vblendmps_z_k_z_zm" if dt.itemsize == 4 else "vblendmpd_z_k_z_zm"
        self.emit(form, t, k, self.reg(srcs[0]), self.reg(srcs[1]))
        return t

    def byte_shuffle(self, u: UOp) -> VReg | None:
        """A STACK of 8- or 16-bit lanes (an xmm) that are all constant lanes of one 128-bit
        block of one xmm or ymm vector: that block (the register's low part, or
        VEXTRACTF128), then one VPSHUFB with the byte order from .rodata unless the lanes are
        in order (SDM "PSHUFB": byte j of the result is the source's byte ctrl[j] & 15 while
        ctrl[j] < 128). A reduction's halves and in-block rotations (kcc/passes/
        widen_reduce.py `_lanes`); None otherwise."""
        vt, size, n = u.dtype, u.dtype.itemsize, len(u.src)
        v = u.src[0].src[0] if u.src[0].op is Ops.INDEX else None
        ctrl, blocks = [], set()
        for s in u.src:
            k = const_int(s.src[1]) if s.op is Ops.INDEX else None
            if s.op is not Ops.INDEX or s.src[0] is not v or k is None or v.kind != "value" \
                    or v.dtype != vt or len(v.shape) != 1 or size * v.shape[0] not in (16, 32) \
                    or not 0 <= k < v.shape[0]:
                return None
            blocks.add(k // n)
            ctrl += [k % n * size + b for b in range(size)]
        if len(blocks) != 1:
            return None
        x = self.block_x((v, blocks.pop()))
        if ctrl == list(range(16)):
            return x
        c = self.new("vec")
        self.emit("vmovdqu_x_xm", c, Mem(), arg={"rip": self.pool.label(bytes(ctrl))})
        return self._once("vpshufb_x_x_xm", x, c)

    def repeated_block(self, block: list[tuple[UOp, int]], dt: DType, n: int) -> VReg | None:
        """One block of float32 lanes in every 128-bit block of n lanes, when every source
        block was just loaded: each source block is read from memory into every block at
        once (VBROADCASTF128 / VBROADCASTF32X4 m128, a load) and the block's shuffles run at
        the full width (SHUFPS/UNPCK apply one selection to each 128-bit lane), so no repeat
        follows (conv2d's weight columns (w[0][k], …, w[3][k]) ×4: the 4×4 transposes of its
        row loads, at zmm width)."""
        c = 16 // dt.itemsize
        if dt != dtypes.float32 or n * dt.itemsize not in (32, 64):
            return None
        mems = {}
        for v, k in block:
            m = self.loaded_mem(v)
            if m is None:
                return None
            mems[(v, k // c)] = self._at(m, 16 * (k // c))
        w = vw(dt, n)
        form = "vbroadcastf128_y_m128" if w == "y" else "vbroadcastf32x4_z_m128"
        wide = {s: self._once(form, m) for s, m in mems.items()}
        return self.block_of_lanes(block, dt, w, wide)

    def permute(self, u: UOp) -> VReg | None:
        """x86-64-v4: a zmm STACK of float32 lanes, each a lane of one of at most two
        registers (a vector value's lane k, or a scalar value: lane 0 of its register), as one
        VPERMPS (one register) or VPERMI2PS (two) by an index vector from .rodata: lane j
        takes lane k of the first register (index k) or of the second (16 + k; index bits
        3:0 pick the lane, bit 4 the table, SDM Vol. 2 "VPERMI2PS"). A source narrower than
        a zmm is read as its register's low lanes (the indexes never reach above them); the
        sources are registers, never memory (a narrower vector's memory would be read past
        its end). None when the lanes need more registers, or the STACK is not a zmm of
        float32 lanes, or not on x86-64-v4."""
        n = len(u.src)
        if u.dtype == dtypes.float32 and n == 8:
            # x86-64-v4 too where every lane is one ymm's (the lane rotation of a masked load
            # moved inside its buffer, passes/gates_lanes.py): one VPERMPS (VEX: ymm0-15);
            # xmm halves keep their in-block shuffles and inserts
            if not self.evex or self._one_ymm(u):
                return self.permute_y(u)
            return None
        if not self.evex or u.dtype != dtypes.float32 or n != 16:
            return None
        got = self._perm_sources(u, 16)
        if got is None:
            return None
        regs, idx = got
        key = ("permute", tuple(idx), *regs)
        hit = self._memo_get(key)
        if hit is not None:
            return hit
        t = self._rodata_zmm(b"".join(i.to_bytes(4, "little") for i in idx))
        if len(regs) == 1:
            r = self.new("vec")
            self.emit("vpermps_z_z_zm", r, t, self.reg(regs[0]))
            t = r
        else:
            self.emit("vpermi2ps_z_z_zm", t, self.reg(regs[0]), self.reg(regs[1]))
        self._memo_put(key, t)
        return t

    @staticmethod
    def _one_ymm(u: UOp) -> bool:
        """Whether every lane of STACK u is a constant lane of one 8-lane vector value."""
        v = u.src[0].src[0] if u.src[0].op is Ops.INDEX else None
        return v is not None and v.kind == "value" and v.shape == (8,) and all(
            s.op is Ops.INDEX and s.src[0] is v and const_int(s.src[1]) is not None
            for s in u.src)

    @staticmethod
    def _perm_sources(u: UOp, n: int) -> tuple[list[UOp], list[int]] | None:
        """The (at most two) registers u's lanes come from and each lane's index into their
        concatenation (register r's lane k: n * r + k), or None (see ``permute``)."""
        regs: list[UOp] = []
        idx: list[int] = []
        for s in u.src:
            if s.op is Ops.INDEX and s.src[0].kind == "value" and s.src[0].shape:
                v, k = s.src[0], const_int(s.src[1])
                if k is None or v.dtype != u.dtype or len(v.shape) != 1 or v.shape[0] > n:
                    return None
            elif s.shape == () and s.kind == "value" and s.dtype == u.dtype \
                    and s.op is not Ops.CONST and strong_const(s) is None:
                v, k = s, 0
            else:
                return None
            if v not in regs:
                if len(regs) == 2:
                    return None
                regs.append(v)
            idx.append(n * regs.index(v) + k)
        return regs, idx

    def permute_y(self, u: UOp) -> VReg | None:
        """x86-64-v3: a ymm STACK of 8 float32 lanes from at most two registers (as
        ``permute``). Every other lane of each, in order (a stride-2 load's lanes,
        passes/widen_stride.py: the second load ends at the last lane's element, so its
        lanes may be the odd ones): VSHUFPS takes lanes f and f+2 of the first and g and g+2
        of the second in each 128-bit half, [a0 a2 b1 b3 | a4 a6 b5 b7], and VPERMPD 0xD8
        orders the 64-bit pairs (SDM Vol. 2 "SHUFPS", "VPERMPD"). Otherwise VPERMPS of each
        register by an index vector (indexes 2:0 pick the lane) and, for two, VBLENDVPS by a
        lane mask (sign bits set where the second register's lane is taken)."""
        got = self._perm_sources(u, 8)
        if got is None:
            return None
        regs, idx = got
        key = ("permute_y", tuple(idx), *regs)
        hit = self._memo_get(key)
        if hit is not None:
            return hit
        rs = [self.reg(v) for v in regs]
        f, g = idx[0], idx[4] - 8
        if len(rs) == 2 and f in (0, 1) and g in (0, 1) and \
                idx == [f + 2 * j for j in range(4)] + [8 + g + 2 * j for j in range(4)]:
            t = self.new("vec")
            self.emit("vshufps_y_y_ym_imm8", t, rs[0], rs[1],
                      f | (f + 2) << 2 | g << 4 | (g + 2) << 6)
            r = self.new("vec")
            self.emit("vpermpd_y_ym_imm8", r, t, 0xD8)
            self._memo_put(key, r)
            return r
        outs = []
        for j, x in enumerate(rs):
            ix = self.new("vec")
            data = b"".join((i % 8).to_bytes(4, "little") for i in idx)
            self.emit("vmovups_y_ym", ix, Mem(), arg={"rip": self.pool.label(data)})
            t = self.new("vec")
            self.emit("vpermps_y_y_ym", t, ix, x)
            outs.append(t)
        if len(outs) == 1:
            r = outs[0]
        else:
            m = self.new("vec")
            data = b"".join((0x80000000 if i >= 8 else 0).to_bytes(4, "little") for i in idx)
            self.emit("vmovups_y_ym", m, Mem(), arg={"rip": self.pool.label(data)})
            r = self.new("vec")
            self.emit("vblendvps_y_y_ym_y", r, outs[0], outs[1], m)
        self._memo_put(key, r)
        return r

    @staticmethod
    def _one_block(block: list[tuple[UOp, int]], c: int) -> tuple[Block, tuple[int, ...]] | None:
        """(source block, lane order) when every lane of block is in one source block."""
        v, k0 = block[0]
        b = k0 // c
        if any(w is not v or k // c != b for w, k in block):
            return None
        return (v, b), tuple(k % c for _, k in block)

    # -- memory: a vector loaded just before, read again by a broadcast or an insert -----------
    def loaded_mem(self, v: UOp) -> Mem | None:
        """The memory operand v (a vector, or a float scalar) was loaded from, when that load
        is among the last instructions and nothing since (a store, a loop or branch boundary,
        a redefinition of its address registers) could make memory differ from the value."""
        m = self.lane_mem.get(v)       # an integer load read lane by lane or splat from memory
        if m is not None:              # (x86_analysis.int_lane_loads): never loaded whole
            return m
        return self._reread(v, ("vmovup", "vmovdqu", "vmovss_x_m", "vmovsd_x_m"))

    def broadcast_mem(self, v: UOp) -> Mem | None:
        """The memory operand of the scalar VBROADCASTSS/SD (MOVDDUP) v (a splat) was read by, under
        the same conditions as loaded_mem: an ALU may read it again as an embedded broadcast."""
        return self._reread(v, ("vbroadcastss_", "vbroadcastsd_", "vmovddup_x_xm64"))

    def _reread(self, v: UOp, forms: tuple[str, ...]) -> Mem | None:
        """The memory operand of the instruction (a form starting with one of forms) that
        defined v's register, when memory there still holds what it read."""
        r = self.val.get(v)
        if r is None:
            return None
        addr: set = set()
        frame_stores = False
        # the up to _SCAN instructions passed are mostly the same from one call to the next
        # (f64_sin E_64_4: 41 calls, ~6,000 instructions passed): their facts are kept
        memo = self.reread_memo
        for inst in reversed(self.fn.insts[-_SCAN:]):
            f = memo.get(id(inst))
            if f is None:             # (the memo keeps inst alive: its id is not reused)
                f = memo[id(inst)] = reread_facts(inst)
            _, zero, plain, defs, store = f
            if zero and r not in defs:
                addr.update(defs)                 # a zeroing idiom: no memory access
                continue
            if not plain:
                return None
            if r in defs:
                ops = inst.operands
                if inst.op.startswith(forms) and len(ops) == 2 and inst.arg is None \
                        and isinstance(ops[1], Mem) and not addr & {ops[1].base, ops[1].index} \
                        and not (frame_stores and ops[1].base == RSP):
                    return ops[1]
                return None
            if store:
                if store == 2:
                    return None
                # a store to kcc's own frame (a REG buffer at [rsp + k]) cannot change a
                # buffer argument's memory: the caller's buffers are never in this frame
                frame_stores = True
            addr.update(defs)
        return None

    def gated_splat(self, v: UOp, k: int, dt: DType, w: str) -> VReg | None:
        """Lane k of v = WHERE(gate, LOAD, +0.0) (selected as the load AND a mask of the gate)
        in every lane, as a VBROADCASTSS from the loaded memory AND the gate's mask in every
        lane: one FP operation (the AND) where the load, the AND and a SHUFPS/VBROADCASTSS of
        the result were two (the WHERE's own load and AND go when nothing else reads them).
        Bitwise the same: a true gate's lanes keep the loaded bits, a false one's are +0.0.
        Only a mask whose lanes are all the same gate (where() records those)."""
        hit = self.gated.get(v)
        if hit is None or dt != dtypes.float32:
            return None
        load, mask, uniform = hit
        m = self.loaded_mem(load)
        if m is None:
            return None
        b = self._once(f"vbroadcastss_{w}_xm32", self._at(m, k * dt.itemsize))
        if not uniform or w != "x":
            # lane 0 of the mask (the gate's, all ones or zero) to every lane; invariant when
            # the gate is, so it leaves the loop with the mask (kcc/isel/licm.py)
            mask = self._once(f"vbroadcastss_{w}_xm32", mask)
        return self._once(f"vandps_{w}_{w}_{w}m", b, mask)

    @staticmethod
    def _at(m: Mem, off: int) -> Mem:
        return Mem(m.base, m.index, m.scale, m.disp + off)

    # -- building blocks ------------------------------------------------------------------------
    def splat(self, v: UOp, k: int, dt: DType, n: int) -> VReg:
        """Lane k of v in every one of n lanes."""
        w, c = vw(dt, n), 16 // dt.itemsize
        g = self.gated_splat(v, k, dt, w)
        if g is not None:
            return g
        m = self.loaded_mem(v)
        if m is not None:
            at = self._at(m, k * dt.itemsize)
            if dt == dtypes.float32:
                return self._once(f"vbroadcastss_{w}_xm32", at)
            if w == "x":
                return self._once("vmovddup_x_xm64", at)
            return self._once(f"vbroadcastsd_{w}_xm64", at)
        x, q = self.block_x((v, k // c)), k % c
        if dt == dtypes.float32:
            if w == "x" or q:                    # VBROADCASTSS from a register reads lane 0
                x = self._once("vshufps_x_x_xm_imm8", x, x, q * 0x55)
            return x if w == "x" else self._once(f"vbroadcastss_{w}_xm32", x)
        if w == "x":
            return self._once("vshufpd_x_x_xm_imm8", x, x, 3 * q)
        return self._once(f"vbroadcastsd_{w}_xm64", self._once("vshufpd_x_x_xm_imm8", x, x,
                                                                 3 * q) if q else x)

    def block_x(self, s: Block) -> VReg:
        """A register whose low 128 bits are block s[1] of vector s[0]."""
        v, b = s
        r = self.reg(v)
        if b == 0:
            return r
        if v.dtype.itemsize * v.shape[0] == 32:
            return self._once("vextractf128_xm_y_imm8", r, 1)
        return self._once("vextractf32x4_xm_z_imm8", r, b)

    def block_xm(self, s: Block) -> VReg | Mem:
        """Block s as an xm operand: memory when its vector was just loaded."""
        m = self.loaded_mem(s[0])
        return self._at(m, 16 * s[1]) if m is not None else self.block_x(s)

    def blocks_reg(self, srcs: list[Block], dt: DType) -> VReg:
        """A register holding the source blocks in order (one per 128 bits)."""
        v = srcs[0][0]
        if all(s == (v, i) for i, s in enumerate(srcs)):
            return self.reg(v)               # v's own low blocks: the register's low part
        if len(srcs) == 1:
            return self.block_x(srcs[0])
        nbytes = 16 * len(srcs)
        # one backward scan per source vector (a column repeated in every block names the same
        # vector 4 times; nothing is emitted between these reads)
        seen = {v: self.loaded_mem(v) for v in dict.fromkeys(v for v, _ in srcs)}
        mems = [seen[v] for v, _ in srcs]
        if None not in mems:
            at = [self._at(m, 16 * b) for m, (_, b) in zip(mems, srcs)]
            if all((m.base, m.index, m.scale, m.disp) == (at[0].base, at[0].index, at[0].scale,
                                                           at[0].disp + 16 * i)
                   for i, m in enumerate(at)):
                # blocks loaded from consecutive addresses: one wider load
                w = vw(dt, nbytes // dt.itemsize)
                return self._once(f"vmovup{'s' if dt == dtypes.float32 else 'd'}_{w}_{w}m",
                                  at[0])
        if all(s == srcs[0] for s in srcs):
            m = seen[srcs[0][0]]
            if m is not None:
                at = self._at(m, 16 * srcs[0][1])
                return self._once("vbroadcastf128_y_m128" if nbytes == 32 else
                                  "vbroadcastf32x4_z_m128", at)
            return self.repeat(self.block_x(srcs[0]), nbytes)
        t = self.block_swap(srcs, seen[v])
        if t is not None:
            return t
        if nbytes == 32:
            return self._once("vinsertf128_y_y_xm_imm8", self.block_x(srcs[0]),
                              self.block_xm(srcs[1]), 1)
        t = self.blocks_reg(srcs[:2], dt)
        for i in (2, 3):
            t = self._once("vinsertf32x4_z_z_xm_imm8", t, self.block_xm(srcs[i]), i)
        return t

    def block_swap(self, srcs: list[Block], mem: Mem | None) -> VReg | None:
        """The blocks of one ymm/zmm value in another order (a reversed load's,
        passes/widen_stride.py) as one instruction: VPERMPD of its 64-bit pairs (from memory
        when it was just loaded: mem), or VSHUFF32X4 of its blocks (SDM Vol. 2 "VPERMPD",
        "VSHUFF32X4": each destination block picked by 2 bits of imm8); None when the blocks
        are not all of one vector of the register's width."""
        v = srcs[0][0]
        if any(u is not v for u, _ in srcs) or v.dtype.itemsize * v.shape[0] != 16 * len(srcs):
            return None
        if len(srcs) == 2:
            b0, b1 = srcs[0][1], srcs[1][1]
            imm = 2 * b0 | (2 * b0 + 1) << 2 | (2 * b1) << 4 | (2 * b1 + 1) << 6
            return self._once("vpermpd_y_ym_imm8", mem if mem is not None else self.reg(v),
                              imm)
        r = self.reg(v)
        return self._once("vshuff32x4_z_z_zm_imm8", r, r,
                          sum(b << 2 * i for i, (_, b) in enumerate(srcs)))

    def repeat(self, x: VReg, nbytes: int) -> VReg:
        """The low 128 bits of x in every 128-bit block of nbytes."""
        if nbytes == 16:
            return x
        if nbytes == 32:
            return self._once("vinsertf128_y_y_xm_imm8", x, x, 1)
        return self._once("vshuff32x4_z_z_zm_imm8", x, x, 0)

    def concat(self, regs: list[VReg], dt: DType) -> VReg:
        """xmm registers joined in order into one ymm/zmm."""
        if len(regs) == 1:
            return regs[0]
        t = self._once("vinsertf128_y_y_xm_imm8", regs[0], regs[1], 1)
        for i in range(2, len(regs)):
            t = self._once("vinsertf32x4_z_z_xm_imm8", t, regs[i], i)
        return t

    def in_block(self, x: VReg, p: tuple[int, ...], dt: DType, n: int) -> VReg:
        """The lane order p applied to every 128-bit block of x (one SHUFPS/SHUFPD)."""
        w = vw(dt, n)
        if dt == dtypes.float32:
            return self._once(f"vshufps_{w}_{w}_{w}m_imm8", x, x, _imm4(p))
        bits = p[0] | p[1] << 1
        if w == "z":                             # no zmm SHUFPD row: VSHUFF32X4 cannot help
            lo, hi = self.split_z(x)
            return self.join_z(self._once("vshufpd_y_y_ym_imm8", lo, lo, bits * 5),
                               self._once("vshufpd_y_y_ym_imm8", hi, hi, bits * 5))
        return self._once(f"vshufpd_{w}_{w}_{w}m_imm8", x, x, bits * (5 if w == "y" else 1))

    def block_of_lanes(self, block: list[tuple[UOp, int]], dt: DType, w: str = "x",
                       wide: dict[Block, VReg] | None = None) -> VReg:
        """An xmm holding the lanes of one 128-bit block, each a lane of some vector; with
        w = "y"/"z", a ymm/zmm holding them in every block, from `wide`: each source block
        already in every block of a register."""
        c = 16 // dt.itemsize
        src = [((v, k // c), k % c) for v, k in block]
        blk = self.block_x if wide is None else wide.__getitem__
        if dt == dtypes.float64:
            (a, pa), (b, pb) = src
            return self._once("vshufpd_x_x_xm_imm8", self.block_x(a), self.block_x(b),
                              pa | pb << 1)
        shuf = f"vshufps_{w}_{w}_{w}m_imm8"
        if src[0][0] == src[1][0] and src[2][0] == src[3][0]:
            return self._once(shuf, blk(src[0][0]), blk(src[2][0]),
                              _imm4(tuple(p for _, p in src)))
        r0, i0, j0 = self._pair(src[0], src[1], w, blk)
        r1, i1, j1 = self._pair(src[2], src[3], w, blk)
        return self._once(shuf, r0, r1, _imm4((i0, j0, i1, j1)))

    def _pair(self, x: tuple[Block, int], y: tuple[Block, int], w: str = "x",
              blk=None) -> tuple[VReg, int, int]:
        """A register holding lanes x and y of two source blocks, and their positions in it
        (in every 128-bit block of a w-wide register when blk gives sources so repeated)."""
        (a, pa), (b, pb) = x, y
        blk = blk or self.block_x
        if a == b:
            return blk(a), pa, pb
        if pa == pb:
            # UNPCKLPS interleaves lanes 0-1 of both sources, UNPCKHPS lanes 2-3
            form = f"vunpcklps_{w}_{w}_{w}m" if pa < 2 else f"vunpckhps_{w}_{w}_{w}m"
            at = (pa % 2) * 2
            return self._once(form, blk(a), blk(b)), at, at + 1
        return (self._once(f"vshufps_{w}_{w}_{w}m_imm8", blk(a), blk(b),
                           _imm4((pa, pa, pb, pb))), 0, 2)
