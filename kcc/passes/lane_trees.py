"""Integer reductions over whole vectors' lanes as vector operations and a lane tree.

tinygrad reduces an upcast reduce axis lane by lane: argmax's per-row maximum of eight int32
elements (`r_32_8`) reads them as two 4-element loads and folds the eight lanes in one chain,

    MAX(MAX(MAX(MAX(MAX(MAX(MAX(a[0], a[1]), a[2]), a[3]), b[0]), b[1]), b[2]), b[3])

which a target without cheap lane reads pays for lane by lane (x86: a VPEXTRD, two µops, per
lane, then a compare and a CMOVcc per step, eight steps deep), where clang's reassociated
code is one VPMAXSD of the two vectors and a two-step shuffle tree.

For an operation that is associative and commutative **exactly** — integer ADD and MUL
(modulo 2^bits), MAX, AND, OR, XOR, never a float (rounding, NaN order) — the order of the
operands does not change the value, so such a chain (a tree of one op, one dtype, each inner
node read by its parent only) whose operands include every lane of one or more vectors of W
lanes, each exactly once, is rewritten as

    c = op(a, b, ...)                           # the vectors combined lane-wise
    c = op(c, STACK(c[W/2], …, c[W-1], …))      # log2(W) halvings (a lane permutation each)
    op(c[0], the chain's other operands...)

which computes the same value bit for bit. An operand may also be a lane times a constant
(MUL by it, or SHL by k < bits: times 2^k modulo 2^bits): argmax's index is the maximum of
`(x[j] == max) * (n - j)`, whose factors simplify leaves as the bare lane (1) and shifts
(powers of two), and slp packs the compares into one vector; such a vector enters the
chain as `MUL(v, STACK(factors))` (x86 selects a 0/1 vector times constants as a masked
move of the constants).

Runs after slp (which packs lane-wise work such as those compares into vectors), where the
target has the vector ops at W lanes (`TargetDesc.alu_legal`) and lane reads cost something
(`TargetDesc.lane_loads`, x86; a GPU's lanes are registers of their own). One walk over the
graph; each chain is read once from its root.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, substitute_closed, toposort
from kcc.passes.simplify import make_const
from kcc.passes.target import TargetDesc

# exact for every operand order on integers (ADD/MUL wrap modulo 2^bits)
_EXACT = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR})


def _int_scalar(n: UOp) -> bool:
    dt = n.dtype
    return dt is not None and dt.is_int and not dt.is_bool and not n.shape


def lane_trees(sink: UOp, desc: TargetDesc) -> UOp:
    """sink with every qualifying lane chain rewritten (module docstring); sink itself when
    none qualifies or the target opts out."""
    if not desc.lane_loads:
        return sink
    order = toposort([sink])
    if not _int_lane_reads(order):
        return sink                 # (no chain can hold a vector's lanes: no use counts)
    uses: dict[UOp, int] = {}
    for n in order:
        for s in n.src:
            uses[s] = uses.get(s, 0) + 1
    inner: set[UOp] = set()          # nodes read as part of a longer chain (not roots)
    for n in order:
        if n.op in _EXACT:
            for s in n.src:
                if _is_inner(s, n, uses):
                    inner.add(s)
    repl: dict[UOp, UOp] = {}
    for n in order:
        if n.op not in _EXACT or n in inner or len(n.src) != 2 or not _int_scalar(n):
            continue
        new = _rewrite(n, uses, desc)
        if new is not None:
            repl[n] = new
    if not repl:
        return sink
    # a chain inside another (a root an outer chain of another op reads) is rebuilt with it
    return substitute_closed(sink, repl)


def _int_lane_reads(order: list[UOp]) -> bool:
    """Whether the graph reads a constant lane of an integer vector value. Sufficient to
    rewrite nothing when not: a chain is rewritten only when every lane of such a vector (of
    its own integer dtype) is among its operands, each read by that INDEX (`_scaled_lane`)."""
    for n in order:
        if n.op is Ops.INDEX and len(n.src) == 2:
            v, dt = n.src[0], n.src[0].dtype
            if v.kind == "value" and len(v.shape) == 1 and dt is not None and dt.is_int \
                    and not dt.is_bool and const_int(n.src[1]) is not None:
                return True
    return False


def _is_inner(s: UOp, root: UOp, uses: dict[UOp, int]) -> bool:
    """Whether s is part of root's chain: the same op and dtype, read by its parent only."""
    return s.op is root.op and s.dtype == root.dtype and len(s.src) == 2 and \
        uses.get(s, 0) == 1 and not s.shape


