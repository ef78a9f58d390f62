"""Instruction selection for x86-64 (AVX2/FMA/F16C): linearized UOps to a machine function.

Value model (why: it keeps most ops one or two instructions):
- bool, integers, float16 and bfloat16 (bit patterns) live in general-purpose registers; only
  the low `bits` of the register are meaningful, so an op reads the upper bits only after an
  explicit extension (`movsx`/`movzx`/`movsxd`): division, comparison, right shift, widening
  casts, addressing. 8- and 16-bit arithmetic uses the 32-bit forms.
- float32/float64 scalars live in the low lane of an xmm register; vectors of 4/8 float32 or
  2/4 float64 in xmm/ymm.
- A bool is 0 or 1 in the low byte. Float compares use `vcmps*` predicates chosen for the exact
  NaN rules of docs/semantics.md (LT_OS, EQ_OQ, NEQ_UQ), never the flags of `ucomiss`.
- Places (INDEX/SHRINK) become memory operands `[base + index*scale + disp]`; REG buffers live
  in the frame below the spill area, addressed from rsp.
- A gated store never branches: its address is replaced by a frame scratch slot when the gate
  is false (`cmove`), so a false gate writes nothing the kernel can observe; on x86-64-v4 a
  float or vector one is a masked store instead (kcc/isel/x86/kmask.py).
Loops are LOOP_BEGIN/LOOP_END markers around the body; the counter is a loop-carried register,
and so is each strength-reduced index sum `init + r*step` (`x86_analysis.induction_sums`).
- A float load with one ALU user is read by that user as its memory operand (`vaddps x, x,
  [mem]`, `vinsertps x, x, [mem], imm`; `x86_analysis.foldable_loads`).
Rules are methods `sel_<op>` (one per UOp op), each with a one-line docstring.
"""

from __future__ import annotations

from kcc.ir import AddrSpace, UOp, dtypes
from kcc.ir.ops import Ops
from kcc.ir.dtype import DType
from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp, VReg
from kcc.ir.ranges import int_ranges
from kcc.isel.common import _RULE_NAMES, SelectorBase
from kcc.isel.x86.alu import X86Alu
from kcc.isel.x86.cast import X86Cast
from kcc.isel.x86.idioms import X86Idioms
from kcc.isel.x86.anylanes import X86AnyLanes
from kcc.isel.x86.half import X86Half, is_half_vector
from kcc.isel.x86.icast import X86ICast
from kcc.isel.x86.analysis import (foldable_loads, induction_sums, int_lane_loads, lane_loads,
                                   low_word_muls, promotable_buffers, schedule_facts,
                                   wider_splats)
from kcc.isel.x86.base import (OPERAND_PLANS, SCRATCH_BYTES, ConstPool, Place,
                               SelectError, commit_const, const_bytes, fits32, fs, imm_form,
                               isz, operand_plan, strong_const, vw)
from kcc.isel.x86.ivec import X86IVec, is_int_vector
from kcc.isel.x86.kmask import X86KMask
from kcc.isel.x86.loopexit import step_form
from kcc.isel.x86.mem import X86Mem
from kcc.isel.x86.regs import FLOAT_ARG_REGS, INT_ARG_REGS, RBP, reg_class
from kcc.isel.x86.shuf import splat_only_wheres
from kcc.isel.x86.vec import X86Vec
from kcc.isel.x86.transpose import transpose_groups
from kcc.isel.x86.vgather import vgather_nodes
from kcc.isel.x86.viv import X86VecInduction, vector_inductions
from kcc.record import Counts  # collections.Counter's counting, without collections

__all__ = ["ConstPool", "Place", "SelectError", "X86Selector", "commit_const", "const_bytes",
           "imm_form", "isz", "select", "strong_const", "vw"]


# scalar integer ops selected aside until a rule reads them (X86Selector.select_all)
_ASIDE = frozenset({Ops.ADD, Ops.SHL, Ops.MUL})


