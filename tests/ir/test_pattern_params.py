"""PatternMatcher reads a rule's first parameter name (`ctx` or not) from its code object
instead of `inspect.signature` (kcc.ir.pattern.first_parameter): the same answer as inspect
for every shape of parameter list, and for the callables it leaves to inspect."""

from __future__ import annotations

import functools
import inspect

import pytest

from kcc.ir.pattern import first_parameter


def _wrapped(fn):
    @functools.wraps(fn)
    def w(*a, **k):
        return fn(*a, **k)
    return w


class _C:
    def method(self, ctx, x):
        return x

    def __call__(self, x, y=1):
        return x


def _f(ctx, x=None, *rest, k, **kw):
    return x


CALLABLES = [
    lambda ctx, x: x, lambda x: x, lambda: None, lambda *a: a, lambda **k: k,
    lambda *, k: k, lambda *a, k: k, lambda x, /, y: y, lambda ctx, /: ctx, _f,
    _wrapped(lambda ctx, x: x), _wrapped(lambda x: x), _C().method, _C(),
    functools.partial(lambda ctx, x: x, 1), functools.partial(_f, x=2), len, print,
]


@pytest.mark.parametrize("fn", CALLABLES)
def test_first_parameter_is_inspects(fn) -> None:
    params = list(inspect.signature(fn).parameters)
    assert first_parameter(fn) == (params[0] if params else None)


def test_every_rule_of_the_x86_compile_path_wants_ctx_as_inspect_says() -> None:
    import sys

    from kcc.ir.pattern import PatternMatcher
    from kcc.targets import registry
    registry.get("x86")
    from kcc.targets import pipeline  # noqa: F401
    matchers = {id(v): v for name, m in list(sys.modules.items()) if name.startswith("kcc.")
                for v in vars(m).values() if isinstance(v, PatternMatcher)}
    seen = 0
    for pm in matchers.values():
        for _, fn in pm.rules:
            params = list(inspect.signature(fn).parameters)
            assert first_parameter(fn) == (params[0] if params else None), fn
            seen += 1
    assert seen > 30          # (39 when written)


@pytest.mark.parametrize("fn", CALLABLES)
@pytest.mark.parametrize("wants_ctx", [False, True])
def test_positional_call_only_where_it_binds_as_the_keyword_call(fn, wants_ctx) -> None:
    """_takes_only says fn(ctx, n) may stand for fn(ctx, x=n) only when inspect lists exactly
    those parameters, positional-or-keyword, without defaults."""
    from kcc.ir.pattern import _takes_only
    try:
        params = list(inspect.signature(fn).parameters.values())
    except ValueError:
        params = None
    want = ["ctx", "x"] if wants_ctx else ["x"]
    exact = params is not None and [p.name for p in params] == want and all(
        p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params)
    if _takes_only(fn, "x", wants_ctx):
        assert exact


def test_rules_called_positionally_rewrite_as_before() -> None:
    from kcc.ir import Ops, UOp
    from kcc.ir.pattern import _POSITIONAL, PatternMatcher, UPat, graph_rewrite
    one = UOp(Ops.CONST, (), 1)
    two = UOp(Ops.CONST, (), 2)

    def bump(x):
        return two if x is one else None

    def bump_ctx(ctx, x):
        return ctx if x is one else None

    def bump_kw(*, x):
        return two if x is one else None

    pm = PatternMatcher([(UPat(Ops.CONST, name="x"), bump)])
    pmc = PatternMatcher([(UPat(Ops.CONST, name="x"), bump_ctx)])
    pmk = PatternMatcher([(UPat(Ops.CONST, name="x"), bump_kw)])
    assert pm._rules_for[Ops.CONST][0][3] is _POSITIONAL
    assert pmc._rules_for[Ops.CONST][0][3] is _POSITIONAL
    assert pmk._rules_for[Ops.CONST][0][3] == "x"
    root = UOp(Ops.SINK, (one,))
    assert graph_rewrite(root, pm).src == (two,)
    assert graph_rewrite(root, pmk).src == (two,)
    assert graph_rewrite(root, pmc, ctx=two).src == (two,)
