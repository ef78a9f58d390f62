"""Values carried across loop iterations: the interpreter vectorizes loops, so every shape of
carried dependence (through REG or GLOBAL memory) is built here and its result compared with a
plain-Python sequential computation written independently of kcc (docs/semantics.md,
"Execution order": iterations are ordered, a node runs once per iteration of the loops it is
inside). Each kernel also passes the verifier and, on x86, runs to the same bits.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.dtype import dtypes
from kcc.ir.interp import run
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp
from kcc.ir.verify import verify
from x86_util import compile_and_run

RNG = np.random.default_rng(12)
I64 = dtypes.int64


def c(v):
    return UOp(Ops.CONST, (), v)


def i64(v):
    return UOp(Ops.CAST, (c(v),), I64)


def buf(slot, dt, size):
    return UOp(Ops.PARAM, (), ParamArg(slot, dt, size))


def reg(slot, dt, size):
    return UOp(Ops.BUFFER, (), ParamArg(slot, dt, size, addrspace=AddrSpace.REG))


def rng_(n, axis, *order):
    return UOp(Ops.RANGE, (c(n),) + order, (axis, AxisType.LOOP))


def idx(b, i):
    return UOp(Ops.INDEX, (b, i))


def ld(b, i):
    return UOp(Ops.LOAD, (idx(b, i),))


def st(b, i, v, gate=None):
    return UOp(Ops.STORE, (idx(b, i), v) + ((gate,) if gate is not None else ()))


def after(b, *deps):
    return UOp(Ops.AFTER, (b,) + deps)


def end(x, *r):
    return UOp(Ops.END, (x,) + r)


def alu(op, *s):
    return UOp(op, s)


def sink(*x):
    return UOp(Ops.SINK, x, KernelInfo("k"))


def flat(rs, ns):
    """The row-major index of ranges rs over sizes ns, as a weakint expression."""
    e = rs[0]
    for r, n in zip(rs[1:], ns[1:]):
        e = alu(Ops.ADD, alu(Ops.MUL, e, c(n)), r)
    return e


def check(k: UOp, args: list, want: dict[int, list]) -> None:
    """The interpreter (and x86, when it runs here) gives want[slot] for each output slot."""
    verify(k)
    x86_args = [a.copy() for a in args]
    run(k, args)
    for slot, w in want.items():
        assert args[slot].tolist() == w, f"interpreter, argument {slot}"
    x86_args = compile_and_run(k, x86_args)
    for slot, w in want.items():
        assert x86_args[slot].tolist() == w, f"x86, argument {slot}"


# -- REG accumulators ------------------------------------------------------------------------

def test_issue_reg_accumulator_zeroed_once_before_two_loops() -> None:
    """The acc starts at 0 once; row 1 continues from row 0's total: [1+2, 3+3+4] = [3, 10]."""
    text = """# kcc-uop 1
%out  = PARAM ParamArg(0, float32, 2)
%x    = PARAM ParamArg(1, float32, 4)
%acc  = BUFFER ParamArg(0, float32, 1, addrspace=REG)
%p0   = INDEX(%acc, 0)
%init = STORE(%p0, 0.0)
%r    = RANGE(2) (0, LOOP)                  : weakint
%c    = RANGE(2, %init) (1, REDUCE)         : weakint
%accI = AFTER(%acc, %init, %c)
%p1   = INDEX(%accI, 0)
%cur  = LOAD(%p1)                           : float32
%r2   = MUL(%r, 2)                          : weakint
%ix   = ADD(%r2, %c)                        : weakint
%xi   = INDEX(%x, %ix)
%xv   = LOAD(%xi)                           : float32
%s    = ADD(%cur, %xv)                      : float32
%st   = STORE(%p1, %s)
%ei   = END(%st, %c)
%accE = AFTER(%acc, %ei)
%p2   = INDEX(%accE, 0)
%res  = LOAD(%p2)                           : float32
%o    = INDEX(%out, %r)
%st2  = STORE(%o, %res)
%e2   = END(%st2, %r)
SINK(%e2) KernelInfo(name="acc2")
"""
    out, x = np.zeros(2, np.float32), np.array([1, 2, 3, 4], np.float32)
    check(parse(text), [out, x], {0: [3.0, 10.0]})


