"""x86-64 machine code from an allocated function: the frame (prologue and epilogue), loop
heads aligned, every instruction in the encoder's terms, and the assembled bytes.

Frame (System V, rbp as frame pointer):

    [rbp + 16 + 8k]   stack-passed arguments
    [rbp + 8]         return address
    [rbp]             saved rbp
    [rbp - 8 ...]     saved callee-saved registers
    ... rsp aligned down to 64 ...
    [rsp + locals]    spill slots (the allocator's frame, offsets from its start; locals is
                      rounded up to 64 so that each slot is aligned to its size)
    [rsp + 0]         locals: the gated-store scratch slot, then REG buffers

A frame larger than a page is probed: rsp goes down a page at a time, each page touched
(`or qword ptr [rsp], 0`) before the next, so that the frame never steps over a thread
stack's guard page into whatever is mapped below it (the stack-clash protection GCC and clang
apply with -fstack-clash-protection; a packed matmul slab makes frames of 64-256 KiB).
"""

from __future__ import annotations


from kcc.encode.x86.encoder import Assembler
from kcc.encode.x86.encoder import Imm as XImm
from kcc.encode.x86.encoder import Label as XLabel
from kcc.encode.x86.encoder import Mem as XMem
from kcc.encode.x86.encoder import Reg as XReg
from kcc.encode.x86.table import FORMS, KINDS
from kcc.ir.mir import Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp
from kcc.isel.x86.base import HIGH_ONLY, imm_form
from kcc.isel.x86.regs import GPR_ORDER
from kcc.record import record

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# rsp alignment: 64 so that zmm spill slots and REG buffers (x86-64-v4) are aligned too
FRAME_ALIGN = 64
# The head of every innermost loop starts at a multiple of 64 bytes (NOP padding before it,
# run once per entry), so that a short loop body spans as few instruction-fetch blocks (and
# cache lines) as it can. Measured on tinygrad's layernorm normalize loop (docs/performance.md,
# "Loop heads"): kcc's loop at a 32- or 64-byte aligned address ran 1-3% faster than the same
# bytes only 16-byte aligned. 64, not 32: once tiny kernels lost their frame setup, a 44-byte
# loop (the sweep's i32_minmax E_64_4) landed at +0x20, across a 64-byte line, and ran 19.0 ->
# 24.8 ns a call; at +0x40 18.5 ns (docs/performance.md, "Tiny kernels: ...").
LOOP_ALIGN = 64
# the page size frames are probed by (x86-64's base page; SDM Vol. 3 §4.5)
PAGE = 4096
# the probe loop's label (local to the assembler: no label of a body is named like it)
PROBE_LABEL = ".Lkcc_stack_probe"
FUNC_ALIGN = 16


def _gpr_name(p: str, size: int) -> str:
    """The name of 64-bit register p at a width of size bytes (rax → eax/ax/al, r9 → r9d)."""
    if size == 8:
        return p
    if p[1:].isdigit():                                   # r8 … r15
        return p + {4: "d", 2: "w", 1: "b"}[size]
    base = p[1:]                                          # ax, cx, si, di, sp, bp …
    if size == 4:
        return "e" + base
    if size == 2:
        return base
    return base[0] + "l" if base in ("ax", "cx", "dx", "bx") else base + "l"


_REGS: dict[tuple[str, str, int], XReg] = {}


def _reg(p: PReg, size: int) -> XReg:
    """The encoder's register for p at size bytes (memoized: one per register and width)."""
    key = (p.cls, p.name, size)             # (PReg's own hash is a Python-level call)
    r = _REGS.get(key)
    if r is None:
        r = _REGS[key] = _reg_named(p, size)
    return r


def _reg_named(p: PReg, size: int) -> XReg:
    if p.cls == "gpr":
        return XReg(_gpr_name(p.name, size))
    if p.cls == "mask":
        return XReg(p.name)
    n = p.name[3:]
    return XReg({16: "xmm", 32: "ymm", 64: "zmm"}[size] + n)


def _mem(m: Mem, size: int, arg: Any) -> XMem:
    label = arg.get("rip") if isinstance(arg, dict) else None
    if label is not None:
        return XMem(size, None, None, 1, m.disp, label)
    base = m.base.name if m.base is not None else None
    index = m.index.name if m.index is not None else None
    if m.index is not None and m.index.cls == "vec":
        index = _reg(m.index, size).name    # a VSIB index (a gather): the access's width
    return XMem(size, base, index, m.scale, m.disp)


