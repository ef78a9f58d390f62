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
  is false (`cmove`), so a false gate writes nothing the kernel can observe.
Loops are LOOP_BEGIN/LOOP_END markers around the body; the counter is a loop-carried register.
Rules are methods `sel_<op>` (one per UOp op), each with a one-line docstring.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from kcc.encode.x86_table import FORMS, KINDS
from kcc.ir import AddrSpace, Ops, UOp, dtypes
from kcc.ir import numerics as nm
from kcc.ir.dtype import DType
from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp, Role, VReg
from kcc.isel.x86_regs import FLOAT_ARG_REGS, INT_ARG_REGS, RAX, RBP, RCX, RDX, RSP, reg_class

SCRATCH_BYTES = 64          # frame slot a false-gated store writes instead of memory
_ROLE = {"use": Role.USE, "def": Role.DEF, "defuse": Role.DEF | Role.USE}
# vcmpss/vcmpps predicates (SDM Vol. 2, CMPPS Table 3-1): LT_OS and EQ_OQ are false on NaN,
# NEQ_UQ is true on NaN — exactly the .uop compare semantics.
CMP_LT_OS, CMP_EQ_OQ, CMP_NEQ_UQ = 1, 0, 4
ROUND_TRUNC = 0b1011        # vround imm8: truncate (bits 1:0 = 11), suppress precision (bit 3)
# Pseudo forms expanded by the target after allocation (roles of their register operands).
PSEUDO_ROLES: dict[str, tuple[str, ...]] = {"vzero": ("def",)}


class SelectError(Exception):
    """A construct the x86 target cannot compile (LOCAL buffers, BARRIER, lidx)."""


@dataclass
class ConstPool:
    """The .rodata constants: deduplicated by bytes, each aligned to its own size."""

    items: dict[bytes, str] = field(default_factory=dict)

    def label(self, data: bytes) -> str:
        """The label of a constant with these bytes."""
        if data not in self.items:
            self.items[data] = f".LC{len(self.items)}"
        return self.items[data]


@dataclass
class Place:
    """A selected INDEX/SHRINK: its memory operand, element dtype and lane count."""

    mem: Mem
    dtype: DType
    lanes: int


def isz(dt: DType) -> str:
    """The integer op width of dt: 8/16/32-bit values use the 32-bit forms."""
    return "64" if dt.itemsize == 8 else "32"


def vw(dt: DType, lanes: int) -> str:
    """x or y: the vector register width holding `lanes` elements of dt."""
    return "y" if dt.itemsize * lanes == 32 else "x"


def fs(dt: DType) -> str:
    """The AVX type letter: s (single, float32) or d (double, float64)."""
    return "s" if dt == dtypes.float32 else "d"


def strong_const(u: UOp) -> int | float | bool | None:
    """The value of a strong constant CAST(CONST) (or a bool CONST), else None."""
    if u.op is Ops.CONST and not u.dtype.is_weak:
        return u.arg
    if u.op is Ops.CAST and u.src[0].op is Ops.CONST:
        return commit_const(u.src[0].arg, u.dtype)
    return None


def commit_const(v: int | float | bool, dt: DType) -> int | float | bool:
    """A literal committed to dt by the CAST rules of docs/semantics.md, exactly as the
    interpreter does it (kcc.ir.numerics): ints wrap to dt's width, a float literal saturates
    into an integer dtype (NaN → 0), and a float dtype gets the literal rounded ONCE (an int
    literal never through float64 first). A float result is a Python float holding the dtype's
    value exactly (a float16/bfloat16 value is exact in float64)."""
    if isinstance(v, bool) or dt.is_bool:
        return bool(v) if dt.is_bool else int(v)
    src = dtypes.weakint if isinstance(v, int) else dtypes.weakfloat
    c = nm.cast(nm.const_array(v, src), src, dt)
    if dt == dtypes.bfloat16:
        return float(nm.bf16_to_f32(c))
    return float(c) if dt.is_float else int(c)


