"""x86 selection extracts a vector's lane (INDEX of a float vector, kcc/isel/x86/select.py
`lazy_lane`) only when a rule reads it as a register: a shuffle reads the vector's lanes itself,
so lanes read only by a STACK cost no extract, where every lane's VSHUFPS/VPSRLQ used to be
selected and left to dead-code removal. A lane that is read is extracted where the schedule
selected it (values bit for bit as the reference interpreter's)."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import ARCHS, compile_and_run, reference

import kcc.targets.x86.target as x86_target
from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86


# out[0:4] = v[1], v[0], v[3], v[2] (a shuffle of v's lanes); out[4] = max(v[1], v[2]);
# v = a[0:4] * 2. Lane 3 is read by the shuffle only.
KERNEL = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 5)
%a = PARAM ParamArg(1, float32, 4)
%p = SHRINK(%a, 0, 4)
%l = LOAD(%p)
%two = CAST(2.0) float32
%t = STACK(%two, %two, %two, %two)
%v = MUL(%l, %t)
%x0 = INDEX(%v, 0)
%x1 = INDEX(%v, 1)
%x2 = INDEX(%v, 2)
%x3 = INDEX(%v, 3)
%s = STACK(%x1, %x0, %x3, %x2)
%po = SHRINK(%o, 0, 4)
%st = STORE(%po, %s)
%m = MAX(%x1, %x2)
%pm = INDEX(%o, 4)
%sm = STORE(%pm, %m)
%g = GROUP(%st, %sm)
SINK(%g) KernelInfo(name="lazy_lanes")
"""


def _selected(sink, arch: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The forms selection emitted, before dead-code removal."""
    selected: list = []
    real = x86_target.x86_select

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        selected.append([i.op for i in out[0].insts])
        return out
    monkeypatch.setattr(x86_target, "x86_select", spy)
    compile_x86([sink], arch)
    monkeypatch.undo()
    return selected[0]


@pytest.mark.parametrize("arch", ARCHS)
def test_unread_lanes_not_selected(arch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sink = parse(KERNEL, "lazy_lanes.uop")
    ops = _selected(sink, arch, monkeypatch)
    # lane 1 (VPSRLQ) and lane 2 (a VSHUFPS) for the MAX, the STACK's VSHUFPS; nothing for
    # lane 3 (eager selection made a third VSHUFPS, which dead-code removal deleted)
    assert ops.count("vpsrlq_x_x_imm8") == 1, ops
    assert ops.count("vshufps_x_x_xm_imm8") == 2, ops
    a = np.array([1.5, -0.0, np.nan, 3.0], np.float32)
    args = [np.zeros(5, np.float32), a]
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32)), got[0]


# out[s + 4] = x[s + 4]: the index sum is read only as an address, whose memory operand takes
# its terms ([x + s*4 + 16]), so its MOV and ADD are never selected (`select_all`)
ADDRESS_ONLY = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 48)
%x = PARAM ParamArg(1, float32, 48)
%s = PARAM ParamArg(2, int32, vmin_vmax=(0, 40), addrspace=ALU)
%a = ADD(%s, 4)
%xi = INDEX(%x, %a)
%v = LOAD(%xi)
%oi = INDEX(%out, %a)
%st = STORE(%oi, %v)
SINK(%st) KernelInfo(name="address_only")
"""



@pytest.mark.parametrize("arch", ARCHS)
def test_address_only_sum_not_selected(arch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sink = parse(ADDRESS_ONLY, "address_only.uop")
    ops = _selected(sink, arch, monkeypatch)
    assert not [op for op in ops if op.startswith(("add_", "lea_"))], ops
    x = np.arange(48, dtype=np.float32) - 7.5
    for s in (0, 3, 40):
        args = [np.zeros(48, np.float32), x, np.int32(s)]
        want = reference(sink, args)
        got = compile_and_run(sink, args, arch)
        assert np.array_equal(got[0], want[0]), (s, got[0])
