"""PTX instruction selection: a linearized kernel → a `kcc.encode.ptx.Kernel`.

Registers stay virtual (ptxas allocates them), so every value gets a fresh register of the bank
its dtype lives in (`bank_of`): bool in `.pred`, float16/bfloat16 bit patterns in `.b16`,
float32/float64 in `.f32`/`.f64`, integers of ≤ 32 bits in `.b32` and 64-bit integers in `.b64`.
An 8- or 16-bit integer is kept *normalized* in its 32-bit register (sign- or zero-extended from
its width), so compares, divisions, shifts right and conversions can use the 32-bit forms; every
op that can leave the width re-normalizes (`cvt.s32.s8`, `and.b32 0xff`, …).

Semantics choices (docs/semantics.md is the statement; the reference interpreter the oracle):
- compares on floats: CMPLT `setp.lt` (ordered: false on NaN), CMPNE `setp.neu` (unordered:
  true on NaN), CMPEQ `setp.eq` (PTX ISA 9.7.6.1, floating-point comparison operators).
- MAX(a, b) = a < b ? b : a: `setp.lt` + `selp` for floats (PTX `max.f32` is IEEE maxNum);
  `max.sNN/uNN` for integers, which is the same function there.
- float ADD/SUB/MUL carry `.rn` so ptxas never contracts them into an fma (9.7.3.1: "add with
  an explicit rounding modifier is not contracted"); MULACC is `fma.rn` (fused, one rounding).
- FDIV `div.rn`, RECIPROCAL (FDIV(1, x) after decompose) `rcp.rn`, SQRT `sqrt.rn` are IEEE
  correctly rounded; float32 RECIPROCAL and SQRT are kcc's own inline sequences around
  `rcp/rsqrt.approx.ftz` with the same bits and no ptxas slow-path CALL (isel/ptx/rounded.py);
  TRUNC is `cvt.rzi` float→float. float32 EXP2 is `ex2.approx.ftz.f32`
  with subnormal results scaled around it (docs/transcendentals.md states its accuracy); other
  transcendentals arrive decomposed.
- float16/bfloat16 arithmetic widens exactly to float32, computes, and rounds once to the dtype
  (`cvt.rn.f16.f32`; bfloat16 by integer round-to-nearest-even, NaN kept with its payload).
  A float16 NaN result is PTX's canonical NaN (its payload is not the interpreter's).
- float → int truncates and saturates to the destination's range, NaN → 0: PTX
  `cvt.rzi.{s,u}{8,16,32,64}` (9.7.9.21: float-to-integer conversions saturate), with NaN
  selected to 0 after it for 64-bit destinations and float64 sources (an H200 gave INT_MIN).
- shift amounts are taken modulo the dtype's bits (the interpreter's choice for an undefined
  case; PTX itself clamps).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from kcc.encode.ptx import Addr, Imm, Inst, Kernel, Label, Reg, Sym, Vec
from kcc.ir.consts import const_int
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer
from kcc.isel.common import (
    SelectError,
    SelectorBase,
    bf16_bits,
    f32_bits,
    multiple_of,
    scalar_const,
)
from kcc.isel.ptx.alu import HALF, PtxAlu, bank_of, fty, ity, mem_type, param_type, sel_type
from kcc.isel.ptx.rounded import PtxRounded
from kcc.isel.ptx.wmma import PtxWmma


@dataclass
class Buf:
    """Where a buffer lives: "global"/"shared"/"local" (base address register), or "reg"."""

    space: str
    dtype: DType
    base: Reg | None = None
    slots: list[Reg] | None = None


@dataclass
class Place:
    """A resolved INDEX/SHRINK: a memory address (or register slots) and the lane count."""

    buf: Buf
    addr: Addr | None
    lanes: int
    aligned: bool
    slot: int = 0


# -- the selector ------------------------------------------------------------------------------

class PtxSelector(SelectorBase, PtxAlu, PtxRounded, PtxWmma):
    """Select a linearized kernel into PTX instructions over virtual registers."""

    def __init__(self, name: str, params: list[UOp | None], sm: int):
        self.name = name
        self.sm = sm
        self.params = params
        self.counts: dict[str, int] = {}
        self.pro: list[Inst] = []          # hoisted: params, constants, buffer bases
        self.body: list[Inst] = []
        self.val: dict[UOp, Any] = {}      # a Reg, or a tuple of Regs for a vector value
        self.bufs: dict[UOp, Buf] = {}
        self.places: dict[UOp, Place] = {}
        self.multiples: dict[UOp, int] = {}   # multiple_of's memo, for the kernel
        self.consts: dict[tuple, Reg] = {}
        self.loops: list[tuple[UOp, Reg, str, str | None]] = []
        self.labels = 0
        self.shared: list[tuple[str, int, int]] = []
        self.local: list[tuple[str, int, int]] = []

    # -- plumbing ------------------------------------------------------------------------------
    def new(self, bank: str) -> Reg:
        n = self.counts.get(bank, 0)
        self.counts[bank] = n + 1
        return Reg(bank, n)

    def emit(self, op: str, *ops: Any, guard: Reg | None = None, neg: bool = False) -> None:
        self.body.append(Inst(op, tuple(ops), guard, neg))

    def pemit(self, op: str, *ops: Any) -> None:
        self.pro.append(Inst(op, tuple(ops)))

    def label(self) -> str:
        self.labels += 1
        return f"$L_{self.labels}"

    def reg(self, u: UOp) -> Any:
        """The register (or lane registers) holding u's value."""
        if u in self.val:
            return self.val[u]
        if u.op is Ops.AFTER:
            return self.reg(u.src[0])
        c = scalar_const(u)
        if c is not None:
            return self.const(c, u.dtype)
        if u.op is Ops.STACK:
            return tuple(self.reg(s) for s in u.src)
        raise SelectError(f"{u.op.name} has no value at this point of the schedule "
                          f"(dtype {u.dtype})")

    def const(self, v: int | float | bool, dt: DType) -> Reg:
        """A register holding constant v of dt, set once in the prologue."""
        key = (dt.name, struct.pack("<d", v) if isinstance(v, float) else v)
        r = self.consts.get(key)
        if r is not None:
            return r
        r = self.new(bank_of(dt))
        if dt.is_bool:
            self.pemit("mov.pred", r, Imm("1" if v else "0"))
        elif dt == dtypes.float16:
            bits = int(np.array(v, np.float16).view(np.uint16))
            self.pemit("mov.b16", r, Imm(f"0x{bits:04X}"))
        elif dt == dtypes.bfloat16:
            self.pemit("mov.b16", r, Imm(f"0x{bf16_bits(float(v)):04X}"))
        elif dt == dtypes.float32:
            self.pemit("mov.f32", r, Imm(f"0f{f32_bits(float(v)):08X}"))
        elif dt == dtypes.float64:
            bits = struct.unpack("<Q", struct.pack("<d", float(v)))[0]
            self.pemit("mov.f64", r, Imm(f"0d{bits:016X}"))
        elif dt.itemsize == 8:
            self.pemit("mov.b64", r, Imm(f"0x{int(v) & (2**64 - 1):016X}"))
        else:
            self.pemit("mov.b32", r, Imm(f"0x{int(v) & 0xFFFFFFFF:08X}"))
        self.consts[key] = r
        return r

    def normalize(self, r: Reg, dt: DType) -> Reg:
        """Re-extend a ≤16-bit integer kept in a 32-bit register from its width."""
        if dt.is_int and dt.itemsize < 4:
            t = self.new("b32")
            if dt.is_signed:
                self.emit(f"cvt.s32.s{dt.bits}", t, r)
            else:
                self.emit("and.b32", t, r, Imm(hex((1 << dt.bits) - 1)))
            return t
        return r

    # -- the driver ----------------------------------------------------------------------------
    def select(self, lin: list[UOp]) -> Kernel:
        """Select every node of the schedule in order; returns the kernel."""
        self.reg_buffers = self.register_resident(lin)
        self.bind_params()
        self.select_nodes(lin, self.sel_alu)
        if self.loops:
            raise SelectError("a RANGE without its END reached the PTX selector")
        pnames = [(self.pname(i), self.ptype(p)) for i, p in enumerate(self.params)]
        body = self.pro + self.body + [Inst("ret")]
        return Kernel(self.name, pnames, body, dict(self.counts), self.shared, self.local)

    def sel_alu(self, u: UOp) -> None:
        """Every op without a rule of its own is an ALU op (kcc.isel.ptx.alu)."""
        self.val[u] = self.alu(u)

    def pname(self, i: int) -> str:
        return f"{self.name}_param_{i}"

    @staticmethod
    def ptype(p: UOp | None) -> str:
        if p is None or p.arg.addrspace is not AddrSpace.ALU:
            return "u64"
        return param_type(p.dtype)

    def bind_params(self) -> None:
        """Load every argument once at entry (ld.param; cvta.to.global for buffers)."""
        for i, p in enumerate(self.params):
            if p is None:
                continue
            name = Sym(self.pname(i))
            if p.arg.addrspace is not AddrSpace.ALU:
                a, g = self.new("b64"), self.new("b64")
                self.pemit("ld.param.u64", a, Addr(name))
                self.pemit("cvta.to.global.u64", g, a)
                self.bufs[p] = Buf("global", p.dtype, g)
            elif p.dtype.is_bool:
                r, t = self.new("b32"), self.new("pred")
                self.pemit("ld.param.u8", r, Addr(name))
                self.pemit("setp.ne.u32", t, r, Imm("0"))
                self.val[p] = t
            else:
                r = self.new(bank_of(p.dtype))
                self.pemit(f"ld.param.{param_type(p.dtype)}", r, Addr(name))
                self.val[p] = r

    @staticmethod
    def register_resident(lin: list[UOp]) -> set[UOp]:
        """REG buffers whose every access has a constant index: they live in registers."""
        regs = {u for u in lin if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.REG}
        for u in lin:
            if u.op in (Ops.INDEX, Ops.SHRINK) and u.src[0].kind == "buffer":
                b = base_buffer(u.src[0])
                if b in regs and scalar_const(u.src[1]) is None and not (
                        u.src[1].op is Ops.CONST and isinstance(u.src[1].arg, int)):
                    regs.discard(b)
        return regs

    # -- structure -----------------------------------------------------------------------------
    def sel_PARAM(self, u: UOp) -> None:
        """Bound in bind_params (a PARAM that no kernel signature slot holds is an error)."""
        if u not in self.bufs and u not in self.val:
            raise SelectError(f"PARAM slot {u.arg.slot} is not in the kernel signature")

    def sel_BARRIER(self, u: UOp) -> None:
        """A workgroup barrier: barrier 0 with all threads of the CTA (9.7.13.1)."""
        self.emit("bar.sync", Imm("0"))

    def sel_SPECIAL(self, u: UOp) -> None:
        """gidx → %ctaid, lidx → %tid (PTX ISA 10.5/10.8); widened if its dtype is 64-bit."""
        sreg = Sym(("%ctaid." if u.arg.startswith("gidx") else "%tid.") + "xyz"[int(u.arg[-1])])
        r = self.new("b32")
        self.pemit("mov.u32", r, sreg)
        if u.dtype.itemsize == 8:
            w = self.new("b64")
            self.pemit("cvt.u64.u32", w, r)
            r = w
        self.val[u] = r

    def sel_BUFFER(self, u: UOp) -> None:
        """LOCAL → a `.shared` array; REG → registers (constant indices) or a `.local` array."""
        a = u.arg
        size = a.size * u.dtype.itemsize
        if a.addrspace is AddrSpace.REG and u in self.reg_buffers:
            slots = [self.new(bank_of(u.dtype)) for _ in range(a.size)]
            zero = False if u.dtype.is_bool else 0
            for s in slots:       # defined on every path, so ptxas sees no undefined use
                self.pemit(f"mov.{'pred' if u.dtype.is_bool else sel_type(u.dtype)}", s,
                           self.const(zero, u.dtype))
            self.bufs[u] = Buf("reg", u.dtype, slots=slots)
            return
        space = "shared" if a.addrspace is AddrSpace.LOCAL else "local"
        decls = self.shared if space == "shared" else self.local
        name = f"{self.name}_{space}_{len(decls)}"
        decls.append((name, size, 16))
        r = self.new("b64")
        self.pemit("mov.u64", r, Sym(name))
        self.bufs[u] = Buf(space, u.dtype, r)

    def sel_AFTER(self, u: UOp) -> None:
        """AFTER is its first src; the schedule already honours the order."""
        x = u.src[0]
        if x.kind == "buffer":
            self.bufs[u] = self.buffer(x)
        elif x in self.places:
            self.places[u] = self.places[x]
        else:
            self.val[u] = self.reg(x)

    def sel_RANGE(self, u: UOp) -> None:
        """i = 0; skip the loop when the bound may be ≤ 0; the loop head label."""
        i = self.new(bank_of(u.dtype))
        self.emit(f"mov.{ity(u.dtype)}", i, Imm("0"))
        bound = u.src[0]
        c = scalar_const(bound)
        skip = None
        if c is None or int(c) <= 0:
            skip = self.label()
            p = self.new("pred")
            self.emit(f"setp.le.{ity(u.dtype)}", p, self.reg(bound), Imm("0"))
            self.emit("bra.uni", Label(skip), guard=p)
        head = self.label()
        self.body.append(Inst(":", (Label(head),)))
        self.loops.append((u, i, head, skip))
        self.val[u] = i

    def sel_END(self, u: UOp) -> None:
        """i += 1; loop back while i < bound (9.7.12.1 bra)."""
        rng, i, head, skip = self.loops.pop()
        if rng is not u.src[1]:
            raise SelectError("linearize left loops improperly nested")
        t = ity(rng.dtype)
        self.emit(f"add.{t}", i, i, Imm("1"))
        p = self.new("pred")
        self.emit(f"setp.lt.{t}", p, i, self.reg(rng.src[0]))
        self.emit("bra.uni", Label(head), guard=p)
        if skip is not None:
            self.body.append(Inst(":", (Label(skip),)))

    # -- memory --------------------------------------------------------------------------------
    def buffer(self, b: UOp) -> Buf:
        while b not in self.bufs and b.op is Ops.AFTER:
            b = b.src[0]
        if b not in self.bufs:
            raise SelectError(f"{b.op.name} is not a buffer the kernel can address")
        return self.bufs[b]

    def address(self, buf: Buf, idx: UOp, size: int) -> Addr:
        """base + idx * size, folding a constant index or a constant addend into the offset."""
        c = scalar_const(idx)
        if c is None and idx.op is Ops.CONST and isinstance(idx.arg, int):
            c = idx.arg
        if c is not None and abs(int(c) * size) < 2**31:
            return Addr(buf.base, int(c) * size)
        off = 0
        if idx.op is Ops.ADD:
            k = scalar_const(idx.src[1])
            if isinstance(k, int) and not isinstance(k, bool) and abs(k * size) < 2**31:
                idx, off = idx.src[0], k * size
        x = self.reg(idx)
        scaled = self.new("b64")
        if idx.dtype.itemsize == 8:
            self.emit("mul.lo.s64", scaled, x, Imm(str(size)))
        else:
            self.emit(f"mul.wide.{'s' if idx.dtype.is_signed else 'u'}32", scaled, x,
                      Imm(str(size)))
        a = self.new("b64")
        self.emit("add.s64", a, buf.base, scaled)
        return Addr(a, off)

    def sel_INDEX(self, u: UOp) -> None:
        """A place in a buffer, or one lane of a vector value."""
        base = u.src[0]
        if base.kind == "value":
            self.val[u] = self.reg(base)[const_int(u.src[1])]
            return
        self.places[u] = self.place(base, u.src[1], 1)

    def sel_SHRINK(self, u: UOp) -> None:
        """A place of n contiguous elements (a vector access when aligned)."""
        self.places[u] = self.place(u.src[0], u.src[1], u.shape[0])

    def place(self, base: UOp, idx: UOp, lanes: int) -> Place:
        buf = self.buffer(base)
        if buf.space == "reg":
            k = scalar_const(idx)
            k = idx.arg if k is None else k
            if not 0 <= int(k) and int(k) + lanes <= len(buf.slots):
                raise SelectError(f"register buffer access [{k}:{int(k) + lanes}] is outside "
                                  f"its {len(buf.slots)} elements")
            return Place(buf, None, lanes, True, int(k))
        size = buf.dtype.itemsize
        m = multiple_of(idx, self.multiples)
        aligned = lanes in (2, 4) and lanes * size <= 16 and (m == 0 or m % lanes == 0)
        return Place(buf, self.address(buf, idx, size), lanes, aligned)

    def sel_LOAD(self, u: UOp) -> None:
        """ld.{global,shared,local}; gated: the alt value, then a predicated ld over it."""
        p = self.places[u.src[0]]
        dt = p.buf.dtype
        gate = self.reg(u.src[2]) if len(u.src) == 3 else None
        alt = self.reg(u.src[1]) if gate is not None else None
        alts = alt if isinstance(alt, tuple) else (alt,) * p.lanes
        if p.buf.space == "reg":
            outs = []
            mov = "mov.pred" if dt.is_bool else f"mov.{sel_type(dt)}"
            for k in range(p.lanes):
                t = self.new(bank_of(dt))
                src = p.buf.slots[p.slot + k]
                if gate is not None:
                    self.emit(mov, t, alts[k])
                self.emit(mov, t, src, guard=gate)
                outs.append(t)
        elif p.aligned and p.lanes > 1 and not dt.is_bool:
            outs = [self.new(bank_of(dt)) for _ in range(p.lanes)]
            if gate is not None:
                for r, a in zip(outs, alts):
                    self.emit(f"mov.{sel_type(dt)}", r, a)
            self.emit(f"ld.{p.buf.space}.v{p.lanes}.{vec_type(dt)}", Vec(tuple(outs)), p.addr,
                      guard=gate)
        else:
            outs = [self.load_scalar(p, k, dt, alts[k], gate) for k in range(p.lanes)]
        self.val[u] = outs[0] if p.lanes == 1 else tuple(outs)

    def load_scalar(self, p: Place, k: int, dt: DType, alt: Reg | None,
                    gate: Reg | None) -> Reg:
        """Load element k of a place into a fresh register (bool: a byte, then setp)."""
        addr = Addr(p.addr.base, p.addr.offset + k * dt.itemsize)
        op = f"ld.{p.buf.space}.{mem_type(dt)}"
        if dt.is_bool:
            r = self.new("b32")
            if gate is not None:
                self.emit("selp.u32", r, Imm("1"), Imm("0"), alt)
            self.emit(op, r, addr, guard=gate)
            t = self.new("pred")
            self.emit("setp.ne.u32", t, r, Imm("0"))
            return t
        r = self.new(bank_of(dt))
        if gate is not None:
            self.emit(f"mov.{sel_type(dt)}", r, alt)
        self.emit(op, r, addr, guard=gate)
        return r

    def sel_STORE(self, u: UOp) -> None:
        """st.{global,shared,local} (predicated when gated); REG slots are register moves."""
        p = self.places[u.src[0]]
        dt = p.buf.dtype
        gate = self.reg(u.src[2]) if len(u.src) == 3 else None
        v = self.reg(u.src[1])
        vals = v if isinstance(v, tuple) else (v,)
        if p.buf.space == "reg":
            mov = "mov.pred" if dt.is_bool else f"mov.{sel_type(dt)}"
            for k, r in enumerate(vals):
                self.emit(mov, p.buf.slots[p.slot + k], r, guard=gate)
            return
        if dt.is_bool:
            conv = []
            for r in vals:
                t = self.new("b32")
                self.emit("selp.u32", t, Imm("1"), Imm("0"), r)
                conv.append(t)
            vals = tuple(conv)
        if p.aligned and p.lanes > 1 and not dt.is_bool:
            self.emit(f"st.{p.buf.space}.v{p.lanes}.{vec_type(dt)}", p.addr, Vec(vals),
                      guard=gate)
            return
        for k, r in enumerate(vals):
            addr = Addr(p.addr.base, p.addr.offset + k * dt.itemsize)
            self.emit(f"st.{p.buf.space}.{mem_type(dt)}", addr, r, guard=gate)

    def sel_STACK(self, u: UOp) -> None:
        """A vector value is the tuple of its lanes' registers."""
        self.val[u] = tuple(self.reg(s) for s in u.src)

def vec_type(dt: DType) -> str:
    """The element type of a vector ld/st (v2/v4): float16/bfloat16 lanes are .b16 bit patterns
    (ld/st have no .f16 type), as in their scalar ld/st (`mem_type`)."""
    if dt in HALF:
        return "b16"
    if dt.is_float:
        return fty(dt)
    return f"u{dt.bits}"


def select(lin: list[UOp], name: str, params: list[UOp | None], sm: int) -> Kernel:
    """Select a linearized kernel: `params[i]` is the PARAM of slot i (None if unused)."""
    if not lin or lin[-1].op is not Ops.SINK:
        raise SelectError("the schedule must end with the SINK")
    return PtxSelector(name, params, sm).select(lin)

