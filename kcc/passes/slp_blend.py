"""slp's two-op lane groups (kcc/passes/slp.py): n scalar lanes of two shapes of expression
over the same kinds of leaves → both vector ops over all n lanes and a blend of their lanes.

sort's and topk's compare-exchange steps store, to consecutive elements, the minimum of a
pair in some lanes and the maximum in the others (E_2_2_2: out[0], out[1] the minimums of
(x[0], x[2]) and (x[1], x[3]), out[2], out[3] their maximums, …). No one op packs the lanes;
clang computes both over every lane and blends. Here each lane is read as an expression tree
down to its leaves (the first node that is not a plain ALU op of a scalar: a load, a
constant, a value from elsewhere), in preorder; when the lanes have exactly two tree shapes
with the same leaf dtypes, each shape is rebuilt over every lane's own leaves (lane j's
leaves under the other lanes' ops), the two lane tuples are packed as usual, and the result
is a STACK taking lane j from the vector of lane j's own shape. A lane's own value is one of
the two (its shape over its leaves is itself, hash-consed); the other vector's lanes are
computed and dropped, so only ops that cannot trap or write anything are rebuilt
(`_SAFE`: no division, no load). Bit-identical: every lane is its own expression's value.

`blend_stacks` does the same after passes/widen.py for a STACK of such scalar lanes over lanes
of vectors (pairs read as float2 vectors: slp saw 2 lanes, which no x86 vector holds).
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, substitute_closed, toposort

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable

    from kcc.passes.target import TargetDesc

# lane-wise ops that neither trap nor have effects: computing one on lanes whose result is
# dropped is harmless (integer division is not among them: a zero divisor)
_SAFE = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.NEG, Ops.MULACC, Ops.CMPLT,
                   Ops.CMPNE, Ops.CMPEQ, Ops.WHERE, Ops.AND, Ops.OR, Ops.XOR})
_MAX_OPS = 16            # ops of one lane's tree (a compare-exchange has 4)


def _inner(n: UOp) -> bool:
    """Whether n is an op of a lane's tree (else a leaf)."""
    return n.op in _SAFE and n.shape == () and n.kind == "value"


def _shape(x: UOp) -> tuple[tuple, list[UOp]] | None:
    """(x's tree shape, its leaves in preorder), None past _MAX_OPS ops (iterative)."""
    sig: list = []
    leaves: list[UOp] = []
    stack = [x]
    while stack:
        n = stack.pop()
        if _inner(n):
            if len(sig) - len(leaves) >= _MAX_OPS:
                return None
            sig.append((n.op, n.arg, n.dtype, len(n.src)))
            stack.extend(reversed(n.src))
        else:
            sig.append(n.dtype)
            leaves.append(n)
    return tuple(sig), leaves


def _rebuild(rep: UOp, leaves: list[UOp]) -> UOp:
    """rep's tree with its leaves (preorder, as _shape reads them) replaced by leaves."""
    k = 0
    built: list[UOp] = []
    stack: list[tuple[UOp, bool]] = [(rep, False)]
    while stack:
        n, done = stack.pop()
        if done:
            m = len(n.src)
            srcs = tuple(built[len(built) - m:])
            del built[len(built) - m:]
            built.append(n if srcs == n.src else n.replace(src=srcs))
        elif _inner(n):
            stack.append((n, True))
            stack.extend((s, False) for s in reversed(n.src))
        else:
            built.append(leaves[k])
            k += 1
    return built[0]


