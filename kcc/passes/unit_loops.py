"""Loops of one trip folded into straight-line code (issue 24 item 2).

Remainder loops come out of unroll-and-jam (passes/unroll.py: 77 = 4·19 + 1) and of widening
(passes/widen_tail.py) with a constant bound of 1, ordered after the main loop by an order src
(`RANGE(1, END(main))`). passes/unroll_tiny.py leaves a nest with an AFTER alone (an
accumulator), and nothing else folded them: the selector kept the loop, its counter a
register zeroed, compared and branched on around a body that runs once (sum_odd's r_333_77,
softmax_odd's rows, 42 kernels of the sweep). Here such a RANGE becomes the constant 0:

- a use of it as a value (index arithmetic, an inner RANGE's bound) becomes 0;
- a use of it as an order src (an AFTER's deps, an inner RANGE's order srcs) becomes its own
  order srcs: what the loop was ordered after, the body still is;
- an END closing it becomes its body (the END's other RANGEs, if any, still close it), so an
  AFTER or RANGE ordered after the END is ordered after the body's effects;
- a place in the body (an INDEX or SHRINK that depends on it) whose buffer operand does not
  is given the loop's order srcs, `AFTER(buffer, srcs…)`, when the buffer is stored anywhere
  in the kernel: the body's loads and stores of a PARAM were ordered after the main loop by
  the counter alone (sum_odd's tail stores out[332] after the main loop's END), and a store
  nested in an outer loop (an order src that is a RANGE) stays in it. A buffer no STORE
  writes needs no order (a read-only input).

The pipeline folds them after its widen step (kcc/targets/pipeline.py), not after unroll:
a folded middle loop of a nest (unroll jams conv1d's 12-column loop whole, leaving a RANGE of
1 between the rows and the reduction) changes what widen makes of the nest (r_2_16_12_8_3
316 -> 703 ns).

A loop whose END body holds an effect that does not depend on the RANGE (it is inside the
loop only by the END) or a BARRIER is left alone: its order would rest on the END alone.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc


def _unit_ranges(order: list[UOp], dep: dict[UOp, frozenset[UOp]]) -> set[UOp]:
    """The RANGEs of constant bound 1 whose loops can be folded (module docstring)."""
    units = {x for x in order if x.op is Ops.RANGE and const_int(x.src[0]) == 1}
    if not units:
        return units
    for x in order:
        if x.op is Ops.BARRIER and dep[x] & units:
            units -= dep[x]
        if x.op is not Ops.END or not (units & set(x.src[1:])):
            continue
        # effects reached through the END's body (GROUPs and inner ENDs): each must depend
        # on the RANGE (placement, docs/semantics.md), else the fold would loosen its order
        stack, seen = [x.src[0]], set()
        while stack:
            b = stack.pop()
            if b in seen:
                continue
            seen.add(b)
            if b.op is Ops.GROUP:
                stack.extend(b.src)
                continue
            for r in x.src[1:]:
                if r in units and r not in dep[b]:
                    units.discard(r)
    return units


def fold_unit_loops(sink: UOp, desc: TargetDesc | None = None) -> UOp:
    """sink with every loop of one trip folded (module docstring); sink itself if none."""
    order = toposort([sink])
    dep = range_sets(order)
    units = _unit_ranges(order, dep)
    if not units:
        return sink
    stored = set()                  # buffers some STORE writes
    for x in order:
        if x.op is Ops.STORE:
            b = x.src[0]
            while b.op in (Ops.INDEX, Ops.SHRINK, Ops.AFTER):
                b = b.src[0]
            stored.add(b)
    order_of_units = [x for x in order if x in units]      # (a set's order is not fixed)
    new: dict[UOp, UOp] = {}
    # a folded RANGE's order srcs (rebuilt), what an order use of it becomes
    after: dict[UOp, tuple[UOp, ...]] = {}

    def orders(srcs: tuple[UOp, ...]) -> tuple[UOp, ...]:
        """Order srcs rebuilt: a folded RANGE replaced by its own order srcs."""
        out: list[UOp] = []
        for s in srcs:
            out.extend(after[s] if s in after else (new[s],))
        return tuple(dict.fromkeys(out))

    for x in order:
        if x in units:
            after[x] = orders(x.src[1:])
            new[x] = strong_int(0, x.dtype)
            continue
        if x.op is Ops.END:
            rs = tuple(new[r] for r in x.src[1:] if r not in units)
            body = new[x.src[0]]
            out = UOp(Ops.END, (body, *rs), x.arg) if rs else body
            new[x] = x if len(rs) == len(x.src) - 1 and body is x.src[0] else out
            continue
        if x.op in (Ops.AFTER, Ops.RANGE):
            srcs = (new[x.src[0]], *orders(x.src[1:]))
        else:
            srcs = tuple(new[s] for s in x.src)
        if x.op in (Ops.INDEX, Ops.SHRINK) and dep[x] & units \
                and not dep[x.src[0]] & units:
            b = x.src[0]
            while b.op is Ops.AFTER:
                b = b.src[0]
            if b in stored:
                pre = orders(tuple(r for r in order_of_units if r in dep[x]))
                if pre:
                    srcs = (UOp(Ops.AFTER, (srcs[0], *pre)), *srcs[1:])
        if x.op is Ops.AFTER and len(srcs) == 1:
            new[x] = srcs[0]        # (its only dep was a folded RANGE with no order srcs)
        else:
            new[x] = x if srcs == x.src else x.replace(src=srcs)
    out = new[sink]
    if desc is None:
        return out
    from kcc.passes.simplify import simplify
    return simplify(out, desc)
