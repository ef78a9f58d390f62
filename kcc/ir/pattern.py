"""Pattern matching on UOps and the graph rewrite engine (iterative, never recursive on graphs).

    pm = PatternMatcher([
        (UPat(Ops.ADD, src=(UPat.var("x"), UPat.cvar("c", 0))), fold_add_zero),
    ])
    new_root = graph_rewrite(root, pm, ctx)

A rule function takes the named captures as keyword arguments (and `ctx` first, when its first
parameter is called ctx) and returns a replacement node or None for "no match".
"""

from __future__ import annotations

from kcc.ir.dtype import DType
from kcc.ir.ops import Ops
from kcc.ir.uop import UOp, argkey, toposort
from kcc.record import record

FunctionType = type(lambda: None)  # types.FunctionType (no types module: start-up)
TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator

_ANY = object()


@record(frozen=True, eq=False)
class UPat:
    """A pattern: op filter, dtype filter, src patterns (exact arity unless `rest`), arg, name."""

    op: frozenset[Ops] | None = None
    src: tuple["UPat", ...] | None = None
    arg: Any = _ANY
    name: str | None = None
    dtype: frozenset[DType] | None = None
    rest: bool = False          # src may have more srcs after the given patterns
    commutative: bool = False   # for two srcs: also try them swapped

    def __init__(self, op: Ops | Iterable[Ops] | None = None, src: Iterable["UPat"] | None = None,
                 arg: Any = _ANY, name: str | None = None,
                 dtype: DType | Iterable[DType] | None = None, rest: bool = False,
                 commutative: bool = False):
        ops = None if op is None else frozenset([op] if isinstance(op, Ops) else op)
        dts = None if dtype is None else frozenset([dtype] if isinstance(dtype, DType) else dtype)
        object.__setattr__(self, "op", ops)
        object.__setattr__(self, "src", None if src is None else tuple(src))
        object.__setattr__(self, "arg", arg)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", dts)
        object.__setattr__(self, "rest", rest)
        object.__setattr__(self, "commutative", commutative)
        # the arg's key, compared with each candidate node's (not a field: not compared)
        object.__setattr__(self, "_argkey", None if arg is _ANY else argkey(arg))
        # a pattern that only names any node (UPat.var() without a dtype): its parent binds
        # the src itself instead of calling match (most rules' src patterns are these)
        object.__setattr__(self, "_plain", ops is None and src is None and dts is None
                           and arg is _ANY)

    @staticmethod
    def var(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> "UPat":
        """Any node."""
        return UPat(name=name, dtype=dtype)

    @staticmethod
    def cvar(name: str | None = None, value: Any = _ANY) -> "UPat":
        """A CONST (of the given value, compared exactly: 0 is not 0.0)."""
        return UPat(Ops.CONST, name=name, arg=value)

    def match(self, n: UOp, store: dict[str, UOp]) -> bool:
        """Match n, adding captures to store; on failure store may hold partial captures."""
        if self.op is not None and n.op not in self.op:
            return False
        if self.dtype is not None and n.dtype not in self.dtype:
            return False
        if self._argkey is not None and self._argkey != argkey(n.arg):
            return False
        if self.name is not None:
            prev = store.get(self.name)
            if prev is not None and prev is not n:
                return False
            store[self.name] = n
        if self.src is None:
            return True
        if len(n.src) < len(self.src) or (not self.rest and len(n.src) != len(self.src)):
            return False
        if not self.commutative or len(n.src) != 2:
            # one order: match into store directly (a failure may leave partial captures)
            for p, s in zip(self.src, n.src):
                if p._plain:                 # p.match(s, store) without the call
                    name = p.name
                    if name is not None:
                        prev = store.get(name)
                        if prev is not None and prev is not s:
                            return False
                        store[name] = s
                elif not p.match(s, store):
                    return False
            return True
        for srcs in (n.src, (n.src[1], n.src[0])):
            trial = dict(store)
            if all(p.match(s, trial) for p, s in zip(self.src, srcs)):
                store.update(trial)
                return True
        return False


CO_VARARGS, CO_VARKEYWORDS = 0x04, 0x08    # code.co_flags: *args, **kwargs (inspect.CO_*)


def first_parameter(fn: Callable) -> str | None:
    """The name of fn's first parameter (None if it has none): `inspect.signature(fn)`'s
    first, read from a plain function's code object (its co_varnames list the positional
    parameters, then the keyword-only ones, then *args and **kwargs: the Python data model,
    "Code objects"). Anything else (a bound method, a partial, a wrapper) asks inspect, whose
    import costs a process ~1.5 ms that no rule of kcc's needs."""
    if type(fn) is FunctionType and not hasattr(fn, "__wrapped__") and \
            not hasattr(fn, "__signature__"):
        code = fn.__code__
        n = code.co_argcount + code.co_kwonlyargcount
        if n:
            return code.co_varnames[0] if code.co_argcount else \
                code.co_varnames[n] if code.co_flags & CO_VARARGS else code.co_varnames[0]
        if code.co_flags & (CO_VARARGS | CO_VARKEYWORDS):
            return code.co_varnames[0]
        return None
    import inspect
    params = list(inspect.signature(fn).parameters)
    return params[0] if params else None


# a rule's capture when its function is called with the node positionally (_takes_only)
_POSITIONAL = "\0positional"


def _takes_only(fn: Callable, name: str, wants_ctx: bool) -> bool:
    """Whether fn is a plain function whose parameters are exactly (ctx, name) or (name),
    positional, without defaults to skip: then fn(ctx, n) is fn(ctx, **{name: n}) (a
    keyword call through a fresh dict cost ~160 ns more a rule tried, CPython 3.11)."""
    if type(fn) is not FunctionType or hasattr(fn, "__wrapped__"):
        return False
    code = fn.__code__
    want = 2 if wants_ctx else 1
    return (code.co_argcount == want and not code.co_kwonlyargcount
            and not code.co_flags & (CO_VARARGS | CO_VARKEYWORDS)
            and code.co_posonlyargcount == 0 and code.co_varnames[want - 1] == name)


class PatternMatcher:
    """An ordered list of (pattern, rule); the first rule that returns a node wins."""

    def __init__(self, rules: list[tuple[UPat, Callable[..., UOp | None]]]):
        self.rules = rules
        # (pattern, rule, wants ctx, capture): capture is the name a pattern that tests only
        # the op binds the node to ("" for none), None for a pattern that must be matched
        self._by_op: dict[Ops | None, list[tuple[UPat, Callable, bool, str | None]]] = {}
        for pat, fn in rules:
            wants_ctx = first_parameter(fn) == "ctx"
            # the op is what _rules_for files the rule under, so such a pattern always matches
            only_op = pat.src is None and pat.dtype is None and pat._argkey is None
            capture = (pat.name or "") if only_op else None
            if capture and _takes_only(fn, capture, wants_ctx):
                capture = _POSITIONAL   # fn(n) is fn(**{capture: n}), without the dict
            for op in (pat.op or [None]):
                self._by_op.setdefault(op, []).append((pat, fn, wants_ctx, capture))
        self._any = self._by_op.pop(None, [])
        # per op, its rules then the any-op rules, built once (rewrite runs per node visited)
        self._rules_for: dict[Ops, list[tuple[UPat, Callable, bool, str | None]]] = {
            op: rs + self._any for op, rs in self._by_op.items()}

    def __add__(self, other: "PatternMatcher") -> "PatternMatcher":
        return PatternMatcher(self.rules + other.rules)

    def rewrite(self, n: UOp, ctx: Any = None) -> UOp | None:
        """The first rule's replacement for n, or None."""
        for pat, fn, wants_ctx, capture in self._rules_for.get(n.op, self._any):
            if capture is _POSITIONAL:
                r = fn(ctx, n) if wants_ctx else fn(n)
                if r is not None and r is not n:
                    return r
                continue
            if capture is not None:
                store: dict[str, UOp] = {capture: n} if capture else {}
            else:
                store = {}
                if not pat.match(n, store):
                    continue
            r = fn(ctx, **store) if wants_ctx else fn(**store)
            if r is not None and r is not n:
                return r
        return None


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None,
                  bottom_up: bool = True, memo: dict[UOp, UOp] | None = None) -> UOp:
    """Rewrite the graph under root with pm until no rule matches anywhere (a fixed point).

    bottom_up: srcs are rewritten first, then the node built from the rewritten srcs.
    top-down (bottom_up=False): a node is rewritten before its srcs are visited.
    Iterative: an explicit stack, so graph depth is unbounded.
    memo: if given, filled with every visited node's final replacement (old node → new).
    """
    done: dict[UOp, UOp] = {} if memo is None else memo
    if bottom_up:
        return _bottom_up(root, pm, ctx, done)
    # top-down from here: bottom-up walks are _bottom_up's
    rules_for, any_rules, rewrite = pm._rules_for, pm._any, pm.rewrite
    final = done.__getitem__
    # frames: (node, stage, extra). stage 0 = enter, 1 = srcs done, 2 = link node to extra's result
    stack: list[tuple[UOp, int, Any]] = [(root, 0, None)]
    push, pop = stack.append, stack.pop
    while stack:
        n, stage, extra = pop()
        if stage != 2 and n in done:
            continue
        if stage == 0:
            r = rewrite(n, ctx)
            if r is not None:
                push((n, 2, r))
                push((r, 0, None))
                continue
            src = n.src
            if src:
                push((n, 1, None))
                # (a loop, not a list comprehension: no frame per node; the same order)
                for s in reversed(src):
                    if s not in done:
                        push((s, 0, None))
                continue
            stage = 1     # a leaf: its stage 1 now (the frame it would push is popped next)
        if stage == 1:
            src = n.src
            new_src = tuple(map(final, src))
            # tuples of UOps compare element by element by identity (UOp defines no ==)
            x = n if new_src == src else n.replace(src=new_src)
            if x is not n:
                push((n, 2, x))
                push((x, 0, None))
                continue
            # (no rule for the op: nothing to try)
            r = rewrite(x, ctx) if rules_for.get(x.op, any_rules) else None
            if r is None:
                done[n] = x
                done[x] = x
            else:
                push((n, 2, r))
                push((r, 0, None))
        else:
            done[n] = done[extra]
    return done[root]