def encode_operands(inst: Inst) -> tuple[str, tuple]:
    """The encoder's view of an allocated instruction: form and sized operands."""
    if inst.op == "vzero":
        r = _reg(inst.operands[0].reg, 16)
        return "vxorps_x_x_xm", (r, r, r)
    if inst.op == "sbb_self":
        r = _reg(inst.operands[0].reg, 4)
        return "sbb_r32_rm32", (r, r)
    row = FORMS[inst.op]
    out = []
    for spec, o in zip(row.operands, inst.operands):
        k = KINDS[spec.kind]
        if isinstance(o, RegOp):
            if spec.kind == "cl":
                out.append(XReg("cl"))
            else:
                out.append(_reg(o.reg, k.reg_size))
        elif isinstance(o, Mem):
            out.append(_mem(o, k.mem_size or 0, inst.arg))
        elif isinstance(o, Imm):
            out.append(XImm(int(o.value)))
        elif isinstance(o, Label):
            out.append(XLabel(o.name))
        else:
            raise AssertionError(f"operand {o!r} of {inst.op}")
    if inst.arg == HIGH_ONLY:
        return inst.op, _high_only(out)
    return inst.op, tuple(out)


def _high_only(ops: list) -> tuple:
    """MULX's operands with the high half's register as the low half's too (its low result
    is never read; SDM "MULX": with both destinations equal, the high half is written)."""
    return (ops[0], ops[0], *ops[2:])


@record
class EncodedKernel:
    """One kernel's machine code and the RIP-relative fixups into the constant pool."""

    name: str
    code: bytes
    fixups: list[Any]
    frame: int
    saved: tuple[PReg, ...]
    items: list[tuple]
    align: int = FUNC_ALIGN     # the code's alignments hold where it starts at a multiple of this