class X86Selector(X86Mem, SelectorBase, X86Vec, X86Alu, X86Cast, X86Idioms, X86IVec,
                  X86ICast, X86KMask, X86Half, X86AnyLanes, X86VecInduction):
    """Selects one kernel: `X86Selector(name, pool, specials).select(lin)` → MFunction."""

    def __init__(self, name: str, pool: ConstPool, specials: list[str], evex: bool = False,
                 stream: dict[UOp, int] | None = None,
                 prefetch: dict[UOp, int] | None = None):
        self.fn = MFunction(name)
        # LOADs with a software prefetch ahead (kcc/isel/x86/prefetch.py) → bytes ahead
        self.prefetch = prefetch or {}
        # STOREs selected as non-temporal stores (kcc/isel/x86/stream.py) → their vector
        # bytes; the buffers they write → the alignment their base pointer needs
        self.stream = stream or {}
        self.stream_align: dict[UOp, int] = {}
        self.evex = evex            # x86-64-v4: EVEX-only forms (embedded broadcasts, opmasks)
        self.kval: dict[UOp, VReg] = {}             # bool vectors as opmasks (evex)
        self.lazy_masks: set[UOp] = set()           # ... whose lane-mask vector waits
        self.pool = pool
        self.specials = specials
        self.val: dict[UOp, VReg] = {}
        self.places: dict[UOp, Place] = {}
        self.bufs: dict[UOp, tuple[str, object]] = {}   # ("ptr", vreg) | ("frame", offset)
        self.frame_bytes = SCRATCH_BYTES               # REG buffers follow the scratch slot
        self.scratch_used = False                      # a gated store's false address
        self.loops: list[tuple[UOp, VReg, str | None, str | None]] = []
        self.const_cache: dict[tuple, VReg] = {}
        # values re-read from a register an instruction left them in (x86_alu.mulhi_mulx's
        # rdx): (node, its register before, loop depth); restored as their loop closes
        self.kept: list[tuple[UOp, VReg, int]] = []
        # an address's index as an affine sum (kcc/ir/affine.py) → the first index of those
        # terms addressed at this loop path, and its constant (address: lane k's index is
        # lane 0's register plus a displacement)
        self.affine_memo: dict = {}
        self.affine_seen: dict[tuple, tuple[UOp, int]] = {}
        self.stack_args: list[tuple[VReg, int]] = []
        self._labels = 0
        self.zext: set[VReg] = set()                # vregs whose bits 63:32 are known zero
        # 8/16-bit values loaded by MOVZX/MOVSX → their dtype: bits 31:8 (31:16) extend them
        self.widened: dict[VReg, DType] = {}
        # float16 bits in a GPR → an xmm holding the same bits in word 0 (x86_alu.from_f32's
        # VCVTPS2PH result), so that a widening or a store skips the round trip through the GPR
        self.half_xmm: dict[VReg, VReg] = {}
        self.ranges: dict = {}
        self.foldable: frozenset[UOp] = frozenset()  # loads that may become memory operands
        self.deferred: dict[UOp, Mem] = {}          # foldable loads not emitted yet
        self.lane_loads: frozenset[UOp] = frozenset()  # vector loads read lane by lane
        self.lane_mem: dict[UOp, Mem] = {}          # ... their places (each lane read there)
        # what `_reread` reads off each instruction it passes (x86_shuf.reread_facts), by id
        self.reread_memo: dict[int, tuple] = {}
        # lanes of vector registers (INDEX of a float vector) not extracted yet: made only
        # when reg() asks, but placed where the schedule selected them (`lazy_lane`)
        self.lazy_lanes: dict[UOp, tuple[int, int, int, VReg, DType, int, int]] = {}
        # scalar integer ADD/SHL/MUL selected aside (`select_all`): node → (place, order,
        # register, instructions), kept only when reg() asks for the value
        self.aside: dict[UOp, tuple[int, int, VReg, list[Inst]]] = {}
        self.splices: list[tuple[int, int, list[Inst]]] = []   # (place, order, instructions)
        self.order = 0                                  # the splices' order at one place
        self.splat_only: frozenset[UOp] = frozenset()  # WHEREs gated_splat reads
        self.bool_inner: set[UOp] = set()           # bool OR/AND nodes inside a tree
        # the rules' memos, one kernel long (a selector selects one kernel); a value made
        # where it is first read is keyed by the loop nest there too (made inside a loop, it
        # would be undefined after a loop that ran no iteration)
        self.bool_masks: dict[tuple, VReg] = {}   # x86_vec.bool_vec: (u, lane bytes, loops)
        self.mask_widths: dict[UOp, tuple[int, int] | None] = {}   # x86_vec.mask_width
        # x86_alu's gated-load WHEREs -> (load, mask, whether every lane of the mask is one
        # gate), read by x86_shuf.gated_splat
        self.gated: dict[UOp, tuple[UOp, VReg, bool]] = {}
        self.kstacks: dict[tuple, VReg] = {}      # x86_kmask.kbool of a STACK: (u, loops)
        self.lane_masks: dict[tuple, VReg] = {}   # x86_kmask.lane_mask: (u, loops)
        self.klane_ops: dict[tuple, VReg] = {}    # x86_kmask.klane_logic: (op, a, b, loops)
        self.kgates: dict[tuple, VReg] = {}       # x86_kmask.kgate: (c, lanes > 1, loops)
        self.kbit_regs: dict[tuple, VReg] = {}    # x86_kmask.kbits: (opmask, loops)

    # -- emission helpers ---------------------------------------------------------------------
    def new(self, cls: str) -> VReg:
        return self.fn.new_vreg(cls)

    def emit(self, form: str, *ops: object, extra: tuple[RegOp, ...] = (),
             kind: Kind = Kind.OP, arg: object = None) -> Inst:
        """Append one instruction; register roles come from the form's row in the table."""
        plan = OPERAND_PLANS.get(form) or operand_plan(form)
        if len(ops) != len(plan):
            raise AssertionError(f"{form} takes {len(plan)} operands, got {len(ops)}")
        operands: list = []
        zext = self.zext
        for k, ((role, checked, want, fixed, narrow, writes), o) in enumerate(zip(plan, ops)):
            if isinstance(o, (VReg, PReg)):
                if checked and want != o.cls:
                    raise AssertionError(f"{form} operand {k} wants a {want} register, "
                                         f"got {o!r}")
                operands.append(RegOp(o, role, fixed))
                if writes:               # (the operand's role is the row's)
                    if narrow:
                        zext.add(o)
                    else:
                        zext.discard(o)      # redefined with all 64 bits
                continue
            if isinstance(o, int):
                o = Imm(o)
            elif isinstance(o, RegOp) and (writes if o.role is role else o.is_def):
                if narrow:
                    zext.add(o.reg)
                else:
                    zext.discard(o.reg)      # redefined with all 64 bits
            operands.append(o)
        if extra:
            operands += extra
        inst = Inst(form, operands, kind=kind, arg=arg)
        self.fn.insts.append(inst)
        return inst

    def new_label(self) -> str:
        self._labels += 1
        return f".L{self.fn.name}_{self._labels}"

    def copy(self, v: VReg, dt: DType, lanes: int = 1) -> VReg:
        """A fresh register holding a copy of v (the destination of a two-address op)."""
        t = self.new(v.cls)
        if v.cls == "gpr":
            # a whole-register copy: it keeps bits 63:32 as they are (so a copy of a
            # zero-extended value stays one, and a copy onto itself can be dropped)
            self.emit("mov_r64_rm64", t, v)
            if v in self.zext:
                self.zext.add(t)
        else:
            w = vw(dt, lanes)
            self.emit(f"vmovaps_{w}_{w}m", t, v)
        return t

    # -- values -------------------------------------------------------------------------------
    def reg(self, u: UOp) -> VReg:
        """The register holding u's value; constants are materialized once per loop level."""
        v = self.val.get(u)
        if v is not None:
            return v
        if u in self.lazy_masks:
            return self.lane_mask(u)        # x86-64-v4: an opmask's bool vector (x86_kmask)
        if u in self.lazy_lanes:
            self.val[u] = v = self.make_lane(u)
            return v
        if u in self.aside:
            at, order, v, seg = self.aside.pop(u)
            self.splices.append((at, order, seg))
            self.val[u] = v
            return v
        if u in self.deferred:
            # a load kept for a memory operand that its user did not take after all: read it
            # here (no store lies between the two places in the schedule)
            self.val[u] = v = self.load(Place(self.deferred.pop(u), u.dtype,
                                              u.shape[0] if u.shape else 1))
            return v
        c = strong_const(u)
        if c is None:
            if u.op is Ops.STACK and is_half_vector(u):
                self.val[u] = v = self.half_stack(u)       # float16 lanes (x86_half)
                return v
            if u.op is Ops.STACK and (reg_class(u.dtype) == "vec" or is_int_vector(u)):
                v = self.sel_STACK(u)
                if v is not None:
                    return v
            raise SelectError(f"{u.op.name} of {u.dtype}{list(u.shape)} has no register "
                              "form on x86")
        key = (u, len(self.loops))
        v = self.const_cache.get(key)
        if v is None:
            v = self.materialize(c, u.dtype, u.shape[0] if u.shape else 1)
            self.const_cache[key] = v
        return v

    def materialize(self, c: int | float | bool, dt: DType, lanes: int = 1) -> VReg:
        """A register holding constant c of dt: floats from .rodata, ints as immediates."""
        if dt == dtypes.float16 and lanes > 1:
            return self.half_const([c] * lanes, lanes)    # float16 lanes (x86_half)
        if reg_class(dt) == "vec":
            t = self.new("vec")
            if const_bytes(c, dt) == bytes(dt.itemsize):
                self.emit("vzero", t)
                return t
            data = const_bytes(c, dt) * lanes
            if lanes == 1:
                self.emit(f"vmovs{fs(dt)}_x_m{dt.bits}", t, Mem(),
                          arg={"rip": self.pool.label(data)})
            else:
                w = vw(dt, lanes)
                self.emit(f"vmovup{fs(dt)}_{w}_{w}m", t, Mem(),
                          arg={"rip": self.pool.label(data)})
            return t
        t = self.new("gpr")
        # a float16/bfloat16 constant lives in a GPR as its bit pattern (int(c) lost -0.0 and
        # every fraction)
        iv = int.from_bytes(const_bytes(c, dt), "little") if dt.is_float else int(c)
        if dt.itemsize == 8 and not fits32(iv):
            self.emit("movabs_r64_imm64", t, iv & ((1 << 64) - 1))
        elif dt.itemsize == 8:
            self.emit("mov_rm64_imm32", t, iv)
        else:
            self.emit("mov_r32_imm32", t, iv & 0xFFFFFFFF)
        return t

    def imm(self, u: UOp, width: int = 32) -> int | None:
        """u as a sign-extended imm32 operand when it is a constant that fits, else None."""
        c = strong_const(u)
        if c is None or isinstance(c, float):
            return None
        c = int(c)
        if u.dtype.itemsize < 8:
            c = commit_const(c, dtypes.int32)
        return c if fits32(c) else None

    def ext(self, u: UOp, bits: int) -> VReg:
        """u's integer value sign- or zero-extended (by its dtype) to 32 or 64 bits; computed
        once per loop level (like constants) so repeated addressing reuses it."""
        for level in range(len(self.loops), -1, -1):
            hit = self.const_cache.get((u, bits, level))
            if hit is not None:
                return hit
        hit = self.const_cache[(u, bits, len(self.loops))] = self._ext(u, bits)
        return hit

    def _ext(self, u: UOp, bits: int) -> VReg:
        dt = u.dtype
        v = self.reg(u)
        signed = dt.is_signed
        t = self.new("gpr")
        if dt.itemsize == 8:
            return v
        if dt.itemsize == 4:
            if bits == 32:
                return v
            r = self.ranges.get(u)
            if v in self.zext and (not signed or (r is not None and r[0] >= 0)):
                # written by a 32-bit form, which zeroes bits 63:32 (SDM Vol. 1 §3.4.1.1),
                # and non-negative: the register already holds the 64-bit value
                return v
            if signed:
                self.emit("movsxd_r64_rm32", t, v)
            else:
                self.emit("mov_r32_rm32", t, v)     # a 32-bit write zero-extends (SDM §3.4.1.1)
            return t
        src = dt.bits if dt.itemsize in (1, 2) else 8
        if self.widened.get(v) == dt and (bits == 32 or not signed):
            # loaded as dt by MOVZX/MOVSX r32 (`load`): extended to 32 bits already, and a
            # 32-bit write zeroes bits 63:32 (SDM Vol. 1 §3.4.1.1), the 64-bit value when
            # unsigned. Only as the dtype it was loaded as: a CAST int8 → uint8 may share
            # the register, sign-extended where the uint8 needs zeros
            return v
        if signed:
            self.emit(f"movsx_r{bits}_rm{src}", t, v)
        else:
            self.emit(f"movzx_r32_rm{src}", t, v)
        return t

    # -- lanes made on demand ---------------------------------------------------------------
    def lazy_lane(self, u: UOp, v: VReg, dt: DType, lanes: int, k: int) -> VReg | None:
        """Lane k of vector register v as u's value (`lane`), extracted only if some rule asks
        reg(u) for it: a shuffle, an insert or a horizontal reduction reads the vector's lanes
        itself, and the extract (a VSHUFPS or VPSRLQ nobody reads) was left to dead-code
        removal (a quarter of the instructions selected for tinygrad's row reductions).
        Selected on demand, the instructions go where the schedule selected u, with the
        register ids reserved there, so the function is the one eager selection makes less
        its dead extracts. Returns the register when the lane costs no instruction (lane 0),
        None when deferred. Only xmm/ymm sources: a zmm's halves are memoized (split_z)."""
        size = dt.itemsize * lanes
        high = size == 32 and dt.itemsize * k >= 16
        kk = k - 16 // dt.itemsize if high else k
        if size > 32 or (kk == 0 and not high):
            return self.lane(v, dt, lanes, k)
        ids = int(high) + int(kk != 0)          # the registers lane() makes
        fn = self.fn
        self.order += 1
        self.lazy_lanes[u] = (len(fn.insts), self.order, fn.next_vreg, v, dt, lanes, k)
        fn.next_vreg += ids
        return None

    def make_lane(self, u: UOp) -> VReg:
        """Extract a deferred lane now (reg() asked for it), into its splice (`lazy_lane`)."""
        at, order, first, v, dt, lanes, k = self.lazy_lanes.pop(u)
        fn = self.fn
        insts, ids = fn.insts, fn.next_vreg
        fn.insts, fn.next_vreg = [], first
        try:
            r = self.lane(v, dt, lanes, k)
            self.splices.append((at, order, fn.insts))
        finally:
            fn.insts, fn.next_vreg = insts, ids
        return r

    def select_all(self, lin: list[UOp], skip: set[UOp] | frozenset[UOp]) -> None:
        """SelectorBase.select_nodes, but a scalar integer ADD, SHL or MUL is selected aside:
        its instructions join the function (where the schedule selected it) only if a rule
        reads its register. An index sum is often read only as an address, whose memory
        operand takes its terms (`address`: base + index*scale + disp), or only by a loop's
        exit test that loopexit moves to another counter; its MOV and ADD were left to
        dead-code removal (a fifth of what it removed on /tmp/tg). The rule runs at the same
        place with the same state, so a kept value is exactly the eager selection's."""
        names, fallback, fn, aside = _RULE_NAMES, self.sel_alu, self.fn, self.aside
        for u in lin:
            if u in skip:
                continue
            rule = getattr(self, names[u.op], None) or fallback
            if u.op not in _ASIDE or u.shape or not u.dtype.is_int:
                rule(u)
                continue
            insts = fn.insts
            fn.insts = []
            # what the rule may memoize besides u's value: a constant or extension made
            # (const_cache), an operand made on demand (val: a STACK, a lane; deferred: a
            # folded load read after all). Later rules read those registers without reg(u),
            # so a segment that made one is kept in place, as eager selection had it
            before = (len(self.const_cache), len(self.val), len(self.deferred))
            try:
                rule(u)
            finally:
                seg, fn.insts = fn.insts, insts
            v = self.val.get(u)
            if v is None or not seg or before != (len(self.const_cache), len(self.val) - 1,
                                                  len(self.deferred)):
                insts += seg
                continue
            del self.val[u]
            self.order += 1
            aside[u] = (len(insts), self.order, v, seg)

    def place_splices(self) -> None:
        """Put the lanes made on demand where their nodes were selected (one pass)."""
        if not self.splices:
            return
        insts, out, prev = self.fn.insts, [], 0
        for at, _, seg in sorted(self.splices, key=lambda t: (t[0], t[1])):
            out += insts[prev:at]
            out += seg
            prev = at
        out += insts[prev:]
        self.fn.insts = out
        self.splices = []

    # -- the driver ---------------------------------------------------------------------------
    def select(self, lin: list[UOp]) -> MFunction:
        """Select every node of the linearized kernel, in order."""
        self.sel_params(lin)
        self.promoted = promotable_buffers(lin)
        facts = schedule_facts(lin)       # (the five walks below share them)
        self.foldable = foldable_loads(lin, self.evex, facts)
        self.lane_loads = lane_loads(lin, facts) | int_lane_loads(lin, facts)
        self.low_word = low_word_muls(lin)
        self.splat_only = splat_only_wheres(lin, facts) if self.evex else frozenset()
        self.nusers = Counts([s for u in lin for s in u.src])
        # reads as a STACK lane (x86_vec.loaded_once: a load only lanes read may be re-read)
        self.stack_reads = Counts([s for u in lin if u.op is Ops.STACK for s in u.src])
        # narrower float splats read a wider one's register: that one is then a register
        # of several users (never folded as an embedded broadcast, x86_vec)
        self.wider = wider_splats(lin)
        self.nusers.update(self.wider.values())
        # each lane of an int lane load's splats (a STACK of it alone, broadcast from the
        # load's memory by x86_shuf.splat): a use that reads memory, not the lane's register
        self.splat_uses = Counts([s for u in lin if u.op is Ops.STACK and u.src
                                  and all(x is u.src[0] for x in u.src)
                                  and u.src[0].op is Ops.INDEX and u.src[0].src[0] in
                                  self.lane_loads for s in u.src])
        # scalar bool ORs (ANDs) whose one user is an OR (AND) too: lane_test looks at the
        # whole tree from its root only, so each node is walked once (the schedule selects
        # a chain's inner nodes first)
        self.bool_inner = {s for u in lin if u.op in (Ops.OR, Ops.AND) and not u.shape
                           for s in u.src if s.op is u.op and not s.shape
                           and self.nusers[s] == 1}
        self.ivs = induction_sums(lin, facts)
        iv_nodes = {n for ivs in self.ivs.values() for n, _, _ in ivs}
        self.vivs = vector_inductions(lin)          # x86_viv
        iv_nodes |= {n for ivs in self.vivs.values() for n, _, _, _ in ivs}
        self.ranges = int_ranges([lin[-1]])
        # an induction variable is defined at its RANGE
        # index-vector gathers (x86_vgather): their loads are selected at their STACK
        self.vgathers, gathered = (vgather_nodes(lin, facts) if self.evex
                                   else ({}, frozenset()))
        self.transposed = transpose_groups(lin, facts)      # x86_transpose
        self.select_all(lin, iv_nodes | gathered)
        self.place_splices()
        if self.stream_align:
            # non-temporal stores are weakly ordered: visible to others before the return
            self.emit("sfence")
        self.emit("ret", kind=Kind.RET)
        return self.fn

    def sel_params(self, lin: list[UOp]) -> None:
        """Kernel arguments arrive per the System V ABI: params in slot order, then gidx ints."""
        params = sorted((u for u in lin if u.op is Ops.PARAM), key=lambda u: u.arg.slot)
        ints, floats, stack = list(INT_ARG_REGS), list(FLOAT_ARG_REGS), 0
        incoming: list[tuple[UOp | str, str]] = []
        workers: list[tuple[UOp | None, VReg]] = []
        for p in params:
            cls = "gpr" if p.arg.addrspace is not AddrSpace.ALU else reg_class(p.dtype)
            incoming.append((p, cls))
        incoming += [(s, "gpr") for s in self.specials if s.startswith("gidx")]
        for what, cls in incoming:
            v = self.new(cls)
            pool = ints if cls == "gpr" else floats
            if pool:
                self.fn.params.append((v, pool.pop(0)))
            else:
                # §3.2.3: a stack argument occupies an eightbyte at [rbp + 16 + 8k] once the
                # prologue has pushed rbp.
                self.stack_args.append((v, 16 + 8 * stack))
                stack += 1
            if isinstance(what, str):
                workers.append((self.special_node(lin, what), v))
            elif what.arg.addrspace is AddrSpace.ALU:
                self.val[what] = v
            else:
                self.bufs[what] = ("ptr", v)
        for v, off in self.stack_args:
            form = "mov_r64_rm64" if v.cls == "gpr" else "vmovsd_x_m64"
            self.emit(form, v, Mem(RBP, None, 1, off))
        for node, v in workers:
            # a worker index is a C int: the upper half of its register or stack eightbyte is
            # undefined (SysV §3.2.3), so zero-extend it (it is never negative) before an
            # int64 SPECIAL uses all 64 bits
            if node is not None:
                w = self.new("gpr")
                self.emit("mov_r32_rm32", w, v)
                self.val[node] = w

    @staticmethod
    def special_node(lin: list[UOp], name: str) -> UOp | None:
        """The SPECIAL node called name, or None when simplification removed every use (its
        worker argument still arrives)."""
        return next((u for u in lin if u.op is Ops.SPECIAL and u.arg == name), None)

    # -- leaves and structure -------------------------------------------------------------------
    def sel_PARAM(self, u: UOp) -> None:
        """Arguments are bound in sel_params."""

    def sel_BARRIER(self, u: UOp) -> None:
        """A workgroup barrier has no meaning on a CPU target."""
        raise SelectError("BARRIER needs a GPU target (-t cuda); x86 runs no workgroups")

    def sel_SPECIAL(self, u: UOp) -> None:
        """gidx is a worker argument (bound in sel_params); lidx has no CPU meaning."""
        if u.arg.startswith("lidx"):
            raise SelectError(f"SPECIAL {u.arg} (a local thread index) needs a GPU target; "
                              "x86 runs gidx workers only")

    def sel_BUFFER(self, u: UOp) -> None:
        """A REG buffer gets frame bytes; LOCAL (workgroup-shared) memory is GPU-only."""
        if u.arg.addrspace is AddrSpace.LOCAL:
            raise SelectError("a LOCAL buffer (workgroup shared memory) needs a GPU target")
        if u in self.promoted:
            # every access is at a constant place: each place is a register variable
            # (zeroed here so it is defined on every path), no memory traffic in the loop
            cells = {}
            for start, lanes in self.promoted[u]:
                # a place of several lanes is a vector register, integer lanes included
                v = self.new("vec" if lanes > 1 else reg_class(u.dtype))
                if v.cls == "vec":
                    self.emit("vzero", v)
                else:
                    self.emit("mov_r32_imm32", v, 0)
                    # a register variable is defined again by every STORE, maybe with all
                    # 64 bits and after a use in the program text (a loop): never assume
                    # its upper half is zero
                    self.zext.discard(v)
                cells[start, lanes] = v
            self.bufs[u] = ("vars", cells)
            return
        size = u.arg.size * u.dtype.itemsize
        align = 32 if size >= 32 else 16
        self.frame_bytes = (self.frame_bytes + align - 1) // align * align
        self.bufs[u] = ("frame", self.frame_bytes)
        self.frame_bytes += size

    def sel_AFTER(self, u: UOp) -> None:
        """AFTER is its first src, ordered: the schedule already honours the order."""
        x = u.src[0]
        if x in self.bufs:
            self.bufs[u] = self.bufs[x]
        elif x in self.places:
            self.places[u] = self.places[x]
        else:
            self.val[u] = self.reg(x)

    def sel_RANGE(self, u: UOp) -> None:
        """A counted loop: counter = 0; a guard when the bound may be zero; loop header."""
        i = self.new("gpr")
        self.emit("mov_r32_imm32", i, 0)
        for n, init, _ in self.ivs.get(u, ()):
            # a sum `init + u*step` as its own counter (strength reduction): init here, one
            # add per iteration at the END instead of a multiply and an add in the body
            v = self.new("gpr")
            if init is None:
                self.emit("mov_r32_imm32", v, 0)
            elif n.dtype.itemsize == 8:
                self.emit("mov_r64_rm64", v, self.reg(init))
            else:
                self.emit("mov_r32_rm32", v, self.reg(init))   # zero-extends (SDM §3.4.1.1)
            self.val[n] = v
        self.start_vector_ivs(u)
        bound = u.src[0]
        skip = None
        c = strong_const(bound)
        if c is not None and int(c) == 1:
            # one trip (a widened loop's main part or tail, a size-1 axis): straight-line
            # code with the counter 0, no header, back edge or head padding (sel_END)
            self.loops.append((u, i, None, None))
            self.val[u] = i
            self.const_cache[(u, 64, len(self.loops))] = i
            return
        if c is None or int(c) <= 0:
            skip = self.new_label()
            b = self.reg(bound)
            self.emit(f"cmp_rm{isz(u.dtype)}_imm8", b, 0)
            self.emit("jle_rel32" if u.dtype.is_signed else "je_rel32", Label(skip),
                      kind=Kind.BRANCH)
        head = self.new_label()
        self.fn.insts.append(Inst("label", [Label(head)], kind=Kind.LOOP_BEGIN))
        self.loops.append((u, i, head, skip))
        self.val[u] = i
        # 0 <= i < bound <= the dtype's max: the 32-bit counter's upper half is zero, so the
        # register is already i extended to 64 bits (no movsxd for addressing).
        self.const_cache[(u, 64, len(self.loops))] = i

    def sel_END(self, u: UOp) -> None:
        """Close the innermost loop: counter += 1; loop while counter < bound."""
        rng, i, head, skip = self.loops.pop()
        if rng is not u.src[1]:
            raise AssertionError("linearize left loops improperly nested")
        # constants materialized inside the loop are not valid after it
        self.const_cache = {k: v for k, v in self.const_cache.items()
                            if k[-1] <= len(self.loops)}
        while self.kept and self.kept[-1][2] > len(self.loops):
            n, old, _ = self.kept.pop()      # (a loop of no trip never defined the new one)
            self.val[n] = old
        if head is None:
            return                  # a one-trip loop (sel_RANGE): nothing runs again
        self.advance_vector_ivs(rng)
        for n, _, step in self.ivs.get(rng, ()):
            wn = isz(n.dtype)
            self.emit(imm_form("add", wn, step), self.val[n], step)
        w = isz(rng.dtype)
        self.emit(step_form(w, 1), i, 1)         # 0 <= i < bound: i + 1 fits w's bits
        bound = rng.src[0]
        b = self.imm(bound)
        if b is not None:
            self.emit(imm_form("cmp", w, b), i, b)
        else:
            self.emit(f"cmp_r{w}_rm{w}", i, self.reg(bound))
        jcc = "jl_rel32" if rng.dtype.is_signed else "jb_rel32"
        self.fn.insts.append(Inst(jcc, [Label(head)], kind=Kind.LOOP_END))
        if skip is not None:
            self.fn.insts.append(Inst("label", [Label(skip)], kind=Kind.LABEL))

    # -- memory -------------------------------------------------------------------------------


