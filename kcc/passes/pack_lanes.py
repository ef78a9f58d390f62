"""Pack isomorphic scalar transcendentals into one vector op before they are decomposed.

A kernel that computes n independent scalar EXP2/LOG2/SIN of one dtype in the same loop
(tinygrad's Box–Muller `randn` kernels: nine SINs and nine LOG2s of loaded scalars, summed)
would decompose into n separate polynomials — for SIN a Payne–Hanek reduction each, about
1,800 x86 instructions a lane, so that those kernels compiled in ~2 s (docs/performance.md,
"Compile time against clang's process"). Packing them into one n-lane op first decomposes
once; devectorize then splits the polynomial's ops into the target's legal widths (n = 9 on
x86-64-v3: 8 float32 lanes and 1, 4+4+1 float64 lanes for SIN's float64 evaluation).

Every lane of a vector op is the scalar op on that lane (docs/semantics.md), and the
decompositions are built from lane-wise ops only (kcc/passes/transcendental.py), so each
packed lane computes exactly what the scalar decomposition would: the packing changes the
instructions, not a bit of any result.

Which nodes pack: scalar float32/float64 EXP2/LOG2/SIN that the target decomposes, grouped by
(op, dtype, the loops they run in, transcendental level). The level of a node is 1 + the
largest level among the transcendentals it depends on (0 for none), so two nodes of one level
never depend on each other — a group's STACK of operands cannot form a cycle (a node's level
strictly exceeds that of every transcendental it reaches, and the STACK of a group only adds
edges from operands of level-L nodes into level-L nodes). Only on targets with vector float
registers (not GPUs, whose every vector op is split back into lanes: nothing to gain).
"""

from __future__ import annotations

from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc

_PACKABLE = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN})
_FLOATS = (dtypes.float32, dtypes.float64)


def _worth_it(target: TargetDesc) -> bool:
    """Whether the target computes float vectors of at least 4 lanes (x86; not a GPU)."""
    if target.gpu:
        return False
    return any(w >= 4 for dt in _FLOATS for w in target.alu_widths.get(dt, ()))


def _groups(order: list[UOp], target: TargetDesc) -> list[list[UOp]]:
    """The groups of two or more packable nodes, each in topological order."""
    packable = _PACKABLE
    if sum(1 for u in order if u.op in packable) < 2:      # most kernels: no walk below
        return []
    level: dict[UOp, int] = {}
    cands: list[UOp] = []
    for u in order:
        lv = max((level[s] for s in u.src), default=0)
        if u.op in _PACKABLE:
            if u.shape == () and u.dtype in _FLOATS and not target.native(u.op, u.dtype):
                cands.append(u)
            lv += 1
        level[u] = lv
    if len(cands) < 2:
        return []
    loops = range_sets(order)
    by_key: dict[tuple, list[UOp]] = {}
    for u in cands:
        by_key.setdefault((u.op, u.dtype, loops[u], level[u]), []).append(u)
    return [g for g in by_key.values() if len(g) > 1]


def _rebuild(sink: UOp, repl: dict[UOp, UOp]) -> UOp:
    """sink with every node u of repl replaced by repl[u] (whose subgraph may itself contain
    replaced nodes: it is rebuilt by the same rule). Iterative post-order walk over the graph
    in which a replaced node's only child is its replacement (acyclic: see the module
    docstring)."""
    out: dict[UOp, UOp] = {}
    stack: list[tuple[UOp, bool]] = [(sink, False)]
    while stack:
        u, ready = stack.pop()
        if u in out:
            continue
        kids = (repl[u],) if u in repl else u.src
        if not ready:
            stack.append((u, True))
            stack.extend((k, False) for k in kids if k not in out)
            continue
        if u in repl:
            out[u] = out[repl[u]]
        else:
            src = tuple(out[s] for s in u.src)
            out[u] = u if src == u.src else u.replace(src=src)
    return out[sink]


def pack_lanes(sink: UOp, target: TargetDesc) -> UOp:
    """Replace each group of independent isomorphic scalar transcendentals by lanes of one
    vector op (see the module docstring); the graph unchanged where there is none."""
    if not _worth_it(target):
        return sink
    order = toposort([sink])
    groups = _groups(order, target)
    if not groups:
        return sink
    repl: dict[UOp, UOp] = {}
    for g in groups:
        vec = UOp(g[0].op, (UOp(Ops.STACK, tuple(u.src[0] for u in g)),))
        for i, u in enumerate(g):
            repl[u] = UOp(Ops.INDEX, (vec, UOp.const(i)))
    return _rebuild(sink, repl)
