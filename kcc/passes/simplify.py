"""Symbolic simplification: constant folding, identities and index arithmetic, to a fixed point.

Constants: after weak-dtype lowering a strong constant is `CAST(CONST v) dtype` (or a bool
CONST); folding produces the same form with a canonical v (an int wrapped to the dtype, a float
rounded to the dtype). Folding follows the IR semantics exactly: integer ops wrap; CDIV/CMOD
truncate (never folded for a zero divisor or a wrapping INT_MIN / -1); float ops round once in
their dtype (numpy scalars of that dtype, never Python floats for float32/16); float16 computes
in float32 and rounds once. Not folded, as their results are an implementation's choice or
would need an exact fused multiply-add: EXP2, LOG2, SIN, float MULACC, bfloat16 arithmetic,
float→int casts out of range, signed right shifts of negative values, shift amounts outside
[0, bits).

Identities that hold for every input, NaN and -0.0 included: x*1 (all dtypes), x+0, x-0, x*0,
x/1, x%1, x|0, x^0, x&0 (integers only: for floats x+0 turns -0.0 into +0.0 and x*0 is not 0
for inf/nan), WHERE with a constant condition or equal arms (or an arm a WHERE of the same
condition), a LOAD/STORE gate its value range decides, CAST to the same dtype, exact CAST
chains, and index arithmetic on integers ((x+c1)+c2, (x*c1)*c2, (x+c1)*c2, x-c → x+(-c),
MULACC(c1, c2, x) → x + c1*c2, MULACC(x, 0, c) → c).
Constants move to the right of commutative ops.
"""

from __future__ import annotations

from kcc.ir.consts import const_int
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import ALU, COMMUTATIVE, LOW_BITS
from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite, rewrites_nothing
from kcc.ir.uop import UOp, reachable, toposort
from kcc.passes.target import TargetDesc

# constant folding (its own module; these names stay importable from here)
from kcc.passes.simplify_fold import (  # noqa: F401
    _NO_FOLD_FLOAT,
    _wrap,
    _to_float,
    convert,
    const_value,
    _strong_value,
    make_const,
    _int_op,
    _float_op,
    _NUMPY,
    _EXACT_DTYPES,
    _py_float_op,
    _numpy_float_op,
    fold_alu,
    fold_cast,
    _struct_format,
    fold_bitcast,
)

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def _is_const(u: UOp, v: int | bool) -> bool:
    cv = const_value(u)
    return cv is not None and not isinstance(cv[0], float) and cv[0] == v and \
        isinstance(cv[0], bool) == isinstance(v, bool)


def _is_float_one(u: UOp) -> bool:
    cv = const_value(u)
    return cv is not None and isinstance(cv[0], float) and cv[0] == 1.0


def const_right(x: UOp) -> UOp | None:
    """A commutative op with a constant on the left: move it to the right."""
    if x.op is Ops.MAX and x.dtype.is_float:
        return None   # MAX(nan, x) is nan but MAX(x, nan) is x
    if len(x.src) == 2 and const_value(x.src[0]) is not None and \
            const_value(x.src[1]) is None:
        return x.replace(src=(x.src[1], x.src[0]))
    return None


def int_identity(x: UOp) -> UOp | None:
    """x+0, x-0, x*1, x*0, x/1, x%1, x|0, x^0, x&0 on integers; bool x&true, x|false,
    x&false (false), x|true (true)."""
    a, b = x.src
    dt = x.dtype
    if dt.is_bool:
        if (x.op is Ops.AND and _is_const(b, True)) or \
                (x.op in (Ops.OR, Ops.XOR) and _is_const(b, False)):
            return a
        if (x.op is Ops.AND and _is_const(b, False)) or (x.op is Ops.OR and _is_const(b, True)):
            return b
        return None
    if x.op in (Ops.ADD, Ops.SUB, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR) and _is_const(b, 0):
        return a
    if x.op in (Ops.MUL, Ops.CDIV) and _is_const(b, 1):
        return a
    if x.op in (Ops.MUL, Ops.AND) and _is_const(b, 0):
        return b
    if x.op is Ops.CMOD and _is_const(b, 1):
        return make_const(0, dt)
    return None


