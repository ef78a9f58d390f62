"""An AMD program's code object: every kernel in one HSACO whose `.note.kcc` also carries the
program's own facts (docs/manifest.md, "Program manifests"); the launcher and the emulated run
are shared with CUDA (kcc/targets/gpu_program.py)."""

from __future__ import annotations

from typing import Any

from kcc.targets.program import Program


def compile_program_amd(p: Program, sinks: list[Any], arch: str) -> tuple[bytes, list[Any]]:
    """One HSACO of the program's kernels whose `.note.kcc` also holds the program's facts
    (kcc.targets.program.program_note); the kernels' descriptions."""
    from kcc.isel.amd.select import AmdSelectError
    from kcc.passes.decompose import DecomposeError
    from kcc.targets.amd.hsaco import write_hsaco
    from kcc.targets.amd.target import amd_kernel, compile_amd_code, machine_code
    from kcc.targets.facts import elf_note
    from kcc.targets.program import program_note
    from kcc.targets.registry import CompileError
    try:
        codes = compile_amd_code(sinks, arch)
    except (AmdSelectError, DecomposeError) as e:
        raise CompileError(str(e)) from None
    descs = [c.desc for c in codes]
    p.kernels = descs
    note = elf_note(descs) + program_note(p)
    return write_hsaco([amd_kernel(c, machine_code(c)) for c in codes], arch, note), descs
