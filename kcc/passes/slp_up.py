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

A second seed (`pack_jammed`): unroll-and-jam's copies of a scalar row reduction, each with
its own one-element REG accumulator (acc_r = acc_r + f(x_r)), have no vector at all. Each
operand tuple of the copies' stored values other than the accumulators is packed when the
vector ops save more than the lane inserts and extracts cost (`_pays`; the copies' element
loads, a column at the row stride, are one STACK under all of it): tinygrad's bf16_sum rounds
each element to bfloat16 with ~15 integer ops, now one 4-lane op each for 4 rows.
"""

from __future__ import annotations

from itertools import islice

from kcc.ir.consts import const_int, is_const
from kcc.ir.dtype import dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, UOp, base_buffer
from kcc.passes.slp_cost import PACKABLE

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Iterator

    from kcc.passes.slp import _Packer

Lanes = tuple[UOp, ...]
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


def _users(order: list[UOp], only: set[UOp] | None = None) -> dict[UOp, list[UOp]]:
    """Each node → the scalar ALU nodes that read it, in graph order; only: for the nodes of
    this set alone (a node reading none of them is passed over by one set test)."""
    out: dict[UOp, list[UOp]] = {}
    for u in order:
        if (only is None or not only.isdisjoint(u.src)) and u.op in PACKABLE \
                and u.shape == () and u.kind == "value":
            for s in dict.fromkeys(u.src):
                if only is None or s in only:
                    out.setdefault(s, []).append(u)
    return out


def _user_tuples(t: Lanes, users: dict[UOp, list[UOp]]) -> list[Lanes]:
    """The tuples (u_0 … u_n-1) of distinct isomorphic users, u_j reading t[j] at the
    operand position where u_0 reads t[0] (and no other lane of t there)."""
    out = []
    # each other lane's users by (op, src count, a position reading the lane), made once per
    # lane here, not scanned per user of t[0]: a lane that is a broadcast operand has tens of
    # users, and the scan of them all per user of t[0] was ~40% of pack_upward on a matmul
    # tile. A user stays in its lane's list in graph order, so the matches are the scan's.
    # (each entry with its arg and dtype, read once: a broadcast lane's list is scanned for
    # every user of t[0], and its dtypes were half of pack_upward on matmul at x86-64-v4)
    at: dict[UOp, dict[tuple[Ops, int, int], list[tuple[UOp, object, object]]]] = {}
    for u0 in users.get(t[0], ()):
        pos = [i for i, x in enumerate(u0.src) if x is t[0]]
        if len(pos) != 1:
            continue
        i = pos[0]
        tup = [u0]
        key = (u0.op, len(u0.src), i)
        arg, dt = u0.arg, u0.dtype
        for s in t[1:]:
            by = at.get(s)
            if by is None:
                by = at[s] = {}
                for u in users.get(s, ()):
                    for j, x in enumerate(u.src):
                        if x is s:
                            by.setdefault((u.op, len(u.src), j), []).append(
                                (u, u.arg, u.dtype))
            match = [u for u, a, d in by.get(key, ()) if a == arg and (d is dt or d == dt)
                     and u not in tup]
            if len(match) != 1:
                break
            tup.append(match[0])
        else:
            out.append(tuple(tup))
    return out


def _new_nodes(v: UOp, old: set[UOp]) -> Iterator[UOp]:
    """The nodes under v not in old, each once, depth first; a STACK or a scalar node is a
    leaf (its operands are not visited)."""
    work, seen = [v], set()
    while work:
        n = work.pop()
        if n in old or n in seen:
            continue
        seen.add(n)
        yield n
        if n.op is not Ops.STACK and n.shape:
            work.extend(n.src)


def _cheap(v: UOp, old: set[UOp]) -> bool:
    """Whether the new vector nodes under v need no lane inserts (each STACK leaf is constants
    or one value that is not a vector's lane repeated: a broadcast) and hold no
    transcendental."""
    for n in _new_nodes(v, old):
        if n.op in _TRANSCENDENTAL:
            return False
        if n.op is Ops.STACK and not all(is_const(s) for s in n.src):
            x = n.src[0]
            # a broadcast, but not of a lane of another vector: that vector, read in the
            # transposed order the downward packing would give, is the better operand
            # (layernorm's mean, one lane per row: four broadcasts where it needs none)
            if not all(s is x for s in n.src) or x.op is Ops.INDEX and x.src[0].shape:
                return False
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
    # the users of the seeds' lanes first: most kernels pack no tuple upward (matmul's 40
    # seeds at x86-64-v4, none packed), and the map of every node's users, a pass over the
    # whole jammed graph, is made only when a tuple of users is asked about
    lanes = {s for t in seeds for s in t}
    users = _users(order, lanes)
    old = set(order)
    done: set[Lanes] = set()
    work = list(seeds)
    while work:
        t = work.pop()
        if t in done:
            continue
        done.add(t)
        if lanes and not lanes.issuperset(t):
            users, lanes = _users(order), set()         # (every node's, from now on)
        for tup in _user_tuples(t, users):
            if any(u in p.lane_of for u in tup):
                continue
            if tup[0].dtype == dtypes.bool:
                if lanes:
                    users, lanes = _users(order), set()
                if not _user_tuples(tup, users):
                    continue  # bool lanes read one by one: a mask's lanes cost more to extract
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


def _jammed(order: list[UOp]) -> list[Lanes]:
    """The values of scalar STOREs to one-element REG buffers in one loop body with one op,
    dtype and arg (unroll-and-jam's copies of a row reduction's accumulator: acc_r = acc_r +
    f(x_r) for rows r), in graph order, as tuples of at least two."""
    groups: dict[tuple, list[UOp]] = {}
    for u in order:
        if u.op is not Ops.STORE or len(u.src) != 2 or u.src[0].op is not Ops.INDEX:
            continue
        v, buf = u.src[1], u.src[0].src[0]
        b = base_buffer(buf)
        if v.shape != () or v.op not in PACKABLE or buf.op is not Ops.AFTER \
                or b.op is not Ops.BUFFER or b.arg.addrspace is not AddrSpace.REG \
                or b.arg.size != 1:
            continue
        loops = tuple(s for s in buf.src[1:] if s.op is Ops.RANGE)
        groups.setdefault((loops, v.op, v.dtype, v.arg), []).append(v)
    return [tuple(dict.fromkeys(vs)) for vs in groups.values() if len(set(vs)) > 1]


def _pays(v: UOp, old: set[UOp], n: int) -> bool:
    """Whether the new vector nodes under v (n lanes) save more scalar ops than their lane
    inserts and the n-1 lane extracts of the result cost: n-1 a vector op against n-1 a
    STACK leaf of unrelated scalars (constants and broadcasts are free; no transcendental,
    which pack_lanes.py packs wider)."""
    ops, inserts = 0, n - 1
    for u in _new_nodes(v, old):
        if u.op in _TRANSCENDENTAL:
            return False
        if u.op is Ops.STACK:
            if not (all(s is u.src[0] for s in u.src) or all(is_const(s) for s in u.src)):
                inserts += n - 1
        elif u.shape:
            ops += 1
    return ops * (n - 1) > inserts


def _load_tuples(t: Lanes) -> list[Lanes]:
    """The tuples of distinct ungated scalar LOADs that t reaches operand by operand through
    isomorphic ops (a bounded walk)."""
    out, work, seen = [], [t], set()
    while work and len(seen) < 64:
        t = work.pop()
        if t in seen:
            continue
        seen.add(t)
        s0 = t[0]
        if all(s.op is Ops.LOAD and len(s.src) == 1 and s.shape == () for s in t):
            if len(set(t)) == len(t):
                out.append(t)
        elif s0.op in PACKABLE and all(s.op is s0.op and s.arg == s0.arg
                                        and len(s.src) == len(s0.src) for s in t):
            work.extend(tuple(s.src[i] for s in t) for i in range(len(s0.src)))
    return out


def pack_jammed(p: _Packer, order: list[UOp]) -> None:
    """The per-element work of unroll-and-jam's copies of a scalar row reduction (each copy
    its own one-element accumulator: tinygrad's bf16_sum rounds every element to bfloat16
    with ~15 integer ops before adding it) as one vector over the copies, when that pays
    (`_pays`): each operand tuple of the copies' values that is not the accumulators'. The
    accumulations stay scalar (each reads its lane); lane r computes copy r's element with
    the same ops: bit-identical."""
    if not p.ctx.vector_regs:
        return
    old = set(order)
    for t in _jammed(order):
        n = len(t)
        for i in range(len(t[0].src)):
            sub = tuple(v.src[i] for v in t)
            if len(set(sub)) != n or any(s.shape != () or s in p.lane_of or s.op is Ops.LOAD
                                         for s in sub):
                continue
            marks = len(p.memo), len(p.lane_of)
            for lt in _load_tuples(sub):
                # the copies' element loads (a column at the row stride): one STACK of
                # them, packed once, under every op above (not one STACK per op)
                p.memo.setdefault(lt, UOp(Ops.STACK, lt))
            v = p.pack(sub)
            if v is None or v.op is Ops.STACK or not _pays(v, old, n):
                _forget(p.memo, marks[0])
                _forget(p.lane_of, marks[1])
                continue
            for j, s in enumerate(sub):
                p.lane_of.setdefault(s, (v, j))
                p.up.setdefault(s, (v, j))
