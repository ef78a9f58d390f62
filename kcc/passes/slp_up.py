"""slp's upward seed (kcc/passes/slp.py): scalar work on the lanes of one vector, packed from
the vector up, where packing from the stores down left it scalar.

slp packs from STACKs and store runs downwards, tuple by tuple of operands. A tuple whose
lanes are not isomorphic stays a STACK of scalars, and each scalar keeps its own work:
tinygrad's cummax over 4 padded rows (r_3_128_2_4_64_4) reduces each row's 4 elements into
one accumulator lane, so the accumulator's vector MAXes read transposed tuples (element j of
rows 0…3), whose lanes are `row 0 ? -inf : x` for two rows and bare `x` for the others: not
isomorphic, so the selects stayed scalar (a compare, a SETcc, a KMOV and a blend each).
Read along a row instead, the same selects are isomorphic: lane j of row r's masked load
under `e < c_r - j`, one vector compare of e against a bound vector.

So, before the downward packing, each tuple of n scalars that are lanes 0…n-1 of one vector
(a vector's lane INDEXes, or a group of gated loads slp_gated.py packed) is a seed: the tuple
of their users that are n isomorphic ALU nodes reading lane j at one operand position is
packed (`_Packer.pack`), and the walk continues from it, when it pays:
- every other operand tuple packs into a vector, a constant vector or a broadcast of a value
  that is not itself a vector's lane (no lane inserts; a broadcast lane of a vector is what
  the downward packing reads as that vector: layernorm's mean, one lane per row);
- no transcendental is packed (kcc/passes/pack_lanes.py packs all of a loop's EXP2s into one
  vector where this would make one per seed vector);
- a bool tuple packs only when its own users pack too (the lanes of a mask read one by one
  cost a KMOV and a bit test each: tinygrad's scatter compares an invariant index vector
  against the counter, lanes extracted once outside the loop before).
A refused tuple leaves nothing recorded. The downward packing then reads a tuple of packed
users as their lanes (a shuffle or a transpose of the row vectors) instead of repacking them
as another vector, and the rebuild reads every other use of a packed user as its lane
(`lane_of`). As in slp, each vector op computes exactly its lanes' values with the same op:
bit-identical.
"""

from __future__ import annotations

from itertools import islice

from kcc.ir.consts import const_int, is_const
from kcc.ir.dtype import dtypes
from kcc.ir.ops import ALU
from kcc.ir.ops import FastOps as Ops  # Ops' members, read fast (kcc/ir/ops.py FastOps)
from kcc.ir.uop import UOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from kcc.passes.slp import _Packer

Lanes = tuple[UOp, ...]
_PACKABLE = frozenset(ALU | {Ops.CAST, Ops.BITCAST})
# left to pack_lanes.py, which packs every such scalar of a loop into one vector (8 lanes where
# this would make two vectors of 4, each decomposed on its own)
_TRANSCENDENTAL = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN})


def lane_seeds(order: list[UOp], p: _Packer) -> list[Lanes]:
    """Tuples of the scalars that are lanes 0…n-1 of one vector: a vector value's lane
    INDEXes (every lane present), and the scalar loads of a per-lane-gated vector load."""
    lanes: dict[UOp, dict[int, UOp]] = {}
    for u in order:
        if u.op is Ops.INDEX and u.kind == "value" and u.shape == () \
                and u.src[0].kind == "value" and len(u.src[0].shape) == 1:
            k = const_int(u.src[1])
            if k is not None:
                lanes.setdefault(u.src[0], {}).setdefault(k, u)
    seeds = [tuple(ks[j] for j in range(v.shape[0])) for v, ks in lanes.items()
             if v.shape[0] > 1 and all(j in ks for j in range(v.shape[0]))]
    seeds += [t for t, v in p.memo.items() if v is not None and v.op is Ops.LOAD
              and len(v.src) == 3 and all(s.op is Ops.LOAD for s in t)]
    return seeds


def _users(order: list[UOp]) -> dict[UOp, list[UOp]]:
    """Each node → the scalar ALU nodes that read it, in graph order."""
    out: dict[UOp, list[UOp]] = {}
    for u in order:
        if u.op in _PACKABLE and u.shape == () and u.kind == "value":
            for s in dict.fromkeys(u.src):
                out.setdefault(s, []).append(u)
    return out


def _user_tuples(t: Lanes, users: dict[UOp, list[UOp]]) -> list[Lanes]:
    """The tuples (u_0 … u_n-1) of distinct isomorphic users, u_j reading t[j] at the
    operand position where u_0 reads t[0] (and no other lane of t there)."""
    out = []
    for u0 in users.get(t[0], ()):
        pos = [i for i, x in enumerate(u0.src) if x is t[0]]
        if len(pos) != 1:
            continue
        i = pos[0]
        tup = [u0]
        for s in t[1:]:
            match = [u for u in users.get(s, ()) if u.op is u0.op and u.arg == u0.arg
                     and u.dtype == u0.dtype and len(u.src) == len(u0.src) and u.src[i] is s
                     and u not in tup]
            if len(match) != 1:
                break
            tup.append(match[0])
        else:
            out.append(tuple(tup))
    return out


def _cheap(v: UOp, old: set[UOp]) -> bool:
    """Whether the new vector nodes under v need no lane inserts (each STACK leaf is constants
    or one value that is not a vector's lane repeated: a broadcast) and hold no
    transcendental."""
    work, seen = [v], set()
    while work:
        n = work.pop()
        if n in old or n in seen:
            continue
        seen.add(n)
        if n.op in _TRANSCENDENTAL:
            return False
        if n.op is Ops.STACK:
            x = n.src[0]
            if all(is_const(s) for s in n.src):
                continue
            # a broadcast, but not of a lane of another vector: that vector, read in the
            # transposed order the downward packing would give, is the better operand
            # (layernorm's mean, one lane per row: four broadcasts where it needs none)
            if not all(s is x for s in n.src) or x.op is Ops.INDEX and x.src[0].shape:
                return False
            continue
        if n.shape:
            work.extend(n.src)
    return True


def _forget(d: dict, n: int) -> None:
    """Remove the entries added to d after its first n (dicts keep insertion order)."""
    for k in list(islice(reversed(d), len(d) - n)):
        del d[k]


def pack_upward(p: _Packer, order: list[UOp]) -> None:
    """Pack the users of each seed's lanes, upwards while they pack (see the docstring);
    their lanes are recorded in p.lane_of for slp's rebuild."""
    seeds = lane_seeds(order, p)
    if not seeds:
        return
    users = _users(order)
    old = set(order)
    done: set[Lanes] = set()
    work = list(seeds)
    while work:
        t = work.pop()
        if t in done:
            continue
        done.add(t)
        for tup in _user_tuples(t, users):
            if any(u in p.lane_of for u in tup):
                continue
            if tup[0].dtype == dtypes.bool and not _user_tuples(tup, users):
                continue    # bool lanes read one by one: a mask's lanes cost more to extract
            marks = len(p.memo), len(p.lane_of)
            v = p.pack(tup)
            if v is None or v.op is Ops.STACK or not _cheap(v, old):
                _forget(p.memo, marks[0])        # (what a refused pack recorded)
                _forget(p.lane_of, marks[1])
                continue
            for j, u in enumerate(tup):
                p.lane_of.setdefault(u, (v, j))
                p.up.setdefault(u, (v, j))
            work.append(tup)
