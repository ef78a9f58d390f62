"""tinygrad's own tensor-core kernels (tests/data/wmma_tinygrad, scripts/capture_wmma.py):
float16, bfloat16 and int8 matmuls and a float16 conv2d lowered with tensor cores on by its PTX
(sm_80), CUDA C (sm_90) and HIP (gfx1100, gfx942) renderers.

Every file passes `kcc check`, prints back to the same graph, and the interpreter, running the
WMMA lane maps of kcc/ir/wmma.py, computes what tinygrad computed on its CPU device (the captured
values): within a few units in the last place of the output dtype (tinygrad's CPU kernel adds
in another order), exactly for int8. A wrong lane map is off by whole products, not ulps.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from paths import DATA
from wmma_graphs import assert_tinygrad_value

from kcc.cli import main
from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop
from kcc.ir import Ops
from kcc.ir.interp import run

DIR = DATA / "wmma_tinygrad"
DOC = json.loads((DIR / "capture.json").read_text())
CASES = [(k, style, f) for k in DOC["kernels"] for style, f in k["gpu"].items()
         if f and "WMMA(" in (DIR / f).read_text()]
IDS = [f"k{k['index']}-{style}" for k, style, _ in CASES]


def test_every_tensor_core_form_tinygrad_writes_is_here() -> None:
    forms = {(n.arg[2], n.arg[0], n.arg[3], n.arg[1].name, n.dtype.name)
             for _, _, f in CASES for n in parse((DIR / f).read_text(), f).toposort()
             if n.op is Ops.WMMA}
    want = {("CUDA", (8, 16, 16), 32, "float16", "float32"),
            ("CUDA", (8, 16, 16), 32, "float16", "float16"),
            ("CUDA", (8, 16, 16), 32, "bfloat16", "float32"),
            ("CUDA", (8, 16, 8), 32, "float16", "float32"),
            ("AMD", (16, 16, 16), 32, "float16", "float32"),
            ("AMD", (16, 16, 16), 32, "float16", "float16"),
            ("AMD", (16, 16, 16), 32, "bfloat16", "float32"),
            ("AMD", (16, 16, 16), 32, "int8", "int32"),
            ("AMD", (16, 16, 16), 64, "float16", "float32"),
            ("AMD", (16, 16, 16), 64, "bfloat16", "float32")}
    assert want <= forms, want - forms
    assert {style for _, style, _ in CASES} == {"ptx", "cuda", "hip", "hip_gfx942"}


def test_kcc_check_accepts_every_file() -> None:
    files = sorted({str(DIR / f) for _, _, f in CASES})
    res = CliRunner().invoke(main, ["check", *files])
    assert res.exit_code == 0, res.output
    assert res.output.count(": ok (kernel") == len(files)


@pytest.mark.parametrize("k, style, name", CASES, ids=IDS)
def test_round_trip(k: dict, style: str, name: str) -> None:
    sink = parse((DIR / name).read_text(), name)
    assert parse(format_uop(sink)) is sink


@pytest.mark.parametrize("k, style, name", CASES, ids=IDS)
def test_the_interpreter_computes_tinygrads_values(k: dict, style: str, name: str) -> None:
    args: list[Any] = [np.load(DIR / a["in"]).copy() if a["kind"] == "buffer" else a["value"]
                       for a in k["args"]]
    run(parse((DIR / name).read_text(), name), args)
    outs = [a for a in k["args"] if "out" in a]
    assert outs
    for a in outs:
        got, want = args[a["slot"]], np.load(DIR / a["out"])
        assert_tinygrad_value(got, want, a["dtype"])


@pytest.mark.parametrize("k, style, name", CASES, ids=IDS)
def test_x86_runs_them_bit_for_bit_like_the_interpreter(k: dict, style: str, name: str) -> None:
    """x86 has no tensor cores and no workgroups: passes/wmma.py expands each WMMA per lane
    and passes/threads.py makes every thread a worker; the result is the interpreter's."""
    from x86_util import compile_and_run, reference

    from kcc.targets.check import same_elements
    sink = parse((DIR / name).read_text(), name)
    args: list[Any] = [np.load(DIR / a["in"]).copy() if a["kind"] == "buffer" else a["value"]
                       for a in k["args"]]
    got, want = compile_and_run(sink, args), reference(sink, args)
    for a in k["args"]:
        if "out" in a:
            s = a["slot"]
            assert same_elements(got[s], want[s], a["dtype"]).all(), a
