"""The `.uop` v1 parser: text to a hash-consed UOp graph, every refusal a `SourceError`.

The format is the UOP_FORMAT.md contract (users' copy: docs/uop-format.md). The parser is
hand-written and iterative: statements are read one line at a time, an arg's nested tuples and
constructors use an explicit stack, and every node is typed by the IR's rule table as soon as it
is built, so a 200,000-line chain is linear and never recursive.

Besides the rule table, the parser checks what only the text knows: names (defined once, before
use, every non-PARAM line used by name), the header, SINK last, type assertions, and literal
ranges where a literal is committed to a dtype (see `_check_literals`). The graph checks
(slots, loops) are kcc.ir.verify; its errors are mapped back to the line of the node.
"""

from __future__ import annotations

import math

from kcc import collector
from kcc.frontend.argvals import (ARG_FORM, FIELD_CONVERT, Val, describe, out_of_range,
                                  word)
from kcc.frontend.errors import SourceError
from kcc.frontend.lexer import Lexer, Token, _clip, decode_source, split_lines
from kcc.ir.dtype import DType, dtypes, promote
from kcc.ir.ops import COMPARE, OP_ROWS, ROW, arity_ok, arity_text
from kcc.ir.ops import Ops
from kcc.ir.rules import IRError, fmt_utype
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp
from kcc.ir.verify import VerifyError, check_bounds, verify
from kcc.record import MISSING, FieldTuple, field, field_at, fields, record

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:   # no pathlib at start-up (kcc/targets/pathtext.py)
    from pathlib import Path
    from typing import Any

HEADER = "# kcc-uop 1"
# Deeper nesting than any valid arg needs is refused before it can strain anything downstream
# (UOp's arg hashing recurses on tuples).
MAX_ARG_DEPTH = 32
_CTORS = {"ParamArg": ParamArg, "KernelInfo": KernelInfo}
# Operand positions whose dtypes promote to one common dtype (UOP_FORMAT.md, derived types);
# a literal there is committed to that dtype. Keyed by the op's group in the ops table.
_PROMOTED_BY_GROUP: dict[str, tuple[int, ...] | None] = {
    "binary": (0, 1), "compare": (0, 1), "vector": None,  # None: every operand
}
_PROMOTED_BY_OP: dict[Ops, tuple[int, ...]] = {Ops.WHERE: (1, 2), Ops.MULACC: (0, 1, 2)}
_COMMIT_POS: dict[Ops, tuple[int, ...] | None] = {
    r.op: _PROMOTED_BY_OP.get(r.op, _PROMOTED_BY_GROUP.get(r.group, ())) for r in OP_ROWS}


class NodeLoc(FieldTuple):
    """Where a node is written: its statement's line, op column, operand and arg columns.

    A named tuple, not a dataclass: one is made per line and tuples are much cheaper to build
    (kcc.record's FieldTuple: neither typing's NamedTuple nor the collections package at
    start-up).
    """

    __slots__ = ()
    _fields = ("line", "col", "src_cols", "arg_col")
    line: int = field_at(0)
    col: int = field_at(1)
    src_cols: tuple[int, ...] = field_at(2)
    arg_col: int | None = field_at(3)

    def __new__(cls, line: int, col: int, src_cols: tuple[int, ...] = (),
                arg_col: int | None = None) -> NodeLoc:
        return tuple.__new__(cls, (line, col, src_cols, arg_col))


@record
class ParseResult:
    """A parsed file: the SINK, each node's first location and first name, the lines."""

    sink: UOp
    loc: dict[UOp, NodeLoc]
    names: dict[UOp, str]
    path: str
    lines: list[str] = field(repr=False, default_factory=list)


def parse(text: str | bytes, path: str = "<input>") -> UOp:
    """The SINK of a `.uop` text, verified; raises SourceError on any bad input."""
    return parse_result(text, path).sink


def parse_file(path: str | Path) -> UOp:
    """The SINK of a `.uop` file, verified; raises SourceError (also when it cannot be read)."""
    return parse_result(read_source(path), str(path)).sink