def rewrites_nothing(root: UOp, pm: PatternMatcher, ctx: Any = None,
                     done: dict[UOp, UOp] | None = None) -> bool:
    """Whether graph_rewrite(root, pm, ctx) (bottom-up) gives root itself: no rule of pm
    fires on any node of the graph as it is. Then the walk would rebuild nothing (every
    node's srcs stay its own), so a pass that often changes nothing (simplify, devectorize,
    decompose, legalize_gates on x86) asks this first: one loop over the graph's order
    (kept on root) instead of the walk's frames, memo and src tuples. When a rule fires,
    `done` (if given) receives n → n for every node before that one in the order: their
    subgraphs hold no node a rule changes, so the walk's answer for each is the node itself
    and graph_rewrite(..., memo=done) does not walk them again. Rules are functions of the
    node and ctx (graph_rewrite rewrites a node once, whatever path reaches it)."""
    rules_get, any_rules, rewrite = pm._rules_for.get, pm._any, pm.rewrite
    order = toposort([root])
    for k, n in enumerate(order):
        if rules_get(n.op, any_rules) and rewrite(n, ctx) is not None:
            if done is not None:
                done.update(zip(order[:k], order[:k]))
            return False
    return True


def _bottom_up(root: UOp, pm: PatternMatcher, ctx: Any, done: dict[UOp, UOp]) -> UOp:
    """graph_rewrite's bottom-up walk, the same visits in the same order: each frame resumes
    its node's src iterator (as uop.toposort does) instead of pushing every src and the node
    again. A frame whose `link` is a node stands for "n becomes what link becomes" (a rule's
    result, walked like any other node)."""
    if root in done:
        return done[root]
    rules_get, any_rules, rewrite = pm._rules_for.get, pm._any, pm.rewrite
    final = done.__getitem__
    # frames: (node, iterator over what is walked before it, None or the node it links to)
    stack: list[tuple[UOp, Iterator[UOp], UOp | None]] = [(root, iter(root.src), None)]
    push, pop = stack.append, stack.pop
    while stack:
        n, srcs, link = stack[-1]
        for s in srcs:
            if s not in done:
                push((s, iter(s.src), None))
                break
        else:
            pop()
            if link is not None:
                done[n] = done[link]
                continue
            if n in done:
                # (as the frame-per-stage walk: a rule's result elsewhere may have been this
                # very node, finished while its srcs were walked)
                continue
            src = n.src
            if src:
                new_src = tuple(map(final, src))
                # tuples of UOps compare element by element by identity (UOp defines no ==)
                x = n if new_src == src else n.replace(src=new_src)
            else:
                x = n
            # (no rule for the op: nothing to try)
            r = rewrite(x, ctx) if rules_get(x.op, any_rules) else None
            if r is None:
                done[n] = x
                done[x] = x
            elif r in done:
                done[n] = done[r]
            else:
                push((n, iter((r,)), r))
    return done[root]
