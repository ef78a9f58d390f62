"""Column loops jammed wider than passes/unroll.py's FACTORS (the part of unroll-and-jam that
picks a wide factor for a column loop; unroll.py `_analyze` asks it, `_jam` lays out the
copies' accumulators): a loop over output columns of a reduction over another axis, whose
copies' one-element accumulators become one vector (passes/slp_reg.py)."""

from __future__ import annotations

from kcc.ir.affine import affine
from kcc.ir.ops import ALU, COMPARE, Ops
from kcc.ir.uop import UOp, base_buffer
from kcc.passes.target import TargetDesc
from kcc.passes.unroll import FACTORS, _varies

TYPE_CHECKING = False   # typing is imported by type checkers only (its import: ~2 ms of the
if TYPE_CHECKING:       # first compile of a reduction, which imports this module)
    from kcc.passes.unroll import _Loops


# column jams wider than FACTORS, widest first
WIDE_FACTORS = (16, 8, 4, 2)
# vectors of accumulators one jam of a whole column loop (`column_chunks`) may hold
MAX_CHUNKS = 3


def wide_columns(loops: _Loops, r: UOp, cone: list[UOp], private: list[UOp],
                  desc: TargetDesc, n_iter: int, retried: bool) -> tuple[int, ...]:
    """The factors of WIDE_FACTORS a column loop (`column_loop`) whose copies each keep one
    scalar accumulator may be jammed by: those the target loads and computes as one vector
    of the accumulators' dtype, at most the loop's bound (a remainder loop takes the rest,
    itself jammed again by a narrower factor: `unroll`). The copies' accumulators are one
    vector (passes/slp_reg.py), so f copies cost one vector register, not f. FACTORS' 4 made
    conv1d r_2_16_12_8_3's 12 columns three xmm chains (0.50x clang) and mean_axes02
    r_8_14_2_14's 14 three xmm chains and two scalar ones (0.67x); 8 + 4 (+ 2) instead."""
    if not private or any(b.arg.size != 1 for b in private):
        return ()
    dts = {b.arg.dtype for b in private}
    if len(dts) != 1:
        return ()
    dt = dts.pop()
    values = _lane_values(cone, r, private)
    fs = tuple(f for f in WIDE_FACTORS if f <= n_iter and desc.mem_legal(f, dt)
               and desc.alu_legal(f, dt) and all(_lanes_legal(n, f, desc) for n in values))
    if not fs or (fs[0] <= max(FACTORS) and not retried):
        return ()       # FACTORS' own choice (dividing factors first)
    if not column_loop(loops, r, cone):
        return ()
    # every column in one loop, its chunks' chains side by side; not where a compare varies
    # with the column (a gate): its lanes cut across chunks were assembled bit by bit into
    # masks (conv_transpose r_10_10_2_3_3's 8 + 2 ran 248 -> 268 ns). Where no sum of
    # MAX_CHUNKS widths makes the bound, it may still be MAX_CHUNKS overlapping chunks
    # (`overlapped_chunks`; unroll.py `_analyze` drops the whole factor where not)
    if not retried and n_iter % fs[0] \
            and (column_chunks(n_iter, fs) or -(-n_iter // fs[0]) <= MAX_CHUNKS) \
            and not any(n.op in COMPARE for n in values):
        fs = (n_iter,) + fs
    return fs


def column_chunks(f: int, fs: tuple[int, ...]) -> tuple[int, ...]:
    """f's copies as chunks of the legal widths fs (widest first, at most MAX_CHUNKS, each
    chunk's accumulators one vector: `_jam` merges each chunk's one-element accumulators into
    a buffer of its own), or () when f is not such a sum. A bound that no width divides was
    jammed by the widest width and its remainder loop jammed again, narrower: conv1d
    r_2_16_12_8_3's 12 columns two reduce loops one after the other, 8 then 4, each an
    8-step dependent add chain (0.75x clang); one loop holding both chains hides their
    latency. Each copy still adds its own terms in the graph's order (bit-identical)."""
    out: list[int] = []
    for w in fs + tuple(w for w in FACTORS + (1,) if w not in fs):
        while f >= w and len(out) < MAX_CHUNKS:
            out.append(w)
            f -= w
    return tuple(out) if f == 0 and len(out) > 1 else ()


def overlapped_chunks(n: int, fs: tuple[int, ...]) -> tuple[int, ...]:
    """The columns (counter values) of the copies of a column loop of n columns jammed whole
    as ceil(n / w) chunks of the widest legal width w, the last overlapping the one before it
    (`column_chunks`' sum of narrower chunks otherwise), or () where that takes no fewer
    chunks than `column_chunks`. A column that two chunks hold is computed by both, by the
    same ops on the same elements (bit-identical), and stored twice with the same value:
    exact where the loop loads no buffer it stores and stores ungated (`_analyze` checks).
    mean_axes02 r_8_14_2_14's 14 columns 8 + 4 + 2 ran an 8-lane, a 4-lane and two scalar
    add chains (the 2-lane chunk stays scalar: no 2-lane float vector; 0.82x clang); 0..7
    and 6..13 are two 8-lane chains, clang's two masked blocks."""
    w = fs[0] if fs else 0
    if w < 2 or n <= w or n % w == 0:
        return ()
    m = -(-n // w)
    if m > MAX_CHUNKS:
        return ()
    exact = column_chunks(n, fs)
    # a chunk of a width the target has no vector of (FACTORS' 2 for float32) is its chains
    if exact and m >= sum(1 if c in fs else c for c in exact):
        return ()
    starts = [j * w for j in range(m - 1)] + [n - w]
    return tuple(c for st in starts for c in range(st, st + w))


def stores_only(glob: dict[UOp, list[tuple[int, int, int, bool]]],
                stored: dict[UOp, list[UOp]]) -> bool:
    """Whether a loop only stores, ungated, the kernel arguments it stores (loads none of them;
    glob: unroll.py `_analyze`'s accesses of each, stored: its stores): a column stored twice
    with the same value is then exact (`overlapped_chunks`)."""
    return all(a[3] for v in glob.values() for a in v) and all(
        len(n.src) == 2 for b, v in stored.items() if b.op is Ops.PARAM for n in v)


def _lane_values(cone: list[UOp], r: UOp, private: list[UOp]) -> list[UOp]:
    """The nodes of r's body whose f copies the lane packer must make one f-lane node for a
    wide column jam to pay: the ALU ops and casts whose value varies with r (`_varies`; a
    load's gate that does not is one splat), less integer arithmetic (an address's index: a
    copy's `f*i2 + k` folds into its loads' displacements; where it feeds a compare, the
    compare is counted)."""
    return [n for n in _varies(cone, r, set(private)) if
            n.op in COMPARE or n.op in (Ops.CAST, Ops.BITCAST, Ops.WHERE)
            or (n.op in ALU and n.dtype is not None and not n.dtype.is_int)]


def _lanes_legal(n: UOp, f: int, desc: TargetDesc) -> bool:
    """Whether the target computes f lanes of n (`_lane_values`) as one node. Where it does
    not, the packer splits the jam's copies into lanes computed one by one: half_matmul
    r_17_19_33's float16 MUL and F16C casts (4 or 8 lanes, an xmm) jammed by 16 ran 1.1x →
    0.65x clang, cumprod r_3_40_10_4's and cumsum_5000 r_10_256_2_64_4's int32 CMPLT (no
    zmm integer compare row) 1.5x → 0.75x and 1.05x → 0.82x."""
    if n.op in COMPARE:
        return desc.alu_legal(f, n.src[0].dtype, n.op)
    if n.op in (Ops.CAST, Ops.BITCAST):
        return desc.cast_legal(n.op, n.src[0].dtype, n.dtype, f)
    return desc.alu_legal(f, n.dtype, n.op)


def column_loop(loops: _Loops, r: UOp, cone: list[UOp]) -> bool:
    """Whether r's loop is a column loop: a loop of an inner loop reads a global buffer, and
    every global load that depends on r reads element r + (terms free of r) (coefficient 1:
    tinygrad's reduction over axis 0, `x[j*C + i]`), so the copies' loads of one step are
    consecutive elements, which the lane packer loads as one vector when the copies'
    one-element accumulators are consecutive elements of one buffer (`_jam`)."""
    memo: dict = {}
    inner_read = False
    for n in cone:
        if n.op is not Ops.LOAD or n.src[0].op is not Ops.INDEX:
            continue
        buf = base_buffer(n.src[0].src[0])
        idx = n.src[0].src[1]
        if buf.op is not Ops.PARAM or r not in loops.dep[idx]:
            continue
        terms, _ = affine(idx, memo=memo, mulacc=True)
        c = terms.get(r)
        if not c and all(t.op is Ops.RANGE or r not in loops.dep[t] for t in terms):
            # free of r's value: its index reads only loops nested in r's (conv1d's weights,
            # w[k*3 + o*24]: the same element for every copy, a splat)
            continue
        if c != 1:
            return False
        inner_read = inner_read or bool(loops.dep[idx] - loops.dep[r] - {r})
    return inner_read
