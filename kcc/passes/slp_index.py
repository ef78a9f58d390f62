"""Lane indexes for kcc/passes/slp.py: an element index as a base node plus a constant, so
that loads of consecutive elements (the lanes of one vector) are recognized by equal bases.

The constant may sit under MULACC addends (tinygrad's column indexes jammed by
passes/unroll.py: `j*C + (i + k)`, and conv1d's input index under its batch term
`b*112 + (t*14 + (x + k))`, or a constant addend `i*8 + k`); the base is then the MULACC
chain rebuilt without it, the node that index would be (hash-consed: equal for every lane).
Iterative: an index may be a long chain.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, plus_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, base_buffer

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.passes.slp import _Packer


def lane_offset(idx: UOp, scaled: bool = False) -> tuple[UOp | None, int]:
    """idx as (base, k) with idx = base + k (base None for a constant index); a MULACC whose
    addend adds a constant, a*c + (b + k) (the column index j*C + i of tinygrad's axis-0
    reductions jammed by passes/unroll.py), as base a*c + b: the node that index would be,
    hash-consed, so equal for every copy. With ``scaled`` (stores), also a*c + k, a*c and
    a << s as base MULACC(a, c, 0) (`_scaled`)."""
    c = const_int(idx)
    if c is not None:
        return None, c
    k0 = 0
    if idx.op is Ops.ADD:
        k = const_int(idx.src[1])      # (not a recursion: an index may be a long chain)
        if k is not None:
            idx, k0 = idx.src[0], k
    if scaled and idx.op in (Ops.SHL, Ops.MUL):
        base0 = _scaled(idx)
        if base0 is not None:
            return base0, k0
    # nested addends, a*c + (b*d + (e + k)) (conv1d's jammed input index under its batch
    # term): the constant of the innermost one, the MULACCs above it rebuilt without it
    chain: list[UOp] = []
    x = idx
    while x.op is Ops.MULACC and len(chain) < 4:
        chain.append(x)
        x = x.src[2]
    k = const_int(x.src[1]) if chain and x.op is Ops.ADD else None
    base = x.src[0] if k is not None else None
    if chain and k is None:
        # the innermost addend a constant, a*c + k: interpolate's cells unrolled (i*8 + 0 …
        # i*8 + 7), tinygrad's lane j index `4*i + j` (lane 0 `i << 2`) and an upcast
        # store's `alu0 + 1` folded into one MULACC. Based as lane 0 writes it: a << log2 c
        # or a*c (`_product`); for stores (``scaled``) at MULACC(a, c, 0), the base
        # `_scaled` gives lane 0's a*c or a << s (cast_half2i's stores)
        k = const_int(x)
        if k is not None:
            base = _zero_like(x) if scaled else _product(chain.pop())
    if base is None or k is None:
        return idx, k0
    for m in reversed(chain):
        base = m.replace(src=m.src[:2] + (base,))
    return base, k0 + k


def _zero_like(c: UOp) -> UOp:
    """The integer constant 0 written like the constant c (a weak CONST or CAST(CONST))."""
    return c.replace(src=(UOp.const(0),)) if c.op is Ops.CAST else UOp.const(0)


def _scaled(idx: UOp) -> UOp | None:
    """a*c or a << s with a constant c (2^s) as the node MULACC(a, c, 0): the base a
    MULACC(a, c, k) of the same a and c has, so lane 0 joins the lanes after it."""
    a, b = idx.src
    c = const_int(b)
    if c is None or b.op is not Ops.CAST or a.dtype != idx.dtype:
        return None
    if idx.op is Ops.SHL:
        if not 0 <= c < 31:
            return None
        c = 1 << c
    scale = UOp(Ops.CAST, (UOp.const(c),), b.arg)
    return UOp(Ops.MULACC, (a, scale, _zero_like(b)))


def element_run(t: tuple[UOp, ...]) -> tuple[UOp, UOp] | None:
    """(buffer, start of lane 0) when the scalars t are consecutive elements of one buffer
    node, each read by an ungated scalar LOAD or as a lane of an ungated vector LOAD
    (tinygrad's repeat/roll: x[k], a float2 at x[k+1], x[k+3]); else None."""
    buf: UOp | None = None
    first: UOp | None = None
    want: tuple[UOp | None, int] = (None, 0)
    for j, s in enumerate(t):
        if s.op is Ops.LOAD and len(s.src) == 1 and s.src[0].op is Ops.INDEX and s.shape == ():
            b, start, lane = s.src[0].src[0], s.src[0].src[1], 0
        elif s.op is Ops.INDEX and s.kind == "value" and s.src[0].op is Ops.LOAD \
                and len(s.src[0].src) == 1 and s.src[0].src[0].op is Ops.SHRINK \
                and (lane := const_int(s.src[1])) is not None:
            b, start = s.src[0].src[0].src[0], s.src[0].src[0].src[1]
        else:
            return None
        base, k = lane_offset(start)
        if j == 0:
            buf, want, first = b, (base, k + lane), plus_int(start, lane)
        elif b is not buf or base is not want[0] or k + lane != want[1] + j:
            return None
    if buf is None or first is None or buf.kind != "buffer":
        return None
    return buf, first


def consecutive_runs(accesses: list[UOp], scaled: bool = False) -> list[tuple[UOp, ...]]:
    """The accesses (LOADs or STOREs of an INDEX place) grouped into runs of consecutive
    elements of one buffer node by lane_offset (a run of one included), each in element order;
    the first access of an element stands for it."""
    by_base: dict[tuple[UOp, UOp | None], dict[int, UOp]] = {}
    for u in accesses:
        off = lane_offset(u.src[0].src[1], scaled)
        by_base.setdefault((u.src[0].src[0], off[0]), {}).setdefault(off[1], u)
    runs = []
    for offs in by_base.values():
        for k in sorted(offs):
            if k - 1 in offs:
                continue
            run = []
            while k in offs:
                run.append(offs[k])
                k += 1
            runs.append(tuple(run))
    return runs


def _product(m: UOp) -> UOp:
    """MULACC(a, c, k)'s product a*c as a node: `a << log2(c)` for a power of two c (how
    tinygrad writes a lane-0 index `alu0 = i << 2`), else MUL(a, c)."""
    a, c = m.src[0], m.src[1]
    n = const_int(c)
    if n is not None and n > 0 and n & (n - 1) == 0:
        sh = n.bit_length() - 1
        if sh == 0:
            return a
        s = UOp(Ops.CAST, (UOp.const(sh),), c.arg) if c.op is Ops.CAST else UOp.const(sh)
        return UOp(Ops.SHL, (a, s))
    return UOp(Ops.MUL, (a, c))


def permuted_run(t: tuple[UOp, ...], holes: bool = False
                 ) -> tuple[UOp, UOp, int, tuple[int, ...]] | None:
    """(buffer, start, m, lanes) when the scalars t are ungated scalar LOADs of one buffer
    node that read exactly the m consecutive elements start … start+m-1, each at least once,
    in any order: lane j of t is element start + lanes[j] (sort's and topk's swaps unrolled,
    x[0], x[3], x[1], x[2]: one load of the run and one shuffle); else None. With ``holes``,
    elements of the span may go unread where every index is a constant (the caller checks
    the span against the buffer's size)."""
    buf: UOp | None = None
    base: UOp | None = None
    ks: list[int] = []
    first: dict[int, UOp] = {}
    for s in t:
        if s.op is not Ops.LOAD or len(s.src) != 1 or s.src[0].op is not Ops.INDEX \
                or s.shape != ():
            return None
        b, idx = s.src[0].src
        off_base, k = lane_offset(idx)
        if buf is None:
            buf, base = b, off_base
        elif b is not buf or off_base is not base:
            return None
        ks.append(k)
        first.setdefault(k, idx)
    if buf is None or buf.kind != "buffer":
        return None
    lo = min(ks)
    m = max(ks) - lo + 1
    if len(first) != m and not (holes and base is None):
        return None
    return buf, first[lo], m, tuple(k - lo for k in ks)


def permuted_load(p: _Packer, t: tuple[UOp, ...]) -> UOp | None:
    """slp's packer p (kcc/passes/slp.py `_Packer`): ungated scalar LOADs t that read a run
    of consecutive elements in another order (`permuted_run`) → lanes of one vector LOAD of
    the run (a shuffle), when the target loads the run at once; the loads become its lanes.
    Where p packs blends (slp_blend.py), constant places may leave elements of the run
    unread (a blend's operand x[0], x[1], x[0], x[1], x[4], …): the narrowest legal load
    over them, inside the buffer."""
    run = permuted_run(t, holes=p.blends)
    if run is None:
        return None
    buf, start, m, ks = run
    b = base_buffer(buf)
    if len(set(ks)) != m:
        lo = const_int(start)
        m = min((w for w in p.ctx.mem_widths.get(t[0].dtype, ()) if w >= m), default=0)
        if not m or lo is None or lo < 0 or not isinstance(b.arg.size, int) \
                or lo + m > b.arg.size:
            return None
    elif p.blends and not p.ctx.mem_legal(m, t[0].dtype):
        got = _read_window(p, t[0], buf, start, m)
        if got is None:
            return None
        start, m, shift = got
        ks = tuple(k + shift for k in ks)
    if not p.ctx.mem_legal(m, t[0].dtype) or b in p.scalar_reg or b in p.reg_width:
        return None
    vec = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, start, UOp.const(m))),))
    for s, k in zip(t, ks):
        p.lane_of.setdefault(s, (vec, k))
    return UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (vec, UOp.const(k))) for k in ks))


