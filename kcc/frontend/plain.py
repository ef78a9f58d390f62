"""A fast line parser for the plain `.uop` statements kcc's own writers produce.

kcc's tinygrad renderer (kcc.tinygrad, through kcc.frontend.tinygrad_import) and the printer
write statements in a few fixed shapes, one per line:

    %12 = ADD(%3, %7)                  # no arg: any op whose arg is not required
    %13 = CAST(%12) float32            # CAST / BITCAST to a strong dtype
    %14 = RANGE(%2) (0, LOOP)          # RANGE with integer axis ids and an AxisType
    %15 = LOAD(%12)        : float32   # any of these with a type assertion (the printer's)

`PlainParser` recognizes exactly these with str.partition/split and the precompiled tables of
kcc.frontend.fields, builds the node, and records it as the full parser's `_statement` does
(the same names, locations, operand columns and checks: arity, the IR's type rules, literal
ranges, a type assertion). Every other line -- PARAM, SINK, other spacing, a comment
after the statement, any literal it does not know -- and every line the fast path finds anything
wrong with goes to the full lexer and parser, so diagnostics are the full parser's, word for
word. The graph is the same hash-consed UOp either way (tests/frontend/test_plain.py).
"""

from __future__ import annotations

from kcc.frontend.errors import SourceError
from kcc.frontend.fields import NAME, STRONG_DTYPES, literal, range_arg, type_spec
from kcc.frontend.parser import NodeLoc, _Parser
from kcc.ir.ops import ROW, Ops, arity_ok
from kcc.ir.rules import IRError
from kcc.ir.uop import UOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# op name -> (op, how its arg is written): "" none, "dtype" a strong dtype, "range" a RANGE arg
_SHAPES: dict[str, tuple[Ops, str]] = {
    op.name: (op, "") for op in Ops if ROW[op].arg != "required"}
_SHAPES.update({"CAST": (Ops.CAST, "dtype"), "BITCAST": (Ops.BITCAST, "dtype"),
                "RANGE": (Ops.RANGE, "range")})
_CONST = Ops.CONST


class PlainParser(_Parser):
    """The full parser with a fast path for the plain statement shapes (module docstring)."""

    def __init__(self, path: str, lines: list[str]):
        super().__init__(path, lines)
        self._literals: dict[str, Any] = {}
        self._types: dict[str, tuple[str, tuple[int, ...]]] = {}

    def _fast_line(self, lineno: int, text: str) -> bool:
        """Parse one line if it has a plain shape; False hands it to the full parser."""
        if not text or text[0] == "#":
            return True                      # blank or a comment: nothing to do (as the lexer)
        if text[0] != "%" or self.sink is not None:
            return False
        name, eq, rest = text.partition(" = ")
        if not eq or name in self.env or not NAME.match(name):
            return False
        opname, paren, tail = rest.partition("(")
        shape = _SHAPES.get(opname)
        if shape is None or not paren:
            return False
        ops_text, close, tail = tail.partition(")")
        if not close:
            return False
        op, form = shape
        op_col = len(name) + 4
        col = op_col + len(opname) + 1       # column of the first operand
        srcs: list[UOp] = []
        cols: list[int] = []
        if ops_text:
            env, lits, loc = self.env, self._literals, self.loc
            for piece in ops_text.split(", "):
                if piece[:1] == "%":
                    hit = env.get(piece)
                    if hit is None:
                        return False
                    self.used.add(piece)
                    srcs.append(hit[0])
                else:
                    v = lits.get(piece)
                    if v is None:
                        v = literal(piece)
                        if v is None:
                            return False
                        lits[piece] = v
                    node = UOp(_CONST, (), v)
                    loc.setdefault(node, NodeLoc(lineno, col))
                    srcs.append(node)
                cols.append(col)
                col += len(piece) + 2
        close_col = op_col + len(opname) + len(ops_text) + 1
        arg = None
        arg_col = None
        want = None
        if ":" in tail:                      # a type assertion, as the printer aligns it
            tail, _, typ = tail.partition(":")
            if typ[:1] != " " or " " in typ[1:]:
                return False
            want = self._types.get(typ)
            if want is None:
                want = type_spec(typ[1:])
                if want is None:
                    return False
                self._types[typ] = want
            tail = tail.rstrip(" ")
        if tail:
            if tail[0] != " ":
                return False
            arg_col = close_col + 2
            if form == "dtype":
                arg = STRONG_DTYPES.get(tail[1:])
            elif form == "range":
                arg = range_arg(tail[1:])
            if arg is None:
                return False
        elif form:
            return False
        if not arity_ok(op, len(srcs)):
            return False
        node = UOp(op, tuple(srcs), arg)
        try:
            ut = node.utype
            self._check_literals(node, cols)
        except (IRError, SourceError):
            return False
        if want is not None and (ut.dtype is None or (ut.dtype.name, ut.shape) != want):
            return False
        self.loc.setdefault(node, NodeLoc(lineno, op_col, tuple(cols), arg_col))
        self.env[name] = (node, lineno)
        self.names.setdefault(node, name)
        self.stmts.append((lineno, name, 1, node))
        return True
