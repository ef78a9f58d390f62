"""Constant folding for passes/simplify.py: strong constants, the exact value of an integer or
float op on constants in its dtype, and the folding rules (fold_alu, fold_cast, fold_bitcast)
simplify's rule table runs; simplify.py re-exports the names. The semantics are simplify's
module docstring's (integer ops wrap, float ops round once in their dtype, EXP2/LOG2/SIN,
float MULACC and out-of-range float→int casts are not folded)."""

from __future__ import annotations

import math

from kcc.ir.consts import round_float, round_half
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UNKNOWN, UOp, _set_strong

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_NO_FOLD_FLOAT = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.MULACC, Ops.THREEFRY})


# -- strong constants ---------------------------------------------------------------------------

def _wrap(v: int, dt: DType) -> int:
    """v modulo 2**bits, in dt's range."""
    m = v & ((1 << dt.bits) - 1)
    if dt.kind == "int" and m >= 1 << (dt.bits - 1):
        m -= 1 << dt.bits
    return m


def _to_float(v: int | float, dt: DType) -> float | None:
    """v rounded to float dtype dt (a Python float holding it exactly), None if not foldable."""
    if dt == dtypes.bfloat16:
        return None
    if isinstance(v, int) and abs(v) > 1 << 53:
        return None    # numpy would round through float64 first: double rounding
    r = round_float(float(v), dt)  # exact in float64 first: a float, or an int of <= 53 bits
    if r is None and dt == dtypes.float16:
        r = round_half(float(v))    # (numpy's import: ~90 ms of a process's first compile)
    if r is not None:
        return r
    import numpy as np             # only such a fold needs it (kcc's start-up stays small)
    with np.errstate(all="ignore"):
        return float(dt.np.type(v))


def convert(v: Any, src: DType, dst: DType) -> Any:
    """The value CAST(v: src) dst, or None when this pass does not fold it."""
    if dst.is_bool:
        if isinstance(v, float) and math.isnan(v):
            return None
        return bool(v)
    if dst.is_float:
        if src.is_float or src.is_weak:
            return _to_float(float(v) if isinstance(v, float) else v, dst)
        return _to_float(int(v), dst)
    # integer destination
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        t = int(v)   # truncation toward zero
        return t if dst.min() <= t <= dst.max() else None
    return _wrap(int(v), dst)


def const_value(u: UOp) -> tuple[Any, DType] | None:
    """(value, dtype) of a strong scalar constant node, else None.

    Computed once per node and kept on it (`UOp._strong`; nodes are immutable, so the answer
    never changes): simplify's rules ask it of the same nodes again and again. No module state,
    so concurrent or nested runs cannot see each other's memo."""
    cv = u._strong
    if cv is UNKNOWN:
        cv = _strong_value(u)
        _set_strong(u, cv)               # (the slot's own setter: no name lookup)
    return cv


def _strong_value(u: UOp) -> tuple[Any, DType] | None:
    if u.op is Ops.CONST and isinstance(u.arg, bool):
        return (u.arg, dtypes.bool)
    if u.op is Ops.CAST and u.src[0].op is Ops.CONST:
        c = u.src[0]
        src_dt = dtypes.bool if isinstance(c.arg, bool) else c.dtype
        v = convert(c.arg, src_dt, u.arg)
        return None if v is None else (v, u.arg)
    return None


def make_const(v: Any, dt: DType) -> UOp:
    """The strong constant node of value v (already in dt's range) and dtype dt."""
    if dt.is_bool:
        return UOp(Ops.CONST, (), bool(v))
    return UOp(Ops.CAST, (UOp(Ops.CONST, (), float(v) if dt.is_float else int(v)),), dt)


# -- folding --------------------------------------------------------------------------------------