def nested_acc(ns: tuple[int, ...], level: int) -> UOp:
    """acc = acc*3 + x[flat] in the innermost of len(ns) loops; acc zeroed outside every loop
    (level 0) or at the top of loop level-1's body; out[flat of the outer loops] = acc after
    the innermost loop."""
    L = len(ns)
    out = buf(0, I64, int(np.prod(ns[:-1])) if L > 1 else 1)
    x = buf(1, I64, int(np.prod(ns)))
    acc = reg(0, I64, 1)
    rs: list[UOp] = []
    init = None
    for lv in range(L):
        if lv == level:
            place = acc if lv == 0 else after(acc, rs[lv - 1])
            init = st(place, c(0), i64(0))
            rs.append(rng_(ns[lv], lv, init))
        else:
            rs.append(rng_(ns[lv], lv))
    a_in = after(acc, init, rs[-1])
    upd = st(a_in, c(0), alu(Ops.ADD, alu(Ops.MUL, ld(a_in, c(0)), c(3)), ld(x, flat(rs, ns))))
    e = end(upd, rs[-1])
    res = st(out, flat(rs[:-1], ns[:-1]) if L > 1 else c(0), ld(after(acc, e), c(0)))
    for r in reversed(rs[:-1]):
        res = end(res, r)
    return sink(res)


def nested_acc_reference(ns: tuple[int, ...], level: int, x: list[int]) -> list[int]:
    """The same computation as sequential Python loops."""
    L = len(ns)
    out = [0] * (int(np.prod(ns[:-1])) if L > 1 else 1)
    acc = 0
    for t in itertools.product(*[range(n) for n in ns]):
        if level > 0 and all(v == 0 for v in t[level:]):
            acc = 0                                   # the init at the top of loop level-1
        f = 0
        for v, n in zip(t, ns):
            f = f * n + v
        acc = acc * 3 + x[f]
        if t[-1] == ns[-1] - 1:
            o = 0
            for v, n in zip(t[:-1], ns[:-1]):
                o = o * n + v
            out[o] = acc
    return out


@pytest.mark.parametrize("ns,level", [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 0),
                                      ((2, 3, 4), 1), ((2, 3, 4), 2), ((3, 1, 2), 1)])
def test_reg_accumulator_across_nested_loops(ns: tuple[int, ...], level: int) -> None:
    k = nested_acc(ns, level)
    x = RNG.integers(-9, 10, int(np.prod(ns))).astype(np.int64)
    out = np.zeros(int(np.prod(ns[:-1])) if len(ns) > 1 else 1, np.int64)
    check(k, [out, x], {0: nested_acc_reference(ns, level, x.tolist())})


def test_reg_last_store_of_the_loop_wins() -> None:
    """acc = x[i] for every i, never read inside the loop: after it acc is x[n-1]."""
    out, x = buf(0, I64, 1), buf(1, I64, 6)
    acc = reg(0, I64, 2)
    i = rng_(6, 0)
    e = end(st(acc, c(1), ld(x, i)), i)
    k = sink(st(out, c(0), ld(after(acc, e), c(1))))
    xv = RNG.integers(-50, 50, 6).astype(np.int64)
    check(k, [np.zeros(1, np.int64), xv], {0: [int(xv[-1])]})


def test_reg_vector_accumulator_carried_across_outer_loop() -> None:
    """A 4-lane REG acc (SHRINK) zeroed once, += x row by row over two loops; the running total
    after each row is stored."""
    f32 = dtypes.float32
    out, x = buf(0, f32, 12), buf(1, f32, 24)
    acc = reg(0, f32, 4)
    zero = UOp(Ops.STACK, (c(0.0),) * 4)
    init = UOp(Ops.STORE, (UOp(Ops.SHRINK, (acc, c(0), c(4))), zero))
    r = rng_(3, 0)
    j = rng_(2, 1, init)
    a_in = after(acc, init, j)
    place = UOp(Ops.SHRINK, (a_in, c(0), c(4)))
    row = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (x, alu(Ops.MUL, alu(Ops.ADD, alu(Ops.MUL, r, c(2)), j),
                                                       c(4)), c(4))),))
    upd = UOp(Ops.STORE, (place, alu(Ops.ADD, UOp(Ops.LOAD, (place,)), row)))
    total = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (after(acc, end(upd, j)), c(0), c(4))),))
    k = sink(end(UOp(Ops.STORE, (UOp(Ops.SHRINK, (out, alu(Ops.MUL, r, c(4)), c(4))), total)), r))
    xv = RNG.integers(-8, 9, 24).astype(np.float32)
    want = np.cumsum(xv.reshape(6, 4), axis=0)[1::2].reshape(-1)
    check(k, [np.zeros(12, np.float32), xv], {0: want.tolist()})


