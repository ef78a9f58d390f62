"""Integer division and remainder by a constant as multiplies and shifts (pipeline step
`div_const`), for a target that multiplies fast where it divides slowly (x86: IDIV r64 takes
tens of cycles, IMUL r64 three).

A scalar CDIV/CMOD of a 32- or 64-bit integer (the widths in TargetDesc.mul_high) by a constant
d becomes:

- d = 1, -1: x, -x (wrapping, as CDIV's INT_MIN / -1); the remainder 0.
- d = INT_MIN (signed): quotient 1 where x = INT_MIN, else 0; remainder 0 there, else x.
- d < 0 otherwise: CDIV(x, d) = -CDIV(x, |d|) and CMOD(x, d) = CMOD(x, |d|) (C's remainder
  takes the dividend's sign), then as below.
- d = 2^k: left to the selector (a shift with a bias, kcc/isel/x86/alu.py divide_pow2).
- any other d: the multiply-shift plan of kcc/ir/divmagic.py for the dividend's value range
  (kcc/ir/ranges.py; an index known to be non-negative and small gets a smaller multiplier and
  no sign correction): a 64-bit MUL of the extended dividend for 32 bits, MULHI for 64 bits.
  CMOD(x, d) = x - CDIV(x, d)·d.

Zero divisors and vector lanes keep their CDIV/CMOD, and so does a division that a launch
dimension reads (the SPECIAL bounds the manifest evaluates, docs/manifest.md). The pass runs
after devectorize, so unroll, slp and widen still see the CDIV/CMOD of index arithmetic that
they fold.
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.divmagic import DivPlan, is_pow2, plan
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.ranges import Range, int_ranges
from kcc.ir.uop import UOp, toposort
from kcc.passes.simplify import keep_params
from kcc.passes.target import TargetDesc

_WIDE = {True: dtypes.int64, False: dtypes.uint64}


def _op(op: Ops, *src: UOp) -> UOp:
    return UOp(op, src)


def _quotient(x: UOp, pl: DivPlan, dt: DType) -> UOp:
    """trunc(x / d) by the plan (kcc/ir/divmagic.py names each form)."""
    c = strong_int
    if pl.kind in ("wide", "wide_add"):
        wdt = _WIDE[pl.signed]
        xw = x if dt.bits == 64 else UOp(Ops.CAST, (x,), wdt)
        if pl.kind == "wide":
            q = _op(Ops.SHR, _op(Ops.MUL, xw, c(pl.mul, wdt)), c(pl.shift, wdt))
        else:
            t = _op(Ops.SHR, _op(Ops.MUL, xw, c(pl.mul, wdt)), c(32, wdt))
            q = _op(Ops.SHR, _op(Ops.ADD, t, xw), c(pl.shift, wdt))
        if dt.bits != 64:
            q = UOp(Ops.CAST, (q,), dt)
    elif pl.kind == "hi":
        m = pl.mul - (1 << 64) if pl.signed and pl.mul >= (1 << 63) else pl.mul
        q = _op(Ops.MULHI, x, c(m, dt))
        if pl.add_n:
            q = _op(Ops.ADD, q, x)
        if pl.shift:
            q = _op(Ops.SHR, q, c(pl.shift, dt))
    else:   # hi_add (unsigned)
        t = _op(Ops.MULHI, x, c(pl.mul, dt))
        q = _op(Ops.ADD, _op(Ops.SHR, _op(Ops.SUB, x, t), c(1, dt)), t)
        if pl.shift:
            q = _op(Ops.SHR, q, c(pl.shift, dt))
    if pl.fix_sign:
        q = _op(Ops.SUB, q, _op(Ops.SHR, x, c(dt.bits - 1, dt)))
    return q


def _rewrite(u: UOp, x: UOp, d: int, r: Range) -> UOp | None:
    """The replacement of CDIV/CMOD u = (x, d) (x the rebuilt dividend), or None to keep u."""
    dt = u.dtype
    div = u.op is Ops.CDIV
    zero = strong_int(0, dt)
    if d == 1 or (d == -1 and dt.is_signed):
        return (x if d == 1 else _op(Ops.NEG, x)) if div else zero
    if dt.is_signed and d == int(dt.min()):
        hit = _op(Ops.CMPEQ, x, strong_int(d, dt))
        return (UOp(Ops.WHERE, (hit, strong_int(1, dt), zero)) if div
                else UOp(Ops.WHERE, (hit, zero, x)))
    if d < 0:
        inner = _rewrite(UOp(u.op, (u.src[0], strong_int(-d, dt))), x, -d, r)
        if inner is None:
            inner = UOp(u.op, (x, strong_int(-d, dt)))
        return _op(Ops.NEG, inner) if div else inner
    if d == 0 or is_pow2(d):
        return None
    lo, hi = r if r is not None else (int(dt.min()), int(dt.max()))
    pl = plan(d, lo, hi, dt.bits, dt.is_signed)
    if pl is None:
        return None
    q = _quotient(x, pl, dt)
    return q if div else _op(Ops.SUB, x, _op(Ops.MUL, q, strong_int(d, dt)))


def _launch_nodes(order: list[UOp]) -> set[UOp]:
    """The nodes a SPECIAL's bound reads (a launch dimension the host evaluates)."""
    return set(toposort([n.src[0] for n in order if n.op is Ops.SPECIAL]))


def div_const(sink: UOp, desc: TargetDesc) -> UOp:
    """Every scalar CDIV/CMOD by a constant at a width in desc.mul_high rewritten (module
    docstring); sink itself when there is none or the target has no fast multiply."""
    if not desc.mul_high:
        return sink
    order = toposort([sink])
    todo = [u for u in order if u.op in (Ops.CDIV, Ops.CMOD) and not u.shape
            and u.dtype.is_int and not u.dtype.is_weak and u.dtype.bits in desc.mul_high
            and const_int(u.src[1]) is not None]
    if not todo:
        return sink
    skip = _launch_nodes(order)
    want = {u for u in todo if u not in skip}
    if not want:
        return sink
    rng = int_ranges([sink])
    memo: dict[UOp, UOp] = {}
    for u in order:
        src = tuple([memo[s] for s in u.src])
        new = u if src == u.src else u.replace(src=src)
        if u in want:
            d = int(const_int(u.src[1]))        # type: ignore[arg-type]
            new = _rewrite(u, src[0], d, rng.get(u.src[0])) or new
        memo[u] = new
    return keep_params(sink, memo[sink])
