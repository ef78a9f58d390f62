"""The allocator's two-pass liveness and interval hulls against a brute-force reference.

The reference below iterates the textbook data-flow equations over every instruction to a
fixed point and takes each variable's interval as the hull of every position where it is live
(the definition the allocator's intervals must meet); it shares no code with
``kcc.regalloc.liveness``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcc.ir.mir import Inst, MFunction, RegOp, Role, VReg, structure, successors
from kcc.regalloc.liveness import intervals, live_sets, number_vars
from test_regalloc import Gen


def _numbered(insts: list[Inst]) -> tuple[list[list[int]], list[list[int]], int]:
    ids: dict[int, int] = {}
    uses, defs = [], []
    for inst in insts:
        uses.append(list(dict.fromkeys(ids.setdefault(id(r), len(ids)) for r in inst.uses()
                                       if isinstance(r, VReg))))
        defs.append(list(dict.fromkeys(ids.setdefault(id(r), len(ids)) for r in inst.defs()
                                       if isinstance(r, VReg))))
    return uses, defs, len(ids)


def _reference(uses: list[list[int]], defs: list[list[int]], succ: list[list[int]]
               ) -> tuple[list[set[int]], list[set[int]]]:
    n = len(uses)
    lin: list[set[int]] = [set() for _ in range(n)]
    lout: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for i in range(n):
            o = set().union(*(lin[s] for s in succ[i] if s < n))
            new = set(uses[i]) | (o - set(defs[i]))
            if o != lout[i] or new != lin[i]:
                lout[i], lin[i], changed = o, new, True
    return lin, lout


def _check(fn: MFunction) -> None:
    # the parameters are defined by an entry instruction, as the allocator's working copy has
    insts = [Inst("entry", [RegOp(v, Role.DEF) for v, _ in fn.params]), *fn.insts]
    uses, defs, nvars = _numbered(insts)
    loops, labels = structure(insts)
    succ = successors(insts, labels)
    pairs = [(b, e) for b, e, _ in loops]
    lin, lout = _reference(uses, defs, succ)
    got_in, got_out = live_sets(uses, defs, succ, pairs)
    for i in range(len(uses)):
        assert got_in[i] == lin[i], f"live-in of inst {i}"
        assert got_out[i] == lout[i], f"live-out of inst {i}"
    ivs, entry, _ = intervals(uses, defs, succ, pairs, nvars)
    assert entry == lin[0] == set()
    pos: dict[int, list[int]] = {}
    for i in range(len(uses)):
        for v in lin[i]:
            pos.setdefault(v, []).append(2 * i)
        for v in lout[i] | set(defs[i]):
            pos.setdefault(v, []).append(2 * i + 1)
    for v in range(nvars):
        iv = ivs[v]
        if v not in pos:
            assert iv is None
            continue
        assert iv is not None and (iv.start, iv.end) == (min(pos[v]), max(pos[v])), v
        assert iv.uses == sorted(2 * i for i, us in enumerate(uses) if v in us)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.integers(4, 60))
def test_two_pass_liveness_and_hulls_match_the_fixed_point(data: st.DataObject,
                                                           budget: int) -> None:
    _check(Gen(data, budget).build())


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.integers(4, 60))
def test_number_vars_lists_what_uses_and_defs_name(data: st.DataObject, budget: int) -> None:
    """The allocator's one-walk operand lists (``vreg_lists``, behind ``number_vars``) name,
    per instruction, the VRegs of ``Inst.uses``/``Inst.defs`` in order without repeats, and the
    numbering counts the used ones first, in order of first use."""
    fn = Gen(data, budget).build()
    var, index, uses, defs = number_vars(fn.insts)

    def want(regs: list) -> list:
        out: list = []
        for r in regs:
            if isinstance(r, VReg) and not any(x is r for x in out):
                out.append(r)
        return out
    first_use: list = []
    for inst, us, ds in zip(fn.insts, uses, defs):
        assert [var[k] for k in us] == want(inst.uses())
        assert [var[k] for k in ds] == want(inst.defs())
        first_use += [r for r in want(inst.uses()) if not any(x is r for x in first_use)]
    assert var[:len(first_use)] == first_use
    assert all(index[id(v)] == k for k, v in enumerate(var))
