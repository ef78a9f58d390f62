"""tinygrad's own tensor-core kernels on AMD, end to end in kcc's emulator.

tests/data/wmma_tinygrad holds tinygrad 0.14's float16/bfloat16/int8 matmuls and a float16
conv2d lowered with tensor cores by its HIP renderer for gfx1100 (``*.hip.uop``: WMMA on 32
threads, v_wmma_*) and gfx942 (``*.hip_gfx942.uop``: 64 threads, v_mfma_*), with the values
tinygrad computed on its CPU device. Each compiles for its arch (kcc/isel/amd/matrix.py), runs in
the emulator (kcc/targets/amd/emu/matrix.py) on tinygrad's inputs and gives tinygrad's values:
within 4 units in the last place of the output dtype (tinygrad's CPU kernel adds in another
order, docs/semantics.md "WMMA"), int8 exactly; and the interpreter's values bit for bit (the
emulator computes the WMMA definition the interpreter does). A form the arch has no instruction
for is expanded per lane by kcc/passes/wmma.py and gives the interpreter's values too.
llvm-objdump-19 reads every instruction of the code objects as kcc's disassembler does.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paths import DATA
from wmma_graphs import assert_tinygrad_value

from kcc.encode.amd.decode import disassemble
from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.interp import run
from kcc.targets.manifest import check_launch

DIR = DATA / "wmma_tinygrad"
DOC = json.loads((DIR / "capture.json").read_text())
ARCH = {"hip": "gfx1100", "hip_gfx942": "gfx942"}
CASES = [(k, style, f) for k in DOC["kernels"] for style, f in k["gpu"].items()
         if style in ARCH and f and "WMMA(" in (DIR / f).read_text()]
IDS = [f"k{k['index']}-{ARCH[style]}" for k, style, _ in CASES]
CASES_ALL = [(k, style, f) for k in DOC["kernels"] for style, f in k["gpu"].items() if f]
OBJDUMP = shutil.which("llvm-objdump-19")
MATTR = {"gfx1100": "+wavefrontsize32,-real-true16", "gfx942": "+wavefrontsize64"}


def _compile(name: str, arch: str) -> tuple[Any, bytes]:
    from kcc.targets.amd.target import compile_amd_code, hsaco
    sink = parse((DIR / name).read_text(), name)
    (code,) = compile_amd_code([sink], arch)
    return code, hsaco([code])


def _text(data: bytes) -> tuple[int, bytes]:
    import io

    from elftools.elf.elffile import ELFFile
    sec = ELFFile(io.BytesIO(data)).get_section_by_name(".text")
    return sec["sh_addr"], sec.data()


def test_cases_cover_every_amd_form() -> None:
    forms = {(n.arg[3], n.arg[1].name, n.dtype.name) for _, _, f in CASES
             for n in parse((DIR / f).read_text(), f).toposort() if n.op is Ops.WMMA}
    assert forms == {(32, "float16", "float32"), (32, "float16", "float16"),
                     (32, "bfloat16", "float32"), (32, "int8", "int32"),
                     (64, "float16", "float32"), (64, "bfloat16", "float32")}


@pytest.mark.parametrize("k, style, name", CASES, ids=IDS)
def test_tinygrads_tensor_core_kernel_gives_its_values(k: dict, style: str, name: str,
                                                        tmp_path: Path) -> None:
    from kcc.targets.amd.target import emulate
    arch = ARCH[style]
    code, data = _compile(name, arch)
    addr, text = _text(data)
    lst = [t for _, _, _, t in disassemble(arch, text, base=addr)]
    mnem = "v_wmma_" if arch == "gfx1100" else "v_mfma_"
    sink = parse((DIR / name).read_text(), name)
    n_wmma = sum(1 for n in sink.toposort() if n.op is Ops.WMMA)
    at = [i for i, t in enumerate(lst) if t.startswith(mnem)]
    assert len(at) >= n_wmma, "one matrix op per WMMA node"
    for i in at:                      # the waits of isel/amd/lower.py's matrix_waits
        if arch == "gfx1100":
            assert lst[i + 1] == "v_nop"
        else:
            assert lst[i - 1] == "s_nop 4" and lst[i + 1:i + 4] == ["s_nop 7"] * 3
    args: list[Any] = [np.load(DIR / a["in"]).copy() if a["kind"] == "buffer" else a["value"]
                       for a in k["args"]]
    interp = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    run(sink, interp)
    emulate(data, code.desc, check_launch(code.desc, args))
    outs = [a for a in k["args"] if "out" in a]
    assert outs
    for a in outs:
        got, want = args[a["slot"]], np.load(DIR / a["out"])
        # the emulator computes docs/semantics.md's WMMA, as the interpreter does
        assert got.tobytes() == interp[a["slot"]].tobytes()
        assert_tinygrad_value(got, want, a["dtype"])
    if OBJDUMP:
        path = tmp_path / "k.hsaco"
        path.write_bytes(data)
        out = subprocess.run([OBJDUMP, "-d", f"--mattr={MATTR[arch]}", str(path)],
                             check=True, capture_output=True, text=True).stdout
        line = re.compile(r"^\s+(\S.*?)\s*// ([0-9A-F]+):")
        want_txt = [m.group(1) for m in map(line.match, out.splitlines()) if m]
        got_txt = [t for _, _, _, t in disassemble(arch, text, base=addr)]
        assert want_txt == got_txt


@pytest.mark.parametrize("index, style, arch", [(0, "hip", "gfx942"), (6, "hip", "gfx942"),
                                                (4, "hip_gfx942", "gfx1100"),
                                                (0, "ptx", "gfx1100")])
def test_a_form_the_arch_lacks_is_expanded_per_lane(index: int, style: str, arch: str) -> None:
    """Another arch's (or CUDA's) tensor-core form is no instruction here: kcc/passes/wmma.py
    expands it into per-lane arithmetic (the AMD TargetDesc's ``wmma`` names the forms each
    family selects), and the result is the interpreter's, bit for bit."""
    from kcc.targets.amd.target import emulate
    k, name = next((k, f) for k, s, f in CASES_ALL if k["index"] == index and s == style)
    code, data = _compile(name, arch)
    addr, text = _text(data)
    assert not any(i.name.startswith(("v_wmma_", "v_mfma_"))
                   for _, _, i, _ in disassemble(arch, text, base=addr))
    sink = parse((DIR / name).read_text(), name)
    args: list[Any] = [np.load(DIR / a["in"]).copy() if a["kind"] == "buffer" else a["value"]
                       for a in k["args"]]
    interp = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    run(sink, interp)
    emulate(data, code.desc, check_launch(code.desc, args))
    for a in k["args"]:
        if "out" in a:
            assert args[a["slot"]].tobytes() == interp[a["slot"]].tobytes()