def select(lin: list[UOp], name: str, pool: ConstPool, specials: list[str],
           evex: bool = False, stream: dict[UOp, int] | None = None,
           prefetch: dict[UOp, int] | None = None
           ) -> tuple[MFunction, int, list[tuple[VReg, int]], list[tuple[tuple, int]]]:
    """Select a linearized kernel. Returns the machine function, the bytes of frame locals
    (REG buffers and the gated-store scratch slot), the stack-passed arguments, and for each
    buffer written with non-temporal stores (the STOREs in ``stream``) where its pointer
    arrives and the alignment it needs. ``evex``: the target is x86-64-v4 (AVX-512 forms on
    any vector width). ``prefetch``: LOADs to prefetch ahead of, by bytes ahead."""
    sel = X86Selector(name, pool, specials, evex, stream, prefetch)
    fn = sel.select(lin)
    # where each streamed buffer's pointer arrives: ("reg", name) or ("stack", rbp offset)
    loc = {v: ("reg", p.name) for v, p in fn.params}
    loc.update((v, ("stack", off)) for v, off in sel.stack_args)
    checks = [(loc[sel.bufs[b][1]], n) for b, n in sel.stream_align.items()]
    # no REG buffer and no gated store: no frame locals at all (the prologue then sets up no
    # frame, kcc/targets/x86/code.py), not an unused scratch slot
    unused = sel.frame_bytes == SCRATCH_BYTES and not sel.scratch_used
    return fn, 0 if unused else sel.frame_bytes, sel.stack_args, checks
