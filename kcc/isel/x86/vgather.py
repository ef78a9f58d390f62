"""x86 selection of a STACK of scalar loads at the lanes of an index vector as one gather
(x86-64-v4).

kcc/passes/widen_gather.py writes the k lanes of a load at a computed index as

    STACK(LOAD(INDEX(buf, INDEX(V, j)), INDEX(A, j), INDEX(G, j)) for j in 0 … 15)

(or ungated: `LOAD(INDEX(buf, INDEX(V, j)))`), V a vector of 16 int32 indexes, G the lanes'
gates and A their alternatives (after simplify, one scalar alt where A was a splat; after
kcc/passes/gates.py, the index `WHERE(INDEX(G, j), INDEX(V, j), k)`, which is V's lane
wherever the gate lets the lane be read), or the same at 8 lanes (VGATHERDPS ymm {k}).
That is VGATHERDPS zmm {k}, [base + V*4] (SDM Vol. 2
"VGATHERDPS"): lane j is the dword at base + sign_extend(V[j])*4 where bit j of k is set
(the scalar load's address: an int32 index, sign-extended), and keeps the destination's lane
where it is clear. Only lanes whose mask bit is set are read, so a gated-off lane's address
faults never, whatever its index (SDM: "faults ... only on elements whose mask bit is set").
The mask is a copy of G's opmask (kcc/isel/x86/kmask.py kbool; KMOVQ: the gather clears its
mask) or all ones, and the destination +0 (VPXORD) or a copy of A: exactly the scalar loads'
lanes.

The 16 loads, their places and the lane extracts that only they read are selected here, at
the STACK, and nowhere else (`vgather_nodes`: the driver skips them). Reading at the STACK
gives what the loads read: no STORE, RANGE or END lies between the first load and the STACK
in the schedule.
"""

from __future__ import annotations

from kcc.ir import UOp, dtypes
from kcc.ir.consts import const_int
from kcc.ir.mir import Mem, VReg
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, base_buffer
from kcc.isel.x86.analysis import schedule_facts
from kcc.isel.x86.base import SelectError, positive_zero

_FORMS = {16: ("z", "vgatherdps_z_k_vm32z"), 8: ("y", "vgatherdps_y_k_vm32y")}   # lanes: form


def _lane_of(x: UOp, j: int, n: int) -> UOp | None:
    """v when x is INDEX(v, j) of an n-lane vector v, else None."""
    if x.op is Ops.INDEX and len(x.src) == 2 and x.src[0].shape == (n,) \
            and const_int(x.src[1]) == j:
        return x.src[0]
    return None


def _match(u: UOp) -> tuple[UOp, UOp, UOp | None, UOp | None] | None:
    """(buf, V, A, G) when STACK u is the module docstring's shape (A, G None: ungated)."""
    n = len(u.src)
    if u.op is not Ops.STACK or u.dtype != dtypes.float32 or n not in _FORMS \
            or len(set(u.src)) != n:
        return None
    shape = None
    for j, s in enumerate(u.src):
        if s.op is not Ops.LOAD or s.shape or s.src[0].op is not Ops.INDEX \
                or len(s.src[0].src) != 2:
            return None
        buf, idx = s.src[0].src
        gated = len(s.src) == 3
        if gated and idx.op is Ops.WHERE and idx.src[0] is s.src[2] \
                and const_int(idx.src[2]) is not None:
            # kcc/passes/gates.py's safe index WHERE(gate, i, k) on the load's own gate: the
            # gather reads no masked-off lane, so lane j's index is i wherever it is read
            idx = idx.src[1]
        v = _lane_of(idx, j, n)
        if v is None or v.dtype != dtypes.int32:
            return None
        # the alt: a lane of a vector, or one scalar for every lane (a folded splat)
        a = (_lane_of(s.src[1], j, n) or s.src[1]) if gated else None
        g = _lane_of(s.src[2], j, n) if gated else None
        if gated and (g is None or g.dtype != dtypes.bool or a.dtype != dtypes.float32):
            return None
        here = (buf, v, a, g)
        if shape is None:
            shape = here
        elif any(x is not y for x, y in zip(here, shape)):
            return None
    assert shape is not None
    b = base_buffer(shape[0])
    if b.op is not Ops.PARAM or b.arg.addrspace is not AddrSpace.GLOBAL:
        return None
    return shape


def vgather_nodes(lin: list[UOp], facts: tuple | None = None
                  ) -> tuple[dict[UOp, tuple], frozenset[UOp]]:
    """({STACK: (buf, V, A, G)} of the stacks selected as one gather, the nodes the driver
    skips: their loads, places and the lane extracts that nothing else reads). facts:
    analysis.schedule_facts(lin) -- positions, users, and the STOREs/RANGEs/ENDs before each
    position -- when the caller has them (the selector: one walk of lin's edges, not two)."""
    if facts is None:
        facts = schedule_facts(lin)
    pos, users, fence = facts
    found: dict[UOp, tuple] = {}
    skip: set[UOp] = set()
    for u in lin:
        m = _match(u) if u.op is Ops.STACK else None
        if m is None or any(users.get(s) != [u] or s not in pos for s in u.src):
            continue
        first = min(pos[s] for s in u.src)
        if fence[pos[u]] != fence[first]:
            continue
        group = set(u.src)
        for s in u.src:
            group.add(s.src[0])
            group.update(s.src[0].src[1:])
            group.update(s.src[1:])
        # a node is skipped when everything reading it is skipped (the place is read by its
        # load only; a lane extract may be shared with another user, which selects it)
        mine = {u}
        changed = True
        while changed:
            changed = False
            for x in group - mine:
                if all(y in mine for y in users.get(x, ())) and x in pos:
                    mine.add(x)
                    changed = True
        if not set(u.src) <= mine or not all(s.src[0] in mine for s in u.src):
            continue
        found[u] = m
        skip |= mine - {u}
    return found, frozenset(skip)


class X86VGather:
    """The index-vector gather rule (mixed into X86Selector through X86Vec)."""

    vgathers: dict[UOp, tuple] = {}

    def vgather(self, u: UOp) -> VReg | None:
        """VGATHERDPS zmm {k} of a STACK found by vgather_nodes (module docstring), or None
        for another STACK."""
        m = self.vgathers.get(u)
        if m is None:
            return None
        buf, v, a, g = m
        n = len(u.src)
        form = _FORMS[n][1]
        kind, base = self.buffer(buf)
        if kind != "ptr":                         # a kernel argument (vgather_nodes)
            raise SelectError(f"a gather from a {kind} buffer")
        vidx = self.reg(v)
        k = self.new("mask")
        if g is None:
            r = self.new("gpr")
            self.emit("mov_r32_imm32", r, (1 << n) - 1)
            self.emit("kmovw_k_r32", k, r)
        else:
            kg = self.kbool(g)
            if kg is None:
                raise SelectError(f"a gather's gate with no opmask form ({g.op.name})")
            self.emit("kmovq_k_km64", k, kg)      # the gather clears its mask: a copy
        if a is None or positive_zero(a, dtypes.float32):
            t = self.new("vec")
            self.emit("vzero", t)
        elif a.shape:
            t = self.copy(self.reg(a), dtypes.float32, n)
        else:                                       # one scalar alt: its splat
            t = self.copy(self.reg(UOp(Ops.STACK, (a,) * n)), dtypes.float32, n)
        self.emit(form, t, k, Mem(base, vidx, 4, 0))
        return t