def mulacc_int(x: UOp) -> UOp | None:
    """Integer MULACC(a, b, c) with constant factors, exact modulo 2^bits (never a float:
    0 * inf is nan): a zero factor → c (a loop copied for one iteration puts 0 where its
    counter was: kcc/passes/widen_lanes.py's single block, tinygrad's MULACC(counter,
    stride, base)); two constant factors → c + a*b (wrapped; c for a product of 0: unroll's
    copies of `i*k + j` at constant i, so their lanes read as offsets of c). A zero addend
    stays: MULACC(i, 4, 0) is lane 0 of the run MULACC(i, 4, k) (slp_index.lane_offset), and
    x86 selects it as the IMUL alone."""
    dt = x.dtype
    if dt is None or not dt.is_int or dt.is_weak or x.shape or len(x.src) != 3:
        return None
    a, b, c = x.src
    if _is_const(a, 0) or _is_const(b, 0):
        return c
    ca, cb = const_value(a), const_value(b)
    if ca is not None and cb is not None and const_value(c) is None:
        m = _wrap(int(ca[0]) * int(cb[0]), dt)
        return c if m == 0 else UOp(Ops.ADD, (c, make_const(m, dt)))
    return None


def float_mul_one(x: UOp) -> UOp | None:
    """x * 1.0 → x for floats (exact for every x, -0.0, inf and nan included)."""
    return x.src[0] if _is_float_one(x.src[1]) else None


def _compares_zero(c: UOp, op: Ops, a: UOp, zero_left: bool) -> bool:
    """Whether c is `a op 0` (`0 op a` with zero_left)."""
    if c.op is not op or len(c.src) != 2:
        return False
    v, z = (c.src[1], c.src[0]) if zero_left else c.src
    return v is a and _is_const(z, 0)


def sign_mul(x: UOp) -> UOp | None:
    """a * sign(a) on signed integers, as tinygrad writes abs (i32_abs E_333:
    `a * (a != 0 ? (a < 0 ? -1 : 1) : 0)`):
    a * WHERE(a != 0, y, 0) → a * y (at a == 0 both products are 0), and
    a * WHERE(a < 0, -1, 1) or a * WHERE(0 < a, 1, -1) → MAX(a, NEG(a)) (exact modulo
    2^bits: INT_MIN * -1 and NEG(INT_MIN) are INT_MIN, and MAX picks it), which x86's widened
    loop runs as VPSUBD + VPMAXSD where the selects took two compares, a blend, a masked move
    and VPMULLD. Scalar graphs only (the constants are scalars)."""
    dt = x.dtype
    if dt is None or not dt.is_int or dt.is_weak or x.shape:
        return None
    for a, w in (x.src, x.src[::-1]):
        if w.op is not Ops.WHERE:
            continue
        c, t, f = w.src
        if (_compares_zero(c, Ops.CMPNE, a, False) or _compares_zero(c, Ops.CMPNE, a, True)) \
                and _is_const(f, 0):
            return x.replace(src=(a, t))
        if not dt.is_signed:
            continue
        if (_compares_zero(c, Ops.CMPLT, a, False) and _is_const(t, -1) and _is_const(f, 1)) \
                or (_compares_zero(c, Ops.CMPLT, a, True) and _is_const(t, 1)
                    and _is_const(f, -1)):
            return UOp(Ops.MAX, (a, UOp(Ops.NEG, (a,))))
    return None


def idempotent_bitwise(x: UOp) -> UOp | None:
    """x & x → x, x | x → x."""
    return x.src[0] if x.src[0] is x.src[1] else None


def where_const_cond(x: UOp) -> UOp | None:
    """WHERE(true, a, b) → a; WHERE(false, a, b) → b; WHERE(c, a, a) → a; and an arm that is a
    WHERE of the same condition takes that WHERE's arm for the same side:
    WHERE(c, a, WHERE(c, b, y)) → WHERE(c, a, y), WHERE(c, WHERE(c, a, b), y) → WHERE(c, a, y)
    (the inner one is only read where it picks that arm: tinygrad's padded cummax writes
    `c ? -inf : (c ? 0.0 : v)` per element)."""
    c, t, f = x.src
    if t is f:
        return t
    if f.op is Ops.WHERE and f.src[0] is c and f.shape == x.shape:
        return x.replace(src=(c, t, f.src[2]))
    if t.op is Ops.WHERE and t.src[0] is c and t.shape == x.shape:
        return x.replace(src=(c, t.src[1], f))
    cv = const_value(x.src[0])
    if cv is None or x.shape != ():
        return None
    return x.src[1] if cv[0] else x.src[2]


