"""Full unrolling of short widened loops (a CPU target's choice, issue 24 item 2; the sibling
of passes/unroll_tiny.py, which leaves a nest that widening would vectorize alone).

After passes/widen.py, tinygrad's small elementwise kernels are loops of a few vector
iterations: u64_shift's E_50 is 12 iterations of two 4-lane loads, two shifts, an XOR and a
store (and one overlapping last block), i32_mul_wrap's E_333 41 of a load, a VPMULLD and a
store. Each iteration also runs a counter, a compare and a branch, and addresses its memory
through an index register (`[rsi + rax*8]`), which keeps loads out of the VEX three-operand
ops (kcc/isel/x86/ivec.py `rm`: such a fused load is two µops anyway). clang unrolls these
loops whole: straight-line blocks at constant displacements, each load folded into its op.
This pass does the same after widening (the pipeline's `widen` step is `widen_and_unroll`:
widen's own tests see its loops): a loop nest whose copies are at most
`2 * TargetDesc.tiny_unroll` nodes (a vector node counted once: one instruction, not one a
lane as unroll_tiny counts before widening) becomes its iterations, each RANGE a constant in
each copy, and simplify folds every copy's index arithmetic to a constant.

A MULHI that reads loaded data counts as a sequence (`_heavy`), as unroll_tiny's
polynomials and divisions do.

**Legality** is unroll_tiny's `_nest` (the nest is outermost, its RANGEs have constant bounds,
it has no REG or LOCAL buffer, AFTER or BARRIER, it stores only PARAM buffers it does not
load, and no element is stored by two iterations), so the copies may run in any order; and
the nest holds vector work (a loop of scalars is unroll_tiny's, judged before widening).
Each copy computes what its iteration did with the same ops: the results are bit-identical.

**Short inner loops** (`_inner`): a widened loop inside another (shrink_expand's E_35_50: 35
rows of 50 floats, each row 3 blocks of 16 lanes and an overlapping last one) stays a loop of
3 iterations, its counter, compare and branch once a block and its places indexed; clang
unrolls such a row whole. An inner END of vector work whose copies are at most
`INNER_BUDGET` nodes (a vector node once) over at most `INNER_TRIPS` iterations becomes its
copies inside the outer loop, under passes/unroll_inner.py's legality (constant bounds, only
PARAM stores, nothing loaded that it stores, stores affine in its counters and disjoint
across iterations), so the copies may run in any order. A kernel widen leaves alone gets
this step too, on slp's vectors: repeat_roll's E_2_8_6_4 (2 x 8 rows, each a blend of
four loads stored six times) copies its loop of 8 into the loop of 2, whose copies' loads
LICM then hoists (clang's code: 16 vectors computed once, then the stores).
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, rebuild, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc

# the inner loops `_inner` unrolls: at most this many iterations, and this many nodes of
# copies (a vector node once; repeat_roll's 8 rows count 88): a row of a few blocks, not a
# body that grows the outer loop's code past what the decoders and the µop cache hold
INNER_TRIPS = 8
INNER_BUDGET = 96


def widen_and_unroll(sink: UOp, desc: TargetDesc) -> UOp:
    """The pipeline's `widen` step: passes/widen.py, then lanes of two ops blended
    (slp_blend.blend_stacks) and rows' horizontal reductions transposed
    (passes/reduce_transpose.py), then the short loops it widened unrolled
    (`unroll_widened`; widen itself, as its tests call it, keeps its loops), then short
    vector reduce loops inside other loops (passes/unroll_reduce.py), and last the small
    scalar loops of runtime bound it left unrolled (passes/unroll_runtime.py)."""
    out = _widen_and_unroll(sink, desc)
    if desc.reduce_unroll > 1:
        from kcc.passes.unroll_reduce import unroll_reduce
        out = unroll_reduce(out, desc)
    if desc.runtime_unroll > 1:
        from kcc.passes.unroll_runtime import unroll_runtime
        out = unroll_runtime(out, desc)
    return out


def _widen_and_unroll(sink: UOp, desc: TargetDesc) -> UOp:
    """widen_and_unroll before the loops of runtime bound."""
    from kcc.passes.widen import widen
    wide = widen(sink, desc)
    from kcc.passes.simplify import keep_params
    if wide is sink:        # (no loop widened: slp's vectors in short inner loops alone)
        return keep_params(sink, unroll_widened(sink, desc, outermost=False))
    if desc.vector_regs:    # lanes of two ops widening made (passes/slp_blend.py)
        from kcc.passes.reduce_transpose import reduce_transpose
        from kcc.passes.slp_blend import blend_stacks
        order = toposort([wide])             # (one walk for all three when none rewrites)
        blended = blend_stacks(wide, desc, order)
        new = reduce_transpose(blended, desc, order if blended is wide else None)
        return keep_params(sink, unroll_widened(new, desc, order=order if new is wide else None))
    return keep_params(sink, unroll_widened(wide, desc))


def unroll_widened(sink: UOp, desc: TargetDesc, outermost: bool = True,
                   order: list[UOp] | None = None) -> UOp:
    """Unroll every outermost nest of vector work the module docstring allows (outermost
    False: only the short inner loops, `_inner`). order: sink's toposort, when the caller
    has it."""
    if desc.tiny_unroll <= 0:
        return sink
    from kcc.passes.unroll_tiny import (_HEAVY_OPS, _expand, _nest,  # (start-up: none)
                                        _over_budget)
    order = order or toposort([sink])
    dep = range_sets(order)
    vector_in: set[UOp] = set()         # RANGEs some vector value depends on
    for x in order:
        # (a vector STORE too: a constant vector stored through a loop, scatter's zero fill
        # E_8_4 on ymm, depends on the loop by its place alone)
        if dep[x] and (x.shape and x.kind == "value" or
                       x.op is Ops.STORE and len(x.src) > 1 and x.src[1].shape):
            vector_in |= dep[x]
    if not vector_in:
        return sink
    repl: dict[UOp, UOp] = {}
    inside: set[UOp] = set()            # nodes under a nest already taken
    for x in reversed(order):           # (outer ENDs before the ENDs inside them)
        if x.op is not Ops.END or x.src[1] not in vector_in or x in inside:
            continue
        if not dep[x]:
            # (_over_budget first: _nest's own answer, before _heavy walks the cone)
            budget = 2 * desc.tiny_unroll
            if outermost and not _over_budget(x, dep, budget) and _nest(
                    x, dep, budget, per_lane=False, heavy=_heavy(x, _HEAVY_OPS)) is not None:
                repl[x] = _expand(x, dep)
                inside.update(toposort([x]))
        elif (ranges := _inner(x, dep)) is not None:
            repl[x] = _expand(x, dep, frozenset(ranges))
            inside.update(toposort([x]))
    if not repl:
        return sink
    from kcc.passes.simplify import simplify
    return simplify(rebuild(order, repl).get(sink, sink), desc)


def _heavy(end: UOp, ops: frozenset[Ops]) -> frozenset[Ops]:
    """The ops to count as sequences in the nest under end: unroll_tiny's, and MULHI (a
    division by a constant, passes/divconst.py) where it reads loaded data: a sequence on
    vectors (x86: two VPMULUDQ, shifts, a blend) whose constant's shuffles a loop computes
    once and each copy again (uint32_div's E_64_4: 32 blocks as copies ran 21.4 -> 25 ns a
    call). A MULHI of counters and constants alone (arange's `(4i + j)*3 % 7`) folds to a
    constant in every copy."""
    loaded: set[UOp] = set()
    for x in toposort([end]):
        if x.op is Ops.LOAD or any(s in loaded for s in x.src):
            loaded.add(x)
            if x.op is Ops.MULHI:
                return ops | {Ops.MULHI}
    return ops


def _inner(end: UOp, dep: dict[UOp, frozenset[UOp]]) -> list[UOp] | None:
    """The RANGEs of the short inner loop nest closed by end when its copies fit
    INNER_TRIPS and INNER_BUDGET (module docstring, "Short inner loops") and
    passes/unroll_inner.py's legality holds, else None."""
    from kcc.passes.unroll_inner import _copies_independent, _nest_parts
    n = const_int(end.src[1].src[0])
    if n is not None and n > INNER_TRIPS:
        # end's own RANGE is one of the nest's, so its trips alone are over INNER_TRIPS:
        # refused without walking the loop's cone (most inner loops: a row's reduction)
        return None
    parts = _nest_parts(end, dep)
    if parts is None:
        return None
    ranges, trips, body = parts
    nest = frozenset(ranges)
    total = 1
    for r in ranges:
        total *= trips[r]
    if total > INNER_TRIPS:
        return None
    from kcc.passes.unroll_tiny import _HEAVY, _HEAVY_OPS
    heavy = _heavy(end, _HEAVY_OPS)
    size = 0
    for x in body:
        if x.op in (Ops.INDEX, Ops.SHRINK, Ops.END, Ops.RANGE, Ops.GROUP) \
                or x.dtype is not None \
                and (x.dtype.is_int or x.dtype.is_bool) and x.op is not Ops.LOAD \
                and not x.shape:
            continue        # places, effect lists, scalar index arithmetic (constants)
        k = _HEAVY if x.op in heavy else 1
        for r in dep[x] & nest:
            k *= trips[r]
        size += k
    if size > INNER_BUDGET:
        return None
    return ranges if _copies_independent(body, ranges, nest, dep) else None
