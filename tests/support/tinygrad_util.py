"""Shared helpers for the tinygrad tests: skip without tinygrad, run a captured kernel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

try:
    import tinygrad  # noqa: F401
    HAVE_TINYGRAD = True
except ImportError:
    HAVE_TINYGRAD = False

needs_tinygrad = pytest.mark.skipif(not HAVE_TINYGRAD, reason="tinygrad is not installed "
                                    "(pip install 'kcc[tinygrad]')")


def load_capture(out: Path) -> dict[str, Any]:
    """capture.json of a capture directory."""
    return json.loads((out / "capture.json").read_text())


def run_captured_x86(out: Path, k: dict[str, Any]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Compile a captured kernel's .uop for x86, run it on the captured inputs; returns
    {kcc slot: (kcc's result, tinygrad's result)} for every buffer the kernel writes."""
    from kcc.frontend.parser import parse
    from kcc.targets.manifest import check_launch
    from kcc.targets.x86.objload import LoadedObject
    from kcc.targets.x86.target import compile_x86, launch
    sink = parse((out / k["uop"]).read_text(), k["uop"])
    obj, descs = compile_x86([sink])
    args: list[Any] = []
    for a in k["args"]:
        if a["kind"] == "buffer":
            args.append(np.load(out / a["in"]).copy())
        else:
            args.append(np.dtype(a["dtype"]).type(a["value"]))
    norm = check_launch(descs[0], args)
    with LoadedObject(obj) as lo:
        launch(lo, descs[0], norm)
    return {a["slot"]: (norm[a["slot"]], np.load(out / a["out"]))
            for a in k["args"] if "out" in a}
