"""The canonical `.uop` printer: a graph to text that parses back to the same graph.

Canonical form (what `kcc fmt` writes):
- the header, then the PARAMs in slot order, the BUFFERs in slot order, then every other node
  in the graph's deterministic depth-first order (srcs before users), and the SINK last;
- nodes are named `%0, %1, …` in that order; a hash-consed node is one line however many
  lines of the input spelled it;
- a CONST is written as a literal operand, never on a line of its own;
- every node that has a type gets it as an assertion, aligned at column 40;
- a PARAM no node uses is not written among the SINK's operands (the parser appends such
  PARAMs to the SINK's srcs in slot order, so the graph is the same).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from kcc.ir.dtype import DType
from kcc.ir.ops import Ops
from kcc.ir.rules import fmt_utype
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp, toposort

HEADER = "# kcc-uop 1"
_TYPE_COLUMN = 40


def format_uop(sink: UOp, comments: list[str] | tuple[str, ...] = ()) -> str:
    """The canonical text of the graph under `sink`; `comments` go right after the header."""
    order = toposort([sink])
    params = sorted((n for n in order if n.op is Ops.PARAM), key=lambda n: n.arg.slot)
    buffers = sorted((n for n in order if n.op is Ops.BUFFER),
                     key=lambda n: (n.arg.slot, n.arg.addrspace.name))
    rest = [n for n in order if n.op not in (Ops.PARAM, Ops.BUFFER, Ops.CONST) and n is not sink]
    names: dict[UOp, str] = {}
    out = [HEADER, *comments]
    for n in params + buffers + rest:
        names[n] = f"%{len(names)}"
        out.append(_line(n, names, names[n] + " = ", n.src))
    out.append(_line(sink, names, "", _sink_srcs(sink, order)))
    return "\n".join(out) + "\n"


def leading_comments(text: str) -> list[str]:
    """The comment lines right after the header of a `.uop` text (kept by `kcc fmt`)."""
    lines = text.split("\n")[1:]
    out: list[str] = []
    for ln in lines:
        ln = ln.rstrip("\r").rstrip()
        if not ln.lstrip().startswith("#"):
            break
        out.append(ln.lstrip())
    return out


def _sink_srcs(sink: UOp, order: list[UOp]) -> tuple[UOp, ...]:
    """The SINK's srcs to write: drop the trailing PARAMs the parser would append again."""
    used = {s for n in order if n is not sink for s in n.src}
    src = list(sink.src)
    tail: list[UOp] = []
    while src and src[-1].op is Ops.PARAM and src[-1] not in used and src[-1] not in tail:
        tail.insert(0, src.pop())
    unused_elsewhere = [s for s in src if s.op is Ops.PARAM and s not in used]
    slots = [p.arg.slot for p in tail]
    if unused_elsewhere or slots != sorted(slots):
        return sink.src       # not the parser's own shape: write every src explicitly
    return tuple(src)


def _line(n: UOp, names: dict[UOp, str], head: str, srcs: tuple[UOp, ...]) -> str:
    text = head + n.op.name
    if srcs:
        text += "(" + ", ".join(names[s] if s in names else format_literal(s.arg)
                                for s in srcs) + ")"
    if n.arg is not None:
        text += " " + format_arg(n.arg)
    if n.dtype is None:
        return text
    return f"{text:<{_TYPE_COLUMN - 2}} : {fmt_utype(n.utype)}"


def format_literal(v: bool | int | float) -> str:
    """A literal as the lexer reads it back exactly (repr keeps every float bit but a NaN's)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    return str(v)


def format_arg(arg: Any) -> str:
    """An op's arg in .uop syntax: literal, string, dtype, enum, tuple or constructor."""
    if arg is None:
        return "None"                 # inside a tuple arg (WMMA's last field)
    if isinstance(arg, (bool, int, float)):
        return format_literal(arg)
    if isinstance(arg, str):
        return _string(arg)
    if isinstance(arg, DType):
        return arg.name
    if isinstance(arg, (AxisType, AddrSpace)):
        return arg.name
    if isinstance(arg, tuple):
        items = [format_arg(a) for a in arg]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(arg, (ParamArg, KernelInfo)):
        return _ctor(arg)
    raise ValueError(f"no .uop syntax for an arg of type {type(arg).__name__}")


def _ctor(arg: ParamArg | KernelInfo) -> str:
    """Required fields and a non-None size positionally, other non-defaults as keywords."""
    parts: list[str] = []
    positional = True
    for f in dataclasses.fields(arg):
        v = getattr(arg, f.name)
        if f.default is dataclasses.MISSING and positional and not isinstance(arg, KernelInfo):
            parts.append(format_arg(v))
        elif f.name == "size" and positional and v is not None:
            parts.append(format_arg(v))
        elif f.default is dataclasses.MISSING or v != f.default:
            positional = False
            parts.append(f"{f.name}={format_arg(v)}")
        else:
            positional = False
    return f"{type(arg).__name__}({', '.join(parts)})"


def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif not ch.isprintable() and ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