def cast_noop(x: UOp) -> UOp | None:
    """CAST to the dtype the value already has → the value."""
    s = x.src[0]
    return s if s.dtype == x.arg and s.kind == "value" else None


def _exact(d0: DType, d1: DType) -> bool:
    """Whether dtype d1 holds every value of d0 exactly."""
    if d0.is_bool:
        return True
    if d0.is_int and d1.is_int:
        return d1.min() <= d0.min() and d0.max() <= d1.max()
    if d0.is_float and d1.is_float:
        mant = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
        rng = {"float16": 5, "bfloat16": 8, "float32": 8, "float64": 11}
        return mant[d1.name] >= mant[d0.name] and rng[d1.name] >= rng[d0.name]
    if d0.is_int and d1.is_float:
        mant = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[d1.name]
        return d0.bits - (1 if d0.kind == "int" else 0) <= mant
    return False


def cast_chain(x: UOp, y: UOp) -> UOp | None:
    """CAST(CAST(v, d1), d2) → CAST(v, d2) when d1 holds every value of v's dtype exactly."""
    v = y.src[0]
    d0, d1, d2 = v.dtype, y.arg, x.arg
    if d0 is None or d0.is_weak or v.kind != "value" or not _exact(d0, d1):
        return None
    if d0.is_int and d1.is_float and d2.is_int and d2 != d0:
        return None   # float→int is not integer wrapping
    return v if d2 == d0 else UOp(Ops.CAST, (v,), d2)


def zext_chain(x: UOp, y: UOp) -> UOp | None:
    """CAST(CAST(v: d0, d1), d0) with d1 an unsigned integer narrower than the integer d0 →
    v AND (2^bits(d1) - 1): narrowing keeps v's low bits (docs/semantics.md, CAST), a value in
    [0, 2^bits(d1)) that d0 holds exactly. (bfloat16 lowered to bit operations truncates a
    uint32 to uint16 and widens it back; one AND is a lane op of the uint32 vector around it.)"""
    v = y.src[0]
    d0, d1 = v.dtype, y.arg
    if d0 is None or d0.is_weak or v.kind != "value" or x.arg != d0 or not d0.is_int \
            or not d1.is_int or d1.is_signed or d1.itemsize >= d0.itemsize:
        return None
    mask = make_const((1 << d1.bits) - 1, d0)
    return UOp(Ops.AND, (v, mask if not v.shape else UOp(Ops.STACK, (mask,) * v.shape[0])))


# the most nodes narrow_result reads under one CAST (tinygrad's int8 matmul: ~40); past it the
# CAST is left alone, so every CAST costs at most this and the walk's depth stays bounded
NARROW_MAX = 256


def narrow_result(x: UOp) -> UOp | None:
    """CAST(t: D → N), N an integer narrower than the integer D, of a tree t of wrapping
    ADD/SUB/MUL/MULACC/NEG/AND/OR/XOR and integer CASTs → the same tree computed in D. Bit i of
    such an op's result depends only on bits 0..i of its operands, and an integer CAST keeps
    the low min(bits) bits (docs/semantics.md, CAST int → int), so the low bits(N) bits of t
    equal those of the tree with every op in D and every CAST of at least bits(N) bits dropped
    — the CAST to N reads only those. Fires only where t computes in another dtype than D
    (tinygrad's int8 matmul: int8 products of int32 loads truncated, sign-extended and summed
    in int32) and the rewrite adds no CAST: the narrow lanes, their casts and byte multiplies
    go, the D lanes were there already."""
    t = x.src[0]
    n_dt, d_dt = x.arg, t.dtype
    if t.op not in LOW_BITS or x.shape or d_dt is None or d_dt.is_weak \
            or not d_dt.is_int or not n_dt.is_int or n_dt.bits >= d_dt.bits:
        return None
    k = n_dt.bits
    memo: dict[UOp, UOp | None] = {}
    narrow = [False]

    def low(n: UOp) -> UOp | None:      # a node of dtype D with n's low k bits, or None
        if n in memo:
            return memo[n]
        if len(memo) >= NARROW_MAX:
            return None                 # a bounded walk per CAST: linear, and no deep recursion
        memo[n] = None
        r: UOp | None = None
        dt = n.dtype
        cv = const_value(n)
        if n.shape or dt is None or dt.is_weak or not dt.is_int or dt.bits < k:
            r = None
        elif cv is not None:
            r = make_const(_wrap(int(cv[0]), d_dt), d_dt)
        elif n.op is Ops.CAST and n.src[0].dtype is not None and n.src[0].dtype.is_int \
                and not n.src[0].dtype.is_weak and n.src[0].dtype.bits >= k:
            r = low(n.src[0])
        elif n.op in LOW_BITS:
            srcs = [low(s) for s in n.src]
            if all(s is not None for s in srcs):
                if dt != d_dt:
                    narrow[0] = True
                r = n if dt == d_dt and all(a is b for a, b in zip(srcs, n.src)) \
                    else UOp(n.op, tuple(srcs))
        elif dt == d_dt:
            r = n
        memo[n] = r
        return r

    new = low(t)
    if new is None or not narrow[0] or new is t:
        return None
    return UOp(Ops.CAST, (new,), n_dt)


