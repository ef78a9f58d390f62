"""Interleave a long loop body's independent dependency chains (a latency-aware list scheduler
for linearize's blocks; issue 24 item 2).

linearize takes a block's ready nodes in a depth-first toposort order, which emits one chain
(a whole exp2 or log2 polynomial, a division and what follows it) before the next starts.
An out-of-order core renames and issues in program order: when the body is longer than its
scheduler's window (Intel 64 and IA-32 Architectures Optimization Reference Manual, §2.1 and
§3.5 "Optimizing the execution core": the reservation station holds ~100-200 micro-ops, the
reorder buffer ~350-500), the front end stalls behind the first chain's latencies while the
next chain's independent work has not entered the window. Here a cycle model (one operation
issues a cycle, each result ready after its latency) takes, among the nodes whose
srcs are ready, the one with the longest latency path to the block's end (critical path
first, the classic list scheduler clang's machine scheduler also starts from), so that
independent chains run side by side and their latencies overlap.

The schedule only reorders (every node after its srcs): results are bit for bit the same. It
is deterministic (ties by the default order's position) and n log n in the block's size (one
pass over the default order each for the heights, the register peaks and the recurrences,
one heap walk for the schedule). It is aware of register pressure: while the estimated live
values of one register kind (vector, opmask, GPR) reach its budget (a quarter of the vector
registers; what values from outside the block leave of the opmasks and GPRs), the default
order, which finishes a chain before starting another, picks instead; a block whose default
order already fills a register file, or keeps more vectors live than the budget, keeps it.
STOREs keep their default order relative to each other and to LOADs (a LOAD never moves
past a STORE): the graph need not order accesses to one buffer by an edge. It runs only on a
loop body with no inner loop (MIN_ITEMS nodes or more) whose critical path is long
(LONG_PATH), with work beside it (PARALLEL), mostly vector
work: small bodies and scalar integer ones keep their code.
"""

from __future__ import annotations

import _heapq as heapq

from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.passes.target import SchedModel

NONE, VEC, MASK, GPR = 0, 1, 2, 3
_CONSTISH = (Ops.STACK, Ops.CAST, Ops.BITCAST)
MIN_ITEMS = 24      # a body of fewer nodes is left alone (cheap to skip)
SLACK = 2           # registers kept for an instruction's temporaries (a blend's mask copy)
MIN_BUDGET = 3      # fewer live values than this: no room to run two chains side by side
LONG_PATH = 60      # a critical path shorter than this fits the window whatever the order
PARALLEL = 1.6      # total latency / critical path: below this there is little to overlap


def reg_kind(u: UOp, opmasks: bool) -> int:
    """The register file u's value likely takes: VEC (a float or a vector), MASK (a vector
    of bools where the target has opmasks, else VEC), GPR (a scalar integer, bool or
    address), or NONE (no value, or a constant an instruction reads as an immediate)."""
    dt = u.dtype
    if dt is None or u.op is Ops.CONST:
        return NONE
    if u.shape and dt.is_bool and opmasks:
        return MASK
    if dt.is_float or u.shape:
        return VEC
    return GPR


def _constant(u: UOp) -> bool:
    """Whether u is a constant or a vector of constants (casts of constants included): a
    constant the block reads may stay in memory (`vaddps x, x, [rip + c]`)."""
    if u.op in _CONSTISH:
        return all(x.op is Ops.CONST or x.op in _CONSTISH and
                   all(y.op is Ops.CONST for y in x.src) for x in u.src)
    return u.op is Ops.CONST


def _peaks(order: list[UOp], srcs: dict[UOp, list[UOp]], uses: dict[UOp, int],
           kind: dict[UOp, int]) -> list[int]:
    """The most values of each register kind live at once in order (uses: each value's
    in-block readers, 0 for no value; consumed)."""
    live, peak = [0, 0, 0, 0], [0, 0, 0, 0]
    for it in order:
        for s in srcs[it]:
            if uses[s]:
                uses[s] -= 1
                live[kind[s]] -= not uses[s]
        if uses[it]:
            k = kind[it]
            live[k] += 1
            peak[k] = max(peak[k], live[k])
    return peak


