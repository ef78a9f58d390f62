"""Coalescing of the selector's own register copies before the scan.

Instruction selection writes loop-carried values as copies: the accumulator ``acc`` is copied
into a fresh register at the top of the loop body, the new sum is computed into another and
copied back to ``acc`` at the bottom.  The allocator's intervals are hulls, so ``acc`` (live
around the back edge) covers the whole body and would need a register of its own besides the
working copies: two copies per value per iteration.  Here the copies a target marks with
``is_copy`` are coalesced when the two variables are never live at once, by the interference
test of Chaitin (a variable interferes with everything live after each of its definitions),
without his exception for a copy's source: the source must die at the copy.  (Sharing a
register while both are live would be correct too, but then which of two equal values a
register holds depends on the path, which the independent checker, tracking one value per
location, rightly refuses to assume.)  Both become one variable, the copies copy a register onto
itself and the target drops them when it emits code.

Only the live-out sets of the definitions are needed; they come from the exact two-pass
liveness (``liveness.live_out_sets``).  Copies in deeper loops are tried first.
"""

from __future__ import annotations

from kcc.ir.mir import Inst, Kind, RegOp, Role, VReg
from kcc.regalloc.liveness import header_live_in, live_out_sets, number_vars, vreg_lists

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable

# members bound once: a module global is read faster than a class attribute (an Enum's went
# through EnumType's __getattr__ hook before kcc.symbols), per operand in these loops
_MOVE, _OP, _DEF, _USE = Kind.MOVE, Kind.OP, Role.DEF, Role.USE


def coalesce_copies(work: list[Inst], is_copy: Callable[[Inst], bool], pinned: set[int],
                    weak: set[int], loops: list[tuple[int, int, int]],
                    succ: list[list[int]],
                    regs: Callable[[Inst], tuple[list, list]] = vreg_lists,
                    numbering: tuple | None = None) -> dict[int, VReg]:
    """The variable (by ``id``) each coalesced variable of ``work`` becomes.

    Candidates are the allocator's own ``Kind.MOVE`` copies (around tied operands) and the
    instructions for which ``is_copy(inst.orig)`` says that they copy their USE register
    operand into their DEF one and do nothing else.  ``pinned`` holds the ids of variables
    that keep their identity (pre-coloured); a variable in ``weak`` (the allocator's
    unspillable temporaries) is never the one a group is renamed to when another member is
    not weak, so that a long-lived group stays spillable.  ``regs(inst)`` lists an
    instruction's used and defined VRegs (``liveness.vreg_lists``, or the allocator's cache);
    ``numbering``: number_vars(work, regs), when the caller has it.
    """
    var, index, uses, defs_of = numbering or number_vars(work, regs)
    copies: list[tuple[int, int, int, int]] = []     # (-depth, inst, dst, src)
    depth = [0] * len(work)
    for b, e, dep in loops:
        for i in range(b, e + 1):
            depth[i] = max(depth[i], dep + 1)
    def_at: dict[int, list[int]] = {}
    for i, w in enumerate(work):
        ds = defs_of[i]
        for k in ds:
            def_at.setdefault(k, []).append(i)
        orig = getattr(w, "orig", None)
        if w.kind is _MOVE or w.kind is _OP and orig is not None and is_copy(orig):
            ops = [o for o in w.operands if isinstance(o, RegOp)]
            if len(ops) == 2 and all(o.fixed is None and o.tied is None for o in ops):
                d, s = ops[0].reg, ops[1].reg
                if (isinstance(d, VReg) and isinstance(s, VReg) and d is not s
                        and d.cls == s.cls and id(d) not in pinned and id(s) not in pinned
                        and ops[0].role is _DEF and ops[1].role is _USE):
                    copies.append((-depth[i], i, index[id(d)], index[id(s)]))
    if not copies:
        return {}
    # the live-out sets the test reads: at the definitions of the variables copies join (a
    # group's definitions are its members') and at the copies themselves
    involved = {k for _, _, d, s in copies for k in (d, s)}
    defs = {k: set(def_at.get(k, ())) for k in involved}
    need = set().union(*defs.values(), (i for _, i, _, _ in copies))
    header_in, _ = header_live_in(uses, defs_of, succ, [b for b, _, _ in loops])
    out = live_out_sets(uses, defs_of, succ, header_in, need)
    live_at: dict[int, set[int]] = {}      # variable → the kept instructions it is live out of
    for j, o in out.items():
        for k in o:
            if k in involved:
                live_at.setdefault(k, set()).add(j)
    from kcc.regalloc.unionfind import UnionFind  # (only where copies meet: start-up)
    sets = UnionFind()
    find = sets.find
    members = {k: {k} for k in involved}

    def live_out_of(js: set[int], skip: int, group: set[int]) -> bool:
        """Whether a variable of group is live out of an instruction of js other than skip,
        asked from the smaller side (a group that grows along a 200,000-instruction chain
        is never walked per copy)."""
        if len(js) <= len(group):
            return any(j != skip and not out[j].isdisjoint(group) for j in js)
        for k in group:
            at = live_at.get(k)
            if at and any(j != skip for j in at & js):
                return True
        return False

    for _, i, d, s in sorted(copies):
        a, b = find(d), find(s)
        if a == b:
            continue
        if not defs[a].isdisjoint(defs[b]):
            continue                      # one instruction defines both: two results
        if live_out_of(defs[a], i, members[b]) or live_out_of(defs[b], -1, members[a]) \
                or not out[i].isdisjoint(members[b]):
            continue
        # a becomes the representative: a variable that may spill, with the most definitions
        a, b = sorted((a, b), key=lambda k: (id(var[k]) in weak, -len(defs[k]), k))
        sets.union(b, a)
        # (the smaller set into the larger: each element moves O(log n) times)
        for table in (members, defs):
            x, y = table[a], table.pop(b)
            if len(x) < len(y):
                x, y = y, x
            x |= y
            table[a] = x
    return {id(var[k]): var[find(k)] for k in range(len(var)) if find(k) != k}
