"""Hypothesis strategies that build random VALID kernel graphs with the UOp constructors.

`kernels()` draws one kernel of one of three shapes:

- elementwise: 1–3 nested loops with constant bounds; random expressions over all dtypes and
  ops, loads (plain, reversed, gated out of bounds, gated by data), casts, bitcasts, scalar
  PARAMs; one to three (optionally gated) stores at the loop's linear index;
- reduce: outer loops with a REG accumulator initialised inside them, updated in an inner loop
  and read after it closes (the shape of tests/data/kernels/shared/colmax_reg_acc.uop);
- vector: float32 ×4/×8 or float64 ×2/×4 SHRINK loads and stores, vector ALU, lanes taken
  apart with INDEX and rebuilt with STACK.

- local_exchange (GPU only, `gpu_kernels()`): a LOCAL buffer written per thread, a BARRIER that
  lists those stores as its srcs, a read of another thread's element after it; sometimes a REG
  BUFFER with the LOCAL one's slot 0 beside it.

Where the format asks for a constant (RANGE and SPECIAL bounds, SHRINK lengths, lane indices,
a REG accumulator's index) the strategies draw a weak literal or a strong constant as tinygrad
writes one: `CAST(v) dtype`, a CAST whose literal wraps to v, or a CAST chain (`int_const`).
Elementwise kernels sometimes run their outer loop as SPECIAL gidx0 workers.

Every graph is valid by construction and keeps away from what docs/semantics.md leaves
unspecified: CDIV/CMOD divisors are guarded (`WHERE(b == 0, 1, b)`, and INT_MIN / -1), shift
amounts are masked with `bits - 1`, no access is out of bounds under a true gate, and a float
value whose NaN payload is unspecified (the result of arithmetic) is never BITCAST to an
integer (`Val.exact`). EXP2/LOG2/SIN are left out (they are compared within an ulp bound
elsewhere, tests/targets/x86/test_x86_e2e.py). Floats are compared NaN-as-NaN by the harness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from kcc.ir import AddrSpace, AxisType, KernelInfo, Ops, ParamArg, UOp, dtypes
from kcc.ir import numerics as nm
from kcc.ir.dtype import STRONG, DType

FLOATS = tuple(d for d in STRONG if d.is_float)
INTS = tuple(d for d in STRONG if d.is_int)
HALF = (dtypes.float16, dtypes.bfloat16)
CMP = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
# The ops drawn per operand kind (the operand dtype's kind); CAST and BITCAST for every kind.
FLOAT_OPS = (Ops.NEG, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC, Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV,
             Ops.MAX, Ops.MULACC, *CMP, Ops.WHERE, Ops.CAST, Ops.BITCAST)
INT_OPS = (Ops.NEG, Ops.ADD, Ops.SUB, Ops.MUL, Ops.CDIV, Ops.CMOD, Ops.MAX, Ops.AND, Ops.OR,
           Ops.XOR, Ops.SHL, Ops.SHR, Ops.MULACC, *CMP, Ops.WHERE, Ops.CAST, Ops.BITCAST)
BOOL_OPS = (Ops.AND, Ops.OR, Ops.XOR, Ops.MAX, *CMP, Ops.WHERE, Ops.CAST, Ops.BITCAST)

# Literal values worth trying per dtype kind (the edges of the semantics).
FLOAT_LITERALS = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, float("inf"), float("-inf"),
                  float("nan"), 1e-40, -5e-324, 65504.0, 1e10, -3.4e38, 2147483648.0)


# The dtype of a kernel's loop bounds (None: weak literals), and of other integer constants.
INDEX_DTYPES = (None, dtypes.int32, dtypes.int64, dtypes.int16)
CONST_DTYPES = (None, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint32, dtypes.int16)


def int_const(draw: st.DrawFn, v: int, dt: DType | None | str = "any") -> UOp:
    """The integer constant v as producers write it, where the format asks for a constant: a
    weak literal (dt None), or a strong constant of dt ("any": a drawn dtype) spelled
    CAST(v) dt, a CAST whose literal wraps to v (CAST(v + 2**bits) dt), or a CAST chain
    CAST(CAST(v) int64) dt."""
    if dt == "any":
        dt = draw(st.sampled_from(CONST_DTYPES))
    if dt is None:
        return UOp.const(v)
    how = draw(st.integers(0, 2))
    if how == 1 and dt.bits < 64:
        return UOp(Ops.CAST, (UOp.const(v + (1 << dt.bits)),), dt)
    if how == 2:
        return UOp(Ops.CAST, (UOp(Ops.CAST, (UOp.const(v),), dtypes.int64),), dt)
    return UOp(Ops.CAST, (UOp.const(v),), dt)


@dataclass(frozen=True)
class Val:
    """A value in a builder's pool; `exact` means its bits are fully specified (a float that
    may be a NaN with an unspecified payload is not exact)."""

    u: UOp
    exact: bool = True

    @property
    def dt(self) -> DType:
        return self.u.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.u.shape


def _int_literals(dt: DType) -> tuple[int, ...]:
    lo, hi = dt.min(), dt.max()
    vals = {0, 1, 2, 7, dt.bits - 1, hi, hi - 1, lo, lo + 1, hi // 2 + 1}
    if dt.kind == "int":
        vals |= {-1, -2}
    return tuple(sorted(vals))


def _fits(v: int | float, dt: DType) -> bool:
    """Whether a literal committed to float dtype dt stays finite (the .uop parser refuses a
    finite literal that rounds to infinity)."""
    if isinstance(v, float) and not math.isfinite(v):
        return True
    src = dtypes.weakint if isinstance(v, int) else dtypes.weakfloat
    with np.errstate(over="ignore"):
        c = nm.cast(nm.const_array(v, src), src, dt)
        return bool(np.isfinite(nm.to_compute(c, dt)))


@dataclass
class _Kernel:
    """The PARAMs made so far (slots are given in creation order, so they run 0..n-1)."""

    draw: st.DrawFn
    params: list[UOp] = field(default_factory=list)
    # casts the target under test refuses with a clear error (routed through float32 instead)
    avoid: frozenset[tuple[DType, DType]] = frozenset()

    def param(self, dt: DType, size: int | None) -> UOp:
        slot = len(self.params)
        arg = (ParamArg(slot, dt, size) if size is not None
               else ParamArg(slot, dt, addrspace=AddrSpace.ALU))
        p = UOp(Ops.PARAM, (), arg)
        self.params.append(p)
        return p


class Scope:
    """One loop nest body: `lin` is the linear element index (weakint) over `n` elements, `w`
    the vector width of SHRINK accesses (1: scalar kernel). Builds values into `pool`."""

    def __init__(self, k: _Kernel, ranges: list[UOp], lin: UOp, n: int, w: int = 1,
                 pool: list[Val] | None = None, strong: bool = False):
        self.k, self.draw = k, k.draw
        self.strong = strong          # draw strong constants where the format asks for one
        self.ranges, self.lin, self.n, self.w = ranges, lin, n, w
        self.pool: list[Val] = list(pool or [])
        self.inputs: dict[tuple[DType, int], UOp] = {}

    # -- drawing helpers ---------------------------------------------------------------------
    def int_const(self, v: int) -> UOp:
        """v where the format asks for a constant (a SHRINK length, a lane index)."""
        return int_const(self.draw, v) if self.strong else UOp.const(v)

    def pick(self, xs):
        return self.draw(st.sampled_from(xs))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 99)) < p * 100

    def shape(self) -> tuple[int, ...]:
        """A vector shape most of the time in a vector scope, else a scalar."""
        return (self.w,) if self.w > 1 and self.chance(0.7) else ()

    # -- leaves ------------------------------------------------------------------------------
    def literal(self, dt: DType) -> int | float | bool:
        """A Python literal that is a valid weak operand beside dt."""
        if dt.is_bool:
            return self.pick((False, True))
        if dt.is_float:
            pool = FLOAT_LITERALS if self.chance(0.7) else _int_literals(dtypes.int64)
            return self.pick([v for v in pool if _fits(v, dt)])
        return self.pick(_int_literals(dt))

    def weak(self, dt: DType, shape: tuple[int, ...]) -> Val:
        """A weak literal (or a STACK of them) of the given shape, beside a dt operand."""
        lits = [UOp.const(self.literal(dt)) for _ in range(shape[0] if shape else 1)]
        if shape:
            # lanes of one STACK share a weak dtype: all int or all float literals
            lits = [c if type(c.arg) is type(lits[0].arg) else lits[0] for c in lits]
            return Val(UOp(Ops.STACK, tuple(lits)))
        return Val(lits[0], not (isinstance(lits[0].arg, float) and lits[0].arg != lits[0].arg))

    def strong_const(self, dt: DType) -> Val:
        """A strong constant: always the CAST(CONST v, dtype) form (bool is its own CONST)."""
        v = self.literal(dt)
        if dt.is_bool:
            return Val(UOp.const(v))
        nan = isinstance(v, float) and v != v
        return Val(UOp(Ops.CAST, (UOp.const(v),), dt), not nan)

    def range_value(self, dt: DType) -> Val:
        """A loop counter (or the linear index) cast to dt."""
        r = self.pick([*self.ranges, self.lin])
        return Val(UOp(Ops.CAST, (r,), dt))

    def bool_scalar(self) -> UOp:
        """A scalar bool from the pool, or a compare of the linear index."""
        bools = [v.u for v in self.pool if v.dt.is_bool and v.shape == ()]
        if bools and self.chance(0.5):
            return self.pick(bools)
        return UOp(Ops.CMPLT, (self.lin, UOp.const(self.draw(st.integers(0, self.n)))))

    def buffer(self, dt: DType, size: int) -> UOp:
        key = (dt, size)
        if key not in self.inputs or self.chance(0.3):
            self.inputs[key] = self.k.param(dt, size)
        return self.inputs[key]

    def load(self, dt: DType, shape: tuple[int, ...], depth: int) -> Val:
        """A load from an input buffer: plain, reversed, gated past the edges, or data-gated."""
        if shape:
            w = shape[0]
            buf = self.buffer(dt, self.n * w)
            place = UOp(Ops.SHRINK, (buf, UOp(Ops.MUL, (self.lin, UOp.const(w))),
                                     self.int_const(w)))
            if depth < 2 and self.chance(0.3):
                alt = self.value(dt, shape, depth + 1)
                return Val(UOp(Ops.LOAD, (place, alt.u, self.bool_scalar())), alt.exact)
            return Val(UOp(Ops.LOAD, (place,)))
        how = self.draw(st.integers(0, 4 if depth < 2 else 1))
        if how == 0 and self.chance(0.3):
            # a scalar argument (float16/bfloat16 ones pass their bit patterns)
            p = self.k.param(dt, None)
            return Val(p)
        buf = self.buffer(dt, self.n)
        if how == 1:
            idx = UOp(Ops.SUB, (UOp.const(self.n - 1), self.lin))
            return Val(UOp(Ops.LOAD, (UOp(Ops.INDEX, (buf, idx)),)))
        if how in (2, 3):
            alt = self.value(dt, (), depth + 1)
            if how == 2:                        # shifted: out of bounds where the gate is false
                off = self.draw(st.integers(-3, 3))
                idx = UOp(Ops.ADD, (self.lin, UOp.const(off)))
                gate = UOp(Ops.AND, (UOp(Ops.CMPLT, (UOp.const(-1), idx)),
                                     UOp(Ops.CMPLT, (idx, UOp.const(self.n)))))
            else:
                idx, gate = self.lin, self.bool_scalar()
            return Val(UOp(Ops.LOAD, (UOp(Ops.INDEX, (buf, idx)), alt.u, gate)), alt.exact)
        return Val(UOp(Ops.LOAD, (UOp(Ops.INDEX, (buf, self.lin)),)))

    # -- operands ----------------------------------------------------------------------------
    def value(self, dt: DType, shape: tuple[int, ...], depth: int = 0) -> Val:
        """A value of dt and shape: from the pool, a load, a constant, a STACK or a CAST."""
        cands = [v for v in self.pool if v.dt == dt and v.shape == shape]
        c = self.draw(st.integers(0, 9))
        if cands and c < 5:
            return self.pick(cands)
        if depth >= 2 or c < 7:
            if not shape and c == 6:
                return self.strong_const(dt) if self.chance(0.5) else self.range_value(dt)
            return self.load(dt, shape, depth)
        if shape and c == 7:
            lanes = [self.value(dt, (), depth + 1) for _ in range(shape[0])]
            return Val(UOp(Ops.STACK, tuple(v.u for v in lanes)), all(v.exact for v in lanes))
        if not shape and c == 7:
            vecs = [v for v in self.pool if v.dt == dt and v.shape]
            if vecs:
                v = self.pick(vecs)
                lane = self.draw(st.integers(0, v.shape[0] - 1))
                return Val(UOp(Ops.INDEX, (v.u, self.int_const(lane))), v.exact)
        src = self.value(self.pick(STRONG), shape, depth + 1)
        return self.cast(src, dt)

    def operand2(self, dt: DType, shape: tuple[int, ...]) -> Val:
        """A second operand: sometimes a weak literal (int/float dtypes take one)."""
        if not dt.is_bool and self.chance(0.15):
            return self.weak(dt, shape)
        return self.value(dt, shape)

    def cast(self, v: Val, dt: DType) -> Val:
        """CAST v to dt; exact when no NaN payload can reach the result."""
        if v.dt == dt:
            return v
        if (v.dt, dt) in self.k.avoid:
            v = self.cast(v, dtypes.float32)
        exact = (not dt.is_float) or (not v.dt.is_float and v.exact)
        return Val(UOp(Ops.CAST, (v.u,), dt), exact)

    # -- ops ---------------------------------------------------------------------------------
    def step(self) -> Val:
        """Build one ALU/cast node over values of the pool (or new leaves) and add it."""
        shape = self.shape()
        dt = self.pick(STRONG)
        ops = FLOAT_OPS if dt.is_float else INT_OPS if dt.is_int else BOOL_OPS
        if dt == dtypes.uint64 and self.chance(0.1):
            op = Ops.THREEFRY
        else:
            op = self.pick(ops)
        v = self.build(op, dt, shape)
        self.pool.append(v)
        return v

    def build(self, op: Ops, dt: DType, shape: tuple[int, ...]) -> Val:
        a = self.value(dt, shape)
        if op in (Ops.NEG, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC):
            # NEG of a float32/float64 flips the sign bit (bits kept); halves round via float32
            ex = a.exact and (not dt.is_float or (op is Ops.NEG and dt not in HALF))
            return Val(UOp(op, (a.u,)), ex)
        if op is Ops.CAST:
            return self.cast(a, self.pick([d for d in STRONG if d != dt]))
        if op is Ops.BITCAST:
            to = [d for d in STRONG if d.itemsize == dt.itemsize and d != dt and not d.is_bool]
            if not to or (dt.is_float and not a.exact):
                return self.cast(a, self.pick([d for d in STRONG if d != dt]))
            return Val(UOp(Ops.BITCAST, (a.u,), self.pick(to)), a.exact)
        if op in CMP:
            return Val(UOp(op, (a.u, self.operand2(dt, shape).u)))
        if op is Ops.WHERE:
            c = self.value(dtypes.bool, shape)
            b = self.operand2(dt, shape)
            return Val(UOp(Ops.WHERE, (c.u, a.u, b.u)), a.exact and b.exact)
        if op is Ops.MULACC:
            b, c = self.value(dt, shape), self.operand2(dt, shape)
            return Val(UOp(Ops.MULACC, (a.u, b.u, c.u)), not dt.is_float)
        if op is Ops.THREEFRY:
            return Val(UOp(Ops.THREEFRY, (a.u, self.value(dt, shape).u)))
        if op in (Ops.SHL, Ops.SHR):
            # defined amounts only: 0 <= n < bits (docs/semantics.md, Shifts)
            amt = self.value(self.pick(INTS), shape)
            mask = self._splat(UOp.const(dt.bits - 1), shape)
            return Val(UOp(op, (a.u, UOp(Ops.AND, (amt.u, mask)))))
        if op in (Ops.CDIV, Ops.CMOD):
            return Val(UOp(op, (a.u, self._divisor(a.u, self.value(dt, shape).u, dt, shape))))
        b = self.operand2(dt, shape)
        if op is Ops.MAX:
            # MAX keeps the chosen operand's bits for float32/float64
            keeps = dt not in HALF and a.exact and b.exact
            return Val(UOp(op, (a.u, b.u)), keeps or not dt.is_float)
        return Val(UOp(op, (a.u, b.u)), not dt.is_float)

    def _splat(self, c: UOp, shape: tuple[int, ...]) -> UOp:
        return UOp(Ops.STACK, (c,) * shape[0]) if shape else c

    def _divisor(self, a: UOp, b: UOp, dt: DType, shape: tuple[int, ...]) -> UOp:
        """b, with 1 where the quotient is unspecified (b == 0; INT_MIN / -1 when signed)."""
        s = self._splat
        bad = UOp(Ops.CMPEQ, (b, s(UOp.const(0), shape)))
        if dt.kind == "int":
            ovf = UOp(Ops.AND, (UOp(Ops.CMPEQ, (a, s(UOp.const(dt.min()), shape))),
                                UOp(Ops.CMPEQ, (b, s(UOp.const(-1), shape)))))
            bad = UOp(Ops.OR, (bad, ovf))
        return UOp(Ops.WHERE, (bad, s(UOp.const(1), shape), b))

    # -- effects -----------------------------------------------------------------------------
    def store(self, v: Val, gated: bool) -> UOp:
        """Store v to a new output buffer at this scope's element (a vector at its SHRINK)."""
        if v.shape:
            out = self.k.param(v.dt, self.n * v.shape[0])
            place = UOp(Ops.SHRINK, (out, UOp(Ops.MUL, (self.lin, UOp.const(v.shape[0]))),
                                     self.int_const(v.shape[0])))
        else:
            out = self.k.param(v.dt, self.n)
            place = UOp(Ops.INDEX, (out, self.lin))
        src = (place, v.u, self.bool_scalar()) if gated else (place, v.u)
        return UOp(Ops.STORE, src)


