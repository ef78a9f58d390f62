"""Full unrolling of tiny inner loops of constant bound whose index arithmetic then folds (a CPU
target's choice, issue 24 item 2; the inner-loop sibling of passes/unroll_tiny.py).

tinygrad's interpolation and cumsum kernels run a loop of 4 or 8 iterations inside a larger
one, each iteration's indexes and gates a small expression of its counter (interp's E_32_4_4:
`((4*j + 1) << 4) - 8 >> 5`, clamps and compares; cumsum's r_32_8_8: eight loads each gated by
`c < j`):

    for i in range(32):
        for j in range(4):
            out[16*i + 4*j ...] = f(x[8*i + g(j)], j < 3, ...)

Run as a loop, every iteration recomputes g(j) and the gates (tens of instructions, more than
the loads and the arithmetic they serve; clang unrolls and folds them). This pass replaces the
inner loop by its iterations (each counter a constant in each copy) inside the outer loop,
and simplify folds each copy's g(j) to a constant offset and each gate to true or false.

**Legality** (the loop is left alone otherwise; the copies are a GROUP, unordered):
- the nest is the cone of an END inside other loops, every RANGE it closes has a constant
  bound >= 1 and no order srcs but RANGEs (of the nest or the enclosing loops), every END
  closes one RANGE;
- no REG or LOCAL buffer, AFTER, BARRIER or WMMA depends on its counters: the only effects are
  STOREs to float PARAM buffers, and no buffer it stores is loaded in it (no iteration reads
  what another writes);
- every store's index is affine in the nest's counters over terms free of them
  (kcc.ir.affine), all stores of one buffer with the same terms, and their element spans over
  every assignment of the counters are pairwise disjoint across iterations (so whatever the
  enclosing loops' values, no iteration overwrites another's element);
- its counters reach an integer or bool op other than an address's arithmetic (a shift, a
  clamp, a compare: what folds; interp E_4_16_4_4's `4*j` alone gained nothing, and each
  copy's address became a hoisted sum of its own, spilled), or a load's index falls as a
  counter rises (a row read reversed, `_reversed_read`: the copies' loads pack into a vector
  load and a shuffle);
- passes/widen.py does not widen the loop (vector lanes beat scalar copies), and its copies'
  nodes (passes/unroll_tiny.py's count, without places and integer and bool nodes other than
  loads: index arithmetic and gates of constants and invariants, which fold or are hoisted)
  are at most twice `TargetDesc.tiny_unroll`.
"""

from __future__ import annotations

from kcc.ir.affine import affine
from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
from kcc.ir.uop import UOp, rebuild, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.simplify import gate_constant, gated_as, keep_params
from kcc.passes.target import TargetDesc
from kcc.passes.unroll_tiny import (_HEAVY, _HEAVY_OPS, _REFUSED, _assignments, _expand, _place,
                                    _over_budget, _widens)


# integer ops an address folds (a displacement, a strength-reduced sum): a nest whose counters
# reach only these gains little from copies, and each copy's address is then a sum of its own
_AFFINE = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.SHL, Ops.MULACC, Ops.RANGE, Ops.CAST,
                     Ops.INDEX, Ops.SHRINK, Ops.LOAD, Ops.CONST})


def _nest(end: UOp, dep: dict[UOp, frozenset[UOp]], budget: int) -> list[UOp] | None:
    """The RANGEs of the inner nest closed by end when the module docstring allows unrolling
    it, else None."""
    if _over_budget(end, dep, budget):
        return None
    parts = _nest_parts(end, dep)
    if parts is None:
        return None
    ranges, trips, body = parts
    nest = frozenset(ranges)
    size = 0
    for x in body:
        if x.op in _REFUSED:
            return None
        if x.op in (Ops.INDEX, Ops.SHRINK, Ops.END, Ops.RANGE) or x.dtype is not None \
                and (x.dtype.is_int or x.dtype.is_bool) and x.op is not Ops.LOAD:
            continue        # places, index arithmetic, gates: constants once the counters are
        k = _HEAVY if x.op in _HEAVY_OPS else 1
        for d in x.shape or ():
            k *= d
        for r in dep[x] & nest:
            k *= trips[r]
        size += k
    if size > budget:
        return None
    if not any(x.op not in _AFFINE and x.dtype is not None and (x.dtype.is_int or x.dtype.is_bool)
               for x in body) and not _reversed_read(body, nest, dep) \
            and not _gaps_filled(body, ranges, nest, dep):
        return None         # nothing to fold: the loop's own arithmetic is an address's
    # (float outputs: integer and bool kernels are left as they were)
    return ranges if _copies_independent(body, ranges, nest, dep, floats=True) else None


