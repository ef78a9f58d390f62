"""Stage loop-invariant gathers: loads that the middle loops repeat, copied once in lane order.

tinygrad's conv2d (`r_4_16_56_14_2_4_4_32_3_3`) reads, every iteration of its reduce loop r
(the 32 input channels), 36 weights `w[1152·o + 288·c + 9·r + t]` (4 output channels c × 9
taps t). Their index depends on r and on the output-channel loop o, never on the two spatial
loops between o and r (56 rows × 14 column blocks), so every weight is read 784 times per o,
and each time in the wrong order: the lane packer (kcc/passes/slp.py) wants, for each tap t,
the column `(w[c=0][t], …, w[3][t])` (one operand of the 16-lane accumulator group), while
memory holds rows of one c. On x86-64-v4 that was 8 row loads and 16 UNPCK/SHUFPS, plus 3
VINSERTPS and a VSHUFF32X4 for the ninth column, every iteration: 20 shuffles of the 48
operations the loop ran on Intel's ports 0 and 5 (shuffles only on port 5, zmm multiplies
and adds on both; docs/performance.md, "conv2d: weights staged in lane order (issue 24,
item 1)").

This pass copies such a group once per iteration of the loop its index depends on (o), in
front of the loops that do not touch it, into a REG scratch buffer S laid out in the order
the lanes read it: `S[n·p + k] = w[index_k with r := p]` for every iteration p of r and each
of the n loads k, and the load k in the body becomes `S[n·r + k]`. When the slots come in
blocks of m whose places move by a constant from block to block (conv2d: m = 4, one tap's 4
channels), the copy loops over the blocks too, m copies an iteration (`_blocks`). The order
of k is the order in which the accumulator stores read the loads (position in each stored
value's tree, then the store): for conv2d, `k = 4·t + c`, so the column of tap t is 4 consecutive
elements, one block-long row load that the selector broadcasts to every 128-bit block from
memory (no shuffle at all). The copy loop reads every element the original loop reads, and
no other (the same index expressions at the same r values, and the loops it moves out of run
at least once), so no access is added; a copy of a float is its bits, so the result is
bit-identical.

A group is staged when all of these hold: its buffer is a kernel argument that the kernel
never stores to and that is not volatile; each load is an ungated scalar LOAD in the body of
an innermost loop r with a constant bound; the loops between the index's innermost other
loop and r have constant bounds and run at least `MIN_REUSE` times together (the copy runs
once for that many uses); at least two stores in r's body read the group (the lane packer's
seeds); the staged order differs from the order of the loads' places in memory (otherwise
they are already rows); and S fits what is left of the target's `stage_bytes` (for all of a
kernel's staged copies together; 0 on GPU targets, which have no frame).
"""

from __future__ import annotations

from kcc.ir.consts import const_int, peel_offset, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, AxisType, ParamArg, UOp, base_buffer, free_reg_slot, toposort
from kcc.passes.linearize import range_sets
from kcc.passes.target import TargetDesc

MIN_REUSE = 8          # uses of a staged element per copy below which staging does not pay
MAX_TREE = 4096        # nodes walked per stored value when ordering a group (compile time)
MAX_GROUPS = 4         # groups staged per kernel (each one a copy loop and a frame buffer)
# members bound once (a module global is read faster than a class attribute)
_LOAD, _STORE, _RANGE = Ops.LOAD, Ops.STORE, Ops.RANGE


def _nest(rngs: frozenset[UOp], deps: dict[UOp, frozenset[UOp]]) -> list[UOp]:
    """The ranges, outermost first (an inner RANGE depends on its outer ones)."""
    return sorted(rngs, key=lambda r: len(deps[r]))


def _tree_loads(stores: list[UOp], loads: set[UOp], r: UOp,
                deps: dict[UOp, frozenset[UOp]]) -> list[list[UOp]]:
    """For each store, the loads its value tree reads, depth first with srcs in order (only
    through nodes that depend on r: the loop body)."""
    per: list[list[UOp]] = []
    for st in stores:
        seen: set[UOp] = set()
        got: list[UOp] = []
        work = [st.src[1]]
        while work and len(seen) < MAX_TREE:
            u = work.pop()
            if u in seen or r not in deps[u]:
                continue
            seen.add(u)
            if u in loads:
                got.append(u)
                continue
            work.extend(reversed(u.src))
        per.append(got)
    return per


def _lane_order(per: list[list[UOp]]) -> list[UOp]:
    """The loads in the order the stores read them: the k-th load of every store's tree
    before the (k+1)-th of any (slp packs lane tuples position by position across the
    stores, kcc/passes/slp.py)."""
    out: dict[UOp, None] = {}
    for k in range(max((len(g) for g in per), default=0)):
        for g in per:
            if k < len(g):
                out.setdefault(g[k], None)
    return list(out)


class _Group:
    """Loads of one buffer in one innermost loop r whose index leaves the loops `mid` out."""

    def __init__(self, buf: UOp, r: UOp, outer: UOp | None, mid: list[UOp]) -> None:
        self.buf, self.r, self.outer, self.mid = buf, r, outer, mid
        self.loads: list[UOp] = []


