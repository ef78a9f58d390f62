"""Which loads of an x86 kernel get a software prefetch ahead of them.

PREFETCHT0 m8 (SDM "PREFETCHh—Prefetch Data Into Caches", 0F 18 /1) asks for the line of
its address in every cache level and changes nothing else: it is a hint, it never faults (a
prefetch of an address that is not mapped is dropped), so one past the end of a buffer is
harmless. The hardware's own prefetchers follow a stream only within a 4 KiB page (SDM Vol. 3
and the optimization manual, "Hardware Prefetching for Second-Level Cache"), so each time one
of a loop's streams enters a new page its first lines come at full memory latency. A loop
that reads many rows at once (a row reduction: tinygrad's `x.sum(axis=1)` reads 4 rows a
step and kcc jams two such steps, 8 streams) crosses pages 8 times as often per stream as a
single linear read, and on the measured host reads 14–15 GB/s where one linear stream reads
17 GB/s; prefetching each stream 512 bytes ahead brings it to 15–15.5 (docs/performance.md,
"Row sums and software prefetch"). With 4 streams it measured no gain and with 1 a loss, so
the rule asks for at least PREFETCH_MIN_STREAMS.

Where a row is no longer than a page (layernorm's rows of 1024 float32), prefetching within
it gains nothing (C, caches evicted: 14.3 → 14.4 GB/s): every row is a page the prefetchers
meet cold. There the prefetch goes to the same place in the next iteration of the enclosing
loop (the next group of rows), which is a page ahead of where the loop reads: 14.3 → 15.6–16.2
GB/s (against one linear stream's 17.1–17.3); for rows of 16 KiB that target loses to 512
bytes ahead (15.6–16.1 against 16.4–16.5), so each row length gets its own.

The selector emits `prefetcht0 [address + ahead]` beside every LOAD that `prefetched_loads`
picks, ahead PREFETCH_AHEAD or the enclosing loop's step of the load's address:

- the LOAD is ungated and reads a GLOBAL kernel argument (a PARAM buffer) in an innermost loop
  that stores to no GLOBAL buffer (a reduction's loop: what it writes goes to registers);
- its index is an affine sum whose coefficient of that loop's counter makes consecutive
  iterations read forward by at most a cache line (a stream, not a gather or a stride that
  skips lines);
- the loop holds at least PREFETCH_MIN_STREAMS streams of such loads (loads of one buffer
  whose addresses differ by a constant are one stream while each is within a line of the one
  before: a row's lanes read as scalar loads, passes/lane_loads.py); only each stream's first
  load is prefetched;
- the loop's ALU work is at most MAX_LANE_OPS_PER_BYTE lane operations per byte its streams
  read an iteration: a row reduction does 1/4 (one add a float), tinygrad's matmul tile
  (passes/pack.py's 8-row x 32-column tile: 80 vector FP operations per 128 bytes of a with
  contraction, 128 without) 10–16, so its loop is bound by its arithmetic, its a rows come
  from L2/L3 and the prefetches only take load slots (at 1024³ 2–4 points of OpenBLAS's speed
  lower with them: docs/performance.md, "An 8 × 32 tile");
- `auto` (the default) also asks for the kernel's buffers to total at least PREFETCH_MIN_BYTES
  (4 MiB, a fixed stand-in for a core's L2: what fits there is read from caches the hardware
  prefetchers keep ahead of anyway, and the prefetch would only take load slots), `always`
  prefetches whatever the size, `never` not at all.
"""

from __future__ import annotations

from kcc.ir import AddrSpace, UOp
from kcc.ir.ops import ALU
from kcc.ir.ops import Ops
from kcc.ir.affine import affine
from kcc.ir.consts import const_int
from kcc.ir.uop import base_buffer
from kcc.isel.x86.analysis import footprint

MODES = ("auto", "never", "always")
# how far ahead of each load its stream is prefetched (bytes): 8 lines
PREFETCH_AHEAD = 512
# the fewest streams in one loop that prefetching pays for (see the module docstring)
PREFETCH_MIN_STREAMS = 8
# the footprint (bytes of every buffer argument) from which `auto` prefetches
PREFETCH_MIN_BYTES = 4 << 20
# the longest step a load may take per iteration and still count as a stream
LINE_BYTES = 64
# a loop's rows no longer than this are prefetched in the next outer iteration (a page)
SHORT_ROW_BYTES = 4096
# a loop doing more ALU lane operations than this per byte its streams read is not memory-bound
MAX_LANE_OPS_PER_BYTE = 4


