"""The loader trusts no manifest: the object carries its kernels' launch facts (x86 and AMD
HSACO: the `.note.kcc` ELF note; CUDA: the `__kcc_launch` array of the module), `kcc run` refuses a
manifest that disagrees with them, and every manifest field is validated — an edited smaller
size cannot make a kernel write out of bounds, a huge one cannot exhaust memory."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amd_util import needs_decoder
from kcc.cli import main
from kcc.targets import facts as F
from kcc.targets import registry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def kcc(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def refused(res: Result, *needles: str) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    for n in needles:
        assert n in res.stderr, res.stderr
    return res.stderr


@pytest.fixture
def built(tmp_path: Path) -> Path:
    res = kcc("compile", str(EXAMPLES / "saxpy.uop"), str(EXAMPLES / "gidx_workers.uop"), "-t",
              "x86", "-o", str(tmp_path / "k.o"))
    assert res.exit_code == 0, res.output
    return tmp_path


def edit(d: Path, change) -> Path:
    doc = json.loads((d / "k.json").read_text())
    change(doc)
    p = d / "edited.json"
    p.write_text(json.dumps(doc))
    return p


def run(p: Path, kernel: str = "saxpy") -> Result:
    return kcc("run", str(p), "--kernel", kernel, "--random", "-o", str(p.parent / "out"))


def test_the_object_carries_the_manifest_facts(built: Path) -> None:
    doc = json.loads((built / "k.json").read_text())
    facts = registry.get("x86").describe((built / "k.o").read_bytes())
    assert facts == [F.facts_of(k, target=True) for k in doc["kernels"]]
    assert run(built / "k.json").exit_code == 0


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf (binutils)")
def test_the_note_is_a_real_elf_note_outside_the_image(built: Path) -> None:
    """readelf (an independent reader) decodes the note; the section is not allocated, and
    .text stays the first section with the first kernel at .text+0."""
    notes = subprocess.run(["readelf", "-W", "-n", str(built / "k.o")], capture_output=True,
                           text=True, check=True).stdout
    assert ".note.kcc" in notes and "kcc" in notes
    secs = subprocess.run(["readelf", "-W", "-S", str(built / "k.o")], capture_output=True,
                          text=True, check=True).stdout
    line = next(ln for ln in secs.splitlines() if ".note.kcc" in ln)
    assert " NOTE " in line and " A " not in line.split("NOTE", 1)[1]
    first = next(ln for ln in secs.splitlines() if "] ." in ln)
    assert "] .text" in first
    syms = subprocess.run(["readelf", "-W", "-s", str(built / "k.o")], capture_output=True,
                          text=True, check=True).stdout
    assert any(ln.split()[1] == "0000000000000000" and ln.split()[-1] == "saxpy"
               for ln in syms.splitlines() if ln.strip().endswith("saxpy"))


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_an_object_with_the_note_still_links(built: Path) -> None:
    c = built / "main.c"
    c.write_text("void saxpy(float *y, const float *x, float a);\n"
                 "int main(void) { static float x[1024], y[1024]; x[3] = 2; y[3] = 1;\n"
                 "  saxpy(y, x, 3.0f); return y[3] == 7.0f ? 0 : 1; }\n")
    exe = built / "main"
    subprocess.run(["cc", "-o", str(exe), str(c), str(built / "k.o")], check=True)
    assert subprocess.run([str(exe)]).returncode == 0


@pytest.mark.parametrize("change,needle", [
    (lambda d: d["kernels"][0]["args"][0].update(size=16), "'size' is 16 in the manifest but "
     "1024 in the object"),
    (lambda d: d["kernels"][0]["args"][1].update(size=2**30), "'size' is 1073741824"),
    (lambda d: d["kernels"][0]["args"][0].update(size=2**62), "'size' must be an integer in"),
    (lambda d: d["kernels"][0]["args"][1].update(dtype="float64"), "'dtype'"),
    (lambda d: d["kernels"][0]["args"][0].update(access="r"), "'access'"),
    (lambda d: d["kernels"][0]["args"].pop(), "lists 2 arguments, the object 3"),
    (lambda d: d["kernels"][0].update(name="other", symbol="other"), "no kernel 'other'"),
    (lambda d: d["kernels"][0].update(symbol="evil"), "'symbol' 'evil' must be"),
    (lambda d: d["kernels"][0].update(name="a b", symbol="a b"), "not a symbol name"),
    (lambda d: d["kernels"][0].update({"global": [2, 1, 1]}), "'global'"),
    (lambda d: d["kernels"][0].update({"global": [2**40, 1, 1]}),
     "a constant launch dimension is in"),
    (lambda d: d.update(arch="x86-64-v9"), "arch 'x86-64-v9' is not a x86 arch"),
])
def test_an_edited_manifest_is_refused(built: Path, change, needle: str) -> None:
    p = edit(built, change)
    name = json.loads(p.read_text())["kernels"][0]["name"]
    refused(run(p, name), needle)
    assert not (built / "out").exists()


def test_the_other_kernel_is_checked_too(built: Path) -> None:
    p = edit(built, lambda d: d["kernels"][1]["args"][0].update(size=1))
    refused(run(p, "saxpy"), "kernel grid_workers: argument 0")


def _forge(built: Path, data: bytes) -> Path:
    (built / "forged.o").write_bytes(data)
    doc = json.loads((built / "k.json").read_text())
    doc["object"] = {"file": "forged.o", "sha256": hashlib.sha256(data).hexdigest()}
    p = built / "forged.json"
    p.write_text(json.dumps(doc))
    return p


def test_an_object_without_facts_is_refused(built: Path) -> None:
    data = bytearray((built / "k.o").read_bytes())
    i = data.find(b".note.kcc")
    data[i:i + 9] = b".note.xyz"                 # the section is no longer kcc's
    refused(run(_forge(built, bytes(data))), "carries no kcc launch facts")


def test_an_object_with_garbled_facts_is_refused(built: Path) -> None:
    data = bytearray((built / "k.o").read_bytes())
    i = data.find(b'[{"args"')
    data[i:i + 8] = b"\xff\xfe{{{{{{"
    refused(run(_forge(built, bytes(data))), "launch facts are unreadable")


def test_a_huge_size_is_not_a_memory_error_traceback(built: Path) -> None:
    """Even where the object and the manifest agree on a size no machine has (an object
    kcc wrote for it), the run is an error line."""
    p = edit(built, lambda d: d["kernels"][0]["args"][0].update(size=2**40))
    cmd = [sys.executable, "-m", "kcc.cli", "run", str(p), "--kernel", "saxpy", "--random",
           "-o", str(built / "out")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "error:" in r.stderr


def test_the_api_loader_checks_the_description_against_the_object(built: Path) -> None:
    import numpy as np

    from kcc.targets.manifest import KernelDesc, LaunchError
    doc = json.loads((built / "k.json").read_text())
    desc = KernelDesc.from_json(doc["kernels"][0])
    desc.args[0].size = 8
    y, x = np.zeros(8, np.float32), np.zeros(1024, np.float32)
    with pytest.raises(LaunchError, match="'size' is 8"):
        registry.get("x86").launch((built / "k.o").read_bytes(), desc, [y, x, np.float32(1)])


def test_cuda_modules_carry_the_facts(tmp_path: Path) -> None:
    res = kcc("compile", str(EXAMPLES / "saxpy.uop"), "-t", "cuda", "--emit", "ptx", "-o",
              str(tmp_path / "k.ptx"))
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "k.json").read_text())
    spec = registry.get("cuda")
    assert spec.describe((tmp_path / "k.ptx").read_bytes()) == [F.facts_of(doc["kernels"][0])]
    with pytest.raises(F.FactsError, match="no kcc launch facts"):
        spec.describe(b".version 8.0\n.target sm_90\n")
    from kcc.targets.cuda.target import find_ptxas
    if find_ptxas() is None:
        pytest.skip("ptxas not installed: the cubin half of this test needs it")
    res = kcc("compile", str(EXAMPLES / "saxpy.uop"), "-t", "cuda", "-o",
              str(tmp_path / "k.cubin"), "--manifest", str(tmp_path / "c.json"))
    assert res.exit_code == 0, res.output
    assert spec.describe((tmp_path / "k.cubin").read_bytes()) == [F.facts_of(doc["kernels"][0])]


def test_cuda_manifest_edit_is_refused_before_any_device(tmp_path: Path) -> None:
    assert kcc("compile", str(EXAMPLES / "saxpy.uop"), "-t", "cuda", "--emit", "ptx", "-o",
               str(tmp_path / "k.ptx")).exit_code == 0
    doc = json.loads((tmp_path / "k.json").read_text())
    doc["kernels"][0]["args"][1]["size"] = 4
    (tmp_path / "e.json").write_text(json.dumps(doc))
    refused(kcc("run", str(tmp_path / "e.json"), "--random", "-o", str(tmp_path / "o")),
            "'size' is 4 in the manifest but 1024")


def test_note_reader_on_garbage() -> None:
    assert F.read_elf_note(b"") is None
    assert F.read_elf_note(b"\x04\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00GNU\x00x\0\0\0") \
        is None
    with pytest.raises(F.FactsError):
        F.read_elf_note(b"\x04\x00\x00\x00\xff\x00\x00\x00\x01\x00\x00\x00kcc\x00[{")
    with pytest.raises(F.FactsError):
        F.parse_facts(b'{"not": "a list"}')


# -- AMD code objects (HSACO): the same note, checked before any emulation ------------------

@pytest.fixture
def amd_built(tmp_path: Path) -> Path:
    res = kcc("compile", str(EXAMPLES / "saxpy.uop"), str(EXAMPLES / "local_reduce.uop"), "-t",
              "amd", "-o", str(tmp_path / "k.hsaco"))
    assert res.exit_code == 0, res.output
    return tmp_path


def amd_run(p: Path, kernel: str = "workgroup_sum") -> Result:
    return kcc("run", str(p), "--kernel", kernel, "--random", "--emulate", "-o",
               str(p.parent / "out"))


@needs_decoder
def test_amd_code_objects_carry_the_manifest_facts(amd_built: Path) -> None:
    doc = json.loads((amd_built / "k.json").read_text())
    facts = registry.get("amd").describe((amd_built / "k.hsaco").read_bytes())
    assert facts == [F.facts_of(k, target=True) for k in doc["kernels"]]
    res = amd_run(amd_built / "k.json")
    assert res.exit_code == 0, res.output
    assert (amd_built / "out").exists()


@needs_decoder
@pytest.mark.skipif(shutil.which("llvm-readelf-19") is None, reason="needs llvm-readelf-19")
def test_the_amd_note_is_outside_every_segment(amd_built: Path) -> None:
    """llvm-readelf-19 (an independent reader) decodes the kcc note without a warning; the
    section is not allocated, so no PT_LOAD/PT_NOTE segment maps it."""
    r = subprocess.run(["llvm-readelf-19", "-a", str(amd_built / "k.hsaco")],
                       capture_output=True, text=True, check=True)
    text = r.stdout + r.stderr
    assert "warning" not in text.lower(), text
    assert "Displaying notes found in: .note.kcc" in text
    line = next(ln for ln in text.splitlines() if "] .note.kcc" in ln)
    assert re.search(r"\] \.note\.kcc\s+NOTE\s+0{16}\s", line), line      # address 0
    assert " A" not in line.split("NOTE", 1)[1], line                      # not allocated
    mapping = text.split("Section to Segment mapping:", 1)[1].split("None", 1)[0]
    assert ".note.kcc" not in mapping


@needs_decoder
@pytest.mark.parametrize("change,needle", [
    (lambda d: d["kernels"][1]["args"][1].update(size=16), "'size' is 16 in the manifest but "
     "64 in the object"),
    (lambda d: d["kernels"][1]["args"][0].update(size=4096), "'size' is 4096"),
    (lambda d: d["kernels"][1]["args"][1].update(dtype="float64"), "'dtype'"),
    (lambda d: d["kernels"][1].update(name="other", symbol="other"), "no kernel 'other'"),
    (lambda d: d["kernels"][1].update(symbol="saxpy"), "'symbol' 'saxpy' must be"),
    (lambda d: d["kernels"][1].update({"global": [64, 1, 1]}), "'global'"),
    (lambda d: d["kernels"][1].update({"local": [32, 1, 1]}), "'local'"),
    (lambda d: d["kernels"][1]["target"]["amd"].update(kernarg_offsets=[0, 0]), "'target'"),
    (lambda d: d.update(arch="gfx9999"), "arch 'gfx9999' is not a amd arch"),
])
def test_an_edited_amd_manifest_is_refused_before_emulation(amd_built: Path, change,
                                                           needle: str) -> None:
    p = edit(amd_built, change)
    refused(amd_run(p, json.loads(p.read_text())["kernels"][1]["name"]), needle)
    assert not (amd_built / "out").exists()


@needs_decoder
def test_the_other_amd_kernel_is_checked_too(amd_built: Path) -> None:
    p = edit(amd_built, lambda d: d["kernels"][0]["args"][0].update(size=1))
    refused(amd_run(p), "kernel saxpy: argument 0")


@needs_decoder
def test_an_amd_object_without_facts_is_refused(amd_built: Path) -> None:
    data = bytearray((amd_built / "k.hsaco").read_bytes())
    i = data.find(b".note.kcc")
    data[i:i + 9] = b".note.xyz"
    doc = json.loads((amd_built / "k.json").read_text())
    (amd_built / "forged.hsaco").write_bytes(bytes(data))
    doc["object"] = {"file": "forged.hsaco", "sha256": hashlib.sha256(data).hexdigest()}
    (amd_built / "forged.json").write_text(json.dumps(doc))
    refused(amd_run(amd_built / "forged.json"), "carries no kcc launch facts")
    with pytest.raises(F.FactsError, match="not a readable AMD code object"):
        registry.get("amd").describe(b"\t.amdgcn_target \"amdgcn-amd-amdhsa--gfx1100\"\n")


@needs_decoder
def test_the_amd_api_emulator_and_loader_check_the_description(amd_built: Path) -> None:
    import numpy as np

    from kcc.targets.manifest import KernelDesc, LaunchError
    doc = json.loads((amd_built / "k.json").read_text())
    data = (amd_built / "k.hsaco").read_bytes()
    desc = KernelDesc.from_json(doc["kernels"][1])
    out, x = np.zeros(4, np.float32), np.ones(64, np.float32)
    registry.get("amd").emulate(data, desc, [out, x])
    assert np.allclose(out, 16.0)            # the interpreter-free fact: 16 ones per group
    desc.args[1].size = 8
    spec = registry.get("amd")
    with pytest.raises(LaunchError, match="'size' is 8"):
        spec.emulate(data, desc, [out, x[:8]])
    with pytest.raises(LaunchError, match="'size' is 8"):
        spec.launch(data, desc, [out, x[:8]])
