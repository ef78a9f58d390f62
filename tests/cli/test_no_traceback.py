"""No traceback from any input: garbage manifests (every field given values of every wrong
type), truncated and damaged objects, bad .npy files and odd command lines all end in an
`error:` line and exit status 1 (or 2 for click's usage errors), never a Python traceback.

Runs that load an object go through a subprocess, so that a damaged object that got past the
checks could not take the test process down with it."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from kcc.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAXPY = EXAMPLES / "saxpy.uop"
GARBAGE = [None, True, -1, 0, 2**70, 1.5, float("inf"), "", "x" * 300, [], [None], {},
           {"a": 1}]


def kcc(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def clean(res: Result, codes: tuple[int, ...] = (1,)) -> None:
    assert res.exit_code in codes, (res.exit_code, res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit), \
        (res.exception, res.output)
    assert "Traceback" not in res.output
    if res.exit_code == 1:
        assert "error:" in res.stderr, res.stderr


def proc(*args: str) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "kcc.cli", *args], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    return r


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("garbage")
    res = kcc("compile", str(SAXPY), "-t", "x86", "-o", str(d / "k.o"))
    assert res.exit_code == 0, res.output
    np.save(d / "x.npy", np.ones(1024, np.float32))
    return d


def _paths(doc: object, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path inside a JSON document."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(prefix + (k,))
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append(prefix + (i,))
            out += _paths(v, prefix + (i,))
    return out


def _set(doc: object, path: tuple, value: object) -> object:
    doc = copy.deepcopy(doc)
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return doc


def _drop(doc: object, path: tuple) -> object:
    doc = copy.deepcopy(doc)
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    del cur[path[-1]]
    return doc


def test_garbage_in_every_manifest_field(built: Path) -> None:
    """Each field of a real manifest replaced by each garbage value, or removed: the run is
    an error line or (for a change that means nothing, e.g. an unused name) a normal run."""
    doc = json.loads((built / "k.json").read_text())
    p = built / "g.json"
    for path in _paths(doc):
        variants = [_set(doc, path, g) for g in GARBAGE] + [_drop(doc, path)]
        for v in variants:
            p.write_text(json.dumps(v))
            res = kcc("run", str(p), "--random", "-o", str(built / "out"))
            clean(res, (0, 1))
            if res.exit_code == 0:     # only a harmless edit may run: the facts still agree
                assert v.get("object", {}).get("file") == "k.o", (path, v)


@pytest.mark.parametrize("text", [b"", b"\x00\xff" * 50, b"[]", b"{", b"null", b'"kcc"',
                                  b'{"format": "kcc-manifest"}', "{\"é\": 1}".encode("latin-1"),
                                  b'{"format": "kcc-manifest", "version": 1, "kernels": 5}'])
def test_garbage_manifest_files(built: Path, text: bytes) -> None:
    (built / "bad.json").write_bytes(text)
    clean(kcc("run", str(built / "bad.json"), "--random", "-o", str(built / "out")))


def _with_object(built: Path, data: bytes, name: str) -> Path:
    (built / f"{name}.o").write_bytes(data)
    doc = json.loads((built / "k.json").read_text())
    doc["object"] = {"file": f"{name}.o", "sha256": hashlib.sha256(data).hexdigest()}
    p = built / f"{name}.json"
    p.write_text(json.dumps(doc))
    return p


def test_truncated_objects(built: Path) -> None:
    """An object cut short anywhere, with a manifest that vouches for exactly those bytes,
    is refused before anything runs."""
    obj = (built / "k.o").read_bytes()
    cuts = sorted({0, 3, 4, 16, 63, 64, 100, len(obj) // 3, len(obj) // 2, len(obj) - 64,
                   len(obj) - 1})
    for cut in cuts:
        r = proc("run", str(_with_object(built, obj[:cut], f"cut{cut}")), "--random", "-o",
                 str(built / "out"))
        assert r.returncode == 1 and "error:" in r.stderr, (cut, r.stderr)
        d = proc("disasm", str(built / f"cut{cut}.o"))
        assert d.returncode in (0, 1), (cut, d.stderr)


@pytest.mark.parametrize("where,value", [
    (4, 1),                 # EI_CLASS: 32-bit
    (5, 2),                 # EI_DATA: big-endian
    (16, 2),                # e_type: ET_EXEC
    (18, 3),                # e_machine: EM_386
    (58, 7),                # e_shentsize
    (60, 0xFF),             # e_shnum
    (62, 0x40),             # e_shstrndx
])
def test_damaged_object_headers(built: Path, where: int, value: int) -> None:
    obj = bytearray((built / "k.o").read_bytes())
    obj[where] = value
    r = proc("run", str(_with_object(built, bytes(obj), f"h{where}")), "--random", "-o",
             str(built / "out"))
    assert r.returncode == 1 and "error:" in r.stderr, r.stderr
    d = proc("disasm", str(built / f"h{where}.o"))
    assert d.returncode in (0, 1)


def test_garbage_objects(built: Path) -> None:
    rng = np.random.default_rng(7)
    for i in range(4):
        data = b"\x7fELF" + rng.integers(0, 256, 400, dtype=np.uint8).tobytes()
        r = proc("run", str(_with_object(built, data, f"rand{i}")), "--random", "-o",
                 str(built / "out"))
        assert r.returncode == 1 and "error:" in r.stderr
        clean(kcc("disasm", str(built / f"rand{i}.o")), (0, 1))


def _npy(path: Path, arr: np.ndarray, allow_pickle: bool = False) -> Path:
    np.save(path, arr, allow_pickle=allow_pickle)
    return path


def _raw(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make,needle", [
    (lambda d: _npy(d / "f64.npy", np.ones(1024)), "dtype float32, got float64"),
    (lambda d: _npy(d / "short.npy", np.ones(10, np.float32)), "1024 elements, got 10"),
    (lambda d: _npy(d / "obj.npy", np.array([{"a": 1}] * 4, dtype=object), True),
     "cannot read"),
    (lambda d: _npy(d / "rec.npy", np.zeros(1024, dtype=[("a", "f4")])), "dtype float32"),
    (lambda d: _npy(d / "zero_d.npy", np.float32(1.0)), "1024 elements, got 1"),
    (lambda d: _npy(d / "str.npy", np.array(["x"] * 1024)), "dtype float32"),
    (lambda d: _raw(d / "bytes.npy", b"PK\x03\x04not npy"), "not a .npy file"),
    (lambda d: _raw(d / "trunc.npy", (d / "x.npy").read_bytes()[:80]), "cannot read"),
    (lambda d: _raw(d / "hdr.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': garbage}\n"),
     "cannot read"),
    (lambda d: d / "nowhere.npy", "nowhere.npy"),
    (lambda d: d, "cannot read"),
])
def test_bad_npy_files(built: Path, make, needle: str) -> None:
    bad = make(built)
    res = kcc("run", str(built / "k.json"), str(bad), str(built / "x.npy"), "2", "-o",
              str(built / "out"))
    clean(res)
    assert "argument 0" in res.stderr and needle in res.stderr, res.stderr


def test_a_fortran_order_array_of_the_right_size_runs(built: Path) -> None:
    a = np.asfortranarray(np.ones((32, 32), np.float32))
    np.save(built / "fortran.npy", a)
    res = kcc("run", str(built / "k.json"), str(built / "fortran.npy"), str(built / "x.npy"),
              "2", "-o", str(built / "out"))
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("argv,codes", [
    ([], (0,)),
    (["bogus"], (1,)),
    (["compile"], (1,)),
    (["compile", str(SAXPY)], (1,)),
    (["compile", str(SAXPY), "-t"], (1,)),
    (["compile", str(SAXPY), "-t", "x86", "-o", ""], (1,)),
    (["compile", str(SAXPY), "-t", "x86", "--arch", ""], (1,)),
    (["compile", str(SAXPY), "-t", "x86", "--header", ""], (1,)),
    (["compile", str(SAXPY), "-t", "x86", "--emit", "\x00"], (1,)),
    (["compile", str(SAXPY), "-t", "x86", "--dump-after", "nope"], (1,)),
    (["compile", "", "-t", "x86"], (1,)),
    (["compile", "/", "-t", "x86"], (1,)),
    (["run"], (1,)),
    (["run", ""], (1,)),
    (["run", "/"], (1,)),
    (["run", str(SAXPY)], (1,)),
    (["run", str(SAXPY), "--interp", "--seed", "-1"], (1,)),
    (["run", str(SAXPY), "--interp", "--seed", "x"], (1,)),
    (["run", str(SAXPY), "--interp", "--random", "--kernel", ""], (1,)),
    (["run", str(SAXPY), "--interp", "a", "b", "c", "d"], (1,)),
    (["run", str(SAXPY), "--interp", "--random", "-o", "/proc/version/x"], (1,)),
    (["disasm"], (1,)),
    (["disasm", ""], (1,)),
    (["disasm", "/"], (1,)),
    (["disasm", str(SAXPY)], (1,)),
    (["check", ""], (1,)),
    (["check", "/dev/null"], (1,)),
    (["fmt", "-i", "-"], (1,)),
    (["fmt", "/"], (1,)),
    (["targets", "extra"], (1,)),
    (["compile", "--help"], (0,)),
    (["run", "--help"], (0,)),
    (["compile", str(SAXPY), "-t", "x86", "--fp-contract", "on"], (1,)),
])
def test_odd_command_lines(argv: list[str], codes: tuple[int, ...]) -> None:
    # a usage error is reported as every other error: one `error: …` line, exit status 1
    res = kcc(*argv)
    clean(res, codes)
    if res.exit_code == 1:
        assert "error: " in res.stderr and "Error:" not in res.output, res.output


@pytest.mark.parametrize("data", [b"\x00" * 64, b"\xff\xfe\xfd", "é".encode("latin-1"),
                                  b"# kcc-uop 1\n" + b"\x00" * 10, b"# kcc-uop 1\n%a = \n",
                                  b"# kcc-uop 1\n" + b"(" * 5000])
def test_garbage_kernels(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "g.uop"
    p.write_bytes(data)
    for argv in (["check", str(p)], ["fmt", str(p)], ["compile", str(p), "-t", "x86", "-o",
                                                      str(tmp_path / "g.o")],
                 ["run", str(p), "--interp", "--random", "-o", str(tmp_path / "o")]):
        clean(kcc(*argv))
    res = kcc("compile", "-", "-t", "x86", "-o", str(tmp_path / "s.o"))
    clean(res)


def _commands() -> list[str]:
    return sorted(main.commands)


@pytest.mark.parametrize("cmd", _commands())
def test_help_of_every_command(cmd: str) -> None:
    """`kcc CMD --help` prints the usage (click ≥ 8.2 passes ctx to a parameter type's
    get_metavar by keyword: the TargetName type once raised a TypeError here)."""
    res = kcc(cmd, "--help")
    assert res.exit_code == 0, (res.exception, res.output)
    assert "Usage:" in res.output
    assert "Traceback" not in res.output


def test_top_level_help() -> None:
    res = kcc("--help")
    assert res.exit_code == 0 and "Usage:" in res.output, res.output