def shift_back(x: UOp) -> UOp | None:
    """SHL(SHR(v, c), c) → v AND (-1 << c), and SHL(AND(SHR(v, c), m), c) → v AND (m << c),
    on unsigned integers (mod 2^bits): bit i of the result is bit i of v where the mask has
    it (SHR moves bit i + c to i, SHL moves it back, the bits it shifted out are zero). One
    AND instead of three ops (bfloat16's rounding keeps the top 16 bits of a uint32 so)."""
    v, k = x.src
    dt = x.dtype
    kc = const_value(k)
    if not dt.is_int or dt.is_signed or kc is None or x.shape:
        return None
    c = int(kc[0])
    full = (1 << dt.bits) - 1
    m = full
    if v.op is Ops.AND and const_value(v.src[1]) is not None:
        m, v = int(const_value(v.src[1])[0]) & full, v.src[0]
    if v.op is not Ops.SHR or not 0 < c < dt.bits:
        return None
    kc2 = const_value(v.src[1])
    if kc2 is None or int(kc2[0]) != c or v.dtype != dt:
        return None
    return UOp(Ops.AND, (v.src[0], make_const((m << c) & full, dt)))


def sub_const(x: UOp, a: UOp, c: UOp) -> UOp | None:
    """x - c → x + (-c) on integers (wrapping, so exact), so additions chain."""
    cv = const_value(c)
    if cv is None or not x.dtype.is_int:
        return None
    return UOp(Ops.ADD, (a, make_const(_wrap(-int(cv[0]), x.dtype), x.dtype)))


def assoc_const(x: UOp, y: UOp, c2: UOp) -> UOp | None:
    """(a op c1) op c2 → a op (c1 op c2) for integer ADD/MUL; (a+c1)*c2 → a*c2 + c1*c2."""
    if not x.dtype.is_int or y.op not in (Ops.ADD, Ops.MUL) or len(y.src) != 2:
        return None
    c1v, c2v = const_value(y.src[1]), const_value(c2)
    if c1v is None or c2v is None:
        return None
    dt = x.dtype
    c1, cc2 = int(c1v[0]), int(c2v[0])
    a = y.src[0]
    if y.op is x.op:
        r = c1 + cc2 if x.op is Ops.ADD else c1 * cc2
        return UOp(x.op, (a, make_const(_wrap(r, dt), dt)))
    if y.op is Ops.ADD and x.op is Ops.MUL:
        return UOp(Ops.ADD, (UOp(Ops.MUL, (a, c2)), make_const(_wrap(c1 * cc2, dt), dt)))
    return None


def stack_of_lanes(x: UOp) -> UOp | None:
    """STACK(INDEX(v, 0), …, INDEX(v, n-1)) of an n-lane vector v → v."""
    s0 = x.src[0]
    if s0.op is not Ops.INDEX or s0.src[0].kind != "value":
        return None
    v = s0.src[0]
    if v.shape != (len(x.src),):
        return None
    for i, s in enumerate(x.src):
        if s.op is not Ops.INDEX or s.src[0] is not v or const_int(s.src[1]) != i:
            return None
    return v


def lane_of_stack(x: UOp, v: UOp, i: UOp) -> UOp | None:
    """INDEX(STACK(x0 … xn-1), i) → xi."""
    k = const_int(i)
    if v.op is not Ops.STACK or k is None:
        return None
    return v.src[k]


