"""The verifier: the structural rules of a kernel graph beyond the per-node rule table.

`verify(sink)` walks the graph once, iteratively, in topological order and raises `VerifyError`
at the first rule that does not hold. It checks (UOP_FORMAT.md, "Ops" and "Where a node runs"):

- the root is a SINK and no other SINK is in the graph;
- every node's derived type (the IR's rule table);
- PARAM slots are unique and run 0..n-1 without gaps over buffers and scalars together;
  BUFFER slots are unique among the BUFFERs of one address space (LOCAL, REG);
- nothing computed is thrown away: a SINK src is an effect (a void node) or a PARAM (an unused
  argument keeps its slot), a GROUP src and an END's body are effects;
- every RANGE is closed by exactly one END, and at the SINK no loop is left open;
- loop scoping: a node is inside the loop of every RANGE it depends on unless an END of that
  range lies on the way, so a node may not depend on a RANGE both directly and through the
  END that closes it;
- a RANGE bound is built only from constants and scalar integer PARAMs (so loop bounds are
  known at launch); a SPECIAL bound is an integer constant or an integer expression of scalar
  PARAMs (evaluated at launch), and two SPECIALs of one name agree on it.

The pipeline verifies after every pass, and a pass leaves most of the graph as it was: nodes
are immutable and hash-consed, so what a node's own rules and its subgraph decide (its type,
its srcs being effects, a RANGE or SPECIAL bound, the loops it is inside and after, whether it
may be in a RANGE bound) is computed once and kept on the node (`UOp._verified`). Each call
still walks the whole graph for the rules over all nodes (slots, one END per RANGE, SPECIAL
bounds agreeing, one SINK, no loop open at the SINK), in the same order, so the first broken
rule is the same one a fresh walk finds. A SINK whose whole walk passed is remembered (weakly:
the set keeps no graph alive), so verifying the same graph again (a pass that changed nothing
returns its input) is a lookup: the graph is immutable, so the verdict cannot change.
"""

from __future__ import annotations

from _weakref import ref as _weakref_ref   # weakref.ref itself (no weakref module)

from kcc.ir.consts import const_int, const_value
from kcc.ir.ops import ALU
from kcc.ir.ops import Ops
from kcc.ir.ranges import ranges_of
from kcc.ir.rules import IRError
from kcc.ir.uop import AddrSpace, UOp, _set_verified, toposort

_EMPTY: frozenset[UOp] = frozenset()
# Ops that may appear in a RANGE bound besides its leaves (CONST and scalar int PARAMs).
_BOUND_OPS = ALU | {Ops.CAST, Ops.BITCAST}     # BITCAST: what decompose builds (AMD CDIV)
# SINKs whose whole graph passed verify (a verdict of an immutable graph never changes), by
# id, each with a weak reference whose callback drops its entry when the SINK is freed: a
# weakref.WeakSet for a class compared by identity (UOp), without _weakrefset and the types
# module it imports (start-up)
_CLEAN: dict[int, _weakref_ref] = {}
# Ops members bound once: a module global is read faster than a class attribute (an Enum's
# went through EnumType's __getattr__ hook before kcc.symbols), several per node here
_BUFFER, _CONST, _END, _GROUP, _LOAD = Ops.BUFFER, Ops.CONST, Ops.END, Ops.GROUP, Ops.LOAD
_PARAM, _RANGE, _SINK, _SPECIAL = Ops.PARAM, Ops.RANGE, Ops.SINK, Ops.SPECIAL
# the ops whose nodes the graph-wide rules read on every walk (_Walk._node); a node of another
# op that was verified before has nothing left to check
_GRAPH_WIDE = frozenset({_SINK, _PARAM, _BUFFER, _END, _RANGE, _SPECIAL})
# the ops _node has no rule for beyond the RANGE-bound test (GROUP: _effects' srcs test)
_PLAIN = frozenset(Ops) - _GRAPH_WIDE - {Ops.GROUP}
# Ops of a symbolic SPECIAL bound (launch dimensions a loader evaluates: kcc.targets.dims).
LAUNCH_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.CDIV, Ops.CMOD, Ops.MAX, Ops.NEG,
                        Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.CMPLT, Ops.CMPNE,
                        Ops.CMPEQ, Ops.WHERE, Ops.CAST})


