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

from kcc.ir.consts import const_int
from kcc.ir.ops import ALU, Ops
from kcc.ir.uop import AddrSpace, UOp, buffer_of

GROUP = 16
_PURE = ALU | {Ops.CONST, Ops.CAST, Ops.BITCAST, Ops.INDEX, Ops.SHRINK, Ops.STACK, Ops.AFTER,
               Ops.SPECIAL, Ops.PARAM, Ops.BUFFER, Ops.GROUP}


def _in_registers(place: UOp) -> bool:
    b = buffer_of(place)
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


def _element(idx: UOp) -> tuple[UOp | None, int] | None:
    """An element index as (x, c) for x + c (x None: the constant c), or None."""
    c = const_int(idx)
    if c is not None:
        return None, int(c)
    if idx.op is Ops.ADD and (c := const_int(idx.src[1])) is not None:
        return idx.src[0], int(c)
    return idx, 0


def _groups(seg: list[UOp]) -> dict[UOp, list[UOp]]:
    """The stretch's wide-load groups (``load_groups``)."""
    by: dict[tuple[UOp, UOp | None], dict[int, UOp]] = {}
    for u in seg:
        if not _memory_load(u) or len(u.src) != 1 or u.src[0].op is not Ops.INDEX or \
                u.dtype.is_bool or u.dtype.itemsize != 4 or u.shape != ():
            continue
        e = _element(u.src[0].src[1])
        if e is not None:
            by.setdefault((u.src[0].src[0], e[0]), {}).setdefault(e[1], u)
    pos = {u: i for i, u in enumerate(seg)}
    out: dict[UOp, list[UOp]] = {}
    for lanes in by.values():
        taken: set[int] = set()
        for n in (4, 2):
            for c in sorted(lanes):
                g = [lanes.get(c + j) for j in range(n)]
                if c % n or any(c + j in taken for j in range(n)) or None in g:
                    continue
                # issued where lane 0 is, which must come first (its place is resolved there)
                if min(g, key=pos.__getitem__) is g[0]:  # type: ignore[arg-type]
                    out[g[0]] = g                          # type: ignore[index,assignment]
                    taken.update(range(c, c + n))
    return out


def load_groups(lin: list[UOp]) -> dict[UOp, list[UOp]]:
    """Scalar loads that may be one wide load (global_load_b128/b64, ds_load_b128/b64), as
    LLVM's load-store vectorizer makes them: the first load of a group → the group's loads in
    element order. A group is 4 (else 2) ungated 32-bit loads of elements x + c … x + c + n-1
    of one buffer (c a multiple of n), all in one straight-line stretch, so no store and no
    barrier comes between them, with lane 0 scheduled first: the wide load is issued there.
    (An unrolled reduction's loads: `sum`'s 16 loads of one row, then its 16 LDS reads.) The
    selector checks the alignment of element x + c (kcc/isel/amd/select.py ``vector_mem``)
    and loads the group one element at a time where it is not known."""
    out: dict[UOp, list[UOp]] = {}
    seg: list[UOp] = []
    for u in lin:
        if _boundary(u):
            out.update(_groups(seg))
            seg = []
        else:
            seg.append(u)
    out.update(_groups(seg))
    return out
