"""What real producers (tinygrad 0.14) write (issue 8, part 1): bool stores of uint8 values from
GPU-style lowerings, on x86 (a bool byte is 0 or 1) and PTX. Oracles: numpy, the reference
interpreter, ptxas.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kcc.frontend.parser import parse
from x86_util import assert_same, compile_and_run, reference
from paths import DATA
from ptx_util import needs_ptxas, ptxas_ok

KERNELS = DATA / "kernels"


# -- bool stores from GPU-style lowerings ------------------------------------------------------

def _bool_args() -> list:
    rng = np.random.default_rng(3)
    return [np.zeros(64, bool), np.zeros(64, bool), rng.random(64).astype(np.float32),
            rng.integers(0, 256, 64).astype(np.uint8)]


def test_bool_store_of_uint8_x86_interp_numpy() -> None:
    sink = parse((KERNELS / "bool_store_u8.uop").read_text())
    args = _bool_args()
    args[3][:4] = [0, 1, 2, 255]
    want = [args[2] < np.float32(0.5), args[3] != 0, args[2], args[3]]
    ref = reference(sink, args)
    assert_same(sink, ref, want)
    got = compile_and_run(sink, args)
    assert_same(sink, got, want)
    assert got[1].view(np.uint8).max() == 1            # a bool byte is 0 or 1, never 2 or 255


@needs_ptxas
def test_bool_store_of_uint8_ptxas(tmp_path: Path) -> None:
    ptxas_ok(parse((KERNELS / "bool_store_u8.uop").read_text()), tmp_path)
