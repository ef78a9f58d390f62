"""Zero tests that an arithmetic instruction's own flags already answer (after selection,
before dead-code elimination).

Selection tests a value against zero where a compare reads it (`x % 7 != 0`: SUB then
CMP x, 0 and SETNE), but the SUB, ADD, AND, OR, XOR or NEG that computed x set ZF and SF from
that very result (SDM Vol. 1 §3.4.3.1, and each instruction's "Flags Affected"). A
`cmp x, 0` or `test x, x` goes when the nearest earlier instruction writing flags is such an
op whose destination register is x at the same width, nothing in between writes x, and every
reader of the compare's flags (up to the next writer or the end of the straight-line run)
asks only ZF or SF (E, NE, S, NS): the compare also clears CF and OF, which those ops set
their own way, so readers of L, B, A, G and the like keep it.
"""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir.mir import Imm, Inst, Kind, MFunction, RegOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable

# ops whose ZF and SF are those of the result they write (not shifts: a count of 0 writes no
# flags; not IMUL: its ZF and SF are undefined)
_RESULT_FLAGS = frozenset({"add", "sub", "and", "or", "xor", "neg"})
_ZF_SF = frozenset({"e", "ne", "s", "ns"})
_READERS = ("set", "cmov", "j")
_OP = Kind.OP


def _width(form: str) -> str:
    """The first operand's width of a GPR form name (`sub_r64_rm64` → "64"), or ""."""
    parts = form.split("_")
    if len(parts) < 2:
        return ""
    spec = parts[1]
    return spec[2:] if spec.startswith("rm") else spec[1:] if spec.startswith("r") else ""


def zero_test_of(inst: Inst) -> object | None:
    """The register inst compares with zero (`cmp r, 0`, `test r, r`), else None."""
    ops = inst.operands
    mnem = FORMS[inst.op].mnemonic if inst.op in FORMS else ""
    if len(ops) != 2 or not isinstance(ops[0], RegOp) or ops[0].is_def:
        return None
    if mnem == "cmp" and isinstance(ops[1], Imm) and ops[1].value == 0:
        return ops[0].reg
    if mnem == "test" and isinstance(ops[1], RegOp) and ops[1].reg is ops[0].reg:
        return ops[0].reg
    return None


def result_flag_writer(inst: Inst) -> object | None:
    """The register whose value sets inst's ZF and SF (an ADD/SUB/AND/OR/XOR/NEG writing a
    register operand first), else None."""
    if inst.op not in FORMS or FORMS[inst.op].mnemonic not in _RESULT_FLAGS or inst.clobbers:
        return None
    first = inst.operands[0] if inst.operands else None
    return first.reg if isinstance(first, RegOp) and first.is_def and first.is_use else None


def reader_cc(inst: Inst) -> str | None:
    """The condition code a SETcc, CMOVcc or Jcc reads, else None."""
    mnem = FORMS[inst.op].mnemonic if inst.op in FORMS else inst.op.split("_")[0]
    for p in _READERS:
        if mnem.startswith(p):
            return mnem[len(p):]
    return None


def drop_zero_tests(fn: MFunction, flags_of: Callable[[Inst], str]) -> int:
    """Remove, in place, each zero test of the module's rule; returns how many went."""
    insts = fn.insts
    drop: set[int] = set()
    writer: Inst | None = None          # the nearest earlier flag writer in this run
    written: set = set()                # registers defined since it
    for i, inst in enumerate(insts):
        if inst.kind is not _OP:
            writer = None
            continue
        fl = flags_of(inst)
        if "w" in fl:
            r = zero_test_of(inst) if "r" not in fl else None
            if r is not None and writer is not None and r not in written \
                    and result_flag_writer(writer) is r \
                    and _width(writer.op) == _width(inst.op) and _zf_readers(insts, i, flags_of):
                drop.add(i)             # the writer's flags stay the current ones
                continue
            writer, written = inst, set()
        elif writer is not None:
            written.update(o.reg for o in inst.operands if isinstance(o, RegOp) and o.is_def)
    if drop:
        fn.insts[:] = [x for i, x in enumerate(insts) if i not in drop]
    return len(drop)


def _zf_readers(insts: list[Inst], i: int, flags_of: Callable[[Inst], str]) -> bool:
    """Do the readers of insts[i]'s flags, up to the next writer or the run's end, all ask
    only ZF or SF (and is there one)?"""
    seen = False
    for inst in insts[i + 1:]:
        if inst.kind is _OP:
            fl = flags_of(inst)
        elif inst.kind in (Kind.BRANCH, Kind.LOOP_END):
            fl = "r"
        else:
            return seen
        if "r" in fl:
            if reader_cc(inst) not in _ZF_SF:
                return False
            seen = True
        if "w" in fl or inst.kind is not _OP:
            return seen
    return seen
