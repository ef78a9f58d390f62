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


def _random_dag(seed: int, n: int = 60) -> list[UOp]:
    """n GROUP nodes, each over up to 4 earlier ones (tags keep them apart), in build order."""
    import random
    rng = random.Random(seed)
    nodes = [UOp(Ops.GROUP, (), None, ("leaf", seed, i)) for i in range(3)]
    for i in range(n):
        srcs = tuple(rng.choice(nodes) for _ in range(rng.randint(0, 4)))
        nodes.append(UOp(Ops.GROUP, srcs, None, ("node", seed, i)))
    return nodes


def test_a_kept_first_src_order_heads_the_walk() -> None:
    # toposort of a root whose src 0 was sorted before starts from src 0's kept order
    # (`_toposort_one`): every node's order, with others' kept in any order first, is the
    # plain walk's
    import random
    for seed in range(60):
        nodes = _random_dag(seed)
        for n in random.Random(seed).sample(nodes, 20):
            toposort([n])
        for n in nodes:
            assert toposort([n]) == _toposort([n], None)


def test_head_orders_kept_from_a_root_are_the_walks() -> None:
    from kcc.ir.uop import keep_head_orders
    for seed in range(60):
        root = _random_dag(1000 + seed)[-1]
        keep_head_orders(toposort([root]), 5)
        x = root
        while x.src:
            x = x.src[0]
            assert toposort([x]) == _toposort([x], None)


def test_a_first_sort_keeps_its_head_orders() -> None:
    # toposort of a root not sorted before keeps the orders of the first HEAD_DEPTH nodes of
    # its first-src chain (a loop nest's ENDs): each the plain walk of that node
    from kcc.ir.uop import HEAD_DEPTH
    for seed in range(60):
        root = _random_dag(2000 + seed, 80)[-1]
        assert toposort([root]) == _toposort([root], None)
        x, depth = root, 0
        while x.src and depth < HEAD_DEPTH:
            x, depth = x.src[0], depth + 1
            assert x._order == _toposort([x], None)[:-1]
            assert toposort([x]) == _toposort([x], None)


def test_rebuild_reaches_a_replaced_node_outside_the_order() -> None:
    # rebuild skips the nodes before repl's first node in order only where every node of
    # repl is in order: a RANGE that a region reads, not itself in the region, is replaced
    # wherever it is read (widen_tail's region; skipping there left a RANGE unclosed)
    from kcc.ir.uop import rebuild
    r = UOp(Ops.RANGE, (UOp.const(4),), (0,))
    r2 = UOp(Ops.RANGE, (UOp.const(2),), (1,))
    a = UOp(Ops.ADD, (r, UOp.const(1)))
    b = UOp(Ops.MUL, (a, UOp.const(3)))
    out = rebuild([a, b], {r: r2})
    assert out[b].src[0].src[0] is r2
    # keys in order: the prefix before the first key is left as it is, the rest rebuilt
    c = UOp(Ops.ADD, (b, UOp.const(5)))
    out = rebuild([UOp.const(1), a, UOp.const(3), b, UOp.const(5), c], {b: a})
    assert out[c].src[0] is a and set(out) == {b, c}
