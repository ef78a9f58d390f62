"""Fusion of the selected AMD function's integer adds (issue 25): ``v_lshl_add_u32``,
``v_add3_u32`` and ``v_add_lshl_u32``.

Address arithmetic computes ``(x << k) + y``, ``a + b + y`` and ``(a + b) << k`` as two VALU
instructions (an index times a power of two, a base or another index term added):

    v_lshlrev_b32 t, k, x       v_add_nc_u32 t, a, b       v_add_nc_u32  t, a, b
    v_add_nc_u32  d, t, y       v_add_nc_u32 d, t, y       v_lshlrev_b32 d, k, t

(CDNA3: v_add_u32; t either side of the add). Both arches have ``v_lshl_add_u32 d, x, k, y``
= (x << k[4:0]) + y, ``v_add3_u32 d, a, b, y`` = a + b + y and ``v_add_lshl_u32 d, a, b, k`` =
(a + b) << k[4:0] (mod 2^32), one VOP3 instruction each (RDNA3 ISA §15.10 / CDNA3 ISA §12.11,
VOP3A opcodes; LLVM selects them for the same patterns). A pair is fused when t has no other
reader, k is an immediate below 32 (an inline constant, no literal), nothing between the two
redefines a source, no label or branch comes between, and the fused instruction is legal: a
VOP3 reads at most 2 (RDNA3) or 1 (CDNA3) SGPRs and literals over the constant bus
(kcc/isel/amd/base.py ``legal_scalars``), and CDNA3's VOP3 holds no literal at all. The fused
instruction computes the same 32-bit value in the lanes of the second one's EXEC (the only
lanes where t is read), so the result is bit-identical; the first instruction goes.
"""

from __future__ import annotations

from typing import Any

from kcc.encode.amd.operands import Imm, Special
from kcc.ir.mir import Inst, Kind, MFunction, RegOp, Role, VReg
from kcc.isel.amd.base import literal32
from kcc.isel.amd.regs import Arch

_ADDS = ("v_add_nc_u32", "v_add_u32")
_CONTROL = (Kind.LABEL, Kind.LOOP_BEGIN, Kind.LOOP_END, Kind.JUMP, Kind.BRANCH)


def _operands(inst: Inst) -> list[Any] | None:
    """The instruction's operands in assembly order (a VReg, an immediate, a special
    register), or None where one is part of a tuple or the instruction has modifiers."""
    if not inst.arg or inst.arg[1]:
        return None
    out = []
    for t in inst.arg[0]:
        if isinstance(t, int):
            o = inst.operands[t]
            if not isinstance(o, RegOp) or not isinstance(o.reg, VReg):
                return None
            out.append(o.reg)
        elif isinstance(t, (Imm, Special)):
            out.append(t)
        else:
            return None
    return out


def _bus(ops: list[Any]) -> tuple[int, bool]:
    """How many distinct constant-bus values (SGPRs, special registers, literals) the
    sources read, and whether one is a literal."""
    seen: set[Any] = set()
    lit = False
    for o in ops:
        if isinstance(o, VReg) and o.cls.startswith("s"):
            seen.add(id(o))
        elif isinstance(o, Special):
            seen.add(o.name)
        elif isinstance(o, Imm) and literal32(o) is not None:
            seen.add(("lit", o.value))
            lit = True
    return len(seen), lit


def fuse_shift_add(fn: MFunction, arch: Arch) -> None:
    """Fuse ``v_lshlrev_b32`` + ``v_add``, ``v_add`` + ``v_add`` and ``v_add`` +
    ``v_lshlrev_b32`` pairs of ``fn`` into ``v_lshl_add_u32``, ``v_add3_u32`` and
    ``v_add_lshl_u32``, in place."""
    insts = fn.insts
    uses: dict[int, int] = {}
    for inst in insts:
        for o in inst.operands:
            if isinstance(o, RegOp) and o.role & Role.USE and isinstance(o.reg, VReg):
                uses[id(o.reg)] = uses.get(id(o.reg), 0) + 1
    limit = 2 if arch.family == "rdna3" else 1
    # id(t) -> (index, fused name, the sources before y): what defined t, still fusable
    made: dict[int, tuple[int, str, list[Any]]] = {}
    gone: set[int] = set()
    for i, inst in enumerate(insts):
        if inst.kind in _CONTROL:
            made.clear()
            continue
        ops = _operands(inst) if inst.kind is Kind.OP else None
        plain = ops is not None and len(ops) == 3 and inst.operands[0].role is Role.DEF
        if plain and inst.op in _ADDS:
            assert ops is not None
            d, a, b = ops
            for t, y in ((a, b), (b, a)):
                got = made.get(id(t)) if isinstance(t, VReg) else None
                if got is None or uses.get(id(t)) != 1 or y is t:
                    continue
                j, name, srcs = got
                n, lit = _bus([*srcs, y])
                if n > limit or (lit and arch.family == "cdna3"):
                    continue
                insts[i] = _inst(name, d, [*srcs, y])
                gone.add(j)
                del made[id(t)]
                break
        if plain and inst.op == "v_lshlrev_b32" and isinstance(ops[1], Imm) and \
                0 <= ops[1].value < 32 and isinstance(ops[2], VReg):
            assert ops is not None
            got = made.get(id(ops[2]))
            if got is not None and got[1] == "v_add3_u32" and uses.get(id(ops[2])) == 1:
                j, _, srcs = got
                n, lit = _bus(srcs)
                if n <= limit and not (lit and arch.family == "cdna3"):
                    insts[i] = _inst("v_add_lshl_u32", ops[0], [*srcs, ops[1]])
                    gone.add(j)
                    del made[id(ops[2])]
        # a redefinition ends what the candidates read or wrote
        for o in inst.operands:
            if isinstance(o, RegOp) and o.role & Role.DEF and isinstance(o.reg, VReg):
                r = o.reg
                made.pop(id(r), None)
                for key in [key for key, v in made.items() if any(x is r for x in v[2])]:
                    del made[key]
        if plain and ops is not None and insts[i] is inst:
            if inst.op == "v_lshlrev_b32" and isinstance(ops[1], Imm) and \
                    0 <= ops[1].value < 32 and isinstance(ops[2], VReg):
                made[id(ops[0])] = (i, "v_lshl_add_u32", [ops[2], ops[1]])
            elif inst.op in _ADDS:
                made[id(ops[0])] = (i, "v_add3_u32", [ops[1], ops[2]])
    if gone:
        fn.insts = [inst for j, inst in enumerate(insts) if j not in gone]


def _inst(name: str, d: VReg, srcs: list[Any]) -> Inst:
    """``name d, srcs…`` as a selected instruction (kcc/isel/amd/base.py's template)."""
    tmpl: list[Any] = [0]
    regs: list[RegOp] = [RegOp(d, Role.DEF)]
    for o in srcs:
        if isinstance(o, VReg):
            regs.append(RegOp(o, Role.USE))
            tmpl.append(len(regs) - 1)
        else:
            tmpl.append(o)
    return Inst(name, regs, kind=Kind.OP, arg=(tuple(tmpl), ()))