def imm_form(mnem: str, width: str, value: int) -> str:
    """The `op r/m, imm` form for a 32/64-bit op: the sign-extended imm8 encoding (opcode 83,
    SDM "ADD"…) when the value fits a byte — what assemblers pick — else imm32."""
    return f"{mnem}_rm{width}_imm{8 if -128 <= value <= 127 else 32}"


def fits32(v: int) -> bool:
    return -(1 << 31) <= v < (1 << 31)


def const_bytes(v: int | float | bool, dt: DType) -> bytes:
    """The little-endian bytes of a scalar constant of dt."""
    if dt == dtypes.float32:
        return struct.pack("<f", v)
    if dt == dtypes.float64:
        return struct.pack("<d", v)
    # v is already rounded to the half dtype (commit_const), so these conversions are exact;
    # before this, int(v) truncated a float16/bfloat16 constant (-0.0 became +0.0, 1.5 became 1)
    if dt == dtypes.float16:
        return np.float16(v).tobytes()
    if dt == dtypes.bfloat16:
        return struct.pack("<f", v)[2:]          # the high half of the float32
    return (int(v) & ((1 << dt.bits) - 1)).to_bytes(dt.itemsize, "little")


class X86Selector:
    """Selects one kernel: `X86Selector(name, pool, specials).select(lin)` → MFunction."""

    def __init__(self, name: str, pool: ConstPool, specials: list[str]):
        self.fn = MFunction(name)
        self.pool = pool
        self.specials = specials
        self.val: dict[UOp, VReg] = {}
        self.places: dict[UOp, Place] = {}
        self.bufs: dict[UOp, tuple[str, object]] = {}   # ("ptr", vreg) | ("frame", offset)
        self.frame_bytes = SCRATCH_BYTES               # REG buffers follow the scratch slot
        self.loops: list[tuple[UOp, VReg, str, str | None]] = []
        self.const_cache: dict[tuple, VReg] = {}
        self.stack_args: list[tuple[VReg, int]] = []
        self._labels = 0

    # -- emission helpers ---------------------------------------------------------------------
    def new(self, cls: str) -> VReg:
        return self.fn.new_vreg(cls)

    def emit(self, form: str, *ops: object, extra: tuple[RegOp, ...] = (),
             kind: Kind = Kind.OP, arg: object = None) -> Inst:
        """Append one instruction; register roles come from the form's row in the table."""
        if form in PSEUDO_ROLES:
            access = PSEUDO_ROLES[form]
        else:
            row = FORMS[form]
            access = tuple(o.access for o in row.operands)
            kinds = [o.kind for o in row.operands]
        if len(ops) != len(access):
            raise AssertionError(f"{form} takes {len(access)} operands, got {len(ops)}")
        operands: list = []
        for k, (acc, o) in enumerate(zip(access, ops)):
            if isinstance(o, (VReg, PReg)) and form in FORMS:
                want = KINDS[kinds[k]].cls
                if want != o.cls:
                    raise AssertionError(f"{form} operand {k} wants a {want} register, "
                                         f"got {o!r}")
            if isinstance(o, (VReg, PReg)):
                fixed = RCX if form in FORMS and kinds[k] == "cl" else None
                operands.append(RegOp(o, _ROLE[acc], fixed=fixed))
            elif isinstance(o, int):
                operands.append(Imm(o))
            else:
                operands.append(o)
        inst = Inst(form, operands + list(extra), kind=kind, arg=arg)
        self.fn.insts.append(inst)
        return inst

    def new_label(self) -> str:
        self._labels += 1
        return f".L{self.fn.name}_{self._labels}"

    def copy(self, v: VReg, dt: DType, lanes: int = 1) -> VReg:
        """A fresh register holding a copy of v (the destination of a two-address op)."""
        t = self.new(v.cls)
        if v.cls == "gpr":
            self.emit(f"mov_r{isz(dt)}_rm{isz(dt)}", t, v)
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
        c = strong_const(u)
        if c is None:
            if u.op is Ops.STACK and reg_class(u.dtype) == "vec":
                return self.sel_STACK(u)
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
        if reg_class(dt) == "vec":
            t = self.new("vec")
            if const_bytes(c, dt) == bytes(dt.itemsize):
                self.emit("vzero", t)
                return t
            data = const_bytes(c, dt) * lanes
            if lanes == 1:
                self.emit(f"vmovs{fs(dt)}_x_m{dt.bits}", t, Mem(), arg={"rip": self.pool.label(data)})
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
            if signed:
                self.emit("movsxd_r64_rm32", t, v)
            else:
                self.emit("mov_r32_rm32", t, v)     # a 32-bit write zero-extends (SDM §3.4.1.1)
            return t
        src = dt.bits if dt.itemsize in (1, 2) else 8
        if signed:
            self.emit(f"movsx_r{bits}_rm{src}", t, v)
        else:
            self.emit(f"movzx_r32_rm{src}", t, v)
        return t

    # -- the driver ---------------------------------------------------------------------------
    def select(self, lin: list[UOp]) -> MFunction:
        """Select every node of the linearized kernel, in order."""
        self.sel_params(lin)
        for u in lin:
            rule = getattr(self, f"sel_{u.op.name}", None)
            if rule is None:
                rule = self.sel_alu
            rule(u)
        self.emit("ret", kind=Kind.RET)
        return self.fn

    def sel_params(self, lin: list[UOp]) -> None:
        """Kernel arguments arrive per the System V ABI: params in slot order, then gidx ints."""
        params = sorted((u for u in lin if u.op is Ops.PARAM), key=lambda u: u.arg.slot)
        ints, floats, stack = list(INT_ARG_REGS), list(FLOAT_ARG_REGS), 0
        incoming: list[tuple[UOp | str, str]] = []
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
                self.val[self.special_node(lin, what)] = v
            elif what.arg.addrspace is AddrSpace.ALU:
                self.val[what] = v
            else:
                self.bufs[what] = ("ptr", v)
        for v, off in self.stack_args:
            form = "mov_r64_rm64" if v.cls == "gpr" else "vmovsd_x_m64"
            self.emit(form, v, Mem(RBP, None, 1, off))

    @staticmethod
    def special_node(lin: list[UOp], name: str) -> UOp:
        return next(u for u in lin if u.op is Ops.SPECIAL and u.arg == name)

    # -- leaves and structure -------------------------------------------------------------------
    def sel_PARAM(self, u: UOp) -> None:
        """Arguments are bound in sel_params."""

    def sel_CONST(self, u: UOp) -> None:
        """Constants are materialized where they are used."""

    def sel_SINK(self, u: UOp) -> None:
        """The root has no code."""

    def sel_GROUP(self, u: UOp) -> None:
        """A group of effects has no code of its own."""

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
        bound = u.src[0]
        skip = None
        c = strong_const(bound)
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
        w = isz(rng.dtype)
        self.emit(f"add_rm{w}_imm8", i, 1)
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
        return Mem(breg, self.ext(idx, 64), scale, disp)

    def sel_INDEX(self, u: UOp) -> None:
        """A place in a buffer, or one lane of a vector value."""
        base = u.src[0]
        if base.kind == "value":
            k = strong_const(u.src[1])
            k = int(k if k is not None else u.src[1].arg)
            if base.dtype.is_bool:
                self.val[u] = self.mask_lane(base, k)
            else:
                self.val[u] = self.lane(self.reg(base), base.dtype, base.shape[0], k)
            return
        self.places[u] = Place(self.address(base, u.src[1], u.dtype), u.dtype, 1)

    def sel_SHRINK(self, u: UOp) -> None:
        """A place of n contiguous elements (a vector access)."""
        self.places[u] = Place(self.address(u.src[0], u.src[1], u.dtype), u.dtype,
                               u.shape[0])

    def sel_LOAD(self, u: UOp) -> None:
        """A load; gated loads were rewritten by legalize_gates to a safe index + WHERE."""
        if len(u.src) == 3:
            raise AssertionError("gated LOAD reached x86 isel (legalize_gates did not run)")
        p = self.places[u.src[0]]
        self.val[u] = self.load(p)

    def load(self, p: Place) -> VReg:
        dt = p.dtype
        if reg_class(dt) == "vec":
            t = self.new("vec")
            if p.lanes == 1:
                self.emit(f"vmovs{fs(dt)}_x_m{dt.bits}", t, p.mem)
            else:
                w = vw(dt, p.lanes)
                self.emit(f"vmovup{fs(dt)}_{w}_{w}m", t, p.mem)
            return t
        if p.lanes != 1:
            raise SelectError(f"vector load of {p.lanes} x {dt} is not legal on x86")
        t = self.new("gpr")
        if dt.itemsize == 8:
            self.emit("mov_r64_rm64", t, p.mem)
        elif dt.itemsize == 4:
            self.emit("mov_r32_rm32", t, p.mem)
        else:
            ext = "movsx" if dt.is_signed else "movzx"
            self.emit(f"{ext}_r32_rm{dt.bits}", t, p.mem)
        return t

    def sel_STORE(self, u: UOp) -> None:
        """A store; a gated store writes a frame scratch slot instead when its gate is false."""
        p = self.places[u.src[0]]
        mem = p.mem
        if len(u.src) == 3:
            a = self.new("gpr")
            self.emit("lea_r64_m", a, mem)
            s = self.new("gpr")
            self.emit("lea_r64_m", s, Mem(RSP, None, 1, 0))
            g = self.reg(u.src[2])
            self.emit("test_rm8_r8", g, g)
            self.emit("cmove_r64_rm64", a, s)
            mem = Mem(a, None, 1, 0)
        v = self.reg(u.src[1])
        dt = p.dtype
        if reg_class(dt) == "vec":
            if p.lanes == 1:
                self.emit(f"vmovs{fs(dt)}_m{dt.bits}_x", mem, v)
            else:
                w = vw(dt, p.lanes)
                self.emit(f"vmovup{fs(dt)}_m{dt.itemsize * p.lanes * 8}_{w}", mem, v)
        else:
            b = dt.bits
            self.emit(f"mov_rm{b}_r{b}", mem, v)

    # -- vectors ------------------------------------------------------------------------------
    def lane(self, v: VReg, dt: DType, lanes: int, k: int) -> VReg:
        """Lane k of a vector register, as a scalar in the low lane of a new xmm."""
        src = v
        if dt.itemsize * lanes == 32 and dt.itemsize * k >= 16:
            hi = self.new("vec")
            self.emit("vextractf128_xm_y_imm8", hi, v, 1)
            src, k = hi, k - 16 // dt.itemsize
        t = self.new("vec")
        if dt == dtypes.float32:
            self.emit("vshufps_x_x_xm_imm8", t, src, src, k)
        else:
            self.emit("vshufpd_x_x_xm_imm8", t, src, src, k)
        return t

    def mask_lane(self, base: UOp, k: int) -> VReg:
        """Lane k of a vector compare's mask as a bool (0/1) in a GPR."""
        if base.op not in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) or reg_class(base.src[0].dtype) \
                != "vec":
            raise SelectError("a lane of this bool vector is not selectable on x86")
        dt = base.src[0].dtype
        v = self.lane(self.reg(base), dt, base.shape[0], k)
        t = self.new("gpr")
        self.emit("vmovd_rm32_x", t, v)
        self.emit("and_rm32_imm8", t, 1)
        return t

    def sel_STACK(self, u: UOp) -> VReg | None:
        """Build a vector from scalars: a constant from .rodata, else lane inserts."""
        dt, n = u.dtype, u.shape[0]
        if reg_class(dt) != "vec":
            # bools, ints, halves: only their lanes are used (INDEX, or a WHERE's mask)
            return None
        consts = [strong_const(s) for s in u.src]
        w = vw(dt, n)
        if all(s is u.src[0] for s in u.src) and consts[0] is None:
            t = self.new("vec")       # a splat: one broadcast (AVX2 takes a register source)
            if dt == dtypes.float32:
                self.emit(f"vbroadcastss_{w}_xm32", t, self.reg(u.src[0]))
            elif w == "y":
                self.emit("vbroadcastsd_y_xm64", t, self.reg(u.src[0]))
            else:
                a = self.reg(u.src[0])
                self.emit("vunpcklpd_x_x_xm", t, a, a)
        elif all(c is not None for c in consts):
            t = self.new("vec")
            data = b"".join(const_bytes(c, dt) for c in consts)
            self.emit(f"vmovup{fs(dt)}_{w}_{w}m", t, Mem(), arg={"rip": self.pool.label(data)})
        else:
            per = 16 // dt.itemsize
            halves = [self.build128(u.src[h:h + per], dt) for h in range(0, n, per)]
            t = halves[0]
            if len(halves) == 2:
                y = self.new("vec")
                self.emit("vinsertf128_y_y_xm_imm8", y, halves[0], halves[1], 1)
                t = y
        self.val[u] = t
        return t

    def build128(self, srcs: tuple[UOp, ...], dt: DType) -> VReg:
        """An xmm holding the scalar float srcs in order."""
        acc = self.reg(srcs[0])
        for k, s in enumerate(srcs[1:], 1):
            t = self.new("vec")
            if dt == dtypes.float32:
                self.emit("vinsertps_x_x_xm32_imm8", t, acc, self.reg(s), k << 4)
            else:
                self.emit("vunpcklpd_x_x_xm", t, acc, self.reg(s))
            acc = t
        return acc

    # -- ALU ----------------------------------------------------------------------------------
    def sel_alu(self, u: UOp) -> None:
        """Dispatch an ALU op by the class of its operands: vector registers or GPRs."""
        op = u.op
        operand = u.src[1] if op is Ops.WHERE else u.src[0]
        dt = operand.dtype
        if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
            self.val[u] = (self.fcompare(u) if reg_class(dt) == "vec" else self.icompare(u))
        elif op is Ops.WHERE:
            self.val[u] = self.where(u)
        elif reg_class(dt) == "vec":
            self.val[u] = self.falu(u)
        else:
            self.val[u] = self.ialu(u)

    def falu(self, u: UOp) -> VReg:
        """Float ALU (scalar ss/sd, packed ps/pd on xmm/ymm)."""
        dt, lanes = u.dtype, (u.shape[0] if u.shape else 1)
        w, s = vw(dt, lanes), fs(dt)
        packed = lanes > 1
        kind = f"p{s}_{w}_{w}_{w}m" if packed else f"s{s}_x_x_xm{dt.bits}"
        t = self.new("vec")
        op = u.op
        basic = {Ops.ADD: "vadd", Ops.SUB: "vsub", Ops.MUL: "vmul", Ops.FDIV: "vdiv"}
        if op in basic:
            b, arg = self.fsrc(u.src[1])
            self.emit(basic[op] + kind, t, self.reg(u.src[0]), b, arg=arg)
        elif op is Ops.MAX:
            # MAX(a, b) = a < b ? b : a. vmaxps dst, x, y returns y unless x > y (SDM MAXPS:
            # the second source is returned on NaN or equal zeros), so max(b, a) is exact.
            self.emit("vmax" + kind, t, self.reg(u.src[1]), self.reg(u.src[0]))
        elif op is Ops.NEG:
            sign = self.materialize(-0.0, dt, lanes)
            self.emit(f"vxorp{s}_{w}_{w}_{w}m", t, self.reg(u.src[0]), sign)
        elif op is Ops.SQRT:
            a = self.reg(u.src[0])
            if packed:
                self.emit(f"vsqrtp{s}_{w}_{w}m", t, a)
            else:
                self.emit(f"vsqrts{s}_x_x_xm{dt.bits}", t, a, a)
        elif op is Ops.TRUNC:
            a = self.reg(u.src[0])
            if packed:
                self.emit(f"vroundp{s}_{w}_{w}m_imm8", t, a, ROUND_TRUNC)
            else:
                self.emit(f"vrounds{s}_x_x_xm{dt.bits}_imm8", t, a, a, ROUND_TRUNC)
        elif op is Ops.MULACC:
            # fused a*b+c: one rounding, as docs/semantics.md defines MULACC
            t = self.copy(self.reg(u.src[2]), dt, lanes)
            form = f"vfmadd231p{s}_{w}_{w}_{w}m" if packed else f"vfmadd231s{s}_x_x_xm{dt.bits}"
            self.emit(form, t, self.reg(u.src[0]), self.reg(u.src[1]))
        elif op is Ops.RECIPROCAL:
            one = self.materialize(1.0, dt, lanes)
            self.emit("vdiv" + kind, t, one, self.reg(u.src[0]))
        else:
            raise SelectError(f"{op.name} on {dt} has no x86 rule (it should be decomposed)")
        return t

    def fsrc(self, u: UOp) -> tuple[VReg | Mem, object]:
        """A float operand for an r/m slot: a constant is read from .rodata in place."""
        c = strong_const(u)
        if c is None or u.op is Ops.STACK:
            return self.reg(u), None
        lanes = u.shape[0] if u.shape else 1
        return Mem(), {"rip": self.pool.label(const_bytes(c, u.dtype) * lanes)}

    def ialu(self, u: UOp) -> VReg:
        """Integer and bool ALU in general-purpose registers."""
        op, dt = u.op, u.dtype
        if u.shape:
            raise SelectError(f"vector {op.name} on {dt} is not legal on x86 (devectorize)")
        w = isz(dt)
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
            if c is not None:
                form = f"imul_r{w}_rm{w}_imm{8 if -128 <= c <= 127 else 32}"
                self.emit(form, t, self.reg(u.src[0]), c)
            else:
                t = self.copy(self.reg(u.src[0]), dt)
                self.emit(f"imul_r{w}_rm{w}", t, self.reg(u.src[1]))
            return t
        if op is Ops.MULACC:
            t = self.copy(self.reg(u.src[0]), dt)
            self.emit(f"imul_r{w}_rm{w}", t, self.reg(u.src[1]))
            self.emit(f"add_r{w}_rm{w}", t, self.reg(u.src[2]))
            return t
        if op is Ops.NEG:
            t = self.copy(self.reg(u.src[0]), dt)
            self.emit(f"neg_rm{w}", t)
            return t
        if op in (Ops.SHL, Ops.SHR):
            return self.shift(u)
        if op in (Ops.CDIV, Ops.CMOD):
            return self.divide(u)
        if op is Ops.MAX:
            # a < b ? b : a with the flags of one compare
            a, b = self.ext(u.src[0], int(w)), self.ext(u.src[1], int(w))
            t = self.copy(a, dt)
            self.emit(f"cmp_r{w}_rm{w}", a, b)
            cc = "l" if dt.is_signed else "b"
            self.emit(f"cmov{cc}_r{w}_rm{w}", t, b)
            return t
        raise SelectError(f"{op.name} on {dt} has no x86 rule (it should be decomposed)")

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

    def divide(self, u: UOp) -> VReg:
        """CDIV/CMOD: idiv/div with the dividend in rdx:rax (SDM IDIV), truncating."""
        dt = u.dtype
        w = isz(dt)
        a, b = self.ext(u.src[0], int(w)), self.ext(u.src[1], int(w))
        # idiv traps on a zero divisor and on INT_MIN / -1; the semantics make those results
        # unspecified but never a trap (WHERE evaluates both arms). Divide by 1 instead, and
        # for -1 negate the quotient afterwards (wrapping, so INT_MIN / -1 = INT_MIN).
        one = self.materialize(1, u.dtype)
        safe = self.copy(b, u.dtype)
        self.emit(f"test_rm{w}_r{w}", b, b)
        self.emit(f"cmove_r{w}_rm{w}", safe, one)
        minus1 = None
        if dt.is_signed:
            minus1 = self.new("gpr")
            self.emit(f"cmp_rm{w}_imm8", b, -1)
            self.emit("sete_rm8", minus1)
            self.emit(f"cmove_r{w}_rm{w}", safe, one)
        b = safe
        lo, hi = self.new("gpr"), self.new("gpr")
        self.emit(f"mov_r{w}_rm{w}", lo, a)
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
            neg = self.copy(q, u.dtype)
            self.emit(f"neg_rm{w}", neg)
            self.emit("test_rm8_r8", minus1, minus1)
            self.emit(f"cmovne_r{w}_rm{w}", q, neg)
        return q

    def icompare(self, u: UOp) -> VReg:
        """Integer/bool compare: cmp on extended operands, then setcc into a bool."""
        a_u, b_u = u.src
        dt = a_u.dtype
        w = isz(dt)
        a = self.ext(a_u, int(w))
        t = self.new("gpr")
        c = self.imm(b_u)
        if c is not None and dt.itemsize >= 4:
            self.emit(imm_form("cmp", w, c), a, c)
        else:
            self.emit(f"cmp_r{w}_rm{w}", a, self.ext(b_u, int(w)))
        cc = {Ops.CMPNE: "ne", Ops.CMPEQ: "e",
              Ops.CMPLT: "l" if dt.is_signed else "b"}[u.op]
        self.emit(f"set{cc}_rm8", t)
        return t

    def fmask(self, u: UOp) -> VReg:
        """A float compare as an all-ones/zero lane mask in a vector register."""
        a_u, b_u = u.src
        dt = a_u.dtype
        lanes = a_u.shape[0] if a_u.shape else 1
        pred = {Ops.CMPLT: CMP_LT_OS, Ops.CMPEQ: CMP_EQ_OQ, Ops.CMPNE: CMP_NEQ_UQ}[u.op]
        m = self.new("vec")
        if lanes > 1:
            w = vw(dt, lanes)
            form = f"vcmpp{fs(dt)}_{w}_{w}_{w}m_imm8"
        else:
            form = f"vcmps{fs(dt)}_x_x_xm{dt.bits}_imm8"
        ra, rb = self.reg(a_u), self.reg(b_u)
        if ra.cls != "vec" or rb.cls != "vec":
            raise AssertionError(f"fmask of {a_u.op} {a_u.dtype} / {b_u.op} {b_u.dtype} {u.op}")
        self.emit(form, m, ra, rb, pred)
        return m

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
        """A lane mask of dt-wide lanes from a STACK of scalar bools (0/1 in GPRs)."""
        if c.op is not Ops.STACK:
            raise SelectError(f"a vector WHERE on {dt} needs a mask of {dt.bits}-bit lanes "
                              f"(a compare of {dt} values or a STACK of bools)")
        per = 16 // dt.itemsize
        halves = []
        for h in range(0, lanes, per):
            acc = self.new("vec")
            self.emit("vzero", acc)
            for k, b in enumerate(c.src[h:h + per]):
                z = self.new("gpr")
                self.emit("movzx_r32_rm8", z, self.reg(b))
                self.emit("neg_rm64", z)              # 0 → 0, 1 → all ones
                t = self.new("vec")
                if dt.itemsize == 4:
                    self.emit("vpinsrd_x_x_rm32_imm8", t, acc, z, k)
                else:
                    self.emit("vpinsrq_x_x_rm64_imm8", t, acc, z, k)
                acc = t
            halves.append(acc)
        if len(halves) == 1:
            return halves[0]
        y = self.new("vec")
        self.emit("vinsertf128_y_y_xm_imm8", y, halves[0], halves[1], 1)
        return y

    def where(self, u: UOp) -> VReg:
        """WHERE: cmov for GPR values; vblendv for float values (mask from the compare)."""
        c, a, b = u.src
        dt = u.dtype
        if reg_class(dt) == "gpr":
            w = isz(dt)
            g = self.reg(c)
            t = self.copy(self.reg(b), dt)
            self.emit("test_rm8_r8", g, g)
            self.emit(f"cmovne_r{w}_rm{w}", t, self.reg(a))
            return t
        lanes = u.shape[0] if u.shape else 1
        if c.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) and reg_class(c.src[0].dtype) == "vec" \
                and c.src[0].dtype.itemsize == dt.itemsize:
            m = self.reg(c) if c.shape else self.fmask(c)
        elif lanes > 1:
            m = self.bool_mask(c, dt, lanes)
        else:
            # bool 0/1 → all-ones mask in the low lane: movzx, neg, vmovq
            z = self.new("gpr")
            self.emit("movzx_r32_rm8", z, self.reg(c))
            self.emit("neg_rm64", z)
            m = self.new("vec")
            self.emit("vmovq_x_r64", m, z)
        w = vw(dt, lanes)
        t = self.new("vec")
        self.emit(f"vblendvp{fs(dt)}_{w}_{w}_{w}m_{w}", t, self.reg(b), self.reg(a), m)
        return t

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
            raise SelectError(f"CAST float64 → {dt.name} is not supported on x86 yet")
        return self.from_f32(f, dt)

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
        if x.dtype == dtypes.float16:
            bits = self.new("gpr")
            self.emit("movzx_r32_rm16", bits, self.reg(x))
            h = self.new("vec")
            self.emit("vmovd_x_rm32", h, bits)
            self.emit("vcvtph2ps_x_xm64", t, h)     # F16C: exact widening
        else:
            bits = self.new("gpr")
            self.emit("movzx_r32_rm16", bits, self.reg(x))
            self.emit("shl_rm32_imm8", bits, 16)   # bfloat16 is the high half of a float32
            self.emit("vmovd_x_rm32", t, bits)
        return t

    def from_f32(self, f: VReg, dt: DType) -> VReg:
        """A float32 rounded (nearest even) to a float16/bfloat16 bit pattern in a GPR."""
        t = self.new("gpr")
        if dt == dtypes.float16:
            h = self.new("vec")
            self.emit("vcvtps2ph_xm64_x_imm8", h, f, 0)   # imm8 0: round to nearest even
            self.emit("vmovd_rm32_x", t, h)
            return t
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
        if sd.itemsize < 4 or sd.is_bool:
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

    def vcast(self, u: UOp) -> VReg:
        """Vector casts between float32 and float64."""
        x, dt = u.src[0], u.dtype
        n = u.shape[0]
        t = self.new("vec")
        if x.dtype == dtypes.float32 and dt == dtypes.float64:
            self.emit(f"vcvtps2pd_{vw(dt, n)}_xm" + ("64" if n == 2 else ""), t, self.reg(x))
        elif x.dtype == dtypes.float64 and dt == dtypes.float32:
            self.emit(f"vcvtpd2ps_x_{vw(x.dtype, n)}m", t, self.reg(x))
        else:
            raise SelectError(f"vector CAST {x.dtype} → {dt} is not legal on x86")
        return t

    def sel_BITCAST(self, u: UOp) -> None:
        """Reinterpret bits: vmovd/vmovq between register files, nothing within one."""
        x, dt = u.src[0], u.dtype
        a, b = reg_class(x.dtype), reg_class(dt)
        if a == b:
            self.val[u] = self.reg(x)
            return
        t = self.new(b)
        q = dt.itemsize == 8
        if b == "vec":
            self.emit("vmovq_x_r64" if q else "vmovd_x_rm32", t, self.reg(x))
        else:
            self.emit("vmovq_r64_x" if q else "vmovd_rm32_x", t, self.reg(x))
        self.val[u] = t


def select(lin: list[UOp], name: str, pool: ConstPool, specials: list[str]
           ) -> tuple[MFunction, int, list[tuple[VReg, int]]]:
    """Select a linearized kernel. Returns the machine function, the bytes of frame locals
    (REG buffers and the gated-store scratch slot) and the stack-passed arguments."""
    sel = X86Selector(name, pool, specials)
    fn = sel.select(lin)
    return fn, sel.frame_bytes, sel.stack_args