# -- loop nests ------------------------------------------------------------------------------

def _loops(draw: st.DrawFn, depth: int, first_axis: int = 0, max_bound: int = 5,
           special: bool = False, strong: bool = False) -> tuple[list[UOp], UOp, int]:
    """`depth` nested RANGEs with constant bounds (literals; with `strong`, maybe strong
    constants of one index dtype per kernel); their linear index and element count. With
    `special`, the outermost is a SPECIAL gidx0 (x86 workers, CUDA blocks), not a RANGE."""
    bounds = [draw(st.integers(1, max_bound)) for _ in range(depth)]
    idt = draw(st.sampled_from(INDEX_DTYPES)) if strong else None
    return loop_nest(draw, bounds, first_axis, idt, special)


def loop_nest(draw: st.DrawFn, bounds: list[int], first_axis: int = 0,
              idt: DType | None = None, special: bool = False) -> tuple[list[UOp], UOp, int]:
    """Nested RANGEs of these bounds (weak literals, or strong constants of idt: int_const),
    the outermost a SPECIAL gidx0 with `special`; their linear index and element count."""
    ranges = [UOp(Ops.RANGE, (int_const(draw, b, idt),), (first_axis + k, AxisType.LOOP))
              for k, b in enumerate(bounds)]
    if special:
        ranges[0] = UOp(Ops.SPECIAL, (int_const(draw, bounds[0], idt),), "gidx0")
    lin: UOp = ranges[0]
    for r, b in zip(ranges[1:], bounds[1:]):
        lin = UOp(Ops.ADD, (UOp(Ops.MUL, (lin, UOp.const(b))), r))
    n = 1
    for b in bounds:
        n *= b
    return ranges, lin, n


