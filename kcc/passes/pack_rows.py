"""Row order for passes/pack.py's wide tiles: the reduce body's accumulator stores regrouped
row by row across the column copies, so the linearizer, which takes ready nodes in the order
of the graph (passes/linearize.py), keeps one row's broadcasts of a live at a time."""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, AxisType, UOp, base_buffer, substitute
from kcc.passes.target import TargetDesc
from kcc.passes.unroll import _Loops


def _group_leaves(n: UOp, out: list[UOp]) -> None:
    """The non-GROUP nodes under a GROUP tree, in src order."""
    if n.op is Ops.GROUP:
        for s in n.src:
            _group_leaves(s, out)
    else:
        out.append(n)


def rows_interleaved(sink: UOp, col: UOp, desc: TargetDesc, factor: int) -> UOp:
    """The reduce loops of column loop col with their accumulator stores in row order across
    the column widening's `factor` copies (passes/pack.py, "Wide tiles"): the jams leave the body as
    copy-major groups (row copy, then column copy, then the tile's rows), and the linearizer
    takes ready nodes in that order, so each row's broadcasts of a stayed live across the other
    column copy's rows. Here row j of column copy 0, then row j of copy 1, ..., then row j + 1:
    a row's broadcasts die at its last FMA. Only the order of stores to distinct elements of
    private accumulators within one iteration changes (each element is stored once, and only
    its own store's value reads it), so the values are the same."""
    loops = _Loops(sink)
    end = loops.end_of.get(col)
    if end is None:
        return sink
    repl: dict[UOp, UOp] = {}
    for e in loops.cone(end):
        if e.op is not Ops.END or len(e.src) != 2 or e.src[0].op is not Ops.GROUP \
                or e.src[1].arg[-1] is not AxisType.REDUCE:
            continue
        leaves: list[UOp] = []
        _group_leaves(e.src[0], leaves)
        keyed: dict[tuple[UOp, int], list[UOp]] = {}
        bufs: list[UOp] = []
        seen: set[tuple[UOp, int]] = set()
        for st in leaves:
            if st.op is not Ops.STORE or st.src[0].op is not Ops.INDEX:
                break
            buf = base_buffer(st.src[0].src[0])
            el = const_int(st.src[0].src[1])
            if buf.op is not Ops.BUFFER or buf.arg.addrspace is not AddrSpace.REG or el is None \
                    or (buf, el) in seen:
                break
            seen.add((buf, el))
            if buf not in bufs:
                bufs.append(buf)
            # a row of the tile: one vector of the widest the target loads
            lanes = max(desc.mem_widths.get(buf.arg.dtype, (1,)))
            keyed.setdefault((buf, el // lanes), []).append(st)
        else:
            if len(bufs) < factor or len(bufs) % factor:
                continue
            groups = []
            for i in range(0, len(bufs), factor):
                chunk = bufs[i:i + factor]
                n_rows = max(k[1] for k in keyed if k[0] in chunk) + 1
                for j in range(n_rows):
                    for b in chunk:
                        if (b, j) in keyed:
                            groups.append(UOp(Ops.GROUP, tuple(keyed[(b, j)])))
            repl[e.src[0]] = UOp(Ops.GROUP, tuple(groups))
    return substitute(sink, repl) if repl else sink