def test_reg_accumulator_per_thread_carried_across_loop() -> None:
    """Four workers, each with its own acc zeroed once and carried across two loops."""
    out, x = buf(0, I64, 4 * 3), buf(1, I64, 4 * 6)
    acc = reg(0, I64, 1)
    g = UOp(Ops.SPECIAL, (c(4),), "gidx0")
    init = st(acc, c(0), i64(0))
    r = rng_(3, 0)
    j = rng_(2, 1, init)
    a_in = after(acc, init, j)
    xi = alu(Ops.ADD, alu(Ops.MUL, g, c(6)), alu(Ops.ADD, alu(Ops.MUL, r, c(2)), j))
    upd = st(a_in, c(0), alu(Ops.SUB, alu(Ops.MUL, ld(a_in, c(0)), c(2)), ld(x, xi)))
    res = st(out, alu(Ops.ADD, alu(Ops.MUL, g, c(3)), r), ld(after(acc, end(upd, j)), c(0)))
    k = sink(end(res, r))
    xv = RNG.integers(-9, 10, 24).astype(np.int64)
    want = []
    for gi in range(4):
        a = 0
        for ri in range(3):
            for ji in range(2):
                a = a * 2 - int(xv[gi * 6 + ri * 2 + ji])
            want.append(a)
    check(k, [np.zeros(12, np.int64), xv], {0: want})


# -- GLOBAL memory ---------------------------------------------------------------------------

@pytest.mark.parametrize("d", [1, 2, 5])
def test_global_read_after_write_at_distance(d: int) -> None:
    """out[i+d] = out[i]*2 + x[i]: iteration i reads what iteration i-d stored."""
    n = 12
    out, x = buf(0, I64, n + d), buf(1, I64, n)
    i = rng_(n, 0)
    k = sink(end(st(out, alu(Ops.ADD, i, c(d)), alu(Ops.ADD, alu(Ops.MUL, ld(out, i), c(2)),
                                                       ld(x, i))), i))
    xv = RNG.integers(-5, 6, n).astype(np.int64)
    o = RNG.integers(-5, 6, n + d).astype(np.int64)
    want = o.tolist()
    for t in range(n):
        want[t + d] = want[t] * 2 + int(xv[t])
    check(k, [o, xv], {0: want})


def test_global_rows_read_previous_outer_iteration() -> None:
    """out[(r+1)*m + j] = out[r*m + j] + out[(r+1)*m + j-1 or 0]: carried across both loops."""
    n, m = 4, 5
    out = buf(0, I64, (n + 1) * m)
    r, j = rng_(n, 0), rng_(m, 1)
    here = alu(Ops.ADD, alu(Ops.MUL, alu(Ops.ADD, r, c(1)), c(m)), j)
    above = alu(Ops.ADD, alu(Ops.MUL, r, c(m)), j)
    left = alu(Ops.ADD, alu(Ops.MUL, alu(Ops.ADD, r, c(1)), c(m)),
               alu(Ops.MAX, alu(Ops.SUB, j, c(1)), c(0)))
    k = sink(end(end(st(out, here, alu(Ops.ADD, ld(out, above), ld(out, left))), j), r))
    o = RNG.integers(-5, 6, (n + 1) * m).astype(np.int64)
    want = o.tolist()
    for ri in range(n):
        for ji in range(m):
            want[(ri + 1) * m + ji] = want[ri * m + ji] + want[(ri + 1) * m + max(ji - 1, 0)]
    check(k, [o], {0: want})


def test_global_write_after_read() -> None:
    """Each iteration stores out[i] and then reads out[i+1], which iteration i+1 stores later:
    the read sees the old value."""
    n = 10
    out, x, y = buf(0, I64, n + 1), buf(1, I64, n), buf(2, I64, n)
    i = rng_(n, 0)
    s1 = st(out, i, ld(x, i))
    s2 = st(y, i, ld(after(out, s1), alu(Ops.ADD, i, c(1))))
    k = sink(end(UOp(Ops.GROUP, (s1, s2)), i))
    o = RNG.integers(-50, 50, n + 1).astype(np.int64)
    xv = RNG.integers(-50, 50, n).astype(np.int64)
    want_o = o.tolist()
    want_y = [0] * n
    for t in range(n):
        want_o[t] = int(xv[t])
        want_y[t] = want_o[t + 1]
    check(k, [o, xv, np.zeros(n, np.int64)], {0: want_o, 2: want_y})


