"""AMD instruction selection (gfx1100 wave32, gfx942 wave64): a linearized kernel → a machine
function over SGPR/VGPR virtual registers (kcc/isel/amd/base.py describes the instructions).

Value model (docs/architecture.md, "AMD"):
- uniform values (uniform_nodes: constants, scalar PARAMs, gidx, uniform RANGE counters and
  ≤ 32-bit integer arithmetic on them) live in SGPRs and use SALU; everything else lives in
  VGPRs, one lane per work-item. A VALU operand is a VGPR, an SGPR, an inline constant or a
  literal, within each family's constant-bus and literal rules (`Base.legal_literals`,
  `Base.legal_scalars` copy what does not fit into VGPRs);
- bool is a lane mask (an SGPR in wave32, a pair in wave64): a compare's result; a uniform
  bool is all ones or all zeros (s_cselect after s_cmp);
- 8/16-bit integers sit normalized (sign-/zero-extended) in 32 bits, float16/bfloat16 as
  their bit pattern zero-extended; 64-bit values in aligned pairs; vectors are tuples.
Launch state (AMDGPUUsage "Initial Kernel Execution State"): the kernarg segment pointer in
s[0:1], workgroup ids x, y, z in the next SGPRs as enabled, the packed work-item id in v0
(x bits 0-9, y 10-19, z 20-29). Arguments are loaded with s_load from the kernarg segment
(`kernarg_layout`). Gated LOAD/STORE run with EXEC = EXEC & gate (s_and_saveexec) and restore
EXEC afterwards, so a false gate touches no memory. s_waitcnt is placed after allocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kcc.encode.amd.operands import Imm, Special
from kcc.ir.consts import const_int
from kcc.ir.dtype import DType, dtypes
from kcc.ir.mir import Inst, Kind, MFunction, VReg
from kcc.ir.ops import Ops
from kcc.ir.ranges import int_ranges
from kcc.ir.uop import AddrSpace, UOp, base_buffer
from kcc.isel.amd.alu import AmdAlu, _cmp_suffix
from kcc.isel.amd.base import AmdSelectError, D, const_bits, is_wide, uniform_nodes
from kcc.isel.amd.regs import Arch, preg
from kcc.isel.amd.fuse import fuse_shift_add
from kcc.isel.amd.schedule import early_loads, load_groups
from kcc.isel.common import SelectorBase, multiple_of, strong_const
from kcc.isel.dce import eliminate_dead


def kernarg_layout(params: list[UOp | None]) -> tuple[list[tuple[int, int]], int]:
    """(offset, size) per slot and the segment size: each argument aligned to its size, a
    buffer an 8-byte pointer, a scalar at least 4 bytes (its value in the low bytes); the size
    rounded up to the segment's 8-byte alignment."""
    out, off = [], 0
    for p in params:
        size = 8 if p is None or p.arg.addrspace is not AddrSpace.ALU else \
            max(4, p.dtype.itemsize)
        off = (off + size - 1) // size * size
        out.append((off, size))
        off += size
    return out, max((off + 7) // 8 * 8, 8)      # a multiple of the 8-byte alignment


@dataclass
class Buf:
    """Where a buffer lives: "global" (base address SGPR pair), "lds" (byte offset in the
    workgroup's LDS) or "reg" (one register per element)."""

    space: str
    dtype: DType
    base: object = None
    lds: int = 0
    slots: list = field(default_factory=list)
    size: int = 0                # elements (a global buffer's ParamArg size)


@dataclass
class Place:
    """A resolved INDEX/SHRINK: buffer, per-lane byte offset (VGPR) + constant byte offset,
    or a register slot, and the lane count."""

    buf: Buf
    voff: object
    imm: int
    lanes: int
    slot: int = 0
    aligned: bool = False        # the element index is a multiple of the lane count


@dataclass
class Selected:
    """The selector's result: the machine function and the facts the descriptor needs."""

    fn: MFunction
    lds_bytes: int
    workgroup_ids: tuple[bool, bool, bool]
    workitem_ids: int
    kernarg: list[tuple[int, int]]
    kernarg_size: int


class AmdSelector(SelectorBase, AmdAlu):
    """Select a linearized kernel into AMD machine instructions."""

    def __init__(self, name: str, arch: Arch, params: list[UOp | None]):
        super().__init__(name, arch)
        self.params = params
        self.bufs: dict[UOp, Buf] = {}
        self.places: dict[UOp, Place] = {}
        self.multiples: dict[UOp, int] = {}   # multiple_of's memo, for the kernel
        self.loops: list[tuple[UOp, object, object, object, object]] = []
        self.lds = 0
        self.dropped: set[int] = set()        # ids of instructions a later one made moot
        self.gate_keys: list[set] = []        # vcopies' keys where each open gate began

    def select(self, lin: list[UOp]) -> Selected:
        """Select every node of the schedule in order."""
        lin = early_loads(lin)
        self.load_groups = load_groups(lin)
        self.uniform = uniform_nodes(lin)
        self.ranges = int_ranges([lin[-1]])
        specials = {u.arg for u in lin if u.op is Ops.SPECIAL}
        self.entry(specials)
        self.bind_params()
        self.select_nodes(lin, self.unhandled)
        if self.loops:
            raise AmdSelectError("a RANGE without its END reached the AMD selector")
        self.emit("s_endpgm", kind=Kind.RET)
        # address arithmetic a memory operand folded (an unrolled loop's `base + k` whose k
        # became an offset) and values nobody reads
        if self.dropped:
            self.fn.insts = [i for i in self.fn.insts if id(i) not in self.dropped]
        eliminate_dead(self.fn, _effect, _scc)
        fuse_shift_add(self.fn, self.arch)
        gids = tuple(f"gidx{k}" in specials for k in range(3))
        top = max((k for k in range(3) if gids[k]), default=-1)
        wgs = tuple(k <= top for k in range(3))
        litop = max((int(s[-1]) for s in specials if s.startswith("lidx")), default=0)
        layout, size = kernarg_layout(self.params)
        return Selected(self.fn, self.lds, wgs, litop, layout, size)

    def unhandled(self, u: UOp) -> None:
        """An op with no AMD rule is refused, naming it."""
        raise AmdSelectError(f"the AMD back end does not handle {u.op.name} ({u.dtype})")

    # -- launch state ---------------------------------------------------------------------
    def entry(self, specials: set[str]) -> None:
        """The registers the hardware sets: s[0:1] kernarg pointer, workgroup ids, v0."""
        self.kernarg = self.new("s2")
        self.fn.params.append((self.kernarg, preg("s", 0, 2)))
        top = max((int(s[-1]) for s in specials if s.startswith("gidx")), default=-1)
        self.wgid: dict[int, object] = {}
        for k in range(top + 1):
            r = self.new("s")
            self.fn.params.append((r, preg("s", 2 + k, 1)))
            self.wgid[k] = r
        self.tid = None
        if any(s.startswith("lidx") for s in specials):
            self.tid = self.new("v")
            self.fn.params.append((self.tid, preg("v", 0, 1)))

    def bind_params(self) -> None:
        """s_load every argument used from the kernarg segment at entry."""
        layout, _ = kernarg_layout(self.params)
        for p, (off, size) in zip(self.params, layout):
            if p is None:
                continue
            if p.arg.addrspace is not AddrSpace.ALU:
                r = self.new("s2")
                self.emit("s_load_b64", D(r), self.kernarg, Imm(off))
                self.bufs[p] = Buf("global", p.dtype, r, size=p.arg.size)
                continue
            dt = p.dtype
            if is_wide(dt):
                r = self.new("s2")
                self.emit("s_load_b64", D(r), self.kernarg, Imm(off))
                self.val[p] = r
                continue
            r = self.new("s")
            self.emit("s_load_b32", D(r), self.kernarg, Imm(off))
            self.val[p] = self.scalar_arg(r, dt)

    def scalar_arg(self, r: object, dt: DType) -> object:
        """A ≤ 32-bit argument word in its register form (normalized, or a lane mask)."""
        if dt.is_bool:
            m = self.new(self.arch.mask_cls)
            self.emit("s_cmp_lg_u32", r, Imm(0))
            self.emit(f"s_cselect_b{self.arch.wave}", D(m), Imm(-1), Imm(0))
            return m
        # narrow ints sign/zero-extended, float16/bfloat16 bits with the upper half cleared
        return self.snormalize(r, dt)

    # -- structure ------------------------------------------------------------------------
    def sel_PARAM(self, u: UOp) -> None:
        """Bound at entry."""
        if u not in self.bufs and u not in self.val:
            raise AmdSelectError(f"PARAM slot {u.arg.slot} is not in the kernel signature")

    def sel_BARRIER(self, u: UOp) -> None:
        """s_barrier: every wave of the workgroup (s_waitcnt for LDS/memory before it is
        placed with the others)."""
        self.emit("s_barrier", kind=Kind.OP)

    def sel_SPECIAL(self, u: UOp) -> None:
        """gidx → the workgroup id SGPR; lidx → its 10-bit field of v0 (v_bfe_u32)."""
        k = int(u.arg[-1])
        if u.arg.startswith("gidx"):
            r = self.wgid[k]
        else:
            r = self.new("v")
            self.emit("v_bfe_u32", D(r), self.tid, Imm(10 * k), Imm(10))
        if is_wide(u.dtype):
            r = self.widen_u32(r)
        self.val[u] = r

    def sel_RANGE(self, u: UOp) -> None:
        """A uniform loop: an SGPR counter from 0, skipped when the bound may be ≤ 0; a bound
        that differs between lanes or sits in a VGPR, or a 64-bit counter: lane_loop."""
        b = u.src[0]
        if u not in self.uniform or (strong_const(b) is None and self.reg(b).cls != "s"):
            # per lane, or a uniform bound the VALU computed (a decomposed CDIV, say)
            return self.lane_loop(u)
        i = self.new("s")
        self.emit("s_mov_b32", D(i), Imm(0))
        c = strong_const(u.src[0])
        skip = None
        if c is None or int(c) <= 0:
            skip = self.label()
            self.emit("s_cmp_le_i32", self.sreg(u.src[0]), Imm(0))
            self.emit("s_cbranch_scc1", skip, kind=Kind.BRANCH)
        head = self.label()
        self.emit(".loop", head, kind=Kind.LOOP_BEGIN)
        self.loops.append((u, i, head, skip, None))
        self.val[u] = i

    def lane_loop(self, u: UOp) -> None:
        """A VGPR counter from 0 per lane; EXEC = the lanes with 0 < bound (s_and_saveexec,
        the old EXEC saved), the whole loop skipped when none is left (s_cbranch_execz)."""
        wide = is_wide(u.dtype)
        i = self.new("v2" if wide else "v")
        self.emit(".vlit64" if wide else "v_mov_b32", D(i), Imm(0))
        live = self.new(self.arch.mask_cls)
        self.emit(f"v_cmp_lt_{_cmp_suffix(u.dtype)}", D(live), Imm(0), self.vsrc(u.src[0]))
        saved = self.new(self.arch.mask_cls)
        self.emit(self.mask_op("s_and_saveexec"), D(saved), live)
        skip = self.label()
        self.emit("s_cbranch_execz", skip, kind=Kind.BRANCH)
        head = self.label()
        self.emit(".loop", head, kind=Kind.LOOP_BEGIN)
        self.loops.append((u, i, head, skip, saved))
        self.lane_loops += 1
        self.val[u] = i

    def sel_END(self, u: UOp) -> None:
        """i += 1; s_cmp_lt_i32 i, bound; s_cbranch_scc1 back to the head. A per-lane loop:
        EXEC = the lanes with i < bound (v_cmp under EXEC: finished lanes stay out), back to
        the head while any is left (s_cbranch_execnz), then the saved EXEC."""
        rng, i, head, skip, saved = self.loops.pop()
        if rng is not u.src[1]:
            raise AmdSelectError("linearize left loops improperly nested")
        if saved is None:
            self.emit("s_add_i32", D(i, mod=True), i, Imm(1))
            self.emit("s_cmp_lt_i32", i, self.sreg(rng.src[0]))
            self.emit("s_cbranch_scc1", head, kind=Kind.LOOP_END)
            if skip is not None:
                self.emit(".label", skip, kind=Kind.LABEL)
            return
        wide = is_wide(rng.dtype)
        if wide:
            self.emit(".add64", D(i, mod=True), i, Imm(1))
        else:
            self.emit("v_add_nc_u32", D(i, mod=True), Imm(1), i)
        more = self.new(self.arch.mask_cls)
        self.emit(f"v_cmp_lt_{_cmp_suffix(rng.dtype)}", D(more), i, self.vsrc(rng.src[0]))
        self.emit(f"s_mov_b{self.arch.wave}", self.exec, more)
        self.emit("s_cbranch_execnz", head, kind=Kind.LOOP_END)
        self.emit(".label", skip, kind=Kind.LABEL)
        self.emit(f"s_mov_b{self.arch.wave}", self.exec, saved)
        self.lane_loops -= 1

    def sel_AFTER(self, u: UOp) -> None:
        """AFTER is its first src; the schedule already honours the order."""
        x = u.src[0]
        if x.kind == "buffer":
            self.bufs[u] = self.buffer(x)
        elif x in self.places:
            self.places[u] = self.places[x]
        else:
            self.val[u] = self.reg(x)

    def sel_STACK(self, u: UOp) -> None:
        """A vector value is the tuple of its lanes' registers."""
        self.val[u] = tuple(self.reg(s) for s in u.src)

    # -- memory ---------------------------------------------------------------------------
    def sel_BUFFER(self, u: UOp) -> None:
        """LOCAL → a range of the workgroup's LDS; REG → one register per element."""
        a = u.arg
        if a.addrspace is AddrSpace.LOCAL:
            self.lds = (self.lds + 15) // 16 * 16
            self.bufs[u] = Buf("lds", u.dtype, lds=self.lds)
            self.lds += a.size * u.dtype.itemsize
            return
        cls = self.arch.mask_cls if u.dtype.is_bool else ("v2" if is_wide(u.dtype) else "v")
        slots = []
        for _ in range(a.size):
            r = self.new(cls)
            # defined on every path so that a masked (gated) write can keep inactive lanes
            if u.dtype.is_bool:
                self.emit(f"s_mov_b{self.arch.wave}", D(r), Imm(0))
            elif cls == "v2":
                self.emit(".vlit64", D(r), Imm(0))
            else:
                init = self.emit("v_mov_b32", D(r), Imm(0))
                self.vcopies[("init", id(r))] = init     # (a first constant store replaces it)
            slots.append(r)
        self.bufs[u] = Buf("reg", u.dtype, slots=slots)

    def buffer(self, b: UOp) -> Buf:
        while b not in self.bufs and b.op is Ops.AFTER:
            b = b.src[0]
        if b not in self.bufs:
            raise AmdSelectError(f"{b.op.name} is not a buffer the kernel can address")
        return self.bufs[b]

    def sel_INDEX(self, u: UOp) -> None:
        """A place in a buffer, or one lane of a vector value."""
        if u.src[0].kind == "value":
            self.val[u] = self.reg(u.src[0])[const_int(u.src[1])]
            return
        self.places[u] = self.place(u.src[0], u.src[1], 1)

    def sel_SHRINK(self, u: UOp) -> None:
        """A place of n contiguous elements."""
        self.places[u] = self.place(u.src[0], u.src[1], u.shape[0])

    def place(self, base: UOp, idx: UOp, lanes: int) -> Place:
        """The byte offset of element idx: a VGPR (idx · size) plus a constant; `aligned`
        when a vector access of the lanes is naturally aligned (buffers are)."""
        p = self._place(base, idx, lanes)
        m = multiple_of(idx, self.multiples)
        p.aligned = lanes > 1 and (m == 0 or m % lanes == 0)
        return p

    def _place(self, base: UOp, idx: UOp, lanes: int) -> Place:
        buf = self.buffer(base)
        k = strong_const(idx)
        if k is None and idx.op is Ops.CONST and isinstance(idx.arg, int):
            k = idx.arg
        if buf.space == "reg":
            if k is None:
                # a runtime index selects among the slots (no scratch memory)
                x = self.reg(idx)
                return Place(buf, self.lo32(x) if is_wide(idx.dtype) else x, 0, lanes, -1)
            return Place(buf, None, 0, lanes, int(k))
        size = buf.dtype.itemsize
        if k is not None and 0 <= int(k) * size + buf.lds < _imm_limit(buf.space):
            return Place(buf, None, int(k) * size + buf.lds, lanes)
        off = 0
        if idx.op is Ops.ADD:
            c = strong_const(idx.src[1])
            if isinstance(c, int) and not isinstance(c, bool) and \
                    self.foldable(buf, idx.src[0], c, lanes):
                idx, off = idx.src[0], c * size
        x = self.reg(idx)
        if is_wide(idx.dtype):
            x = self.lo32(x)
        shift = size.bit_length() - 1
        if shift:
            # one shift per index value and block (address CSE: a load and the store of the
            # same element, or the copies of an unrolled loop, share it)
            key = ("shl", id(x), shift)
            v = self.vcopies.get(key)
            if v is None:
                v = self.new("v")
                self.emit("v_lshlrev_b32", D(v), Imm(shift), x)
                self.vcopies[key] = v
            x = v
        else:
            x = self.vgpr(x)
        return Place(buf, x, off + buf.lds, lanes)

    def foldable(self, buf: Buf, x: UOp, c: int, lanes: int) -> bool:
        """Whether element index x + c may be addressed as VGPR x·size plus the immediate
        offset c·size. The VGPR offset is read as an *unsigned* 32-bit number: GLOBAL with
        SADDR adds it zero-extended to the 64-bit base (RDNA3 ISA §10.1 / CDNA3 ISA §9.1,
        "vaddr is a 32-bit offset"), and a DS address is VGPR + offset with no wrap we rely
        on (RDNA3 ISA §11 / CDNA3 ISA §10). So x·size must be the 32-bit number it is in
        every active lane: a negative x (x = s - lidx with x + 3 in bounds) would address
        4 GiB past the buffer, and so would an unsigned x + c that wraps around to a small
        index. That holds when x's value range [lo, hi] has lo ≥ 0 and hi·size plus the
        immediate stays below 2^32, or when c < 0 (x = index - c > index ≥ 0 for an
        in-bounds index, without wrapping when the buffer is below 2 GiB). Every lane's
        immediate (the last one at (c + lanes - 1)·size) must fit the encoding: 13-bit
        signed for GLOBAL, 16-bit unsigned for DS."""
        size = buf.dtype.itemsize
        first = c * size + buf.lds
        last = first + (lanes - 1) * size
        lo = -4096 if buf.space == "global" else 0
        if not (lo <= first and last < _imm_limit(buf.space)):
            return False
        if c < 0:
            return buf.space == "global" and buf.size * size + 4096 <= 1 << 31
        r = self.ranges.get(x)
        return r is not None and r[0] >= 0 and r[1] * size + last < 1 << 32

    def _voff(self, p: Place, k: int, size: int) -> tuple[object, int]:
        """(VGPR offset, immediate offset) of lane k of a place."""
        imm = p.imm + k * size
        if p.voff is None:
            if 0 <= imm < _imm_limit(p.buf.space):
                v = self.vcopies.get(("zero",))
                if v is None:
                    v = self.vcopies[("zero",)] = self.new("v")
                    self.emit("v_mov_b32", D(v), Imm(0))
                return v, imm
            v = self.new("v")
            self.emit("v_mov_b32", D(v), Imm(imm))
            return v, 0
        return p.voff, imm

    def gate_begin(self, u: UOp, gate_idx: int) -> object | None:
        """EXEC &= gate (s_and_saveexec); returns the saved EXEC (None when ungated)."""
        if len(u.src) <= gate_idx:
            return None
        g = self.reg(u.src[gate_idx])
        saved = self.new(self.arch.mask_cls)
        self.emit(self.mask_op("s_and_saveexec"), D(saved), g)
        self.gate_keys.append(set(self.vcopies))
        return saved

    def gate_end(self, saved: object | None) -> None:
        """Restore EXEC. What was computed under the gate (a zero offset VGPR) holds its
        value in the gated lanes only and is forgotten; what was computed before it (an
        address shift under the EXEC now restored) stays valid in every lane of that EXEC
        and is reused (a padded convolution's gated loads share one address)."""
        if saved is not None:
            self.emit(f"s_mov_b{self.arch.wave}", self.exec, saved)
            before = self.gate_keys.pop()
            for key in [k for k in self.vcopies if k not in before]:
                del self.vcopies[key]

    def sel_LOAD(self, u: UOp) -> None:
        """global_load/ds_load per element; gated: the alt value first, then the load under
        EXEC & gate into the same register (inactive lanes keep alt)."""
        if u in self.val:
            return                 # a lane of a wide load (load_group)
        g = self.load_groups.get(u)
        if g is not None and self.load_group(u, g):
            return
        p = self.places[u.src[0]]
        dt = p.buf.dtype
        gated = len(u.src) == 3
        alts = None
        if gated:
            a = self.reg(u.src[1])
            alts = a if isinstance(a, tuple) else (a,) * p.lanes
        outs = []
        if p.buf.space == "reg":
            self.slots_read(p.buf)
        if p.buf.space == "reg" and p.slot < 0:
            for k in range(p.lanes):
                r = p.buf.slots[0]
                for j in range(1, len(p.buf.slots)):
                    r = self.select_value(self.slot_is(p, k, j), p.buf.slots[j], r, dt)
                if gated:
                    r = self.select_value(self.reg(u.src[2]), r, alts[k], dt)
                outs.append(r)
            self.val[u] = outs[0] if p.lanes == 1 else tuple(outs)
            return
        if p.buf.space == "reg":
            for k in range(p.lanes):
                src = p.buf.slots[p.slot + k]
                if not gated:
                    outs.append(src)
                    continue
                outs.append(self.select_value(self.reg(u.src[2]), src, alts[k], dt))
            self.val[u] = outs[0] if p.lanes == 1 else tuple(outs)
            return
        if self.vector_mem(p, dt) and not gated:
            self.val[u] = self.load_vector(p, dt)
            return
        regs = []
        c = strong_const(u.src[1]) if gated else None
        for k in range(p.lanes):
            r = self.new("v2" if is_wide(dt) else "v")
            if c is not None and dt.itemsize == 4 and not dt.is_bool:
                # a constant alt straight into the VGPR (not through an SGPR: one SALU less)
                self.copy_into(r, self.vconst_imm(const_bits(c, dt)), dt)
            elif gated:
                self.copy_into(r, alts[k], dt)
            regs.append(r)
        saved = self.gate_begin(u, 2)
        for k, r in enumerate(regs):
            voff, imm = self._voff(p, k, dt.itemsize)
            name = self.mem_name("load", p.buf.space, dt)
            dst = D(r, mod=gated)
            if p.buf.space == "global":
                self.emit(name, dst, voff, p.buf.base, mods=(("offset", imm),))
            else:
                self.emit(name, dst, voff, mods=(("offset", imm),))
        self.gate_end(saved)
        for r in regs:
            outs.append(self.to_mask(r) if dt.is_bool else r)
        self.val[u] = outs[0] if p.lanes == 1 else tuple(outs)

    def load_group(self, u: UOp, group: list[UOp]) -> bool:
        """The scalar loads of elements x + c … of schedule.load_groups as one wide load
        where element x + c is aligned for it, else (4 lanes) as two halves where they are;
        False (nothing done) where not even that holds or a load was already selected."""
        if any(ld in self.val for ld in group):
            return False
        idx = u.src[0]
        p = self.place(idx.src[0], idx.src[1], len(group))
        if not self.vector_mem(p, p.buf.dtype):
            if len(group) == 4:
                self.load_groups[group[2]] = group[2:]
                return self.load_group(u, group[:2])
            return False
        for ld, r in zip(group, self.load_vector(p, p.buf.dtype)):
            self.val[ld] = r
        return True

    def sel_STORE(self, u: UOp) -> None:
        """global_store/ds_store per element under EXEC & gate; REG slots are moves."""
        p = self.places[u.src[0]]
        dt = p.buf.dtype
        c = strong_const(u.src[1])
        if p.buf.space == "reg" and p.slot >= 0 and len(u.src) == 2 and c is not None \
                and not dt.is_bool and not is_wide(dt):
            # a constant into a register slot (an accumulator's init): one v_mov, which
            # replaces the slot's zeroing when nothing came between them (same block)
            slot = p.buf.slots[p.slot]
            init = self.vcopies.pop(("init", id(slot)), None)
            if init is not None and not self.lane_loops:
                self.dropped.add(id(init))
            self.copy_into(slot, self.vconst_imm(const_bits(c, dt)), dt)
            return
        v = self.reg(u.src[1])
        vals = v if isinstance(v, tuple) else (v,)
        if p.buf.space == "reg":
            self.slots_read(p.buf)
        if p.buf.space == "reg" and p.slot < 0:
            for k, r in enumerate(vals):
                for j, slot in enumerate(p.buf.slots):
                    m = self.slot_is(p, k, j)
                    if len(u.src) == 3:
                        g = self.new(self.arch.mask_cls)
                        self.emit(self.mask_op("s_and"), D(g), m, self.reg(u.src[2]))
                        m = g
                    self.copy_into(slot, self.select_value(m, r, slot, dt), dt)
            return
        if p.buf.space == "reg":
            for k, r in enumerate(vals):
                slot = p.buf.slots[p.slot + k]
                if len(u.src) == 3:
                    r = self.select_value(self.reg(u.src[2]), r, slot, dt)
                self.copy_into(slot, r, dt)      # the slot's one register, in loops too
            return
        if self.vector_mem(p, dt):
            if all(isinstance(r, VReg) and r.cls == "v" for r in vals):
                # one parallel copy the allocator puts in place where it can: the values
                # computed where the data tuple will be (regs.AmdRegInfo.subreg_copy)
                t = self.new(f"v{len(vals)}")
                self.emit(".join", D(t), *vals)
            else:
                t = self.pack(list(vals))    # (no bools: vector_mem; SGPRs read directly)
            saved = self.gate_begin(u, 2)
            voff, imm = self._voff(p, 0, dt.itemsize)
            name = self.mem_name("store", p.buf.space, dt, p.lanes)
            base = (p.buf.base,) if p.buf.space == "global" else ()
            self.emit(name, voff, t, *base, mods=(("offset", imm),))
            self.gate_end(saved)
            return
        data = [self.store_data(r, dt) for r in vals]
        saved = self.gate_begin(u, 2)
        for k, r in enumerate(data):
            voff, imm = self._voff(p, k, dt.itemsize)
            name = self.mem_name("store", p.buf.space, dt)
            if p.buf.space == "global":
                self.emit(name, voff, r, p.buf.base, mods=(("offset", imm),))
            else:
                self.emit(name, voff, r, mods=(("offset", imm),))
        self.gate_end(saved)

    def slots_read(self, buf: Buf) -> None:
        """A REG buffer's slots may be read here: their zeroing must stay."""
        for r in buf.slots:
            self.vcopies.pop(("init", id(r)), None)

    def slot_is(self, p: Place, k: int, j: int) -> object:
        """The lane mask of (runtime index + k == j) for a REG place."""
        m = self.new(self.arch.mask_cls)
        x = p.voff
        if x.cls == "s":
            self.emit("s_cmp_eq_u32", x, Imm(j - k))
            self.emit(f"s_cselect_b{self.arch.wave}", D(m), Imm(-1), Imm(0))
        else:
            self.emit("v_cmp_eq_u32", D(m), self.vconst((j - k) & 0xFFFFFFFF), x)
        return m

    def store_data(self, r: object, dt: DType) -> object:
        """The VGPR (pair) a store writes: bools as 0/1, SGPR values copied."""
        if dt.is_bool:
            return self.from_mask(r)
        return self.vgpr(r)

    def vector_mem(self, p: Place, dt: DType) -> bool:
        """Whether a place's lanes move as one b64/b128 access (SHRINK, aligned, 32/64-bit)."""
        return (p.aligned and p.lanes in (2, 4) and not dt.is_bool and dt.itemsize in (4, 8)
                and p.lanes * dt.itemsize in (8, 16) and p.buf.space in ("global", "lds"))

    def load_vector(self, p: Place, dt: DType) -> tuple:
        """One global_load_b64/b128 (ds_load) into a tuple, then its lanes."""
        words = p.lanes * dt.itemsize // 4
        t = self.new(f"v{words}")
        voff, imm = self._voff(p, 0, dt.itemsize)
        name = self.mem_name("load", p.buf.space, dt, p.lanes)
        base = (p.buf.base,) if p.buf.space == "global" else ()
        self.emit(name, D(t), voff, *base, mods=(("offset", imm),))
        per = dt.itemsize // 4
        if per == 1:
            # one parallel copy the allocator puts in place (regs.AmdRegInfo.subreg_copy):
            # each lane stays in its register of the loaded tuple, no v_mov
            outs = [self.new("v") for _ in range(p.lanes)]
            self.emit(".split", *(D(r) for r in outs), t)
            return tuple(outs)
        outs = []
        for k in range(p.lanes):
            r = self.new("v2")
            # in place, so r may take t's registers where t dies (lower.Lowering.x_vpair)
            self.emit(".vpair", D(r), t, Imm(k))
            outs.append(r)
        return tuple(outs)

    def mem_name(self, kind: str, space: str, dt: DType, lanes: int = 1) -> str:
        """global_load_b32, ds_store_b16, global_load_b128, … for lanes elements of dt."""
        pre = "global" if space == "global" else "ds"
        size = dt.itemsize * lanes
        if kind == "load" and size < 4:
            sign = "i" if dt.is_int and dt.is_signed else "u"
            return f"{pre}_load_{sign}{8 * size}"
        return f"{pre}_{kind}_b{8 * size}"


def _effect(inst: Inst) -> bool:
    """Whether an instruction does more than define its registers: writes memory, or writes
    EXEC/VCC/M0 (a special register operand, s_and_saveexec)."""
    tmpl = inst.arg[0] if inst.arg else ()
    return inst.op.startswith(_WRITERS) or "saveexec" in inst.op or \
        any(isinstance(t, Special) for t in tmpl)


_WRITERS = ("global_store", "global_atomic", "ds_store", "ds_write", "ds_add", "ds_bpermute",
            "scratch_store", "s_barrier")


def _scc(inst: Inst) -> str:
    """How an instruction uses SCC (kcc/isel/flags.py's rule for DCE): s_cselect, s_addc,
    s_subb, s_cmov read it; every other SALU op but the moves, loads and program control may
    write it (a dead one paired with a reader stays, it is there for SCC)."""
    op = inst.op
    if op.startswith(("s_cselect", "s_cmov", "s_cbranch_scc")):
        return "r"
    if op.startswith(("s_addc", "s_subb")):
        return "rw"
    if op.startswith("s_") and not op.startswith(("s_mov", "s_load", "s_waitcnt", "s_barrier",
                                                   "s_endpgm", "s_nop", "s_branch",
                                                   "s_cbranch", "s_sext")):
        return "w"
    return ""


def _imm_limit(space: str) -> int:
    """One past the largest non-negative immediate offset: GLOBAL 13-bit signed (RDNA3 ISA
    §16.8 / CDNA3 ISA §12.9), DS 16-bit unsigned (RDNA3 ISA §16.5 / CDNA3 ISA §12.6)."""
    return 4096 if space == "global" else 65536


def select(lin: list[UOp], name: str, params: list[UOp | None], arch: Arch) -> Selected:
    """Select a linearized kernel; `params[i]` is the PARAM of slot i (None if unused)."""
    if not lin or lin[-1].op is not Ops.SINK:
        raise AmdSelectError("the schedule must end with the SINK")
    return AmdSelector(name, arch, params).select(lin)


__all__ = ["AmdSelectError", "Selected", "base_buffer", "dtypes", "kernarg_layout",
           "multiple_of", "select"]
