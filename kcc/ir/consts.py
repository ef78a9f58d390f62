"""The constant value of a node: the one notion every layer uses.

A constant is a literal `CONST v` (weak, or a bool) or a CAST chain over one: `CAST(4) int32`,
the format's strong constant, or `CAST(CAST(-1) int64) uint32`. Its value is what the CASTs
compute by docs/semantics.md, exactly as the reference interpreter computes it
(kcc.ir.numerics): integers wrap to the dtype's width, a float saturates into an integer dtype
(NaN → 0), a float dtype gets the value rounded once (±inf beyond its range).

The verifier, the rule table (SHRINK lengths, lane indices, SPECIAL bounds), the passes, the
interpreter and the back ends ask `const_value` / `const_int` rather than reading `CONST.arg`,
so a strong constant is a constant wherever the format asks for one.
"""

from __future__ import annotations

import math
import _struct as struct  # struct's own C functions, without struct.py (start-up)

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UNKNOWN, UOp, _set_const

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def literal_value(v: int | float | bool, dt: DType) -> int | float | bool:
    """Literal v committed to dtype dt by the CAST rules of docs/semantics.md.

    A float result is a Python float holding the dtype's value exactly (float16 and bfloat16
    values are exact in float64); an int literal is never rounded through float64 first."""
    if isinstance(v, bool) or dt.is_bool:
        return bool(v) if dt.is_bool else int(v)
    src = dtypes.weakint if isinstance(v, int) else dtypes.weakfloat
    return _convert(v, src, dt)


def _wrap(v: int, dt: DType) -> int:
    """Integer v modulo 2**bits in integer dtype dt's range (weakint: 64 bits, signed)."""
    bits = 64 if dt.is_weak else dt.bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if dt.is_signed and v >> (bits - 1) else v


_QUIET64 = 1 << 51              # float64's quiet-NaN bit (the fraction's top bit)
_LOW29 = (1 << 29) - 1          # the fraction bits float32 does not have


def round_float(v: float, dt: DType) -> float | None:
    """Python float v rounded once (to nearest even) to float32/float64 dt, ±inf past its
    range, without numpy; None for another dtype, a NaN, or a value Python's struct cannot
    round (the caller then asks kcc.ir.numerics). tests/cli/test_startup.py checks it agrees.

    A quiet NaN whose payload float32 holds (its low 29 fraction bits zero, as the NaN every
    transcendental decomposition folds) is its own float32 value: a conversion keeps a quiet
    NaN's sign and top payload bits (IEEE 754 §6.2.3), so nothing changes; another NaN goes to
    kcc.ir.numerics (numpy: the first such fold in a process imports it, ~90 ms)."""
    if dt == dtypes.float64 or (dt == dtypes.float32 and math.isinf(v)):
        return v
    if dt != dtypes.float32:
        return None
    if math.isnan(v):
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        return v if bits & _QUIET64 and not bits & _LOW29 else None
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:           # rounds past float32's largest value: numpy gives inf
        return None


def round_half(v: float) -> float | None:
    """Python float v rounded once to float16 (to nearest even; ±inf stays), as numpy's
    conversions to float16 give it, without numpy (whose import, ~90 ms, was most of the first
    compile of a kernel with a half constant: tinygrad's `CAST(64.0) float16`); None for a NaN
    (numpy keeps its payload bits) or a value that rounds past float16's range (numpy: ±inf).
    struct's "e" format rounds half to even (Python's struct documentation);
    tests/ir/test_consts_half.py compares the two."""
    if math.isnan(v):
        return None
    try:
        return struct.unpack("<e", struct.pack("<e", v))[0]
    except OverflowError:
        return None


def _convert(v: int | float | bool, src: DType, dt: DType) -> int | float | bool:
    """Value v of dtype src (weak or strong) converted to dt, as the interpreter does it."""
    if src == dt:
        return v
    if (src.is_int or src.is_bool) and (dt.is_int or dt.is_bool) and isinstance(v, int):
        # integers and bools: the interpreter's casts keep the low bits (bool: != 0), which
        # Python's integers compute without numpy (kcc's start-up imports no numpy for it;
        # tests/cli/test_startup.py checks this against kcc.ir.numerics)
        x = int(v) if src.is_bool else _wrap(v, src)
        return x != 0 if dt.is_bool else _wrap(x, dt)
    if dt.is_float and not isinstance(v, bool) and (
            (src.is_float and src != dtypes.bfloat16) or (src.is_int and abs(v) <= 1 << 53)):
        r = round_float(float(v), dt)      # every such value is exact in float64 first
        if r is None and dt == dtypes.float16:
            r = round_half(float(v))       # (an int past 2**24 rounds past float16's range)
        if r is not None:
            return r
    import numpy as np

    from kcc.ir import numerics as nm
    with np.errstate(all="ignore"):      # overflow to inf is the defined result here
        c = nm.cast(nm.const_array(v, src), src, dt)
    if dt.is_bool:
        return bool(c)
    if dt == dtypes.bfloat16:
        return float(nm.bf16_to_f32(c))
    return float(c) if dt.is_float else int(c)


def strong_int(v: int, dt: DType) -> UOp:
    """The integer constant v in dtype dt as the format writes a strong constant (CAST(v) dt;
    a weak dt: the plain literal)."""
    return UOp(Ops.CAST, (UOp.const(v),), dt) if not dt.is_weak else UOp.const(v)


def plus_int(x: UOp, c: int) -> UOp:
    """x + c with c a constant of x's dtype (strong_int), or x itself for c = 0: the form an
    address folds into its displacement."""
    return UOp(Ops.ADD, (x, strong_int(c, x.dtype))) if c else x


def const_value(u: UOp) -> tuple[Any, DType] | None:
    """(value, dtype) of a scalar constant node (CONST or a CAST chain over one), else None.
    Computed once per node (nodes are immutable): every pass asks it of the same nodes."""
    cv = u._const
    if cv is UNKNOWN:
        cv = _const_value(u)
        _set_const(u, cv)                # (the slot's own setter: no name lookup)
    return cv


def _const_value(u: UOp) -> tuple[Any, DType] | None:
    chain: list[UOp] = []
    while u.op is Ops.CAST and u.shape == ():
        chain.append(u)
        u = u.src[0]
    if u.op is not Ops.CONST:
        return None
    v: Any = u.arg
    dt = dtypes.bool if isinstance(v, bool) else u.dtype
    for c in reversed(chain):
        v = _convert(v, dt, c.arg)
        dt = c.arg
    return v, dt


def const_int(u: UOp) -> int | None:
    """The value of an integer constant node (weakint or a strong integer dtype), else None."""
    cv = const_value(u)
    if cv is None or not cv[1].is_int:
        return None
    return int(cv[0])


def peel_offset(idx: UOp) -> tuple[UOp | None, int]:
    """idx as (base, k) with idx = base + k, every constant addend of a left-leaning ADD chain
    peeled (`((x + 4) + 512)` is (x, 516): unroll-and-jam moves each copy's constant outward);
    base is None when idx is a constant."""
    k = 0
    while True:
        c = const_int(idx)
        if c is not None:
            return None, k + c
        if idx.op is not Ops.ADD or (c := const_int(idx.src[1])) is None:
            return idx, k
        k += c
        idx = idx.src[0]


def is_const(u: UOp) -> bool:
    """Whether u is a scalar constant node (CONST or a CAST chain over one)."""
    return const_value(u) is not None
