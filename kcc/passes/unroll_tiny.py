"""Full unrolling of tiny elementwise loop nests (a CPU target's choice, issue 24 item 2).

tinygrad's smallest kernels are whole loop nests of a few iterations with constant bounds —
sort's and topk's swaps, E_2_2_2:

    for i in range(2):
        for j in range(2):
            out[4*i + j + 2] = x[4*i - j + 3]
            out[4*i + j] = x[4*i + j]

Run as loops, the counters, compares and branches outnumber the 8 loads and stores; clang
unrolls the nest and sees one lane permutation of a vector. This pass replaces such a nest by
its iterations as straight-line code (each RANGE a constant in each copy), so the lane packer
(passes/slp.py) and the selector see every element's load and store at a constant address.

**Legality** (the nest is left alone otherwise; the result is then the same for any order of
the copies, which the graph no longer gives):
- the nest is outermost (its END depends on no RANGE), every RANGE in it has a constant
  bound >= 1 and no order srcs but other RANGEs of the nest, and every END closes one RANGE;
- it has no REG or LOCAL buffer, AFTER or BARRIER: the only effects are STOREs to PARAM
  buffers (INDEX or SHRINK places), and no buffer it stores is loaded in it, so no iteration
  reads what another writes (docs/semantics.md, "Loop order": iteration k+1 sees iteration
  k's stores — here there is nothing to see);
- widening (passes/widen.py) leaves the nest alone: a loop whose iterations become vector
  lanes already runs fewer instructions than its copies would as scalars;
- every store's element span, evaluated for every assignment of the counters, is disjoint
  from every other store's span of the same buffer in another iteration (two stores of one
  element in one iteration are unordered already), so no later iteration overwrites an
  earlier one's element.

**Cost**: the copies' nodes (each node depending on the nest's counters, once per iteration
of its loops, times its lanes, and _HEAVY times for an op that decomposes into a sequence) are
at most twice `TargetDesc.tiny_unroll` (0, the default: no nest is unrolled), as for
passes/unroll_inner.py's inner loops: a kernel's code grows by about its copies' instructions.
Not counted: places, and the integer and bool nodes of constants and counters alone (`_folding`:
index arithmetic and gates such as triu's `4*j + 1 < i + 1`), which are constants in each copy.
triu_int's E_8_2_4 (8×2 iterations of an int4 store of 4 gated loads) counted 585 nodes, its
real work 144: its copies are 8 masked loads at constant masks, against a loop that computed
each gate (4.7 ns against 28, docs/performance.md).

**Copies that fold** (`_folds`): a nest over that count, up to FOLD_CAP times it, whose
loads are gated by compares of its counters is counted as simplify leaves its copies: every
gate a constant in every copy (a false one's load is its alternative, a true one's an
ungated load, passes/unroll_inner.py `fold_gates`), sums of the alternatives' zeros
folded, and copies' equal nodes one node. tinygrad's cumsum_5000 r_20_20 (20 iterations of
19 loads gated `k < i`, ~2000 nodes as copies) is a triangle of loads whose copies, folded,
are 20 loads, 20 stores and two chains of 19 adds: copies 0 … 18 start with a zero term and
share one, each copy's sum the previous copy's plus one element (the same adds in the same
order), and copy 19 (no gate false) has its own.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, is_const, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, rebuild, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.simplify import _int_op
from kcc.passes.target import TargetDesc

# ops whose presence leaves the nest alone: accumulators, ordering, other threads' memory
_REFUSED = frozenset({Ops.AFTER, Ops.BARRIER, Ops.BUFFER, Ops.WMMA})
# ops that passes/decompose.py turns into a dozen or more instructions a lane (polynomials,
# Newton steps, division sequences): counted as _HEAVY nodes, so such bodies stay loops
_HEAVY_OPS = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.RECIPROCAL, Ops.THREEFRY, Ops.CDIV,
                        Ops.CMOD})
_HEAVY = 16
# a nest whose gated loads fold is expanded to be counted (`_folds`) when its copies are at
# most this many times the budget (compile time: the expansion is simplified to be counted)
FOLD_CAP = 32


def _place(x: UOp) -> tuple[UOp, UOp, int] | None:
    """(buffer, start index, element count) of a LOAD/STORE place on a PARAM, else None."""
    p = x.src[0]
    if p.op is Ops.INDEX and len(p.src) >= 2 and p.src[0].op is Ops.PARAM:
        return p.src[0], p.src[1], 1
    if p.op is Ops.SHRINK and len(p.src) == 3 and p.src[0].op is Ops.PARAM:
        n = const_int(p.src[2])
        return (p.src[0], p.src[1], n) if n is not None and n > 0 else None
    return None


def _value(n: UOp, env: dict[UOp, int], memo: dict[UOp, int | None]) -> int | None:
    """The integer value of an index expression with the nest's counters at env, or None
    where it is not a function of constants and counters alone (iterative: an index may be a
    chain past the recursion limit)."""
    stack = [n]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        v: int | None = None
        c = const_int(x)
        if c is not None:
            v = c
        elif x.op is Ops.RANGE:
            v = env.get(x)
        elif x.dtype is not None and x.dtype.is_int and not x.dtype.is_weak and x.src \
                and x.op not in (Ops.LOAD, Ops.CAST, Ops.BITCAST):
            todo = [s for s in x.src if s not in memo]
            if todo:
                stack.extend(todo)
                continue
            a = [memo[s] for s in x.src]
            r = None if any(y is None for y in a) else _int_op(x.op, a, x.dtype)  # type: ignore
            v = None if r is None or isinstance(r, bool) else r
        memo[x] = v
        stack.pop()
    return memo[n]


# ops whose value is not a function of the constants and counters in their sources
_OPAQUE = frozenset({Ops.LOAD, Ops.PARAM, Ops.BUFFER, Ops.SPECIAL, Ops.AFTER, Ops.STORE,
                     Ops.INDEX, Ops.SHRINK, Ops.END, Ops.GROUP, Ops.SINK})


def _folding(order: list[UOp]) -> set[UOp]:
    """The scalar integer and bool nodes of order (a topological order) computed from
    constants and loop counters alone: in each copy of a nest their counters are constants,
    so simplify folds them (index arithmetic, tinygrad's gates such as `4*j + 1 < i + 1`);
    they cost no instruction. (Vector ones count: simplify does not fold lane-wise ops of
    constant STACKs, so a padded load's lane gate stays two compares a copy.)"""
    out: set[UOp] = set()
    for x in order:
        if x.op not in _OPAQUE and x.dtype is not None and (x.dtype.is_int or x.dtype.is_bool) \
                and not x.shape and all(s in out for s in x.src):
            out.add(x)
    return out


def _assignments(ranges: list[UOp]) -> list[dict[UOp, int]]:
    """Every assignment of constant values to ranges (their full iteration space)."""
    out: list[dict[UOp, int]] = [{}]
    for r in ranges:
        n = const_int(r.src[0])
        assert n is not None
        out = [{**e, r: k} for e in out for k in range(n)]
    return out


def _over_budget(end: UOp, dep: dict[UOp, frozenset[UOp]], budget: int) -> bool:
    """Whether the size of the nest closed by end (this module's `_nest` and unroll_inner's,
    its STOREs alone here) is over budget by end's own loop, known without walking the
    loop's cone: a STORE that is the END's body (or a src of a GROUP there) and reads the
    counter counts at least once per iteration of end's RANGE, one of the nest's (most
    loops of tinygrad's kernels: a row's reduction, an elementwise loop over a tensor)."""
    r = end.src[1]
    n = const_int(r.src[0])
    if n is None or n <= budget:
        return False
    body = end.src[0]
    return any(x.op is Ops.STORE and r in dep[x]
               for x in (body.src if body.op is Ops.GROUP else (body,)))


def _folds(sink: UOp, end: UOp, dep: dict[UOp, frozenset[UOp]], desc: TargetDesc) -> UOp | None:
    """The nest under end as its copies (`_expand`) when it is over the budget as copies but
    within it once their counter gates fold (module docstring, "Copies that fold"), else
    None. The count: the value and effect nodes (not places, index arithmetic and gates,
    constants or the graph's structure) of the nest alone, expanded and simplified."""
    if _over_budget(end, dep, FOLD_CAP * desc.tiny_unroll):
        return None                     # (_nest's answer below, before the cone's walk)
    cone = toposort([end])
    if not any(x.op is Ops.LOAD and len(x.src) == 3 and not x.src[2].shape and dep[x.src[2]]
               for x in cone):
        return None
    if _nest(end, dep, FOLD_CAP * desc.tiny_unroll) is None:
        return None
    if _stores_at_least(cone, dep) > desc.tiny_unroll:
        return None                     # (the count below is over: no expansion to count)
    from kcc.passes.simplify import simplify
    from kcc.passes.unroll_inner import fold_gates
    copies = _expand(end, dep)
    alone = sink.replace(src=(copies,))
    size = 0
    for x in toposort([fold_gates(simplify(alone, desc), desc)]):
        if x.op in _STRUCTURE or is_const(x) or x.dtype is None and x.op is not Ops.STORE \
                or x.dtype is not None and (x.dtype.is_int or x.dtype.is_bool) \
                and x.op is not Ops.LOAD:
            continue
        k = _HEAVY if x.op in _HEAVY_OPS else 1
        for d in x.shape or ():
            k *= d
        size += k
    return copies if size <= desc.tiny_unroll else None


def _stores_past(end: UOp, dep: dict[UOp, frozenset[UOp]], budget: int) -> bool:
    """Whether a STORE found by following the bodies of end and of the ENDs in them (no walk
    of the cone) counts over budget by itself in `_nest`'s count of the nest's STOREs (each
    once per iteration of the loops it depends on), which then refuses the nest at budget and
    at any smaller one. tinygrad's outermost nests are loops over whole tensors (softmax's
    E_2048_256_2_4: its store 2048 x 256 times)."""
    stack = [end.src[0]]
    while stack:
        x = stack.pop()
        if x.op is Ops.GROUP:
            stack.extend(x.src)
        elif x.op is Ops.END:
            stack.append(x.src[0])
        elif x.op is Ops.STORE and (_trips(x, dep) or 0) > budget:
            return True                 # (_nest refuses a bound _trips has no count for)
    return False


def _trips(x: UOp, dep: dict[UOp, frozenset[UOp]]) -> int | None:
    """How many times x runs: its loops' constant trips multiplied; None when a loop's trip
    is not a constant or below 1 (a bound `_nest` refuses)."""
    k = 1
    for r in dep[x]:
        n = const_int(r.src[0])
        if n is None or n < 1:
            return None
        k *= n
    return k


def _stores_at_least(cone: list[UOp], dep: dict[UOp, frozenset[UOp]]) -> int:
    """A lower bound on the STOREs `_folds` counts in the nest's folded copies, for a nest
    `_nest` allows: the most copies of one STORE (its loops' trips multiplied). Sufficient:
    copies of a STORE in different iterations store disjoint elements (`_nest` checked), so
    their places differ in value and no two are one node; simplify and fold_gates keep every
    STORE (a false gate stores nothing but stays, simplify's gated_as), and each counts 1."""
    return max((_trips(x, dep) or 1 for x in cone if x.op is Ops.STORE), default=0)


# nodes the folded count leaves out: the graph's structure, places and constants
_STRUCTURE = frozenset({Ops.SINK, Ops.GROUP, Ops.PARAM, Ops.INDEX, Ops.SHRINK, Ops.CONST,
                        Ops.RANGE, Ops.END})


def _nest(end: UOp, dep: dict[UOp, frozenset[UOp]], budget: int,
          per_lane: bool = True, heavy: frozenset[Ops] = _HEAVY_OPS) -> list[UOp] | None:
    """The RANGEs of the nest closed by end when the module docstring allows unrolling it;
    per_lane False counts a vector node once, not once a lane (passes/unroll_widened.py:
    after widening, a vector node is one instruction); heavy: the ops counted _HEAVY."""
    if _over_budget(end, dep, budget):
        return None                     # (the STOREs' count below, before the cone's walk)
    cone = toposort([end])
    body = [x for x in cone if dep[x] or x.op is Ops.END]
    ranges = [x for x in body if x.op is Ops.RANGE]
    closed = [x.src[1] for x in body if x.op is Ops.END]
    if not ranges or any(x.op is Ops.END and len(x.src) != 2 for x in body) \
            or sorted(map(id, closed)) != sorted(map(id, ranges)):
        return None
    trips: dict[UOp, int] = {}
    for r in ranges:
        n = const_int(r.src[0])
        if n is None or n < 1 or any(s not in ranges for s in r.src[1:]):
            return None
        trips[r] = n
    # the body's STOREs alone first: each counts at least once per iteration of its loops
    # below (a STORE has no dtype, so none folds), and most outermost nests are far over
    # the budget on them: the folding analysis of the whole cone is then not made
    low = 0
    for x in body:
        if x.op is Ops.STORE:
            k = 1
            for r in dep[x]:
                k *= trips[r]
            low += k
    if low > budget:
        return None
    folds = _folding(cone)
    size = 0
    for x in body:
        if x.op in _REFUSED:
            return None
        if x in folds or x.op in (Ops.INDEX, Ops.SHRINK, Ops.END, Ops.GROUP):
            continue        # constants in each copy, a place's address, effect lists
        k = _HEAVY if x.op in heavy else 1
        for d in (x.shape or ()) if per_lane else ():
            k *= d
        for r in dep[x]:
            k *= trips[r]
        size += k
    if size > budget:
        return None
    stores = [x for x in body if x.op is Ops.STORE]
    loads = [x for x in body if x.op is Ops.LOAD]
    places = [_place(x) for x in stores]
    if any(p is None for p in places):
        return None
    stored = {p[0] for p in places if p is not None}
    for x in loads:
        p = x.src[0]
        while p.op in (Ops.INDEX, Ops.SHRINK):
            p = p.src[0]
        if p in stored or p.op is not Ops.PARAM and dep.get(p):
            return None
    seen: dict[tuple[UOp, int], int] = {}       # (buffer, element) → iteration that stores it
    for it, env in enumerate(_assignments(ranges)):
        memo: dict[UOp, int | None] = {}
        for st, p in zip(stores, places):
            assert p is not None
            if any(r not in env for r in dep[st]):
                return None
            start = _value(p[1], env, memo)
            if start is None:
                return None
            for e in range(start, start + p[2]):
                if seen.setdefault((p[0], e), it) != it:
                    return None
    return ranges


def _expand(end: UOp, dep: dict[UOp, frozenset[UOp]],
            nest: frozenset[UOp] | None = None) -> UOp:
    """The nest under end as a GROUP of its iterations, each RANGE a constant in each copy.
    nest: only these RANGEs are expanded (passes/unroll_inner.py's inner loops), the nodes
    free of them shared; None: every RANGE under end."""
    memo: dict[tuple[UOp, tuple[int, ...]], UOp] = {}

    def key(n: UOp, env: dict[UOp, int]) -> tuple[UOp, tuple[int, ...]] | None:
        """n's copy at env (the values of the counters it depends on), None: n is shared."""
        mine = dep[n] if nest is None else dep[n] & nest
        if not mine and not (n.op is Ops.END and (nest is None or n.src[1] in nest)):
            return None
        return (n, tuple(env[r] for r in sorted(mine, key=id)))

    def srcs(n: UOp, env: dict[UOp, int]) -> list[tuple[UOp, dict[UOp, int]]]:
        """The (node, env) pairs n's copy at env is built from: an END's body once per
        iteration, a RANGE none (a constant), else every src at env."""
        if n.op is Ops.RANGE:
            return []
        if n.op is Ops.END:
            r = n.src[1]
            bound = const_int(r.src[0])
            assert bound is not None
            return [(n.src[0], {**env, r: k}) for k in range(bound)]
        return [(s, env) for s in n.src]

    def value(n: UOp, env: dict[UOp, int]) -> UOp:
        k = key(n, env)
        return n if k is None else memo[k]

    # post-order without recursion (a chain of index arithmetic may pass the recursion limit):
    # a frame is entered, its sources pushed above it, and built once they are all built
    stack: list[tuple[UOp, dict[UOp, int], bool]] = [(end, {}, False)]
    while stack:
        n, env, ready = stack.pop()
        k = key(n, env)
        if k is None or k in memo:
            continue
        if not ready:
            stack.append((n, env, True))
            stack.extend((s, e, False) for s, e in srcs(n, env)
                         if (ks := key(s, e)) is not None and ks not in memo)
            continue
        if n.op is Ops.RANGE:
            out = strong_int(env[n], n.dtype)
        elif n.op is Ops.END:
            out = UOp(Ops.GROUP, tuple(dict.fromkeys(value(s, e) for s, e in srcs(n, env))))
        else:
            new = tuple(value(s, e) for s, e in srcs(n, env))
            out = n if new == n.src else n.replace(src=new)
        memo[k] = out
    return value(end, {})


def _widens(sink: UOp, end: UOp, desc: TargetDesc) -> bool:
    """Whether passes/widen.py widens a loop of the nest under end (a kernel of that nest
    alone, after passes/slp.py as the pipeline runs it: isnan_isinf's 4 bool lane stores
    a loop iteration widen only once slp made them one bool vector store)."""
    from kcc.passes.slp import slp
    from kcc.passes.widen import widens_a_loop
    # (not `widen(alone) is not alone`: widen splits a load read lane by lane into scalar
    # loads even where it widens no loop, max_nan's r_4_8 whose loop then stayed a loop)
    return widens_a_loop(slp(sink.replace(src=(end,)), desc), desc)


def widens_as_is(sink: UOp, end: UOp, desc: TargetDesc) -> bool:
    """Whether passes/widen.py widens a loop of the nest under end as the graph stands (no
    slp first: what slp itself asks, kcc/passes/slp_gated.py)."""
    from kcc.passes.widen import widens_a_loop
    # (not `widen(alone) is not alone`: `_widens`' note)
    return widens_a_loop(sink.replace(src=(end,)), desc)


def unroll_tiny(sink: UOp, desc: TargetDesc) -> UOp:
    """Unroll every nest the module docstring allows; the copies' constant index arithmetic
    is folded (passes/simplify.py) so every place's index is a constant."""
    if desc.tiny_unroll <= 0:
        return sink
    order = toposort([sink])
    dep = range_sets(order)
    repl: dict[UOp, UOp] = {}
    folded = False
    for x in order:
        # (no x lies under an END taken before it: the order puts an END's srcs before it)
        if x.op is Ops.END and not dep[x]:
            if _stores_past(x, dep, max(2, FOLD_CAP) * desc.tiny_unroll):
                continue                # (_nest and _folds refuse it: no walk of its cone)
            if _nest(x, dep, 2 * desc.tiny_unroll) is not None:
                if not _widens(sink, x, desc):
                    repl[x] = _expand(x, dep)
            elif (copies := _folds(sink, x, dep, desc)) is not None \
                    and not _widens(sink, x, desc):
                repl[x] = copies
                folded = True
    if not repl:
        return sink
    from kcc.passes.simplify import simplify
    out = simplify(rebuild(order, repl).get(sink, sink), desc)
    if not folded:
        # copies within the budget keep their constant gates for slp, which packs a row's
        # gated loads into one load gated lane by lane (triu's rows); legalize_gates drops
        # what is left after it
        return out
    # copies counted folded are folded (their count assumed it: cumsum's triangles)
    from kcc.passes.unroll_inner import fold_gates
    return fold_gates(out, desc)
