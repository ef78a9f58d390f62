"""Plumbing of the AMD instruction selector: machine instructions over virtual registers,
instruction names per family, constants, and the uniformity analysis.

A selected instruction is a `kcc.ir.mir.Inst` whose `op` is the mnemonic (LLVM's spelling for
the arch), whose operands are the *register* operands (RegOp, in order) and labels, and whose
`arg` is `(template, mods)`: the instruction's operand list in assembly order, where an int k
stands for register operand k, ("part", k, j) for register j of tuple operand k, and anything
else is a literal `kcc.encode.amd.operands` operand (exec, vcc, an immediate). Names starting
with "." are pseudo instructions the target expands after allocation (kcc/targets/amd/target.py).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kcc.encode.amd.operands import FloatImm, Imm, Special
from kcc.encode.amd.table import INLINE_FLOATS, inline_float_codes
from kcc.ir.dtype import DType, dtypes
from kcc.ir.mir import Inst, Kind, Label, MFunction, RegOp, Role, VReg
from kcc.ir.ops import ALU, Ops
from kcc.ir.uop import UOp
from kcc.isel.amd.regs import Arch
from kcc.isel.common import SelectError


class AmdSelectError(SelectError):
    """A construct the AMD back end cannot compile, named in the message."""


# RDNA3 (gfx11) spellings → CDNA3 (gfx9 family) spellings where they differ (LLVM AMDGPU
# assembler syntax; RDNA3 ISA §12 / CDNA3 ISA §12 opcode tables).
_CDNA3 = {
    "s_load_b32": "s_load_dword", "s_load_b64": "s_load_dwordx2",
    "s_load_b128": "s_load_dwordx4",
    "global_load_b32": "global_load_dword", "global_load_b64": "global_load_dwordx2",
    "global_load_b128": "global_load_dwordx4", "global_load_u8": "global_load_ubyte",
    "global_load_i8": "global_load_sbyte", "global_load_u16": "global_load_ushort",
    "global_load_i16": "global_load_sshort",
    "global_store_b32": "global_store_dword", "global_store_b64": "global_store_dwordx2",
    "global_store_b128": "global_store_dwordx4", "global_store_b8": "global_store_byte",
    "global_store_b16": "global_store_short",
    "ds_load_b32": "ds_read_b32", "ds_load_b64": "ds_read_b64", "ds_load_u8": "ds_read_u8",
    "ds_load_i8": "ds_read_i8", "ds_load_u16": "ds_read_u16", "ds_load_i16": "ds_read_i16",
    "ds_load_b128": "ds_read_b128",
    "ds_store_b32": "ds_write_b32", "ds_store_b64": "ds_write_b64",
    "ds_store_b128": "ds_write_b128", "ds_store_b8": "ds_write_b8",
    "ds_store_b16": "ds_write_b16",
    "v_add_nc_u32": "v_add_u32", "v_sub_nc_u32": "v_sub_u32",
    "v_add_co_ci_u32": "v_addc_co_u32", "v_sub_co_ci_u32": "v_subb_co_u32",
    "s_and_not1_b32": "s_andn2_b32", "s_and_not1_b64": "s_andn2_b64",
}


@dataclass(frozen=True)
class Part:
    """Register j of the tuple in register operand k (in a template)."""

    k: int
    j: int


class D:
    """A DEF operand (m: DEF | USE, a read-modify-write such as a masked load's result)."""

    def __init__(self, reg: VReg, mod: bool = False):
        self.reg, self.mod = reg, mod


class DPart:
    """Register j of tuple `reg` as a destination: the tuple is DEF | USE (its other registers
    keep their values), so the tuple and the instruction's sources are live together and never
    share a register, spilled or not (a WMMA fragment, a store's data or a 64-bit pair built
    one register at a time: `Base.pack`)."""

    def __init__(self, reg: VReg, j: int):
        self.reg, self.j = reg, j


class Base:
    """What the selector rules share: the function under construction and its helpers."""

    def __init__(self, name: str, arch: Arch):
        self.name, self.arch = name, arch
        self.fn = MFunction(name)
        self.val: dict[UOp, Any] = {}
        # SGPR value → VGPR copy, and (key, …) → a VALU value computed in this block (an
        # address shift, a zero offset); valid until control flow or EXEC changes
        self.vcopies: dict[Any, VReg] = {}
        self.labels = 0
        self.lane_loops = 0                  # per-lane loops open: EXEC may be partial

    # -- emission -------------------------------------------------------------------------
    def nm(self, name: str) -> str:
        """The arch's spelling of an RDNA3-spelled mnemonic."""
        return _CDNA3.get(name, name) if self.arch.family == "cdna3" else name

    def new(self, cls: str) -> VReg:
        return self.fn.new_vreg(cls)

    def emit(self, name: str, *ops: Any, mods: tuple = (), kind: Kind = Kind.OP) -> Inst:
        """Append one instruction: VReg → USE, D(v) → DEF, (VReg, j) → one register of a
        tuple USE, DPart(VReg, j) → one register of a tuple DEF (the tuple DEF | USE), Label →
        branch target, anything else a literal operand. Literal constants beyond what the
        encoding holds are first moved into registers (`legal_literals`)."""
        ops = self.legal_scalars(name, self.legal_literals(name, ops, bool(mods)))
        regs: list[Any] = []
        tmpl: list[Any] = []
        index: dict[int, int] = {}

        def slot(r: VReg, role: Role) -> int:
            key = id(r)
            if key in index and role is Role.USE:
                return index[key]
            regs.append(RegOp(r, role))
            index[key] = len(regs) - 1
            return len(regs) - 1
        for o in ops:
            if isinstance(o, D):
                tmpl.append(slot(o.reg, Role.DEF | Role.USE if o.mod else Role.DEF))
            elif isinstance(o, DPart):
                tmpl.append(Part(slot(o.reg, Role.DEF | Role.USE), o.j))
            elif isinstance(o, VReg):
                tmpl.append(slot(o, Role.USE))
            elif isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], VReg):
                tmpl.append(Part(slot(o[0], Role.USE), o[1]))
            elif isinstance(o, Label):
                regs.append(o)
                tmpl.append(o)
            else:
                tmpl.append(o)
        inst = Inst(self.nm(name), regs, kind=kind, arg=(tuple(tmpl), tuple(mods)))
        self.fn.insts.append(inst)
        if kind in (Kind.LABEL, Kind.LOOP_BEGIN, Kind.LOOP_END, Kind.JUMP, Kind.BRANCH):
            self.vcopies.clear()
        return inst

    def legal_literals(self, name: str, ops: tuple, mods: bool = False) -> tuple:
        """The operands with every 32-bit literal the encoding cannot hold moved into a
        register. An instruction word carries at most one literal dword (RDNA3 ISA §7.3 /
        CDNA3 ISA §4.4, "Literal constants"): SOP1/SOP2/SOPC and, on RDNA3, VOP1/2/C and VOP3
        hold one (shared by the operands with that same value); CDNA3's VOP3 holds none, and
        whether a VALU op becomes VOP3 is the encoder's choice, so there only v_mov_b32 keeps
        its literal, and a VOP1/VOP2 instruction whose literal is src0 and whose other sources
        are VGPRs, without modifiers or a lane mask (the encoder's `fits_e32`: encoded e32,
        which holds one). A uniform WHERE of two constants (s_cselect_b32 d, 0x43f, 0x3ff) needs
        this. 64-bit operations are left alone: a literal of a 64-bit operand is not a plain
        32-bit value (a float64's is its high dword), and the selector gives them inline
        constants or registers only (`vconst`). The moves write no SCC or VCC, so they may
        sit between a compare and the s_cselect reading it."""
        if name.endswith("64"):
            return ops
        if name.startswith("s_"):
            keep, cls, mov = 1, "s", "s_mov_b32"
        elif name.startswith("v_"):
            keep, cls, mov = 1, "v", "v_mov_b32"
            if self.arch.family == "cdna3" and name != "v_mov_b32" and \
                    (mods or not self._e32_literal(name, ops)):
                keep = 0
        else:
            return ops
        lits = [lit for o in ops if (lit := literal32(o)) is not None]
        if len(set(lits)) <= keep:
            return ops
        out = []
        for o in ops:
            lit = literal32(o)
            if lit is not None and lit not in lits[:keep]:
                # one move per constant and block (like the address shifts: valid until
                # control flow or EXEC changes), as LLVM hoists them: an unrolled exp's
                # three constants were moved again for every element
                key = ("lit", cls, lit)
                r = self.vcopies.get(key)
                if r is None:
                    r = self.new(cls)
                    self.emit(mov, D(r), o)
                    self.vcopies[key] = r
                o = r
            out.append(o)
        return tuple(out)

    def _e32_literal(self, name: str, ops: tuple) -> bool:
        """Whether a CDNA3 VALU instruction is a VOP1/VOP2 one that takes its literal in the
        e32 encoding: the literal src0, every other source a VGPR, no lane mask operand."""
        from kcc.encode.amd.fields import AmdEncodeError, lookup
        try:
            row, _ = lookup(self.arch.name, self.nm(name))
        except AmdEncodeError:        # not an instruction of the table
            return False
        if row.fmt not in ("VOP1", "VOP2") or any(k == "lane" for _, k in row.ops):
            return False
        srcs = [o for o in ops if not isinstance(o, D)]
        if not srcs or literal32(srcs[0]) is None:
            return False
        return all(isinstance(o, VReg) and o.cls == "v" for o in srcs[1:])

    def legal_scalars(self, name: str, ops: tuple) -> tuple:
        """The operands with SGPR sources copied into VGPRs where the instruction cannot
        read them. A VALU instruction reads SGPRs, special registers (VCC, EXEC) and a literal
        over the *constant bus*: at most 2 distinct values per instruction on RDNA3 (RDNA3 ISA
        §7.3.1, "Constant bus limitations": gfx10+), 1 on CDNA3 (CDNA3 ISA §4.4, one SGPR or
        literal per VALU instruction). SGPR sources are kept up to that limit (the encoder
        chooses VOP3 when src1 is not a VGPR); v_cndmask's lane mask (its last operand) is
        one of them and always stays. 64-bit operations, pseudo instructions and the
        matrix/packed/lane instructions take their 32-bit register operands as VGPRs, as
        before (their expansions and operand kinds were written for that)."""
        if not any(isinstance(o, VReg) and o.cls == "s" for o in ops):
            return ops
        keep_mask = "cndmask" in name
        if not name.startswith("v_") or name.endswith("64") or \
                name.startswith(_VGPR_ONLY) or name == "v_mov_b32":
            if name.startswith(".") or name.endswith("64") or name.startswith(_VGPR_ONLY):
                if name in (".keep", ".label", ".loop"):
                    return ops
                last = len(ops) - 1
                return tuple(self.vgpr(o) if isinstance(o, VReg) and o.cls == "s" and
                             not (keep_mask and k == last) else o for k, o in enumerate(ops))
            return ops
        limit = 2 if self.arch.family == "rdna3" else 1
        last = len(ops) - 1
        bus: list[Any] = []
        for k, o in enumerate(ops):
            if isinstance(o, VReg) and o.cls.startswith("s"):
                key: Any = id(o)
            elif isinstance(o, Special):
                if k == 1 and name.startswith("v_div_scale"):
                    continue                # its SDST (VCC), a result: not a bus read
                key = ("special", o.name)
            elif (lit := literal32(o)) is not None:
                key = ("lit", lit)
            else:
                continue
            if key not in bus:
                bus.append(key)
        if len(bus) <= limit:
            return ops
        out = list(ops)
        for k, o in enumerate(ops):
            if len(bus) <= limit:
                break
            if isinstance(o, VReg) and o.cls == "s" and not (keep_mask and k == last) \
                    and id(o) in bus:
                bus.remove(id(o))
                c = self.vgpr(o)
                out = [c if x is o else x for x in out]
        return tuple(out)

    def label(self) -> Label:
        self.labels += 1
        return Label(f".L{self.name}_{self.labels}")

    def pack(self, parts: list[Any]) -> VReg:
        """A VGPR tuple (v2, v4 or v8) of the parts side by side: 32-bit registers (VGPR or
        SGPR), (tuple, j) registers, VGPR/SGPR pairs (two registers each) or 32-bit
        immediates. The tuple starts at ``.def`` and each register is written by its own
        v_mov_b32 (DPart: the tuple is DEF | USE there), so the tuple is live with every part
        and shares no register with one, even a part filled from a spill slot just before its
        move. (One pseudo writing the whole tuple could not promise that: a part's fill ends
        at the pseudo, so the allocator may give its register to the tuple, which the
        expansion then writes before reading that part.)"""
        words: list[Any] = []
        for p in parts:
            if isinstance(p, VReg) and p.cls not in ("v", "s"):
                words += [(p, j) for j in range(int(p.cls[1:]))]
            else:
                words.append(p)
        t = self.new(f"v{len(words)}")
        self.emit(".def", D(t))
        for j, w in enumerate(words):
            self.emit("v_mov_b32", DPart(t, j), w)
        return t

    @property
    def vcc(self) -> Special:
        return Special("vcc_lo" if self.arch.wave == 32 else "vcc")

    @property
    def exec(self) -> Special:
        return Special("exec_lo" if self.arch.wave == 32 else "exec")

    def mask_op(self, base: str) -> str:
        """A SALU op on lane masks: s_and_b32 in wave32, s_and_b64 in wave64."""
        return f"{base}_b{self.arch.wave}"

    # -- values in registers ---------------------------------------------------------------
    def vgpr(self, r: VReg) -> VReg:
        """r as a VGPR (tuple): SGPRs are copied (once per straight-line block)."""
        if r.cls.startswith("v"):
            return r
        c = self.vcopies.get(id(r))
        if c is not None:
            return c
        c = self.new("v" + r.cls[1:])
        if r.cls == "s":
            self.emit("v_mov_b32", D(c), r)
        else:
            self.emit(".vmov", D(c), r)
        self.vcopies[id(r)] = c
        return c

    def vconst_imm(self, bits: int) -> Imm:
        """A 32-bit constant as v_mov_b32's source (which takes a literal on both families)."""
        return Imm(_signed32(bits))

    def vconst(self, bits: int, wide: bool = False, f64: bool = False) -> VReg | Imm | FloatImm:
        """A VALU source for a 32-bit (or 64-bit when wide) constant pattern: an inline
        constant where one exists (32-bit: the integers and the float32 patterns of the
        inline floats, `literal32`; for a float64 operand of a float64 instruction, `f64`,
        the inline floats ±0.5, ±1, ±2, ±4), else a VGPR set with v_mov_b32."""
        if wide and f64:
            x = struct.unpack("<d", (bits & (2 ** 64 - 1)).to_bytes(8, "little"))[0]
            if x in INLINE_FLOATS:
                return FloatImm(x)
        if not wide and (-16 <= _signed32(bits) <= 64 or self.arch.family == "rdna3" or
                         (bits & 0xFFFFFFFF) in _INLINE_F32):
            # RDNA3: a literal (legal_literals/legal_scalars move what does not fit)
            return Imm(_signed32(bits))
        if wide and -16 <= _signed64(bits) <= 64:
            return Imm(_signed64(bits))
        key = ("vconst", wide, bits)          # one per block (legal_literals' reason)
        r = self.vcopies.get(key)
        if r is not None:
            return r
        r = self.new("v2" if wide else "v")
        if wide:
            self.emit(".vlit64", D(r), Imm(bits & (2 ** 64 - 1)))
        else:
            self.emit("v_mov_b32", D(r), Imm(_signed32(bits)))
        self.vcopies[key] = r
        return r


