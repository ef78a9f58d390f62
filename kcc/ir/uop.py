"""The UOp node: `(op, src, arg, tag)`, immutable and hash-consed; dtype and shape are derived.

Structurally equal nodes are the same object (`UOp(...) is UOp(...)`), so graphs share
subexpressions for free and identity comparison is structural comparison. No constructor takes
a dtype: `UOp.utype` is computed once by the one rule table, `kcc.ir.rules.utype_of`.
Every walk over a graph here is iterative, so a 200,000-node chain never hits the recursion limit.
"""

from __future__ import annotations

import math
import _struct as struct  # struct's own C functions, without struct.py (start-up)
from itertools import islice
from _weakref import _remove_dead_weakref
from _weakref import ref as _weakref_ref   # weakref.ref itself (no weakref module: 4 M)

from kcc.ir.dtype import DType
from kcc.ir.ops import Ops
from kcc.record import record
from kcc.symbols import Symbols  # enum.Enum's behaviour without the enum module

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator


class AddrSpace(Symbols):
    """Where a PARAM or BUFFER lives."""

    GLOBAL = "GLOBAL"
    LOCAL = "LOCAL"
    REG = "REG"
    ALU = "ALU"


class AxisType(Symbols):
    """Informational loop kinds of a RANGE: every RANGE is a sequential loop to kcc."""

    LOOP = "LOOP"
    WEAK = "WEAK"
    REDUCE = "REDUCE"
    GLOBAL = "GLOBAL"
    LOCAL = "LOCAL"
    THREAD = "THREAD"
    WARP = "WARP"
    GROUP_REDUCE = "GROUP_REDUCE"
    UPCAST = "UPCAST"
    UNROLL = "UNROLL"


@record(frozen=True)
class ParamArg:
    """A kernel argument or scratch buffer: slot, element dtype, element count, value range."""

    slot: int
    dtype: DType
    size: int | None = None
    vmin_vmax: tuple[int | float, int | float] | None = None
    name: str | None = None
    addrspace: AddrSpace = AddrSpace.GLOBAL
    volatile: bool = False

    @property
    def is_buffer(self) -> bool:
        return self.addrspace != AddrSpace.ALU


@record(frozen=True)
class KernelInfo:
    """The SINK's arg: the kernel's name (a C identifier, the object's symbol)."""

    name: str


def argkey(arg: Any) -> Any:
    """A hashable key that tells apart args Python calls equal (0 vs 0.0 vs -0.0 vs False, nan)."""
    t = type(arg)
    # the exact types first (one identity test each; every node made asks for its arg's key),
    # then subclasses by isinstance, in the same order
    if t is int:
        return ("i", arg)
    if t is tuple:
        return ("t",) + tuple(map(argkey, arg))
    if t is bool:
        return ("b", arg)
    if t is float:
        return ("f", _pack_d(arg) if arg == arg else b"nan")
    if isinstance(arg, bool):
        return ("b", arg)
    if isinstance(arg, int):
        return ("i", arg)
    if isinstance(arg, float):
        return ("f", struct.pack("<d", arg) if not math.isnan(arg) else b"nan")
    if isinstance(arg, tuple):
        return ("t",) + tuple(argkey(a) for a in arg)
    return (type(arg).__name__, arg)


_pack_d = struct.Struct("<d").pack

#: a memo slot of a UOp not filled yet
UNKNOWN: Any = object()


class _KeyedRef(_weakref_ref):
    """A weak reference to a node that knows the node's key in _NODES."""

    __slots__ = ("key",)


# The hash-consing table: a node's key (op, src tuple, arg key, tag key) → a weak reference to
# it; a node that dies drops its entry (unless a new node took the key meanwhile). A plain dict
# with C-level references: weakref.WeakValueDictionary's Python-level bookkeeping cost about 5
# of the 6 µs of making a node that soon dies (passes build many such).
_NODES: dict[tuple, _KeyedRef] = {}