def _close(draw: st.DrawFn, body: UOp, ranges: list[UOp]) -> UOp:
    """END the loops: one END over all of them, or nested ENDs, innermost first."""
    ranges = [r for r in ranges if r.op is Ops.RANGE]      # a SPECIAL has no END
    if not ranges:
        return body
    if len(ranges) > 1 and draw(st.booleans()):
        return UOp(Ops.END, (body, *reversed(ranges)))
    for r in reversed(ranges):
        body = UOp(Ops.END, (body, r))
    return body


def _sink(k: _Kernel, effect: UOp, name: str) -> UOp:
    """The SINK; PARAMs no effect reaches are its srcs too, so slots have no gaps."""
    used = set(UOp(Ops.SINK, (effect,), KernelInfo(name)).toposort())
    return UOp(Ops.SINK, (effect, *(p for p in k.params if p not in used)), KernelInfo(name))


def _group(effects: list[UOp]) -> UOp:
    return effects[0] if len(effects) == 1 else UOp(Ops.GROUP, tuple(effects))


def _outputs(draw: st.DrawFn, s: Scope, last: list[Val]) -> list[UOp]:
    """One to three stores of the newest values (and sometimes an older one)."""
    n = draw(st.integers(1, min(3, len(last))))
    chosen = list(dict.fromkeys(last[-n:] + ([s.pick(last)] if draw(st.booleans()) else [])))
    return [s.store(v, s.chance(0.25)) for v in chosen]


