"""Emulator semantics of gfx942's packed-f32 VOP3P ops (CDNA3 ISA §13 VOP3P opcodes
V_PK_FMA_F32, V_PK_MUL_F32, V_PK_ADD_F32, V_PK_MOV_B32).

A 64-bit operand holds two float32 elements: bits [31:0] and [63:32]. Each op computes two
lanes: the low result (D[31:0]) reads, from source i, the half that OP_SEL[i] picks (0: low,
1: high) and the high result (D[63:32]) the half that OP_SEL_HI[i] picks (default all ones:
low from low, high from high). NEG_LO[i] / NEG_HI[i] negate source i's element of the
low / high result. Each lane rounds once (V_PK_FMA_F32 is fused per lane); CLAMP clamps a
lane to [0, 1]. V_PK_MOV_B32 takes D[31:0] from S0's OP_SEL[0] half and D[63:32] from S1's
OP_SEL[1] half (LLVM writes ``op_sel:[0,1]`` for a plain 64-bit move); it has no negation.

An inline constant is a 32-bit value in the low half; what its high half holds is not
emulated (LLVM sets OP_SEL_HI to 0 for constant sources so that both lanes read the low
half), so reading it raises.
"""

from __future__ import annotations

import numpy as np

from kcc.encode.amd.operands import SGPR, VGPR, Inst, Special
from kcc.targets.amd.emu.core import Wave, Workgroup
from kcc.targets.amd.emu.valu import OPS, _bits, _output_mods, fma_odd

_NSRC = {"v_pk_fma_f32": 3, "v_pk_mul_f32": 2, "v_pk_add_f32": 2, "v_pk_mov_b32": 2}


def _sel(inst: Inst, key: str, n: int, default: int) -> tuple[int, ...]:
    v = inst.mod(key)
    return tuple(int(b) for b in v) if v else (default,) * n  # type: ignore[union-attr]


def _halves(w: Wave, inst: Inst, i: int, picks: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Source i's two 32-bit halves as uint32 per lane; raises if a constant's high half
    is read (module docstring)."""
    op = inst.ops[1 + i]
    if not isinstance(op, (VGPR, SGPR, Special)) and any(picks):
        raise w.error(f"{inst.name}: the high half of constant source {i} is not emulated")
    raw = w.vread(op, 64 if isinstance(op, (VGPR, SGPR, Special)) else 32)
    raw = raw.astype(np.uint64)
    return ((raw & np.uint64(0xFFFFFFFF)).astype(np.uint32),
            (raw >> np.uint64(32)).astype(np.uint32))


def _pk(w: Wave, inst: Inst, wg: Workgroup) -> None:
    name = inst.name
    n = _NSRC[name]
    sel, sel_hi = _sel(inst, "op_sel", n, 0), _sel(inst, "op_sel_hi", n, 1)
    neg = (_sel(inst, "neg_lo", n, 0), _sel(inst, "neg_hi", n, 0))
    lanes: list[list[np.ndarray]] = [[], []]         # per result half: its source elements
    for i in range(n):
        halves = _halves(w, inst, i, (sel[i], sel_hi[i]))
        for h, pick in enumerate((sel[i], sel_hi[i])):
            lanes[h].append(halves[pick])
    if name == "v_pk_mov_b32":
        if any(neg[0]) or any(neg[1]) or inst.mod("clamp"):
            raise w.error(f"{name}: neg/clamp are not defined for a move")
        lo, hi = lanes[0][0], lanes[1][1]
    else:
        out = []
        for h in range(2):
            s = [x.view(np.float32) for x in lanes[h]]
            s = [-x if neg[h][i] else x for i, x in enumerate(s)]
            with np.errstate(all="ignore"):
                if name == "v_pk_fma_f32":
                    r = fma_odd(s[0], s[1], s[2]).astype(np.float32)
                elif name == "v_pk_mul_f32":
                    r = s[0] * s[1]
                else:
                    r = s[0] + s[1]
                r = _output_mods(inst, np.asarray(r, np.float32), "f", w.ieee)
            out.append(_bits(r, "f", s))
        lo, hi = out
    w.vwrite(inst.ops[0], lo.astype(np.uint64) | hi.astype(np.uint64) << np.uint64(32), 64)


for _name in _NSRC:
    OPS[_name] = _pk
