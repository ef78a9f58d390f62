"""Scalar loads for vector loads whose lanes are only read one by one (`TargetDesc.lane_loads`).

tinygrad reads a row of a dot product as 4-element vectors and multiplies their lanes one by
one into a scalar chain (attention's `r_4_8_8_8`: two float4 loads of each operand, eight
`MULACC(INDEX(a, j), INDEX(b, j), acc)`); slp leaves such chains scalar when nothing packs
across them:

    v = LOAD(SHRINK(buf, base, n))
    ... f(INDEX(v, 0)), g(INDEX(v, 1)) ...      # every use of v a scalar lane

On x86 each lane then costs a shuffle (VSHUFPS, or VEXTRACTF128 and a shuffle for an upper
lane): one instruction on a single port (port 5 on Intel), which eight lanes an iteration
saturate, while a scalar load of the lane is a load-port micro-op that the lane's user can
even read as its memory operand (`vfmadd231ss xmm, xmm, m32`). This pass rewrites

    INDEX(LOAD(SHRINK(buf, base, n)), j)  →  LOAD(INDEX(buf, base + j))

for every lane of such a load. It reads the same element, so every lane is bit-identical.

**Legality and when it pays** (a load is left alone otherwise):
- the load is ungated (a gated vector load is one masked instruction; its lanes would each
  need their own gate) and reads a kernel argument (a GLOBAL PARAM, possibly through an
  AFTER) that the kernel stores nowhere: the scalar loads may be scheduled anywhere the
  vector load could be, and no store can come between;
- every use of the vector is an INDEX at a constant lane, and every use of each lane is a
  scalar node other than a STACK: a lane that is packed back into a vector (a transpose,
  kcc/isel/x86/shuf.py) is a permutation of whole registers, cheaper than a load per lane;
  and other than a compare: the lanes' compares of one vector combined by OR/AND (tinygrad's
  any/all) are one vector compare and a mask move in the selector (kcc/isel/x86/vec.py
  lane_test), where scalar loads would make each lane a compare of its own.

Runs twice. As widen starts (kcc/passes/widen.py), on loads none of whose lanes flows into a
STACK: a loop whose lanes are scalars all the way to their stores (attention's) is then a
scalar loop that widen_lanes.py widens across iterations, while a loop whose scalar lanes are
STACKed into a vector store stays the W-lane loop widen.py widens. As devectorize starts
(kcc/passes/devectorize.py), after slp and widen, on every load the rules above allow. GPU
targets opt out.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, plus_int
from kcc.ir.ops import COMPARE, Ops
from kcc.ir.uop import (
    AddrSpace,
    UOp,
    base_buffer,
    reachable,
    substitute_closed,
    toposort,
)
from kcc.passes.target import TargetDesc


def _argument(buf: UOp) -> bool:
    """Whether buf is a kernel argument (a GLOBAL PARAM under its AFTERs)."""
    b = base_buffer(buf)
    return b.op is Ops.PARAM and b.arg.is_buffer and b.arg.addrspace is AddrSpace.GLOBAL \
        and not b.arg.volatile


def lane_loads(sink: UOp, desc: TargetDesc, before_widen: bool = False,
               windows: dict[UOp, tuple[int, int]] | None = None) -> UOp:
    """sink with the lanes of every qualifying vector load read as scalar loads (module
    docstring); sink itself when the target opts out or no load qualifies. before_widen:
    only loads none of whose lanes reaches a STACK through its users. windows: filled with
    each new scalar place's (lane, vector width), as kcc/passes/widen_split.py records them,
    so that widen_stride.py loads a strided lane from its vector's start and the lanes of
    one vector share their loads (maxpool's 2-lane window rows: two loads a row, not four)."""
    if not desc.lane_loads:
        return sink
    order = toposort([sink])
    stored = {base_buffer(n.src[0].src[0]) for n in order if n.op is Ops.STORE}
    # the loads the rules of the load alone allow, first: half the calls on tinygrad's
    # kernels have none, and then the users and the STACK reach are not built
    loads = []
    for n in order:
        if n.op is not Ops.LOAD or len(n.src) != 1 or n.src[0].op is not Ops.SHRINK:
            continue
        place = n.src[0]
        if not place.dtype.is_float or place.dtype.itemsize not in (4, 8):
            continue        # float32/float64 lanes (VSHUFPS/VSHUFPD); integer lanes untouched
        buf = place.src[0]
        if not _argument(buf) or base_buffer(buf) in stored:
            continue
        loads.append(n)
    if not loads:
        return sink
    users: dict[UOp, list[UOp]] = {}
    for n in order:
        for s in n.src:
            users.setdefault(s, []).append(n)
    # a node whose lanes reach a STACK through its users: one a STACK reaches through srcs
    stacked = reachable([n for n in order if n.op is Ops.STACK]) if before_widen else set()
    repl: dict[UOp, UOp] = {}
    for n in loads:
        lanes = users.get(n, [])
        if not lanes or not all(_scalar_lane(x, users) for x in lanes) \
                or any(x in stacked for x in lanes):
            continue
        read_alone(n, lanes, repl, windows)
    # substitute_closed: a lane's new place reads nodes (its loop's counter) that the same
    # walk rebuilds where a loop is ordered after another (unroll's remainder loop), so the
    # values are substituted too; a plain substitute left the new loads on the old RANGE
    return substitute_closed(sink, repl) if repl else sink


def read_alone(n: UOp, lanes: list[UOp], repl: dict[UOp, UOp],
               windows: dict[UOp, tuple[int, int]] | None) -> None:
    """Into repl: each lane read x = INDEX(n, c) (c a constant) of the vector load
    n = LOAD(SHRINK(buf, base, W)) as the scalar LOAD(INDEX(buf, base + c)), the same element;
    into windows (when given) each new place's (c, W). The rewrite this pass and
    kcc/passes/widen_split.py share; each decides which loads qualify."""
    buf, base = n.src[0].src[0], n.src[0].src[1]
    for x in lanes:
        c = const_int(x.src[1])
        place = UOp(Ops.INDEX, (buf, plus_int(base, c)))
        repl[x] = UOp(Ops.LOAD, (place,))
        if windows is not None:
            windows[place] = (c, n.shape[0])


def _scalar_lane(x: UOp, users: dict[UOp, list[UOp]]) -> bool:
    """Whether x is a constant lane INDEX of a vector whose every use is a scalar non-STACK."""
    if x.op is not Ops.INDEX or len(x.src) != 2 or const_int(x.src[1]) is None:
        return False
    return all(u.op is not Ops.STACK and u.op not in COMPARE and u.shape == ()
               for u in users.get(x, []))
