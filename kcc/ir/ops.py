"""The ops of the UOp IR (version 1 of the .uop format) and their groups.

Each op has one row: its arity (fixed, or a minimum with `variadic`) and the groups it belongs
to. Every group the rest of kcc asks about is derived from these rows.
"""

from __future__ import annotations

import enum

from kcc.record import record


class Ops(enum.Enum):
    """Every op of the .uop format, version 1."""

    PARAM = enum.auto()
    BUFFER = enum.auto()
    CONST = enum.auto()
    SPECIAL = enum.auto()
    RANGE = enum.auto()
    END = enum.auto()
    INDEX = enum.auto()
    SHRINK = enum.auto()
    LOAD = enum.auto()
    STORE = enum.auto()
    AFTER = enum.auto()
    BARRIER = enum.auto()
    GROUP = enum.auto()
    SINK = enum.auto()
    STACK = enum.auto()
    CAST = enum.auto()
    BITCAST = enum.auto()
    NEG = enum.auto()
    EXP2 = enum.auto()
    LOG2 = enum.auto()
    SIN = enum.auto()
    SQRT = enum.auto()
    RECIPROCAL = enum.auto()
    TRUNC = enum.auto()
    ADD = enum.auto()
    SUB = enum.auto()
    MUL = enum.auto()
    FDIV = enum.auto()
    CDIV = enum.auto()
    CMOD = enum.auto()
    MAX = enum.auto()
    CMPLT = enum.auto()
    CMPNE = enum.auto()
    CMPEQ = enum.auto()
    AND = enum.auto()
    OR = enum.auto()
    XOR = enum.auto()
    SHL = enum.auto()
    SHR = enum.auto()
    THREEFRY = enum.auto()
    WHERE = enum.auto()
    MULACC = enum.auto()
    WMMA = enum.auto()
    # high half of the double-width product (kcc/passes/divconst.py makes it; docs/semantics.md)
    MULHI = enum.auto()

    # Members are singletons compared by identity, so the identity hash is a valid one; Enum's
    # own __hash__ (hash of the name) is a Python call, and every op-set test and hash-consing
    # lookup of a node hashes an op (kcc's compile time). Order of a set of ops was never
    # fixed either way (str hashes are randomized per process).
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Ops.{self.name}"



class _MemberTable(type):
    """The metaclass of `FastOps`: what a module may ask of `Ops` besides a member (iterate,
    index by name, call with a value, isinstance, `__members__`), answered by Ops itself."""

    def __instancecheck__(cls, x: object) -> bool:
        return isinstance(x, Ops)

    def __iter__(cls):
        return iter(Ops)

    def __len__(cls) -> int:
        return len(Ops)

    def __getitem__(cls, name: str) -> Ops:
        return Ops[name]

    def __call__(cls, value: object) -> Ops:  # type: ignore[override]
        return Ops(value)

    def __repr__(cls) -> str:
        return repr(Ops)

    @property
    def __members__(cls):
        return Ops.__members__


class FastOps(metaclass=_MemberTable):
    """Ops' members as attributes of a plain class (`FastOps.ADD is Ops.ADD`), for the hot
    modules that import it as `Ops`. On CPython 3.11 a class attribute of an Enum is read
    through EnumType's `__getattr__` hook (the type's generic lookup called as a method,
    ~100 ns) even when the member is in the class's dict; a plain class reads its dict directly
    (~25 ns). The passes and selectors ask `n.op is Ops.X` of every node: ~25,000 such reads a
    tinygrad kernel, 8.7% of a compile's instructions (callgrind). Nothing of the `enum` module
    is changed: every Enum of the process keeps its behaviour."""


for _m in Ops:
    setattr(FastOps, _m.name, _m)
del _m

@record(frozen=True)
class OpRow:
    """One op: src count (`nsrc` exact, or at least `nsrc` when `variadic`) and its group."""

    op: Ops
    nsrc: int
    # "unary", "binary", "ternary", "compare", "memory", "control", "leaf", "matrix"
    group: str
    variadic: bool = False
    max_src: int | None = None
    # does an arg appear in the text form ("required", "optional", "none")
    arg: str = "none"


