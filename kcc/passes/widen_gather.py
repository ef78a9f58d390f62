"""Loads at computed indexes in a loop widened across iterations (kcc/passes/widen_lanes.py):
a scalar load whose index is not affine in the counter becomes k scalar loads whose indexes
are the lanes of one int32 index vector, which a target with a vector-indexed gather reads as
one instruction (`TargetDesc.index_gather`: x86-64-v4's VGATHERDPS zmm/ymm {k}, kcc/isel/x86/
vgather.py).

tinygrad's cumulative ops read a row of partial sums at `(i + 247) >> 8`, and its gathers at
an index loaded from another buffer:

    for i in range(N):
        x = LOAD(INDEX(a, f(i, y)), alt, g)        # f lane-wise, not affine in i

Lane j of the widened loop (iteration k*i2 + j) reads `a[f(k*i2 + j, y_j)]`. The index
vector V is f computed lane-wise at k lanes, in f's own ops and int32 dtype (so lane j holds
exactly iteration k*i2 + j's index, bit for bit: every IR op is lane-wise, docs/semantics.md),
and the load becomes

    STACK(LOAD(INDEX(a, INDEX(V, j)), INDEX(A, j), INDEX(G, j)) for j in 0 … k-1)

with G the gate's bool vector (its lanes the k iterations' gates; an invariant gate
splatted) and A the alt's lanes. This is the k scalar loads as written
(gated as written: a lane whose gate is false reads nothing, so its index may lie outside the
buffer), so a target without the gather's selection still computes the same lanes.

The index vector is built from f's tree: a counter-linear node is the existing splat + steps
(widen_lanes.py), ADD/SUB lane-wise, and `MULACC(a, b, c)` with a loop-invariant product
`a*b` is `a*b` splatted plus c's lanes (a MULACC of int32 lanes has no vector form; the sum is
the same modulo 2^32). Other lane-wise nodes are widened as the loop widens them.

**Legality** (else the loop is left alone): the load's buffer is a GLOBAL kernel argument the
loop does not store (so the k iterations' loads may run together), its index an int32 (a
gather's dword lanes are sign-extended, as the scalar address's index is), its element type
one the target gathers at k lanes with a vector index, and the buffer no larger than 2^31
bytes (the existing gather's guard: every in-bounds byte offset fits a dword).
"""

from __future__ import annotations

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, base_buffer
from kcc.passes.target import TargetDesc

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable

    from kcc.passes.widen_lanes import LaneLoop

_LIMIT = 1 << 31


def accept(lp: LaneLoop, p: UOp, stored: bool) -> bool:
    """Whether the place p of a load (not affine in the counter, or at a stride the loop does
    not otherwise read) may be read as a vector-indexed gather (module docstring); the
    target's width is asked at rewrite (`legal`)."""
    if stored or p.src[1].dtype != dtypes.int32:
        return False
    arg = base_buffer(p.src[0]).arg
    size = getattr(arg, "size", None)
    dt = getattr(arg, "dtype", None)
    return isinstance(size, int) and dt is not None and size * dt.itemsize <= _LIMIT


def legal(desc: TargetDesc, dtype: object, k: int) -> bool:
    """Whether the target gathers k lanes of dtype with an int32 index vector."""
    f = getattr(desc, "index_gather", None)
    return f is not None and f(dtype, k)


def _walk(lp: LaneLoop, x: UOp, leaf: Callable[[UOp], object],
          node: Callable[[UOp, list], object]) -> object:
    """Fold the index tree x (module docstring): leaf(x) for a node widened as the loop
    widens it, node(x, parts) for ADD/SUB (parts: the two operands' results) and for a
    MULACC of an invariant product (parts: [None, c's result]). Without recursion (an index
    chain may be deeper than Python's frame limit: tests/e2e/test_graph_walks.py) and each
    node once (a shared operand is folded once, not once a path)."""
    memo: dict[UOp, object] = {}
    stack: list[tuple[UOp, bool]] = [(x, False)]
    while stack:
        y, ready = stack.pop()
        if y in memo:
            continue
        if lp.free(y) or lp.lin(y) is not None:
            memo[y] = leaf(y)
            continue
        if y.op in (Ops.ADD, Ops.SUB) and not y.shape:
            kids: tuple[UOp, ...] = y.src
        elif y.op is Ops.MULACC and lp.free(y.src[0]) and lp.free(y.src[1]):
            kids = (y.src[2],)
        else:
            memo[y] = leaf(y)
            continue
        if ready:
            parts = [memo[s] for s in kids]
            memo[y] = node(y, parts if len(kids) == 2 else [None, parts[0]])
        else:
            stack.append((y, True))
            stack.extend((s, False) for s in kids if s not in memo)
    return memo[x]


def demand(lp: LaneLoop, idx: UOp) -> set[UOp]:
    """The region nodes whose k-lane vectors the index vector of idx is built from."""
    out: set[UOp] = set()

    def leaf(x: UOp) -> None:
        if x in lp.inside:
            out.add(x)
    _walk(lp, idx, leaf, lambda x, parts: None)
    return out


def gather_load(lp: LaneLoop, n: UOp, k: int, lanes: Callable[[UOp], UOp],
                made: list[UOp]) -> UOp:
    """The k lanes of gated or ungated LOAD n as a STACK of k scalar loads at the lanes of its
    index vector (module docstring); the vector nodes made are appended to made."""
    p = n.src[0]

    def node(x: UOp, parts: list) -> UOp:
        if x.op is Ops.MULACC:
            prod = UOp(Ops.STACK, (UOp(Ops.MUL, x.src[:2]),) * k)
            made.append(prod)
            v = UOp(Ops.ADD, (prod, parts[1]))
        else:
            v = UOp(x.op, tuple(parts))
        made.append(v)
        return v
    vidx = _walk(lp, p.src[1], lanes, node)
    assert isinstance(vidx, UOp)
    alt = gate = None
    if len(n.src) == 3:     # an invariant alt or gate splatted: every lane its own (selection)
        alt, gate = lanes(n.src[1]), lanes(n.src[2])

    def lane(v: UOp, j: int) -> UOp:
        return UOp(Ops.INDEX, (v, UOp.const(j)))
    loads = []
    for j in range(k):
        at = UOp(Ops.INDEX, (p.src[0], UOp(Ops.INDEX, (vidx, UOp.const(j)))))
        src = (at,) if alt is None else (at, lane(alt, j), lane(gate, j))
        loads.append(UOp(Ops.LOAD, src))
    stack = UOp(Ops.STACK, tuple(loads))
    made.append(stack)
    return stack
