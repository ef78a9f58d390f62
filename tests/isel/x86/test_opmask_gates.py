"""Lanes of an opmask gating scalar loads (issue 24 item 2: cross_entropy's r_8, 0.89x clang).

tinygrad's `(-1 < x[j]) & (x[j] < 8)` per lane j of an int4 load gates the load of
`d[x[j] + 8j]`: the compares are vector compares into one opmask (x86-64-v4), and each lane j
was read into a GPR (KMOVD, SHR, AND), tested for the safe index's CMOVcc, and moved back into
an opmask (MOVZX, KMOVW) for the masked VMOVSS. kcc/isel/x86/kmask.py now copies the opmask to
a GPR once (kbits) and TESTs bit j there for the CMOVcc (klane_flags), and gates lane j's load
with the opmask itself (j = 0) or one KSHIFTRW (kgate): a scalar's masked load reads bit 0
only. The oracle of every value is the reference interpreter; indices in and out of [0, 8).
"""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from x86_util import ARCHS, assert_same, compile_and_run, reference, selected_text

_HEAD = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 4)
%d = PARAM ParamArg(1, float32, 32)
%x = PARAM ParamArg(2, int32, 4)
%c0 = CAST(0) int32
%c4 = CAST(4) int32
%c8 = CAST(8) int32
%m1 = CAST(-1) int32
%z = CAST(0.0) float32
%h = CAST(0.5) float32
%xp = SHRINK(%x, %c0, %c4)
%xv = LOAD(%xp)
"""


def _kernel() -> str:
    """o[j] = (x[j] in [0, 8)) ? d[x[j] + 8j] - 0.5 : 0, the load gated, for j < 4."""
    lanes = "".join(f"""%c{j}j = CAST({j}) int32
%i{j} = INDEX(%xv, %c{j}j)
%a{j} = CMPLT(%m1, %i{j})
%b{j} = CMPLT(%i{j}, %c8)
%g{j} = AND(%a{j}, %b{j})
%k{j} = CAST({8 * j}) int32
%e{j} = ADD(%i{j}, %k{j})
%p{j} = INDEX(%d, %e{j})
%l{j} = LOAD(%p{j}, %z, %g{j})
%s{j} = SUB(%l{j}, %h)
%w{j} = WHERE(%g{j}, %s{j}, %z)
%op{j} = INDEX(%o, %c{j}j)
%st{j} = STORE(%op{j}, %w{j})
""" for j in range(4))
    return _HEAD + lanes + """%g = GROUP(%st0, %st1, %st2, %st3)
SINK(%g) KernelInfo(name="gates4")
"""


def test_one_kmovd_and_a_kshift_a_lane() -> None:
    """x86-64-v4: one KMOVD for the four safe indices' TESTs, KSHIFTRW for lanes 1-3 (lane
    0 is the opmask itself), no SHR/AND lane reads and no KMOVW from a GPR."""
    sel = selected_text(_kernel(), "x86-64-v4")
    assert sel.count("kmovd_r32_k") == 1, sel
    assert sel.count("kshiftrw_k_k_imm8") == 3, sel
    assert sel.count("test_rm32_imm32") == 4, sel
    assert "kmovw_k_r32" not in sel and "shr_rm32_imm8" not in sel, sel


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gated_lanes_match_the_interpreter(arch: str, seed: int) -> None:
    """Indices below, inside and above [0, 8) in every lane: the interpreter's values."""
    sink = parse(_kernel())
    rng = np.random.default_rng(seed)
    d = (rng.standard_normal(32) * 4).astype(np.float32)
    x = rng.integers(-3, 11, 4).astype(np.int32)
    if seed == 0:
        x[:] = [-1, 0, 7, 8]
    args = [np.zeros(4, np.float32), d, x]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