def read_source(path: str | Path) -> bytes:
    """The bytes of a file, or a SourceError naming the file if it cannot be read (only a
    regular file of at most kcc.ir.limits.MAX_SOURCE_BYTES is read: never a device or FIFO)."""
    from kcc.frontend.files import FileError, read_regular
    from kcc.ir.limits import MAX_SOURCE_BYTES
    try:
        return read_regular(path, MAX_SOURCE_BYTES)
    except FileError as e:
        raise SourceError(str(path), 0, 0, f"cannot read the file: {e}") from None


def parse_result(text: str | bytes, path: str = "<input>", fast: bool = True) -> ParseResult:
    """Parse and verify; the result also maps every node to where it is written. With fast,
    plain statement lines take kcc.frontend.plain's fast path (the same graph, locations and
    errors); fast=False reads every line with the full lexer and parser."""
    lines = split_lines(decode_source(text, path))
    if fast:
        from kcc.frontend.plain import PlainParser
        parser: _Parser = PlainParser(path, lines)
    else:
        parser = _Parser(path, lines)
    # The parser makes no reference cycles, so the cyclic GC only costs time here: its full
    # collections rescan every live node while a 200,000-line file is being read.
    with collector.paused():
        return parser.run()


# -- arg values (their type and checks: kcc/frontend/argvals.py) ------------------------------

@record
class _Frame:
    """An open tuple or constructor while an arg is parsed."""

    col: int
    ctor: str | None = None
    items: list[Val] = field(default_factory=list)
    kw: dict[str, Val] = field(default_factory=dict)
    kw_cols: dict[str, int] = field(default_factory=dict)
    key: str | None = None
    key_col: int = 0

    def close(self) -> Val:
        if self.ctor is None:
            return Val("tuple", tuple(self.items), self.col)
        return Val("ctor", (self.ctor, self.items, self.kw, self.kw_cols), self.col)


# -- the parser -------------------------------------------------------------------------------

