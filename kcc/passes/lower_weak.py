"""Weak-dtype lowering: after this pass no value node has a weak dtype.

Rules (UOP_FORMAT.md, weak dtypes):
- A weakint node gets its *natural* width: int32 when its value range (kcc.ir.ranges) fits
  int32 and every weak operand it computes from got int32, else int64. Weak integers are exact
  mathematical integers, so computing each node at a width that holds its whole range keeps
  every value exact.
- A weak operand beside a strong one (an ALU operand, a STORE's value or a LOAD's alt beside
  the place) is requested at the strong dtype: a weak expression is computed at its natural
  dtype and then CAST once (docs/semantics.md, weak dtypes): a weakint at its natural width,
  a weakfloat in float64 — so `STORE(float32 place, FDIV(0.001, 0.2))` is the float64 quotient
  rounded once to float32, never a float32 division; a literal becomes `CAST(CONST v) dtype`,
  the one form of a strong constant (the exact value rounded once).
- A weak selection (WHERE, STACK, a vector lane, AFTER) requested at a dtype is built in
  that dtype directly (selection commutes with conversion): `WHERE(c, 1, 2)` stored into int8
  is an int8 WHERE of int8 constants.
- A weakfloat that meets no strong dtype (e.g. `CMPLT(1.5, 2.5)`) is computed in float64.
- Indices, SHRINK starts, RANGE and SPECIAL bounds take the natural width of their weakint.
- Static operands stay CONSTs: a SHRINK's length and a vector lane index (the rule table
  requires a CONST there; they are not computed values). `CAST(CONST v) dt` keeps its CONST.

The walk is iterative (a 200,000-node chain is fine). A weak node requested at several dtypes
is built once at its natural dtype plus one CAST (or, for a selection or literal, one node) per
requested dtype; every strong node maps to exactly one new node.
"""

from __future__ import annotations

from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import ALU, COMPARE
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, toposort
from kcc.ir.ranges import Range, fits, int_ranges
from kcc.passes.target import TargetDesc

_KEEP = "keep"      # leave the src exactly as it is (a static CONST operand)
_NAT = "nat"        # rebuild the src; a weak src takes its natural dtype
_OPER = "oper"      # a weak src is requested at the op's compute dtype
_SELECT = frozenset({Ops.WHERE, Ops.STACK, Ops.AFTER, Ops.INDEX})


class WeakLoweringError(Exception):
    """A graph whose weak dtypes cannot be lowered (it breaks a rule of the IR)."""


def _is_weak(u: UOp) -> bool:
    t = u.utype
    return t.kind == "value" and t.dtype is not None and t.dtype.kind in ("weakint", "weakfloat")


def _natural(order: list[UOp]) -> dict[UOp, DType]:
    """The natural dtype of every weak node: int32/int64 for weakint, float64 for weakfloat."""
    rng: dict[UOp, Range] | None = None
    nat: dict[UOp, DType] = {}
    for u in order:
        if not _is_weak(u):
            continue
        if u.dtype.kind == "weakfloat":
            nat[u] = dtypes.float64
            continue
        if u.src:
            if rng is None:
                rng = int_ranges([order[-1]])
            r = rng.get(u)
        else:
            # a leaf's range is its own (no srcs to read): not worth the whole graph's walk,
            # and weak leaves (literal constants) are most kernels' only weak nodes
            r = rng.get(u) if rng is not None else int_ranges([u]).get(u)
        wide = not fits(r, dtypes.int32)
        for i, s in enumerate(u.src):
            if s in nat and _mode(u, i) != _KEEP and nat[s] == dtypes.int64:
                wide = True
        nat[u] = dtypes.int64 if wide else dtypes.int32
    return nat


def _mode(u: UOp, i: int) -> str:
    """How src i of u is lowered when it is weak."""
    op = u.op
    if op is Ops.SHRINK:
        return _KEEP if i == 2 else _NAT
    if op is Ops.INDEX:
        if u.src[0].kind == "value":
            return _OPER if i == 0 else _KEEP
        return _NAT
    if op is Ops.CAST:
        return _KEEP if u.src[0].op is Ops.CONST else _NAT
    if op in (Ops.STORE, Ops.LOAD):
        return _OPER if i == 1 else _NAT
    if op is Ops.WHERE:
        return _NAT if i == 0 else _OPER
    if op is Ops.AFTER:
        return _OPER if i == 0 else _NAT
    if op in ALU or op is Ops.STACK:
        return _OPER
    return _NAT


def _join(dts: list[DType]) -> DType:
    """The dtype all-weak operands of a comparison are compared in."""
    if any(d.is_float for d in dts):
        return dtypes.float64
    return dtypes.int64 if dtypes.int64 in dts else dtypes.int32


def _compute_dtype(u: UOp, want: DType | None, nat: dict[UOp, DType]) -> DType | None:
    """The dtype an _OPER src of u is requested at."""
    if u.op in (Ops.STORE, Ops.LOAD):
        return u.src[0].dtype
    if u.op in COMPARE:
        strong = [s.dtype for s in u.src if not s.dtype.is_weak]
        return strong[0] if strong else _join([nat[s] for s in u.src])
    if u.op is Ops.THREEFRY:
        return dtypes.uint64
    if u in nat:
        return want if _direct(u, want) else nat[u]
    if u.op in (Ops.SHL, Ops.SHR):
        return u.dtype
    return u.dtype