class VerifyError(Exception):
    """A graph that breaks a structural rule, at `node` (operand `src_index`, if one is at fault).

    `related` is a second node the message is about (e.g. the RANGE of a loop-scoping error),
    so a frontend can name it.
    """

    def __init__(self, msg: str, node: UOp, src_index: int | None = None,
                 related: UOp | None = None):
        super().__init__(msg)
        self.msg = msg
        self.node = node
        self.src_index = src_index
        self.related = related


def verify(sink: UOp) -> None:
    """Check the graph under `sink`; raise VerifyError at the first broken rule."""
    if sink.op is not Ops.SINK:
        raise VerifyError(f"the root of a kernel graph is a SINK, not {sink.op.name}", sink)
    key = id(sink)
    seen = _CLEAN.get(key)
    if seen is not None and seen() is sink:
        return
    order = toposort([sink])
    _Walk(sink).run(order)
    _CLEAN[key] = _weakref_ref(sink, lambda ref, key=key: _forget_clean(key, ref))


def _forget_clean(key: int, ref: _weakref_ref) -> None:
    """Drop a freed SINK's entry (unless its id already names a newer SINK's)."""
    if _CLEAN.get(key) is ref:
        del _CLEAN[key]


class _Walk:
    def __init__(self, sink: UOp):
        self.sink = sink
        self.params: list[UOp] = []
        self.buffer_slots: dict[tuple[AddrSpace, int], UOp] = {}   # unique per address space
        self.closers: dict[UOp, UOp] = {}               # RANGE -> the END that closes it
        self.ranges: list[UOp] = []
        self.special_bound: dict[str, UOp] = {}

    def run(self, order: list[UOp]) -> None:
        graph_wide = _GRAPH_WIDE
        plain = _PLAIN
        sink = self.sink
        for n in order:
            # n._verified: (RANGEs whose loop n is inside, RANGEs n is after, whether n may be
            # in a RANGE bound), set once n's own rules held; srcs come first in the order
            op = n.op
            if n._verified is not None:
                if op not in graph_wide:
                    continue       # verified before, and no graph-wide rule reads it (_node)
                self._node(n, False)
            else:
                if n._utype is None:
                    try:
                        n.utype
                    except IRError as e:
                        raise VerifyError(e.msg, n, e.src_index) from None
                if op in plain:
                    # _node's answer for an op with no rule of its own (the same test; a
                    # loop, not all() over a generator: most fresh nodes are ALU ops)
                    static = op is _CONST
                    if not static and op in _BOUND_OPS:
                        for s in n.src:
                            if not s._verified[2]:
                                break
                        else:
                            static = True
                else:
                    static = self._node(n, True)
                _set_verified(n, (*self._scope(n), static))
            if n is sink and n._verified[0]:
                # Every node is reachable from the SINK, so an END of this range would have put
                # it in `closed` and failed in _scope: an open range at the SINK has no END.
                r = min(n._verified[0], key=lambda x: self.ranges.index(x))
                raise VerifyError("this RANGE is never closed by an END", r)
        self._slots()
        for r in self.ranges:
            if r not in self.closers:
                raise VerifyError("this RANGE is never closed by an END", r)

    def _node(self, n: UOp, fresh: bool) -> bool:
        """The rules at n (its own only when fresh, the graph-wide ones always, in the order a
        fresh walk checks them); returns whether n may be in a RANGE bound."""
        op = n.op
        if op is _SINK and n is not self.sink:
            raise VerifyError("a second SINK inside the graph: the SINK is the root only", n)
        if op is _PARAM:
            self.params.append(n)
        elif op is _BUFFER:
            prev = self.buffer_slots.setdefault((n.arg.addrspace, n.arg.slot), n)
            if prev is not n:
                raise VerifyError(f"BUFFER slot {n.arg.slot} is used by two BUFFERs (in "
                                  f"{n.arg.addrspace.name})", n, related=prev)
        elif op is _END:
            self._end(n, fresh)
        elif op is _RANGE:
            self.ranges.append(n)
            if fresh and not n.src[0]._verified[2]:
                raise VerifyError("a RANGE bound is built only from constants and scalar "
                                  "integer PARAMs (addrspace=ALU)", n, 0)
        elif op is _SPECIAL:
            self._special(n, fresh)
        elif fresh:
            self._effects(n)
        if not fresh:
            return n._verified[2]
        if op is _PARAM:
            return n.arg.addrspace is AddrSpace.ALU and n.dtype.is_int
        return op is _CONST or (op in _BOUND_OPS and all(s._verified[2] for s in n.src))

    def _effects(self, n: UOp) -> None:
        """A SINK's srcs are effects or PARAMs, a GROUP's effects."""
        op = n.op
        if op is _SINK:
            for i, s in enumerate(n.src):
                if s.kind != "void" and s.op is not _PARAM:
                    raise VerifyError(f"the SINK's srcs are effects; this {s.op.name} value "
                                      "is never used", n, i)
        elif op is _GROUP:
            for i, s in enumerate(n.src):
                if s.kind != "void":
                    raise VerifyError(f"a GROUP's srcs are effects; this {s.op.name} value is "
                                      "never used", n, i)

    def _special(self, n: UOp, fresh: bool) -> None:
        if fresh:
            bad = launch_expr_problem(n.src[0])
            if bad is not None:
                raise VerifyError(bad[1], n, 0, related=bad[0] if bad[0] is not n.src[0]
                                  else None)
        prev = self.special_bound.setdefault(n.arg, n)
        same = prev.src[0] is n.src[0] or (
            const_int(prev.src[0]) is not None
            and const_int(prev.src[0]) == const_int(n.src[0]))
        if not same:
            raise VerifyError(f"SPECIAL {n.arg!r} has bound {_bound(n)} here but "
                              f"{_bound(prev)} elsewhere", n, 0, related=prev)

    def _end(self, n: UOp, fresh: bool) -> None:
        if fresh and n.src[0].kind != "void":
            raise VerifyError(f"an END's body is an effect; this {n.src[0].op.name} value is "
                              "never used", n, 0)
        for i, r in enumerate(n.src[1:], 1):
            prev = self.closers.setdefault(r, n)
            if prev is not n or r in n.src[1:i]:
                raise VerifyError("this RANGE is closed by more than one END", n, i,
                                  related=r)

    def _scope(self, n: UOp) -> tuple[frozenset[UOp], frozenset[UOp]]:
        """The open and closed RANGE sets of n, from its srcs'; they may not meet."""
        src = n.src
        if not src:                  # (a leaf: CONST, PARAM, DEFINE_VAR ... inside no loop)
            opened = closed = _EMPTY
        elif len(src) == 1:          # (most nodes: the src's own sets, as _union returns)
            v = src[0]._verified
            opened, closed = v[0], v[1]
        elif len(src) == 2:          # (binary ALU ops: no list per node)
            a, b = src[0]._verified, src[1]._verified
            opened, closed = _union2(a[0], b[0]), _union2(a[1], b[1])
        else:
            opened = _union([s._verified[0] for s in src])
            closed = _union([s._verified[1] for s in src])
        if n.op is _RANGE:
            opened = opened | {n}
        elif n.op is _END:
            ends = frozenset(n.src[1:])
            opened = opened - ends
            closed = closed | ends
        # (isdisjoint first: most nodes close no loop, and it builds no set per node)
        if closed and opened and not opened.isdisjoint(closed):
            both = opened & closed
            r = min(both, key=lambda x: self.ranges.index(x))
            raise VerifyError("this node depends on a RANGE both inside its loop and after "
                              "the END that closes it", n, related=r)
        return opened, closed

    def _slots(self) -> None:
        by_slot: dict[int, UOp] = {}
        for p in self.params:
            prev = by_slot.setdefault(p.arg.slot, p)
            if prev is not p:
                raise VerifyError(f"PARAM slot {p.arg.slot} is used by two PARAMs", p,
                                  related=prev)
        for want, slot in enumerate(sorted(by_slot)):
            if slot != want:
                raise VerifyError(f"PARAM slots run 0..n-1 without gaps over buffers and "
                                  f"scalars: slot {want} is missing", by_slot[slot])