def bool_store(x: UOp) -> UOp | None:
    """STORE(bool place, v: uint8) → STORE(place, CAST(v) bool): a byte stored into a bool is
    the bool v != 0 (GPU-style lowerings store CAST(cmp) uint8); CAST(CAST(cmp) uint8) bool
    then folds to cmp."""
    place, v = x.src[0], x.src[1]
    if not (place.dtype.is_bool and v.dtype == dtypes.uint8):
        return None
    return x.replace(src=(place, UOp(Ops.CAST, (v,), dtypes.bool)) + x.src[2:])


def known_gate(x: UOp) -> UOp | None:
    """A LOAD or STORE whose gate is known in every lane → ungated (true); a LOAD whose gate
    is false in every lane → its alt (docs/semantics.md, LOAD: nothing is read). Known: a
    lane gate that is one constant in every lane (a STACK: unroll_tiny's copies fold
    tinygrad's counter gates to such constants, a padded load's inner blocks, the masked
    load slp_gated.py makes of triu's last row), or the scalar gate of a vector LOAD or of a
    STORE whose value range proves it (interpolate's clamped indices: kcc/ir/range_enum.py).
    A scalar load keeps its gate here, constant or not: it may be one lane of a run of gated
    loads slp packs into one load gated lane by lane (tril's x[4j] … x[4j+3], lane 0's gate
    true in the first block; triu's rows at constant lane masks), which the ungated loads
    and alts would not be (lane inserts); legalize_gates drops what is left after slp."""
    if len(x.src) != 3:
        return None
    g = x.src[-1]
    if g.op is Ops.STACK:
        v = gate_constant(g)
        if v is None:
            return None
        r: tuple[int, int] | None = (int(v), int(v))
    else:
        if x.op is Ops.LOAD and x.src[0].op is not Ops.SHRINK:
            return None
        from kcc.ir.ranges import vmin_vmax
        r = vmin_vmax(g)
    if r == (1, 1) or r == (0, 0) and x.op is Ops.LOAD:
        return gated_as(x, bool(r[0]))
    return None


def gate_constant(g: UOp) -> bool | None:
    """The value of gate g when it is one bool constant in every lane (a constant, or a STACK
    of one constant), else None."""
    lanes = g.src if g.op is Ops.STACK else (g,)
    first = const_value(lanes[0])
    if first is None or not first[1].is_bool or any(const_value(s) != first
                                                    for s in lanes[1:]):
        return None
    return bool(first[0])


def gated_as(x: UOp, value: bool) -> UOp:
    """Gated LOAD or STORE x with its gate known to be value in every lane: true → x
    ungated; false (a LOAD only) → its alternative, nothing read (docs/semantics.md, LOAD)."""
    if value:
        return x.replace(src=x.src[:1] if x.op is Ops.LOAD else x.src[:2])
    assert x.op is Ops.LOAD, "a STORE whose gate is false stores nothing: not a value"
    return x.src[1]


def bool_bitcast(x: UOp) -> UOp | None:
    """BITCAST between bool and a byte (int8/uint8) → CAST: a bool is 0 or 1
    (docs/semantics.md), so a byte read as a bool is ``byte != 0``, as CAST says, and a bool
    read as a byte is its 0 or 1. Targets then never see a bool holding another byte (which
    x86 stored and computed on as the raw byte while AMD made it 0/1)."""
    if x.arg.is_bool == x.src[0].dtype.is_bool:
        return None
    return UOp(Ops.CAST, x.src, x.arg)


_INT_ID_OPS = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.CDIV, Ops.CMOD, Ops.AND, Ops.OR, Ops.XOR,
               Ops.SHL, Ops.SHR)

class _Simplifier(PatternMatcher):
    """SIMPLIFY's matcher: the rules, after a test that answers "no rule fires" for the nodes
    no rule can change (most of a kernel's: an ALU op of two non-constants, a CAST of a
    computed value to another dtype, an INDEX of a non-STACK), without trying each rule
    (3 µs a node, two thirds of simplify on tinygrad's kernels). Each test is the
    conjunction of the early exits of that op's rules (see _inert)."""

    def rewrite(self, n: UOp, ctx: Any = None) -> UOp | None:
        kind = _INERT_KIND.get(n.op)
        if kind is not None and _inert(n, kind):
            return None
        return PatternMatcher.rewrite(self, n, ctx)


