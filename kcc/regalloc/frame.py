"""The spill area of the allocator's frame: how wide each spilled value's slot is and where
it lies.

A value's slot is as wide as the value: the widest of its operands by the target's
``value_bytes``, one width for the values a copy joins.  Slots are given by a linear scan over
the slots' own live ranges (from a spill to the last reload): values of one size whose ranges
do not overlap share a slot, the slot freed first taken first (a heap per size: n log n); the
sizes are laid out widest first, so every slot is aligned to its size without padding.
"""

from __future__ import annotations

from _heapq import heappop, heappush  # heapq's own, without heapq.py (start-up)

from kcc.ir.mir import Kind, Mem, RegOp, VReg, structure, successors
from kcc.regalloc.liveness import intervals
from kcc.regalloc.target import AllocationError, hook

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# members bound once: a module global is read faster than a class attribute (an Enum's went
# through EnumType's __getattr__ hook before kcc.symbols), per operand in these loops
_FILL, _MOVE, _OP, _SPILL = Kind.FILL, Kind.MOVE, Kind.OP, Kind.SPILL


def value_sizes(work: list[Any], target: Any) -> dict[int, int]:
    """The slot size of every variable (by id) of the allocator's working list: the widest of
    its operands by the target's ``value_bytes`` (asked about each instruction's ``orig``);
    copies (the allocator's and the selector's) give source and destination one size
    (union-find), since a copy moves every byte."""
    bytes_of = hook(target, "value_bytes")
    if bytes_of is None:
        return {}
    is_copy = hook(target, "is_copy")
    from kcc.regalloc.unionfind import UnionFind  # (only where slots are sized: start-up)
    sets = UnionFind()
    find = sets.find
    size: dict[int, int] = {}
    for w in work:
        if w.kind is _MOVE or (w.orig is not None and is_copy is not None
                               and w.kind is _OP and is_copy(w.orig)):
            d, s = w.defs()[0], w.uses()[0]
            sets.union(id(d), id(s))
            continue
        if w.orig is None:
            continue                         # the entry: parameters say nothing
        for k, o in enumerate(w.operands):
            regs = (o.reg,) if isinstance(o, RegOp) else (o.base, o.index) \
                if isinstance(o, Mem) else ()
            for r in regs:
                if isinstance(r, VReg):
                    n = bytes_of(w.orig, k)
                    if n > size.get(id(r), 0):
                        size[id(r)] = n
    out: dict[int, int] = {}
    for k, n in size.items():
        root = find(k)
        out[root] = max(out.get(root, 0), n)
    return {k: out[find(k)] for k in {*size, *sets.joined()} if find(k) in out}


def assign_slots(work: list[Any], sizes: dict[int, int], target: Any
                 ) -> tuple[dict[int, tuple[int, int]], int]:
    """Frame offset and size of every spilled variable's slot (by id) and the 16-byte
    aligned frame size.  A slot lives from a SPILL of its variable to its last FILL (or read
    by a folded instruction, ``fold``): a second linear scan over those ranges shares a slot
    between variables of one size that are never in it at once."""
    index: dict[int, int] = {}
    var: list[VReg] = []
    uses: list[list[int]] = []
    defs: list[list[int]] = []
    for w in work:
        mark: list[int] = []
        v = w.var if w.kind in (_SPILL, _FILL) else w.fold[1] if w.fold else None
        if v is not None:
            k = index.setdefault(id(v), len(var))
            if k == len(var):
                var.append(v)
            mark = [k]
        uses.append(mark if w.kind is not _SPILL else [])
        defs.append(mark if w.kind is _SPILL else [])
    if not var:
        return {}, 0        # nothing spilled (most kernels): no slots, no liveness to ask
    loops, labels = structure(work)
    ivs, _, _ = intervals(uses, defs, successors(work, labels),
                          [(b, e) for b, e, _ in loops], len(var))
    busy: dict[int, list[tuple[int, int]]] = {}   # size -> heap of (occupant end, slot)
    count: dict[int, int] = {}                    # size -> slots of that size
    where: dict[int, tuple[int, int]] = {}        # id(var) -> (size, slot number)
    for iv in sorted((iv for iv in ivs if iv), key=lambda iv: (iv.start, iv.var)):
        v = var[iv.var]
        size = sizes.get(id(v)) or target.spill_slot_size(v.cls)
        if size <= 0 or size & (size - 1):
            raise AllocationError(f"spill slot size {size} of {v!r} is not a power of two")
        heap = busy.setdefault(size, [])
        if heap and heap[0][0] < iv.start:       # the slot freed first is free now
            slot = heappop(heap)[1]
        else:
            slot = count.get(size, 0)
            count[size] = slot + 1
        heappush(heap, (iv.end, slot))
        where[id(v)] = (size, slot)
    base: dict[int, int] = {}
    top = 0
    for size in sorted(count, reverse=True):     # widest first: aligned without padding
        base[size] = top
        top += count[size] * size
    offset = {k: (base[size] + slot * size, size) for k, (size, slot) in where.items()}
    return offset, -(-top // 16) * 16