_INLINE_F32 = frozenset(inline_float_codes("f32"))
# VALU instructions whose register sources kcc always gives as VGPRs
_VGPR_ONLY = ("v_wmma", "v_pk_", "v_dot", "v_mfma", "v_readlane", "v_writelane",
              "v_readfirstlane", "v_perm", "v_permlane")


def literal32(o: Any) -> int | None:
    """The literal dword an immediate operand needs (None for a register or an inline
    constant: the integers -16..64 and the f32 patterns of the inline floats, which every
    32-bit operand accepts, RDNA3 ISA §7.3.2 / CDNA3 ISA §4.4.1)."""
    if not isinstance(o, Imm) or -16 <= o.value <= 64:
        return None
    bits = o.value & 0xFFFFFFFF
    return None if bits in _INLINE_F32 else bits


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _signed64(v: int) -> int:
    v &= 2 ** 64 - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def const_bits(v: int | float | bool, dt: DType) -> int:
    """The bit pattern of constant v in dt (ints: two's complement of its width, widened
    the way the register holds it: signed ≤16-bit ints sign-extended to 32 bits)."""
    if dt.is_bool:
        return 1 if v else 0
    if dt == dtypes.float32:
        return struct.unpack("<I", struct.pack("<f", float(v)))[0]
    if dt == dtypes.float64:
        return struct.unpack("<Q", struct.pack("<d", float(v)))[0]
    if dt == dtypes.float16:
        import numpy as np
        return int(np.array(float(v), np.float16).view(np.uint16))
    if dt == dtypes.bfloat16:
        from kcc.isel.common import bf16_bits
        return bf16_bits(float(v))
    iv = int(v) & ((1 << dt.bits) - 1)
    if dt.is_signed and iv >= 1 << (dt.bits - 1):
        iv -= 1 << dt.bits
    return iv