def _direct(u: UOp, want: DType | None) -> bool:
    """Whether weakint u requested at want is built at want itself: a selection commutes with
    any conversion (CAST(WHERE(c, a, b)) is WHERE(c, CAST a, CAST b)), so it needs no CAST."""
    return want is not None and u.op in _SELECT


def _key(u: UOp, want: DType | None, nat: dict[UOp, DType]) -> tuple[UOp, DType | None]:
    """The memo key of u requested at want (None for a strong node or the natural dtype)."""
    if u not in nat:
        return (u, None)
    if want is None:
        want = nat[u]
    if want == nat[u]:
        return (u, None)
    return (u, want)


def _children(u: UOp, want: DType | None,
              nat: dict[UOp, DType]) -> list[tuple[UOp, DType | None] | None]:
    """The memo key each src of u is built at (None: keep the src as it is)."""
    cdt: DType | None | str = _KEEP         # computed at the first weak _OPER src
    out: list[tuple[UOp, DType | None] | None] = []
    for i, s in enumerate(u.src):
        if s not in nat:                    # (nat holds exactly the graph's weak nodes)
            out.append((s, None))
            continue
        mode = _mode(u, i)
        if mode == _KEEP:
            out.append(None)
        elif mode == _OPER:
            if cdt is _KEEP:
                cdt = _compute_dtype(u, want, nat)
            out.append(_key(s, cdt, nat))  # type: ignore[arg-type]
        else:
            out.append(_key(s, None, nat))
    return out


def _construct(u: UOp, want: DType | None, new_src: tuple[UOp, ...],
               nat: dict[UOp, DType]) -> UOp:
    """The lowered node for u requested at want, given its lowered srcs."""
    if u not in nat:
        return u if new_src == u.src else u.replace(src=new_src)
    target = want if want is not None else nat[u]
    if u.op is Ops.CONST:
        return UOp(Ops.CAST, (u,), target)
    x = u if new_src == u.src else u.replace(src=new_src)
    if target != nat[u] and not _direct(u, want):
        return UOp(Ops.CAST, (x,), target)
    return x


def _unchanged(order: list[UOp], nat: dict[UOp, DType]) -> set[UOp]:
    """The strong nodes the lowering rebuilds as themselves: every src is one of them, or a
    weak src kept as it is (_KEEP: the literal of a CAST). In tinygrad's kernels the only weak
    nodes are such literals, so this is nearly the whole graph, and the walk below stops at
    these nodes instead of rebuilding each from its srcs."""
    same: set[UOp] = set()
    add = same.add
    for u in order:
        if u in nat:
            continue
        for i, s in enumerate(u.src):
            if s not in same and (s not in nat or _mode(u, i) != _KEEP):
                break
        else:
            add(u)
    return same


def lower_weak_dtypes(sink: UOp, target: TargetDesc | None = None) -> UOp:
    """Give every weak value a strong dtype (see the module docstring for the rules)."""
    order = toposort([sink])
    nat = _natural(order)
    if not nat:                                  # nothing weak: nothing to lower
        return sink
    same = _unchanged(order, nat)
    if sink in same:
        # every weak node is a literal kept as it is: the lowering gives back the graph, whose
        # weak nodes are nat's (the walk and the check's own search for them are not needed)
        _check_weak(order, set(nat))
        return sink
    done: dict[tuple[UOp, DType | None], UOp] = {}
    root = (sink, None)
    # frames: (key, its srcs' keys once computed: the node's srcs are then done)
    stack: list[tuple[tuple[UOp, DType | None], list | None]] = [(root, None)]
    while stack:
        key, kids = stack.pop()
        if key in done:
            continue
        u, want = key
        if u in same:                            # (a strong node is only asked at None)
            done[key] = u
            continue
        if kids is None:
            kids = _children(u, want, nat)
            stack.append((key, kids))
            stack.extend((k, None) for k in reversed(kids) if k is not None and k not in done)
            continue
        new_src = tuple(s if k is None else done[k] for s, k in zip(u.src, kids))
        done[key] = _construct(u, want, new_src, nat)
    out = done[root]
    check_no_weak(out)
    return out


def check_no_weak(sink: UOp) -> None:
    """Raise WeakLoweringError if a weak value is left outside a static CONST operand."""
    order = toposort([sink])
    _check_weak(order, {u for u in order if _is_weak(u)})  # asked once per node, not per edge


def _check_weak(order: list[UOp], weak: set[UOp]) -> None:
    """check_no_weak over a graph's toposort, given its weak nodes."""
    if not weak:
        return
    for u in order:
        for i, s in enumerate(u.src):
            if s in weak and not (s.op is Ops.CONST and (
                    u.op is Ops.CAST or _mode(u, i) == _KEEP)):
                raise WeakLoweringError(f"{s.op.name} is still {s.dtype} as src {i} of "
                                        f"{u.op.name} after weak-dtype lowering")