# per op, which of _inert's tests: 1 fold_alu alone (the first src decides), 2 a binary op
# whose rules all need a constant src (fold_alu, const_right, assoc_const, int_identity,
# float_mul_one, sub_const, shift_back) or, for MUL, a WHERE src (sign_mul), 3 AND/OR
# (those and idempotent_bitwise), 4 WHERE,
# 5 CAST, 6 INDEX, 7 MULACC (fold_alu, mulacc_int: a constant factor of an integer)
_INERT_KIND: dict[Ops, int] = {
    **{op: 1 for op in (Ops.THREEFRY, Ops.MULHI, Ops.NEG, Ops.EXP2, Ops.LOG2,
                        Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC, Ops.FDIV)},
    Ops.MULACC: 7,
    **{op: 2 for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.CDIV, Ops.CMOD, Ops.XOR, Ops.SHL,
                        Ops.SHR, Ops.MAX, Ops.CMPNE, Ops.CMPEQ, Ops.CMPLT)},
    Ops.AND: 3, Ops.OR: 3, Ops.WHERE: 4, Ops.CAST: 5, Ops.INDEX: 6}


def _inert(x: UOp, kind: int) -> bool:
    """Whether every SIMPLIFY rule of x's op returns None for x (True only when each one's
    first test fails; False sends x to the rules)."""
    src = x.src
    if kind <= 3:
        if not src or const_value(src[0]) is not None:
            return False            # fold_alu, const_right read a constant first src
        if kind == 1:
            return True             # fold_alu stops at its first non-constant src
        # every other rule of these ops needs src[1] constant; idempotent_bitwise a is b
        if len(src) != 2 or const_value(src[1]) is not None:
            return False
        if kind == 3:
            return src[0] is not src[1]
        # sign_mul: a MUL of a WHERE
        return x.op is not Ops.MUL or (src[0].op is not Ops.WHERE
                                       and src[1].op is not Ops.WHERE)
    if kind == 4:                   # where_const_cond (fold_alu skips a WHERE)
        if len(src) != 3:
            return False
        c, t, f = src
        return t is not f and f.op is not Ops.WHERE and t.op is not Ops.WHERE \
            and const_value(c) is None
    if kind == 5:                   # fold_cast, cast_chain, zext_chain, cast_noop, narrow_result
        if len(src) != 1:
            return False
        c = src[0]
        return c.op is not Ops.CONST and c.op is not Ops.CAST and \
            not (c.dtype == x.arg and c.kind == "value") and c.op not in LOW_BITS
    if kind == 7:                   # fold_alu reads src[0]; mulacc_int a factor of an int
        if len(src) != 3 or const_value(src[0]) is not None:
            return False
        return not x.dtype.is_int or const_value(src[1]) is None
    return src[0].op is not Ops.STACK   # lane_of_stack


SIMPLIFY = _Simplifier([
    (UPat(Ops.CAST, src=(UPat.var("c"),), name="x"), fold_cast),
    (UPat(Ops.BITCAST, src=(UPat.var("c"),), name="x"), fold_bitcast),
    (UPat(ALU, name="x"), fold_alu),
    (UPat(Ops.CAST, src=(UPat(Ops.CAST, name="y"),), name="x"), cast_chain),
    (UPat(Ops.CAST, src=(UPat(Ops.CAST, name="y"),), name="x"), zext_chain),
    (UPat(Ops.CAST, name="x"), cast_noop),
    (UPat(Ops.CAST, name="x"), narrow_result),
    (UPat(Ops.WHERE, name="x"), where_const_cond),
    (UPat(COMMUTATIVE, name="x"), const_right),
    (UPat(Ops.SUB, src=(UPat.var("a"), UPat.var("c")), name="x"), sub_const),
    (UPat(Ops.SHL, name="x"), shift_back),
    (UPat((Ops.ADD, Ops.MUL), src=(UPat(name="y"), UPat.var("c2")), name="x"), assoc_const),
    (UPat(_INT_ID_OPS, src=(UPat.var(), UPat.var()), name="x"), int_identity),
    (UPat(Ops.MUL, src=(UPat.var(), UPat.var()), name="x"), float_mul_one),
    (UPat(Ops.MUL, src=(UPat.var(), UPat.var()), name="x"), sign_mul),
    (UPat(Ops.MULACC, name="x"), mulacc_int),
    (UPat((Ops.AND, Ops.OR), name="x"), idempotent_bitwise),
    (UPat(Ops.STACK, name="x"), stack_of_lanes),
    (UPat(Ops.INDEX, src=(UPat.var("v"), UPat.var("i")), name="x"), lane_of_stack),
    (UPat(Ops.STORE, name="x"), bool_store),
    (UPat((Ops.LOAD, Ops.STORE), name="x"), known_gate),
    (UPat(Ops.BITCAST, name="x"), bool_bitcast),
])


