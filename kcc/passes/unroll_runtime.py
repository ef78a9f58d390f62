"""Unrolling of small scalar reduce loops whose bound is a runtime value (a CPU target's
choice, issue 24 item 2; the symbolic-bound sibling of passes/unroll_full.py).

tinygrad's symbolic shapes give reduce loops a bound read from a scalar PARAM (sym_sum's
r_n: `acc = acc + 2*x[i] + 1` for i < n). Such a loop's body is a load and one or two float
ops, and each iteration also runs a counter increment, a compare and a branch; clang unrolls
it by 8 and ran 1.04x faster than kcc's loop. This pass runs it as

    for i2 in range(max(n, 0) >> log2 k):          # the main loop (widen_tail.split)
        body(k*i2); body(k*i2 + 1); …; body(k*i2 + k-1)
    for i3 in range(max(n, 0) - (main << log2 k)):  # the remainder (widen_tail.tail_loop)
        body(k*(n // k) + i3)

Copy j is ordered after copy j-1 exactly as unroll_full chains its copies
(`unroll_full.chained_copies`: the counter where it is an AFTER's ordering src becomes the
previous copy's body; copy 0's the main loop's RANGE), so every iteration runs its ops in
the original order on the values the previous one left: one accumulator chain, the same
additions in the same order, bit-identical results. Only the loop control of k-1 iterations
of every k goes (and the copies' counters fold into address displacements,
unroll._constant_out).

**Legality** (the loop is left alone otherwise): its bound is not a constant (constant bounds
are passes/unroll.py's and widen's); it is innermost (no RANGE, END or BARRIER in its body),
its END closes it alone and every node that depends on its RANGE lies under that END; the
body stores only REG buffers and every access to one reads it through an AFTER that
depends on the RANGE (as unroll_full asks: the chaining then orders them all); the body is
scalar (a loop widen vectorized is not touched).

**Cost**: the body does at most MAX_WORK loads, stores and ALU ops, where one iteration's
loop control (an add and a fused compare-branch) is a large part of the loop's µops and the
chain's latency alone does not hide it; the factor is `TargetDesc.runtime_unroll` (x86: 4;
a colleague's hand-unrolled sym_sum reached 1.01x clang by 4 with a remainder loop).
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.ops import ALU, Ops
from kcc.ir.uop import UOp, rebuild, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc
from kcc.passes.unroll_full import chained_copies, ordered_reg_stores
from kcc.passes.widen_tail import split, tail_loop

# the most loads, stores and ALU ops one iteration may do (sym_sum's r_n does 5: two loads,
# a multiply-add, an add and a store; sym_matvec's r_n_16, 27, is left a loop: its 16
# multiply-adds hide the loop control)
MAX_WORK = 8
_WORK = ALU | frozenset({Ops.LOAD, Ops.STORE})


def _body(r: UOp, end: UOp, order: list[UOp], dep: dict[UOp, frozenset[UOp]]
          ) -> list[UOp] | None:
    """The nodes that depend on r (srcs first) when the module docstring allows unrolling
    the loop over r closed by end, else None."""
    if const_int(r.src[0]) is not None or len(end.src) != 2:
        return None
    body = [x for x in order if r in dep[x] and x is not end]
    cone = set(toposort([end.src[0]]))
    if any(x not in cone for x in body):
        return None
    work = 0
    for x in body:
        if x.op in (Ops.RANGE, Ops.END, Ops.BARRIER) and x is not r \
                or x.shape and x.op is not Ops.AFTER:      # (an AFTER: a buffer)
            return None
        work += x.op in _WORK
    if work > MAX_WORK or not ordered_reg_stores(body, r):    # (None, or nothing stored)
        return None
    return body


def _unroll_one(sink: UOp, order: list[UOp], r: UOp, end: UOp, body: list[UOp],
                k: int) -> UOp:
    """sink with the loop over r (closed by end) run as a main loop of k chained copies and
    a remainder loop (module docstring)."""
    dt = r.dtype
    main, start = split(r, k)
    r2 = UOp(Ops.RANGE, (main,) + r.src[1:], r.arg)
    base = UOp(Ops.MUL, (r2, strong_int(k, dt)))
    counters = [base] + [UOp(Ops.ADD, (base, strong_int(j, dt))) for j in range(1, k)]
    bodies = chained_copies(body, r, end.src[0], counters, (r2,))
    out = UOp(Ops.END, (UOp(Ops.GROUP, tuple(dict.fromkeys(bodies))), r2))
    assert start is not None        # (a symbolic bound: split always makes a remainder)
    out = tail_loop(r, end, body, out, start)
    return rebuild(order, {end: out}).get(sink, sink)


def unroll_runtime(sink: UOp, desc: TargetDesc) -> UOp:
    """Unroll every loop the module docstring allows by `desc.runtime_unroll`, one at a
    time (each made loop is taken once: its bound is then the main loop's or its remainder's,
    which the pass marks done)."""
    k = desc.runtime_unroll
    if k <= 1:
        return sink
    done: set[UOp] = set()
    while True:
        order = toposort([sink])
        if not any(x.op is Ops.RANGE and x.arg not in done and const_int(x.src[0]) is None
                   for x in order):
            return sink         # (most kernels: no loop of runtime bound, no range sets)
        dep = range_sets(order)
        for x in order:
            if x.op is not Ops.END or len(x.src) != 2 or x.src[1].arg in done:
                continue
            r = x.src[1]
            body = _body(r, x, order, dep)
            if body is not None:
                done.add(r.arg)         # (the main and remainder loops keep r's axis)
                sink = _unroll_one(sink, order, r, x, body, k)
                break
        else:
            return sink
