"""After allocation: the AMD machine function → `kcc.encode.amd.operands.Inst` lines.

- pseudo instructions (names starting with ".") expand into real ones; register copies the
  allocator inserted become s_mov/v_mov; its spills and fills (kcc/isel/amd/regs.py) become
  v_writelane/v_readlane of a lane VGPR (SGPRs) and scratch stores/loads (VGPRs);
- `s_waitcnt` is placed before every instruction that touches a register a pending load
  (global_load and scratch_load: vmcnt; s_load and DS: lgkmcnt) writes, and every counter is
  drained before a branch, a label (control-flow joins) and s_barrier (RDNA3 ISA §5.6 / CDNA3
  ISA §4.4, data dependency resolution: the hardware does not interlock on memory results);
- labels stay as `Label` items; branches carry their target name until the encoder lays the
  code out (`resolve_branches`).
"""

from __future__ import annotations

from typing import Any

from kcc.encode.amd.operands import SGPR, VGPR, Imm, Inst, Special
from kcc.ir.mir import Kind, Label, MFunction, PReg, RegOp
from kcc.isel.amd.base import Part
from kcc.isel.amd.regs import SCRATCH_REACH, Arch, parse_preg

#: every branch (a loop's back edge included: s_cbranch_execnz ends a per-lane loop): the
#: counters are drained before each, so no load is pending on any control-flow edge
_BRANCHES = ("s_branch", "s_cbranch_")


def _one(r: SGPR | VGPR, j: int) -> SGPR | VGPR:
    return type(r)(r.index + j, 1)


def _half(o: Any, j: int) -> Any:
    """Register j of a tuple operand, or the j-th 32-bit word of a 64-bit immediate."""
    if isinstance(o, (SGPR, VGPR)):
        return _one(o, j)
    if isinstance(o, Imm):
        v = o.value & (2 ** 64 - 1)
        w = (v >> (32 * j)) & 0xFFFFFFFF
        return Imm(w - (1 << 32) if w >= 1 << 31 else w)
    raise ValueError(f"no half of {o!r}")