def blend(t: tuple[UOp, ...], pack: Callable[[tuple[UOp, ...]], UOp | None]) -> UOp | None:
    """The lanes t (scalars) as a blend of two packed vector ops (module docstring), or None.
    ``pack``: slp's packing of a tuple of lanes (not blending again)."""
    shapes = [_shape(x) for x in t]
    if any(s is None for s in shapes):
        return None
    kinds: dict[tuple, int] = {}
    for s in shapes:
        assert s is not None
        kinds.setdefault(s[0], len(kinds))
    if len(kinds) != 2:
        return None
    reps: dict[int, UOp] = {}
    for x, s in zip(t, shapes):
        assert s is not None
        reps.setdefault(kinds[s[0]], x)         # each shape's first lane
    sigs = list(kinds)
    leaf_dts = [[d for d in sig if not isinstance(d, tuple)] for sig in sigs]
    if leaf_dts[0] != leaf_dts[1]:
        return None
    flips = leaf_dts[0] == leaf_dts[0][::-1]
    vecs = []
    for k in range(2):
        rep = reps[k]
        own = [s[1] if kinds[s[0]] == k else None for s in shapes if s is not None]
        leaves = _fill(own, [s[1] for s in shapes if s is not None], flips)
        lanes = tuple(_rebuild(rep, ls) for ls in leaves)
        v = pack(lanes)
        if v is None:
            return None
        vecs.append(v)
    out = []
    for j, s in enumerate(shapes):
        assert s is not None
        out.append(UOp(Ops.INDEX, (vecs[kinds[s[0]]], UOp.const(j))))
    return UOp(Ops.STACK, tuple(out))


def _fill(own: list[list[UOp] | None], every: list[list[UOp]], flips: bool
          ) -> list[list[UOp]]:
    """Each lane's leaves for one shape's vector: a lane of that shape its own; another
    lane's value is dropped by the blend, so its leaves in their own order, or reversed when
    that puts more leaf positions in lane order (`_in_order`: sort's distance-2 exchange, x[0],
    x[1], x[0], x[1] under the minimums, becomes x[0] … x[3], the loaded vector itself, and
    x[2], x[3], x[0], x[1] one rotation: one shuffle, not two)."""
    plain = [o if o is not None else e for o, e in zip(own, every)]
    if not flips or all(o is not None for o in own):
        return plain
    flipped = [o if o is not None else e[::-1] for o, e in zip(own, every)]

    def score(ls: list[list[UOp]]) -> int:
        return sum(_in_order([x[i] for x in ls]) for i in range(len(ls[0])))
    return flipped if score(flipped) > score(plain) else plain


def _in_order(t: list[UOp]) -> bool:
    """Whether the leaves t are lane j of one vector at lane j, or loads of consecutive
    elements in order (a vector load): a packed operand without a shuffle."""
    x0 = t[0]
    if x0.op is Ops.INDEX and x0.src[0].kind == "value":
        v = x0.src[0]
        return v.shape == (len(t),) and all(
            x.op is Ops.INDEX and x.src[0] is v and const_int(x.src[1]) == j
            for j, x in enumerate(t))
    if not all(x.op is Ops.LOAD and len(x.src) == 1 and x.src[0].op is Ops.INDEX for x in t):
        return False
    from kcc.passes.slp_index import lane_offset
    buf = x0.src[0].src[0]
    base, k0 = lane_offset(x0.src[0].src[1])
    return all(x.src[0].src[0] is buf and lane_offset(x.src[0].src[1]) == (base, k0 + j)
               for j, x in enumerate(t))


def blend_stacks(sink: UOp, desc: TargetDesc, order: list[UOp] | None = None) -> UOp:
    """After passes/widen.py: a STACK of scalar lanes of two tree shapes over lanes of vectors
    (a compare-exchange of adjacent elements, sort_rows E_4096_2: `out[2i] = min(x[2i],
    x[2i+1])`, `out[2i+1]` the max, read as float2 loads, so slp saw 2 lanes, which no x86
    vector holds; widening by 8 made 16 scalar MINs and MAXs and their inserts) → both ops over
    every lane, their operands lanes of the vectors (shuffles), and a blend (`blend`); kept
    only where nothing is inserted lane by lane (slp_reg `_inserts`). order: sink's
    toposort, when the caller has it."""
    from kcc.passes.slp import _Packer
    from kcc.passes.slp_reg import _inserts
    order = order or toposort([sink])
    repl: dict[UOp, UOp] = {}
    p: _Packer | None = None
    STACK = Ops.STACK
    for u in order:
        if u.op is not STACK or not _inner(u.src[0]) or u.kind != "value" \
                or len(u.shape) != 1 or not desc.alu_legal(len(u.src), u.dtype) \
                or not all(_inner(s) for s in u.src) or len(set(u.src)) != len(u.src):
            continue
        p = p or _Packer(desc)
        v = blend(u.src, p.pack)
        if v is not None and not _inserts(v):
            repl[u] = v
    if not repl:
        return sink
    return substitute_closed(sink, repl)