@st.composite
def elementwise(draw: st.DrawFn, name: str = "fuzz", avoid=frozenset()) -> UOp:
    """out_k[i] = f_k(inputs[i], …) over 1–3 nested loops."""
    k = _Kernel(draw, avoid=avoid)
    ranges, lin, n = _loops(draw, draw(st.integers(1, 3)), special=draw(st.integers(0, 3)) == 0,
                            strong=True)
    s = Scope(k, ranges, lin, n, strong=True)
    vals = [s.step() for _ in range(draw(st.integers(1, 8)))]
    body = _group(_outputs(draw, s, vals))
    return _sink(k, _close(draw, body, ranges), name)


@st.composite
def vector(draw: st.DrawFn, name: str = "fuzz", avoid=frozenset(), wide: bool = False) -> UOp:
    """float32/float64 and int8…uint64 vectors of one xmm or ymm: SHRINK loads/stores, vector
    ALU, lanes and STACKs (wide: float32 ×16 and float64 ×8, zmm-sized, instead)."""
    k = _Kernel(draw, avoid=avoid)
    shapes = [(dtypes.float32, 16), (dtypes.float64, 8)] if wide else \
        [(dtypes.float32, 4), (dtypes.float32, 8), (dtypes.float64, 2), (dtypes.float64, 4),
         (dtypes.int32, 4), (dtypes.int32, 8), (dtypes.uint32, 8), (dtypes.int8, 16),
         (dtypes.uint8, 32), (dtypes.int16, 8), (dtypes.uint16, 16), (dtypes.int64, 4),
         (dtypes.uint64, 2)]
    dt, w = draw(st.sampled_from(shapes))
    ranges, lin, n = _loops(draw, draw(st.integers(1, 2)), max_bound=4, strong=True)
    s = Scope(k, ranges, lin, n, w, strong=True)
    s.pool.append(s.load(dt, (w,), 0))
    vals = [s.step() for _ in range(draw(st.integers(1, 8)))]
    vecs = [v for v in s.pool if v.shape] or [s.value(dt, (w,))]
    stores = [s.store(v, s.chance(0.2)) for v in dict.fromkeys([vecs[-1], s.pick(vecs)])]
    if draw(st.booleans()):
        stores.append(s.store(vals[-1], False))
    body = _group(stores)
    return _sink(k, _close(draw, body, ranges), name)


