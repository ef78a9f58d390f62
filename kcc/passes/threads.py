"""Threads of a workgroup that never meet → more workers, for a target without workgroups.

A GPU-style kernel whose threads share nothing (no LOCAL buffer, no BARRIER, no WMMA left: each
thread reads and writes GLOBAL memory and its own REG buffers only) means the same when every
(workgroup, thread) pair is a worker of its own (docs/semantics.md, "Threads": threads of one
workgroup are ordered only by BARRIERs and LOCAL memory). On a target without workgroups
(`TargetDesc.gpu` False: x86) each `lidx_j` of constant bound L is folded into `gidx_j`:

    g' = SPECIAL(G·L) "gidx_j";  gidx_j → CDIV(g', L);  lidx_j → CMOD(g', L)

(G the gidx_j bound, 1 when the kernel has none). Any other kernel is left as it is, and the
target refuses its lidx by name as before.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, substitute, toposort
from kcc.passes.target import TargetDesc


def _index(n: UOp, v: UOp) -> UOp:
    """v (a weakint) in place of SPECIAL n: cast to n's dtype when n's is strong."""
    return v if n.dtype.is_weak else UOp(Ops.CAST, (v,), n.dtype)


def fold_threads(sink: UOp, desc: TargetDesc) -> UOp:
    """lidx_j folded into gidx_j when the target has no workgroups and threads never meet."""
    if desc.gpu:
        return sink
    order = toposort([sink])
    specials = [n for n in order if n.op is Ops.SPECIAL]
    if not any(n.arg.startswith("lidx") for n in specials):
        return sink
    if any(n.op in (Ops.BARRIER, Ops.WMMA) or (n.op is Ops.BUFFER and n.arg.addrspace is
                                               AddrSpace.LOCAL) for n in order):
        return sink
    repl: dict[UOp, UOp] = {}
    for j in range(3):
        lid = [n for n in specials if n.arg == f"lidx{j}"]
        if not lid:
            continue
        size = const_int(lid[0].src[0])
        gid = [n for n in specials if n.arg == f"gidx{j}"]
        groups = const_int(gid[0].src[0]) if gid else 1
        if size is None or groups is None:
            return sink           # a symbolic launch size: left to the target, which refuses
        # weak index arithmetic (each SPECIAL's own dtype restored by a CAST where strong)
        merged = UOp(Ops.SPECIAL, (UOp.const(groups * size),), f"gidx{j}")
        for n in lid:
            repl[n] = _index(n, UOp(Ops.CMOD, (merged, UOp.const(size))))
        for n in gid:
            repl[n] = _index(n, UOp(Ops.CDIV, (merged, UOp.const(size))))
    return substitute(sink, repl)
