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
  no sign correction): a 64-bit MUL of the extended dividend for 32 bits, MULHI for 64 bits;
  32 bits of a dtype whose vectors have MULHI (x86: int32/uint32) take MULHI too, so that slp
  and widen can pack the lanes. CMOD(x, d) = x - CDIV(x, d)·d.

A vector CDIV/CMOD by one constant in every lane is rewritten as a vector when the target has
each op used on its lanes (x86: MULHI of 4/8 int32/uint32 lanes, the high-half plans, as
vectors have no wider multiply); any other is rewritten lane by lane (a STACK of scalar
rewrites; devectorize then splits the rest as before). Zero divisors keep their CDIV/CMOD,
and so does a division that a launch dimension reads (the SPECIAL bounds the manifest
evaluates, docs/manifest.md). The pass runs after the first simplify, unroll and stage (which
still see and fold the CDIV/CMOD of index arithmetic) and before slp and widen (which pack
its MULHI/SHR/ADD lanes; a CDIV they met was never packed, not being vector-legal). The
second simplify then no longer folds a constant division that widen's lane substitution
makes trivial (such as (8i + k) // 8: powers of two are not rewritten, so those stay).
"""

from __future__ import annotations

from kcc.ir.consts import const_int, strong_int
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.ranges import Range, int_ranges
from kcc.ir.uop import UOp, toposort
from kcc.passes.simplify import keep_params
from kcc.passes.target import TargetDesc

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.ir.divmagic import DivPlan

_WIDE = {True: dtypes.int64, False: dtypes.uint64}


def _op(op: Ops, *src: UOp) -> UOp:
    return UOp(op, src)


def _k(v: int, dt: DType, like: UOp) -> UOp:
    """The constant v of dt, as a STACK of it when `like` is a vector."""
    c = strong_int(v, dt)
    return UOp(Ops.STACK, (c,) * like.shape[0]) if like.shape else c


def _quotient(x: UOp, pl: DivPlan, dt: DType) -> UOp:
    """trunc(x / d) by the plan (kcc/ir/divmagic.py names each form)."""
    def c(v: int, cdt: DType) -> UOp:
        return _k(v, cdt, x)
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


def _rewrite(op: Ops, x: UOp, d: int, r: Range, wide: bool = True) -> UOp | None:
    """The replacement of op (CDIV/CMOD) of x by d, or None to keep the division. x is a
    scalar, or a vector whose every op used here is legal (the caller checks)."""
    dt = x.dtype
    div = op is Ops.CDIV
    zero = _k(0, dt, x)
    if d == 1 or (d == -1 and dt.is_signed):
        return (x if d == 1 else _op(Ops.NEG, x)) if div else zero
    if dt.is_signed and d == int(dt.min()):
        hit = _op(Ops.CMPEQ, x, _k(d, dt, x))
        return (UOp(Ops.WHERE, (hit, _k(1, dt, x), zero)) if div
                else UOp(Ops.WHERE, (hit, zero, x)))
    if d < 0:
        inner = _rewrite(op, x, -d, r, wide) or UOp(op, (x, _k(-d, dt, x)))
        return _op(Ops.NEG, inner) if div else inner
    # (imported here: a kernel with no division by a constant, saxpy's, never needs it)
    from kcc.ir.divmagic import is_pow2, plan
    if d == 0 or is_pow2(d):
        return None
    lo, hi = r if r is not None else (int(dt.min()), int(dt.max()))
    pl = plan(d, lo, hi, dt.bits, dt.is_signed, wide=wide)
    if pl is None:
        return None
    q = _quotient(x, pl, dt)
    return q if div else _op(Ops.SUB, x, _op(Ops.MUL, q, _k(d, dt, x)))


# the ops a vector rewrite may build (each must be legal on the lanes, else lane by lane)
_VECTOR_OPS = (Ops.MULHI, Ops.SHR, Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.CMPEQ, Ops.WHERE)


def _divisors(y: UOp) -> list[int] | None:
    """The constant divisor of each lane (one for a scalar), or None if any is not constant."""
    if not y.shape:
        c = const_int(y)
        return None if c is None else [c]
    if y.op is not Ops.STACK:
        return None
    cs = [const_int(s) for s in y.src]
    return None if any(c is None for c in cs) else cs       # type: ignore[misc]


def _vector(u: UOp, x: UOp, ds: list[int], r: Range, desc: TargetDesc) -> UOp | None:
    """A vector CDIV/CMOD: whole when its divisor is uniform and the target has every op on
    its lanes (x86: MULHI of int32/uint32 lanes), else lane by lane as scalars."""
    n, dt = x.shape[0], x.dtype
    if len(set(ds)) == 1 and all(desc.alu_legal(n, dt, o) for o in _VECTOR_OPS):
        return _rewrite(u.op, x, ds[0], r, wide=False)
    out = []
    for k, d in enumerate(ds):
        lane = x.src[k] if x.op is Ops.STACK else UOp(Ops.INDEX, (x, UOp.const(k)))
        out.append(_rewrite(u.op, lane, d, r) or UOp(u.op, (lane, strong_int(d, dt))))
    return UOp(Ops.STACK, tuple(out))


def _launch_nodes(order: list[UOp]) -> set[UOp]:
    """The nodes a SPECIAL's bound reads (a launch dimension the host evaluates)."""
    return set(toposort([n.src[0] for n in order if n.op is Ops.SPECIAL]))


def div_const(sink: UOp, desc: TargetDesc) -> UOp:
    """Every scalar CDIV/CMOD by a constant at a width in desc.mul_high rewritten (module
    docstring); sink itself when there is none or the target has no fast multiply."""
    if not desc.mul_high:
        return sink
    order = toposort([sink])
    todo = [u for u in order if u.op in (Ops.CDIV, Ops.CMOD) and u.dtype.is_int
            and not u.dtype.is_weak and u.dtype.bits in desc.mul_high
            and _divisors(u.src[1]) is not None]
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
            ds = _divisors(u.src[1])
            assert ds is not None
            r = rng.get(u.src[0])
            # lanes that slp/widen may pack take the high-half plans (no wider vector multiply)
            wide = not any(desc.alu_legal(n, u.dtype, Ops.MULHI)
                           for n in desc.alu_widths.get(u.dtype, ()))
            got = (_vector(u, src[0], ds, r, desc) if u.shape
                   else _rewrite(u.op, src[0], ds[0], r, wide))
            new = got or new
        memo[u] = new
    return keep_params(sink, memo[sink])
