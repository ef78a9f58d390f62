"""x86-64-v3's two-register lane permutation (kcc/isel/x86/shuf.py `permute_y`): a STACK of 8
float32 lanes, each a lane of one of two registers, is VSHUFPS and VPERMPD when it takes every
other lane of each in order (a stride-2 load's lanes, either parity in either register), else
a VPERMPS of each register and a VBLENDVPS (or one VPERMPS for one register): no lane
inserts. Checked against the reference interpreter on random permutations."""

from __future__ import annotations

import io
import random

import pytest

from kcc.frontend.parser import parse
from x86_util import assert_same, compile_and_run, random_inputs, reference


def kernel(lanes: list[tuple[int, int]]) -> str:
    """out = STACK(lanes) of two computed 8-lane vectors a + a and b + b (registers only);
    each lane is (vector, lane)."""
    t = ["# kcc-uop 1", "%o = PARAM ParamArg(0, float32, 8)",
         "%a = PARAM ParamArg(1, float32, 16)"]
    for j in sorted({j for j, _ in lanes}):      # the parser refuses an unused node
        t += [f"%p{j} = SHRINK(%a, {8 * j}, 8)", f"%l{j} = LOAD(%p{j})",
              f"%v{j} = ADD(%l{j}, %l{j})"]
    names = []
    for q, (j, k) in enumerate(lanes):
        t.append(f"%e{q} = INDEX(%v{j}, {k})")
        names.append(f"%e{q}")
    t += [f"%s = STACK({', '.join(names)})", "%q = SHRINK(%o, 0, 8)", "%st = STORE(%q, %s)",
          'SINK(%st) KernelInfo(name="pv3")']
    return "\n".join(t) + "\n"


def _selected(text: str) -> str:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    buf = io.StringIO()
    run_pipeline(parse(text), X86Target("x86-64-v3"), dump_after="allocate", out=buf)
    return buf.getvalue()


def _check(text: str) -> None:
    sink = parse(text)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, "x86-64-v3"), reference(sink, args))


@pytest.mark.parametrize("f,g", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_every_other_lane_is_a_shuffle_and_a_qword_permutation(f: int, g: int) -> None:
    text = kernel([(0, f + 2 * j) for j in range(4)] + [(1, g + 2 * j) for j in range(4)])
    sel = _selected(text)
    assert sel.count("vshufps_y_y_ym_imm8") == 1 and "vpermpd_y_ym_imm8" in sel, sel
    assert "vinsertps" not in sel and "vpermps" not in sel, sel
    _check(text)


@pytest.mark.parametrize("seed", range(6))
def test_any_two_register_permutation_is_two_vpermps_and_a_blend(seed: int) -> None:
    rng = random.Random(seed)
    lanes = [(rng.randrange(2), rng.randrange(8)) for _ in range(8)]
    lanes[0], lanes[1] = (0, lanes[0][1]), (1, lanes[1][1])     # both registers read
    text = kernel(lanes)
    sel = _selected(text)
    assert "vinsertps" not in sel and "vpinsr" not in sel, sel
    assert ("vblendvps_y_y_ym_y" in sel and sel.count("vpermps_y_y_ym") == 2) \
        or "vshufps" in sel or "vunpck" in sel, sel
    _check(text)


def test_one_register_is_one_vpermps() -> None:
    text = kernel([(0, k) for k in (7, 0, 6, 1, 5, 2, 4, 3)])
    sel = _selected(text)
    assert sel.count("vpermps_y_y_ym") == 1 and "vblendv" not in sel, sel
    _check(text)