def _register_access(u: UOp) -> bool:
    """Whether u is a LOAD or STORE of a REG buffer (a loop-carried accumulator)."""
    if u.op not in (Ops.LOAD, Ops.STORE) or not u.src or u.src[0].op is not Ops.INDEX:
        return False
    b = base_buffer(u.src[0].src[0])
    return getattr(b.arg, "addrspace", None) is AddrSpace.REG


def _recurrences(default: list[UOp], succs: dict[UOp, list[UOp]]) -> set[UOp]:
    """The nodes on a path from an accumulator's LOAD to its STORE (one pass each way)."""
    after_load: set[UOp] = set()
    for it in default:
        if it in after_load or it.op is Ops.LOAD and _register_access(it):
            after_load.add(it)
            after_load.update(succs[it])
    rec: set[UOp] = set()
    for it in reversed(default):
        if it in after_load and (it.op is Ops.STORE and _register_access(it)
                                 or any(u in rec for u in succs[it])):
            rec.add(it)
    return rec


def _memory_order(default: list[UOp]) -> list[tuple[UOp, UOp]]:
    """Extra edges that keep STOREs in their default order, each LOAD after the STORE before
    it and before the STORE after it."""
    edges: list[tuple[UOp, UOp]] = []
    last: UOp | None = None
    loads: list[UOp] = []
    for it in default:
        if it.op is Ops.LOAD:
            if last is not None:
                edges.append((last, it))
            loads.append(it)
        elif it.op is Ops.STORE:
            edges.extend((ld, it) for ld in loads)
            if last is not None:
                edges.append((last, it))
            last, loads = it, []
    return edges