def is_wide(dt: DType) -> bool:
    """Whether dt takes a register pair."""
    return dt.itemsize == 8


def uniform_nodes(lin: list[UOp]) -> set[UOp]:
    """The nodes whose value is the same in every lane of a wave: constants, scalar PARAMs,
    gidx, ≤ 32-bit RANGE counters with uniform bounds, and ALU ops, INDEX lanes and AFTERs
    of uniform values. lidx and loaded values are per lane, and so is what depends on
    them."""
    uni: set[UOp] = set()
    for u in lin:
        if u.op in (Ops.CONST, Ops.PARAM, Ops.BUFFER):
            uni.add(u)
        elif u.op is Ops.SPECIAL:
            if u.arg.startswith("gidx"):
                uni.add(u)
        elif u.op is Ops.RANGE:
            # a 64-bit counter runs per lane (SALU has no 64-bit signed compare)
            if u.src[0] in uni and not is_wide(u.dtype):
                uni.add(u)
        elif u.op in ALU or u.op in (Ops.CAST, Ops.BITCAST, Ops.STACK, Ops.INDEX, Ops.AFTER):
            if u.op is Ops.INDEX and u.src[0].kind != "value":
                continue
            srcs = u.src[:1] if u.op is Ops.AFTER else u.src
            if all(s in uni for s in srcs):
                uni.add(u)
    return uni
