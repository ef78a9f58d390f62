"""tinygrad's own tensor-core kernels for CUDA compile with kcc, and ptxas accepts them.

The captured ones first: tests/data/wmma_tinygrad (scripts/capture_wmma.py) holds tinygrad's
float16/bfloat16 matmuls and a float16 conv2d lowered by its PTX renderer (`*.ptx.uop`, sm_80)
and its CUDA C renderer (`*.cuda.uop`, sm_90); each compiles for its arch and ptxas -v accepts it.

Then every form, lowered afresh: tinygrad 0.14 lowers float16/bfloat16 matmuls (to float32 and
float16, m16n8k16 and, by TC_SELECT, m16n8k8) and convolutions to WMMA (its tensor-core
optimization) for its PTX renderer at sm_80 and its CUDA renderer at sm_90; both lower without
a GPU. Each lowering is imported as a `.uop` kernel, compiled by kcc for the same arch (the
pipeline verifies it), and assembled by ptxas; its PTX holds the mma.sync form of the WMMA.
Inputs are `Tensor.empty` and the kernel ASTs come from `Tensor.schedule_linear()`: nothing runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from paths import DATA
from tinygrad_util import needs_tinygrad

from kcc.ir import Ops
from tests.support.ptx_util import needs_ptxas

pytestmark = needs_ptxas
CAPTURED = DATA / "wmma_tinygrad"
ARCH_OF_STYLE = {"ptx": "sm_80", "cuda": "sm_90"}
CAPTURES = [(f, ARCH_OF_STYLE[style]) for k in json.loads(
    (CAPTURED / "capture.json").read_text())["kernels"] for style, f in k["gpu"].items()
            if style in ARCH_OF_STYLE and f and "WMMA(" in (CAPTURED / f).read_text()]


def test_the_captures_hold_every_cuda_form_tinygrad_lowers_to() -> None:
    seen = {m for f, _ in CAPTURES
            for m in re.findall(r"WMMA\(.*\) \(\((\d+, \d+, \d+)\), (\w+)",
                                (CAPTURED / f).read_text())}
    assert {("8, 16, 16", "float16"), ("8, 16, 16", "bfloat16"), ("8, 16, 8", "float16")} <= seen
    assert {a for _, a in CAPTURES} == {"sm_80", "sm_90"}


@pytest.mark.parametrize("name, arch", CAPTURES, ids=[f for f, _ in CAPTURES])
def test_captured_tensor_core_kernel_compiles_and_assembles(name: str, arch: str) -> None:
    from kcc.frontend.parser import parse
    from kcc.targets.cuda.target import compile_cuda
    sink = parse((CAPTURED / name).read_text(), name)
    ptx, descs = compile_cuda([sink], arch, "ptx")
    assert descs[0].target["cuda"]["registers"] is not None      # ptxas -v accepted it
    assert ptx.decode().count("mma.sync.aligned.m16n8k") == \
        sum(n.op is Ops.WMMA for n in sink.toposort())


def _asts(make: Callable[[], Any]) -> list[Any]:
    """The kernel ASTs (SINKs) tinygrad schedules to realize make(); nothing is compiled."""
    from tinygrad.uop.ops import Ops as TgOps
    return [c.src[0] for c in make().schedule_linear().toposort()
            if c.op is TgOps.CALL and c.src[0].op is TgOps.SINK]


def _renderer(which: str) -> Any:
    from tinygrad.helpers import Target
    from tinygrad.renderer.cstyle import CUDARenderer
    from tinygrad.renderer.ptx import PTXRenderer
    if which == "ptx:sm_80":
        return PTXRenderer(Target(device="CUDA", arch="sm_80"))
    # use_nvcc: the NVCC compiler object constructs without libnvrtc (nothing is compiled)
    return CUDARenderer(Target(device="CUDA", arch="sm_90"), use_nvcc=True)


def _matmul(din: str, dout: str) -> Callable[[], Any]:
    def make() -> Any:
        from tinygrad import Tensor, dtypes
        a = Tensor.empty(32, 64, dtype=getattr(dtypes, din), device="CPU")
        b = Tensor.empty(64, 16, dtype=getattr(dtypes, din), device="CPU")
        return a.matmul(b, dtype=getattr(dtypes, dout))
    return make


def _conv(din: str) -> Callable[[], Any]:
    def make() -> Any:
        from tinygrad import Tensor, dtypes
        x = Tensor.empty(1, 16, 8, 8, dtype=getattr(dtypes, din), device="CPU")
        w = Tensor.empty(16, 16, 3, 3, dtype=getattr(dtypes, din), device="CPU")
        return x.conv2d(w)
    return make


# (renderer, graph, tinygrad context, the mma form it must use); TC_SELECT picks a tensor core
# by its index in the renderer's list (tc.py), TC_OPT=2 lets a conv's three reduce axes use one
F16, BF16 = "half", "bfloat16"
CASES: list[tuple[str, str, Callable[[], Any], dict[str, int], str]] = []
for _ren, _k8 in (("ptx:sm_80", {"float": 2, "half": 3}), ("cuda:sm_90", {"float": 3, "half": 4})):
    CASES += [
        (_ren, "matmul f16->f32", _matmul(F16, "float"), {}, "m16n8k16.row.col.f32.f16.f16.f32"),
        (_ren, "matmul f16->f16", _matmul(F16, F16), {}, "m16n8k16.row.col.f16.f16.f16.f16"),
        (_ren, "matmul f16->f32 k8", _matmul(F16, "float"), {"TC_SELECT": _k8["float"]},
         "m16n8k8.row.col.f32.f16.f16.f32"),
        (_ren, "matmul f16->f16 k8", _matmul(F16, F16), {"TC_SELECT": _k8["half"]},
         "m16n8k8.row.col.f16.f16.f16.f16"),
        (_ren, "conv2d f16", _conv(F16), {"TC_OPT": 2}, "m16n8k16.row.col.f32.f16.f16.f32"),
    ]
CASES += [   # tinygrad's PTX renderer has no bfloat16; its CUDA renderer has
    ("cuda:sm_90", "matmul bf16->f32", _matmul(BF16, "float"), {},
     "m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("cuda:sm_90", "conv2d bf16", _conv(BF16), {"TC_OPT": 2},
     "m16n8k16.row.col.f32.bf16.bf16.f32"),
]


@needs_tinygrad
@pytest.mark.parametrize("ren, what, make, ctx, form", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_tinygrad_tensor_core_kernel_compiles_and_assembles(ren: str, what: str, make: Any,
                                                            ctx: dict[str, int], form: str
                                                            ) -> None:
    from tinygrad.helpers import Context
    from tinygrad.uop.ops import Ops as TgOps

    from kcc.frontend.parser import parse
    from kcc.targets.cuda.target import compile_cuda
    from kcc.tinygrad.recording import lower
    from kcc.tinygrad.renderer import program_to_uop

    arch = ren.split(":")[1]
    (ast,) = _asts(make)
    with Context(**ctx):
        lin = lower(ast, _renderer(ren))
    assert any(u.op is TgOps.WMMA for u in lin), f"tinygrad did not use a tensor core: {what}"
    text = program_to_uop(lin).text
    sink = parse(text, f"{what}.uop")
    ptx, descs = compile_cuda([sink], arch, "ptx")      # ptxas runs whenever it is present
    assert descs[0].target["cuda"]["registers"] is not None   # ptxas assembled it (its -v)
    assert f"mma.sync.aligned.{form} " in ptx.decode()
    assert ptx.decode().count("mma.sync") == sum(u.op is TgOps.WMMA for u in lin)


@needs_tinygrad
def test_tinygrad_tf32_kernel_is_refused_by_name() -> None:
    """ALLOW_TF32=1 makes tinygrad use m16n8k8 .tf32 for a float32 matmul; the IR has no tf32
    form (kcc/ir/wmma.py), so the kernel is refused when it is read, with the form named."""
    from tinygrad.helpers import Context

    from kcc.frontend.errors import SourceError
    from kcc.frontend.parser import parse
    from kcc.tinygrad.recording import lower
    from kcc.tinygrad.renderer import program_to_uop
    (ast,) = _asts(_matmul("float", "float"))
    with Context(ALLOW_TF32=1):
        lin = lower(ast, _renderer("ptx:sm_80"))
    with pytest.raises(SourceError, match=r"no tensor-core form CUDA \(8, 16, 8\) threads=32 "
                       r"float32->float32"):
        parse(program_to_uop(lin).text)
