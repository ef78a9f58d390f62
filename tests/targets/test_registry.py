"""The target registry (kcc.targets.registry): the built-in targets are listed and lazily
imported, and a target registered at run time is driven by the CLI (compile, disasm, run,
targets) with no CLI change — what a new back end relies on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from kcc.cli import main
from kcc.targets import registry
from kcc.targets.registry import Compiled, CompileError, DisasmError, Emit, TargetSpec

SAXPY = Path(__file__).resolve().parents[2] / "examples" / "saxpy.uop"


def kcc(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


class ToySpec(TargetSpec):
    """A target whose "object" is the text `TOY` + the kernel names; its loader fills every
    written buffer with 7 (enough to see the CLI reach each method)."""

    name = "toy"
    summary = "a test target"
    arches = ("t1", "t2")
    default_arch = "t1"
    emits = (Emit("blob", ".toy", True), Emit("text", ".toytxt", False))
    lists = "a toy blob"

    def compile(self, sinks, arch, emit, dump_after=None, out=None) -> Compiled:
        from kcc.targets.manifest import describe_kernel
        if any(s.arg.name == "refused" for s in sinks):
            raise CompileError("kernel refused: the toy target refuses it")
        descs = [describe_kernel(s) for s in sinks]
        data = b"TOY " + arch.encode() + b" " + " ".join(d.name for d in descs).encode()
        return Compiled(data, descs, arch, emit)

    def launch(self, data, desc, values) -> None:
        for a, v in zip(desc.args, values):
            if a.kind == "buffer" and "w" in a.access:
                v[...] = 7

    def claims(self, data: bytes, path: str) -> bool:
        return data.startswith(b"TOY ")

    def disasm(self, data: bytes, att: bool = False) -> str:
        if data.endswith(b"!"):
            raise DisasmError("a damaged toy blob")
        return "toy listing: " + data.decode() + "\n"


@pytest.fixture
def toy():
    spec = registry.register(ToySpec())
    yield spec
    registry.unregister("toy")


def test_builtin_targets_are_listed_without_importing_them() -> None:
    code = ("import sys; from kcc.targets import registry; print(','.join(registry.names())); "
            "print('kcc.targets.x86' in sys.modules, 'kcc.targets.cuda' in sys.modules, sep=',')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, imported = p.stdout.split()
    assert names.split(",")[:2] == ["x86", "cuda"]
    assert imported == "False,False"


@pytest.mark.parametrize("name,arch,emit,suffix", [("x86", "x86-64-v3", "obj", ".o"),
                                                   ("cuda", "sm_90", "cubin", ".cubin")])
def test_builtin_target_specs(name: str, arch: str, emit: str, suffix: str) -> None:
    t = registry.get(name)
    assert t.name == name and t.default_arch == arch and arch in t.arches
    assert t.default_emit == emit and t.emit(emit).suffix == suffix
    with pytest.raises(CompileError, match="unknown"):
        t.check_arch("bogus")
    with pytest.raises(CompileError, match="emits"):
        t.emit("bogus")


def test_unknown_target_is_refused_with_the_list() -> None:
    res = kcc("compile", str(SAXPY), "-t", "toy")
    assert res.exit_code == 1 and "'toy' is not a target" in res.output
    assert "x86, cuda" in res.output


def test_cli_lists_a_registered_target(toy) -> None:
    res = kcc("targets")
    assert res.exit_code == 0
    assert "toy: a test target" in res.output and "--arch t1, t2" in res.output


def test_cli_compiles_with_a_registered_target(toy, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # the default-named outputs land in the working directory: a fresh one, so a user's
    # saxpy.json (the README's first command writes one) is neither refused nor touched
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "k.toy"
    res = kcc("compile", str(SAXPY), "-t", "toy", "--arch", "t2", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == b"TOY t2 saxpy"
    doc = json.loads((tmp_path / "k.json").read_text())
    assert doc["target"] == "toy" and doc["arch"] == "t2"
    assert doc["object"]["file"] == "k.toy"
    # the default output name comes from the first emit kind's suffix
    res = CliRunner().invoke(main, ["compile", str(SAXPY), "-t", "toy"], catch_exceptions=False)
    assert res.exit_code == 0 and "saxpy.toy" in res.output
    assert (tmp_path / "saxpy.toy").read_bytes() == b"TOY t1 saxpy"


def test_cli_refusals_of_a_registered_target(toy, tmp_path: Path) -> None:
    res = kcc("compile", str(SAXPY), "-t", "toy", "--arch", "t9", "-o", str(tmp_path / "k"))
    assert res.exit_code == 1 and "unknown toy --arch 't9' (choose from t1, t2)" in res.output
    res = kcc("compile", str(SAXPY), "-t", "toy", "--emit", "obj", "-o", str(tmp_path / "k"))
    assert res.exit_code == 1 and "-t toy emits blob or text, not 'obj'" in res.output
    res = kcc("compile", str(SAXPY), "-t", "toy", "--header", str(tmp_path / "k.h"), "-o",
              str(tmp_path / "k"))
    assert res.exit_code == 1 and "-t toy has no C header" in res.output
    # a compile option's default is never passed (ToySpec.compile takes no keyword for it);
    # a value the target does not list is refused before compile runs
    res = kcc("compile", str(SAXPY), "-t", "toy", "--fp-contract=off", "-o",
              str(tmp_path / "k"), "--no-manifest")
    assert res.exit_code == 0, res.output
    res = kcc("compile", str(SAXPY), "-t", "toy", "--fp-contract=fast", "-o",
              str(tmp_path / "k2"))
    assert res.exit_code == 1 and "-t toy does not compile --fp-contract=fast" in res.output


def test_cli_disassembles_with_a_registered_target(toy, tmp_path: Path) -> None:
    (tmp_path / "k.toy").write_bytes(b"TOY t1 saxpy")
    res = kcc("disasm", str(tmp_path / "k.toy"))
    assert res.exit_code == 0 and res.output == "toy listing: TOY t1 saxpy\n"
    (tmp_path / "bad.toy").write_bytes(b"TOY t1 saxpy!")
    res = kcc("disasm", str(tmp_path / "bad.toy"))
    assert res.exit_code == 1 and "bad.toy: a damaged toy blob" in res.output
    (tmp_path / "other").write_bytes(b"neither")
    res = kcc("disasm", str(tmp_path / "other"))
    assert res.exit_code == 1 and "a toy blob" in res.output


def test_cli_runs_with_a_registered_target(toy, tmp_path: Path) -> None:
    assert kcc("compile", str(SAXPY), "-t", "toy", "-o", str(tmp_path / "k.toy")).exit_code == 0
    res = kcc("run", str(tmp_path / "k.json"), "--random", "-o", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    saved = {p.name: np.load(p) for p in (tmp_path / "out").glob("*.npy")}
    written = [n for n, v in saved.items() if (v == 7).all()]
    assert len(written) == 1, saved