def _copies_independent(body: list[UOp], ranges: list[UOp], nest: frozenset[UOp],
                        dep: dict[UOp, frozenset[UOp]], floats: bool = False) -> bool:
    """Whether the nest's copies may run in any order: it stores (each at a place, of a float
    buffer where floats), no load reads a buffer it stores or one defined in the kernel,
    and the copies' places are disjoint (`_disjoint`). unroll_widened.py asks it too."""
    stores = [x for x in body if x.op is Ops.STORE]
    places = [_place(x) for x in stores]
    if not stores or any(p is None or floats and not p[0].dtype.is_float for p in places):
        return False
    stored = {p[0] for p in places if p is not None}
    for x in body:
        if x.op is Ops.LOAD:
            p = x.src[0]
            while p.op in (Ops.INDEX, Ops.SHRINK):
                p = p.src[0]
            if p in stored or p.op is not Ops.PARAM and dep.get(p):
                return False
    return _disjoint(places, ranges, nest, dep)


def _reversed_read(body: list[UOp], nest: frozenset[UOp],
                   dep: dict[UOp, frozenset[UOp]]) -> bool:
    """Whether a load's index falls as a counter of the nest rises (a row read reversed:
    tinygrad's bitonic sort steps, `x[4*i + 3 - j]` for j < 2): its copies read elements at
    constant offsets that the lane packer joins with the rising reads into one vector load
    and a shuffle (sort_rows E_2048_2_2: 2.6 µs as a 2-iteration loop, clang 0.75 µs)."""
    memo: dict = {}
    for x in body:
        if x.op is not Ops.LOAD or x.src[0].op is not Ops.INDEX:
            continue
        a = affine(x.src[0].src[1], lambda t: t in nest or not dep[t] & nest, memo,
                   mulacc=True)
        if a is not None and any(c < 0 for t, c in a[0].items() if t in nest):
            return True
    return False


def _gaps_filled(body: list[UOp], ranges: list[UOp], nest: frozenset[UOp],
                 dep: dict[UOp, frozenset[UOp]]) -> bool:
    """Whether one iteration stores a buffer's elements with gaps that the other iterations
    fill, into one run of 4 to 16 elements (sort's compare-exchange at distance 2, `out[4i +
    j]` and `out[4i + j + 2]` for j < 2): the copies' stores pack into one vector store of a
    blend of vector minimums and maximums (passes/slp_blend.py), a loop of 2 scalar pairs
    otherwise (sort_rows E_2048_2_2: 4.1 µs, clang 1.2 µs)."""
    memo: dict = {}
    per: dict[UOp, list[tuple[dict[UOp, int], int, int]]] = {}
    for x in body:
        if x.op is not Ops.STORE:
            continue
        p = _place(x)
        if p is None:
            return False
        a = affine(p[1], lambda t: t in nest or not dep[t] & nest, memo, mulacc=True)
        if a is None:
            return False
        per.setdefault(p[0], []).append(({r: a[0].get(r, 0) for r in ranges}, a[1], p[2]))
    envs = _assignments(ranges)
    for spans in per.values():
        one = sorted(e for coef, c, n in spans for e in range(c, c + n))
        every = sorted(c + sum(k * env[r] for r, k in coef.items()) + e
                       for env in envs for coef, c, n in spans for e in range(n))
        if one == list(range(one[0], one[0] + len(one))) or not 4 <= len(every) <= 16 \
                or every != list(range(every[0], every[0] + len(every))):
            return False
    return bool(per)