REDUCE_OPS = {"float": (Ops.ADD, Ops.MAX, Ops.MUL, Ops.MULACC),
              "int": (Ops.ADD, Ops.XOR, Ops.OR, Ops.AND, Ops.MAX, Ops.MUL, Ops.MULACC),
              "bool": (Ops.OR, Ops.AND, Ops.XOR, Ops.MAX)}


@st.composite
def reduce(draw: st.DrawFn, name: str = "fuzz", avoid=frozenset()) -> UOp:
    """out[j] = reduce over i of f(j, i): a REG accumulator initialised inside the outer loops,
    updated in the inner loop, read after it closes (colmax_reg_acc.uop's shape)."""
    k = _Kernel(draw, avoid=avoid)
    outer, lin_o, n_o = _loops(draw, draw(st.integers(1, 2)), max_bound=4, strong=True)
    so = Scope(k, outer, lin_o, n_o, strong=True)
    for _ in range(draw(st.integers(0, 2))):
        so.step()
    dt = draw(st.sampled_from(STRONG))
    acc = UOp(Ops.BUFFER, (), ParamArg(0, dt, 1, addrspace=AddrSpace.REG))
    init_v = so.value(dt, ()) if draw(st.booleans()) else so.strong_const(dt)
    zero = int_const(draw, 0)
    init = UOp(Ops.STORE, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, *outer)), zero)), init_v.u))
    n_i = draw(st.integers(1, 6))
    idt = outer[0].dtype          # the inner bound in the outer loops' index dtype
    i = UOp(Ops.RANGE, (int_const(draw, n_i, None if idt.is_weak else idt), *outer),
            (len(outer), AxisType.REDUCE))
    lin_i = UOp(Ops.ADD, (UOp(Ops.MUL, (lin_o, UOp.const(n_i))), i))
    si = Scope(k, [*outer, i], lin_i, n_o * n_i, pool=so.pool, strong=True)
    for _ in range(draw(st.integers(0, 5))):
        si.step()
    x = si.value(dt, ())
    p1 = UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, init, i)), zero))
    cur = UOp(Ops.LOAD, (p1,))
    op = draw(st.sampled_from(REDUCE_OPS["float" if dt.is_float else
                                         "int" if dt.is_int else "bool"]))
    if op is Ops.MULACC:
        new = UOp(Ops.MULACC, (x.u, si.value(dt, ()).u, cur))
    else:
        new = UOp(op, (cur, x.u) if draw(st.booleans()) else (x.u, cur))
    effects = [UOp(Ops.STORE, (p1, new))]
    if si.pool and draw(st.integers(0, 2)) == 0:       # an elementwise store in the inner loop
        effects.append(si.store(si.pick(si.pool), False))
    ei = UOp(Ops.END, (_group(effects), i))
    res = Val(UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (acc, ei)), zero)),)))
    so.pool.append(res)
    post = so.build(draw(st.sampled_from(FLOAT_OPS if dt.is_float else INT_OPS if dt.is_int
                                         else BOOL_OPS)), dt, ()) if draw(st.booleans()) else res
    body = _group([so.store(res, False)] + ([so.store(post, False)] if post is not res else []))
    return _sink(k, _close(draw, body, outer), name)