def interleave(default: list[UOp], succs: dict[UOp, list[UOp]], pos: dict[UOp, int],
               model: SchedModel) -> list[UOp] | None:
    """default (a block's items in linearize's topological order, succs their in-block
    users) reordered critical path first by the target's model, or None where the block does
    not qualify (short critical path, little parallel work) or nothing moves."""
    latency, regs = model.latency, model.vector_regs
    extra = _memory_order(default)
    more: dict[UOp, list[UOp]] = {}
    for a, b in extra:
        more.setdefault(a, []).append(b)
    # heights: the longest latency path from a node to the block's end, one reverse pass
    height: dict[UOp, int] = {}
    total = 0
    for it in reversed(default):
        lat = latency(it)
        total += lat
        h = 0
        for u in succs[it]:
            h = max(h, height[u])
        for u in more.get(it, ()):
            h = max(h, height[u])
        height[it] = h + lat
    crit = max(height.values(), default=0)
    if crit < LONG_PATH or total < PARALLEL * crit:
        return None
    # values from outside the block that hold a register across it (loop-carried sums,
    # hoisted invariants, buffer addresses) leave fewer registers for the block's own; a
    # constant is not counted. The block may keep a quarter of the vector registers live
    # (and what the outside values leave of the GPRs and opmasks): interleaving needs only
    # a few chains side by side, and spilling would cost more than it gains.
    # (a vector of bools is an opmask where the target has them: x86-64-v4; else a vector)
    opmasks = model.opmasks > 0
    held = [0, 0, 0, 0]
    for x in {x for it in default for x in it.src if x not in height and not _constant(x)}:
        held[reg_kind(x, opmasks)] += 1
    npred: dict[UOp, int] = dict.fromkeys(default, 0)
    srcs: dict[UOp, list[UOp]] = {it: [] for it in default}
    for it in default:
        for u in succs[it]:
            npred[u] += 1
            srcs[u].append(it)
        for u in more.get(it, ()):
            npred[u] += 1
    kind = {it: reg_kind(it, opmasks) for it in default}
    uses = {it: len(succs[it]) if kind[it] else 0 for it in default}
    # the default order's peak of live values of each kind: a block whose values already
    # fill a register file keeps its order (f64_sin E_64_4 spills as it is; conv_depthwise's
    # opmasks); otherwise the block may keep live a quarter of the vector registers and what
    # the outside values leave of the GPRs and opmasks
    peak = _peaks(default, srcs, dict(uses), kind)
    # the latencies worth hiding are the vector units' (4-cycle FMA-port operations, the
    # divider): a body of mostly scalar integer work (idiv_i64's 64-bit divisions) keeps its
    # order
    if 2 * sum(latency(it) for it in default if kind[it] == VEC) < total:
        return None
    cap = [1 << 30, regs, model.opmasks if opmasks else 1 << 30, model.gprs]
    if any(held[k] + peak[k] + SLACK > cap[k] for k in (VEC, MASK, GPR)):
        return None
    budget = [c - h - SLACK for c, h in zip(cap, held)]
    budget[VEC] = min(budget[VEC], regs // 4)
    # a default order that already keeps more vector values live than the budget runs wide
    # work (a matmul's accumulators, softmax_rows' four rows of 16 lanes): interleaving it
    # only under pressure mixed the two orders and measured no faster (softmax_rows
    # r_64_128_4, 2nd kernel: 2.7% slower)
    if budget[VEC] < max(MIN_BUDGET, peak[VEC]):
        return None
    last = default[-1]          # the block's END stays last
    rec = _recurrences(default, succs)
    # a cycle model (one operation issues a cycle: 512-bit vector work has two ports, 0 and
    # 5, which its shuffles, blends and compares share; one a cycle interleaved tanh_log's,
    # float64's and gelu's chains further than two did, measured): a ready node waits in
    # `wait` until its srcs' latencies have passed, then joins `avail`, taken critical path
    # first; under register pressure `dfs`, the default order, picks among all ready nodes
    wait: list[tuple[int, int, int, int, UOp]] = []
    avail: list[tuple[int, int, int, UOp]] = []
    dfs: list[tuple[int, int, UOp]] = []
    ready_at: dict[UOp, int] = dict.fromkeys(default, 0)

    def push(it: UOp) -> None:
        # a STORE as soon as it is ready: it ends a chain and frees its value;
        # and an accumulator's update: its chain runs across the iterations (a recurrence
        # bounds the loop's speed whatever the body's order)
        cls = 2 if it is last else 0 if it.op is Ops.STORE or it in rec else 1
        heapq.heappush(wait, (ready_at[it], cls, -height[it], pos[it], it))
        heapq.heappush(dfs, (cls, pos[it], it))

    for it in default:
        if not npred[it]:
            push(it)
    done: set[UOp] = set()
    out: list[UOp] = []
    live = [0, 0, 0, 0]
    clock = 0
    while len(out) < len(default):
        if all(n < b for n, b in zip(live, budget)):
            while True:
                while avail and avail[0][3] in done:
                    heapq.heappop(avail)
                if not wait or wait[0][0] > clock and avail:
                    break
                w = heapq.heappop(wait)
                if w[4] not in done:
                    clock = max(clock, w[0])    # nothing available: wait for the first
                    heapq.heappush(avail, w[1:])
            it = heapq.heappop(avail)[3]
        else:
            while dfs[0][2] in done:
                heapq.heappop(dfs)
            it = heapq.heappop(dfs)[2]
        done.add(it)
        out.append(it)
        clock = max(clock, ready_at[it]) + 1
        if uses[it]:
            live[kind[it]] += 1
        for s in srcs[it]:
            if uses[s]:
                uses[s] -= 1
                live[kind[s]] -= not uses[s]
        fin = clock - 1 + latency(it)
        for u in succs[it]:
            ready_at[u] = max(ready_at[u], fin)
            npred[u] -= 1
            if not npred[u]:
                push(u)
        for u in more.get(it, ()):
            ready_at[u] = max(ready_at[u], clock)
            npred[u] -= 1
            if not npred[u]:
                push(u)
    return None if out == default else out