def _forget(ref: _KeyedRef, _nodes: dict = _NODES, _drop=_remove_dead_weakref) -> None:
    _drop(_nodes, ref.key)


# kcc.ir.rules.utype_of, bound on first use (rules imports this module): an import statement
# in UOp.utype cost ~0.5 µs per node typed (CPython 3.11), 2-4% of a compile
_utype_of: "Callable[[Ops, tuple[UOp, ...], Any], UType] | None" = None


def _rule_table() -> "Callable[[Ops, tuple[UOp, ...], Any], UType]":
    """kcc.ir.rules.utype_of, imported once."""
    global _utype_of
    from kcc.ir.rules import utype_of
    _utype_of = utype_of
    return utype_of


class UOp:
    """One node of the graph, `UOp(op, src, arg, tag)`: equal structure gives the same object."""

    # _verified: what the verifier concluded from this node's subgraph (kcc/ir/verify.py);
    # _const: the node's constant value, kcc.ir.consts.const_value's memo (UNKNOWN: not asked);
    # _strong: its strong-constant value, kcc.passes.simplify_fold.const_value's memo (likewise)
    # _range: its integer value range, kcc.ir.ranges.int_ranges' memo (a function of the
    # subgraph: UNKNOWN not asked, NOT_INT for a node int_ranges gives no entry)
    # _deps: the RANGEs it depends on, kcc.passes.linearize.range_sets' memo (likewise)
    # _order: toposort([node])'s nodes before the node itself, kept on a root that was sorted
    # (passes sort the same unchanged graph again: 58% of the sorting of tinygrad's kernels);
    # not set at creation (most nodes are never a root), and without the node: no cycle
    __slots__ = ("op", "src", "arg", "tag", "_utype", "_verified", "_const", "_strong",
                 "_range", "_deps", "_order", "__weakref__")

    op: Ops
    src: tuple["UOp", ...]
    arg: Any
    tag: Any

    def __new__(cls, op: Ops, src: tuple["UOp", ...] = (), arg: Any = None, tag: Any = None):
        src = tuple(src)
        # (None args and tags, the common case, skip argkey: no other arg's key is None.)
        # The srcs themselves: a UOp hashes and compares by identity, so the tuple is the key
        # its ids would be, without building one; the node holds the same tuple, so the key
        # keeps nothing alive that the node does not
        key = (op, src, None if arg is None else argkey(arg),
               None if tag is None else argkey(tag))
        ref = _NODES.get(key)
        if ref is not None:
            hit = ref()
            if hit is not None:
                return hit
        node = object.__new__(cls)
        # the slots' own setters (bound below the class): 550 ns for the eight against
        # 920 ns through object.__setattr__ (its name lookup per call)
        _set_op(node, op)
        _set_src(node, src)
        _set_arg(node, arg)
        _set_tag(node, tag)
        _set_utype(node, None)
        _set_verified(node, None)
        _set_const(node, UNKNOWN)
        _set_strong(node, UNKNOWN)
        _set_range(node, UNKNOWN)
        _set_deps(node, UNKNOWN)
        ref = _KeyedRef(node, _forget)
        ref.key = key
        _NODES[key] = ref
        return node

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("UOp is immutable")

    def __reduce__(self):
        return (UOp, (self.op, self.src, self.arg, self.tag))

    # -- derived type -------------------------------------------------------------------------
    @property
    def utype(self) -> "UType":
        """The derived (dtype, shape, kind), computed once by the rule table."""
        t = self._utype
        if t is None:
            utype_of = _utype_of or _rule_table()
            for s in self.src:
                if s._utype is None:
                    # Type the untyped srcs first, deepest first, so a long chain never
                    # recurses; the walk stops at nodes already typed, so typing a graph node
                    # by node stays linear.
                    for n in _untyped(self):
                        _set_utype(n, utype_of(n.op, n.src, n.arg))
                    return self._utype
            # the common case, every src typed: no walk (a loop, not all() over a generator)
            t = utype_of(self.op, self.src, self.arg)
            _set_utype(self, t)
        return t

    @property
    def dtype(self) -> DType | None:
        """The element dtype, or None for a void node (STORE, END, SINK …)."""
        # the cached type read directly: these three are asked per node by every pass
        return (self._utype or self.utype).dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return (self._utype or self.utype).shape

    @property
    def kind(self) -> str:
        """"value", "place" (INDEX/SHRINK of a buffer), "buffer" or "void"."""
        return (self._utype or self.utype).kind

    # -- building ----------------------------------------------------------------------------
    def replace(self, **kw: Any) -> "UOp":
        """A node like this one with some of op/src/arg/tag replaced."""
        return new_uop(UOp, kw.get("op", self.op), kw.get("src", self.src),
                       kw.get("arg", self.arg), kw.get("tag", self.tag))

    @staticmethod
    def const(value: int | float | bool) -> "UOp":
        return new_uop(UOp, Ops.CONST, (), value)

    # -- walking -----------------------------------------------------------------------------
    def toposort(self) -> list["UOp"]:
        """Every node reachable from self, each after all its srcs (iterative DFS)."""
        return toposort([self])

    def __iter__(self) -> Iterator["UOp"]:
        return iter(self.src)

    def __repr__(self) -> str:
        return f"UOp({self.op!r}, <{len(self.src)} src>, {self.arg!r})"


