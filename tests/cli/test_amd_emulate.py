"""`kcc run -t amd --emulate` and `kcc disasm k.hsaco` through the CLI: kcc's AMD code
objects run in kcc's emulator and match the interpreter; the listing comes from kcc's
decoder; refusals are one error line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from amd_util import needs_decoder
from kcc.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def kcc(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@needs_decoder
@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
@pytest.mark.parametrize("name", ["saxpy", "local_reduce", "gated"])
def test_run_check_emulate_matches_the_interpreter(name, arch, tmp_path):
    r = kcc("run", str(EXAMPLES / f"{name}.uop"), "-t", "amd", "--arch", arch, "--check",
            "--emulate", "-o", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "amd matches the interpreter" in r.output


@needs_decoder
def test_manifest_run_emulate_and_disasm(tmp_path):
    obj = tmp_path / "k.hsaco"
    r = kcc("compile", str(EXAMPLES / "saxpy.uop"), "-t", "amd", "--arch", "gfx942",
            "-o", str(obj))
    assert r.exit_code == 0, r.output
    manifest = obj.with_suffix(".json")
    r = kcc("run", str(manifest), "--random", "--emulate", "-o", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output
    assert "saved" in r.output
    r = kcc("disasm", str(obj))
    assert r.exit_code == 0, r.output
    assert "gfx942 code object" in r.output and "s_endpgm" in r.output
    assert "wave64" in r.output


def test_emulate_refusals_are_one_error_line(tmp_path):
    r = kcc("run", str(EXAMPLES / "saxpy.uop"), "--interp", "--emulate")
    assert r.exit_code == 1
    assert "--emulate runs a compiled kernel" in r.output
    r = kcc("run", str(EXAMPLES / "saxpy.uop"), "-t", "x86", "--random", "--emulate",
            "-o", str(tmp_path))
    assert r.exit_code == 1
    assert "target x86 has no emulator" in r.output
    assert "Traceback" not in r.output


def test_disasm_of_a_broken_code_object_is_an_error(tmp_path):
    bad = tmp_path / "bad.hsaco"
    # An AMDGPU HSA ELF header (class 64, OSABI 64, e_machine 224) with nothing behind it.
    header = bytearray(64)
    header[:8] = b"\x7fELF\x02\x01\x01\x40"
    header[16:20] = (3).to_bytes(2, "little") + (224).to_bytes(2, "little")
    bad.write_bytes(bytes(header) + bytes(64))
    r = kcc("disasm", str(bad))
    assert r.exit_code == 1
    assert "Traceback" not in r.output and "bad.hsaco" in r.output
