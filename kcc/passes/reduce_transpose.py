"""Four rows' horizontal reductions as one transposed reduction (a CPU target's choice, issue 24
item 2).

passes/widen_reduce.py ends a row reduction over a vector v of 8 lanes with a halving tree

    c1 = op(v[0:4], v[4:8])                      # lanes j and j + 4
    c2 = op(c1, STACK(c1[2], c1[3], c1[0], c1[1]))
    c3 = op(c2, STACK(c2[1], c2[2], c2[3], c2[0]))
    row = c3[0]                                  # (c1[0] op c1[2]) op (c1[1] op c1[3])

(v itself as c1 for a 4-lane v). unroll-and-jam (passes/unroll.py) gives each of f copies its
own row, so argmax's r_333_77 ends each group of 4 rows with 4 such trees: 4 x (two shuffles,
two ops, a lane read), each tree at a fraction of the vector's width. Four rows a, b, c, d
reduce together with the same pairings in the same operand order:

    m  = op(STACK(a1[0], a1[1], b1[0], b1[1]), STACK(a1[2], a1[3], b1[2], b1[3]))
    m' = the same for c1, d1
    r  = op(STACK(m[0], m[2], m'[0], m'[2]), STACK(m[1], m[3], m'[1], m'[3]))

lane k of r is row k's value (lane 0: (a1[0] op a1[2]) op (a1[1] op a1[3]), exactly the tree's,
so float sums are bit-identical too): 4 shuffles and 3 ops (x86: one SHUFPS a STACK) instead
of 8 and 8. Rows are grouped 4 at a time in schedule order among trees of one op, dtype and
loop nest whose values do not depend on one another's results.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, substitute_closed, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc

_OPS = frozenset({Ops.ADD, Ops.MUL, Ops.MAX})
ROWS = 4


def _lane(x: UOp, v: UOp, k: int) -> bool:
    """Whether x is lane k of v."""
    return x.op is Ops.INDEX and x.src[0] is v and const_int(x.src[1]) == k


def _lanes(s: UOp, v: UOp, ks: tuple[int, ...]) -> bool:
    """Whether s is a STACK whose lanes are v's lanes ks (in order)."""
    return s.op is Ops.STACK and len(s.src) == len(ks) \
        and all(_lane(x, v, k) for x, k in zip(s.src, ks))


def _tree(root: UOp) -> UOp | None:
    """c1 (the 4-lane first level) of the halving tree whose lane 0 root is, else None."""
    if root.op is not Ops.INDEX or const_int(root.src[1]) != 0:
        return None
    c3 = root.src[0]
    if c3.op not in _OPS or c3.shape != (4,) or len(c3.src) != 2:
        return None
    c2, s3 = c3.src
    if c2.op is not c3.op or len(c2.src) != 2 or not _lanes(s3, c2, (1, 2, 3, 0)):
        return None
    c1, s2 = c2.src
    if c1.shape != (4,) or not _lanes(s2, c1, (2, 3, 0, 1)):
        return None
    return c1


def _pair(op: Ops, a: UOp, b: UOp, lo: tuple[int, int], hi: tuple[int, int]) -> UOp:
    """op of (a[lo], b[lo]) and (a[hi], b[hi]) lane-wise: the 4-lane STACKs and the op."""
    left = UOp(Ops.STACK, (*(UOp(Ops.INDEX, (a, UOp.const(k))) for k in lo),
                           *(UOp(Ops.INDEX, (b, UOp.const(k))) for k in lo)))
    right = UOp(Ops.STACK, (*(UOp(Ops.INDEX, (a, UOp.const(k))) for k in hi),
                            *(UOp(Ops.INDEX, (b, UOp.const(k))) for k in hi)))
    return UOp(op, (left, right))


def reduce_transpose(sink: UOp, desc: TargetDesc, order: list[UOp] | None = None) -> UOp:
    """Rewrite every group of ROWS halving-tree roots (module docstring) as lanes of one
    transposed reduction; the graph unchanged where there is none. order: sink's toposort,
    when the caller has it."""
    if not desc.vector_regs:
        return sink
    order = order or toposort([sink])
    pos = {u: i for i, u in enumerate(order)}
    groups: dict[tuple, list[tuple[UOp, UOp]]] = {}
    dep = None
    INDEX = Ops.INDEX
    for u in order:
        c1 = _tree(u) if u.op is INDEX and u.src[0].op in _OPS else None
        if c1 is not None and desc.alu_legal(ROWS, u.dtype):
            if dep is None:
                dep = range_sets(order)
            key = (u.src[0].op, u.dtype, dep[u])
            groups.setdefault(key, []).append((u, c1))
    repl: dict[UOp, UOp] = {}
    for (op, _, _), rows in groups.items():
        for i in range(0, len(rows) - ROWS + 1, ROWS):
            g = rows[i:i + ROWS]
            if _depends(g, pos):
                continue
            (_, a), (_, b), (_, c), (_, d) = g
            m0 = _pair(op, a, b, (0, 1), (2, 3))
            m1 = _pair(op, c, d, (0, 1), (2, 3))
            r = _pair(op, m0, m1, (0, 2), (1, 3))
            for k, (root, _) in enumerate(g):
                repl[root] = UOp(Ops.INDEX, (r, UOp.const(k)))
    if not repl:
        return sink
    return substitute_closed(sink, repl)


def _depends(g: list[tuple[UOp, UOp]], pos: dict[UOp, int]) -> bool:
    """Whether a row's c1 reaches another row's root (the group would be a cycle): a walk
    down from the c1s over nodes scheduled after the earliest root."""
    roots = {root for root, _ in g}
    lo = min(pos[r] for r in roots)
    work = [c1 for _, c1 in g]
    seen: set[UOp] = set()
    while work:
        n = work.pop()
        if n in roots:
            return True
        for s in n.src:
            if s not in seen and pos.get(s, -1) >= lo:
                seen.add(s)
                work.append(s)
    return False
