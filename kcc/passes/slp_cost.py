"""slp's cost model: the instructions a packing is estimated to cost (kcc/passes/slp.py).

slp widens a run of scalar stores past the kernel's own vectors only when the wider groups'
estimate is below the narrower ones' (`pack_cost`); a STACK leaf is costed by the shuffles a
selector needs for it (`stack_cost`), a lane tuple of at most `TargetDesc.permute_sources`
registers as one permutation (`permute_regs`).
"""

from __future__ import annotations

from kcc.ir.consts import const_int, is_const
from kcc.ir.ops import ALU, Ops
from kcc.ir.uop import UOp
from kcc.passes.target import TargetDesc

# the ops slp packs lane-wise into one vector op (every ALU op, and CAST/BITCAST)
PACKABLE = frozenset(ALU | {Ops.CAST, Ops.BITCAST})
Lanes = tuple[UOp, ...]


def permute_regs(t: Lanes, limit: int) -> bool:
    """Whether every lane of t is a lane of one of at most `limit` registers: a constant lane
    of a vector value, or a scalar value that is not a constant (lane 0 of its register)."""
    regs: set[UOp] = set()
    for s in t:
        if s.op is Ops.INDEX and s.src[0].kind == "value" and s.src[0].shape \
                and const_int(s.src[1]) is not None:
            regs.add(s.src[0])
        elif s.shape == () and s.kind == "value" and not is_const(s):
            regs.add(s)
        else:
            return False
    return len(regs) <= limit


def stack_cost(u: UOp, base: int, shared: set, perm: int = 0) -> int:
    """Estimated instructions of a STACK leaf, in blocks of `base` lanes: 0 for a vector's
    own blocks in order, 1 for a broadcast, a constant or one in-block order applied to a
    concat (whose inserts count once per distinct concat), 2 (an index load and the
    permutation) for lanes of at most `perm` registers, else per block (one block and a
    repeat when every block is the same)."""
    t = u.src
    if all(s is t[0] for s in t) or all(is_const(s) for s in t):
        return 1
    blocks = [t[i:i + base] for i in range(0, len(t), base)]
    if len(blocks) > 1 and all(b == blocks[0] for b in blocks):
        return stack_cost(UOp(Ops.STACK, blocks[0]), base, shared) + 1
    one = []
    for b in blocks:
        v = b[0].src[0] if b[0].op is Ops.INDEX else None
        ks = [const_int(s.src[1]) if s.op is Ops.INDEX and s.src[0] is v else None for s in b]
        if v is None or v.kind != "value" or None in ks or len({k // base for k in ks}) != 1:
            one.append(None)
            continue
        one.append(((v, ks[0] // base), tuple(k % base for k in ks)))
    if None not in one and len({o[1] for o in one}) == 1:
        srcs = tuple(o[0] for o in one)
        cost = 0 if one[0][1] == tuple(range(len(blocks[0]))) else 1
        if srcs == tuple((srcs[0][0], i) for i in range(len(srcs))):
            return cost
        if all(x == srcs[0] for x in srcs):
            return cost + 1
        if srcs not in shared:
            shared.add(srcs)
            cost += len(srcs) - 1
        return cost
    if perm and permute_regs(t, perm):
        return 2
    cost = len(blocks) - 1
    for b, o in zip(blocks, one):
        if o is not None:
            cost += 1
        elif all(s.op is Ops.INDEX and s.src[0].kind == "value" for s in b):
            cost += min(3, len({(s.src[0], const_int(s.src[1]) // base) for s in b}))
        else:
            cost += len(b)
    return cost


def pack_cost(vs: list[UOp], original: dict[UOp, int], base: int, ctx: TargetDesc) -> int:
    """Estimated instructions of the new vector nodes under vs (one per vector value node,
    stack_cost for a STACK leaf) and of the scalar ALU nodes the STACK leaves still read."""
    seen: set[UOp] = set()
    shared: set = set()
    work, cost = list(vs), 0
    scalars: list[UOp] = []
    while work:
        n = work.pop()
        if n in original or n in seen:
            continue
        seen.add(n)
        if n.op is Ops.STACK:
            cost += stack_cost(n, base, shared,
                                ctx.permute_sources(n.dtype, len(n.src)))
            scalars.extend(n.src)
            continue
        if n.kind == "value" and n.shape:
            cost += 1
        work.extend(n.src)
    # the scalar work a STACK leaf still needs, once each (what packing did not absorb)
    while scalars:
        n = scalars.pop()
        if n in seen or n.shape != () or n.op not in PACKABLE:
            continue
        seen.add(n)
        cost += 1
        scalars.extend(n.src)
    return cost
