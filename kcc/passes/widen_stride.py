"""Strided loads in a loop widened across iterations (kcc/passes/widen_lanes.py): a scalar load
whose element advances by a constant stride s != 1 per iteration becomes k lanes read by a few
contiguous vector loads and one lane permutation.

tinygrad's strided slices (`x[1::3, ::2]`) read every s-th element of a row:

    for i in range(N):
        x = LOAD(INDEX(a, s*i + base))

Lane j of the widened loop (iteration k*i2 + j) reads element e0 + s*j, e0 = s*k*i2 + base
(lane 0's index). The k lanes span L = s*(k-1) + 1 consecutive elements, which R = ceil(L/k)
k-element SHRINK loads cover: load r starts at e0 + r*k, except the last, which starts at
e0 + L - k so that it ends at the span's last element (it may overlap the one before). No
element outside [e0, e0 + L) is read, so every element read is one the scalar loop reads
(an access past the buffer's end in the widened loop would be one in the scalar loop too).
The lanes are then `STACK(INDEX(load_r, e - start_r) ...)`: a lane permutation of R
registers, which a target declares it does in one instruction (`TargetDesc.permute`:
x86-64-v4's VPERMI2PS takes R = 2 at 16 float32 lanes, so a stride of 2; kcc/isel/x86/shuf.py
`permute`), or in a short shuffle of every other lane (`TargetDesc.stride2`: x86-64-v3's VSHUFPS
and VPERMPD of 8 float32 lanes, shuf.py `permute_y`). The loads read the same elements and
the lanes move bits only, so every lane is bit-identical to the scalar load's value.

A stride whose lanes need more registers than one permutation reads is a gather where the
target has one (`TargetDesc.gather`: x86-64-v4's VGATHERDPS of 16 float32, kcc/isel/x86/
gather.py): `STACK(LOAD(INDEX(a, e0 + s*j)) for j in 0 … k-1)`, the k scalar loads as
written, which the target's selector reads as one instruction (tinygrad's transposes: s = 77).

**The last iterations.** A widened loop (strided loads or not, kcc/passes/widen_lanes.py)
whose bound N is a constant that k does not divide runs its last k iterations, N-k … N-1,
as one more k-lane block after the widened loop instead of a tail loop of N % k scalar
iterations (one iteration of the scalar body costs about what a whole block does: 7 of
slice_step's 39 elements took two thirds of its time). The block's first k - N % k lanes
repeat iterations the loop ran: legal when no
buffer the loop stores is loaded in it (every store writes a value computed from loads of
unstored buffers and the counter, so a repeated iteration stores the bytes already there,
at places of its own iteration: the loop's stores advance one element per iteration).

**A row read reversed** (s = -1: tinygrad's bitonic sort steps read `x[row + 1023 - i]`):
the k lanes are elements e0, e0 - 1, … e0 - (k-1), one k-element load from e0 - (k-1) in
reverse lane order, `STACK(INDEX(load, k-1-j) ...)`, where the target reverses k lanes of the
dtype (`TargetDesc.reverse`: x86's in-block shuffles and a block swap). It reads exactly the
k iterations' elements and moves bits only: bit-identical.

Only loads of buffers the loop does not store are strided (a store's independence check
assumes consecutive elements, widen_lanes.py); a stride whose permutation needs more
registers than the target permutes at once leaves the loop at a smaller k or scalar.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, plus_int, strong_int
from kcc.ir.ops import ALU, Ops
from kcc.ir.uop import ParamArg, UOp, base_buffer
from kcc.passes.target import TargetDesc
from kcc.passes.widen_tail import overlap_ok

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.passes.widen_lanes import LaneLoop


def registers(stride: int, k: int) -> int:
    """The k-element loads that cover k lanes of elements stride apart (module docstring)."""
    span = stride * (k - 1) + 1
    return -(-span // k)


def stride_legal(stride: int, k: int, desc: TargetDesc, dtype: object) -> bool:
    """Whether k lanes stride elements apart are loads and one permutation on this target: a
    positive stride, k-element loads of dtype legal, and at most as many registers as one
    permutation reads (`TargetDesc.stride_sources`: x86-64-v3's every-other-lane shuffle
    counts for stride 2)."""
    if stride == -1:
        return reversed_legal(k, desc, dtype)
    if stride < 2 or k < 2:
        return False
    return desc.mem_legal(k, dtype) and registers(stride, k) <= desc.stride_sources(dtype, k) \
        or desc.gathers(dtype, k)


def strided_load(buf: UOp, idx: UOp, stride: int, k: int, desc: TargetDesc,
                 window: tuple[int, int] | None = None) -> tuple[UOp, list[UOp]]:
    """(the k-lane value of LOAD(INDEX(buf, idx + stride*j)) for j in 0 … k-1, the vector
    nodes made): R contiguous loads and a STACK of their lanes, or the k scalar loads in a
    STACK where they need more registers than the target permutes and it gathers (module
    docstring). idx: lane 0's element index (a scalar). window: (c, W) when the load is lane
    c of a W-element vector the loop read (passes/widen_split.py) and idx is `start + c`:
    the loads then start at `start`, so the lanes of one vector share them."""
    if stride == -1:
        return reversed_load(buf, idx, k)
    got = _windowed(buf, idx, stride, k, desc, window)
    if got is not None:
        return got
    span = stride * (k - 1) + 1
    n_reg = registers(stride, k)
    if n_reg > desc.stride_sources(buf.dtype, k):
        loads = tuple(UOp(Ops.LOAD, (UOp(Ops.INDEX, (buf, plus_int(idx, stride * j))),))
                      for j in range(k))
        stack = UOp(Ops.STACK, loads)
        return stack, [stack]
    starts = [r * k for r in range(n_reg - 1)] + [span - k]
    loads = []
    for off in starts:
        at = plus_int(idx, off)
        loads.append(UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, at, UOp.const(k))),)))
    lanes = []
    for j in range(k):
        e = stride * j
        r = min(e // k, n_reg - 1)
        lanes.append(UOp(Ops.INDEX, (loads[r], UOp.const(e - starts[r]))))
    stack = UOp(Ops.STACK, tuple(lanes))
    return stack, [*loads, stack]


def reversed_legal(k: int, desc: TargetDesc, dtype: object) -> bool:
    """Whether k lanes falling by one element each are a k-element load and one lane
    reversal on this target (module docstring: a row read reversed)."""
    return k >= 2 and desc.mem_legal(k, dtype) and desc.reverses(dtype, k)


def reversed_load(buf: UOp, idx: UOp, k: int) -> tuple[UOp, list[UOp]]:
    """(the k-lane value of LOAD(INDEX(buf, idx - j)) for j in 0 … k-1, the vector nodes
    made): the k elements ending at idx, one load, its lanes in reverse order."""
    load = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, plus_int(idx, -(k - 1)), UOp.const(k))),))
    stack = UOp(Ops.STACK, tuple(UOp(Ops.INDEX, (load, UOp.const(k - 1 - j)))
                                 for j in range(k)))
    return stack, [load, stack]


def _windowed(buf: UOp, idx: UOp, stride: int, k: int, desc: TargetDesc,
              window: tuple[int, int] | None) -> tuple[UOp, list[UOp]] | None:
    """strided_load's loads from the start of the vectors the scalar loop read, or None.
    Its k iterations read W elements at start + stride*j each, so every element from start
    to start + stride*(k-1) + W - 1 lies in the buffer (between two elements it reads);
    loads covering that window from start are the same nodes for every lane c of the
    vector (maxpool's two lanes: two loads, two VSHUFPS, not four loads). None without a
    window, for an idx not `start + c`, or when the window needs more registers than one
    permutation reads."""
    if window is None:
        return None
    c, w = window
    if c == 0:
        start = idx
    elif idx.op is Ops.ADD and const_int(idx.src[1]) == c:
        start = idx.src[0]
    else:
        return None
    span = stride * (k - 1) + w
    n_reg = -(-span // k)
    if n_reg > desc.stride_sources(buf.dtype, k):
        return None
    starts = [r * k for r in range(n_reg - 1)] + [span - k]
    loads = [UOp(Ops.LOAD, (UOp(Ops.SHRINK, (buf, plus_int(start, off), UOp.const(k))),))
             for off in starts]
    lanes = []
    for j in range(k):
        e = c + stride * j
        r = min(e // k, n_reg - 1)
        lanes.append(UOp(Ops.INDEX, (loads[r], UOp.const(e - starts[r]))))
    stack = UOp(Ops.STACK, tuple(lanes))
    return stack, [*loads, stack]


def last_block(lp: LaneLoop, k: int, desc: TargetDesc, n: int | None) -> UOp | None:
    """Iterations n-k … n-1 of lp's loop as one k-lane copy of its body (its stores; the
    module docstring's last block), or None: a symbolic or small bound, a buffer both stored
    and loaded in the loop, or a vector the copy needs that is not legal."""
    if n is None or n < k or not overlap_ok(lp, n):
        return None
    halves = _halves(lp, k, desc, n)
    if halves is not None:
        return halves
    narrow = _narrow(lp, k, desc, n)
    if narrow is not None:
        return narrow
    return lp.rewrite(k, desc, counter=strong_int(n - k, lp.r.dtype))


def _narrow(lp: LaneLoop, k: int, desc: TargetDesc, n: int) -> UOp | None:
    """The last r = n % k iterations as one block of the fewest lanes w >= r (a power of two
    below k) over n-w … n-1, or None (no such w, or no legal w-lane copy of the body): the
    narrow block overlaps at most w - r lanes where the k-lane one repeats k - r; a light
    body only (`_light`), as for the halves. Measured on
    x86-64-v4 (docs/performance.md, issue 24 item 2): shrink_expand E_35_50's rows of 50
    floats, 3 zmm blocks and then an overlapping zmm over the last 2 took 84 ns a call, an
    overlapping xmm or an 8-byte block 70 (a ymm 75): the wide block's load and store cross
    a cache line more often and its store rewrites 14 lanes already stored."""
    r = n % k
    if r == 0 or lp.strides or lp.gathers:
        # (a strided or gathered load's narrower copy permutes or gathers by other means:
        # x86-64-v4 permutes two registers at 16 float32 lanes only)
        return None
    if not _light(lp, sum(x.op is Ops.STORE for x in lp.region)):
        # much arithmetic a store (matmul_17x19's 23 FMAs a column block): the narrow copy
        # needs every loop-invariant operand again at its width (23 xmm rows beside the 23
        # zmm ones: spills), where the k-lane block reads the same registers' kind
        return None
    w = 2
    while w < r:
        w *= 2
    while w < k:
        block = lp.rewrite(w, desc, counter=strong_int(n - w, lp.r.dtype))
        if block is not None:
            return block
        w *= 2
    return None


# ALU work a stored element may take for its row's last block to be split into halves, in
# ops (a transcendental or division counting as the ops of its polynomial or its latency):
# past it the loop is bound by its arithmetic, where two half blocks cost more than one
# (softmax_odd E_111_77_3's EXP2: 1.4x -> 1.1x of clang's time when split)
_LIGHT_OPS = 4
_HEAVY = {Ops.EXP2: 16, Ops.LOG2: 16, Ops.SIN: 16, Ops.SQRT: 4, Ops.FDIV: 4, Ops.CDIV: 8,
          Ops.CMOD: 8}


def _halves(lp: LaneLoop, k: int, desc: TargetDesc, n: int) -> UOp | None:
    """The last n % k iterations as one or two blocks of k/2 lanes (the second overlapping the
    first), or None (the k-lane block): split where a k-lane block's stores would be wider
    than `TargetDesc.last_block_bytes`, the loop stores more than `TargetDesc.l1d_bytes` (its
    output misses L1) and does little arithmetic a stored element (`_light`). Measured on
    x86-64-v4 (docs/performance.md): a row's last 64-byte store over an output that misses
    L1 cost log_softmax_axis0 E_111_77_3 a fifth of its time; two 32-byte ones did not. A
    k/2-lane copy that is not legal keeps the k-lane block."""
    h, r = k // 2, n % k
    limit = desc.last_block_bytes
    if not limit or r == 0 or h < 2 or lp.strides or lp.gathers:
        # (strided loads and gathers cost by the lane: two half blocks would cost more)
        return None
    stores = [x for x in lp.region if x.op is Ops.STORE]
    if not stores or max(x.src[1].dtype.itemsize for x in stores) * k <= limit:
        return None
    bufs = {base_buffer(x.src[0].src[0]) for x in stores}
    stored = sum((b.arg.size or 0) * b.arg.dtype.itemsize for b in bufs
                 if isinstance(b.arg, ParamArg))
    if stored <= desc.l1d_bytes or not _light(lp, len(stores)):
        return None
    starts = [n - h] if r <= h else [n - r, n - h]
    blocks = [lp.rewrite(h, desc, counter=strong_int(s, lp.r.dtype)) for s in starts]
    if any(b is None for b in blocks):
        return None
    return blocks[0] if len(blocks) == 1 else UOp(Ops.GROUP, tuple(blocks))


def _light(lp: LaneLoop, n_stores: int) -> bool:
    """Whether lp's body computes at most _LIGHT_OPS ALU ops a store from what it loads (its
    index arithmetic not counted; the region is in topological order)."""
    data: set[UOp] = set()
    work = 0
    for x in lp.region:
        if x.op is Ops.LOAD:
            data.add(x)
        elif x.op in ALU and any(s in data for s in x.src):
            data.add(x)
            work += _HEAVY.get(x.op, 1)
    return work <= _LIGHT_OPS * n_stores
