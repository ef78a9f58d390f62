"""Full unrolling of short widened reduce loops inside other loops (a CPU target's choice,
issue 24 item 2; the nested, vector sibling of passes/unroll_full.py).

After passes/widen.py (widen_reduce's partial-sum vectors) and passes/unroll.py's jam, a row
reduction of a short row is a loop of a few vector iterations inside the row loop: bool_sum's
r_333_77 counts `0 < x` over rows of 77 floats, 4 rows jammed, as 9 iterations of 4 ymm
compares and subtractions, then one overlapping last block. Each row group runs the short
loop's counter, compare and branch 9 times and leaves it once, and the loop's exit is what
the CPU mispredicts: measured (a C harness calling the entry in a loop, this 2-core
Sapphire Rapids host) 1418 ns a call as a loop against 1144 ns for the same code with the 9
iterations written out, clang's 1315 ns (one row at a time, its 9 blocks unrolled).

This pass replaces such a loop by its N iterations in order, chained as unroll_full chains
its copies (`unroll_full.chained_copies`: where the counter is an AFTER's ordering src, copy
k takes copy k-1's body, copy 0 the RANGE's own ordering srcs), so every copy runs the ops of
its iteration in the original order on what the one before left: the same operations on the
same values, bit-identical results. The constant counters fold into address displacements
(unroll._constant_out), and each copy's row offset joins them (`_join_offsets`).

**Legality** (the loop is left alone otherwise): its bound is a constant N with
2 <= N <= `TargetDesc.reduce_unroll`; it is innermost (no RANGE, END or BARRIER in its body)
and its END closes it alone, every node that depends on its RANGE lies under that END; the
body stores only REG buffers and every access to one reads it through an AFTER that depends
on the RANGE (`unroll_full.ordered_reg_stores`); it does vector work (a loop of scalars is
passes/unroll_inner.py's, before widening); and every body node depends on no loop the
RANGE itself does not (the RANGE's ordering srcs name the loops around it: copy 0's AFTERs,
which take those srcs, then stay inside the same loops, and linearize cannot hoist them out).
A loop no other loop encloses is left to the loop's own code here (it runs once a launch).

**Cost**: N times the body's work (ALU ops and loads of non-register buffers: the register
accumulators' loads and stores are moves the allocator removes) is at most MAX_WORK, about
what clang's full unrolling allows (straight-line code the decoders and the µop cache hold).
"""

from __future__ import annotations

from kcc.ir.consts import _wrap, const_int, const_value, strong_int
from kcc.ir.ops import ALU, Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, rebuild, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc
from kcc.passes.unroll_full import chained_copies, ordered_reg_stores, place_buffer

# the most work (ALU ops and non-register loads, times the trip count) a loop unrolled here
# may do: bool_sum's r_333_77 does 16 an iteration (4 rows of a load, a compare, a cast and
# an add) over 9 iterations, 144; argmax's r_333_77 23 (each row's compare, select and max,
# and the index vector's arithmetic), 207 (1.00x -> 1.17x clang once unrolled)
MAX_WORK = 256


def _work(x: UOp) -> int:
    """1 for a node that is an instruction of the unrolled code, 0 for a place, an effect
    list or a register accumulator's load or store."""
    if x.op is Ops.LOAD:
        b = base_buffer(place_buffer(x.src[0]))
        return int(not (b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.REG))
    return int(x.op in ALU)


def _body(r: UOp, end: UOp, order: list[UOp], dep: dict[UOp, frozenset[UOp]],
          limit: int) -> list[UOp] | None:
    """The nodes that depend on r (srcs first) when the module docstring allows unrolling
    the loop over r closed by end, else None."""
    n = const_int(r.src[0])
    if n is None or not 2 <= n <= limit or len(end.src) != 2 or dep[r] == {r}:
        return None
    outer = dep[r]
    body = [x for x in order if r in dep[x] and x is not end]
    if any(x.op in (Ops.RANGE, Ops.END, Ops.BARRIER) and x is not r or not dep[x] <= outer
           for x in body):
        return None
    if not any(x.shape and x.kind == "value" and x.op is not Ops.AFTER for x in body):
        return None         # (scalar work: not a loop widening made)
    if n * sum(_work(x) for x in body) > MAX_WORK:
        return None
    cone = set(toposort([end.src[0]]))
    if any(x not in cone for x in body) or not ordered_reg_stores(body, r):
        return None         # (None, or nothing stored: not a reduction)
    return body


