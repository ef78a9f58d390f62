"""Scalar dtypes of the UOp IR, the weak dtypes and their promotion rule.

A dtype is a scalar element type; vectors are a shape on the node, not a dtype. The weak dtypes
`weakint` and `weakfloat` exist only until weak-dtype lowering (see kcc/passes/lower_weak.py).
"""

from __future__ import annotations

from kcc.record import record

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:          # numpy is imported when a dtype's .np is first asked (start-up)
    import numpy as np


@record(frozen=True, eq=False)
class DType:
    """A scalar element type: `kind` is one of bool, int, uint, float, weakint, weakfloat.

    The kind tests (is_weak, is_float, is_int, is_signed, is_bool) and bits are plain
    attributes computed once: every pass and selector asks them per node."""

    name: str
    itemsize: int
    kind: str

    def __post_init__(self) -> None:
        k = self.kind
        object.__setattr__(self, "is_weak", k in ("weakint", "weakfloat"))
        object.__setattr__(self, "is_float", k in ("float", "weakfloat"))   # weak or strong
        object.__setattr__(self, "is_int", k in ("int", "uint", "weakint"))  # bool is not one
        object.__setattr__(self, "is_signed", k in ("int", "weakint"))
        object.__setattr__(self, "is_bool", k == "bool")
        object.__setattr__(self, "bits", self.itemsize * 8)
        object.__setattr__(self, "_key", (self.name, self.itemsize, self.kind))

    # equal fields are equal dtypes (as the dataclass's own eq); the dtypes are singletons,
    # so identity answers almost every comparison without building the field tuples
    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not DType:
            return NotImplemented
        return self._key == other._key          # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        if self is other:
            return False
        if other.__class__ is not DType:
            return NotImplemented
        return self._key != other._key          # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return self.name

    if TYPE_CHECKING:
        is_weak: bool
        is_float: bool
        is_int: bool
        is_signed: bool
        is_bool: bool
        bits: int

    @property
    def np(self) -> np.dtype:
        """The numpy dtype with the same bits (bfloat16 is carried as its uint16 bit pattern)."""
        import numpy as np
        return np.dtype(_NP[self.name])

    def min(self) -> int | float:
        """Smallest value of an integer or float dtype."""
        if self.kind == "int":
            return -(1 << (self.bits - 1))
        if self.kind in ("uint", "bool"):
            return 0
        if self.is_float:
            return float("-inf")
        raise ValueError(f"{self.name} has no fixed range")

    def max(self) -> int | float:
        """Largest value of an integer or float dtype."""
        if self.kind == "int":
            return (1 << (self.bits - 1)) - 1
        if self.kind == "uint":
            return (1 << self.bits) - 1
        if self.kind == "bool":
            return 1
        if self.is_float:
            return float("inf")
        raise ValueError(f"{self.name} has no fixed range")


class dtypes:
    """The dtype namespace: `dtypes.float32`, `dtypes.by_name("int8")`."""

    bool = DType("bool", 1, "bool")
    int8 = DType("int8", 1, "int")
    uint8 = DType("uint8", 1, "uint")
    int16 = DType("int16", 2, "int")
    uint16 = DType("uint16", 2, "uint")
    int32 = DType("int32", 4, "int")
    uint32 = DType("uint32", 4, "uint")
    int64 = DType("int64", 8, "int")
    uint64 = DType("uint64", 8, "uint")
    float16 = DType("float16", 2, "float")
    bfloat16 = DType("bfloat16", 2, "float")
    float32 = DType("float32", 4, "float")
    float64 = DType("float64", 8, "float")
    # Weak dtypes carry no width: itemsize 0 marks them as abstract.
    weakint = DType("weakint", 0, "weakint")
    weakfloat = DType("weakfloat", 0, "weakfloat")

    @staticmethod
    def by_name(name: str) -> DType | None:
        """The dtype called `name`, or None."""
        return _BY_NAME.get(name)

    @staticmethod
    def strong() -> tuple[DType, ...]:
        """Every strong (concrete) dtype, in declaration order."""
        return STRONG


STRONG: tuple[DType, ...] = tuple(
    getattr(dtypes, n) for n in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                                 "int64", "uint64", "float16", "bfloat16", "float32", "float64"))
_BY_NAME: dict[str, DType] = {d.name: d for d in STRONG + (dtypes.weakint, dtypes.weakfloat)}
_NP: dict[str, str] = {"bool": "bool", "int8": "int8", "uint8": "uint8", "int16": "int16",
                       "uint16": "uint16", "int32": "int32", "uint32": "uint32", "int64": "int64",
                       "uint64": "uint64", "float16": "float16", "bfloat16": "uint16",
                       "float32": "float32", "float64": "float64",
                       "weakint": "int64", "weakfloat": "float64"}


class PromotionError(Exception):
    """Two operand dtypes that cannot be combined without an explicit CAST."""


def promote(a: DType, b: DType) -> DType:
    """The common dtype of two operands of an ALU op (UOP_FORMAT.md, derived types).

    Equal dtypes stay; a weak operand takes the strong operand's dtype, except that a float
    literal beside an integer (strong, weakint or an integer literal) or bool is an error; two
    strong dtypes that differ are an error: conversions are always explicit CASTs.
    """
    if a == b:
        return a
    if a.is_weak and b.is_weak:
        # weakint beside weakfloat: no implicit int -> float conversion, even of two literals
        raise PromotionError("a float literal cannot combine with a weakint (an integer "
                             "literal, RANGE or SPECIAL); write a float literal or CAST it")
    weak, strong = (a, b) if a.is_weak else (b, a)
    if not weak.is_weak:
        raise PromotionError(f"operand dtypes {a} and {b} differ; insert an explicit CAST")
    if weak.kind == "weakfloat" and not strong.is_float:
        raise PromotionError(f"a float literal cannot combine with {strong}; CAST it")
    if weak.kind == "weakint" and strong.is_bool:
        raise PromotionError("an integer literal cannot combine with bool; CAST it")
    return strong
