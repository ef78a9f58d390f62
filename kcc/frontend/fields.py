"""Field decoding for the fast line parser (kcc.frontend.plain): the plain spellings of
operand literals, dtypes and RANGE axis types, as precompiled tables.

Each decoder accepts only the spellings it is sure of and returns None for anything else, so
its caller hands that line to the full lexer and parser (kcc.frontend.lexer/parser), which
decide -- and word every error -- as they always do. What is accepted decodes exactly as the
lexer does: decimal integers of at most 40 digits within [-2**63, 2**64), float literals with
digits on both sides of the point and/or an exponent (no underscores), and the words `true`,
`false`, `inf`, `-inf`, `nan`.
"""

from __future__ import annotations

import math

from kcc.frontend.lexer import INT_HI, INT_LO
from kcc.ir.dtype import DType, dtypes
from kcc.ir.uop import AxisType
from kcc.startup import regex

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# a %name exactly as the lexer's `ref` token spells it
# kcc.startup.regex: re.compile's patterns, their compiled programs loaded at start-up
NAME = regex(r"%[A-Za-z0-9_][A-Za-z0-9_.]*\Z")
_INT = regex(r"-?[0-9]{1,40}\Z")
_FLOAT = regex(r"-?(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)\Z")
_WORDS: dict[str, Any] = {"true": True, "false": False, "inf": math.inf, "-inf": -math.inf,
                          "nan": math.nan}
# strong dtypes by name (a CAST/BITCAST arg; weak ones are refused by the full parser)
STRONG_DTYPES: dict[str, DType] = {dt.name: dt for dt in dtypes.strong()}
AXIS_TYPES: dict[str, AxisType] = dict(AxisType.__members__)


def literal(text: str) -> Any:
    """The value of an operand literal (int, float or bool), or None when the text is not one
    of the plain spellings above (or is out of range: the full parser words that)."""
    v = _WORDS.get(text)
    if v is not None:
        return v
    if _INT.match(text):
        v = int(text)
        return v if INT_LO <= v <= INT_HI else None
    if _FLOAT.match(text):
        v = float(text)
        return None if math.isinf(v) else v
    return None


def range_arg(text: str) -> tuple | None:
    """A RANGE arg `(0, LOOP)` / `(4, 0, 0, WEAK)` -- integer axis ids, then an AxisType --
    as the parser builds it, or None."""
    if not (text.startswith("(") and text.endswith(")")):
        return None
    items = text[1:-1].split(", ")
    axis = AXIS_TYPES.get(items[-1])
    if axis is None or len(items) < 2:
        return None
    ids = []
    for x in items[:-1]:
        if not _INT.match(x) or not INT_LO <= int(x) <= INT_HI:
            return None
        ids.append(int(x))
    return (*ids, axis)


def type_spec(text: str) -> tuple[str, tuple[int, ...]] | None:
    """A type assertion `float32` / `float32[4]` / `float32[2,4]` (the printer's spelling) as
    (dtype name, shape), or None. The name is any known dtype's; the caller compares it with
    the node's derived type and hands a mismatch to the full parser."""
    name, bracket, dims = text.partition("[")
    if dtypes.by_name(name) is None:
        return None
    if not bracket:
        return name, ()
    if not dims.endswith("]"):
        return None
    shape = []
    for d in dims[:-1].split(","):
        if not _INT.match(d) or d[0] == "-" or len(d) > 18:
            return None
        shape.append(int(d))
    return name, tuple(shape)