def _int_op(op: Ops, a: list[int], dt: DType) -> int | bool | None:
    """An integer (or bool) op on Python ints, per the IR semantics; None: not folded."""
    if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
        return {Ops.CMPLT: a[0] < a[1], Ops.CMPNE: a[0] != a[1], Ops.CMPEQ: a[0] == a[1]}[op]
    if op is Ops.WHERE:
        return a[1] if a[0] else a[2]
    if dt.is_bool:
        if op in (Ops.AND, Ops.OR, Ops.XOR, Ops.MAX):
            x, y = bool(a[0]), bool(a[1])
            return {Ops.AND: x and y, Ops.OR: x or y, Ops.XOR: x != y, Ops.MAX: x or y}[op]
        return None
    if op in (Ops.CDIV, Ops.CMOD):
        if a[1] == 0 or (dt.kind == "int" and a[0] == dt.min() and a[1] == -1):
            return None
        q = abs(a[0]) // abs(a[1]) * (1 if (a[0] >= 0) == (a[1] >= 0) else -1)
        r = q if op is Ops.CDIV else a[0] - q * a[1]
    elif op is Ops.MULHI:
        r = (a[0] * a[1]) >> dt.bits
    elif op in (Ops.SHL, Ops.SHR):
        if not 0 <= a[1] < dt.bits or (op is Ops.SHR and a[0] < 0):
            return None
        r = a[0] << a[1] if op is Ops.SHL else a[0] >> a[1]
    else:
        fns = {Ops.ADD: lambda x, y: x + y, Ops.SUB: lambda x, y: x - y,
               Ops.MUL: lambda x, y: x * y, Ops.MAX: lambda x, y: y if x < y else x,
               Ops.AND: lambda x, y: x & y, Ops.OR: lambda x, y: x | y,
               Ops.XOR: lambda x, y: x ^ y, Ops.NEG: lambda x: -x,
               Ops.MULACC: lambda x, y, z: x * y + z}
        if op not in fns:
            return None
        r = fns[op](*a)
    return _wrap(r, dt)


def _float_op(op: Ops, a: list[float], dt: DType) -> float | bool | None:
    """A float op in dtype dt (float16 computes in float32 and rounds once)."""
    if op in _NO_FOLD_FLOAT or dt == dtypes.bfloat16:
        return None
    r = _py_float_op(op, a, dt)
    return _numpy_float_op(op, a, dt) if r is _NUMPY else r


_NUMPY = object()       # _py_float_op's "numpy decides this one"
_EXACT_DTYPES = (dtypes.float32, dtypes.float64)


def _py_float_op(op: Ops, a: list[float], dt: DType) -> Any:
    """op on float32/float64 Python floats without numpy (whose import was most of a small
    transcendental kernel's compile process): computed in float64 and rounded once to dt,
    which for +, -, *, /, sqrt of float32 operands is the float32 result itself (53 >= 2*24 + 2
    bits: rounding twice is innocuous for these operations); comparisons, MAX, NEG and TRUNC
    are exact. _NUMPY where numpy's own answer is kept: a NaN operand or result (its payload
    and sign are the hardware's), a zero divisor, a negative square root, a float32 overflow,
    float16, a non-float operand. tests/passes/test_simplify_fold_float.py compares the two
    bit for bit."""
    if dt not in _EXACT_DTYPES or any(type(v) is not float for v in a):
        return _NUMPY
    x = [round_float(v, dt) for v in a]
    if None in x:
        return _NUMPY
    if op is Ops.CMPLT:
        return x[0] < x[1]
    if op is Ops.CMPNE:
        return x[0] != x[1]
    if op is Ops.CMPEQ:
        return x[0] == x[1]
    if any(math.isnan(v) for v in x):
        return _NUMPY
    p = x[0]
    if op is Ops.ADD:
        r = p + x[1]
    elif op is Ops.SUB:
        r = p - x[1]
    elif op is Ops.MUL:
        r = p * x[1]
    elif op is Ops.FDIV:
        if x[1] == 0:
            return _NUMPY
        r = p / x[1]
    elif op is Ops.MAX:
        r = x[1] if p < x[1] else p
    elif op is Ops.NEG:
        r = -p
    elif op is Ops.SQRT:
        if p < 0:
            return _NUMPY
        r = math.sqrt(p)
    elif op is Ops.TRUNC:
        r = p if math.isinf(p) else math.copysign(float(math.trunc(p)), p)
    elif op is Ops.RECIPROCAL:
        if p == 0:
            return _NUMPY
        r = 1.0 / p
    else:
        return None                 # (nor does the numpy path fold it)
    if math.isnan(r):
        return _NUMPY
    got = round_float(r, dt)
    return _NUMPY if got is None else got


