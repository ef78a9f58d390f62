"""The asm round trip: `kcc compile --emit asm` assembled by GNU `as` and by `llvm-mc` gives the
instructions, constants and relocations of kcc's own object, and the assembled object, linked
by the system C compiler into a shared library, computes what the interpreter computes.

Instruction by instruction the bytes must be equal (kcc picks the same short forms an
assembler picks: the sign-extended imm8 encodings, rel8 branches where they reach). Branches
are compared by the instruction they reach, so a different choice of branch width would show
as a length difference of that instruction only. The NOP padding of an aligned loop head
(`.p2align` in the text) is left out of that comparison (GNU as pads with other NOP forms than
llvm-mc and kcc), but every other instruction must sit at the same address: the assemblers'
own alignment then checks kcc's padding.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from kcc.cli import main
from kcc.frontend.parser import parse
from kcc.targets.manifest import check_launch, describe_kernel
from kcc.targets.x86.target import launch
from asm_compare import Obj, compare, read_object
from x86_util import (APPROX, CPU_EXAMPLES, assert_same, defined_only, random_inputs,
                      reference)


ASSEMBLERS = {
    "gas": lambda s, o: ["as", "--64", str(s), "-o", str(o)],
    "llvm-mc": lambda s, o: ["llvm-mc", "-triple=x86_64", "-filetype=obj", str(s), "-o", str(o)],
}
TOOLS = {"gas": "as", "llvm-mc": "llvm-mc"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Per CPU example: kcc's object, and its asm assembled by each assembler present."""
    d = tmp_path_factory.mktemp("asm")
    out: dict = {}
    for src in CPU_EXAMPLES:
        n = src.stem
        for emit, ext in (("obj", ".o"), ("asm", ".s")):
            res = CliRunner().invoke(main, ["compile", str(src), "-t", "x86", "--emit", emit,
                                            "-o", str(d / f"{n}{ext}"),
                                            "--manifest", str(d / f"{n}.{emit}.json")])
            assert res.exit_code == 0, res.output
        out[n, "kcc"] = d / f"{n}.o"
        for name, cmd in ASSEMBLERS.items():
            if shutil.which(TOOLS[name]) is None:
                continue
            o = d / f"{n}.{name}.o"
            p = subprocess.run(cmd(d / f"{n}.s", o), capture_output=True, text=True)
            assert p.returncode == 0 and p.stderr == "", f"{name} on {n}.s: {p.stderr}"
            out[n, name] = o
    return out


def _need(tool: str) -> None:
    if shutil.which(TOOLS[tool]) is None:
        pytest.skip(f"{TOOLS[tool]} is not installed (docs/architecture.md lists the oracles)")


@pytest.mark.parametrize("asm", sorted(ASSEMBLERS))
@pytest.mark.parametrize("path", CPU_EXAMPLES, ids=lambda p: p.stem)
def test_assembled_asm_equals_object(built: dict, path: Path, asm: str) -> None:
    _need(asm)
    compare(read_object(built[path.stem, "kcc"]), read_object(built[path.stem, asm]))


def test_the_comparison_can_fail(built: dict) -> None:
    """The checker itself: a changed instruction, relocation or constant is caught."""
    _need("gas")
    k = read_object(built["saxpy", "kcc"])
    a = read_object(built["saxpy", "gas"])
    compare(k, a)
    flipped = list(a.insts)
    flipped[-3], flipped[-4] = flipped[-4], flipped[-3]
    with pytest.raises(AssertionError):
        compare(k, Obj(flipped, a.relocs, a.rodata, a.path))
    t = read_object(built["transcendental", "gas"])
    kt = read_object(built["transcendental", "kcc"])
    assert kt.relocs, "transcendental reads constants through relocations"
    with pytest.raises(AssertionError):
        compare(kt, Obj(t.insts, t.relocs[1:] + t.relocs[:1], t.rodata, t.path))
    with pytest.raises(AssertionError):
        compare(kt, Obj(t.insts, t.relocs, t.rodata[:-1] + b"\x01", t.path))


class _SharedLib:
    """A linked shared library, shaped like the loader's object for `x86.launch`."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))

    def function(self, symbol: str, restype, argtypes):
        fn = getattr(self.lib, symbol)
        fn.restype, fn.argtypes = restype, list(argtypes)
        return fn

    def address(self, symbol: str) -> int:
        """Where the symbol is (x86.launch's worker loop calls it from machine code)."""
        return ctypes.cast(getattr(self.lib, symbol), ctypes.c_void_p).value


@pytest.mark.parametrize("who", ["kcc", "gas", "llvm-mc"])
def test_linked_objects_run_like_the_interpreter(built: dict, who: str,
                                                 tmp_path: Path) -> None:
    """Link each object with `cc -shared` (the system linker applies the relocations) and
    compare every CPU example's result with the interpreter."""
    if who != "kcc":
        _need(who)
    for src in CPU_EXAMPLES:
        sink = parse(src.read_text(), str(src))
        so = tmp_path / f"{src.stem}.{who}.so"
        p = subprocess.run(["cc", "-shared", "-o", str(so), str(built[src.stem, who])],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        desc = describe_kernel(sink)
        args = random_inputs(sink, seed=7)
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        launch(_SharedLib(so), desc, check_launch(desc, mine))
        ulp = 4 if any(n.op in APPROX for n in sink.toposort()) else 0
        assert_same(sink, defined_only(sink, mine, args), reference(sink, args), ulp)
