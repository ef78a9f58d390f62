"""x86-64 registers and the System V calling convention, as the selector and target see them.

Registers are named by their 64-bit (GPR) or xmm (vector) name; the encoder picks the width
(`eax`, `ymm3`) from each form's operand kind.
"""

from __future__ import annotations

from kcc.encode.x86.table import FORMS, KINDS
from kcc.ir.dtype import DType
from kcc.ir.mir import PReg

GPR_NAMES = ("rax", "rcx", "rdx", "rbx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
             "r14", "r15")
RAX, RCX, RDX, RBX, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 = (
    PReg(n, "gpr") for n in GPR_NAMES)
RSP = PReg("rsp", "gpr")
RBP = PReg("rbp", "gpr")
XMM = tuple(PReg(f"xmm{i}", "vec") for i in range(16))
# xmm16-31 (and their ymm/zmm views): EVEX only, so allocated on x86-64-v4 alone, after
# xmm0-15; caller-saved like every vector register (§3.2.1).
XMM_HI = tuple(PReg(f"xmm{i}", "vec") for i in range(16, 32))
# AVX-512 opmask registers k1-k7 (x86-64-v4; k0 as a write mask means "no masking", so it is
# never allocated): compare results that a masked blend reads.
KMASK = tuple(PReg(f"k{i}", "mask") for i in range(1, 8))

_LOW_VEC = frozenset(XMM)
_WRITE_MASKS = frozenset(KMASK)


def vec_limits(form: str) -> tuple[frozenset[PReg] | None, ...]:
    """Per operand of ``form``: xmm0-15 for a vector operand of a VEX form with no EVEX twin
    (VEX cannot name registers 16-31, SDM Vol. 2 §2.3.5; kcc.encode.x86.table), k1-k7 for
    the opmask of a masked operation (EVEX.aaa = 0 means no masking, §2.7.1), else None."""
    if form == "vzero":
        form = "vxorps_x_x_xm"                 # what the encoder is given for it
    row = FORMS.get(form)
    if row is None:
        return ()
    low = row.enc != "evex" and row.evex_form is None
    return tuple(_LOW_VEC if low and KINDS[o.kind].cls == "vec" else
                 _WRITE_MASKS if o.slot == "aaa" else None for o in row.operands)


# System V AMD64 ABI §3.2.3: INTEGER class arguments in rdi, rsi, rdx, rcx, r8, r9; SSE class
# in xmm0–7; the rest on the stack, 8 bytes each, from [rsp + 8] at entry.
INT_ARG_REGS = (RDI, RSI, RDX, RCX, R8, R9)
FLOAT_ARG_REGS = XMM[:8]
# Callee-saved (§3.2.1): rbx, rbp, r12–r15. rbp is the frame pointer here, never allocated.
CALLEE_SAVED = frozenset({RBX, R12, R13, R14, R15})
# Allocation order: caller-saved first so callee-saved registers are only used under pressure.
GPR_ORDER = (RAX, RCX, RDX, RSI, RDI, R8, R9, R10, R11, RBX, R12, R13, R14, R15)


def reg_class(dt: DType) -> str:
    """The register class holding a value of dtype dt: floats in vector registers, the rest
    (bool, ints, and float16/bfloat16 bit patterns) in general-purpose registers."""
    return "vec" if dt.name in ("float32", "float64") else "gpr"


def c_type(dt: DType) -> str:
    """The C type of a scalar argument of dtype dt in the prototype kcc prints."""
    return {"bool": "_Bool", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t",
            "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t",
            "uint64": "uint64_t", "float16": "uint16_t", "bfloat16": "uint16_t",
            "float32": "float", "float64": "double"}[dt.name]
