"""Importer for tinygrad's linearized programs: a list of tinygrad UOps to `.uop` v1 text.

This module does not import tinygrad. `kcc.tinygrad` (the only module that does) turns each
tinygrad UOp of a linearized program into a `TgNode` — op name, kcc dtype name, a plain arg, the
positions of its sources — and this module turns that list into a kernel in the `.uop` format.
The rules (docs/tinygrad.md):

- every constant is written as tinygrad typed it: a weak CONST is a literal operand, a CONST of a
  strong dtype (or a CAST of a literal) is `CAST(literal) dtype`, the format's strong constant;
- `IF(gate, place) … STORE(place, value) … ENDIF` becomes `STORE(place, value, gate)`;
- repeated sources of SINK and GROUP are merged (an effect is listed once);
- a PARAM's or BUFFER's shape operand becomes its element count; tinygrad's `core_id` (an ALU
  PARAM naming the CPU thread) becomes kcc's worker index `SPECIAL(n) "gidx0"` when it is the
  last scalar (kcc passes gidx0 after all PARAMs), else it stays a scalar PARAM `core_id`;
- PARAM slots are renumbered densely: buffers first, then scalars, in tinygrad's slot order;
- only nodes the SINK reaches are written (tinygrad lists shape operands nobody else uses);
- a RANGE keeps tinygrad's whole arg, any number of axis ids then the AxisType: `(4, 0, 0, WEAK)`;
- a NOOP among the effects of a SINK or GROUP is no effect and is dropped; a program with no
  effect at all (tinygrad's kernel for a zero-size output) stores to a private byte instead.

A construct with no `.uop` spelling raises `TinygradImportError` naming it (`REFUSED` says why
for each op tinygrad can emit that kcc refuses; docs/tinygrad.md has the table of forms).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from kcc.frontend.printer import format_arg, format_literal
from kcc.ir import dtypes
from kcc.ir.rules import SPECIAL_NAMES
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg

# tinygrad op names that are kcc op names with the same meaning and operand order
SAME_OPS = frozenset({
    "SPECIAL", "RANGE", "END", "INDEX", "SHRINK", "LOAD", "STORE", "AFTER", "BARRIER", "GROUP",
    "STACK", "CAST", "BITCAST", "NEG", "EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "TRUNC",
    "ADD", "SUB", "MUL", "FDIV", "CDIV", "CMOD", "MAX", "CMPLT", "CMPNE", "CMPEQ", "AND", "OR",
    "XOR", "SHL", "SHR", "THREEFRY", "WHERE", "MULACC",
})
# effects listed once in a SINK or GROUP
_MERGED = frozenset({"SINK", "GROUP"})
# tinygrad ops that can reach a renderer and have no `.uop` v1 spelling, with the reason
REFUSED = {
    "CUSTOM": "inline C source, which kcc does not compile",
    "CUSTOMI": "inline C source, which kcc does not compile",
    "CALL": "a call of an external function through a pointer",
    "INS": "a machine instruction of tinygrad's ISA renderers",
    "IF": "an IF that gates something other than one STORE",
    "ENDIF": "an ENDIF without its IF",
}
# AxisTypes tinygrad rewrites away before rendering (a DEVICE range becomes the _device_num
# variable; PLACEHOLDER exists only while optimizing)
_GONE_AXES = frozenset({"DEVICE", "PLACEHOLDER"})
WORKER_VAR = "core_id"
_REF = re.compile(r"%[0-9A-Za-z_.]+")
# ops that are a buffer or a place when their first src is one
_THROUGH = frozenset({"INDEX", "SHRINK", "AFTER"})


class TinygradImportError(Exception):
    """A tinygrad program that has no `.uop` v1 spelling; the message names the construct."""


@dataclass(frozen=True)
class TgParam:
    """What kcc needs of a tinygrad PARAM or BUFFER (the arg of its TgNode)."""

    slot: int
    dtype: str
    size: int | None = None              # element count (a buffer's largest, if symbolic)
    addrspace: str = "GLOBAL"            # GLOBAL, LOCAL, REG, ALU
    vmin_vmax: tuple[int, int] | None = None
    name: str | None = None
    volatile: bool = False


@dataclass(frozen=True)
class TgNode:
    """One tinygrad UOp of a linearized program.

    `op` is tinygrad's op name; `dtype` the kcc name of its scalar dtype (None for void);
    `arg`: a TgParam (PARAM, BUFFER), the value (CONST), a kcc dtype name (CAST, BITCAST),
    `(axis ints..., AxisType name)` (RANGE), a name (SPECIAL), the kernel name (SINK);
    `src`: positions of the sources in the list."""

    op: str
    dtype: str | None
    arg: Any
    src: tuple[int, ...] = ()


@dataclass
class ImportedKernel:
    """The `.uop` text of a kernel and facts the caller needs to call it."""

    name: str
    text: str
    # kcc slot -> tinygrad slot, for PARAMs in kcc's argument order
    slots: list[int] = field(default_factory=list)
    # the tinygrad slot of core_id (the worker index) and its count, if the kernel has one
    worker_slot: int | None = None
    workers: int = 1
    # core_id is the scalar PARAM at worker_slot (not gidx0): it had not the last slot
    worker_param: bool = False


def _literal(value: Any, where: str) -> str:
    if isinstance(value, (bool, int)):
        return format_literal(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return format_literal(value)
    raise TinygradImportError(f"{where}: a constant {value!r} (only scalar literals are "
                              "supported)")


def _dtype(name: str | None, where: str) -> str:
    if name is None or dtypes.by_name(name) is None or name in ("weakint", "weakfloat"):
        raise TinygradImportError(f"{where}: dtype {name!r} has no .uop v1 spelling")
    return name


def _is_weak(dt: str | None) -> bool:
    return dt in ("weakint", "weakfloat")


class _Writer:
    """Turns the node list into `.uop` lines (one pass; see the module docstring)."""

    def __init__(self, nodes: list[TgNode], name: str):
        self.nodes, self.name = nodes, name
        self.expr: dict[int, str] = {}         # node -> operand text (a %name or a literal)
        self.lines: list[tuple[str, str]] = []  # (name, statement without the name)
        self.skip: set[int] = set()            # IF / ENDIF / shape-only nodes
        self.worker_node: int | None = None    # core_id's node when it becomes gidx0

    def where(self, i: int) -> str:
        return f"kernel {self.name}: node {i} ({self.nodes[i].op})"

    def fold_ifs(self) -> dict[int, int]:
        """STORE node -> gate node for stores between IF(gate, place) and its ENDIF."""
        gated: dict[int, int] = {}
        open_ifs: list[int] = []
        for i, n in enumerate(self.nodes):
            if n.op == "IF":
                open_ifs.append(i)
                self.skip.add(i)
            elif n.op == "ENDIF":
                if not open_ifs or n.src[:1] != (open_ifs[-1],):
                    raise TinygradImportError(f"{self.where(i)}: ENDIF without its IF")
                open_ifs.pop()
                self.skip.add(i)
            elif n.op == "STORE" and open_ifs:
                if len(open_ifs) > 1:
                    raise TinygradImportError(f"{self.where(i)}: a STORE under nested IFs")
                gate, place = self.nodes[open_ifs[-1]].src[:2]
                if n.src[0] != place:
                    raise TinygradImportError(f"{self.where(i)}: a STORE under an IF that "
                                              "gates another place")
                gated[i] = gate
            elif open_ifs and n.op in ("END", "RANGE", "BARRIER"):
                raise TinygradImportError(f"{self.where(i)}: {n.op} inside an IF block")
        if open_ifs:
            raise TinygradImportError(f"{self.where(open_ifs[-1])}: IF without ENDIF")
        return gated

    def renumber(self) -> tuple[dict[int, int], list[int], int | None, int]:
        """Dense kcc slots: buffers, then scalars, by tinygrad slot. core_id becomes gidx0 when
        it is the last scalar (kcc passes gidx0 after every PARAM, tinygrad core_id at its
        slot); otherwise it stays a scalar PARAM at its slot, with its value range."""
        params = [(i, n.arg) for i, n in enumerate(self.nodes) if n.op == "PARAM"]
        worker = [(i, p) for i, p in params if p.addrspace == "ALU" and p.name == WORKER_VAR]
        if len({p.slot for _, p in params}) != len(params):
            raise TinygradImportError(f"kernel {self.name}: two PARAMs share a slot")
        wslot, workers = None, 1
        if worker:
            if len(worker) > 1:
                raise TinygradImportError(f"kernel {self.name}: two {WORKER_VAR} PARAMs")
            _, wp = worker[0]
            if wp.vmin_vmax is None or wp.vmin_vmax[0] != 0:
                raise TinygradImportError(f"kernel {self.name}: {WORKER_VAR} must count from 0")
            wslot, workers = wp.slot, int(wp.vmin_vmax[1]) + 1
            if wp.slot < max(p.slot for _, p in params if p.addrspace == "ALU"):
                worker = []                     # a scalar PARAM, in slot order
        self.worker_node = worker[0][0] if worker else None
        rest = [(i, p) for i, p in params if i != self.worker_node]
        bufs = sorted((x for x in rest if x[1].addrspace != "ALU"), key=lambda x: x[1].slot)
        scal = sorted((x for x in rest if x[1].addrspace == "ALU"), key=lambda x: x[1].slot)
        order = bufs + scal
        slot_of = {i: k for k, (i, _) in enumerate(order)}
        return slot_of, [p.slot for _, p in order], wslot, workers

    def param_line(self, i: int, n: TgNode, slot: int) -> str:
        p: TgParam = n.arg
        space = AddrSpace[p.addrspace]
        dt = dtypes.by_name(_dtype(p.dtype, self.where(i)))
        if n.op == "PARAM" and space is AddrSpace.ALU:
            arg = ParamArg(slot, dt, None, p.vmin_vmax, _c_name(p.name), space)
        else:
            if p.size is None:
                raise TinygradImportError(f"{self.where(i)}: a buffer without a size")
            arg = ParamArg(slot, dt, p.size, None, None, space, p.volatile)
        return f"{n.op} {format_arg(arg)}"

    def run(self) -> str:
        gated = self.fold_ifs()
        slot_of, _, _, _ = self.renumber()
        used = self.reachable(gated)
        for i, n in enumerate(self.nodes):
            if i not in used or i in self.skip:
                continue
            self.write(i, n, gated, slot_of)
        # keep only lines a later line uses (tinygrad lists constants only shapes use)
        refs: set[str] = set()
        kept: list[str] = []
        for name, stmt in reversed(self.lines):
            if stmt.startswith("SINK"):
                kept.append(stmt)
            elif f"%{name}" in refs or stmt.startswith("PARAM"):
                kept.append(f"%{name} = {stmt}")
            else:
                continue
            refs.update(_REF.findall(stmt))
        out = ["# kcc-uop 1", f"# tinygrad kernel {self.name}", *reversed(kept)]
        return "\n".join(out) + "\n"

    def reachable(self, gated: dict[int, int]) -> set[int]:
        """Nodes the SINK reaches through the sources kept in the text."""
        sinks = [i for i, n in enumerate(self.nodes) if n.op == "SINK"]
        if len(sinks) != 1 or sinks[0] != len(self.nodes) - 1:
            raise TinygradImportError(f"kernel {self.name}: the program must end with its "
                                      "one SINK")
        seen: set[int] = set()
        stack = [sinks[0]]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            n = self.nodes[i]
            if n.op in ("PARAM", "BUFFER", "CONST", "NOOP"):
                continue                        # shape operands are not written
            stack.extend(n.src)
            if i in gated:
                stack.append(gated[i])
        return seen

    def is_place(self, j: int) -> bool:
        """Whether node j is a buffer or a place (an INDEX of a vector value is a lane)."""
        n = self.nodes[j]
        while n.op in _THROUGH and n.src:
            n = self.nodes[n.src[0]]
        return n.op == "BUFFER" or (n.op == "PARAM" and n.arg.addrspace != "ALU")

    def place_dtype(self, j: int) -> str | None:
        """The element dtype of the buffer under place j (None when j is no place)."""
        n = self.nodes[j]
        while n.op in _THROUGH and n.src:
            n = self.nodes[n.src[0]]
        return n.arg.dtype if n.op in ("BUFFER", "PARAM") else None

    def load_as(self, i: int, n: TgNode) -> None:
        """A LOAD of another dtype than its buffer's: tinygrad's PTX renderer loads a bool
        buffer as uint8 (PTX has no 8-bit predicate memory, renderer/ptx.py's bool rules), and
        `.uop`'s LOAD has its place's dtype; so the place's value, then a CAST (a bool buffer
        holds 0 or 1, so bool -> uint8 gives the byte tinygrad's load reads)."""
        have = self.place_dtype(n.src[0])
        if {have, n.dtype} != {"bool", "uint8"}:
            raise TinygradImportError(f"{self.where(i)}: a {n.dtype} LOAD of a {have} buffer "
                                      "has no .uop v1 spelling")
        ops = [self.operand(j, i) for j in n.src]
        if len(ops) > 1:                        # the alt, in the load's dtype: the place's
            self.lines.append((f"{i}.alt", f"CAST({ops[1]}) {have}"))
            ops[1] = f"%{i}.alt"
        self.lines.append((f"{i}.mem", f"LOAD({', '.join(ops)})"))
        self.lines.append((str(i), f"CAST(%{i}.mem) {n.dtype}"))
        self.expr[i] = f"%{i}"

    def operand(self, j: int, user: int) -> str:
        if j not in self.expr:
            raise TinygradImportError(f"{self.where(user)}: uses node {j} "
                                      f"({self.nodes[j].op}), which has no .uop value")
        return self.expr[j]

    def write(self, i: int, n: TgNode, gated: dict[int, int], slot_of: dict[int, int]) -> None:
        where = self.where(i)
        if n.op == "NOOP":
            return                              # no effect; a user of its value is refused
        if n.op == "CONST":
            lit = _literal(n.arg, where)
            if _is_weak(n.dtype) or n.dtype == "bool":
                self.expr[i] = lit
                return
            lit = _wrapped(n, _dtype(n.dtype, where), lit)
            self.lines.append((str(i), f"CAST({lit}) {n.dtype}"))
        elif n.op == "PARAM" and i == self.worker_node:
            _, hi = n.arg.vmin_vmax
            self.lines.append((f"{i}.n", f"CAST({int(hi) + 1}) {_dtype(n.dtype, where)}"))
            self.lines.append((str(i), f'SPECIAL(%{i}.n) "gidx0"'))
        elif n.op == "PARAM":
            self.lines.append((str(i), self.param_line(i, n, slot_of[i])))
        elif n.op == "BUFFER":
            self.lines.append((str(i), self.param_line(i, n, n.arg.slot)))
        elif n.op == "SINK":
            srcs = [self.operand(j, i) for j in dict.fromkeys(n.src)
                    if self.nodes[j].op != "NOOP"]
            if not srcs:
                # tinygrad's empty kernel (a zero-size output): `.uop` needs an effect, so one
                # store to a private byte nobody reads, which compiles to nothing
                self.lines += [("empty.buf", "BUFFER ParamArg(0, uint8, 1, addrspace=REG)"),
                               ("empty.at", "INDEX(%empty.buf, 0)"),
                               ("empty", "STORE(%empty.at, 0)")]
                srcs = ["%empty"]
            self.lines.append((str(i), f"SINK({', '.join(srcs)}) "
                                  f"{format_arg(KernelInfo(self.name))}"))
            return
        elif n.op == "RANGE" and n.dtype is None:
            raise TinygradImportError(f"{where}: a bound-less loop (a void RANGE, UOp.loop, "
                                      "closed by END(body, loop, condition)) has no .uop v1 "
                                      "spelling")
        elif n.op == "INDEX" and len(n.src) != 2:
            raise TinygradImportError(f"{where}: an INDEX with {len(n.src)} srcs (a gate or image "
                                      "coordinates left on the INDEX) has no .uop v1 spelling")
        elif n.op == "BARRIER" and any(self.nodes[j].dtype is not None for j in n.src):
            raise TinygradImportError(f"{where}: a BARRIER that waits for loads (tinygrad's "
                                      "write-after-read barrier of a LOCAL buffer) has no .uop v1 "
                                      "spelling")
        elif n.op == "LOAD" and self.place_dtype(n.src[0]) not in (None, n.dtype):
            self.load_as(i, n)
            return
        elif n.op == "WMMA":
            ops = ", ".join(self.operand(j, i) for j in n.src)
            self.lines.append((str(i), f"WMMA({ops}) {_wmma_arg(n.arg, where)}"))
        elif n.op in SAME_OPS:
            src = list(dict.fromkeys(n.src)) if n.op in _MERGED else list(n.src)
            if n.op in _MERGED:
                src = [j for j in src if self.nodes[j].op != "NOOP"]
            ops = [self.operand(j, i) for j in src]
            if i in gated:
                ops.append(self.operand(gated[i], i))
            if n.op == "CAST" and ops and _is_weak(self.nodes[n.src[0]].dtype):
                ops[0] = _wrapped(self.nodes[n.src[0]], n.arg, ops[0])
            text = f"{n.op}({', '.join(ops)})" if ops else n.op
            if n.op in ("CAST", "BITCAST"):
                if ops and self.is_place(n.src[0]):
                    raise TinygradImportError(f"{where}: a {n.op} of a buffer or place (a pointer "
                                              "reinterpretation) has no .uop v1 spelling")
                text += " " + _dtype(n.arg, where)
            elif n.op == "RANGE":
                text += " " + _range_arg(n.arg, where)
            elif n.op == "SPECIAL":
                if n.arg not in SPECIAL_NAMES:
                    names = ", ".join(SPECIAL_NAMES)
                    raise TinygradImportError(f"{where}: SPECIAL {n.arg!r} has no .uop v1 "
                                              f"spelling (the names are {names})")
                text += " " + format_arg(str(n.arg))
            self.lines.append((str(i), text))
        else:
            why = f" ({REFUSED[n.op]})" if n.op in REFUSED else ""
            if n.op in ("CUSTOM", "CUSTOMI") and isinstance(n.arg, str):
                why = f" ({REFUSED[n.op]}: {n.arg[:60]!r})"
            raise TinygradImportError(f"{where}: tinygrad op {n.op}{why} has no .uop v1 spelling")
        self.expr[i] = f"%{i}"


def _range_arg(arg: Any, where: str) -> str:
    if isinstance(arg, tuple) and arg and arg[-1] in _GONE_AXES:
        raise TinygradImportError(f"{where}: a RANGE of axis type {arg[-1]} (tinygrad rewrites "
                                  "it away before rendering) has no .uop v1 spelling")
    if not (isinstance(arg, tuple) and len(arg) >= 2 and arg[-1] in AxisType.__members__
            and all(isinstance(a, int) for a in arg[:-1])):
        raise TinygradImportError(f"{where}: RANGE arg {arg!r} has no .uop v1 spelling")
    return "(" + ", ".join([*(str(a) for a in arg[:-1]), arg[-1]]) + ")"


def _wmma_arg(arg: Any, where: str) -> str:
    """tinygrad's WMMA arg `((N, M, K), dtype_in name, device, threads, None)` as .uop text
    (the rule table judges the form; here only its spelling)."""
    ok = (isinstance(arg, tuple) and len(arg) == 5 and isinstance(arg[0], tuple)
          and all(isinstance(d, int) for d in arg[0]) and isinstance(arg[2], str)
          and isinstance(arg[3], int) and arg[4] is None)
    if not ok:
        raise TinygradImportError(f"{where}: WMMA arg {arg!r} has no .uop v1 spelling")
    dims = "(" + ", ".join(map(str, arg[0])) + ")"
    return f"({dims}, {_dtype(arg[1], where)}, {format_arg(arg[2])}, {arg[3]}, None)"


def _wrapped(src: TgNode, dtype: str, text: str) -> str:
    """A weak integer literal CAST to an integer dtype, as the dtype's value when the literal
    itself lies outside int64 and uint64 (tinygrad folds `uint64.max + 2` to 2**64 + 1; the
    CAST keeps its low bits, as C's conversion and docs/semantics.md do)."""
    v = src.arg
    if src.op != "CONST" or isinstance(v, bool) or not isinstance(v, int) or \
            -(1 << 63) <= v < (1 << 64):
        return text
    dt = dtypes.by_name(dtype)
    if dt is None or not dt.is_int:
        return format_literal(float(v))         # rounds once to float64, then to the dtype
    v &= (1 << dt.bits) - 1
    if dt.is_signed and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return format_literal(v)


def _c_name(name: str | None) -> str | None:
    """A scalar's name kept when it is a C identifier (a Variable's name usually is)."""
    if name and name.isidentifier() and name.isascii():
        return name
    return None


def import_program(nodes: list[TgNode], name: str) -> ImportedKernel:
    """The `.uop` v1 text of a linearized tinygrad program named `name` (a C identifier)."""
    if not (name.isidentifier() and name.isascii()):
        raise TinygradImportError(f"kernel name {name!r} is not a C identifier")
    w = _Writer(nodes, name)
    text = w.run()
    _, slots, wslot, workers = w.renumber()
    return ImportedKernel(name, text, slots, wslot, workers,
                          wslot is not None and w.worker_node is None)
