"""`s_waitcnt` placement (kcc/isel/amd/lower.py `insert_waits`): a load's result is waited for
on every control-flow edge, not only along the straight-line order of the listing.

The pass drains the counters before every branch and label, so the state at any branch target
is "nothing pending". Before this test, `s_cbranch_execnz` (the back edge of a per-lane loop)
was missing from its branch list: a load issued in the loop body whose register the next
iteration reads before anything else touched it was pending across the back edge (the
straight-line walk had drained at the head's label, which the back edge jumps past)."""

from __future__ import annotations

import pytest

from kcc.encode.amd.operands import SGPR, VGPR, Inst, Special
from kcc.ir.mir import Label
from kcc.isel.amd.lower import insert_waits
from kcc.isel.amd.regs import ARCHES

BRANCHES = ("s_branch", "s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_execz",
            "s_cbranch_execnz", "s_cbranch_vccz", "s_cbranch_vccnz")


def _pending_at_branches(items: list) -> list[str]:
    """The branches (and labels) reached with a load outstanding, walking the listing: a
    load makes its counter pending until an s_waitcnt of that counter."""
    pending: set[str] = set()
    bad = []
    for it in items:
        if isinstance(it, Label) or it.name.startswith(("s_branch", "s_cbranch")):
            if pending:
                bad.append(it.name)
            continue
        if it.name == "s_waitcnt":
            pending -= {k for k, _ in it.mods}
        elif it.name.startswith(("global_load", "scratch_load")):
            pending.add("vmcnt")
        elif it.name.startswith(("s_load", "ds_load")):
            pending.add("lgkmcnt")
    return bad


@pytest.mark.parametrize("arch", list(ARCHES))
@pytest.mark.parametrize("branch", BRANCHES)
def test_no_load_is_pending_across_any_branch(branch: str, arch: str) -> None:
    """A loop whose body ends in a global load (its result read at the top of the next
    iteration) and an s_load, closed by each kind of branch: both are waited for before the
    branch, so the head, entered from the back edge, sees no pending load."""
    load = "global_load_b32" if arch == "gfx1100" else "global_load_dword"
    items = [Label("head"),
             Inst("v_add_nc_u32" if arch == "gfx1100" else "v_add_u32",
                  (VGPR(3), VGPR(1), VGPR(2))),
             Inst(load, (VGPR(1), VGPR(4), SGPR(2, 2))),
             Inst("s_load_b32" if arch == "gfx1100" else "s_load_dword",
                  (SGPR(6), SGPR(0, 2), Special("off"))),
             Inst(branch, (), (("target", "head"),)),
             Inst("s_endpgm")]
    out = insert_waits(items, ARCHES[arch])
    assert not _pending_at_branches(out), [getattr(i, "name", i) for i in out]
    k = next(i for i, it in enumerate(out) if not isinstance(it, Label) and it.name == branch)
    assert out[k - 1].name == "s_waitcnt"
    assert {c for c, _ in out[k - 1].mods} == {"vmcnt", "lgkmcnt"}