def _numpy_float_op(op: Ops, a: list[float], dt: DType) -> float | bool | None:
    """_float_op through numpy's scalar types (the reference _py_float_op agrees with)."""
    import numpy as np
    work = np.float32 if dt == dtypes.float16 else dt.np.type
    x = [work(v) for v in a]
    with np.errstate(all="ignore"):
        if op is Ops.CMPLT:
            return bool(x[0] < x[1])
        if op is Ops.CMPNE:
            return bool(x[0] != x[1])
        if op is Ops.CMPEQ:
            return bool(x[0] == x[1])
        fns = {Ops.ADD: lambda p, q: p + q, Ops.SUB: lambda p, q: p - q,
               Ops.MUL: lambda p, q: p * q, Ops.FDIV: lambda p, q: p / q,
               Ops.MAX: lambda p, q: q if p < q else p, Ops.NEG: lambda p: -p,
               Ops.SQRT: np.sqrt, Ops.TRUNC: np.trunc,
               Ops.RECIPROCAL: lambda p: work(1) / p}
        if op not in fns:
            return None
        r = fns[op](*x)
        return float(dt.np.type(r))


def fold_alu(x: UOp) -> UOp | None:
    """An ALU op whose value operands are all strong constants → its strong constant result."""
    if x.shape != () or x.op is Ops.WHERE:
        return None   # WHERE: where_const_cond
    vals = []
    for s in x.src:                # (a loop: most nodes stop at their first src)
        v = const_value(s)
        if v is None:
            return None
        vals.append(v)
    odt = vals[0][1]
    args = [v for v, _ in vals]
    if odt.is_float:
        r = _float_op(x.op, args, odt)
    else:
        r = _int_op(x.op, [int(v) for v in args], odt)
    return None if r is None else make_const(r, x.dtype)


def fold_cast(x: UOp, c: UOp) -> UOp | None:
    """CAST of a strong constant → the constant converted (also canonicalises CAST(CONST))."""
    if c.op is Ops.CONST and not isinstance(c.arg, bool):
        # convert(c.arg, c.dtype, x.arg): x's strong value, kept on x (asked by every run)
        cv = const_value(x)
        if cv is None:
            return None
        new = make_const(cv[0], x.arg)
        return None if new is x else new
    cv = const_value(c)
    if cv is None:
        return None
    v = convert(cv[0], cv[1], x.arg)
    return None if v is None else make_const(v, x.arg)


def _struct_format(dt: DType) -> str | None:
    """The struct format of a strong scalar dtype's bits (float16 'e': IEEE binary16)."""
    if dt.is_weak:
        return None
    if dt.is_float:
        return {2: "e", 4: "f", 8: "d"}.get(dt.itemsize) if dt != dtypes.bfloat16 else None
    fmt = {1: "b", 2: "h", 4: "i", 8: "q"}.get(dt.itemsize)
    return None if fmt is None else fmt if dt.is_signed else fmt.upper()


def fold_bitcast(x: UOp, c: UOp) -> UOp | None:
    """BITCAST of a strong scalar constant → the constant of the same bits in the new dtype
    (a float division's special-case tests on a constant numerator, |1.0| == inf…, then fold).
    NaN on either side is left alone (a float constant does not carry a NaN's payload), and
    so are bool and bfloat16. The bits go through struct, not numpy (start-up: a kernel's
    compile does not import numpy)."""
    import struct
    cv = const_value(c)
    if cv is None or x.shape != ():
        return None
    v, src = cv
    dst = x.arg
    if src.is_bool or dst.is_bool or src.itemsize != dst.itemsize:
        return None
    fs, fd = _struct_format(src), _struct_format(dst)
    if fs is None or fd is None or (src.is_float and v != v):
        return None
    try:
        out = struct.unpack("<" + fd, struct.pack("<" + fs, v))[0]
    except (struct.error, OverflowError):      # a value the source dtype cannot hold
        return None
    if dst.is_float and out != out:
        return None
    return make_const(float(out) if dst.is_float else int(out), dst)


# -- identities -----------------------------------------------------------------------------------
