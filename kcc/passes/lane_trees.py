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

which computes the same value bit for bit. Taken where the target has the vector op at W
lanes (`TargetDesc.alu_legal`) and lane reads cost something (`TargetDesc.lane_loads`, x86;
a GPU's lanes are registers of their own). One walk over the graph; each chain is read once
from its root.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, substitute_closed, toposort
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


def _is_inner(s: UOp, root: UOp, uses: dict[UOp, int]) -> bool:
    """Whether s is part of root's chain: the same op and dtype, read by its parent only."""
    return s.op is root.op and s.dtype == root.dtype and len(s.src) == 2 and \
        uses.get(s, 0) == 1 and not s.shape


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
    for x in leaves:
        if x.op is Ops.INDEX and len(x.src) == 2 and x.src[0].kind == "value" \
                and len(x.src[0].shape) == 1 and x.src[0].dtype == root.dtype:
            c = const_int(x.src[1])
            if c is not None:
                d = lanes.setdefault(x.src[0], {})
                d[c] = d.get(c, 0) + 1
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
    rest = [x for x in leaves if not (x.op is Ops.INDEX and x.src[0] in taken)]
    c = vecs[0]
    for v in vecs[1:]:
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