# UOp.__new__ itself: `new_uop(UOp, op, src, arg, tag)` is `UOp(op, src, arg, tag)` without
# the class call's own work (type.__call__ finding __new__, then object.__init__ for nothing):
# 0.1-0.3 µs of the ~1.2 µs a new node costs, for the loops that make a node per node of a
# graph (a jam's copies, rebuilds)
new_uop = UOp.__new__

# The setters of UOp's slots (member descriptors' __set__): how UOp itself fills a node and its
# memo slots past the immutability guard of UOp.__setattr__
_set_op, _set_src, _set_arg, _set_tag = (UOp.__dict__[k].__set__ for k in ("op", "src", "arg",
                                                                         "tag"))
_set_utype, _set_verified, _set_const, _set_strong, _set_range, _set_deps = (
    UOp.__dict__[k].__set__ for k in ("_utype", "_verified", "_const", "_strong", "_range",
                                      "_deps"))


@record(frozen=True)
class UType:
    """The derived type of a node."""

    dtype: DType | None
    shape: tuple[int, ...]
    kind: str  # "value" | "place" | "buffer" | "void"


def base_buffer(b: UOp) -> UOp:
    """The PARAM/BUFFER under a chain of AFTERs (AFTER only orders a buffer's accesses)."""
    while b.op is Ops.AFTER:
        b = b.src[0]
    return b


def buffer_of(place: UOp) -> UOp:
    """The PARAM/BUFFER a place (or buffer node) reads or writes: under its INDEXes and
    SHRINKs and the AFTERs that order it, in any nesting."""
    b = place
    while b.op in (Ops.INDEX, Ops.SHRINK, Ops.AFTER):
        b = b.src[0]
    return b


HEAD_DEPTH = 6


def toposort(roots: list[UOp], descend: Callable[[UOp], bool] | None = None) -> list[UOp]:
    """All nodes reachable from roots, srcs before users, in deterministic DFS order.

    With `descend`, a src is visited (and walked through) only when descend(src) is true."""
    if descend is None and len(roots) == 1:
        # one root: its order is a function of the (immutable) graph under it, kept on it
        root = roots[0]
        try:
            order = root._order
        except AttributeError:
            order = _toposort_one(root)
            object.__setattr__(root, "_order", order[:-1])
            # the heads of root's first-src chain (a loop nest's ENDs) get their orders too,
            # prefixes of this one: passes then ask their cones as copies, not walks
            keep_head_orders(order, HEAD_DEPTH)
            return order
        order = order.copy()
        order.append(root)
        return order
    return _toposort(roots, descend)