_ROW = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 16)
%d = PARAM ParamArg(1, float32, 80)
%x = PARAM ParamArg(2, int32, 1)
%c0 = CAST(0) int32
%c5 = CAST(5) int32
%c16 = CAST(16) int32
%m1 = CAST(-1) int32
%z = CAST(0.0) float32
%zv = STACK(%z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z, %z)
%xp = INDEX(%x, %c0)
%v = LOAD(%xp)
%lo = CMPLT(%m1, %v)
%hi = CMPLT(%v, %c5)
%g = AND(%lo, %hi)
%a = MUL(%v, %c16)
%dp = SHRINK(%d, %a, %c16)
%l = LOAD(%dp, %zv, %g)
%op = SHRINK(%o, %c0, %c16)
%s = STORE(%op, %l)
SINK(%s) KernelInfo(name="row")
"""


def test_range_gate_of_a_vector_load_is_sbb() -> None:
    """x86-64-v4: a 16-lane load gated by `0 <= v < 5` takes its opmask from the unsigned
    compare's carry (SBB, KMOVD; gate_ones), not SETB, MOVZX and NEG (index_rows' E_9_77)."""
    sel = selected_text(_ROW, "x86-64-v4")
    assert "sbb_self" in sel and "neg_rm32" not in sel and "setb" not in sel, sel


@pytest.mark.parametrize("arch", ARCHS)
def test_range_gate_matches_the_interpreter(arch: str) -> None:
    sink = parse(_ROW)
    d = np.arange(80, dtype=np.float32) + 0.5
    for v in (-1, 0, 4, 5, 1 << 30, -70000):
        args = [np.full(16, 7.0, np.float32), d, np.array([v], np.int32)]
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _lane_gates_of_32() -> str:
    """o[0] = x[20] < 100 ? d[0] : 0, o[1] = x[3] < 100 ? d[1] : 0: lanes 20 and 3 of one
    32-lane byte compare's opmask (VPCMPUB ymm) gating two scalar loads."""
    ks = ", ".join(["%k"] * 32)
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, 2)
%d = PARAM ParamArg(1, float32, 2)
%x = PARAM ParamArg(2, uint8, 32)
%c0 = CAST(0) int32
%c1 = CAST(1) int32
%c32 = CAST(32) int32
%k = CAST(100) uint8
%kv = STACK({ks})
%xp = SHRINK(%x, %c0, %c32)
%xv = LOAD(%xp)
%g = CMPLT(%xv, %kv)
%j20 = CAST(20) int32
%j3 = CAST(3) int32
%g20 = INDEX(%g, %j20)
%g3 = INDEX(%g, %j3)
%z = CAST(0.0) float32
%p0 = INDEX(%d, %c0)
%l0 = LOAD(%p0, %z, %g20)
%p1 = INDEX(%d, %c1)
%l1 = LOAD(%p1, %z, %g3)
%op0 = INDEX(%o, %c0)
%s0 = STORE(%op0, %l0)
%op1 = INDEX(%o, %c1)
%s1 = STORE(%op1, %l1)
%gr = GROUP(%s0, %s1)
SINK(%gr) KernelInfo(name="lane20")
"""


def test_a_lane_past_16_is_not_shifted_by_kshiftrw() -> None:
    """KSHIFTRW shifts the low 16 bits: lane 3 is one KSHIFTRW, lane 20 its bit read from
    the KMOVD copy (SHR 20) and moved back (KMOVW)."""
    sel = selected_text(_lane_gates_of_32(), "x86-64-v4")
    assert sel.count("kshiftrw_k_k_imm8") == 1 and "kmovw_k_r32" in sel, sel


@pytest.mark.parametrize("arch", ARCHS)
def test_lanes_of_32_match_the_interpreter(arch: str) -> None:
    sink = parse(_lane_gates_of_32())
    for lane20, lane3 in ((5, 200), (200, 5), (99, 100)):
        x = np.full(32, 150, np.uint8)
        x[20], x[3] = lane20, lane3
        args = [np.full(2, 7.0, np.float32), np.array([1.5, 2.5], np.float32), x]
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