class _Parser:
    # a subclass's fast path for one line (kcc.frontend.plain): True when it parsed the line
    _fast_line: Any = None

    def __init__(self, path: str, lines: list[str]):
        self.path = path
        self.lines = lines
        self.env: dict[str, tuple[UOp, int]] = {}         # name -> (node, line)
        self.used: set[str] = set()
        self.stmts: list[tuple[int, str | None, int, UOp]] = []   # line, name, col, node
        self.loc: dict[UOp, NodeLoc] = {}
        self.names: dict[UOp, str] = {}
        # (op, address space, slot): BUFFER slots are unique within their address space
        self.slots: dict[tuple[Ops, AddrSpace, int], tuple[str, int]] = {}
        self.sink: UOp | None = None
        self.sink_line = 0
        # weak STACKs with a lane beyond int64 that a strong use has not committed yet:
        # node -> (lane, message) (`_check_literals`)
        self.uncommitted: dict[UOp, tuple[int, str]] = {}
        self.lx: Lexer = Lexer("", 0, path)

    def error(self, line: int, col: int, message: str) -> SourceError:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceError(self.path, line, col, message, text)

    def run(self) -> ParseResult:
        if not self.lines or all(not ln.strip() for ln in self.lines):
            raise self.error(1, 1, f"empty file: a .uop file starts with the line '{HEADER}'")
        self._header(self.lines[0])
        fast = self._fast_line
        for lineno in range(2, len(self.lines) + 1):
            if fast is not None and fast(lineno, self.lines[lineno - 1]):
                continue
            self.lx = Lexer(self.lines[lineno - 1], lineno, self.path)
            if self.lx.peek().kind == "eol":
                continue
            if self.sink is not None:
                raise self.lx.error(self.lx.peek().col, "a statement after the SINK: the SINK "
                                    f"(line {self.sink_line}) must be the last statement")
            self._statement(lineno)
        if self.sink is None:
            raise self.error(len(self.lines), 1, "no SINK: the last statement must be the "
                             'kernel root, e.g. SINK(%e) KernelInfo(name="k")')
        self._unused()
        self._uncommitted_lanes()
        sink = self._attach_unused_params(self.sink)
        self.loc[sink] = self.loc[self.sink]
        self._verify(sink)
        return ParseResult(sink, self.loc, self.names, self.path, self.lines)

    def _header(self, first: str) -> None:
        if first.rstrip() == HEADER:
            return
        words = first.split()
        if len(words) == 3 and words[:2] == ["#", "kcc-uop"]:
            if words[2] == HEADER.split()[2]:     # the right version, spaced differently
                raise self.error(1, 1, f"bad header {first.rstrip()!r}: write it exactly "
                                 f"'{HEADER}' (one space between the words)")
            raise self.error(1, first.index(words[2]) + 1,
                             f"unsupported .uop version {words[2]!r}: this kcc reads version 1")
        raise self.error(1, 1, f"bad header: the first line of a .uop file must be '{HEADER}'")

    # -- one statement ------------------------------------------------------------------------
    def _statement(self, lineno: int) -> None:
        lx = self.lx
        tok = lx.next()
        name, name_col = None, 0
        if tok.kind == "ref":
            name, name_col = tok.text, tok.col
            self._expect("=", f"expected '=' after {_clip(name)}")
            tok = lx.next()
        if tok.kind != "ident":
            raise lx.error(tok.col, f"expected an op name, found {describe(tok)}")
        op = self._op(tok)
        op_col = tok.col
        if name is not None and name in self.env:
            raise lx.error(name_col, f"{_clip(name)} is already defined on line "
                                     f"{self.env[name][1]}")
        srcs, src_cols, close_col = self._operands(op, lineno)
        arg_val = None
        if lx.peek().kind not in (":", "eol"):
            arg_val = self._arg()
        type_tok: tuple[Token, tuple[int, ...]] | None = None
        if lx.peek().kind == ":":
            lx.next()
            type_tok = self._type()
        if lx.peek().kind != "eol":
            raise lx.error(lx.peek().col, f"unexpected {describe(lx.peek())} after the statement")
        self._check_arity(op, srcs, src_cols, op_col, close_col)
        arg = self._convert_arg(op, arg_val, op_col)
        node = UOp(op, tuple(srcs), arg)
        arg_col = arg_val.col if arg_val is not None else None
        try:
            ut = node.utype
        except IRError as e:
            col = arg_col or op_col
            if e.src_index is not None and e.src_index < len(src_cols):
                col = src_cols[e.src_index]
            raise lx.error(col, e.msg) from None
        self._check_literals(node, src_cols)
        if op in (Ops.PARAM, Ops.BUFFER):
            self._check_param(node, arg_val, name, lineno, op_col)
        if type_tok is not None:
            dt_tok, shape = type_tok
            if ut.dtype is None or (ut.dtype.name, ut.shape) != (dt_tok.text, shape):
                want = dt_tok.text + ("" if not shape else "[" + ",".join(map(str, shape)) + "]")
                raise lx.error(dt_tok.col, f"type assertion {want} disagrees with the derived "
                                           f"type {fmt_utype(ut)} of this {op.name}")
        self.loc.setdefault(node, NodeLoc(lineno, op_col, tuple(src_cols), arg_col))
        if name is not None:
            self.env[name] = (node, lineno)
            self.names.setdefault(node, name)
        self.stmts.append((lineno, name, name_col or op_col, node))
        if op is Ops.SINK:
            self.sink, self.sink_line = node, lineno

    def _expect(self, kind: str, message: str) -> Token:
        tok = self.lx.next()
        if tok.kind != kind:
            raise self.lx.error(tok.col, f"{message}, found {describe(tok)}")
        return tok

    def _op(self, tok: Token) -> Ops:
        op = Ops.__members__.get(tok.text)
        if op is None:
            hint = ""
            if tok.text.upper() in Ops.__members__:
                hint = f" (op names are upper case: {tok.text.upper()})"
            raise self.lx.error(tok.col, f"unknown op {_clip(tok.text)!r}{hint}")
        return op

    def _operands(self, op: Ops, lineno: int) -> tuple[list[UOp], list[int], int]:
        lx = self.lx
        r = ROW[op]
        most = r.max_src if r.variadic else r.nsrc      # None: no upper bound
        if lx.peek().kind != "(":
            return [], [], 0
        lx.next()
        srcs: list[UOp] = []
        cols: list[int] = []
        if lx.peek().kind == ")":
            return srcs, cols, lx.next().col
        while True:
            tok = lx.next()
            if tok.kind == "ref":
                srcs.append(self._lookup(tok, lineno))
            elif tok.kind in ("int", "float", "bool"):
                node = UOp(Ops.CONST, (), tok.value)
                self.loc.setdefault(node, NodeLoc(lineno, tok.col))
                srcs.append(node)
            else:
                raise lx.error(tok.col, "expected an operand (a %name or a literal), found "
                                        + describe(tok))
            cols.append(tok.col)
            if most is not None and len(srcs) > most:    # refuse now, not after a 1 MB line
                self._check_arity(op, srcs, cols, 0, 0)
            sep = lx.next()
            if sep.kind == ")":
                return srcs, cols, sep.col
            if sep.kind != ",":
                raise lx.error(sep.col, f"expected ',' or ')' in the operand list, found "
                                        f"{describe(sep)}")

    def _lookup(self, tok: Token, lineno: int) -> UOp:
        hit = self.env.get(tok.text)
        if hit is not None:
            self.used.add(tok.text)
            return hit[0]
        later = self._defined_later(tok.text, lineno)
        if later:
            raise self.lx.error(tok.col, f"{_clip(tok.text)} is used before it is defined "
                                         f"(on line {later}); define every node before its use")
        raise self.lx.error(tok.col, f"{_clip(tok.text)} is never defined")

    def _defined_later(self, name: str, lineno: int) -> int:
        # Only on the error path, so one linear scan is fine.
        for i in range(lineno, len(self.lines)):
            head = self.lines[i].lstrip()
            if head.startswith(name) and head[len(name):].lstrip().startswith("="):
                return i + 1
        return 0

    def _check_arity(self, op: Ops, srcs: list[UOp], cols: list[int], op_col: int,
                     close_col: int) -> None:
        n = len(srcs)
        if arity_ok(op, n):
            return
        r = ROW[op]
        most = r.max_src if r.variadic else r.nsrc      # None: no upper bound
        col = cols[most] if most is not None and n > most else (close_col or op_col)
        raise self.lx.error(col, f"{op.name} takes {arity_text(op)} src, got {n}")

    def _type(self) -> tuple[Token, tuple[int, ...]]:
        lx = self.lx
        tok = lx.next()
        if tok.kind != "ident":
            raise lx.error(tok.col, f"expected a dtype after ':', found {describe(tok)}")
        if dtypes.by_name(tok.text) is None:
            hint = " (a void node has no type to assert)" if tok.text == "void" else ""
            raise lx.error(tok.col, f"unknown dtype {_clip(tok.text)!r}{hint}")
        shape: list[int] = []
        if lx.peek().kind == "[":
            lx.next()
            while True:
                n = lx.next()
                if n.kind != "int" or n.value < 0:
                    raise lx.error(n.col, f"expected a lane count in the shape, found "
                                          f"{describe(n)}")
                shape.append(n.value)
                sep = lx.next()
                if sep.kind == "]":
                    break
                if sep.kind != ",":
                    raise lx.error(sep.col, f"expected ',' or ']' in the shape, found "
                                            f"{describe(sep)}")
        return tok, tuple(shape)

    # -- args: an explicit stack instead of recursion ------------------------------------------
    def _arg(self) -> Val:
        lx = self.lx
        stack: list[_Frame] = []
        while True:
            tok = lx.next()
            if tok.kind == "(" or (tok.kind == "ident" and tok.text in _CTORS
                                   and lx.peek().kind == "("):
                if len(stack) >= MAX_ARG_DEPTH:
                    raise lx.error(tok.col, f"an arg nested more than {MAX_ARG_DEPTH} "
                                            "levels deep")
                ctor = None
                if tok.kind == "ident":
                    ctor = tok.text
                    lx.next()
                stack.append(_Frame(tok.col, ctor))
                if lx.peek().kind != ")":
                    self._keyword(stack[-1])
                    continue
                lx.next()
                val = stack.pop().close()
            else:
                val = self._atom(tok)
            while True:           # attach the value; close every frame that ends here
                if not stack:
                    return val
                fr = stack[-1]
                if fr.key is not None:
                    if fr.key in fr.kw:
                        raise lx.error(fr.key_col, f"{fr.ctor} field {_clip(fr.key)!r} is "
                                                   "given twice")
                    fr.kw[fr.key] = val
                    fr.kw_cols[fr.key] = fr.key_col
                    fr.key = None
                else:
                    fr.items.append(val)
                sep = lx.next()
                if sep.kind == "," and lx.peek().kind != ")":
                    self._keyword(fr)
                    break
                if sep.kind == ",":
                    sep = lx.next()
                if sep.kind != ")":
                    raise lx.error(sep.col, f"expected ',' or ')' in the arg, found "
                                            f"{describe(sep)}")
                val = stack.pop().close()

    def _keyword(self, fr: _Frame) -> None:
        """Inside a constructor, read `name=` before a field's value if it is there."""
        lx = self.lx
        if fr.ctor is not None and lx.peek().kind == "ident" and lx.peek(1).kind == "=":
            key = lx.next()
            lx.next()
            fr.key, fr.key_col = key.text, key.col
        elif fr.kw:
            raise lx.error(lx.peek().col, "a positional field after a keyword field")

    def _atom(self, tok: Token) -> Val:
        if tok.kind in ("int", "float", "bool"):
            return Val(tok.kind, tok.value, tok.col)
        if tok.kind == "string":
            return Val("str", tok.value, tok.col)
        if tok.kind == "ident":
            if tok.text == "None":
                return Val("none", None, tok.col)
            dt = dtypes.by_name(tok.text)
            if dt is not None:
                return Val("dtype", dt, tok.col)
            return Val("name", tok.text, tok.col)
        raise self.lx.error(tok.col, f"expected an arg, found {describe(tok)}")

    def _convert_arg(self, op: Ops, val: Val | None, op_col: int) -> Any:
        need = ROW[op].arg
        if val is None:
            if need == "required":
                raise self.lx.error(op_col, f"{op.name} needs an arg: "
                                    f"{ARG_FORM[op]}")
            return None
        if need == "none":
            raise self.lx.error(val.col, f"{op.name} takes no arg")
        err = self.lx.error
        if op is Ops.CONST:
            if val.kind not in ("int", "float", "bool"):
                raise err(val.col, "CONST takes a literal: an integer, a float, true or false")
            return val.v
        if op in (Ops.CAST, Ops.BITCAST):
            if val.kind == "name":
                raise err(val.col, f"unknown dtype {_clip(val.v)!r}")
            if val.kind != "dtype" or val.v.is_weak:
                raise err(val.col, f"{op.name} takes a strong dtype, e.g. {op.name}(%x) float32")
            return val.v
        if op is Ops.SPECIAL:
            if val.kind != "str":
                raise err(val.col, 'SPECIAL takes its index name as a string, e.g. "gidx0"')
            return val.v
        if op is Ops.RANGE:
            return self._range_arg(val)
        if op is Ops.WMMA:
            return self._wmma_arg(val)
        ctor = "KernelInfo" if op is Ops.SINK else "ParamArg"
        if val.kind != "ctor" or val.v[0] != ctor:
            raise err(val.col, f"{op.name} takes {ARG_FORM[op]}")
        return self._ctor(val)

    def _range_arg(self, val: Val) -> tuple:
        items = val.v if val.kind == "tuple" else ()
        # tinygrad writes any number of axis ids before the AxisType: (4, 0, 0, WEAK)
        ok = len(items) >= 2 and all(x.kind == "int" for x in items[:-1])
        if not ok or items[-1].kind != "name" or items[-1].v not in AxisType.__members__:
            bad = next((x for x in items[:-1] if x.kind != "int"), None)
            if ok and items[-1].kind in ("name", "dtype"):
                bad = items[-1]
                raise self.lx.error(bad.col, f"unknown axis type {_clip(word(bad))!r}; one of "
                                             + " ".join(AxisType.__members__))
            raise self.lx.error((bad or val).col, f"RANGE takes {ARG_FORM[Ops.RANGE]}")
        return tuple(x.v for x in items[:-1]) + (AxisType[items[-1].v],)

    def _wmma_arg(self, val: Val) -> tuple:
        """((N, M, K), dtype_in, device, threads, None) as plain values; the rule table checks
        what they mean (kcc.ir.rules)."""
        items = val.v if val.kind == "tuple" else ()
        kinds = ("tuple", "dtype", "str", "int", "none")
        bad = val if len(items) != 5 else next(
            (x for x, k in zip(items, kinds) if x.kind != k), None)
        dims = items[0].v if len(items) == 5 and items[0].kind == "tuple" else ()
        if bad is None and (len(dims) != 3 or any(d.kind != "int" for d in dims)):
            bad = items[0]
        if bad is not None:
            if bad.kind == "name" and bad is items[1]:
                raise self.lx.error(bad.col, f"unknown dtype {_clip(word(bad))!r}")
            raise self.lx.error(bad.col, f"WMMA takes {ARG_FORM[Ops.WMMA]}")
        return (tuple(d.v for d in dims), items[1].v, items[2].v, items[3].v, None)

    def _ctor(self, val: Val) -> Any:
        name, pos, kw, kw_cols = val.v
        cls = _CTORS[name]
        fs = fields(cls)
        err = self.lx.error
        if len(pos) > len(fs):
            raise err(pos[len(fs)].col, f"{name} takes at most {len(fs)} fields")
        given: dict[str, Val] = {f.name: v for f, v in zip(fs, pos)}
        names = [f.name for f in fs]
        for key, v in kw.items():
            if key not in names:
                raise err(kw_cols[key], f"{name} has no field {_clip(key)!r}; its fields are "
                                 + ", ".join(names))
            if key in given:
                raise err(kw_cols[key], f"{name} field {_clip(key)!r} is given twice")
            given[key] = v
        values: dict[str, Any] = {}
        for f in fs:
            v = given.get(f.name)
            if v is None:
                if f.default is MISSING:
                    raise err(val.col, f"{name} needs its {f.name!r} field")
                continue
            values[f.name] = FIELD_CONVERT[f.name](v, err)
        return cls(**values)

    def _check_param(self, node: UOp, val: Val | None, name: str | None, lineno: int,
                     col: int) -> None:
        pa: ParamArg = node.arg
        space = AddrSpace.GLOBAL if node.op is Ops.PARAM else pa.addrspace
        key = (node.op, space, pa.slot)
        prev = self.slots.get(key)
        if prev is not None:
            where = f" (among {space.name} BUFFERs)" if node.op is Ops.BUFFER else ""
            raise self.lx.error(val.col if val else col, f"{node.op.name} slot {pa.slot} is "
                                f"already declared by {_clip(prev[0])} on line {prev[1]}{where}")
        self.slots[key] = (name or node.op.name, lineno)
        if pa.vmin_vmax is not None:
            vcol = val.v[2]["vmin_vmax"].col if val and "vmin_vmax" in val.v[2] else val.col
            for x in pa.vmin_vmax:
                msg = "a bound is nan" if isinstance(x, float) and math.isnan(x) else \
                    out_of_range(x, pa.dtype)
                if msg:
                    raise self.lx.error(vcol, f"vmin_vmax: {msg}")

    # -- literal ranges --------------------------------------------------------------------------
    def _check_literals(self, node: UOp, cols: list[int]) -> None:
        """Refuse a CONST operand out of range of the dtype it is committed to.

        Checked commitments: a literal among promoted operands beside a strong one (the
        promoted dtype), a literal stored into a place or used as a LOAD's alt (the place's
        dtype); a CAST of a literal is not one, it converts like any CAST. A literal that
        stays weak must fit int64 (index arithmetic) or, a float, float64. Values reached only
        through other arithmetic are not folded here.
        """
        for i, s in enumerate(node.src):
            if s.op is not Ops.CONST:
                if s.op is Ops.STACK and s.dtype.is_weak:
                    self._commit_lanes(node, i, s, cols[i])
                continue
            if isinstance(s.arg, bool):
                continue
            dt = self._committed(node, i)
            if dt is not None:
                msg = out_of_range(s.arg, dt)
                if msg and node.op is Ops.STACK and dt.kind == "weakint" \
                        and out_of_range(s.arg, dtypes.uint64) is None:
                    # a weak STACK's lanes take the dtype of the strong operand beside it,
                    # as a literal does: a lane in (int64, uint64] waits for that use
                    self.uncommitted.setdefault(node, (i, msg))
                elif msg:
                    raise self.lx.error(cols[i], msg)

    def _commit_lanes(self, node: UOp, i: int, stack: UOp, col: int) -> None:
        """A weak STACK of literals used as src i of node: where that commits it to a strong
        dtype, every literal lane must be a value of it (`STACK(0, 300) : weakint[2]` beside
        a uint8[2] is refused at the use, as `ADD(%x_uint8, 300)` is)."""
        dt = self._committed(node, i)
        if dt is None or dt.is_weak:
            return
        for k, lane in enumerate(stack.src):
            if lane.op is Ops.CONST and not isinstance(lane.arg, bool):
                msg = out_of_range(lane.arg, dt)
                if msg:
                    raise self.lx.error(col, f"lane {k} of this STACK: {msg}")
        self.uncommitted.pop(stack, None)

    def _uncommitted_lanes(self) -> None:
        """Refuse a weak STACK whose lane beyond int64 no strong use committed (it stays
        index arithmetic, at most int64 after lowering)."""
        for node, (i, msg) in self.uncommitted.items():
            loc = self.loc[node]
            raise self.error(loc.line, loc.src_cols[i], msg)

    @staticmethod
    def _committed(node: UOp, i: int) -> DType | None:
        op, src = node.op, node.src
        if op is Ops.CAST:
            # CAST converts a literal like any value (docs/semantics.md): ints wrap, a float
            # beyond a float dtype's range is ±inf, a float saturates into an integer dtype.
            return None
        if i == 1 and (op is Ops.STORE or op is Ops.LOAD):
            return src[0].dtype
        pos = _COMMIT_POS.get(op, ())
        if pos is None:
            pos = range(len(src))
        if i not in pos:
            return src[i].dtype
        if op in COMPARE:
            return promote(src[0].dtype, src[1].dtype)
        return node.dtype

    # -- whole-file checks ---------------------------------------------------------------------
    def _unused(self) -> None:
        for lineno, name, col, node in self.stmts:
            if node.op in (Ops.PARAM, Ops.SINK) or (name is not None and name in self.used):
                continue
            what = _clip(name) if name else f"this {node.op.name}"
            dup = ""
            first = self.names.get(node)
            if first is not None and first != name:
                dup = f" (it is the same node as {_clip(first)}, line {self.env[first][1]})"
            raise self.error(lineno, col, f"{what} is never used{dup}; only a PARAM may be "
                                          "unused")

    def _attach_unused_params(self, sink: UOp) -> UOp:
        """Every PARAM keeps its signature slot: one no line uses becomes a SINK src.

        A PARAM used by name is reachable from the SINK, since every other line is used by a
        later one (checked by `_unused`), so no graph walk is needed here.
        """
        extra = sorted({n for _, name, _, n in self.stmts
                        if n.op is Ops.PARAM and name not in self.used}, key=lambda n: n.arg.slot)
        return sink if not extra else sink.replace(src=sink.src + tuple(extra))

    def _verify(self, sink: UOp) -> None:
        try:
            verify(sink)
            check_bounds(sink)
        except VerifyError as e:
            loc = self.loc.get(e.node, NodeLoc(self.sink_line, 1))
            col = loc.col
            if e.src_index is not None and e.src_index < len(loc.src_cols):
                col = loc.src_cols[e.src_index]
            msg = e.msg
            if e.related is not None and e.related in self.loc:
                rel = _clip(self.names.get(e.related, e.related.op.name))
                msg += f" ({rel}, line {self.loc[e.related].line})"
            raise self.error(loc.line, col, msg) from None
