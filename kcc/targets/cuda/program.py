"""A CUDA program's module: every kernel in one cubin (or PTX) that also carries the program's
own facts, as the `__kcc_program` array beside the kernels' `__kcc_launch` (kcc.targets.facts),
so that `kcc run` refuses a program manifest edited after export; the launcher and the run are
shared with AMD (kcc/targets/gpu_program.py)."""

from __future__ import annotations

from typing import Any

from kcc.targets.program import Program


def compile_program_cuda(p: Program, sinks: list[Any], arch: str,
                         emit: str) -> tuple[bytes, list[Any]]:
    """One CUDA module (emit "cubin" or "ptx") of the program's kernels with its facts; the
    kernels' descriptions. The facts name no kernel description, so they are known before
    the kernels are compiled."""
    from kcc.targets.cuda.target import CudaCompileError, compile_cuda
    from kcc.targets.facts import PTX_PROGRAM_SYMBOL, ptx_bytes_global
    from kcc.targets.program import program_json
    from kcc.targets.registry import CompileError
    extra = ptx_bytes_global(PTX_PROGRAM_SYMBOL, program_json(p), "kcc program facts")
    try:
        return compile_cuda(sinks, arch, emit, extra_ptx=extra)
    except CudaCompileError as e:
        raise CompileError(str(e)) from None