def check_bounds(sink: UOp) -> None:
    """Refuse an ungated LOAD/STORE whose index can leave its buffer, by value ranges
    (kcc.ir.ranges): such a kernel would read or write out of bounds in some iteration.

    Only indices built from constants, RANGEs, SPECIALs and scalar PARAMs with a declared
    vmin_vmax are judged (an index read from memory or from an undeclared scalar is the
    caller's promise). For input graphs: the frontend calls it after verify; passes build
    safe-index forms (WHERE(gate, i, 0)) whose range hull is wider on purpose."""
    order = toposort([sink])
    static = _static_nodes(order)
    asked: list[UOp] = []          # the accesses' places whose static index is judged
    for n in order:
        if n.op not in (Ops.LOAD, Ops.STORE) or len(n.src) == 3:
            continue
        place = n.src[0]
        if place.op not in (Ops.INDEX, Ops.SHRINK) or place.src[0].kind != "buffer":
            continue
        if static[place.src[1]]:
            asked.append(place)
    # the ranges of those indices alone (not of every node, int_ranges([sink])'s walk)
    for place, r in zip(asked, ranges_of([p.src[1] for p in asked])):
        if r is None:
            continue
        size = place.src[0].shape[0]
        lanes = place.shape[0] if place.op is Ops.SHRINK else 1
        if r[0] < 0 or r[1] + lanes > size:
            what = "elements" if lanes == 1 else f"starts of {lanes} elements"
            raise VerifyError(f"index out of bounds: {what} {r[0]}..{r[1]} of a buffer of "
                              f"{size} (gate the access, or fix the index)", place, 1)


