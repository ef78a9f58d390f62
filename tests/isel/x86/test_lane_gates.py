"""Per-lane-gated vector loads on x86 (kcc/isel/x86/kmask.py kload): on x86-64-v4 the gate's
own opmask (a vector compare into k, KAND) masks one VMOVUPS/VMOVDQU32 {k}{z}, with no
KMOV of a GPR bit pattern; on x86-64-v3 the gate as a lane mask masks one VMASKMOVPS/PD or
VPMASKMOVD/Q (a VBLENDVPS with alt unless alt is +0). Both against the reference interpreter
(every compile runs the allocation checker), the v4 code where the CPU has AVX-512. The new
VMASKMOV rows' encodings are llvm-mc's (golden/x86/avx_move.s, tests/encode/x86)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop
from x86_util import ARCHS, assert_same, compile_and_run, random_inputs, reference

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ir"))
sys.path.insert(0, str(ROOT / "passes"))
from test_interp_lane_gates import padded_kernel  # noqa: E402
from test_slp_gated import kernel  # noqa: E402



def _listing(src: str, arch: str = "x86-64-v4") -> str:
    from kcc.targets.pipeline import run_pipeline
    from kcc.targets.x86.target import X86Target
    buf = io.StringIO()
    run_pipeline(parse(src), X86Target(arch), dump_after="allocate", out=buf)
    return buf.getvalue()


@pytest.mark.parametrize("lanes", [4, 8])     # (16: v4 has no int32 x 16 compare)
def test_v4_masks_the_load_with_the_gates_compare(lanes: int) -> None:
    text = format_uop(padded_kernel(50, 64, -7, lanes, 0.0))
    lst = _listing(text)
    assert "vpcmpd" in lst and "kand" in lst, lst
    assert "_kz_" in lst and "kmovw" not in lst and "kmovd" not in lst, lst


@pytest.mark.parametrize("lanes,alt,dt", [(4, 0.0, "ps"), (8, 1.5, "ps")])
def test_v3_masks_the_load_with_a_lane_mask(lanes: int, alt: float, dt: str) -> None:
    """VPCMPGTD lane masks, VANDPS, one VMASKMOVPS; a blend for an alt that is not +0."""
    lst = _listing(format_uop(padded_kernel(50, 64, -7, lanes, alt)), "x86-64-v3")
    assert lst.count(f"vmaskmov{dt}_") == 1 and "vpcmpgtd" in lst, lst
    assert ("vblendvps" in lst) == (alt != 0.0), lst


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("lanes,alt", [(4, 0.0), (8, 1.5), (16, 0.0)])
def test_padded_vector_load_matches_the_interpreter(arch: str, lanes: int, alt: float) -> None:
    sink = padded_kernel(50, 64, -7, lanes, alt)
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n,dt", [(4, "float32"), (8, "float32"), (4, "int32"), (16, "float32"),
                                  (8, "int32"), (4, "float64"), (4, "int64")])
def test_gated_runs_match_the_interpreter(arch: str, n: int, dt: str) -> None:
    """slp's gated-run seed end to end (tinygrad's cumsum padding, 7 elements before the
    input and past its end)."""
    sink = parse(kernel(n, dt=dt))
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def test_gated_run_is_one_masked_load_on_v4() -> None:
    # 64 iterations: 16 are unrolled by unroll_tiny (each copy's gates constants), no loop
    lst = _listing(kernel(4, iters=64))
    assert lst.count("_kz_") == 1 and "kmovw" not in lst, lst
