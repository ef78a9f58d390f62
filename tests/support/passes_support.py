"""Test support for the pass tests: graph builders and a batch evaluator of value graphs.

`eval_values(root, inputs)` computes a value graph made of basic ops over numpy arrays: every
scalar PARAM (addrspace ALU) is fed a whole array of inputs at once, so a decomposition can be
checked on a dense sweep in one call. Each op is the numpy operation of the IR semantics
(UOP_FORMAT.md): wrapping ints, truncating CDIV/CMOD, MAX = a < b ? b : a, float16 computed in
float32 and rounded once. It knows nothing of transcendentals, so it cannot agree with a
decomposition by sharing its approximation. When kcc.ir.interp exists the graph tests use it too.
"""

from __future__ import annotations

import numpy as np

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp, toposort

C = UOp.const


def param(slot: int, dt: DType, size: int | None = None) -> UOp:
    """A buffer PARAM (with size) or a scalar ALU PARAM (size None)."""
    if size is None:
        return UOp(Ops.PARAM, (), ParamArg(slot, dt, addrspace=AddrSpace.ALU))
    return UOp(Ops.PARAM, (), ParamArg(slot, dt, size))


def rng(bound: int | UOp, axis: int, *order: UOp) -> UOp:
    """RANGE(bound, order…) (axis, LOOP)."""
    b = C(bound) if isinstance(bound, int) else bound
    return UOp(Ops.RANGE, (b,) + order, (axis, AxisType.LOOP))


def sink(*effects: UOp, name: str = "k") -> UOp:
    return UOp(Ops.SINK, effects, KernelInfo(name))


def op(o: Ops, *src: UOp | int | float, arg=None) -> UOp:
    """An op; int/float/bool srcs become CONSTs."""
    return UOp(o, tuple(s if isinstance(s, UOp) else C(s) for s in src), arg)


def strong(v: int | float, dt: DType) -> UOp:
    return UOp(Ops.CAST, (C(v),), dt)


def _np(dt: DType) -> type:
    return np.float32 if dt == dtypes.float16 else dt.np.type


def eval_values(root: UOp, inputs: dict[int, np.ndarray]) -> np.ndarray:
    """The value of root for arrays of inputs (keyed by scalar PARAM slot), elementwise."""
    val: dict[UOp, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for u in toposort([root]):
            s = [val.get(x) for x in u.src]
            dt = u.dtype
            if u.op is Ops.PARAM:
                r = np.asarray(inputs[u.arg.slot], dtype=dt.np)
            elif u.op is Ops.CONST:
                r = np.asarray(u.arg)
            elif u.op is Ops.CAST:
                src = s[0]
                if u.arg.is_bool:
                    r = src != 0
                elif u.arg == dtypes.float16 or src.dtype == np.float16:
                    r = src.astype(np.float32).astype(u.arg.np)
                else:
                    r = src.astype(u.arg.np)
            elif u.op is Ops.BITCAST:
                r = s[0].view(u.arg.np)
            else:
                r = _alu(u.op, s, u.src[0].dtype if u.src else dt)
                if dt is not None and not dt.is_weak and r.dtype != dt.np:
                    r = r.astype(dt.np)
            val[u] = np.asarray(r)
    return val[root]


def _alu(o: Ops, s: list[np.ndarray], sdt: DType) -> np.ndarray:
    """One basic op on numpy arrays (float16 lifted to float32 by the caller's cast back)."""
    if sdt == dtypes.float16:
        s = [x.astype(np.float32) if x.dtype == np.float16 else x for x in s]
    if o is Ops.ADD:
        return s[0] + s[1]
    if o is Ops.SUB:
        return s[0] - s[1]
    if o is Ops.MUL:
        return s[0] * s[1]
    if o is Ops.FDIV:
        return s[0] / s[1]
    if o is Ops.NEG:
        return -s[0]
    if o is Ops.TRUNC:
        return np.trunc(s[0])
    if o is Ops.SQRT:
        return np.sqrt(s[0])
    if o is Ops.MAX:
        return np.where(s[0] < s[1], s[1], s[0])
    if o is Ops.CMPLT:
        return s[0] < s[1]
    if o is Ops.CMPNE:
        return s[0] != s[1]
    if o is Ops.CMPEQ:
        return s[0] == s[1]
    if o is Ops.AND:
        return s[0] & s[1]
    if o is Ops.OR:
        return s[0] | s[1]
    if o is Ops.XOR:
        return s[0] ^ s[1]
    if o is Ops.SHL:
        return s[0] << s[1].astype(s[0].dtype)
    if o is Ops.SHR:
        return s[0] >> s[1].astype(s[0].dtype)
    if o is Ops.WHERE:
        return np.where(s[0], s[1], s[2])
    if o is Ops.CDIV:
        q = np.abs(s[0]) // np.abs(s[1])
        return np.where((s[0] < 0) != (s[1] < 0), -q, q).astype(s[0].dtype)
    if o is Ops.CMOD:
        q = np.abs(s[0]) // np.abs(s[1])
        q = np.where((s[0] < 0) != (s[1] < 0), -q, q).astype(s[0].dtype)
        return s[0] - q * s[1]
    if o is Ops.MULACC:
        if s[0].dtype.kind == "f":
            raise NotImplementedError("float MULACC is fused; use the reference interpreter")
        return s[0] * s[1] + s[2]
    if o is Ops.STACK:
        return np.stack(s, axis=-1)
    raise NotImplementedError(f"{o.name} is not a basic op this evaluator knows")
