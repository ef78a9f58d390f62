"""Launch dimensions that depend on scalar arguments (symbolic sizes), in the manifest.

A SPECIAL bound is an integer constant, or an integer expression of scalar integer PARAMs (a
tinygrad `Variable`, e.g. a sequence length). The manifest records each launch dimension as
an integer, or as that expression written as a JSON tree (docs/manifest.md, "Symbolic launch
dimensions"); a loader evaluates it per launch from the scalar arguments it is given:

- an integer: a constant;
- `{"arg": slot, "name": …}`: the value of scalar argument `slot` (`name` is informational);
- `{"op": OP, "dtype": D, "src": [tree, …]}`: OP applied to the values of its srcs, the result
  taken in dtype D as the reference interpreter computes it (integers wrap to D's width, CDIV
  and CMOD truncate toward zero, comparisons give 0 or 1, `weakint` is 64-bit).

Ops are those `LAUNCH_OPS` (kcc.ir.verify) lists. A dimension that evaluates below 0 or
above MAX_DIM, a division by zero or a shift amount outside [0, bits) is a LaunchError; a
dimension of 0 launches nothing.
"""

from __future__ import annotations

from kcc.ir import Ops, UOp, dtypes, toposort
from kcc.ir.consts import const_int, const_value
from kcc.ir.dtype import DType
from kcc.ir.verify import LAUNCH_OPS
from kcc.ir.limits import MAX_DIM          # a launch dimension (CUDA's gridDim.x limit)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_BY_NAME = {op.name: op for op in LAUNCH_OPS}


class DimError(Exception):
    """A launch dimension that cannot be evaluated for these arguments."""


# -- graph → JSON ------------------------------------------------------------------------------

def dim_json(bound: UOp) -> int | dict[str, Any]:
    """A SPECIAL bound as the manifest writes it: an int, or the expression's JSON tree."""
    c = const_int(bound)
    if c is not None:
        return c
    memo: dict[UOp, Any] = {}
    for u in toposort([bound]):
        cv = const_value(u)
        if cv is not None:
            memo[u] = int(cv[0])
        elif u.op is Ops.PARAM:
            memo[u] = {"arg": u.arg.slot, **({"name": u.arg.name} if u.arg.name else {})}
        else:
            memo[u] = {"op": u.op.name, "dtype": u.dtype.name, "src": [memo[s] for s in u.src]}
    return memo[bound]


def is_symbolic(dims: list[Any]) -> bool:
    """Whether some dimension of a manifest's list is an expression."""
    return any(isinstance(d, dict) for d in dims)


# -- JSON → value --------------------------------------------------------------------------------

def check_dim(d: Any, nargs: int, depth: int = 0) -> str | None:
    """Why a manifest dimension is malformed (None when it is well formed)."""
    if depth > 64:
        return "a launch expression nested more than 64 levels deep"
    if isinstance(d, bool):
        return "a launch dimension is an integer or an expression, not a bool"
    if isinstance(d, int):
        return None if 1 <= d <= MAX_DIM else f"a constant launch dimension is in [1, {MAX_DIM}]"
    if not isinstance(d, dict):
        return "a launch dimension is an integer or an expression object"
    if "arg" in d:
        a = d["arg"]
        ok = isinstance(a, int) and not isinstance(a, bool) and 0 <= a < nargs
        return None if ok else f"'arg' {a!r} is not an argument slot"
    op, dt, src = d.get("op"), d.get("dtype"), d.get("src")
    if op not in _BY_NAME:
        return f"unknown launch-expression op {op!r}"
    t = dtypes.by_name(dt) if isinstance(dt, str) else None
    if t is None or not (t.is_int or t.is_bool):
        return f"launch-expression dtype {dt!r} is not an integer dtype"
    want = {Ops.NEG: 1, Ops.CAST: 1, Ops.WHERE: 3}.get(_BY_NAME[op], 2)
    if not isinstance(src, list) or len(src) != want:
        return f"{op} takes {want} src"
    for s in src:
        if (why := check_dim(s, nargs, depth + 1)) is not None:
            return why
    return None


def eval_dim(d: Any, values: list[Any]) -> int:
    """The value of a manifest dimension for the launch's arguments (slot order)."""
    if isinstance(d, int):
        return d
    if "arg" in d:
        v = values[d["arg"]]
        if getattr(v, "ndim", 0) != 0:
            raise DimError(f"a launch dimension reads argument {d['arg']}, which is a buffer")
        return int(v)
    op, dt = _BY_NAME[d["op"]], dtypes.by_name(d["dtype"])
    a = [eval_dim(s, values) for s in d["src"]]
    return _wrap(_apply(op, a, dt), dt)


def _apply(op: Ops, a: list[int], dt: DType) -> int:
    if op is Ops.CAST:
        return int(a[0] != 0) if dt.is_bool else a[0]
    if op is Ops.NEG:
        return -a[0]
    if op is Ops.WHERE:
        return a[1] if a[0] else a[2]
    x, y = a
    if op in (Ops.CDIV, Ops.CMOD):
        if y == 0:
            raise DimError("a launch dimension divides by zero for these arguments")
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        return q if op is Ops.CDIV else x - q * y
    if op in (Ops.SHL, Ops.SHR):
        bits = 64 if dt.kind == "weakint" else dt.bits
        if not 0 <= y < bits:
            raise DimError(f"a launch dimension shifts by {y} for these arguments")
        return x << y if op is Ops.SHL else x >> y
    table = {Ops.ADD: lambda: x + y, Ops.SUB: lambda: x - y, Ops.MUL: lambda: x * y,
             Ops.MAX: lambda: max(x, y), Ops.AND: lambda: x & y, Ops.OR: lambda: x | y,
             Ops.XOR: lambda: x ^ y, Ops.CMPLT: lambda: int(x < y),
             Ops.CMPNE: lambda: int(x != y), Ops.CMPEQ: lambda: int(x == y)}
    return table[op]()


def _wrap(v: int, dt: DType) -> int:
    """v in dt (weakint: int64), as integer arithmetic of the IR wraps it."""
    if dt.is_bool:
        return int(v != 0)
    bits = 64 if dt.kind == "weakint" else dt.bits
    m = v & ((1 << bits) - 1)
    if dt.kind != "uint" and m >= 1 << (bits - 1):
        m -= 1 << bits
    return m


def launch_dims(glob: list[Any], loc: list[Any], values: list[Any]) -> tuple[list[int], list[int]]:
    """(global, local) evaluated for the arguments of one launch; DimError if a dimension is
    out of [0, MAX_DIM] or cannot be evaluated."""
    out = []
    for which, dims in (("global", glob), ("local", loc)):
        res = []
        for k, d in enumerate(dims):
            v = eval_dim(d, values)
            if not 0 <= v <= MAX_DIM:
                raise DimError(f"launch dimension {which}[{k}] is {v} for these arguments "
                               f"(it must be in [0, {MAX_DIM}])")
            res.append(v)
        out.append(res)
    return out[0], out[1]
