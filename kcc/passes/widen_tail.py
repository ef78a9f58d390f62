"""The remainder (tail) loop of a widened loop, for kcc/passes/widen.py and widen_lanes.py.

A loop of N iterations widened by k whose k does not divide N runs as

    for i2 in range(N // k):            # the widened loop: iterations 0 … k*(N//k) - 1
        body(k*i2 … k*i2 + k-1)
    for i3 in range(N % k):             # the tail: the original body, unchanged
        body(k*(N//k) + i3)

Every iteration runs once, in the original order of the blocks: the widened loop's blocks in
order, then the remaining iterations one by one (the widened loop already runs each block's
k iterations as one, which the widening's own legality checks allow). The tail's RANGE takes
the widened loop's END as an ordering src (docs/semantics.md, "Loop order": a RANGE's srcs
after the bound are done before the loop starts), so it starts after the widened loop's last
store. The tail's nodes are the original loop's, its counter `i3 + k*(N//k)`: the same ops in
the same dtypes on the same elements, so the result is bit-identical.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, base_buffer, rebuild

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.passes.target import TargetDesc
    from kcc.passes.widen_lanes import LaneLoop

_FACTORS = (32, 16, 8, 4, 2)


def factors(n: int | None, overlap: bool = False) -> list[int]:
    """The widening factors to try for a loop of n iterations, best first: each k costs
    n // k widened iterations plus n % k tail iterations (a tail iteration costs about what a
    widened one does: one pass over the body); on a tie, no tail first (one loop less), then
    the larger k; k > n never pays. When the largest legal k divides n it stays first (the
    factor taken before tail loops existed); n = 6 takes 2 (3 iterations), not 4 + a tail.
    With `overlap` (the last n % k iterations may run as one more k-lane block over n-k …
    n-1, passes/widen_stride.py last_block) a k costs ceil(n / k) blocks: n = 77 takes 16
    (5 blocks), not 8 (9 blocks and 5 tail iterations). A symbolic n (None): the largest k
    first."""
    if n is None:
        return list(_FACTORS)
    if overlap:
        return sorted((k for k in _FACTORS if k <= n), key=lambda k: (-(-n // k), -k))
    return sorted((k for k in _FACTORS if k <= n),
                  key=lambda k: (n // k + n % k, n % k != 0, -k))


def overlap_ok(lp: LaneLoop, n: int | None) -> bool:
    """Whether lp's loop may run its last iterations as one overlapping block instead of a
    tail loop (passes/widen_stride.py `last_block`): a constant bound, and no buffer both
    stored and loaded in it."""
    if n is None:
        return False
    stored = {base_buffer(x.src[0].src[0]) for x in lp.region if x.op is Ops.STORE}
    return not any(x.op is Ops.LOAD and base_buffer(x.src[0].src[0]) in stored
                   for x in lp.region)


def lone_tail(lp: LaneLoop, n: int | None, desc: TargetDesc) -> bool:
    """Whether lp's loop runs its one leftover iteration scalar (`slow_vector_mul`)."""
    # the overlapping block (passes/widen_stride.py last_block) recomputes k-1 lanes of
    # vector multiplies that cost two scalar ones each; the scalar iteration does one lane
    # (matmul_int's r_7_5_8: 5 = 4 + 1, eight VPMULLD against eight IMUL)
    if n is None or not desc.slow_vector_mul or not overlap_ok(lp, n):
        return False
    ks = factors(n, True)
    if not ks or n % ks[0] != 1 or n <= ks[0]:     # (n = 1: no factor at all)
        return False
    loaded: set[UOp] = set()        # what the loop's loads feed (not its index arithmetic)
    for x in lp.region:             # (sources first)
        if x.op is Ops.LOAD or any(s in loaded for s in x.src):
            loaded.add(x)
            if x.op in (Ops.MUL, Ops.MULACC) and x.dtype in desc.slow_vector_mul:
                return True
    return False


def split(r: UOp, k: int) -> tuple[UOp, UOp | None]:
    """(the widened loop's bound, the first iteration the tail runs or None for no tail) of
    the loop over r widened by k. A constant N: N // k and k*(N // k) when k does not divide
    N. A symbolic N (an integer expression of PARAMs, docs/semantics.md): M = MAX(N, 0) (a
    bound below 1 runs no iteration, and neither loop may then run one), M >> log2 k and
    (M >> log2 k) << log2 k, shifts being floor division and multiplication for M >= 0."""
    n, dt = r.src[0], r.dtype
    c = const_int(n)
    if c is not None:
        return strong_int(c // k, dt), (strong_int(c - c % k, dt) if c % k else None)
    sh = strong_int(k.bit_length() - 1, dt)
    main = UOp(Ops.SHR, (_nonneg(n), sh))
    return main, UOp(Ops.SHL, (main, sh))


def _nonneg(n: UOp) -> UOp:
    """MAX(n, 0) for a symbolic bound n, or n itself where its declared range has no
    negative value (tinygrad's variables: vmin_vmax=(1, 100); no compare and CMOV)."""
    from kcc.ir.ranges import never_negative
    return n if never_negative(n) else UOp(Ops.MAX, (n, strong_int(0, n.dtype)))


def tail_loop(r: UOp, end: UOp, region: list[UOp], after: UOp, start: UOp,
              one: bool = False) -> UOp:
    """The END of a loop that runs iterations start … N-1 of the loop over r (closed by end;
    region: the nodes that depend on r, sources first) after `after` (the widened loop's END),
    its body the original one (module docstring). start is split(r, k)[1]. one: a single
    iteration is that body in straight line, GROUPed after `after` (only where no buffer
    the loop loads is stored in it, overlap_ok: no order between the two is needed)."""
    n, dt = r.src[0], r.dtype
    c, s = const_int(n), const_int(start)
    count = strong_int(c - s, dt) if c is not None and s is not None else \
        UOp(Ops.SUB, (_nonneg(n), start))
    if one and c is not None and s is not None and c - s == 1:
        # one iteration: its body at counter `start`, no RANGE (what it loads, no iteration
        # stores: the caller's `one`), so that the selector reads its lanes and loop-invariant
        # operands as the block before it does (a loop boundary stops both)
        sub = rebuild(region, {r: start})
        body = end.src[0]
        return UOp(Ops.GROUP, (after, sub.get(body, body)))
    r3 = UOp(Ops.RANGE, (count, after), r.arg)
    sub = rebuild(region, {r: UOp(Ops.ADD, (r3, start))})
    body = end.src[0]
    return UOp(Ops.END, (sub.get(body, body), r3))
