"""slp's REG-accumulator helpers (kcc/passes/slp.py): the runs of scalar stores to
consecutive elements, and in a kernel without vectors the REG buffers whose every store run
becomes one group (passes/unroll.py's jammed column loop) and the runs of stores of kernel
arguments whose values are one vector's lanes (`column_groups`)."""

from __future__ import annotations

from kcc.ir.consts import const_int, is_const
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer
from kcc.passes.slp_index import consecutive_runs, lane_offset
from kcc.passes.target import TargetDesc

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable


def store_runs(order: list[UOp]) -> list[tuple[UOp, ...]]:
    """Runs of ungated scalar STOREs to consecutive elements of one buffer (by offset; an
    upcast's `a*c`, `a*c + 1`, … too: slp_index.lane_offset's ``scaled``, for stores only,
    where loads keep their grouping); where two stores write one element, `overlap_runs`."""
    stores = [u for u in order if u.op is Ops.STORE and len(u.src) == 2
              and u.src[0].op is Ops.INDEX and u.src[1].shape == ()
              and u.src[0].src[0].kind == "buffer"]
    key = {u: (u.src[0].src[0],) + lane_offset(u.src[0].src[1], True) for u in stores}
    seen: set = set()
    twice = set()
    for u in stores:
        if key[u] in seen:
            twice.add(key[u][:2])
        seen.add(key[u])
    if not twice:
        return consecutive_runs(stores, scaled=True)
    return consecutive_runs([u for u in stores if key[u][:2] not in twice], scaled=True) \
        + overlap_runs([u for u in stores if key[u][:2] in twice], key)


def overlap_runs(stores: list[UOp], key: dict[UOp, tuple]) -> list[tuple[UOp, ...]]:
    """Runs of stores to elements of a buffer that two stores write (passes/unroll.py's
    column jam in overlapping chunks, unroll_columns.py `overlapped_chunks`: mean_axes02's
    columns 0..7 and 6..13), in program order: each store of the element after the run's
    last extends the run, any other starts one. By offset alone the first store of each
    element would stand for it (columns 0..13 cut 8 + 4 + 2, the second chunk's lanes
    stored one by one); each chunk's stores are its own run, stored from its vector."""
    runs: list[list[UOp]] = []
    for u in stores:
        b, base, k = key[u]
        last = key[runs[-1][-1]] if runs else None
        if last is not None and last[:2] == (b, base) and last[2] + 1 == k:
            runs[-1].append(u)
        else:
            runs.append([u])
    return [tuple(r) for r in runs]


def scalar_reg_groups(order: list[UOp], ctx: TargetDesc, stored: dict[UOp, int],
                      packs: Callable[[tuple[UOp, ...]], bool]
                      ) -> tuple[list[tuple[UOp, ...]], dict[UOp, int]]:
    """In a kernel without vectors: each run of stores to a whole REG buffer of n > 1
    elements that the target stores at once (passes/unroll.py's jammed column loop: copy k's
    one-element accumulator at element k) as one group of n lanes, and n the group width of
    that buffer (its scalar loads become lanes of the group's load, `_group_lanes`).
    ``stored``: `reg_stores(order)`; ``packs``: whether slp packs a tuple of lanes."""
    groups: list[tuple[UOp, ...]] = []
    reg_width: dict[UOp, int] = {}
    if not ctx.vector_regs:             # GPU targets: REG buffers are a lane's own registers
        return groups, reg_width
    runs: dict[UOp, list[tuple[UOp, ...] | None]] = {}
    for run in store_runs(order):
        b = base_buffer(run[0].src[0].src[0])
        n = len(run)
        if b.op is not Ops.BUFFER or b.arg.addrspace is not AddrSpace.REG:
            continue
        ok = n >= 2 and b.arg.size == n and const_int(run[0].src[0].src[1]) == 0 \
            and ctx.mem_legal(n, run[0].src[1].dtype) and ctx.alu_legal(n, run[0].src[1].dtype) \
            and packs(tuple(st.src[1] for st in run))
        runs.setdefault(b, []).append(run if ok else None)
    # a buffer is a group only when every run of stores to it packs: one that stays scalar
    # (a float16 MAX, which x86 has at no vector width) would store lanes of the group one by
    # one, so the group could not live in a register (half_softmax's max accumulator went to
    # the stack: a vector load and four 2-byte stores an iteration)
    for b, rs in runs.items():
        if None in rs or sum(len(r) for r in rs) != stored.get(b, 0):
            continue
        groups += rs
        reg_width[b] = b.arg.size
    return groups, reg_width