@st.composite
def local_exchange(draw: st.DrawFn, name: str = "fuzz", avoid=frozenset()) -> UOp:
    """GPU-only (workgroups, as tinygrad's GPU lowerings write them): each thread lidx0 of a
    workgroup gidx0 stores a value into a LOCAL buffer, a BARRIER lists that store as its
    source, and the thread reads its mirror's element after the barrier; sometimes a REG
    BUFFER with the same slot 0 as the LOCAL one beside it. Bounds are weak or strong."""
    k = _Kernel(draw, avoid=avoid)
    n_l, n_g = draw(st.integers(1, 8)), draw(st.integers(1, 4))
    idt = draw(st.sampled_from(INDEX_DTYPES))
    g = UOp(Ops.SPECIAL, (int_const(draw, n_g, idt),), "gidx0")
    lx = UOp(Ops.SPECIAL, (int_const(draw, n_l, idt),), "lidx0")
    s = Scope(k, [g, lx], UOp(Ops.ADD, (UOp(Ops.MUL, (g, UOp.const(n_l))), lx)), n_g * n_l,
              strong=True)
    vals = [s.step() for _ in range(draw(st.integers(1, 4)))]
    v = vals[-1]
    loc = UOp(Ops.BUFFER, (), ParamArg(0, v.dt, n_l, addrspace=AddrSpace.LOCAL))
    st_l = UOp(Ops.STORE, (UOp(Ops.INDEX, (loc, lx)), v.u))
    srcs = [st_l]
    effects = []
    if draw(st.booleans()):
        reg = UOp(Ops.BUFFER, (), ParamArg(0, v.dt, 1, addrspace=AddrSpace.REG))
        zero = int_const(draw, 0)
        st_r = UOp(Ops.STORE, (UOp(Ops.INDEX, (reg, zero)), v.u))
        back = UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (reg, st_r)), zero)),))
        effects.append(s.store(Val(back, v.exact), False))
    bar = UOp(Ops.BARRIER, tuple(srcs))
    mirror = UOp(Ops.SUB, (UOp.const(n_l - 1), lx))
    got = UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.AFTER, (loc, bar)), mirror)),))
    effects.append(s.store(Val(got, v.exact), s.chance(0.25)))
    return _sink(k, _group(effects), name)


def gpu_kernels(name: str = "fuzz", avoid=frozenset()) -> st.SearchStrategy[UOp]:
    """kernels() and the GPU-only local_exchange (BARRIER sources, LOCAL and REG slot 0)."""
    return st.one_of(kernels(name, avoid), local_exchange(name, avoid))


def kernels(name: str = "fuzz", avoid=frozenset()) -> st.SearchStrategy[UOp]:
    """One random valid kernel: elementwise, reduce or vector."""
    return st.one_of(elementwise(name, avoid), reduce(name, avoid), vector(name, avoid))


# Casts a target cannot select (none on x86 today: float64 → float16 rounds to odd first).
X86_AVOID: frozenset = frozenset()