def test_global_read_modify_write_of_one_place() -> None:
    """out[0] = out[0]*3 + x[r*m+j] over two loops (the load is inside the loops through an
    AFTER on the inner RANGE; without it, it would run once, before them)."""
    n, m = 3, 4
    out, x = buf(0, I64, 1), buf(1, I64, n * m)
    r, j = rng_(n, 0), rng_(m, 1)
    o_j = after(out, j)
    v = alu(Ops.ADD, alu(Ops.MUL, ld(o_j, c(0)), c(3)), ld(x, flat([r, j], [n, m])))
    k = sink(end(end(st(o_j, c(0), v), j), r))
    xv = RNG.integers(-9, 10, n * m).astype(np.int64)
    a = 7
    for t in xv.tolist():
        a = a * 3 + t
    check(k, [np.array([7], np.int64), xv], {0: [a]})


@pytest.mark.parametrize("gated", [False, True])
def test_global_several_iterations_store_one_place_last_wins(gated: bool) -> None:
    """out[i % 3] = x[i] (under x[i] > 0 when gated): the last storing iteration wins."""
    n = 11
    out, x = buf(0, I64, 3), buf(1, I64, n)
    i = rng_(n, 0)
    gate = alu(Ops.CMPLT, i64(0), ld(x, i)) if gated else None
    k = sink(end(st(out, alu(Ops.CMOD, i, c(3)), ld(x, i), gate), i))
    xv = RNG.integers(-9, 10, n).astype(np.int64)
    want = [-1, -2, -3]
    for t in range(n):
        if not gated or xv[t] > 0:
            want[t % 3] = int(xv[t])
    check(k, [np.array([-1, -2, -3], np.int64), xv], {0: want})


def test_after_chain_orders_loops_and_in_place_update() -> None:
    """Loop A stores tmp[i] = x[i]; loop B, ordered after A (AFTER on tmp and RANGE order src),
    updates tmp[i] += tmp[i-1] in place (a prefix sum, carried) and a third loop reads it back
    reversed."""
    n = 9
    tmp, x, out = buf(0, I64, n), buf(1, I64, n), buf(2, I64, n)
    a = rng_(n, 0)
    ea = end(st(tmp, a, ld(x, a)), a)
    b = rng_(n - 1, 1, ea)
    t1 = after(tmp, ea)
    bi = alu(Ops.ADD, b, c(1))
    eb = end(st(t1, bi, alu(Ops.ADD, ld(t1, bi), ld(t1, b))), b)
    q = rng_(n, 2, eb)
    rev = alu(Ops.SUB, c(n - 1), q)
    k = sink(end(st(out, q, ld(after(tmp, eb), rev)), q))
    xv = RNG.integers(-9, 10, n).astype(np.int64)
    pre = np.cumsum(xv).tolist()
    check(k, [np.zeros(n, np.int64), xv, np.zeros(n, np.int64)],
          {0: pre, 2: pre[::-1]})


def test_inner_loop_reads_what_previous_outer_iteration_wrote_through_reg() -> None:
    """A REG row buffer: outer iteration r reads row[j] (left by r-1) and rewrites it."""
    n, m = 4, 3
    out = buf(0, I64, n * m)
    row = reg(0, I64, m)
    z = rng_(m, 0)
    ez = end(st(row, z, i64(1)), z)
    r = rng_(n, 1, ez)
    j = rng_(m, 2)
    rj = after(row, ez, j)
    new = alu(Ops.ADD, alu(Ops.MUL, ld(rj, j), c(2)), UOp(Ops.CAST, (r,), I64))
    s = st(rj, j, new)
    so = st(out, flat([r, j], [n, m]), ld(after(row, s), j))
    k = sink(end(end(so, j), r))
    want = []
    vals = [1] * m
    for ri in range(n):
        for ji in range(m):
            vals[ji] = vals[ji] * 2 + ri
            want.append(vals[ji])
    check(k, [np.zeros(n * m, np.int64)], {0: want})