def simplify(sink: UOp, target: TargetDesc | None = None) -> UOp:
    """Rewrite the graph with SIMPLIFY to a fixed point (idempotent)."""
    done: dict[UOp, UOp] = {}
    # (8 of the 11 tinygrad captures are already simple; where a rule fires, the nodes the
    # scan cleared before it are in done and not walked again)
    if rewrites_nothing(sink, SIMPLIFY, None, done):
        return sink
    after = graph_rewrite(sink, SIMPLIFY, memo=done)
    return keep_params(sink, keep_loops(sink, after, done))


def keep_loops(before: UOp, after: UOp, done: dict[UOp, UOp]) -> UOp:
    """`after` with every LOAD still inside the loops it was in before the rewrite.

    A node is placed by the RANGEs it depends on (docs/semantics.md, "Placement"), so a fold
    that drops a counter from a LOAD's address (`out[i*0]` → `out[0]`, `i < n` → true in a
    gate) would hoist the load out of its loop, ahead of the stores of earlier iterations: a
    read-modify-write of one element would read the value before the loop every time. Such a
    LOAD's buffer gets the lost RANGEs as AFTER deps (order only), which keeps it in place."""
    if after is before:
        return after
    order = before.toposort()
    load = Ops.LOAD                 # (bound once: a local is read faster than a class attribute)
    loads = [n for n in order if n.op is load and done.get(n, n) is not n]
    if not loads:
        return after
    from kcc.passes.linearize import range_sets
    had = range_sets(order)
    rng = Ops.RANGE
    ranges = [n for n in order if n.op is rng]
    has = range_sets(after.toposort())
    fix: dict[UOp, UOp] = {}
    for n in loads:
        x = done[n]
        if x.op is not Ops.LOAD or x not in has:
            continue
        deps = [done.get(r, r) for r in ranges if r in had[n]]
        deps = [r for r in deps if r not in has[x]]
        if deps:
            place = x.src[0]
            buf = UOp(Ops.AFTER, (place.src[0], *deps))
            fix[x] = x.replace(src=(place.replace(src=(buf, *place.src[1:])), *x.src[1:]))
    return graph_rewrite(after, _KEEP, fix) if fix else after


def _kept(ctx: dict[UOp, UOp], x: UOp) -> UOp | None:
    """A LOAD that lost a loop, with its loops as AFTER deps of its buffer."""
    return ctx.get(x)


_KEEP = PatternMatcher([(UPat(Ops.LOAD, name="x"), _kept)])


def keep_params(before: UOp, after: UOp) -> UOp:
    """`after` with every PARAM of `before` that a rewrite dropped (x*0 → 0 can drop the last
    use of a scalar argument) appended to its SINK: an argument keeps its slot, so the slots
    still run 0..n-1 (the verifier's rule) and the kernel's signature does not change."""
    if after is before:             # a pass that changed nothing (no walk: compile time)
        return after
    # (toposort, not reachable: its order is kept on `after`, where the verifier after the
    # pass and the next pass read it instead of walking the graph again)
    now = set(toposort([after]))
    try:
        # before's own order, kept on it where a pass sorted it (most do, first): its PARAMs
        # not in the new graph, one test a node, not a walk of every node the pass dropped
        # (slp drops most of a jammed tile's ~4,800 scalar nodes: ~1 ms on matmul at v4)
        olds: Iterable[UOp] = before._order
    except AttributeError:
        # a PARAM under a node the new graph still has is still there: walk only what changed
        olds = reachable([before], now)
    lost = sorted((u for u in olds if u.op is Ops.PARAM and u not in now),
                  key=lambda u: u.arg.slot)
    return after.replace(src=after.src + tuple(lost)) if lost else after
