"""Arg values of the .uop parser (kcc.frontend.parser): the parsed value type, the forms
each op's arg takes (for error messages), literal range checks against a dtype, and one
converter per ParamArg / KernelInfo field. Errors are raised through the ``err(col, msg)``
callable the parser passes in, so every message keeps its line and column."""

from __future__ import annotations

import math

from kcc.frontend.lexer import Token, _clip
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# IEEE formats as (significand bits p, emax): a finite value of magnitude at least
# (2 - 2**-p) * 2**emax rounds to infinity under round-to-nearest-even (IEEE 754-2019 §4.3.1).
_FLOAT_FORMAT: dict[str, tuple[int, int]] = {
    "float16": (11, 15), "bfloat16": (8, 127), "float32": (24, 127), "float64": (53, 1023),
}
_INT64 = dtypes.int64


class Val:
    """A parsed arg value with its column; kind: int float bool str dtype name none tuple ctor."""

    __slots__ = ("kind", "v", "col")

    def __init__(self, kind: str, v: Any, col: int):
        self.kind, self.v, self.col = kind, v, col


ARG_FORM: dict[Ops, str] = {
    Ops.PARAM: "ParamArg(slot, dtype, size, …)",
    Ops.BUFFER: "ParamArg(slot, dtype, size, addrspace=LOCAL or REG)",
    Ops.CONST: "a literal",
    Ops.SPECIAL: 'a name, e.g. "gidx0"',
    Ops.RANGE: "(axis_id, AxisType), with any number of integer axis ids before the AxisType, "
               "e.g. (0, LOOP) or (4, 0, 0, WEAK)",
    Ops.CAST: "a dtype", Ops.BITCAST: "a dtype",
    Ops.WMMA: '((N, M, K), dtype_in, device, threads, None), e.g. '
              '((8, 16, 16), float16, "CUDA", 32, None)',
    Ops.SINK: 'KernelInfo(name="…")',
}


def describe(tok: Token) -> str:
    if tok.kind == "eol":
        return "the end of the line"
    return repr(tok.text if len(tok.text) <= 24 else tok.text[:24] + "...")


def word(v: Val) -> str:
    return v.v.name if isinstance(v.v, DType) else str(v.v)


def _float_limit(dt: DType) -> int:
    """The smallest magnitude that rounds to infinity in dt (an exact integer)."""
    p, emax = _FLOAT_FORMAT[dt.name]
    return ((1 << (p + 1)) - 1) << (emax - p)


def out_of_range(v: int | float, dt: DType) -> str | None:
    """Why literal v cannot be a value of dt, or None if it can."""
    if isinstance(v, bool) or dt.is_bool:
        return None
    if dt.kind == "weakint":
        dt = _INT64          # weak index arithmetic is at most int64 after lowering
    if dt.kind == "weakfloat":
        dt = dtypes.float64
    if dt.is_float:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if abs(v) >= _float_limit(dt):
            return f"constant {v!r} is out of range for {dt.name} (it rounds to infinity)"
        return None
    if isinstance(v, float):
        if not math.isfinite(v):
            return f"constant {v!r} has no {dt.name} value"
        v = math.trunc(v)
    if not dt.min() <= v <= dt.max():
        return f"constant {v} is out of range for {dt.name} [{dt.min()}, {dt.max()}]"
    return None


def _conv_int(v: Val, err: Any, what: str, allow_none: bool = False) -> int | None:
    if allow_none and v.kind == "none":
        return None
    if v.kind != "int":
        raise err(v.col, f"ParamArg {what} is an integer")
    return v.v


def _conv_dtype(v: Val, err: Any) -> DType:
    if v.kind == "dtype" and not v.v.is_weak:
        return v.v
    if v.kind == "name":
        raise err(v.col, f"unknown dtype {_clip(v.v)!r}")
    raise err(v.col, "ParamArg dtype is a strong dtype, e.g. float32")


def _conv_pair(v: Val, err: Any) -> tuple | None:
    if v.kind == "none":
        return None
    if v.kind != "tuple" or len(v.v) != 2 or any(x.kind not in ("int", "float", "bool")
                                                  for x in v.v):
        raise err(v.col, "vmin_vmax is a pair of numbers (vmin, vmax)")
    return (v.v[0].v, v.v[1].v)


def _conv_str(v: Val, err: Any, what: str) -> str | None:
    if v.kind == "none" and what != "KernelInfo name":
        return None
    if v.kind != "str":
        raise err(v.col, f"{what} is a string")
    return v.v


def _conv_addrspace(v: Val, err: Any) -> AddrSpace:
    if v.kind != "name" or v.v not in AddrSpace.__members__:
        raise err(v.col, "addrspace is one of " + ", ".join(AddrSpace.__members__))
    return AddrSpace[v.v]


def _conv_bool(v: Val, err: Any) -> bool:
    if v.kind != "bool":
        raise err(v.col, "volatile is true or false")
    return v.v


# One converter per constructor field name (ParamArg's and KernelInfo's fields are disjoint
# except `name`, which is a string in both; KernelInfo's is required by its dataclass).
FIELD_CONVERT: dict[str, Any] = {
    "slot": lambda v, err: _conv_int(v, err, "slot"),
    "dtype": _conv_dtype,
    "size": lambda v, err: _conv_int(v, err, "size", allow_none=True),
    "vmin_vmax": _conv_pair,
    "name": lambda v, err: _conv_str(v, err, "a name"),
    "addrspace": _conv_addrspace,
    "volatile": _conv_bool,
}
