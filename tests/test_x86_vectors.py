"""Vector kernels on x86 (ymm float32 x 8, float64 x 4): compare masks, WHERE blends, masks
built from scalar bools — against the interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from x86_util import check_file

KERNELS = sorted((Path(__file__).parent / "kernels").glob("vector_*.uop"))


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.name)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vector_kernel(path: Path, seed: int) -> None:
    check_file(path, seed)
