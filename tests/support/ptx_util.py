"""ptxas, the CUDA oracle, for tests that compile a kernel to PTX: where it is, a skip mark
when it is absent, and a kernel's PTX checked by it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kcc.frontend.parser import parse
from kcc.ir import UOp
from kcc.targets.cuda.target import compile_cuda, find_ptxas

PTXAS = find_ptxas()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed (CUDA oracle)")
HEAD = "# kcc-uop 1\n"


def ptxas_ok(sink: UOp, tmp_path: Path, arch: str = "sm_80") -> str:
    """The kernel's PTX, after ptxas has assembled it."""
    ptx = compile_cuda([sink], arch=arch, emit="ptx")[0].decode()
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return ptx


def sass_of(sink: UOp, tmp_path: Path, arch: str) -> str:
    """The kernel's SASS listing (cuobjdump -sass of the cubin ptxas made); skips the test
    when the cuobjdump wheel is absent."""
    from kcc.targets.cuda.target import _wheel_tool
    ptxas_ok(sink, tmp_path, arch)
    tool = _wheel_tool("cuobjdump")
    if tool is None:
        pytest.skip("cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    return subprocess.run([tool, "-sass", str(tmp_path / "k.cubin")], capture_output=True,
                          text=True).stdout


def ptx_of(sink: UOp, arch: str = "sm_90") -> str:
    """The kernel's PTX text (not assembled)."""
    return compile_cuda([sink], arch, "ptx")[0].decode()


def k(text: str) -> UOp:
    """A kernel from .uop lines without the format's header line."""
    return parse(HEAD + text)
