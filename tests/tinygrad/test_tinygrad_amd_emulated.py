"""tinygrad's own HIP-style (gfx1100) graphs of topk, sort and a reflect pad, compiled for
gfx1100 and gfx942 and run in kcc's AMD emulator on the captured inputs; the outputs must
equal what tinygrad computed (its CPU run, saved by the capture).

Regression of issue 20: their index `(s - lidx) + 3` was split into a VGPR offset that is
negative in some lanes plus an immediate offset, an address 4 GiB past the buffer on the
hardware (the emulator: "outside every buffer").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tinygrad_util import load_capture, needs_tinygrad

pytestmark = needs_tinygrad


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import kcc.tinygrad
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    out = tmp_path_factory.mktemp("capture")
    rng = np.random.default_rng(0)
    a = Tensor(rng.standard_normal((4, 12)).astype(np.float32)).realize()
    b = Tensor(rng.standard_normal((1, 2, 6, 6)).astype(np.float32)).realize()
    with Context(DEV="CPU", PARALLEL=0), kcc.tinygrad.capture(out):
        a.topk(3)[0].realize()
        a.sort(dim=-1)[0].realize()
        b.pad((2, 2, 2, 2), mode="reflect").realize()
    return out


def _emulate_hip(out: Path, k: dict[str, Any], arch: str) -> dict[int, tuple]:
    from kcc.frontend.parser import parse
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    name = k["gpu"]["hip"]
    (code,) = compile_amd_code([parse((out / name).read_text(), name)], arch)
    args: list[Any] = []
    for a in k["args"]:
        if a["kind"] == "buffer":
            args.append(np.load(out / a["in"]).copy())
        else:
            args.append(np.dtype(a["dtype"]).type(a["value"]))
    norm = check_launch(code.desc, args)
    emulate(hsaco([code]), code.desc, norm)
    return {a["slot"]: (norm[a["slot"]], np.load(out / a["out"]))
            for a in k["args"] if "out" in a}


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_regression_topk_sort_reflect_pad_hip_graphs_in_the_emulator(captured: Path,
                                                                      arch: str) -> None:
    ks = load_capture(captured)["kernels"]
    assert len(ks) >= 3
    for k in ks:
        assert k["gpu"].get("hip"), k["gpu"].get("hip_error")
        for slot, (got, want) in _emulate_hip(captured, k, arch).items():
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6,
                                       err_msg=f"{k['gpu']['hip']} on {arch}: arg {slot}")
