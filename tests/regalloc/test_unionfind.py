"""The allocator's one union-find (kcc/regalloc/unionfind.py), shared by copy coalescing and the
spill-slot sizer: sets against a brute-force partition, and the representative rule."""

from __future__ import annotations

import random

from kcc.regalloc.unionfind import UnionFind


def test_unions_match_a_brute_force_partition() -> None:
    rng = random.Random(7)
    for _ in range(50):
        sets = UnionFind()
        part = {k: {k} for k in range(30)}          # element -> its set (shared objects)
        for _ in range(rng.randrange(40)):
            x, y = rng.randrange(30), rng.randrange(30)
            sets.union(x, y)
            joined = part[x] | part[y]
            for k in joined:
                part[k] = joined
        for x in range(30):
            for y in range(30):
                assert (sets.find(x) == sets.find(y)) == (y in part[x])


def test_union_keeps_the_second_representative() -> None:
    sets = UnionFind()
    assert sets.find("a") == "a"                    # never joined: its own set
    assert sets.union("a", "b") == "b"
    assert sets.union("c", "a") == "b"              # a's set is b's
    assert sets.union("b", "d") == "d"
    assert {sets.find(k) for k in "abcd"} == {"d"}
    assert set(sets.joined()) == {"a", "b", "c"}    # d represents, so it never joined
