"""Loops that end on a strength-reduced sum's counter (after dead-code elimination, before
loop-invariant code motion).

Selection counts every loop with a counter of its own (`add i, 1; cmp i, B; jl head`) and
keeps each sum `r*step` the body reads as a counter too (kcc/isel/x86/analysis.py
`induction_sums`: `add n, step` at the loop's end). Once dead-code elimination has removed
the address arithmetic that the memory operands folded, the loop counter is often read by
nothing but its own step and compare (u64_div's E_50, i32_minmax's E_64_4): then the loop
tests `cmp n, B*step` instead, and the counter's MOV and ADD go, one instruction an
iteration. Exact: n starts at 0 and adds step > 0 once an iteration, in the same
straight-line run as the back edge (so each time the compare runs), and B*step < 2^31, so n
never wraps and is below B*step exactly when i is below B.
"""

from __future__ import annotations

from kcc.ir.mir import Imm, Inst, Kind, MFunction, RegOp
from kcc.isel.x86.base import imm_form

_INIT = ("mov_r32_imm32", "mov_rm64_imm32")


def step_form(width: str, step: int) -> str:
    """The ADD of a loop's step to a counter that stays in [0, 2^31): 64-bit at any width."""
    # exact: the counter's upper half is zero before and after. Measured on the x86 host
    # (Sapphire Rapids class): u64_div's E_50 runs ~10% faster stepping its index with
    # `add rcx, 5` than with `add ecx, 5` (a loop-carried 32-bit ADD that, unlike the 64-bit
    # one, the core apparently cannot complete at rename)
    return imm_form("add", "64" if width == "32" else width, step)


def _sole(inst: Inst, op_prefix: str) -> tuple[object, int] | None:
    """(register, immediate) when inst is `OP reg, imm` of a form starting op_prefix."""
    ops = inst.operands
    if inst.kind is not Kind.OP or not inst.op.startswith(op_prefix) or len(ops) != 2 \
            or not isinstance(ops[0], RegOp) or not isinstance(ops[1], Imm) or inst.clobbers:
        return None
    return ops[0].reg, int(ops[1].value)


def exit_on_sums(fn: MFunction) -> int:
    """Rewrite each loop the module's rule allows, in place; returns how many."""
    insts = fn.insts
    # every instruction touching each register (index list), asked once
    touch: dict[object, list[int]] = {}
    for k, inst in enumerate(insts):
        for o in inst.operands:
            if isinstance(o, RegOp):
                touch.setdefault(o.reg, []).append(k)
            elif hasattr(o, "base"):
                for r in (o.base, o.index):
                    if r is not None:
                        touch.setdefault(r, []).append(k)
    drop: set[int] = set()
    done = 0
    for e, end in enumerate(insts):
        if end.kind is not Kind.LOOP_END or e < 3:
            continue
        cmp, add = _sole(insts[e - 1], "cmp_rm"), _sole(insts[e - 2], "add_rm")
        if cmp is None or add is None or cmp[0] is not add[0] or add[1] != 1 or cmp[1] <= 0:
            continue
        i, bound = cmp
        head = _head(insts, e)
        uses = touch.get(i, [])
        if head is None or len(uses) != 3 or uses[1:] != [e - 2, e - 1] \
                or _sole(insts[uses[0]], "mov_") is None or insts[uses[0]].op not in _INIT \
                or _sole(insts[uses[0]], "mov_")[1] != 0 or uses[0] > head:
            continue
        # the sum: `add n, step` in the same run just before, n set to 0 before the loop
        # and written nowhere else
        k = e - 3
        while k > head and insts[k].kind is Kind.OP and insts[k].op.startswith("add_rm"):
            s = _sole(insts[k], "add_rm")
            n_uses = touch.get(s[0], []) if s is not None else []
            if s is not None and s[1] > 0 and bound * s[1] < 2 ** 31 \
                    and _only_write(insts, n_uses, k, head):
                n, step = s
                width = insts[k].op.split("_")[1][2:]           # add_rm32_imm8 → "32"
                limit = bound * step
                insts[e - 1] = Inst(imm_form("cmp", width, limit), [RegOp(n), Imm(limit)])
                # n never leaves [0, limit), limit < 2^31
                insts[k] = Inst(step_form(width, step), insts[k].operands)
                drop.update((uses[0], e - 2))
                done += 1
                break
            k -= 1
    if drop:
        fn.insts[:] = [x for j, x in enumerate(insts) if j not in drop]
    return done


def _head(insts: list[Inst], e: int) -> int | None:
    """The index of the LOOP_BEGIN label the back edge at e jumps to."""
    target = insts[e].label()
    for k in range(e - 1, -1, -1):
        if insts[k].kind is Kind.LOOP_BEGIN and insts[k].label() == target:
            return k
    return None


def _only_write(insts: list[Inst], uses: list[int], k: int, head: int) -> bool:
    """Is insts[k] the register's one write after its zeroing before the loop head (every
    other instruction touching it only reads it)?"""
    n = insts[k].operands[0].reg
    init = [j for j in uses if j < head]
    if len(init) != 1 or insts[init[0]].op not in _INIT or _sole(insts[init[0]], "mov_") is None \
            or _sole(insts[init[0]], "mov_")[1] != 0:
        return False
    for j in uses:
        if j in (k, init[0]):
            continue
        if any(isinstance(o, RegOp) and o.reg is n and o.is_def for o in insts[j].operands):
            return False
    return True
