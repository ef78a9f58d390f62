"""x86 vector induction variables: an int32 vector `splat(s) + K` whose scalar s is
`a + r*c` in a loop's counter r (a and the constant vector K invariant in the loop: tinygrad's
argmax index vector `splat(77 - 8r) + [0, -1, …, -7]`) is a vector register of its own, set
to `splat(a) + K` where the loop begins and advanced by `splat(c)` at its END: one VPADDD an
iteration in place of the scalar sum, a move to an xmm, a broadcast (two shuffle-port uops on
Intel cores) and a VPADDD. Lane i is `a + K[i] + r*c` modulo 2^32 either way (int32 ADD, SUB
and MUL wrap, docs/semantics.md), so the bits are the same.

`vector_inductions` finds them in the schedule (a walk of it), the X86VecInduction mixin of
X86Selector (kcc/isel/x86/select.py) makes each at its RANGE and advances it at its END.
"""

from __future__ import annotations

from kcc.ir import Ops, UOp, dtypes
from kcc.ir.mir import Mem
from kcc.isel.common import commit_const, strong_const
from kcc.isel.x86.analysis import range_times_const
from kcc.isel.x86.base import fits32, vw

MAX_VIVS = 2      # vector induction variables per loop: each holds a vector register


def _int_const(u: UOp) -> int | None:
    """u's value when it is an integer strong constant, else None."""
    c = strong_const(u)
    return c if isinstance(c, int) and not isinstance(c, bool) else None


def _scaled(m: UOp) -> tuple[UOp, int] | None:
    """(r, c) when the int32 m is the RANGE r itself (c = 1), `MUL(r, c)`, `MUL(c, r)` or
    `SHL(r, k)` (c = 2^k) with a constant c."""
    if m.op is Ops.RANGE:
        return m, 1
    return range_times_const(m)


def affine_in_range(s: UOp) -> tuple[UOp, UOp | None, int] | None:
    """(r, a, c) when the scalar int32 s is `a + r*c` for a RANGE r: `r*c` (a None: 0),
    `ADD(a, r*c)` either order, `SUB(a, r*c)` (c negated) or `MULACC(r, c, a)`."""
    if s.dtype != dtypes.int32 or s.shape:
        return None
    got = _scaled(s)
    if got is not None:
        return got[0], None, got[1]
    if s.op is Ops.MULACC:
        got = _scaled(UOp(Ops.MUL, s.src[:2]))
        return None if got is None else (got[0], s.src[2], got[1])
    if s.op in (Ops.ADD, Ops.SUB) and len(s.src) == 2:
        for m, a in ((s.src[1], s.src[0]), (s.src[0], s.src[1])):
            got = _scaled(m)
            if got is not None:
                return got[0], a, got[1] if s.op is Ops.ADD else -got[1]
            if s.op is Ops.SUB:
                break                       # a - r*c only: r*c - a is not of this form
    return None


def vector_inductions(lin: list[UOp]) -> dict[UOp, list[tuple[UOp, UOp | None, list[int], int]]]:
    """By loop: (node, a, K, c) for each int32 xmm/ymm vector node `ADD(STACK(s, …, s), K)`
    (either order) with s = `a + r*c` (affine_in_range) of that loop's RANGE r, a an int32
    constant or scheduled before r, K a STACK of integer constants, c an imm32. Up to
    MAX_VIVS a loop, first in the schedule first."""
    pos = {u: k for k, u in enumerate(lin)}
    out: dict[UOp, list[tuple[UOp, UOp | None, list[int], int]]] = {}
    for u in lin:
        if u.op is not Ops.ADD or u.dtype != dtypes.int32 or not u.shape \
                or u.shape[0] * 4 not in (16, 32) or len(u.src) != 2:
            continue
        for sp, k in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
            if sp.op is not Ops.STACK or k.op is not Ops.STACK or not sp.src \
                    or any(x is not sp.src[0] for x in sp.src):
                continue
            lanes = [_int_const(x) for x in k.src]
            got = affine_in_range(sp.src[0])
            if got is None or None in lanes or len(lanes) != u.shape[0]:
                continue
            r, a, c = got
            if a is not None and (a.dtype != dtypes.int32 or a.shape
                                  or (_int_const(a) is None and pos.get(a, len(lin)) > pos[r])):
                continue
            c = int(commit_const(c, dtypes.int32))
            ivs = out.setdefault(r, [])
            if fits32(c) and len(ivs) < MAX_VIVS:
                ivs.append((u, a, [int(x) for x in lanes], c))
            break
    return out


def _lane_bytes(values: list[int]) -> bytes:
    return b"".join((v & 0xFFFFFFFF).to_bytes(4, "little") for v in values)


class X86VecInduction:
    """Vector induction variables made at their RANGE and advanced at their END (mixed into
    X86Selector)."""

    def start_vector_ivs(self, r: UOp) -> None:
        """At r's loop entry: each vector induction variable of r as `splat(a) + K` in a
        register of its own (the node's value for the whole body)."""
        for node, a, lanes, _ in self.vivs.get(r, ()):
            n = node.shape[0]
            w = vw(dtypes.int32, n)
            ac = 0 if a is None else _int_const(a)
            t = self.new("vec")
            if ac is not None:
                folded = [int(commit_const(ac + x, dtypes.int32)) for x in lanes]
                self.emit(f"vmovdqu_{w}_{w}m", t, Mem(),
                          arg={"rip": self.pool.label(_lane_bytes(folded))})
            else:
                splat = UOp(Ops.STACK, (a,) * n)
                had = splat in self.val
                b = self.reg(splat)                  # a broadcast (sel_STACK)
                if not had:
                    # made at this loop's entry: not a value for the schedule's own splat
                    self.val.pop(splat, None)
                self.emit(f"vpaddd_{w}_{w}_{w}m", t, b, Mem(),
                          arg={"rip": self.pool.label(_lane_bytes(lanes))})
            self.val[node] = t

    def advance_vector_ivs(self, r: UOp) -> None:
        """At r's END, before the back edge: each vector induction variable += splat(c)."""
        for node, _, _, c in self.vivs.get(r, ()):
            n = node.shape[0]
            w = vw(dtypes.int32, n)
            v = self.val[node]
            t = self.new("vec")
            self.emit(f"vpaddd_{w}_{w}_{w}m", t, v, Mem(),
                      arg={"rip": self.pool.label(_lane_bytes([c] * n))})
            self.emit(f"vmovaps_{w}_{w}m", v, t)