def _read_window(p: _Packer, lane0: UOp, buf: UOp, start: UOp, m: int
                 ) -> tuple[UOp, int, int] | None:
    """(start, width, lane shift) of the narrowest legal load of w >= m elements holding
    start … start+m-1 whose every element the kernel reads anyway with ungated scalar LOADs
    of buf (`read_elements`), the lowest such window, or None. A blend's operand reads two
    elements of a run of four (sort_rows E_2048_2_2 unrolled: x[4i], x[4i+1] twice, no
    2-lane float32 vectors): one load of the four, which the blend's other operand (x[4i+2],
    x[4i+3]) shuffles too, from the same start node (lane_offset's base), instead of
    scalars and inserts; no element past what the loads of lane0's loop nest read (they
    run whenever lane0's does), so never past the buffer."""
    if p.reads is None:
        if p.reads_of is None:
            return None
        p.reads = read_elements(p.reads_of)
    reads, nests = p.reads
    base, k = lane_offset(start)
    got = reads.get((buf, base, nests.get(lane0)), set())
    for w in sorted(p.ctx.mem_widths.get(lane0.dtype, ())):
        for r in range(k + m - w, k + 1):
            if w >= m and all(r + j in got for j in range(w)):
                at = strong_int(r, start.dtype) if base is None else plus_int(base, r)
                return at, w, k - r
    return None


def read_elements(order: list[UOp]) -> tuple[dict[tuple, set[int]], dict[UOp, frozenset]]:
    """((buffer, lane_offset base, loop nest) → the offsets k the kernel reads there with
    ungated scalar LOADs at base + k, each scalar LOAD's loop nest: the RANGEs it depends
    on)."""
    from kcc.passes.linearize import range_sets
    dep = range_sets(order)
    out: dict[tuple, set[int]] = {}
    nests: dict[UOp, frozenset] = {}
    for u in order:
        if u.op is Ops.LOAD and len(u.src) == 1 and u.src[0].op is Ops.INDEX \
                and u.shape == () and u.src[0].src[0].kind == "buffer":
            base, k = lane_offset(u.src[0].src[1])
            nests[u] = dep[u]
            out.setdefault((u.src[0].src[0], base, dep[u]), set()).add(k)
    return out, nests