def _global(place: UOp) -> bool:
    buf = base_buffer(place.src[0])
    return buf.op is Ops.PARAM and buf.arg.addrspace is AddrSpace.GLOBAL


class _Loop:
    """What one open loop of the schedule holds so far."""

    __slots__ = ("rng", "loads", "stores_global", "inner", "lane_ops")

    def __init__(self, rng: UOp) -> None:
        self.rng = rng
        self.loads: list[UOp] = []
        self.stores_global = False
        self.inner = False
        self.lane_ops = 0          # ALU operations, each counted once per lane


def prefetched_loads(lin: list[UOp], mode: str) -> dict[UOp, int]:
    """The LOADs of the schedule lin to prefetch ahead of, each with the bytes ahead (the
    rules are the module's docstring)."""
    if mode not in MODES:
        raise ValueError(f"prefetch is {', '.join(MODES)}, not {mode!r}")
    if mode == "never":
        return {}
    if mode == "auto":
        size = footprint(lin)
        if size is None or size < PREFETCH_MIN_BYTES:
            return {}
    out: dict[UOp, int] = {}
    open_loops: list[_Loop] = []
    for u in lin:
        if u.op is Ops.RANGE:
            if open_loops:
                open_loops[-1].inner = True
            open_loops.append(_Loop(u))
        elif u.op is Ops.END:
            if open_loops:
                loop = open_loops.pop()
                if not loop.inner and not loop.stores_global:
                    out.update(_streams(loop, open_loops[-1].rng if open_loops else None))
        elif not open_loops:
            continue
        elif u.op is Ops.STORE and u.src[0].op in (Ops.INDEX, Ops.SHRINK):
            if _global(u.src[0]):
                open_loops[-1].stores_global = True
        elif u.op is Ops.LOAD and len(u.src) == 1 and u.src[0].op in (Ops.INDEX, Ops.SHRINK):
            if _global(u.src[0]):
                open_loops[-1].loads.append(u)
        elif u.op in ALU:
            open_loops[-1].lane_ops += _lanes(u)
    return out


def _lanes(u: UOp) -> int:
    """The elements of u's value (1 for a scalar)."""
    n = 1
    for d in u.shape:
        n *= d
    return n


def _streams(loop: _Loop, outer: UOp | None) -> dict[UOp, int]:
    """The loads of an innermost read-only loop that stream forward, if there are enough, each
    with its distance ahead (outer: the enclosing loop's counter, for rows of a page or less)."""
    found: dict[UOp, int] = {}
    # (buffer, terms but the counter) → (byte offset, load) of the loads at those places
    rows: dict[tuple, list[tuple[int, UOp]]] = {}
    memo: dict = {}
    trips = const_int(loop.rng.src[0])
    for u in loop.loads:
        place = u.src[0]
        got = affine(place.src[1], memo=memo)
        if got is None:
            continue
        terms, const = got
        step = terms.get(loop.rng, 0) * place.dtype.itemsize
        if not 0 < step <= LINE_BYTES:
            continue
        others = frozenset((t, c) for t, c in terms.items() if t is not loop.rng)
        rows.setdefault((base_buffer(place.src[0]), others), []).append(
            (const * place.dtype.itemsize, u))
        found[u] = PREFETCH_AHEAD
        if trips is not None and outer is not None and trips * step <= SHORT_ROW_BYTES:
            next_rows = terms.get(outer, 0) * place.dtype.itemsize
            if next_rows > 0:
                found[u] = next_rows
    # loads within a line of the one before are one stream (a row's 4 scalar lanes,
    # passes/lane_loads.py): one prefetch, for the stream's first load
    picked: dict[UOp, int] = {}
    for group in rows.values():
        group.sort(key=lambda x: x[0])
        last = None
        for off, u in group:
            if last is None or off - last > LINE_BYTES:
                picked[u] = found[u]
            last = off
    if len(picked) < PREFETCH_MIN_STREAMS:
        return {}
    read = sum(_lanes(u) * u.dtype.itemsize for u in found)
    return {} if loop.lane_ops > MAX_LANE_OPS_PER_BYTE * read else picked
