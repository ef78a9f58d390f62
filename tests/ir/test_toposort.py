"""kcc/ir/uop.py's toposort: the order a single root keeps (its `_order` memo) is the walk's,
every call hands out a list of its own, and the memo holds no reference cycle (a root dies
with its last user, the cyclic collector off)."""

from __future__ import annotations

import gc
import weakref

from kcc.ir import Ops, UOp, dtypes
from kcc.ir.uop import _toposort, toposort


def _diamond(levels: int) -> UOp:
    a = UOp(Ops.CONST, (), 1.5)
    b = UOp(Ops.CONST, (), 2.5)
    for _ in range(levels):
        a, b = UOp(Ops.ADD, (a, b)), UOp(Ops.MUL, (a, b))
    return UOp(Ops.CAST, (UOp(Ops.ADD, (a, b)),), dtypes.float32)


def test_kept_order_is_the_walk_and_not_shared() -> None:
    root = _diamond(30)
    first = toposort([root])
    assert first == _toposort([root], None)
    assert first[-1] is root and len(first) == len(set(first))
    first.reverse()                                   # a caller may change its list
    second = toposort([root])
    assert second == _toposort([root], None) and second is not first
    second.clear()
    assert toposort([root]) == _toposort([root], None)
    assert root.toposort() == _toposort([root], None)


def test_several_roots_and_descend_are_walked_as_before() -> None:
    x, y = _diamond(5), _diamond(6)
    assert toposort([x, y]) == _toposort([x, y], None)
    only_adds = toposort([x], lambda s: s.op is not Ops.MUL)
    assert only_adds == _toposort([x], lambda s: s.op is not Ops.MUL)


def test_kept_order_holds_no_cycle() -> None:
    gc.disable()
    try:
        root = _diamond(8)
        toposort([root])
        dead = weakref.ref(root)
        del root
        assert dead() is None                          # freed by reference counts alone
    finally:
        gc.enable()
