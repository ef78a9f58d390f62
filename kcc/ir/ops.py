"""The ops of the UOp IR (version 1 of the .uop format) and their groups.

Each op has one row: its arity (fixed, or a minimum with `variadic`) and the groups it belongs
to. Every group the rest of kcc asks about is derived from these rows.
"""

from __future__ import annotations

from kcc.record import record
from kcc.symbols import Symbols, auto


class Ops(Symbols):
    """Every op of the .uop format, version 1."""

    PARAM = auto()
    BUFFER = auto()
    CONST = auto()
    SPECIAL = auto()
    RANGE = auto()
    END = auto()
    INDEX = auto()
    SHRINK = auto()
    LOAD = auto()
    STORE = auto()
    AFTER = auto()
    BARRIER = auto()
    GROUP = auto()
    SINK = auto()
    STACK = auto()
    CAST = auto()
    BITCAST = auto()
    NEG = auto()
    EXP2 = auto()
    LOG2 = auto()
    SIN = auto()
    SQRT = auto()
    RECIPROCAL = auto()
    TRUNC = auto()
    ADD = auto()
    SUB = auto()
    MUL = auto()
    FDIV = auto()
    CDIV = auto()
    CMOD = auto()
    MAX = auto()
    CMPLT = auto()
    CMPNE = auto()
    CMPEQ = auto()
    AND = auto()
    OR = auto()
    XOR = auto()
    SHL = auto()
    SHR = auto()
    THREEFRY = auto()
    WHERE = auto()
    MULACC = auto()
    WMMA = auto()
    # high half of the double-width product (kcc/passes/divconst.py makes it; docs/semantics.md)
    MULHI = auto()

    # Members are singletons compared by identity, hashed by identity (a C call: every op-set
    # test and hash-consing lookup of a node hashes an op). Not an enum.Enum (kcc/symbols.py:
    # the enum module's import and class building were ~10% of a small compile's process, and
    # an Enum's class attributes are read through a metaclass hook), with Enum's behaviour.

    def __repr__(self) -> str:
        return f"Ops.{self.name}"


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
# Integer ops whose result's bit i depends only on bits 0..i of their operands (wrapping
# arithmetic and bitwise ops): a narrowing CAST of them reads only their operands' low bits
LOW_BITS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MULACC, Ops.NEG, Ops.AND, Ops.OR,
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