OP_ROWS: tuple[OpRow, ...] = (
    OpRow(Ops.PARAM, 0, "leaf", arg="required"),
    OpRow(Ops.BUFFER, 0, "leaf", arg="required"),
    OpRow(Ops.CONST, 0, "leaf", arg="required"),
    OpRow(Ops.SPECIAL, 1, "control", arg="required"),
    OpRow(Ops.RANGE, 1, "control", variadic=True, arg="required"),
    OpRow(Ops.END, 2, "control", variadic=True),
    OpRow(Ops.INDEX, 2, "memory"),
    OpRow(Ops.SHRINK, 3, "memory"),
    OpRow(Ops.LOAD, 1, "memory", variadic=True, max_src=3),
    OpRow(Ops.STORE, 2, "memory", variadic=True, max_src=3),
    OpRow(Ops.AFTER, 2, "control", variadic=True),
    OpRow(Ops.BARRIER, 0, "control", variadic=True),   # srcs: the effects it waits for
    OpRow(Ops.GROUP, 1, "control", variadic=True),
    OpRow(Ops.SINK, 1, "control", variadic=True, arg="required"),
    OpRow(Ops.STACK, 1, "vector", variadic=True),
    OpRow(Ops.CAST, 1, "cast", arg="required"),
    OpRow(Ops.BITCAST, 1, "cast", arg="required"),
    OpRow(Ops.NEG, 1, "unary"),
    OpRow(Ops.EXP2, 1, "unary"),
    OpRow(Ops.LOG2, 1, "unary"),
    OpRow(Ops.SIN, 1, "unary"),
    OpRow(Ops.SQRT, 1, "unary"),
    OpRow(Ops.RECIPROCAL, 1, "unary"),
    OpRow(Ops.TRUNC, 1, "unary"),
    OpRow(Ops.ADD, 2, "binary"),
    OpRow(Ops.SUB, 2, "binary"),
    OpRow(Ops.MUL, 2, "binary"),
    OpRow(Ops.FDIV, 2, "binary"),
    OpRow(Ops.CDIV, 2, "binary"),
    OpRow(Ops.CMOD, 2, "binary"),
    OpRow(Ops.MAX, 2, "binary"),
    OpRow(Ops.CMPLT, 2, "compare"),
    OpRow(Ops.CMPNE, 2, "compare"),
    OpRow(Ops.CMPEQ, 2, "compare"),
    OpRow(Ops.AND, 2, "binary"),
    OpRow(Ops.OR, 2, "binary"),
    OpRow(Ops.XOR, 2, "binary"),
    OpRow(Ops.SHL, 2, "shift"),
    OpRow(Ops.SHR, 2, "shift"),
    OpRow(Ops.THREEFRY, 2, "binary"),
    OpRow(Ops.WHERE, 3, "ternary"),
    OpRow(Ops.MULACC, 3, "ternary"),
    OpRow(Ops.WMMA, 3, "matrix", arg="required"),   # kcc/ir/wmma.py
    OpRow(Ops.MULHI, 2, "binary"),
)

ROW: dict[Ops, OpRow] = {r.op: r for r in OP_ROWS}


def ops_in(*groups: str) -> frozenset[Ops]:
    """The ops whose row is in one of `groups`."""
    return frozenset(r.op for r in OP_ROWS if r.group in groups)


UNARY = ops_in("unary")
BINARY = ops_in("binary", "shift", "compare")
COMPARE = ops_in("compare")
ALU = ops_in("unary", "binary", "shift", "compare", "ternary")
# Float-only unary ops (transcendentals and friends): derived from semantics, stated once here.
FLOAT_ONLY = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.FDIV})
INT_ONLY = frozenset({Ops.CDIV, Ops.CMOD, Ops.SHL, Ops.SHR, Ops.MULHI})
BITWISE = frozenset({Ops.AND, Ops.OR, Ops.XOR})
COMMUTATIVE = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR,
                         Ops.XOR})


def arity_ok(op: Ops, n: int) -> bool:
    """Whether `op` may have `n` srcs."""
    r = ROW[op]
    if not r.variadic:
        return n == r.nsrc
    return n >= r.nsrc and (r.max_src is None or n <= r.max_src)


def arity_text(op: Ops) -> str:
    """The allowed src count of `op`, in words, for error messages."""
    r = ROW[op]
    if not r.variadic:
        return f"exactly {r.nsrc}"
    if r.max_src is not None:
        return f"{r.nsrc} to {r.max_src}"
    return f"at least {r.nsrc}"