def _used_ranges(idx: UOp, memo: dict[UOp, frozenset[UOp] | None]) -> frozenset[UOp] | None:
    """The RANGEs an index expression computes with (a RANGE's own srcs, its bound and the
    loops around it, are not its value: range_sets counts them, this does not); None when
    it reads memory (a LOAD: its value may change between the copy and the use)."""
    for u in toposort([idx], lambda x: x not in memo):
        if u in memo:
            continue
        if u.op is Ops.RANGE:
            memo[u] = frozenset({u})
        elif u.op is Ops.LOAD or u.kind != "value" or any(memo[x] is None for x in u.src):
            memo[u] = None
        else:
            memo[u] = frozenset().union(*[memo[x] for x in u.src])   # type: ignore[misc]
    return memo[idx]


def _candidates(order: list[UOp], desc: TargetDesc) -> list[UOp]:
    """The RANGEs and the loads `_groups` may take (scalar loads of an element of a
    read-only argument), in graph order: the nodes whose range sets it reads."""
    # STORE is the one op that writes memory (kcc/ir/ops.py)
    written = {base_buffer(u.src[0].src[0]) for u in order if u.op is _STORE}
    out = []
    for u in order:
        if u.op is _RANGE:
            out.append(u)
        elif u.op is _LOAD and len(u.src) == 1 and u.shape == () \
                and u.src[0].op is Ops.INDEX:
            buf = u.src[0].src[0]
            if buf.op is Ops.PARAM and buf not in written and not buf.arg.volatile \
                    and buf.arg.dtype in desc.mem_widths:
                out.append(u)
    return out


def _groups(cands: list[UOp], deps: dict[UOp, frozenset[UOp]]) -> list[_Group]:
    """Candidate groups (before the order and size checks) of cands (`_candidates`); deps:
    the range sets of (at least) those nodes."""
    memo: dict[UOp, frozenset[UOp] | None] = {}
    inner = {u for u in cands if u.op is _RANGE}
    for u in cands:
        if u.op is _RANGE:
            inner -= deps[u] - {u}
    groups: dict[tuple[UOp, UOp, UOp | None], _Group] = {}
    chains: dict[UOp, list[UOp]] = {}
    for u in cands:
        if u.op is not _LOAD:
            continue
        buf, idx = u.src[0].src
        rs = deps[u]
        if not rs:
            continue
        r = max(rs, key=lambda x: len(deps[x]))   # the innermost (nested in all the others)
        if r not in inner:
            continue
        chain = chains.get(r)
        if chain is None:                       # the loops around r, outermost first
            chain = chains[r] = _nest(deps[r] - {r}, deps)
        uses = _used_ranges(idx, memo)
        if uses is None or r not in uses or any(x not in deps[r] for x in rs):
            continue
        used = [x for x in chain if x in uses]
        outer = used[-1] if used else None
        mid = chain[chain.index(outer) + 1:] if outer is not None else chain
        if not mid or const_int(r.src[0]) is None:
            continue
        groups.setdefault((buf, r, outer), _Group(buf, r, outer, mid)).loads.append(u)
    return list(groups.values())


def _worth(g: _Group, stores: list[UOp], budget: int) -> bool:
    """The size, reuse and order checks of the module docstring (g.loads in lane order)."""
    trips = [const_int(x.src[0]) for x in g.mid]
    if any(t is None or t < 1 for t in trips):
        return False
    reuse = 1
    for t in trips:
        reuse *= t
    n, r_trip = len(g.loads), const_int(g.r.src[0])
    if reuse < MIN_REUSE or n < 2 or len(stores) < 2 or r_trip is None or r_trip < 1 \
            or n * r_trip * g.buf.arg.dtype.itemsize > budget:
        return False
    offs = [peel_offset(u.src[0].src[1]) for u in g.loads]
    # already rows: one base, and the lane order is consecutive places
    return not (all(o[0] is offs[0][0] for o in offs)
                and all(b[1] == a[1] + 1 for a, b in zip(offs, offs[1:])))


