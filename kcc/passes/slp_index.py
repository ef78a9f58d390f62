"""Lane indexes for kcc/passes/slp.py: an element index as a base node plus a constant, so
that loads of consecutive elements (the lanes of one vector) are recognized by equal bases.

The constant may sit under MULACC addends (tinygrad's column indexes jammed by
passes/unroll.py: `j*C + (i + k)`, and conv1d's input index under its batch term
`b*112 + (t*14 + (x + k))`); the base is then the MULACC chain rebuilt without it, the node
that index would be (hash-consed: equal for every lane). Iterative: an index may be a long
chain.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp


def lane_offset(idx: UOp) -> tuple[UOp | None, int]:
    """idx as (base, k) with idx = base + k (base None for a constant index); a MULACC whose
    addend adds a constant, a*c + (b + k) (the column index j*C + i of tinygrad's axis-0
    reductions jammed by passes/unroll.py), as base a*c + b: the node that index would be,
    hash-consed, so equal for every copy."""
    c = const_int(idx)
    if c is not None:
        return None, c
    k0 = 0
    if idx.op is Ops.ADD:
        k = const_int(idx.src[1])      # (not a recursion: an index may be a long chain)
        if k is not None:
            idx, k0 = idx.src[0], k
    # nested addends, a*c + (b*d + (e + k)) (conv1d's jammed input index under its batch
    # term): the constant of the innermost one, the MULACCs above it rebuilt without it
    chain: list[UOp] = []
    x = idx
    while x.op is Ops.MULACC and len(chain) < 4:
        chain.append(x)
        x = x.src[2]
    k = const_int(x.src[1]) if chain and x.op is Ops.ADD else None
    base = x.src[0] if k is not None else None
    if chain and k is None:
        # the innermost addend a constant, a*c + k (tinygrad's lane j index `4*i + j`,
        # whose lane 0 is `i << 2`): base a*c as lane 0 writes it
        k = const_int(x)
        if k is not None:
            base = _product(chain.pop())
    if base is None or k is None:
        return idx, k0
    for m in reversed(chain):
        base = m.replace(src=m.src[:2] + (base,))
    return base, k0 + k


def consecutive_runs(accesses: list[UOp]) -> list[tuple[UOp, ...]]:
    """The accesses (LOADs or STOREs of an INDEX place) grouped into runs of consecutive
    elements of one buffer node by lane_offset (a run of one included), each in element order;
    the first access of an element stands for it."""
    by_base: dict[tuple[UOp, UOp | None], dict[int, UOp]] = {}
    for u in accesses:
        off = lane_offset(u.src[0].src[1])
        by_base.setdefault((u.src[0].src[0], off[0]), {}).setdefault(off[1], u)
    runs = []
    for offs in by_base.values():
        for k in sorted(offs):
            if k - 1 in offs:
                continue
            run = []
            while k in offs:
                run.append(offs[k])
                k += 1
            runs.append(tuple(run))
    return runs


def _product(m: UOp) -> UOp:
    """MULACC(a, c, k)'s product a*c as a node: `a << log2(c)` for a power of two c (how
    tinygrad writes a lane-0 index `alu0 = i << 2`), else MUL(a, c)."""
    a, c = m.src[0], m.src[1]
    n = const_int(c)
    if n is not None and n > 0 and n & (n - 1) == 0:
        sh = n.bit_length() - 1
        if sh == 0:
            return a
        s = UOp(Ops.CAST, (UOp.const(sh),), c.arg) if c.op is Ops.CAST else UOp.const(sh)
        return UOp(Ops.SHL, (a, s))
    return UOp(Ops.MUL, (a, c))
