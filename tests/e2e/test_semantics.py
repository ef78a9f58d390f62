"""Semantics cases (docs/semantics.md) checked on the reference interpreter.

Reusable by target tests: `semantics_cases()` returns (name, sink, inputs, expected) tuples;
compile `sink`, run it on copies of `inputs` (slot order) and compare every output buffer in
`expected` (slot -> array) bit for bit (NaN: any NaN, see `same_bits`). Expected values are
written out by hand from the semantics document, never computed by kcc.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest

from kcc.ir.dtype import DType, dtypes
from kcc.ir.interp import run
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp

NAN = float("nan")
Case = tuple[str, UOp, list, dict[int, np.ndarray]]


def c(v: int | float | bool) -> UOp:
    return UOp(Ops.CONST, (), v)


def strong(v: int | float, dt: DType) -> UOp:
    return UOp(Ops.CAST, (c(v),), dt)


def elementwise(name: str, ins: list[DType], out: DType, n: int,
                body: Callable[[list[UOp]], UOp], scalars: list[DType] = ()) -> UOp:
    """out[i] = body(in0[i], in1[i], …, scalar0, …) for i < n; out is slot 0."""
    o = UOp(Ops.PARAM, (), ParamArg(0, out, n))
    bufs = [UOp(Ops.PARAM, (), ParamArg(k + 1, d, n)) for k, d in enumerate(ins)]
    sc = [UOp(Ops.PARAM, (), ParamArg(len(ins) + 1 + k, d, addrspace=AddrSpace.ALU))
          for k, d in enumerate(scalars)]
    i = UOp(Ops.RANGE, (c(n),), (0, AxisType.LOOP))
    vals = [UOp(Ops.LOAD, (UOp(Ops.INDEX, (b, i)),)) for b in bufs]
    st = UOp(Ops.STORE, (UOp(Ops.INDEX, (o, i)), body(vals + sc)))
    return UOp(Ops.SINK, (UOp(Ops.END, (st, i)),), KernelInfo(name))


def alu(op: Ops, *src: UOp) -> UOp:
    return UOp(op, src)


def _where_cases() -> list[Case]:
    x = np.array([NAN, 1, 2, -1], np.float32)
    forms = {  # the four compare forms of x against 1 and, per element of x, the outcome
        "lt": (lambda v: alu(Ops.CMPLT, v, c(1.0)), [False, False, False, True]),
        "gt": (lambda v: alu(Ops.CMPLT, c(1.0), v), [False, False, True, False]),
        "ne": (lambda v: alu(Ops.CMPNE, v, c(1.0)), [True, False, True, True]),
        "eq": (lambda v: alu(Ops.CMPEQ, v, c(1.0)), [False, True, False, False]),
    }
    cases = []
    for fname, (cmp, sel) in forms.items():
        for dt, a, b in ((dtypes.int32, [10, 11, 12, 13], [-10, -11, -12, -13]),
                         (dtypes.float32, [0.5, 1.5, 2.5, 3.5], [-0.0, -1.5, -2.5, -3.5]),
                         (dtypes.float64, [0.25, 1.25, 2.25, 3.25], [-1.0, -2.0, -3.0, -4.0])):
            sink = elementwise(f"where_{fname}_{dt.name}", [dtypes.float32, dt, dt], dt, 4,
                               lambda v, cmp=cmp: alu(Ops.WHERE, cmp(v[0]), v[1], v[2]))
            av, bv = np.array(a, dt.np), np.array(b, dt.np)
            want = np.where(sel, av, bv)
            cases.append((f"where_{fname}_{dt.name}", sink, [np.zeros(4, dt.np), x, av, bv],
                          {0: want}))
    return cases


def _f16_const_left() -> Case:
    t = np.array([-1.0, 0.0, -0.0, 2.0, NAN, 65504.0], np.float16)
    sink = elementwise("f16_zero_lt_t", [dtypes.float16], dtypes.int32, 6,
                       lambda v: alu(Ops.WHERE, alu(Ops.CMPLT, c(0.0), v[0]),
                                     strong(1, dtypes.int32), strong(0, dtypes.int32)))
    return ("f16_const_left", sink, [np.zeros(6, np.int32), t],
            {0: np.array([0, 0, 0, 1, 0, 1], np.int32)})


def _u32_roundtrip() -> Case:
    sink = elementwise("i64_u32_i64", [dtypes.int64], dtypes.int64, 2,
                       lambda v: UOp(Ops.CAST, (UOp(Ops.CAST, (v[0],), dtypes.uint32),),
                                     dtypes.int64))
    n = np.array([0x12345678ABCDEF01, -1], np.int64)
    return ("int64_uint32_int64", sink, [np.zeros(2, np.int64), n],
            {0: np.array([2882400001, 4294967295], np.int64)})


def _uint8_index() -> Case:
    out = UOp(Ops.PARAM, (), ParamArg(0, dtypes.int32, 4))
    idx = UOp(Ops.PARAM, (), ParamArg(1, dtypes.uint8, 4))
    table = UOp(Ops.PARAM, (), ParamArg(2, dtypes.int32, 256))
    i = UOp(Ops.RANGE, (c(4),), (0, AxisType.LOOP))
    k = UOp(Ops.LOAD, (UOp(Ops.INDEX, (idx, i)),))
    v = UOp(Ops.LOAD, (UOp(Ops.INDEX, (table, k)),))
    st = UOp(Ops.STORE, (UOp(Ops.INDEX, (out, i)), v))
    sink = UOp(Ops.SINK, (UOp(Ops.END, (st, i)),), KernelInfo("uint8_index"))
    tab = (np.arange(256, dtype=np.int32) * 7) - 1000
    iv = np.array([200, 3, 255, 128], np.uint8)
    return ("uint8_index", sink, [np.zeros(4, np.int32), iv, tab],
            {0: np.array([400, -979, 785, -104], np.int32)})


def _u32_scalar_widen() -> Case:
    sink = elementwise("u32_widen", [], dtypes.int64, 1,
                       lambda v: UOp(Ops.CAST, (v[0],), dtypes.int64), scalars=[dtypes.uint32])
    return ("uint32_scalar_widen", sink, [np.zeros(1, np.int64), 0xFFFFFFF0],
            {0: np.array([4294967280], np.int64)})


def _max_nan_zero() -> Case:
    a = np.array([NAN, 1.0, -0.0, 0.0, -np.inf, 2.0], np.float32)
    b = np.array([1.0, NAN, 0.0, -0.0, 3.0, 2.0], np.float32)
    sink = elementwise("max_f32", [dtypes.float32, dtypes.float32], dtypes.float32, 6,
                       lambda v: alu(Ops.MAX, v[0], v[1]))
    # a < b ? b : a  ->  nan, 1, -0.0, 0.0, 3, 2
    want = np.array([NAN, 1.0, -0.0, 0.0, 3.0, 2.0], np.float32)
    return ("max_nan_zero", sink, [np.zeros(6, np.float32), a, b], {0: want})


def _cdiv_cmod() -> list[Case]:
    a = np.array([7, -7, 7, -7, -2147483648, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3, -5], np.int32)
    res = []
    for op, want in ((Ops.CDIV, [3, -3, -3, 3, -715827882, 0]),
                     (Ops.CMOD, [1, -1, 1, -1, -2, 0])):
        sink = elementwise(op.name.lower(), [dtypes.int32, dtypes.int32], dtypes.int32, 6,
                           lambda v, op=op: alu(op, v[0], v[1]))
        res.append((op.name.lower(), sink, [np.zeros(6, np.int32), a, b],
                     {0: np.array(want, np.int32)}))
    ua, ub = np.array([7, 4294967295], np.uint32), np.array([2, 16], np.uint32)
    sink = elementwise("udiv", [dtypes.uint32, dtypes.uint32], dtypes.uint32, 2,
                       lambda v: alu(Ops.CDIV, v[0], v[1]))
    res.append(("cdiv_uint32", sink, [np.zeros(2, np.uint32), ua, ub],
                {0: np.array([3, 268435455], np.uint32)}))
    return res


def _wraparound() -> list[Case]:
    res = []
    for dt, x, y, op, want in (
            (dtypes.int32, [2147483647, -2147483648], [1, 1], Ops.ADD,
             [-2147483648, -2147483647]),
            (dtypes.int32, [-2147483648, 5], [1, 6], Ops.SUB, [2147483647, -1]),
            (dtypes.uint8, [255, 0], [1, 1], Ops.ADD, [0, 1]),
            (dtypes.uint8, [0, 3], [1, 5], Ops.SUB, [255, 254]),
            (dtypes.int8, [100, -128], [3, -1], Ops.MUL, [44, -128]),
            (dtypes.uint32, [65536, 4294967295], [65536, 4294967295], Ops.MUL, [0, 1])):
        sink = elementwise(f"wrap_{op.name}_{dt.name}", [dt, dt], dt, 2,
                           lambda v, op=op: alu(op, v[0], v[1]))
        res.append((f"wrap_{op.name.lower()}_{dt.name}", sink,
                    [np.zeros(2, dt.np), np.array(x, dt.np), np.array(y, dt.np)],
                    {0: np.array(want, dt.np)}))
    neg = elementwise("neg_min", [dtypes.int32], dtypes.int32, 1, lambda v: alu(Ops.NEG, v[0]))
    res.append(("neg_int_min", neg, [np.zeros(1, np.int32), np.array([-2**31], np.int32)],
                {0: np.array([-2**31], np.int32)}))
    return res


def _half_rounding() -> list[Case]:
    # bfloat16 (7 fraction bits): 1 + 2^-8 is a tie -> 1.0 (even); 1+2^-7 + 2^-8 -> 1+2^-6;
    # 1 + 2^-8 + 2^-16 is above the tie -> 1 + 2^-7. Bits: 1.0 = 0x3F80.
    bf_a = np.array([0x3F80, 0x3F81, 0x3F80, 0x7F7F], np.uint16)        # 1, 1+2^-7, 1, max
    bf_b = np.array([0x3B80, 0x3B80, 0x3B81, 0x7B00], np.uint16)        # 2^-8, 2^-8, ~, 2^119
    bf_want = np.array([0x3F80, 0x3F82, 0x3F81, 0x7F80], np.uint16)     # .., +inf (overflow)
    # float16 (10 fraction bits): 2048 + 1 is a tie -> 2048; 2050 + 1 -> 2052; 65504 + 16 -> inf
    h_a = np.array([2048, 2050, 65504, 1.0], np.float16)
    h_b = np.array([1, 1, 16, 2.0 ** -11], np.float16)
    h_want = np.array([2048, 2052, np.inf, 1.0], np.float16)
    res = [("bf16_add_rounding",
            elementwise("bf16_add", [dtypes.bfloat16] * 2, dtypes.bfloat16, 4,
                        lambda v: alu(Ops.ADD, v[0], v[1])),
            [np.zeros(4, np.uint16), bf_a, bf_b], {0: bf_want}),
           ("f16_add_rounding",
            elementwise("f16_add", [dtypes.float16] * 2, dtypes.float16, 4,
                        lambda v: alu(Ops.ADD, v[0], v[1])),
            [np.zeros(4, np.float16), h_a, h_b], {0: h_want})]
    f = np.array([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, NAN, -np.inf], np.float32)  # 2 ties
    res.append(("f32_to_bf16_cast",
                elementwise("to_bf16", [dtypes.float32], dtypes.bfloat16, 4,
                            lambda v: UOp(Ops.CAST, (v[0],), dtypes.bfloat16)),
                [np.zeros(4, np.uint16), f],
                {0: np.array([0x3F80, 0x3F82, 0x7FC0, 0xFF80], np.uint16)}))
    return res


def _fused_mulacc() -> list[Case]:
    e = 2.0 ** -12
    res = []
    # float32: (1+2^-12)^2 = 1 + 2^-11 + 2^-24; rounded first it is 1 + 2^-11 (a tie to even),
    # so unfused gives 0 and fused gives 2^-24.
    for dt, a, cc, want in ((dtypes.float32, 1 + e, -(1 + 2 * e), 2.0 ** -24),
                            (dtypes.float64, 1 + 2.0 ** -27, -(1 + 2.0 ** -26), 2.0 ** -54),
                            (dtypes.float16, 1 + 2.0 ** -6, -(1 + 2.0 ** -5), 2.0 ** -12)):
        arr = lambda v, dt=dt: np.array([v], dt.np)
        sink = elementwise(f"fma_{dt.name}", [dt] * 3, dt, 1,
                           lambda v: alu(Ops.MULACC, v[0], v[1], v[2]))
        res.append((f"mulacc_fused_{dt.name}", sink,
                    [np.zeros(1, dt.np), arr(a), arr(a), arr(cc)], {0: arr(want)}))
    sink = elementwise("fma_i32", [dtypes.int32] * 3, dtypes.int32, 1,
                       lambda v: alu(Ops.MULACC, v[0], v[1], v[2]))
    i32 = lambda v: np.array([v], np.int32)
    res.append(("mulacc_int32_wraps", sink, [i32(0), i32(65536), i32(65537), i32(5)],
                {0: i32(65541)}))
    return res


def semantics_cases() -> list[Case]:
    """Every semantics case: (name, sink, inputs in slot order, {slot: expected array})."""
    f32sel = elementwise("f32_cmp_sel_f64", [dtypes.float32, dtypes.float64, dtypes.float64],
                         dtypes.float64, 4,
                         lambda v: alu(Ops.WHERE, alu(Ops.CMPLT, v[0], c(3.0)), v[1], v[2]))
    x = np.array([NAN, 3.0, 2.5, -np.inf], np.float32)
    p, q = np.array([1.0, 2.0, 3.0, 4.0]), np.array([-1.0, -2.0, -3.0, -4.0])
    return (_where_cases()
            + [("f32_compare_selects_f64", f32sel, [np.zeros(4), x, p, q],
                {0: np.array([-1.0, -2.0, 3.0, 4.0])}),
               _f16_const_left(), _u32_roundtrip(), _uint8_index(), _u32_scalar_widen(),
               _max_nan_zero()]
            + _cdiv_cmod() + _wraparound() + _half_rounding() + _fused_mulacc())


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit-equal, except that a NaN matches any NaN (payloads are not specified)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind == "f":
        nan = np.isnan(want)
        return bool((np.isnan(got) == nan).all()) and got[~nan].tobytes() == want[~nan].tobytes()
    return got.tobytes() == want.tobytes()


CASES = semantics_cases()


@pytest.mark.parametrize("case", CASES, ids=[k[0] for k in CASES])
def test_semantics_case(case: Case) -> None:
    name, sink, inputs, expected = case
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    run(sink, args)
    for slot, want in expected.items():
        assert same_bits(args[slot], want), f"{name}: slot {slot}: {args[slot]!r} != {want!r}"


def test_fused_cases_differ_from_unfused() -> None:
    """The MULACC cases are ones where one rounding and two roundings disagree."""
    for name, _, inputs, expected in CASES:
        if name.startswith("mulacc_fused"):
            a, b, cc = inputs[1][0], inputs[2][0], inputs[3][0]
            unfused = (a * b) + cc            # numpy rounds the product to the dtype first
            assert unfused != expected[0][0] and math.isfinite(float(unfused))