def rebuild(order: Iterable[UOp], repl: dict[UOp, UOp]) -> dict[UOp, UOp]:
    """The nodes of order (sources before users) with the nodes of repl replaced: a copy of
    repl extended by every node of order that reads a replaced or rebuilt node, rebuilt once
    with its new sources (a node of repl stays what repl says). Look nodes up with
    `.get(n, n)`: a node absent is unchanged."""
    out = dict(repl)
    # where every node of repl is in order, the nodes before the first of them read none of
    # repl (srcs come first) and stay: the walk starts there (a jam replaces the END of a
    # loop that is most of the graph; its cone, before the END, was rebuilt per node for
    # nothing). A node of repl outside order (a RANGE that a region of the graph reads) may
    # be read anywhere: then the walk is the whole order. Asked for a few nodes only, by
    # list.index (identity compares, in C)
    start = 0
    if isinstance(order, list) and len(repl) <= 8:
        start = len(order)
        for k in repl:
            try:
                start = min(start, order.index(k))
            except ValueError:
                start = 0
                break
    for n in islice(order, start, None):
        if n in out:
            continue
        srcs = tuple([out.get(s, s) for s in n.src])
        if srcs != n.src:
            out[n] = new_uop(UOp, n.op, srcs, n.arg, n.tag)
    return out


def substitute_closed(root: UOp, repl: dict[UOp, UOp]) -> UOp:
    """root with every node of repl replaced by its value, the value itself substituted the
    same way: a value may read other keys of repl, or nodes whose srcs do (a pass that
    rewrites several loops from the graph before any of them was rewritten). repl must be
    acyclic (no value reaches its own key). One walk: every node reachable from root, or from
    a value it reaches, is entered once (one `repl.get` each) and rebuilt at most once."""
    done: dict[UOp, UOp] = {}
    get = repl.get
    t = get(root)
    # a frame: (node, its value in repl or None, the iterator over what it is walked through:
    # a key through its value, any other node through its srcs)
    stack: list[tuple[UOp, UOp | None, Iterator[UOp]]] = [
        (root, t, iter((t,) if t is not None else root.src))]
    while stack:
        node, val, srcs = stack[-1]
        for s in srcs:
            if s not in done:          # acyclic: a node not done is never on the stack twice
                t = get(s)
                stack.append((s, t, iter((t,) if t is not None else s.src)))
                break
        else:
            stack.pop()
            if val is not None:
                done[node] = done[val]
            else:
                new = tuple([done[s] for s in node.src])
                done[node] = node if new == node.src else new_uop(UOp, node.op, new, node.arg,
                                                                     node.tag)
    return done[root]


def free_reg_slot(order: Iterable[UOp]) -> int:
    """The first slot no REG buffer among the nodes of order uses (for a pass's new one)."""
    return 1 + max((n.arg.slot for n in order if n.op is Ops.BUFFER
                    and n.arg.addrspace is AddrSpace.REG), default=-1)


def substitute(root: UOp, repl: dict[UOp, UOp]) -> UOp:
    """root with the nodes of repl replaced, its graph rebuilt where they are read (one walk)."""
    return rebuild(toposort([root]), repl).get(root, root)


def keep_head_orders(order: list[UOp], depth: int) -> None:
    """Keep, on the first `depth` nodes of the chain root.src[0], root.src[0].src[0], ...
    (root: order's last node, order: toposort([root])), their own orders, which are
    prefixes of order: the walk from a node enters its src 0 first, with only nodes that src
    0 does not reach seen, so it emits src 0's own order first. (A loop nest's ENDs lie on
    that chain: passes/unroll.py `_Loops` asks their cones next.)"""
    x = order[-1]
    end = len(order) - 1
    for _ in range(depth):
        if not x.src:
            return
        x = x.src[0]
        try:
            x._order
            return                       # (kept already, and so, most likely, below it)
        except AttributeError:
            pass
        # x is emitted late (its walk is the prefix): searched from the back
        i = end - 1
        while order[i] is not x:
            i -= 1
        object.__setattr__(x, "_order", order[:i])
        end = i