def machine_code(fn: MFunction, locals_bytes: int, memo: dict[int, tuple] | None = None
                 ) -> tuple[list[tuple], tuple[PReg, ...], int]:
    """The final instruction list of an allocated function: prologue, body, epilogue.

    Items are ("label", name), ("align", bytes) or (form, operands…) in encoder terms.
    memo: each ordinary instruction's item by the instruction's id, shared by the calls for
    two versions of one function (kcc/targets/x86/versions.py: the same Inst objects but the
    stores, all alive while both are made)."""
    items: list[tuple] = []
    loops = fn.loops()
    inner = {b for b, e in loops if not any(b < b2 < e for b2, _ in loops)}
    saved = tuple(p for p in GPR_ORDER if p in fn.callee_saved_used)
    frame = -(-(locals_bytes + fn.frame_size) // FRAME_ALIGN) * FRAME_ALIGN
    # a leaf with no frame, no callee-saved register and no stack argument never addresses
    # off rbp: no frame pointer (as clang -O2), 3 instructions fewer a call (tiny kernels)
    leaf = not saved and not frame and not _reads_rbp(fn)
    # no VZEROUPPER where nothing writes a ymm/zmm or xmm16-31 (VEX xmm ops zero the upper
    # bits, SDM Vol. 1 §14.5: the upper state stays as the caller left it)
    upper = _dirties_upper(fn)
    if not leaf:
        items.append(("push_r64", XReg("rbp")))
        items.append(("mov_r64_rm64", XReg("rbp"), XReg("rsp")))
    for p in saved:
        items.append(("push_r64", XReg(p.name)))
    if frame > PAGE:
        items += probed_frame(frame)
    elif frame:
        items.append((imm_form("sub", "64", frame), XReg("rsp"), XImm(frame)))
        # 64-byte alignment for vector spill slots and REG buffers
        items.append(("and_rm64_imm8", XReg("rsp"), XImm(-FRAME_ALIGN)))
    # else: no slot is addressed off rsp, and the pushes leave rsp where the pops want it, so
    # neither the frame nor the epilogue's rsp restore is needed (tiny kernels pay them per call)
    OP, RET, LABELS = Kind.OP, Kind.RET, (Kind.LABEL, Kind.LOOP_BEGIN)   # (bound once)
    for k, inst in enumerate(fn.insts):
        kind = inst.kind
        if kind is OP and inst.op not in COPY_FORMS:
            # (the common case first)
            if memo is None:
                items.append(_flat(encode_operands(inst)))
            else:
                item = memo.get(id(inst))
                if item is None:
                    item = memo[id(inst)] = _flat(encode_operands(inst))
                items.append(item)
        elif kind in LABELS:
            if k in inner:
                items.append(("align", LOOP_ALIGN))
            items.append(("label", inst.label()))
        elif kind is RET:
            if frame:
                items.append(("lea_r64_m", XReg("rsp"),
                              XMem(0, "rbp", None, 1, -8 * len(saved))))
            for p in reversed(saved):
                items.append(("pop_r64", XReg(p.name)))
            if not leaf:
                items.append(("pop_r64", XReg("rbp")))
            if upper:
                items.append(("vzeroupper",))  # no AVX→SSE transition stalls in the caller
            items.append(("ret",))
        elif _is_self_move(inst):
            continue
        else:
            items.append(_flat(encode_operands(inst)))
    return items, saved, frame


def _reads_rbp(fn: MFunction) -> bool:
    """Whether an instruction of fn names rbp (a stack argument read at [rbp + 16 + 8k]): as a
    register it reads or writes, or a memory operand's base or index (MInst.uses/defs)."""
    # (each operand looked at in place: uses() and defs() built two lists per instruction,
    # 0.4% of a compile)
    for inst in fn.insts:
        for o in inst.operands:
            if isinstance(o, RegOp):
                r = o.reg
                if isinstance(r, PReg) and r.name == "rbp" and (o.is_use or o.is_def):
                    return True
            elif isinstance(o, Mem):
                for r in (o.base, o.index):
                    if isinstance(r, PReg) and r.name == "rbp":
                        return True
    return False


def _dirties_upper(fn: MFunction) -> bool:
    """Whether fn may leave a vector register's bits above 128 dirty: an operand of a ymm or
    zmm kind, or xmm16-31 (EVEX), or a form this does not know."""
    for inst in fn.insts:
        if inst.kind is not Kind.OP or inst.op == "vzero":     # vzero: VXORPS xmm (VEX)
            continue
        row = FORMS.get(inst.op)
        if row is None:
            return True
        for spec, o in zip(row.operands, inst.operands):
            if not isinstance(o, RegOp):
                continue
            k = KINDS[spec.kind]
            if k.cls == "vec" and (k.reg_size or 0) > 16:
                return True
            r = o.reg
            if isinstance(r, PReg) and r.cls == "vec" and int(r.name[3:]) >= 16:
                return True
    return False


def probed_frame(frame: int) -> list[tuple]:
    """The prologue's items that lower rsp by frame bytes (a multiple of FRAME_ALIGN, more than
    a page) to a FRAME_ALIGN boundary, touching every page on the way: aligned first (within
    the page the pushes just wrote), then whole pages in a loop that stops at r11 (free at
    entry: SysV §3.2.3 passes no argument in it), then the rest, under a page, which the body
    reaches no further than the page below the last one touched."""
    pages, rest = divmod(frame, PAGE)
    items: list[tuple] = [("and_rm64_imm8", XReg("rsp"), XImm(-FRAME_ALIGN)),
                          ("lea_r64_m", XReg("r11"), XMem(0, "rsp", None, 1, -pages * PAGE)),
                          ("label", PROBE_LABEL),
                          (imm_form("sub", "64", PAGE), XReg("rsp"), XImm(PAGE)),
                          ("or_rm64_imm8", XMem(8, "rsp", None, 1, 0), XImm(0)),
                          ("cmp_rm64_r64", XReg("rsp"), XReg("r11")),
                          ("jne_rel8", XLabel(PROBE_LABEL))]
    if rest:
        items.append((imm_form("sub", "64", rest), XReg("rsp"), XImm(rest)))
    return items


def assemble(fn: MFunction, locals_bytes: int) -> EncodedKernel:
    """Prologue, the allocated body, epilogue → bytes (branches relaxed by the assembler)."""
    items, saved, frame = machine_code(fn, locals_bytes)
    return assemble_items(fn.name, items, frame, saved)


def assemble_items(name: str, items: list[tuple], frame: int, saved: list) -> EncodedKernel:
    """Machine-code items (labels, alignments, instructions) → the kernel's bytes."""
    asm = Assembler()
    for it in items:
        if it[0] == "label":
            asm.label(it[1])
        elif it[0] == "align":
            asm.align(it[1])
        else:
            asm.emit(*it)
    code, fixups = asm.finish()
    return EncodedKernel(name, code, fixups, frame, saved, items,
                         max(FUNC_ALIGN, asm.max_align))


def _flat(x: tuple[str, tuple]) -> tuple:
    return (x[0], *x[1])


# Register-to-register copies that change nothing when source and destination coincide.
# (Not mov r32, r32: that one zero-extends, and the selector uses it to.)
COPY_FORMS = frozenset({"mov_r64_rm64", "vmovaps_x_xm", "vmovaps_y_ym", "vmovaps_z_zm"})


def _is_self_move(inst: Inst) -> bool:
    """A copy of a register onto itself (after allocation): nothing to emit."""
    if inst.op not in COPY_FORMS or len(inst.operands) != 2:
        return False
    a, b = inst.operands
    return isinstance(a, RegOp) and isinstance(b, RegOp) and a.reg == b.reg