def reg_stores(order: list[UOp]) -> dict[UOp, int]:
    """REG buffer → how many STOREs the kernel has to it."""
    out: dict[UOp, int] = {}
    for u in order:
        if u.op is Ops.STORE and u.src[0].op in (Ops.INDEX, Ops.SHRINK):
            b = base_buffer(u.src[0].src[0])
            if b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.REG:
                out[b] = out.get(b, 0) + 1
    return out


def column_groups(order: list[UOp], ctx: TargetDesc,
                  packs: Callable[[tuple[UOp, ...]], UOp | None],
                  blends: Callable[[tuple[UOp, ...]], UOp | None] | None = None
                  ) -> list[tuple[UOp, ...]]:
    """In a kernel without vectors: runs of scalar stores to consecutive elements of a
    kernel argument whose values pack into a vector that inserts no scalars (`_inserts`: a
    load, vector ops over loads, splats and shuffles), cut into groups of the widest width
    the target stores at once that divides the run. passes/unroll.py's jammed column loop
    reads its accumulators' group back one element at a time and stores each to the next
    element of the output (conv1d: four lane extracts and four scalar stores, each with
    its own address): one vector store of the group instead. A group that does not pack
    is tried again as its two halves, while they are a width the target stores (sort's
    compare-exchange E_4_2: four MINs then four MAXs, two groups of 4 where 8 lanes mix two
    ops), unless a half does not pack and the whole packs as a blend of two ops (``blends``,
    slp_blend.py: E_2_2_2's MINs and MAXs alternate in pairs). ``packs``: slp's packing of a
    tuple of lanes (None: no vector)."""
    groups: list[tuple[UOp, ...]] = []
    if not ctx.vector_regs:             # GPU targets: a lane's stores are its own
        return groups
    for run in store_runs(order):
        b = base_buffer(run[0].src[0].src[0])
        if b.op is not Ops.PARAM or b.arg.addrspace is not AddrSpace.GLOBAL:
            continue
        dt = run[0].src[1].dtype
        n = len(run)
        widths = ctx.mem_widths.get(dt, ())
        w = max((w for w in widths if 2 <= w <= n and n % w == 0), default=0)
        if w and not ctx.alu_legal(w, dt):
            continue
        # no width divides the run: cut greedily (`_cut`)
        cut = [run[i:i + w] for i in range(0, n, w)] if w else \
            _cut(run, sorted((x for x in widths if x >= 2 and ctx.alu_legal(x, dt)),
                             reverse=True))
        work = cut[::-1]
        while work:                     # (groups in run order: the last cut is popped first)
            g = work.pop()
            if _packs(packs, g):
                groups.append(g)
                continue
            h = len(g) // 2
            halves = [g[h:], g[:h]] if len(g) % 2 == 0 and h in widths and h >= 2 \
                and ctx.alu_legal(h, dt) else []
            if blends is not None and not (halves and all(_packs(packs, x) for x in halves)) \
                    and _packs(blends, g):
                groups.append(g)
            else:
                work += halves
    return groups


def _packs(packs: Callable[[tuple[UOp, ...]], UOp | None], g: tuple[UOp, ...]) -> bool:
    """Whether the values of the store group g pack into a vector that inserts no scalars."""
    v = packs(tuple(st.src[1] for st in g))
    return v is not None and not _inserts(v)


def _cut(run: tuple[UOp, ...], widths: list[int]) -> list[tuple[UOp, ...]]:
    """run, which no width divides, cut greedily into groups of widths (widest first): the
    widest that fits, the rest left scalar. A column loop jammed whole in
    chunks (passes/unroll_columns.py `column_chunks`: mean_axes02's 14 columns 8 + 4 + 2)
    stores 8 + 4 lanes, not 14 scalars (no width divides 14)."""
    n = len(run)
    out, i = [], 0
    for w in widths:
        while n - i >= w:
            out.append(run[i:i + w])
            i += w
    return out


def _inserts(v: UOp) -> bool:
    """Whether vector v (a packing) gathers distinct scalars into lanes somewhere: a STACK
    of two or more scalars that are neither constants nor lanes of vectors. Each such
    scalar costs an insert, which is what the scalar stores saved (four scalar
    accumulators scaled and stored: three VINSERTPS where four stores were)."""
    work, seen = [v], set()
    while work:
        u = work.pop()
        if u in seen or not u.shape:
            continue
        seen.add(u)
        if u.op is Ops.STACK:
            lone = {s for s in u.src if not is_const(s)
                    and not (s.op is Ops.INDEX and s.src[0].shape)}
            if len(lone) > 1:
                return True
        work.extend(u.src)
    return False
