"""Kernel builders and input/compare helpers for the CUDA tests and bench/gpu_check.py.

`op_matrix()` builds one small elementwise kernel for every (op, dtype) the IR allows and every
CAST/BITCAST pair, so isel is exercised on the whole op × dtype table. `random_args` makes inputs
for a kernel's manifest entry; `mismatch` compares a target's outputs with the interpreter's.
"""

from __future__ import annotations

import numpy as np

from kcc.ir import AxisType, KernelInfo, Ops, ParamArg, UOp, dtypes
from kcc.ir.dtype import DType, STRONG
from kcc.ir.uop import toposort

N = 16
FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
INTS = tuple(d for d in STRONG if d.is_int)
F_BIN = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
F_UN = (Ops.NEG, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC, Ops.EXP2, Ops.LOG2, Ops.SIN)
I_BIN = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.CDIV, Ops.CMOD, Ops.MAX, Ops.CMPLT, Ops.CMPNE,
         Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR)
B_BIN = (Ops.AND, Ops.OR, Ops.XOR, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.MAX)
TRANSCENDENTAL = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN})


def _kernel(name: str, out_dt: DType, in_dts: list[DType], f) -> UOp:
    """out[i] = f(in0[i], in1[i], …) over a RANGE of N."""
    out = UOp(Ops.PARAM, (), ParamArg(0, out_dt, N))
    ins = [UOp(Ops.PARAM, (), ParamArg(k + 1, d, N)) for k, d in enumerate(in_dts)]
    i = UOp(Ops.RANGE, (UOp.const(N),), (0, AxisType.LOOP))
    vals = [UOp(Ops.LOAD, (UOp(Ops.INDEX, (p, i)),)) for p in ins]
    st = UOp(Ops.STORE, (UOp(Ops.INDEX, (out, i)), f(*vals)))
    return UOp(Ops.SINK, (UOp(Ops.END, (st, i)),), KernelInfo(name))


def _res(op: Ops, dt: DType) -> DType:
    return dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt


def op_matrix() -> list[UOp]:
    """One kernel per (op, dtype) and per CAST/BITCAST pair."""
    ks: list[UOp] = []
    for dt in FLOATS:
        for op in F_BIN:
            ks.append(_kernel(f"{op.name.lower()}_{dt.name}", _res(op, dt), [dt, dt],
                              lambda a, b, op=op: UOp(op, (a, b))))
        for op in F_UN:
            ks.append(_kernel(f"{op.name.lower()}_{dt.name}", dt, [dt],
                              lambda a, op=op: UOp(op, (a,))))
        ks.append(_kernel(f"mulacc_{dt.name}", dt, [dt] * 3,
                          lambda a, b, c: UOp(Ops.MULACC, (a, b, c))))
    for dt in INTS:
        for op in I_BIN:
            ks.append(_kernel(f"{op.name.lower()}_{dt.name}", _res(op, dt), [dt, dt],
                              lambda a, b, op=op: UOp(op, (a, b))))
        ks.append(_kernel(f"neg_{dt.name}", dt, [dt], lambda a: UOp(Ops.NEG, (a,))))
        ks.append(_kernel(f"mulacc_{dt.name}", dt, [dt] * 3,
                          lambda a, b, c: UOp(Ops.MULACC, (a, b, c))))
    for op in B_BIN:
        ks.append(_kernel(f"{op.name.lower()}_bool", dtypes.bool, [dtypes.bool] * 2,
                          lambda a, b, op=op: UOp(op, (a, b))))
    for dt in STRONG:
        ks.append(_kernel(f"where_{dt.name}", dt, [dtypes.bool, dt, dt],
                          lambda c, a, b: UOp(Ops.WHERE, (c, a, b))))
    ks.append(_kernel("threefry_uint64", dtypes.uint64, [dtypes.uint64] * 2,
                      lambda a, b: UOp(Ops.THREEFRY, (a, b))))
    for s in STRONG:
        for d in STRONG:
            if s != d:
                ks.append(_kernel(f"cast_{s.name}_{d.name}", d, [s],
                                  lambda a, d=d: UOp(Ops.CAST, (a,), d)))
            if s != d and s.itemsize == d.itemsize and not s.is_bool and not d.is_bool:
                ks.append(_kernel(f"bitcast_{s.name}_{d.name}", d, [s],
                                  lambda a, d=d: UOp(Ops.BITCAST, (a,), d)))
    return ks


def has_transcendental(sink: UOp) -> bool:
    """Whether the kernel computes EXP2/LOG2/SIN (compared within a tolerance, not exactly)."""
    return any(n.op in TRANSCENDENTAL for n in toposort([sink]))


def random_args(desc, rng: np.random.Generator) -> list:
    """Inputs for a kernel's manifest entry: floats with signs, zeros, inf and NaN; integers
    over their whole range but never 0 (a zero divisor is undefined); bools at random."""
    args: list = []
    for a in desc.args:
        dt = dtypes.by_name(a.dtype)
        n = a.size if a.kind == "buffer" else 1
        if dt.is_bool:
            v = rng.random(n) < 0.5
        elif dt.is_float:
            f = (rng.standard_normal(n) * 8).astype(np.float32)
            f[:4] = [0.0, -0.0, np.inf, np.nan][: min(4, n)] if n >= 8 else f[:4]
            if dt == dtypes.bfloat16:
                v = (f.view(np.uint32) >> 16).astype(np.uint16)
            else:
                v = f.astype(dt.np)
        else:
            lo, hi = dt.min(), dt.max()
            v = rng.integers(lo, hi, n, dtype=dt.np, endpoint=True)
            v[v == 0] = 1
        if a.kind == "buffer":
            args.append(np.ascontiguousarray(v))
        else:
            lo, hi = a.range if a.range is not None else (1, 8)
            args.append(dt.np.type(lo if lo == hi else rng.integers(lo, hi)) if not
                        dt.is_float else dt.np.type(1.5))
    return args


# loose (transcendental) tolerance, relative: float32/64 within 1e-5; float16 and bfloat16
# compute in float32 (2 ulp there) and round once, so one ulp of their own may differ (seen on
# an H200: half_softmax's exp, 0.003677 against 0.00368)
LOOSE_RTOL = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def mismatch(dt_name: str, got: np.ndarray, want: np.ndarray, loose: bool) -> str | None:
    """None when equal (bit-exact; any NaN matches any NaN; within a relative tolerance when
    loose: 1e-5, or one ulp of float16/bfloat16)."""
    dt = dtypes.by_name(dt_name)
    if dt.is_float:
        if dt == dtypes.bfloat16:
            g = (got.astype(np.uint32) << 16).view(np.float32)
            w = (want.astype(np.uint32) << 16).view(np.float32)
        else:
            g, w = got, want
        both_nan = np.isnan(g) & np.isnan(w)
        if loose:
            rtol = LOOSE_RTOL.get(dt_name, 1e-5)
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            ok = both_nan | np.isclose(g64, w64, rtol=rtol, atol=1e-6) | (g == w)
        else:
            ok = both_nan | ((g == w) & (np.signbit(g) == np.signbit(w)))
    else:
        ok = got == want
    if ok.all():
        return None
    k = int(np.flatnonzero(~ok)[0])
    return f"element {k}: got {got.reshape(-1)[k]!r}, want {want.reshape(-1)[k]!r}"