@pytest.mark.skipif(not (shutil.which("llvm-mc-19") and shutil.which("ld.lld-19")),
                    reason="llvm-mc-19 / ld.lld-19 not installed")
@pytest.mark.parametrize("index, style", [(6, "hip"), (1, "hip"), (4, "hip_gfx942")])
def test_assembly_builds_the_same_text_with_llvm_mc(index: int, style: str,
                                                    tmp_path: Path) -> None:
    """``--emit asm`` of a WMMA kernel (neg_lo on iu8, the f16 accumulator, MFMA), assembled
    by llvm-mc-19 and linked by ld.lld-19, is the same machine code as kcc's code object."""
    from amd_util import llvm_link

    from kcc.targets.amd.target import assembly, compile_amd_code, hsaco
    name = next(f for k, s, f in CASES if k["index"] == index and s == style)
    arch = ARCH[style]
    codes = compile_amd_code([parse((DIR / name).read_text(), name)], arch)
    assert _text(llvm_link(tmp_path, arch, assembly(codes)))[1] == _text(hsaco(codes))[1]


@pytest.mark.parametrize("style, vgprs", [("hip", 64), ("hip_gfx942", 32)])
def test_fragments_survive_spilling(style: str, vgprs: int, monkeypatch) -> None:
    """With few VGPRs the fragments' elements are spilled and filled just before the packing;
    the fragment tuple is written one register at a time (DPart), so a fill never lands in
    it, and D is written over C, so it overlaps neither A nor B (a regression: packing with
    one early-clobber pseudo let a filled element share the tuple's registers)."""
    from dataclasses import replace

    from kcc.isel.amd import regs
    from kcc.targets.amd.target import emulate
    arch = ARCH[style]
    monkeypatch.setitem(regs.ARCHES, arch, replace(regs.ARCHES[arch], vgprs=vgprs))
    k, name = next((k, f) for k, s, f in CASES if k["index"] == 0 and s == style)
    code, data = _compile(name, arch)
    assert code.spills.scratch_bytes > 0
    sink = parse((DIR / name).read_text(), name)
    args: list[Any] = [np.load(DIR / a["in"]).copy() for a in k["args"]]
    interp = [x.copy() for x in args]
    run(sink, interp)
    emulate(data, code.desc, check_launch(code.desc, args))
    assert args[0].tobytes() == interp[0].tobytes()