class Lowering:
    """Expands one allocated function; `out` collects Inst and Label items."""

    def __init__(self, arch: Arch):
        self.arch = arch
        self.out: list[Inst | Label] = []
        self.vcc = Special("vcc_lo" if arch.wave == 32 else "vcc")
        self.cdna = arch.family == "cdna3"

    def ops(self, inst: Any) -> list[Any]:
        tmpl, _ = inst.arg if inst.arg is not None else ((), ())
        regs = inst.operands
        out = []
        for t in tmpl:
            if isinstance(t, int):
                o = regs[t]
                out.append(parse_preg(o.reg) if isinstance(o, RegOp) else o)
            elif isinstance(t, Part):
                out.append(_one(parse_preg(regs[t.k].reg), t.j))
            else:
                out.append(t)
        return out

    def put(self, name: str, *ops: Any, mods: tuple = ()) -> None:
        self.out.append(Inst(name, tuple(ops), tuple(sorted(mods))))

    def mov(self, d: Any, s: Any) -> None:
        if d != s:
            self.put("s_mov_b32" if isinstance(d, SGPR) else "v_mov_b32", d, s)

    def lower(self, fn: MFunction) -> list[Inst | Label]:
        """Every instruction of the allocated function, expanded."""
        for inst in fn.insts:
            if inst.kind in (Kind.LABEL, Kind.LOOP_BEGIN):
                self.out.append(Label(inst.label() or ""))
                continue
            if inst.kind is Kind.MOVE:
                d, s = (parse_preg(o.reg) for o in inst.operands)
                if d == s:
                    continue
                if isinstance(d, SGPR) and d.count == 2 and isinstance(s, SGPR):
                    self.put("s_mov_b64", d, s)
                else:
                    for j in range(d.count):
                        self.mov(_one(d, j), _one(s, j))
                continue
            if inst.kind in (Kind.SPILL, Kind.FILL):
                self.slot(inst)
                continue
            ops = self.ops(inst)
            _, mods = inst.arg if inst.arg is not None else ((), ())
            if inst.op.startswith("."):
                getattr(self, "x_" + inst.op[1:])(*ops)
            elif inst.op == "v_mov_b32" and len(ops) == 2 and ops[0] == ops[1]:
                continue                      # a copy the allocator coalesced
            elif inst.kind in (Kind.BRANCH, Kind.JUMP, Kind.LOOP_END):
                self.out.append(Inst(inst.op, (), (("target", inst.label()),)))
            elif inst.op.startswith(("v_wmma_", "v_mfma_")):
                self.matrix_waits(inst.op, ops, mods)
            else:
                self.put(inst.op, *ops, mods=mods)
        return self.out

    def matrix_waits(self, name: str, ops: list[Any], mods: tuple) -> None:
        """A matrix op (kcc/isel/amd/matrix.py) with the waits the hardware does not
        interlock, fixed and conservative rather than computed per dependency:
        - gfx1100: a WMMA whose A or B is the previous WMMA's D needs one independent
          instruction between them (LLVM's GCNHazardRecognizer, fixWMMAHazards): a ``v_nop``
          after each WMMA;
        - gfx942: an MFMA reading a VGPR a VALU instruction wrote needs 2 wait states (4 after
          a VALU write of EXEC): an ``s_nop 4`` (5) before it; a VALU, memory or MFMA
          instruction reading or overwriting an MFMA's result must wait out its passes (the
          CDNA3 ISA's required independent instructions after an MFMA; GCNHazardRecognizer
          asks gfx940 for at most 19 wait states): three ``s_nop 7`` (24) after it."""
        if self.cdna:
            self.put("s_nop", Imm(4))
        self.put(name, *ops, mods=mods)
        if self.cdna:
            for _ in range(3):
                self.put("s_nop", Imm(7))
        else:
            self.put("v_nop")

    # -- spills and fills (kcc/isel/amd/regs.py) -----------------------------------------
    def slot(self, inst: Any) -> None:
        """A spill or fill: SGPR dwords to/from lanes of their lane VGPR, VGPRs to/from the
        private segment (scratch).

        CDNA3 needs software wait states around these (the manual's table of manually
        inserted wait states; LLVM's GCNHazardRecognizer rules for gfx940): an SGPR a VALU
        wrote (a compare's mask) read as a constant by v_writelane: 2; a VGPR a VALU wrote (a
        v_writelane just before) read by v_readlane: 1; an SGPR v_readlane wrote read by a
        VMEM instruction: 5 (by a VALU as a constant: 2, as a lane select: 4). The s_nops below
        give them, only in code that spills (RDNA3 interlocks these). (The data VGPRs of a
        store of more than 8 bytes written by a VALU right after it, 1, is every store's
        hazard: ``store_hazards``.)"""
        reg = parse_preg(inst.operands[0].reg)
        size, lane = inst.arg
        if inst.op in (".spill_s", ".fill_s"):
            home = parse_preg(inst.operands[1].reg)
            if self.cdna:
                self.put("s_nop", Imm(1 if inst.op == ".spill_s" else 0))
            for j in range(reg.count):
                if inst.op == ".spill_s":
                    self.put("v_writelane_b32", home, _one(reg, j), Imm(lane + j))
                else:
                    self.put("v_readlane_b32", _one(reg, j), home, Imm(lane + j))
            if self.cdna and inst.op == ".fill_s":
                self.put("s_nop", Imm(4))
            return
        off = Special("off")
        saddr, offset = self.frame_base(inst)
        # a WMMA fragment (v8, 32 bytes) moves as two 16-byte pieces (its slot is 32-byte
        # aligned, so both lie within one 4 KiB window of the frame base)
        for at in range(0, size, 16):
            part = min(size - at, 16)
            r = VGPR(reg.index + at // 4, part // 4) if size > 16 else reg
            suffix = {4: ("dword", "b32"), 8: ("dwordx2", "b64"), 16: ("dwordx4", "b128")}[part]
            kind = suffix[0] if self.cdna else suffix[1]
            if offset + at >= SCRATCH_REACH:
                raise ValueError(f"scratch slot {inst.slot}+{at} crosses the offset's reach")
            mods = (("offset", offset + at),)
            if inst.op == ".spill_v":
                self.put(f"scratch_store_{kind}", off, r, saddr, mods=mods)
            else:
                self.put(f"scratch_load_{kind}", r, off, saddr, mods=mods)

    def frame_base(self, inst: Any) -> tuple[Any, int]:
        """The SADDR and OFFSET of a VGPR slot's scratch access: ``off`` and the slot's offset
        within the immediate's reach; past it, the frame SGPR (the spill's or fill's clobber,
        kcc/isel/amd/regs.py) set here to the slot's 4 KiB-aligned base and the rest. An SALU
        write of an SGPR that a VMEM instruction then reads needs no wait states (the CDNA3
        ISA's table of manually inserted wait states has that rule for a VALU write only)."""
        if inst.slot < SCRATCH_REACH:
            return Special("off"), inst.slot
        if not inst.clobbers:
            raise ValueError(f"scratch slot {inst.slot} past the offset's reach without the "
                             "frame SGPR")
        base = parse_preg(inst.clobbers[0])
        hi = inst.slot - inst.slot % SCRATCH_REACH
        # s_movk_i32 sign-extends a 16-bit immediate: a shorter form up to 28 KiB
        self.put("s_movk_i32" if hi < 1 << 15 else "s_mov_b32", base, Imm(hi))
        return base, inst.slot - hi

    # -- pseudo instructions --------------------------------------------------------------
    def x_def(self, *regs: Any) -> None:
        """Only a definition: a tuple whose registers are then written one at a time (DPart,
        kcc/isel/amd/base.py) starts here with whatever its registers hold."""

    def x_vmov(self, d: Any, s: Any) -> None:
        for j in range(d.count):
            self.mov(_one(d, j), _half(s, j) if d.count > 1 else s)

    def x_split(self, *ops: Any) -> None:
        """``.split r0, …, rn-1, t``: each register of tuple t into its own VGPR."""
        self.parallel([(r, _one(ops[-1], j)) for j, r in enumerate(ops[:-1])])

    def x_join(self, t: Any, *parts: Any) -> None:
        """``.join t, p0, …, pn-1``: the VGPRs into the registers of tuple t."""
        self.parallel([(_one(t, j), p) for j, p in enumerate(parts)])

    def parallel(self, moves: list[tuple[Any, Any]]) -> None:
        """The VGPR copies (destination, source) as if every source were read first: a move
        goes once nothing left to do reads its destination; when every destination is still
        to be read (cycles), one is exchanged with its source by three v_xor_b32 (correct in
        the active lanes, the only ones a copy writes) and the moves reading either follow.
        The allocator puts the registers in place where it can, so usually nothing is left."""
        todo = [(d, s) for d, s in moves if d != s]
        while todo:
            reads = {s for _, s in todo}
            free = next((i for i, (d, _) in enumerate(todo) if d not in reads), None)
            if free is not None:
                self.mov(*todo.pop(free))
                continue
            d, s = todo.pop(0)
            for a, b in ((d, s), (s, d), (d, s)):
                self.put("v_xor_b32", a, a, b)
            # d now holds what s held (its move is done) and s what d held
            todo = [(x, s if y == d else d if y == s else y) for x, y in todo]
            todo = [(x, y) for x, y in todo if x != y]

    def x_vpair(self, d: Any, t: Any, k: Imm) -> None:
        """d = registers 2k and 2k+1 of tuple t. Both are even-aligned, so d is either those
        two registers (no move) or shares none of them: each is read before it could be
        written (in place, as regs.AmdRegInfo.early_clobber expects)."""
        for j in range(2):
            self.mov(_one(d, j), _one(t, 2 * k.value + j))

    def x_vlit64(self, d: Any, v: Imm) -> None:
        self.put("v_mov_b32", _one(d, 0), _half(v, 0))
        self.put("v_mov_b32", _one(d, 1), _half(v, 1))

    def _carry(self, first: str, second: str, d: Any, a: Any, b: Any) -> None:
        self.put(first, _one(d, 0), self.vcc, _half(a, 0), _half(b, 0))
        self.put(second, _one(d, 1), self.vcc, _half(a, 1), _half(b, 1), self.vcc)

    def x_add64(self, d: Any, a: Any, b: Any) -> None:
        self._carry("v_add_co_u32", "v_addc_co_u32" if self.cdna else "v_add_co_ci_u32",
                    d, a, b)

    def x_sub64(self, d: Any, a: Any, b: Any) -> None:
        self._carry("v_sub_co_u32", "v_subb_co_u32" if self.cdna else "v_sub_co_ci_u32",
                    d, a, b)

    def _bitwise(self, name: str, d: Any, a: Any, b: Any) -> None:
        for j in range(2):
            self.put(name, _one(d, j), _half(a, j), _half(b, j))

    def x_and64(self, d: Any, a: Any, b: Any) -> None:
        self._bitwise("v_and_b32", d, a, b)

    def x_or64(self, d: Any, a: Any, b: Any) -> None:
        self._bitwise("v_or_b32", d, a, b)

    def x_xor64(self, d: Any, a: Any, b: Any) -> None:
        self._bitwise("v_xor_b32", d, a, b)

    def x_cndmask64(self, d: Any, b: Any, a: Any, m: Any) -> None:
        for j in range(2):
            self.put("v_cndmask_b32", _one(d, j), _half(b, j), _half(a, j), m)

    def x_fneg64(self, d: Any, s: Any) -> None:
        self.mov(_one(d, 0), _one(s, 0))
        self.put("v_xor_b32", _one(d, 1), Imm(-0x80000000), _one(s, 1))


# -- s_waitcnt ---------------------------------------------------------------------------------

def _units(o: Any) -> list[tuple[str, int]]:
    if isinstance(o, SGPR):
        return [("s", o.index + j) for j in range(o.count)]
    if isinstance(o, VGPR):
        return [("v", o.index + j) for j in range(o.count)]
    return []


def _counter(name: str) -> str | None:
    if name.startswith(("global_load", "scratch_load")):
        return "vmcnt"
    if name.startswith(("s_load", "ds_load", "ds_read")):
        return "lgkmcnt"
    return None


def insert_waits(items: list[Inst | Label], arch: Arch) -> list[Inst | Label]:
    """`s_waitcnt` where a loaded register is touched, and before joins/branches/barriers."""
    out: list[Inst | Label] = []
    pending: dict[str, set[tuple[str, int]]] = {"vmcnt": set(), "lgkmcnt": set()}
    stores = False

    def drain(which: tuple[str, ...], all_stores: bool = False) -> None:
        nonlocal stores
        live = tuple(c for c in which if pending[c])
        if live:
            out.append(Inst("s_waitcnt", (), tuple((c, 0) for c in sorted(live))))
            for c in live:
                pending[c].clear()
        if all_stores and stores and arch.family == "rdna3":
            # RDNA3 counts stores separately (vscnt)
            out.append(Inst("s_waitcnt_vscnt", (Special("null"), Imm(0))))
        if all_stores:
            stores = False

    for it in items:
        if isinstance(it, Label):
            drain(("lgkmcnt", "vmcnt"))
            out.append(it)
            continue
        if it.name.startswith(_BRANCHES) or it.name == "s_endpgm":
            if it.name != "s_endpgm":
                drain(("lgkmcnt", "vmcnt"))
            out.append(it)
            continue
        if it.name == "s_barrier":
            drain(("lgkmcnt", "vmcnt"), all_stores=True)
            out.append(it)
            continue
        touched = {u for o in it.ops for u in _units(o)}
        need = tuple(c for c in ("lgkmcnt", "vmcnt") if pending[c] & touched)
        drain(need)
        out.append(it)
        c = _counter(it.name)
        if c is not None and it.ops:
            pending[c].update(_units(it.ops[0]))
        if it.name.startswith(("global_store", "ds_store", "ds_write")):
            stores = stores or it.name.startswith("global")
            if not it.name.startswith("global"):
                pending["lgkmcnt"].add(("lds", 0))
    return out


#: VMEM stores with more than 8 bytes of data (the CDNA3 spellings)
_WIDE_STORES = tuple(f"{seg}_store_dwordx{n}" for seg in ("global", "scratch") for n in (3, 4))


def store_hazards(items: list[Inst | Label], arch: Arch) -> list[Inst | Label]:
    """On gfx942, ``s_nop 0`` between a VMEM store of more than 8 bytes and a VALU
    instruction right after it that writes one of the store's data VGPRs.

    The CDNA3 ISA's table of manually inserted wait states asks for 1 there (the store may
    not have read its data yet; LLVM's GCNHazardRecognizer has12DWordStoreHazard, every GCN
    generation after SI). Any instruction between is a wait state, so a taken branch (itself
    one) never carries the hazard and labels are skipped. RDNA3 has no such hazard
    (GFX10+ interlock data dependencies)."""
    if arch.family != "cdna3":
        return items
    out: list[Inst | Label] = []
    data: Any = None
    for it in items:
        if isinstance(it, Label):
            out.append(it)
            continue
        d = it.ops[0] if it.ops else None
        if data is not None and it.name.startswith("v_") and isinstance(d, VGPR) and \
                d.index < data.index + data.count and data.index < d.index + d.count:
            out.append(Inst("s_nop", (Imm(0),)))
        data = it.ops[1] if it.name.startswith(_WIDE_STORES) else None
        out.append(it)
    return out


# gfx11 transcendental (TRANS) instructions: they run in their own unit (RDNA3 ISA §7.x)
_TRANS = frozenset(f"v_{op}_{t}" for op in ("exp", "log", "rcp", "rsq", "sqrt", "sin", "cos")
                   for t in ("f32", "f16")) | {"v_rcp_iflag_f32", "v_rcp_f64", "v_rsq_f64",
                                               "v_sqrt_f64"}
_TRANS_VALUS, _TRANS_TRANS = 5, 1      # the window: ≥ 5 VALU, ≥ 1 of them TRANS, expire it


def _vgpr_set(ops: Any) -> set[int]:
    return {o.index + j for o in ops if isinstance(o, VGPR) for j in range(o.count)}


def _base_name(name: str) -> str:
    return name[:-4] if name.endswith(("_e32", "_e64")) else name


def trans_hazards(items: list[Inst | Label], arch: Arch) -> list[Inst | Label]:
    """On gfx11, ``s_waitcnt_depctr 0xfff`` (va_vdst(0): the VALU writes in flight are done)
    before a VALU instruction that reads a VGPR a transcendental instruction wrote, unless
    at least 5 VALU instructions, at least one of them a transcendental, lie between them or
    such a wait does: LLVM's GCNHazardRecognizer::fixVALUTransUseHazard for gfx11
    (VALUTransUseHazard), the window as llc-19 places these waits (e.g. in its own
    `fdiv float` code). The scan goes back within the block; reaching a label still inside
    the window, it waits if any transcendental of the function writes one of the sources
    (a predecessor may end with it). CDNA3 has no such hazard in LLVM's list."""
    if arch.family != "rdna3":
        return items
    any_trans: set[int] = set()
    for it in items:
        if isinstance(it, Inst) and _base_name(it.name) in _TRANS and it.ops:
            any_trans |= _vgpr_set(it.ops[:1])
    if not any_trans:
        return items
    out: list[Inst | Label] = []
    for it in items:
        if isinstance(it, Inst) and it.name.startswith("v_") and \
                _wait_for_trans(out, _vgpr_set(it.ops[1:]), any_trans):
            out.append(Inst("s_waitcnt_depctr", (Imm(0xFFF),)))
        out.append(it)
    return out


def _wait_for_trans(before: list[Inst | Label], srcs: set[int], any_trans: set[int]) -> bool:
    """Whether a VALU instruction reading VGPRs srcs, placed after ``before``, needs the
    wait (trans_hazards)."""
    if not srcs & any_trans:
        return False
    valus = trans = 0
    for prev in reversed(before):
        if isinstance(prev, Label):
            return True
        if prev.name == "s_waitcnt_depctr":
            return False
        if not prev.name.startswith("v_"):
            continue
        is_trans = _base_name(prev.name) in _TRANS
        if is_trans and _vgpr_set(prev.ops[:1]) & srcs:
            return True
        valus, trans = valus + 1, trans + is_trans
        if valus >= _TRANS_VALUS and trans >= _TRANS_TRANS:
            return False
    return False


def _mod_text(k: str, v: Any) -> str:
    if k in ("offset",):
        return f"offset:{v}" if v else ""
    if isinstance(v, bool):
        return k if v else ""
    if isinstance(v, tuple):                # op_sel / neg_lo / neg_hi bits: neg_lo:[1,1,0]
        return f"{k}:[{','.join(str(int(b)) for b in v)}]"
    return f"{k}:{v}"


def inst_text(it: Inst) -> str:
    """One instruction in LLVM's AMDGPU assembler syntax."""
    if it.name == "s_waitcnt":
        return "s_waitcnt " + " ".join(f"{k}({v})" for k, v in it.mods)
    target = it.mod("target")
    if target is not None:
        return f"{it.name} {target}"
    neg = it.mod("neg", ())
    ops = []
    for k, o in enumerate(it.ops):
        text = str(o)
        src = k - 1
        if neg and 0 <= src < len(neg) and neg[src]:
            text = "-" + text
        ops.append(text)
    mods = [m for m in (_mod_text(k, v) for k, v in it.mods if k not in ("neg",)) if m]
    text = it.name + (" " + ", ".join(ops) if ops else "")
    return text + ("" if not mods else " " + " ".join(mods))


def listing(items: list[Inst | Label]) -> list[str]:
    """The function as assembly lines (labels flush left)."""
    return [f"{it.name}:" if isinstance(it, Label) else "  " + inst_text(it) for it in items]


__all__ = ["Lowering", "PReg", "insert_waits", "inst_text", "listing", "store_hazards",
           "trans_hazards"]