def _toposort_one(root: UOp) -> list[UOp]:
    """toposort([root]), not kept on root. Where root's first src was sorted before (its
    order kept: an END whose body END a pass sorted first, a loop nest's cones asked inner
    first), that order is the walk's head: the walk enters src 0 first, with only root
    seen, which src 0 does not reach (acyclic), so it emits exactly src 0's own order; the
    other srcs are then walked past those nodes, as the DFS would."""
    src = root.src
    if src:
        try:
            head = src[0]._order
        except AttributeError:
            head = None
        if head is not None:
            out = head.copy()
            out.append(src[0])
            if len(src) > 1:
                seen = set(out)
                seen.add(root)
                _toposort(src[1:], None, out, seen)
            out.append(root)
            return out
    return _toposort([root], None)


def _toposort(roots: "list[UOp] | tuple[UOp, ...]", descend: Callable[[UOp], bool] | None,
              out: list[UOp] | None = None, seen: set[UOp] | None = None) -> list[UOp]:
    """The DFS of roots (out and seen: a walk to go on with, the nodes emitted and
    entered so far; `_toposort_one`)."""
    if out is None:
        out = []
    # UOp hashes and compares by identity (hash-consed), so the set holds the nodes themselves;
    # each stack frame resumes its srcs' iterator where it left off (the same DFS order as
    # indexing, without rebuilding a frame per src)
    if seen is None:
        seen = set()
    add, emit = seen.add, out.append     # (bound once: this walk runs per node of every pass)
    for root in roots:
        if root in seen:
            continue
        add(root)
        stack: list[tuple[UOp, Iterator[UOp]]] = [(root, iter(root.src))]
        push, pop = stack.append, stack.pop
        while stack:
            node, srcs = stack[-1]
            # two copies of the frame step on purpose: the walk without `descend` (most calls)
            # skips its test per src, 30% of the walk on softmax's 839 nodes
            if descend is None:
                for s in srcs:
                    if s not in seen:
                        add(s)
                        push((s, iter(s.src)))
                        break
                else:
                    pop()
                    emit(node)
                continue
            for s in srcs:
                if s not in seen and descend(s):
                    add(s)
                    push((s, iter(s.src)))
                    break
            else:
                pop()
                emit(node)
    return out


def reachable(roots: list[UOp], stop: "set[UOp] | frozenset[UOp]" = frozenset()) -> set[UOp]:
    """Every node reachable from roots without entering a node of stop (a set: no order, so
    cheaper than toposort where only membership is asked)."""
    seen = {r for r in roots if r not in stop}
    stack = list(seen)
    while stack:
        for s in stack.pop().src:
            if s not in seen and s not in stop:
                seen.add(s)
                stack.append(s)
    return seen


def _untyped(root: UOp) -> list[UOp]:
    """The nodes under root (root included) whose type is not computed yet, srcs first:
    toposort([root], lambda s: s._utype is None) in the same order, its test inline (a call
    of the lambda per src edge was a third of this walk, which runs per node a pass builds
    on untyped srcs: unroll's jam, slp's rebuild)."""
    out: list[UOp] = []
    seen = {root}
    add, emit = seen.add, out.append
    stack: list[tuple[UOp, Iterator[UOp]]] = [(root, iter(root.src))]
    push, pop = stack.append, stack.pop
    while stack:
        node, srcs = stack[-1]
        for s in srcs:
            if s._utype is None and s not in seen:
                add(s)
                push((s, iter(s.src)))
                break
        else:
            pop()
            emit(node)
    return out


def users(order: list[UOp]) -> dict[UOp, list[UOp]]:
    """For every node of a toposorted list, the nodes that use it (each user once, in order)."""
    res: dict[UOp, list[UOp]] = {n: [] for n in order}
    for n in order:
        for s in dict.fromkeys(n.src):
            res[s].append(n)
    return res