def _join_offsets(sink: UOp) -> UOp:
    """sink with every scalar integer `MULACC(a, b, c1) + c2` rewritten as `MULACC(a, b,
    c1 + c2)` (wrapped: exact modulo 2^bits). A jammed row's index is tinygrad's
    `MULACC(row, cols, counter) + row offset`; with the counter a constant, the copies'
    places are then one base plus a constant (an address displacement), not a sum a
    selector computes again for each copy. Only in a kernel this pass changed, not in every
    kernel (simplify): the same rewrite makes the places of a widened loop's overlapping
    last block those of its first (one load node for both), which the x86 selector's
    gathers, each of loads of its own, then cannot take (tests/passes/test_widen_stride.py,
    77 x 20)."""
    out: dict[UOp, UOp] = {}
    for x in toposort([sink]):
        srcs = tuple([out.get(s, s) for s in x.src])
        y = x if srcs == x.src else x.replace(src=srcs)
        if y.op in (Ops.ADD, Ops.MULACC) and not y.shape and y.dtype is not None \
                and y.dtype.is_int:
            y = _offset_out(y)
        if y is not x:
            out[x] = y
    return out.get(sink, sink)


def _offset_out(y: UOp) -> UOp:
    """An integer sum y with its constant addend outermost (wrapped, exact): MULACC(a, b, x + c)
    → MULACC(a, b, x) + c (conv1d's copies: `MULACC(batch, 112, col + 14k)`), (x + c1) + c2
    → x + (c1 + c2), and MULACC(a, b, c1) + c2 → MULACC(a, b, c1 + c2)."""
    dt = y.dtype
    if y.op is Ops.MULACC:
        if len(y.src) != 3 or y.src[2].op is not Ops.ADD or y.src[2].dtype != dt:
            return y
        x, c = y.src[2].src
        if const_value(c) is None:
            return y
        return UOp(Ops.ADD, (UOp(Ops.MULACC, (y.src[0], y.src[1], x)), c))
    m, c2 = y.src
    v2 = const_value(c2)
    if v2 is None or m.dtype != dt:
        return y
    if m.op is Ops.MULACC and len(m.src) == 3 and (v1 := const_value(m.src[2])) is not None:
        c = strong_int(_wrap(int(v1[0]) + int(v2[0]), dt), dt)
        return UOp(Ops.MULACC, (m.src[0], m.src[1], c))
    if m.op is Ops.ADD and (v1 := const_value(m.src[1])) is not None:
        return UOp(Ops.ADD, (m.src[0], strong_int(_wrap(int(v1[0]) + int(v2[0]), dt), dt)))
    return y


def unroll_reduce(sink: UOp, desc: TargetDesc) -> UOp:
    """Unroll every loop the module docstring allows, one at a time (a later loop may read
    an earlier one's result: softmax's sum after its max)."""
    limit = desc.reduce_unroll
    if limit < 2:
        return sink
    start = sink
    while True:
        order = toposort([sink])
        ends = [x for x in order if x.op is Ops.END and len(x.src) == 2
                and (n := const_int(x.src[1].src[0])) is not None and 2 <= n <= limit]
        if not ends:
            break               # (most kernels: no short loop, no range sets)
        dep = range_sets(order)
        for end in ends:
            r = end.src[1]
            body = _body(r, end, order, dep, limit)
            if body is None:
                continue
            n = const_int(r.src[0])
            assert n is not None
            counters = [strong_int(k, r.dtype) for k in range(n)]
            bodies = chained_copies(body, r, end.src[0], counters, r.src[1:])
            group = UOp(Ops.GROUP, tuple(dict.fromkeys(bodies)))
            sink = rebuild(order, {end: group}).get(sink, sink)
            break
        else:
            break
    if sink is start:
        return sink
    # each copy's counter folds to a constant (simplify), which its row offset then joins
    from kcc.passes.simplify import simplify
    return _join_offsets(simplify(sink, desc))