def _blocks(offs: list[tuple[UOp | None, int]]) -> tuple[int, int]:
    """(m, step): the smallest m dividing n = len(offs) such that load k reads the place of
    load k mod m moved by (k div m)·step elements, all from one base (conv2d's slots 4·t + c
    read 288·c + t: m = 4, step 1); (n, 0) when there is none."""
    n = len(offs)
    if any(o[0] is not offs[0][0] for o in offs):
        return n, 0
    for m in range(1, n):
        if n % m:
            continue
        step = offs[m][1] - offs[0][1]
        if all(offs[k][1] == offs[k % m][1] + step * (k // m) for k in range(n)):
            return m, step
    return n, 0


def _stage(sink: UOp, order: list[UOp], deps: dict[UOp, frozenset[UOp]], g: _Group,
           slot: int, axis: int) -> UOp:
    """The graph with g's loads read from a staged copy (REG buffer `slot`, copy loop `axis`)."""
    r, n, a = g.r, len(g.loads), g.buf.arg
    dt = r.dtype
    trip = const_int(r.src[0])
    s = UOp(Ops.BUFFER, (), ParamArg(slot, a.dtype, n * trip, a.vmin_vmax, None,
                                     AddrSpace.REG))
    p = UOp(Ops.RANGE, (strong_int(trip, dt),) + ((g.outer,) if g.outer is not None else ()),
            (axis, AxisType.LOOP))
    # the index expressions with r := p (only the nodes that depend on r are rebuilt)
    sub: dict[UOp, UOp] = {r: p}
    cone = toposort([u.src[0].src[1] for u in g.loads], lambda x: r in deps[x])
    for u in cone:
        if u not in sub and r in deps[u]:
            sub[u] = u.replace(src=tuple([sub.get(x, x) for x in u.src]))
    base = UOp(Ops.MUL, (p, strong_int(n, dt)))
    m, step = _blocks([peel_offset(u.src[0].src[1]) for u in g.loads])
    q = None
    if m < n:
        # slots m·q + j hold what slot j holds, moved by q·step elements: a loop q over the
        # n/m blocks copies m elements an iteration (a short body to select and allocate)
        q = UOp(Ops.RANGE, (strong_int(n // m, dt), p), (axis + 1, AxisType.LOOP))
        base = UOp(Ops.ADD, (base, UOp(Ops.MUL, (q, strong_int(m, dt)))))
    stores = []
    for k, u in enumerate(g.loads[:m]):
        idx = sub[u.src[0].src[1]]
        if q is not None:
            idx = UOp(Ops.ADD, (idx, UOp(Ops.MUL, (q, strong_int(step, dt)))))
        v = UOp(Ops.LOAD, (UOp(Ops.INDEX, (g.buf, idx)),))
        at = UOp(Ops.ADD, (base, strong_int(k, dt))) if k else base
        stores.append(UOp(Ops.STORE, (UOp(Ops.INDEX, (s, at)), v)))
    fill = UOp(Ops.GROUP, tuple(stores))
    if q is not None:
        fill = UOp(Ops.END, (fill, q))
    fill = UOp(Ops.END, (fill, p))
    staged = UOp(Ops.AFTER, (s, fill))
    rbase = UOp(Ops.MUL, (r, strong_int(n, dt)))
    new: dict[UOp, UOp] = {}
    for k, u in enumerate(g.loads):
        at = UOp(Ops.ADD, (rbase, strong_int(k, dt))) if k else rbase
        new[u] = UOp(Ops.LOAD, (UOp(Ops.INDEX, (staged, at)),))
    # only nodes after the first load (order is topological) can read a replaced one
    first = min(order.index(u) for u in g.loads)
    for u in order[first:]:
        if u in new:
            continue
        srcs = tuple([new.get(x, x) for x in u.src])
        if srcs != u.src:
            new[u] = u.replace(src=srcs)
    return new.get(sink, sink)


def _first(order: list[UOp], deps: dict[UOp, frozenset[UOp]], desc: TargetDesc,
           budget: int, groups: list[_Group]) -> tuple[_Group | None, bool]:
    """The first group worth staging of groups (`_groups`; their loads then in lane order),
    or None; and whether any other candidate was found (else the staged graph need not be
    searched again)."""
    for g in groups:
        stores = [u for u in order if u.op is _STORE and g.r in deps[u]
                  and u.src[0].op is Ops.INDEX]
        per = _tree_loads(stores, set(g.loads), g.r, deps)
        lanes = _lane_order(per)
        g.loads = lanes + [u for u in g.loads if u not in set(lanes)]
        if _worth(g, [st for st, got in zip(stores, per) if got], budget):
            return g, len(groups) > 1
    return None, False


def stage_loads(sink: UOp, desc: TargetDesc) -> UOp:
    """Stage every group of the module docstring's kind, one at a time (a staged group's
    loads read a REG buffer, so it is no candidate again)."""
    if desc.stage_bytes <= 0:
        return sink
    order = toposort([sink])
    budget = desc.stage_bytes               # for all the kernel's staged copies together
    for _ in range(MAX_GROUPS):
        # the candidates' and RANGEs' range sets first, from their cones: where no group is
        # found (most kernels) the graph's other sets are not made (matmul at x86-64-v4: 4,500
        # of its 4,800 jammed nodes, ~1.5% of its compile, which slp then never asks)
        cands = _candidates(order, desc)
        groups = _groups(cands, range_sets(toposort(cands, None)))
        if not groups:
            break
        deps = range_sets(order)
        g, more = _first(order, deps, desc, budget, groups)
        if g is None:
            break
        budget -= len(g.loads) * const_int(g.r.src[0]) * g.buf.arg.dtype.itemsize
        slot = free_reg_slot(order)
        axis = 1 + max((u.arg[0] for u in order if u.op is Ops.RANGE
                        and isinstance(u.arg, tuple) and isinstance(u.arg[0], int)),
                       default=-1)
        sink = _stage(sink, order, deps, g, slot, axis)
        if not more:
            break
        order = toposort([sink])
    return sink
