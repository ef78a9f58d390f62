"""Loops of one trip folded into straight-line code (issue 24 item 2).

Remainder loops come out of unroll-and-jam (passes/unroll.py: 77 = 4·19 + 1) and of widening
(passes/widen_tail.py) with a constant bound of 1, ordered after the main loop by an order src
(`RANGE(1, END(main))`). passes/unroll_tiny.py leaves a nest with an AFTER alone (an
accumulator), and nothing else folded them: the selector kept the loop, its counter a
register zeroed, compared and branched on around a body that runs once (sum_odd's r_333_77,
softmax_odd's rows, 42 kernels of the sweep). Here such a RANGE becomes the constant 0:

- a use of it as a value (index arithmetic, an inner RANGE's bound) becomes 0;
- a use of it as an order src (an AFTER's deps, an inner RANGE's order srcs) becomes its own
  order srcs and the loops that enclose it (`_enclosing`: those it depends on and those its
  END lies in, as linearize nests them): what the loop was ordered after, the body still is,
  and it stays in the loops it was in. A carried accumulator's init or load ordered by the
  RANGE alone was otherwise hoisted out of an outer loop (branch tail19, reverted;
  tests/ir/test_interp_carried.py, tests/fuzz/test_fuzz_shapes.py);
- an END closing it becomes its body (the END's other RANGEs, if any, still close it), so an
  AFTER or RANGE ordered after the END is ordered after the body's effects;
- a place in the body (an INDEX or SHRINK that depends on it) whose buffer operand does not
  is given the loop's order srcs, `AFTER(buffer, srcs…)`, when the buffer is stored anywhere
  in the kernel: the body's loads and stores of a PARAM were ordered after the main loop by
  the counter alone (sum_odd's tail stores out[332] after the main loop's END), and a store
  nested in an outer loop (an enclosing loop) stays in it. A buffer no STORE writes needs no
  order (a read-only input).

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
from kcc.ir.uop import UOp, buffer_of, toposort
from kcc.passes.linearize import range_sets, split_end


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


def _enclosing(order: list[UOp], dep: dict[UOp, frozenset[UOp]], units: set[UOp]
               ) -> dict[UOp, tuple[UOp, ...]]:
    """The loops that enclose each folded RANGE r, in graph order: those r depends on and
    those its END lies in, `(dep[r] - {r}) | dep[END(r)]` as linearize nests them
    (kcc/passes/linearize.py), less the END's other RANGEs and the loops inside those. An order
    use of r is inside them; the constant 0 that replaces r is not, so an AFTER or a place
    that was ordered by r alone would leave them (a carried accumulator's init and load
    hoisted out of the outer loop)."""
    pos = {x: i for i, x in enumerate(order)}
    out: dict[UOp, tuple[UOp, ...]] = {}
    for x in order:
        if x in units:
            out[x] = tuple(dep[x] - {x})
        if x.op is not Ops.END:
            continue
        closed = set(x.src[1:])
        if not closed & units:
            continue
        inside = {a for a in dep[x] if a in closed or dep[a] & closed}
        nest = _nest(x, pos)
        for i, r in enumerate(nest):
            if r in units:      # (and the END's RANGEs that nest outside r: END(x, i, r))
                out[r] += tuple(dep[x] - inside) + tuple(nest[:i])
    return {r: tuple(sorted(set(v), key=pos.__getitem__)) for r, v in out.items()}


def _nest(end: UOp, pos: dict[UOp, int]) -> list[UOp]:
    """The RANGEs an END closes, outermost first, as linearize nests them (split_end: by
    dependency, then docs/semantics.md's loop order; END(x, i, j) is `for i: for j: x`)."""
    rs = list(dict.fromkeys(end.src[1:]))
    if len(rs) == 1:
        return rs
    out, e = [], split_end(pos, end)
    for _ in rs:
        out.append(e.src[1])
        e = e.src[0]
    return out


def _toposort_with(sink: UOp, more: dict[UOp, tuple[UOp, ...]]) -> list[UOp]:
    """The nodes under sink, each after its srcs and after the nodes more[node] names (each
    visited once, iterative DFS)."""
    out: list[UOp] = []
    seen: set[UOp] = set()
    stack: list[tuple[UOp, bool]] = [(sink, False)]
    while stack:
        x, done = stack.pop()
        if done:
            out.append(x)
            continue
        if x in seen:
            continue
        seen.add(x)
        stack.append((x, True))
        stack.extend((s, False) for s in reversed((*x.src, *more.get(x, ()))) if s not in seen)
    return out


def fold_unit_loops(sink: UOp) -> UOp:
    """sink with every loop of one trip folded (module docstring); sink itself if none. The
    constant 0 is left in its uses (`MUL(0, 5)`) for the pipeline's next simplify step."""
    order = toposort([sink])
    dep = range_sets(order)
    units = _unit_ranges(order, dep)
    if not units:
        return sink
    stored = {buffer_of(x.src[0]) for x in order if x.op is Ops.STORE}   # buffers written
    order_of_units = [x for x in order if x in units]      # (a set's order is not fixed)
    outer = _enclosing(order, dep, units)
    new: dict[UOp, UOp] = {}
    # a folded RANGE's order srcs and enclosing loops (rebuilt), what an order use of it becomes
    after: dict[UOp, tuple[UOp, ...]] = {}

    def orders(srcs: tuple[UOp, ...]) -> tuple[UOp, ...]:
        """Order srcs rebuilt: a folded RANGE replaced by what it stood for (`after`)."""
        out: list[UOp] = []
        for s in srcs:
            out.extend(after[s] if s in after else (new[s],))
        return tuple(dict.fromkeys(out))

    # a walk in which each folded RANGE comes after the loops that enclose it: one of them may
    # come later in the graph's toposort (a RANGE that depends on no outer loop, ordered only
    # by its END's body), and an order use of the RANGE needs it rebuilt
    for x in _toposort_with(sink, outer):
        if x in units:
            after[x] = orders(x.src[1:] + outer[x])
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
    return new[sink]