def _nest_parts(end: UOp, dep: dict[UOp, frozenset[UOp]]
                ) -> tuple[list[UOp], dict[UOp, int], list[UOp]] | None:
    """(RANGEs, their trip counts, body) of the inner nest closed by end when its shape
    allows copies (module docstring: constant bounds >= 1, order srcs RANGEs, every END
    closing one RANGE), else None (passes/unroll_widened.py's short inner loops share it)."""
    outer = dep[end]
    cone = toposort([end])
    closed = [x.src[1] for x in cone if x.op is Ops.END and x.src[1] not in outer]
    nest = frozenset(closed)
    # (isdisjoint: no intersection set built per node of the cone)
    body = [x for x in cone
            if not dep[x].isdisjoint(nest) or x.op is Ops.END and x.src[1] in nest]
    if any(x.op is Ops.END and len(x.src) != 2 for x in body) or len(closed) != len(nest):
        return None
    ranges = [x for x in body if x.op is Ops.RANGE]
    if sorted(map(id, ranges)) != sorted(map(id, closed)):
        return None
    trips: dict[UOp, int] = {}
    for r in ranges:
        n = const_int(r.src[0])
        if n is None or n < 1 or any(s.op is not Ops.RANGE for s in r.src[1:]):
            return None
        trips[r] = n
    if any(x.op in _REFUSED for x in body):
        return None
    return ranges, trips, body


def _disjoint(places: list, ranges: list[UOp], nest: frozenset[UOp],
              dep: dict[UOp, frozenset[UOp]]) -> bool:
    """Whether no element is stored by two iterations (module docstring: affine indexes)."""
    memo: dict = {}
    forms: dict[UOp, dict[UOp, int]] = {}     # buffer → the terms free of the nest's counters
    spans = []
    for buf, idx, n in places:
        a = affine(idx, lambda x: x in nest or not dep[x] & nest, memo, mulacc=True)
        if a is None:
            return False
        coef = {r: a[0].get(r, 0) for r in ranges}
        rest = {t: c for t, c in a[0].items() if t not in nest}
        if any(dep[t] & nest for t in rest):
            return False
        if forms.setdefault(buf, rest) != rest:
            return False
        spans.append((buf, coef, a[1], n))
    seen: dict[tuple[UOp, int], int] = {}
    for it, env in enumerate(_assignments(ranges)):
        for buf, coef, c, n in spans:
            start = c + sum(k * env[r] for r, k in coef.items())
            for e in range(start, start + n):
                if seen.setdefault((buf, e), it) != it:
                    return False
    return True


def unroll_inner(sink: UOp, desc: TargetDesc) -> UOp:
    """Unroll every inner nest the module docstring allows (outermost candidates first); the
    copies' constant index arithmetic and gates are folded by passes/simplify.py."""
    if desc.tiny_unroll <= 0:
        return sink
    order = toposort([sink])
    dep = range_sets(order)
    repl: dict[UOp, UOp] = {}
    inside: set[UOp] = set()            # nodes under a nest already taken
    for x in reversed(order):
        if x.op is not Ops.END or not dep[x] or x in inside:
            continue
        ranges = _nest(x, dep, 2 * desc.tiny_unroll)
        if ranges is not None and not _widens(sink, x, desc):
            repl[x] = _expand(x, dep, frozenset(ranges))
            inside.update(toposort([x]))
    if not repl:
        return sink
    from kcc.passes.simplify import simplify
    return fold_gates(simplify(rebuild(order, repl).get(sink, sink), desc), desc)


def fold_gates(out: UOp, desc: TargetDesc) -> UOp:
    """out with every LOAD whose scalar gate folded to a constant (cumsum's `c < j` at each
    copy's j) resolved: true reads the element ungated, false reads nothing and is the
    alternative value (docs/semantics.md, LOAD); simplified again when one was."""
    from kcc.passes.simplify import simplify
    folded = graph_rewrite(out, _GATES)
    return out if folded is out else simplify(keep_params(out, folded), desc)


def _constant_gate(x: UOp) -> UOp | None:
    """LOAD(place, alt, gate) with a constant scalar gate → LOAD(place) or alt (simplify's
    gate_constant and gated_as; its known_gate leaves scalar loads' gates to slp)."""
    if len(x.src) != 3 or x.src[2].shape:
        return None
    v = gate_constant(x.src[2])
    return None if v is None else gated_as(x, v)


_GATES = PatternMatcher([(UPat(Ops.LOAD, name="x"), _constant_gate)])
