"""WMMA graphs through the whole CUDA pipeline: every CUDA form of the IR (kcc/ir/wmma.py) in a
kernel where each lane loads its fragments, runs one WMMA and stores D (the shared test kernel
of tests/support/wmma_graphs.py) compiles for sm_80 and sm_90 and ptxas assembles it, with one
mma.sync of the form; what cannot be compiled for CUDA is refused by name."""

from __future__ import annotations

import pytest
from wmma_graphs import fragment_kernel

from kcc.frontend.parser import parse
from kcc.ir import wmma
from kcc.targets.cuda.target import CudaCompileError, compile_cuda
from kcc.targets.registry import CompileError
from tests.support.ptx_util import needs_ptxas, ptx_of

CUDA_SHAPES = [s for s in wmma.SHAPES if s.device == "CUDA"]
IDS = [f"k{s.k}-{s.dtype_in}-{s.dtype_out}" for s in CUDA_SHAPES]


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("sh", CUDA_SHAPES, ids=IDS)
def test_wmma_kernel_assembles(sh: wmma.WmmaShape, arch: str) -> None:
    ptx, descs = compile_cuda([parse(fragment_kernel(sh))], arch, "ptx")
    assert descs[0].target["cuda"]["registers"] is not None      # ptxas -v ran and accepted
    text = ptx.decode()
    ptype = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}
    din, dout = ptype[sh.dtype_in], ptype[sh.dtype_out]
    form = f"mma.sync.aligned.m16n8k{sh.k}.row.col.{dout}.{din}.{din}.{dout} "
    assert text.count("mma.sync") == 1 and form in text
    assert descs[0].local_size[0] == 64          # two warps: lidx0 < 64 (fragment_kernel)


def test_wmma_below_sm_80_is_refused_by_name() -> None:
    with pytest.raises((CudaCompileError, CompileError), match="needs sm_80"):
        ptx_of(parse(fragment_kernel(CUDA_SHAPES[0])), "sm_75")


def test_an_amd_wmma_is_refused_for_cuda() -> None:
    sh = next(s for s in wmma.SHAPES if s.device == "AMD" and s.threads == 32)
    with pytest.raises((CudaCompileError, CompileError), match="WMMA of AMD with 32 lanes"):
        ptx_of(parse(fragment_kernel(sh)), "sm_90")
