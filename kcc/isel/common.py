"""What the three instruction selectors share: the refusal type, the readings of constant nodes
they fold, alignment facts of index expressions, and the select loop with the structural rules
that have no code on any target.

A selector is a class with one `sel_<OP>` method per op it handles (a one-line docstring each:
what the op becomes); `SelectorBase.select_nodes` walks the linearized kernel once and calls
the rule of each node, or the selector's fallback (its ALU rules) for an op with no rule.
"""

from __future__ import annotations

import math
import _struct as struct  # struct's own C functions, without struct.py (start-up)

from kcc.ir.consts import literal_value
from kcc.ir.dtype import DType
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Callable, Collection


class SelectError(Exception):
    """A construct a target's selector cannot compile (with the reason); targets report it as
    a refusal of the kernel, not as an internal error."""


# ----------------------------------------------------------------------------- constants
def strong_const(u: UOp) -> int | float | bool | None:
    """The value of a strong constant CAST(CONST) (or a bool CONST), else None."""
    if u.op is Ops.CONST and not u.dtype.is_weak:
        return u.arg
    if u.op is Ops.CAST and u.src[0].op is Ops.CONST:
        return commit_const(u.src[0].arg, u.dtype)
    return None


def commit_const(v: int | float | bool, dt: DType) -> int | float | bool:
    """A literal committed to dt by the CAST rules of docs/semantics.md (kcc.ir.consts)."""
    return literal_value(v, dt)


def scalar_const(u: UOp) -> int | float | bool | None:
    """The value of a scalar strong constant (`CAST(CONST v) dt` or a bool CONST) that can be
    folded, else None: a float literal cast to an integer it does not fit is computed at run
    time instead (its result is the target's, docs/semantics.md)."""
    if u.op is Ops.CONST and isinstance(u.arg, bool):
        return u.arg
    if u.op is Ops.CAST and u.src[0].op is Ops.CONST and u.shape == ():
        v, dt = u.src[0].arg, u.dtype
        if dt.is_bool:
            return bool(v)
        if dt.is_int and isinstance(v, float) and (
                not math.isfinite(v) or not dt.min() <= math.trunc(v) <= dt.max()):
            return None            # an out-of-range conversion: computed, not folded
        return literal_value(v, dt)   # ints wrap; floats rounded once (±inf beyond range)
    return None


def f32_bits(v: float) -> int:
    """The float32 bits of v (rounded to float32 first, ±inf beyond its range)."""
    import numpy as np  # here, not at import: an x86 compile imports no numpy (start-up)
    return struct.unpack("<I", struct.pack("<f", np.float32(v)))[0]


def bf16_bits(v: float) -> int:
    """bfloat16 bits of v: float32 first, then round to nearest even (NaN kept quiet)."""
    b = f32_bits(v)
    if math.isnan(v):
        return (b >> 16) | 0x40
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def _multiple_srcs(u: UOp) -> tuple[UOp, ...]:
    """The nodes multiple_of(u) is made of."""
    c = scalar_const(u)
    if c is None and u.op is Ops.CONST and not isinstance(u.arg, (bool, float)):
        c = u.arg
    if c is not None and not isinstance(c, float):
        return ()
    if u.op in (Ops.MUL, Ops.ADD) or (u.op is Ops.MULACC and u.dtype is not None
                                      and u.dtype.is_int):
        return u.src
    if u.op is Ops.SHL:
        k = scalar_const(u.src[1])
        return (u.src[0],) if isinstance(k, int) and 0 <= k < 63 else ()
    if u.op in (Ops.CAST, Ops.AFTER) and u.src[0].dtype is not None \
            and u.src[0].dtype.is_int:
        return (u.src[0],)
    return ()


def _multiple_node(u: UOp, memo: dict[UOp, int]) -> int:
    """multiple_of(u) from its srcs' answers (in memo)."""
    c = scalar_const(u)
    if c is None and u.op is Ops.CONST and not isinstance(u.arg, (bool, float)):
        c = u.arg
    if c is not None and not isinstance(c, float):
        return abs(int(c))
    if u.op is Ops.MUL:
        return memo[u.src[0]] * memo[u.src[1]]
    if u.op is Ops.ADD:
        return math.gcd(memo[u.src[0]], memo[u.src[1]])
    if u.op is Ops.MULACC and u.dtype is not None and u.dtype.is_int:
        # a*b + c; wrapping keeps divisibility by the powers of two alignment asks about,
        # as for MUL and ADD (tinygrad's GPU lowerings index with gidx*stride + lane offset)
        return math.gcd(memo[u.src[0]] * memo[u.src[1]], memo[u.src[2]])
    if u.op is Ops.SHL:
        k = scalar_const(u.src[1])
        if isinstance(k, int) and 0 <= k < 63:
            return memo[u.src[0]] << k
    if u.op in (Ops.CAST, Ops.AFTER) and u.src[0].dtype is not None \
            and u.src[0].dtype.is_int:
        return memo[u.src[0]]
    return 1


def multiple_of(u: UOp, memo: dict[UOp, int] | None = None) -> int:
    """A number that u's value is always a multiple of (0: the value is 0), for alignment.
    Each node once (memo: kept across calls by a selector), iteratively: an index may be a
    long chain of ADDs or a DAG of sums sharing terms."""
    if memo is None:
        memo = {}
    stack: list[tuple[UOp, bool]] = [(u, False)]
    while stack:
        n, ready = stack.pop()
        if n in memo:
            continue
        if not ready:
            srcs = [s for s in _multiple_srcs(n) if s not in memo]
            if srcs:
                stack.append((n, True))
                stack.extend((s, False) for s in srcs)
                continue
        memo[n] = _multiple_node(n, memo)
    return memo[u]


# ----------------------------------------------------------------------------- the loop
# the rule method of each op (an enum's .name is a slow property; select asks it per node)
_RULE_NAMES: dict[Ops, str] = {op: f"sel_{op.name}" for op in Ops}


class SelectorBase:
    """The select loop and the rules every target writes the same way (a mixin)."""

    def select_nodes(self, lin: list[UOp], fallback: Callable[[UOp], None],
                     skip: Collection[UOp] = ()) -> None:
        """Call each node's `sel_<OP>` rule in schedule order (`fallback` for an op with no
        rule); nodes in `skip` were selected elsewhere (x86's induction variables)."""
        for u in lin:
            if skip and u in skip:
                continue
            rule = getattr(self, _RULE_NAMES[u.op], None)
            if rule is None:
                fallback(u)
            else:
                rule(u)

    def sel_CONST(self, u: UOp) -> None:
        """Constants are materialized where they are used."""

    def sel_SINK(self, u: UOp) -> None:
        """The root has no code."""

    def sel_GROUP(self, u: UOp) -> None:
        """A group of effects has no code of its own."""