def _static_nodes(order: list[UOp]) -> dict[UOp, bool]:
    """For every node of a toposorted list, whether it depends on nothing but constants, loop
    and thread indices and declared scalar ranges (from its srcs' answers: each node once,
    not a walk per index)."""
    static: dict[UOp, bool] = {}
    for u in order:
        op = u.op
        if op is _LOAD or op is _BUFFER or op is _PARAM and (
                u.arg.size is not None or u.arg.vmin_vmax is None):
            static[u] = False
            continue
        # (a loop, not all() over a generator: this runs per node of every parsed kernel)
        for s in u.src:
            if not static[s]:
                static[u] = False
                break
        else:
            static[u] = True
    return static


def launch_expr_problem(bound: UOp) -> tuple[UOp, str] | None:
    """(node, why) when a SPECIAL bound is not a launch expression, else None: it must be an
    integer constant, or built of LAUNCH_OPS on integers and bools over constants and scalar
    integer PARAMs (addrspace=ALU)."""
    if const_int(bound) is not None:
        return None
    for u in toposort([bound], lambda s: const_value(s) is None):
        if const_value(u) is not None:
            continue
        dt = u.dtype
        if u.op is Ops.PARAM:
            if u.arg.addrspace is not AddrSpace.ALU or not dt.is_int:
                return u, "a SPECIAL bound is built only from constants and scalar integer " \
                          "PARAMs (addrspace=ALU)"
            continue
        if u.op not in LAUNCH_OPS or not (dt.is_int or dt.is_bool) or u.shape != ():
            what = f"{u.op.name} of {dt}" if dt is not None else u.op.name
            return u, (f"a SPECIAL bound is an integer expression of scalar PARAMs (launch "
                       f"dimensions are evaluated at launch); {what} cannot be in it")
    return None


def _union(sets: list[frozenset[UOp]]) -> frozenset[UOp]:
    """The union, reusing an operand set when the others add nothing (keeps chains linear)."""
    best = _EMPTY
    for s in sets:
        if s and s is not best and not s <= best:
            best = s if best <= s else best | s
    return best


def _union2(a: frozenset[UOp], b: frozenset[UOp]) -> frozenset[UOp]:
    """a | b, reusing an operand set when the other adds nothing (_union of two)."""
    if not b or b is a or b <= a:
        return a
    return b if a <= b else a | b


def _bound(special: UOp) -> object:
    """A SPECIAL's constant bound (a literal or a strong constant), or words for an expression."""
    c = const_int(special.src[0])
    return "an expression of scalar arguments" if c is None else c
