"""Vector STOREs of the slices of one vector merged into one STORE (kcc/passes/slp.py's last
step, a CPU target's choice).

slp packs runs of gated loads into one vector per run (kcc/passes/slp_gated.py), wider than
the stores that read it: tinygrad's triu_int E_8_2_4, its 8×2 nest of int4 stores unrolled
(kcc/passes/unroll_tiny.py), loads each row's 8 elements with one masked load and stores them
as two int4 STACKs of its lanes 0–3 and 4–7, which x86 selects as a 128-bit store, a lane
extract and another store. Here such stores become one STORE of the whole vector:

    STORE(SHRINK(b, e + k, n), STACK(INDEX(v, 0), …, INDEX(v, n-1)))
    STORE(SHRINK(b, e + k + n, m), STACK(INDEX(v, n), …, INDEX(v, n+m-1)))
      → STORE(SHRINK(b, e + k, n + m), v)        (n + m: all of v's lanes)

**Legality**: the stores write consecutive elements of one kernel argument in the order of
v's lanes, together every lane of v once; they depend on the same loops (so they run the
same number of times, and write the same elements when they run); and the kernel loads
nothing of that buffer, so no load can tell when an element was written. Each element gets
the value its own store gave it: the result is bit-identical.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, buffer_of
from kcc.passes.linearize import range_sets
from kcc.passes.slp_index import lane_offset
from kcc.passes.target import TargetDesc


def _slice(u: UOp) -> tuple[UOp, UOp, int, UOp | None, int, int] | None:
    """(buffer, vector, first lane, index base, index constant, lanes) of a STORE of a STACK
    of consecutive lanes of one vector to a SHRINK of a kernel argument, else None."""
    if len(u.src) != 2 or u.src[0].op is not Ops.SHRINK or u.src[1].op is not Ops.STACK:
        return None
    buf, start, size = u.src[0].src
    lanes = u.src[1].src
    n = const_int(size)
    if buf.op is not Ops.PARAM or buf.kind != "buffer" or n is None or n != len(lanes) \
            or any(s.op is not Ops.INDEX or s.src[0] is not lanes[0].src[0] for s in lanes):
        return None
    v = lanes[0].src[0]
    if v.kind != "value" or len(v.shape) != 1:
        return None
    ks = [const_int(s.src[1]) for s in lanes]
    if ks[0] is None or ks != list(range(ks[0], ks[0] + n)):
        return None
    base, k = lane_offset(start)
    return buf, v, ks[0], base, k, n


def merge_slice_stores(order: list[UOp], target: TargetDesc) -> dict[UOp, UOp]:
    """STORE → the merged STORE that replaces it (the module docstring's rule), for every
    group of stores the rule allows; order: the kernel's nodes, sources first."""
    loaded = {buffer_of(u.src[0]) for u in order if u.op is Ops.LOAD}  # every buffer read
    groups: dict[tuple, list[tuple[int, int, int, UOp]]] = {}
    for u in order:
        if u.op is not Ops.STORE:
            continue
        s = _slice(u)
        if s is None or s[0] in loaded:
            continue
        buf, v, lane, base, k, n = s
        groups.setdefault((buf, v, base), []).append((lane, k, n, u))
    if not groups:
        return {}
    dep = range_sets(order)
    out: dict[UOp, UOp] = {}
    for (buf, v, _), parts in groups.items():
        parts.sort(key=lambda p: p[0])
        width = v.shape[0]
        lane0, k0 = parts[0][0], parts[0][1]
        ok = lane0 == 0 and len({dep[p[3]] for p in parts}) == 1 and len(parts) > 1 \
            and target.store_legal(width, v.dtype)
        at = 0
        for lane, k, n, _ in parts:
            ok = ok and lane == at and k - k0 == lane
            at += n
        if not ok or at != width:
            continue
        place = parts[0][3].src[0]
        st = UOp(Ops.STORE, (UOp(Ops.SHRINK, (buf, place.src[1], UOp.const(width))), v))
        for p in parts:
            out[p[3]] = st
    return out
