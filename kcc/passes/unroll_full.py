"""Full unrolling of short innermost reduce loops (a GPU target's choice, issue 25).

tinygrad's GPU reductions run a short loop per work-item into a REG accumulator, often twice
(the partial sums, then the workgroup's LDS values after a BARRIER):

    acc[0] = 0
    for j in range(16):                          # constant bound
        acc[0] = acc[0] + LOAD(x[base + j])      # acc read through AFTER(acc, init, RANGE)
    … acc[0] …

On a GPU each iteration costs a counter increment, a compare and a branch (and kcc's AMD code
waits for every outstanding load before a branch), around one add. This pass replaces such a
loop by its N iterations in order: copy k is the body with the counter replaced by the
constant k, and the ordering the loop gave (iteration k after iteration k-1) is kept by
replacing the counter where it is an ordering src (an AFTER's dependency) with the previous
copy's body (copy 0: the RANGE's own order srcs). Every copy computes the values iteration k
computed, with the same ops in the same order, so results are bit-identical. The constant
index then folds into an address displacement (`unroll._constant_out`), so a selector
addresses all N loads from one base register.

**Legality** (the loop is left alone otherwise): its bound is a constant N with
1 ≤ N ≤ `TargetDesc.full_unroll`; it is innermost (no RANGE or END in its body) and outermost
(its body depends on no other RANGE: a GPU work-item's loop); its END closes
it alone and every node that depends on its RANGE lies under that END; the body stores only
into REG buffers, and every access to such a buffer in the body reads it through an AFTER
that depends on the RANGE (so the copies' chaining orders all of them); there is no BARRIER.
Loads of GLOBAL and LOCAL buffers are values; since the body stores none, their order against
each other does not matter. N copies of the body stay under MAX_NODES nodes (compile time and
code size).
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer, rebuild, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc
from kcc.passes.unroll import _constant_out

MAX_NODES = 1200          # N × the nodes of one body that depend on the counter


def _candidate(r: UOp, end: UOp, order: list[UOp], dep: dict[UOp, frozenset[UOp]],
               limit: int) -> list[UOp] | None:
    """The nodes that depend on r (the body, srcs first) when the loop may be unrolled."""
    n = const_int(r.src[0])
    if n is None or not 1 <= n <= limit or len(end.src) != 2:
        return None
    cone = set(toposort([end.src[0]]))
    body = [x for x in order if r in dep[x] and x is not end]
    if any(x not in cone for x in body):
        return None
    if any(dep[x] != frozenset((r,)) for x in body):
        # inside another loop: a REG accumulator carried across the outer iterations would be
        # read by copy 0 through AFTERs that no longer name a range of the nest, which
        # linearize would then hoist out of it (found by scripts/fuzz_amd.py, seed 11)
        return None
    if n * len(body) > MAX_NODES:
        return None
    if any(x.op in (Ops.RANGE, Ops.END, Ops.BARRIER) and x is not r for x in body):
        return None
    if ordered_reg_stores(body, r) is None:
        return None
    return body


def ordered_reg_stores(body: list[UOp], r: UOp) -> set[UOp] | None:
    """The buffers a loop body (over r) stores to, or None where a STORE writes anything but
    a register buffer or an access of a stored buffer is not ordered by r (an AFTER naming r):
    only then do the unrolled copies keep the loop's order of reads and writes."""
    stored: set[UOp] = set()
    for x in body:
        if x.op is Ops.STORE:
            b = base_buffer(place_buffer(x.src[0]))
            if b.op is not Ops.BUFFER or b.arg.addrspace is not AddrSpace.REG:
                return None
            stored.add(b)
    for x in body:
        if x.op in (Ops.LOAD, Ops.STORE) and base_buffer(place_buffer(x.src[0])) in stored \
                and not _ordered_by(place_buffer(x.src[0]), r):
            return None
    return stored


def place_buffer(place: UOp) -> UOp:
    """The buffer node (an AFTER chain or the BUFFER/PARAM) a place indexes."""
    b = place
    while b.op in (Ops.INDEX, Ops.SHRINK):
        b = b.src[0]
    return b


def _ordered_by(b: UOp, r: UOp) -> bool:
    """Whether an AFTER chain over a buffer lists r among its dependencies."""
    while b.op is Ops.AFTER:
        if r in b.src[1:]:
            return True
        b = b.src[0]
    return False


def chained_copies(body: list[UOp], r: UOp, end_body: UOp, counters: list[UOp],
                   first: tuple[UOp, ...]) -> list[UOp]:
    """The copies of a loop body (its nodes that depend on r, srcs first; end_body: the
    END's src 0), copy k at counter counters[k], each ordered after the one before it: where r is
    an ordering src (an AFTER's dependency) copy k takes copy k-1's body, copy 0 `first` (an
    AFTER left with no dependency is its buffer). Returns each copy's body (the module
    docstring; passes/unroll_runtime.py's main loop too)."""
    bodies: list[UOp] = []
    for counter in counters:
        new: dict[UOp, UOp] = {}
        for x in body:
            if x is r:
                continue
            srcs: list[UOp] = []
            for i, s in enumerate(x.src):
                if s is r and x.op is Ops.AFTER and i > 0:
                    # the ordering the loop gave: after the previous iteration's effects
                    srcs += [bodies[-1]] if bodies else list(first)
                elif s is r:
                    srcs.append(counter)
                else:
                    srcs.append(new.get(s, s))
            if x.op is Ops.AFTER and len(srcs) == 1:
                new[x] = srcs[0]
            elif tuple(srcs) != x.src:
                new[x] = _constant_out(x.replace(src=tuple(srcs)))
        bodies.append(new.get(end_body, end_body))
    return bodies


def _unroll_one(sink: UOp, order: list[UOp], r: UOp, end: UOp, body: list[UOp]) -> UOp:
    n = const_int(r.src[0])
    assert n is not None
    counters = [strong_int(k, r.dtype) for k in range(n)]
    bodies = chained_copies(body, r, end.src[0], counters, r.src[1:])
    group = UOp(Ops.GROUP, tuple(dict.fromkeys(bodies)))
    return rebuild(order, {end: group}).get(sink, sink)


def unroll_full(sink: UOp, desc: TargetDesc) -> UOp:
    """Unroll every loop the module docstring allows, one at a time."""
    if desc.full_unroll <= 0:
        return sink
    while True:
        order = toposort([sink])
        dep = range_sets(order)
        ends: dict[UOp, UOp] = {}
        for x in order:
            if x.op is Ops.END and len(x.src) == 2:
                ends.setdefault(x.src[1], x)
        for r, end in ends.items():
            body = _candidate(r, end, order, dep, desc.full_unroll)
            if body is not None:
                sink = _unroll_one(sink, order, r, end, body)
                break
        else:
            return sink
