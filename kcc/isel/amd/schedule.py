"""Loads issued early: a reordering of the schedule before AMD selection (issue 25).

The hardware does not interlock on memory results: kcc places `s_waitcnt` before the first
instruction that reads a loaded register (kcc/isel/amd/lower.py), and that wait drains the
counter, i.e. waits for every load issued before it. In the schedule as linearized, each load
sits just before its use (an unrolled reduction: load, add, load, add, …), so every load is
waited for alone: the loads do not overlap, and there is one `s_waitcnt` per load. Here, in
each straight-line stretch of the schedule, the GLOBAL and LOCAL loads are moved up, by groups
of up to GROUP, to where the first load of their group was, together with the address
arithmetic they need: the group's loads are in flight together and the first use waits once.

**Legality.** Only the order of nodes changes, and the result is still a topological order
(each moved load is preceded by what it reads). A stretch ends at every node whose position
matters besides its dependencies: RANGE, END, BARRIER, SINK, a STORE into GLOBAL or LOCAL
memory (a later load may read what it wrote) and any op not listed as movable. A load moves
only when the nodes it needs within the stretch are pure (no LOAD, no STORE: a REG
accumulator's load, which follows the previous iteration's store, stays where it is). Loads
of one stretch read the same memory, whatever their order.

**Cost.** GROUP bounds the registers the early loads hold at once (VGPR use sets occupancy).
"""

from __future__ import annotations

from kcc.ir.ops import ALU, Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer

GROUP = 16
_PURE = ALU | {Ops.CONST, Ops.CAST, Ops.BITCAST, Ops.INDEX, Ops.SHRINK, Ops.STACK, Ops.AFTER,
               Ops.SPECIAL, Ops.PARAM, Ops.BUFFER, Ops.GROUP}


def _buffer(place: UOp) -> UOp:
    b = place
    while b.op in (Ops.INDEX, Ops.SHRINK, Ops.AFTER):
        b = b.src[0]
    return b


def _in_registers(place: UOp) -> bool:
    b = base_buffer(_buffer(place))
    return b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.REG


def _boundary(u: UOp) -> bool:
    if u.op is Ops.STORE:
        return not _in_registers(u.src[0])
    return u.op not in _PURE and u.op is not Ops.LOAD


def _memory_load(u: UOp) -> bool:
    return u.op is Ops.LOAD and u.src[0].op in (Ops.INDEX, Ops.SHRINK) and \
        not _in_registers(u.src[0])


def _stretch(seg: list[UOp]) -> list[UOp]:
    """One straight-line stretch with its memory loads moved up by groups."""
    pos = {u: i for i, u in enumerate(seg)}
    loads = [u for u in seg if _memory_load(u)]
    if len(loads) < 2:
        return seg
    movable: dict[UOp, list[UOp]] = {}      # load -> its cone within the stretch, in order
    for ld in loads:
        cone: set[UOp] = set()
        stack = list(ld.src)
        ok = True
        while stack:
            s = stack.pop()
            if s not in pos or s in cone:
                continue
            if s.op in (Ops.LOAD, Ops.STORE) or s.op not in _PURE:
                ok = False
                break
            cone.add(s)
            stack.extend(s.src)
        if ok:
            movable[ld] = sorted(cone, key=pos.__getitem__)
    out: list[UOp] = []
    placed: set[UOp] = set()
    groups = [loads[i:i + GROUP] for i in range(0, len(loads), GROUP)]
    first = {g[0]: g for g in groups}
    for u in seg:
        g = first.get(u)
        if g is not None:
            for ld in g:
                if ld in movable and ld not in placed:
                    for c in movable[ld]:
                        if c not in placed:
                            out.append(c)
                            placed.add(c)
                    out.append(ld)
                    placed.add(ld)
        if u not in placed:
            out.append(u)
            placed.add(u)
    return out


def early_loads(lin: list[UOp]) -> list[UOp]:
    """The schedule with each stretch's memory loads issued early (module docstring)."""
    out: list[UOp] = []
    seg: list[UOp] = []
    for u in lin:
        if _boundary(u):
            out += _stretch(seg)
            seg = []
            out.append(u)
        else:
            seg.append(u)
    return out + _stretch(seg)