def _scaled_lane(x: UOp, root: UOp) -> tuple[UOp, int, int] | None:
    """(vector, lane, factor) when leaf x is a lane of a vector of root's dtype, times a
    constant (MUL by it, or SHL by k: times 2^k modulo 2^bits), else None. argmax's index
    reads `(lane == max) * (n - j)`, which simplify leaves as the lane itself for 1 and a
    shift for a power of two."""
    f = 1
    if x.op in (Ops.MUL, Ops.SHL) and len(x.src) == 2 and x.dtype == root.dtype:
        k = const_int(x.src[1])
        if k is None:
            return None
        if x.op is Ops.SHL:
            if not 0 <= k < 8 * x.dtype.itemsize:
                return None
            k = 1 << k
        f, x = k, x.src[0]
    if x.op is not Ops.INDEX or len(x.src) != 2 or x.src[0].kind != "value" \
            or len(x.src[0].shape) != 1 or x.src[0].dtype != root.dtype:
        return None
    c = const_int(x.src[1])
    return None if c is None else (x.src[0], c, f)


def _rewrite(root: UOp, uses: dict[UOp, int], desc: TargetDesc) -> UOp | None:
    """The chain under root as vector ops and a lane tree, or None when no vector's lanes are
    all among its operands (or the target lacks the vector op)."""
    leaves: list[UOp] = []
    stack = [root]
    while stack:                      # the chain's tree, each inner node once (single use)
        n = stack.pop()
        for s in reversed(n.src):
            if _is_inner(s, root, uses):
                stack.append(s)
            else:
                leaves.append(s)
    if len(leaves) < 4:
        return None
    lanes: dict[UOp, dict[int, int]] = {}        # vector → lane → how many leaves read it
    scale: dict[UOp, dict[int, int]] = {}        # vector → lane → its leaf's factor
    read: dict[UOp, tuple[UOp, int, int]] = {}   # leaf → (vector, lane, factor)
    for x in leaves:
        got = _scaled_lane(x, root)
        if got is not None:
            v, c, f = got
            d = lanes.setdefault(v, {})
            d[c] = d.get(c, 0) + 1
            scale.setdefault(v, {})[c] = f
            read[x] = got
    whole = [v for v, d in lanes.items()
             if len(d) == v.shape[0] and all(d.get(j) == 1 for j in range(v.shape[0]))]
    if not whole:
        return None
    # the vectors of the most common width W (a power of two the target computes at)
    widths: dict[int, list[UOp]] = {}
    for v in whole:
        widths.setdefault(v.shape[0], []).append(v)
    w, vecs = max(widths.items(), key=lambda kv: (len(kv[1]), kv[0]))
    if w < 2 or w & (w - 1) or not desc.alu_legal(w, root.dtype, root.op):
        return None
    taken = set(vecs)
    rest = [x for x in leaves if x not in read or read[x][0] not in taken]
    scaled = []
    for v in vecs:
        fs = [scale[v][j] for j in range(w)]
        if any(f != 1 for f in fs):
            if not desc.alu_legal(w, root.dtype, Ops.MUL):
                return None
            v = UOp(Ops.MUL, (v, UOp(Ops.STACK, tuple(make_const(f, root.dtype) for f in fs))))
        scaled.append(v)
    c = scaled[0]
    for v in scaled[1:]:
        c = UOp(root.op, (c, v))
    h = w // 2
    while h:
        # lanes h … 2h-1 over lanes 0 … h-1 (the other lanes repeat them: never read)
        perm = UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (c, UOp.const(h + j % h)))
                                    for j in range(w)))
        c = UOp(root.op, (c, perm))
        h //= 2
    out = UOp(Ops.INDEX, (c, UOp.const(0)))
    for x in rest:
        out = UOp(root.op, (out, x))
    return out
