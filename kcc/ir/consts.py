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

from typing import Any

import numpy as np

from kcc.ir import numerics as nm
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp


def literal_value(v: int | float | bool, dt: DType) -> int | float | bool:
    """Literal v committed to dtype dt by the CAST rules of docs/semantics.md.

    A float result is a Python float holding the dtype's value exactly (float16 and bfloat16
    values are exact in float64); an int literal is never rounded through float64 first."""
    if isinstance(v, bool) or dt.is_bool:
        return bool(v) if dt.is_bool else int(v)
    src = dtypes.weakint if isinstance(v, int) else dtypes.weakfloat
    return _convert(v, src, dt)


def _convert(v: int | float | bool, src: DType, dt: DType) -> int | float | bool:
    """Value v of dtype src (weak or strong) converted to dt, as the interpreter does it."""
    if src == dt:
        return v
    with np.errstate(all="ignore"):      # overflow to inf is the defined result here
        c = nm.cast(nm.const_array(v, src), src, dt)
    if dt.is_bool:
        return bool(c)
    if dt == dtypes.bfloat16:
        return float(nm.bf16_to_f32(c))
    return float(c) if dt.is_float else int(c)


def const_value(u: UOp) -> tuple[Any, DType] | None:
    """(value, dtype) of a scalar constant node (CONST or a CAST chain over one), else None."""
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


def is_const(u: UOp) -> bool:
    """Whether u is a scalar constant node (CONST or a CAST chain over one)."""
    return const_value(u) is not None
