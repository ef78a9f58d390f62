"""An integer index as an affine sum: sum(coefficient * leaf) + constant.

The decomposition reads ADD, SUB, MUL by a constant (either operand) and SHL by a constant
shift (one that keeps the factor below the dtype's sign bit); constants are what
`kcc.ir.consts.const_int` reads. Terms whose coefficients cancel are dropped. The sum is over
the integers, not modulo the dtype's width.

What counts as a leaf is the caller's: by default every node that is none of the above is a
leaf of coefficient 1 (the non-temporal store check of kcc/isel/x86/stream.py, unroll's count
of the memory streams a fused loop reads); with `leaf`, a node it accepts is a leaf even if it
is a sum (unroll's loop-invariant terms, kept whole), and any other node that is none of the
above makes the whole decomposition None (unroll's store check: the index is not linear in
its counter).
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable

Affine = tuple[dict[UOp, int], int]       # (coefficient of each leaf, constant)


def _affine_srcs(x: UOp, leaf: Callable[[UOp], bool] | None, mulacc: bool = False
                 ) -> tuple[UOp, ...]:
    """The nodes whose decompositions x's is made of (none for a constant or a leaf)."""
    if const_int(x) is not None or (leaf is not None and leaf(x)):
        return ()
    if x.op in (Ops.ADD, Ops.SUB):
        return x.src
    if x.op in (Ops.MUL, Ops.SHL):
        k, y = _factor(x)
        if k is not None:
            return (y,)
    if x.op is Ops.MULACC and mulacc:
        k, y = _factor(x)
        if k is not None:
            return (y, x.src[2])
    return ()


def _factor(x: UOp) -> tuple[int | None, UOp]:
    """A MUL, MULACC (its product) or SHL as (constant factor or shift, the other operand);
    (None, _) when it is not one the decomposition reads."""
    k, y = const_int(x.src[1]), x.src[0]
    if k is None and x.op is not Ops.SHL:
        k, y = const_int(x.src[0]), x.src[1]
    bits = 64 if x.dtype.is_weak else x.dtype.bits
    if k is not None and (x.op is not Ops.SHL or 0 <= k < bits - 1):
        return k, y
    return None, y


def _affine_node(x: UOp, leaf: Callable[[UOp], bool] | None,
                 memo: dict[UOp, Affine | None], mulacc: bool = False) -> Affine | None:
    """x's decomposition from those of its srcs (already in memo)."""
    res: Affine | None = None
    c = const_int(x)
    if c is not None:
        res = {}, c
    elif leaf is not None and leaf(x):
        res = {x: 1}, 0
    elif x.op in (Ops.ADD, Ops.SUB):
        a, b = memo[x.src[0]], memo[x.src[1]]
        if a is not None and b is not None:
            sign = 1 if x.op is Ops.ADD else -1
            terms = dict(a[0])
            for t, k in b[0].items():
                terms[t] = terms.get(t, 0) + sign * k
            res = {t: k for t, k in terms.items() if k}, a[1] + sign * b[1]
    elif x.op in (Ops.MUL, Ops.SHL) or (x.op is Ops.MULACC and mulacc):
        k, y = _factor(x)
        a = memo[y] if k is not None else None
        b = memo[x.src[2]] if x.op is Ops.MULACC and a is not None else ({}, 0)
        if k is not None and a is not None and b is not None:
            m = k if x.op is not Ops.SHL else 1 << k
            terms = {t: v * m for t, v in a[0].items() if v * m}
            for t, v in b[0].items():
                terms[t] = terms.get(t, 0) + v
            res = {t: v for t, v in terms.items() if v}, a[1] * m + b[1]
    if res is None and leaf is None:
        res = {x: 1}, 0
    return res


def affine(x: UOp, leaf: Callable[[UOp], bool] | None = None,
           memo: dict[UOp, Affine | None] | None = None, mulacc: bool = False
           ) -> Affine | None:
    """x as ({leaf: coefficient}, constant), or None (only with `leaf`, see the module
    docstring). memo, when given, keeps each node's answer across calls with the same leaf
    (and mulacc). mulacc: MULACC(a, k, c) with a constant k read as k*a + c (else a leaf).

    Iterative, each node decomposed once (a post-order walk with a memo): an index that is a
    chain of 100,000 ADDs does not recurse, nor does one whose sums share terms take a step
    per path."""
    if memo is None:
        memo = {}
    if x in memo:
        return memo[x]
    stack: list[tuple[UOp, bool]] = [(x, False)]
    while stack:
        n, ready = stack.pop()
        if n in memo:
            continue
        if not ready:
            srcs = [s for s in _affine_srcs(n, leaf, mulacc) if s not in memo]
            if srcs:
                stack.append((n, True))
                stack.extend((s, False) for s in srcs)
                continue
        memo[n] = _affine_node(n, leaf, memo, mulacc)
    return memo[x]


def iterations_disjoint(accesses: list[tuple[int, int, int, bool]], f: int) -> bool:
    """Whether accesses (c, o, n elements, is a store), each of elements c*i + base + o …
    + n-1 in iteration i (one base for all), never touch one element in iterations 1 … f-1
    apart when one of the two is a store: f adjacent iterations may run as one."""
    for c, o1, w1, st1 in accesses:
        for c2, o2, w2, st2 in accesses:
            if not (st1 or st2):
                continue
            if c2 != c:
                return False
            for d in range(1, f):
                for dd in (d, -d):
                    diff = c * dd + o2 - o1   # start of the other iteration's span, relative
                    if -w2 < diff < w1:
                        return False
    return True
