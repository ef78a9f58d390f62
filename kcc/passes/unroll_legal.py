"""Unroll-and-jam's legality and cost questions about one loop (passes/unroll.py `_analyze`
asks them; pack.py and unroll_columns.py too): which REG buffers each copy may have as its own
(`_privatizable`), which nodes differ between copies (`_varies`), and how many memory streams
the jammed inner loops read (`_streams`). The module docstring of unroll.py says why each
matters."""

from __future__ import annotations

from kcc.ir.affine import affine
from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, base_buffer

TYPE_CHECKING = False   # typing is imported by type checkers only
if TYPE_CHECKING:
    from kcc.passes.unroll import _Loops

# Two loads of one buffer whose addresses differ by a constant under this many bytes read one
# stream: the same 64-byte line or the next, the 128-byte-aligned pair the L2 prefetchers
# fetch together (Intel optimization manual, "Data Prefetching": the spatial prefetcher;
# AMD's L2 stream prefetcher fetches adjacent lines as well)
STREAM_WINDOW = 128
_PLACES = (Ops.INDEX, Ops.SHRINK)
_ORDERING = (Ops.RANGE, Ops.AFTER)     # ops whose srcs past the first only order


def _span(place: UOp) -> tuple[UOp, int] | None:
    """(index, element count) of an INDEX/SHRINK place; None when the count is not constant."""
    if place.op is Ops.INDEX:
        return place.src[1], 1
    n = const_int(place.src[2])
    return (place.src[1], n) if n is not None else None


def _privatizable(loops: _Loops, r: UOp, inner: frozenset[UOp], region: list[UOp],
                  region_set: set[UOp], bufs: list[UOp], cone: list[UOp]) -> bool:
    """Whether every REG buffer of bufs carries no value from one iteration of r to the next
    (see the module docstring) and is used only inside the loop (cone: the loop's,
    `_Loops.cone`). All buffers in one walk of the cone (each node's set holds (buffer,
    element) pairs): asked one buffer at a time, the walk ran once per buffer, 8% of unroll
    at x86-64-v4 on tinygrad's matmul (four accumulators)."""
    if not bufs:
        return True
    for buf in bufs:
        # a node outside the region that reads buf, or a place of an AFTER of it
        # (`_Loops.readers` lists them for BUFFERs, what both callers ask about)
        outside = loops.readers().get(buf, ()) if buf.op is Ops.BUFFER else [
            n for n in loops.order if buf in n.src
            or n.op in _PLACES and n.src[0].op is Ops.AFTER and base_buffer(n.src[0]) is buf]
        for n in outside:
            if n not in region_set:
                return False
    asked = set(bufs)
    dep = loops.dep
    covered: dict[UOp, frozenset[tuple[UOp, int]]] = {}
    # the (buffer, element) pairs that an ungated once-per-iteration store in each node's
    # cone wrote (asked of the region's LOADs only: the loop's cone holds every node under
    # them)
    empty: frozenset[tuple[UOp, int]] = frozenset()
    keys = covered.keys()
    for n in cone:
        # the union of the srcs' sets, sharing one when the others add nothing (most nodes);
        # a node none of whose srcs has a set (most of the cone) is told apart in one call
        s = empty
        if not keys.isdisjoint(n.src):
            for x in n.src:
                c = covered.get(x)
                if c and c is not s and not c <= s:
                    s = c if s <= c else s | c
        if n.op is Ops.STORE and len(n.src) == 2:
            buf = base_buffer(n.src[0].src[0])
            if buf in asked and r in dep[n] and not (dep[n] & inner):
                sp = _span(n.src[0])
                v = const_int(sp[0]) if sp is not None else None
                if v is not None:
                    s = s | frozenset([(buf, e) for e in range(v, v + sp[1])])
        if s:
            covered[n] = s
    for n in region:
        if n.op is Ops.LOAD:
            buf = base_buffer(n.src[0].src[0])
            if buf not in asked:
                continue
            sp = _span(n.src[0])
            v = const_int(sp[0]) if sp is not None else None
            if v is None or not {(buf, e) for e in range(v, v + sp[1])} \
                    <= covered.get(n, empty):
                return False
    return True


def _varies(cone: list[UOp], r: UOp, private: set[UOp]) -> set[UOp]:
    """The nodes whose copies differ: those that read r or a privatized buffer through value
    srcs. A RANGE's order srcs and an AFTER's deps only order (the copies share the new loop's
    counter there), so a node reaching r only through them is one node for every copy."""
    out: set[UOp] = set()
    add, disjoint = out.add, out.isdisjoint
    for n in cone:
        srcs = n.src[:1] if n.op in _ORDERING else n.src
        if n is r or n in private or not disjoint(srcs):
            add(n)
    return out


def _streams(region: list[UOp], varies: set[UOp], r: UOp, inner: frozenset[UOp],
             dep: dict[UOp, frozenset[UOp]], f: int) -> int:
    """The memory streams the fused inner loops read with f copies: global loads whose address
    advances with an inner loop, one stream per group of loads of one buffer whose addresses
    (copy k's counter f*i2 + k) differ by constants under STREAM_WINDOW bytes; a load that is
    not copied (it does not read r) counts once. Loop nests run one after the other: the
    largest nest's count."""
    memo: dict = {}             # each index as sum(coef*leaf) + o (kcc/ir/affine.py)
    nests: dict[UOp, dict[tuple, list[int]]] = {}
    for n in region:
        if n.op is not Ops.LOAD:
            continue
        buf = base_buffer(n.src[0].src[0])
        idx = n.src[0].src[1]
        loops = dep[idx] & inner
        if buf.op is not Ops.PARAM or not loops:
            continue
        top = next((x for x in loops if dep[x] & inner == {x}), r)
        # (without a leaf test: never None); MULACC(x, k, y) read as k*x + y: a counter
        # under tinygrad's MULACC index is a term, so copies whose loads are c*k elements
        # apart count as one stream, not each a stream of its own (the copy's MULACC leaf
        # differs between copies)
        terms, o = affine(idx, memo=memo, mulacc=True)
        terms = dict(terms)
        c = terms.pop(r, 0)
        # a leaf that differs between copies other than through r (a privatized buffer's
        # value): the copies' addresses are not a constant apart
        own = n in varies and any(t in varies for t in terms)
        key: tuple = (buf, frozenset(terms.items()))
        size = buf.arg.dtype.itemsize or 1
        per = nests.setdefault(top, {})
        for k in range(f if n in varies else 1):
            per.setdefault(key + ((k,) if own else ()), []).append((o + c * k) * size)
    best = 0
    for per in nests.values():
        count = 0
        for offsets in per.values():
            start = None
            for x in sorted(offsets):
                if start is None or x - start >= STREAM_WINDOW:
                    count, start = count + 1, x
        best = max(best, count)
    return best
