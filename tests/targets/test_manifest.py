"""The launch manifest (docs/manifest.md) and the launch check: schema fields, access flags,
scalar ranges, x86 worker facts, the object's sha256, deterministic text; `check_launch`
refuses bad launches, and a refused `kcc run` never reaches the kernel."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import kcc.targets.x86.target as x86_target
from kcc.cli import main
from kcc.targets.manifest import (KernelDesc, LaunchError, check_launch, read_manifest)
from uop_texts import SCALE

REPO = Path(__file__).resolve().parents[2]
# access by construction: out only stored (w), x only loaded (r), acc loaded and stored (rw),
# spare never touched ("")
ACCESS = """# kcc-uop 1
%out   = PARAM ParamArg(0, float32, 8)
%x     = PARAM ParamArg(1, float32, 8)
%acc   = PARAM ParamArg(2, float32, 8)
%spare = PARAM ParamArg(3, int16, 5)
%n     = PARAM ParamArg(4, int32, None, (0, 8), addrspace=ALU)
%f     = PARAM ParamArg(5, float64, addrspace=ALU)
%i     = RANGE(8) (0, LOOP)    : weakint
%xi    = INDEX(%x, %i)
%xv    = LOAD(%xi)             : float32
%ai    = INDEX(%acc, %i)
%av    = LOAD(%ai)             : float32
%s     = ADD(%av, %xv)         : float32
%st1   = STORE(%ai, %s)
%oi    = INDEX(%out, %i)
%st2   = STORE(%oi, %xv)
%g     = GROUP(%st1, %st2)
%e     = END(%g, %i)
SINK(%e) KernelInfo(name="access")
"""
TOP_KEYS = {"format", "version", "target", "arch", "object", "kernels"}
KERNEL_KEYS = {"name", "symbol", "args", "global", "local", "specials", "target"}


def kcc(*args: str):
    return CliRunner().invoke(main, list(args))


def _compile(d: Path, name: str, text: str | None = None, src: Path | None = None) -> dict:
    if src is None:
        src = d / f"{name}.uop"
        src.write_text(text)
    res = kcc("compile", str(src), "-t", "x86", "-o", str(d / f"{name}.o"))
    assert res.exit_code == 0, res.output
    return json.loads((d / f"{name}.json").read_text())


def test_schema_access_and_ranges(tmp_path: Path) -> None:
    doc = _compile(tmp_path, "access", ACCESS)
    assert set(doc) == TOP_KEYS
    assert (doc["format"], doc["version"], doc["target"], doc["arch"]) == \
        ("kcc-manifest", 1, "x86", "x86-64-v3")
    assert doc["object"] == {"file": "access.o", "sha256": hashlib.sha256(
        (tmp_path / "access.o").read_bytes()).hexdigest()}
    [k] = doc["kernels"]
    assert set(k) == KERNEL_KEYS and k["name"] == k["symbol"] == "access"
    assert k["args"] == [
        {"slot": 0, "kind": "buffer", "dtype": "float32", "size": 8, "access": "w"},
        {"slot": 1, "kind": "buffer", "dtype": "float32", "size": 8, "access": "r"},
        {"slot": 2, "kind": "buffer", "dtype": "float32", "size": 8, "access": "rw"},
        {"slot": 3, "kind": "buffer", "dtype": "int16", "size": 5, "access": ""},
        {"slot": 4, "kind": "scalar", "dtype": "int32", "range": [0, 8]},
        {"slot": 5, "kind": "scalar", "dtype": "float64", "range": None},
    ]
    assert (k["global"], k["local"], k["specials"]) == ([1, 1, 1], [1, 1, 1], [])
    assert k["target"]["x86"]["workers"] == [] and k["target"]["x86"]["worker_args"] == []
    # the header the CLI writes agrees: const for read-only buffers
    res = kcc("compile", str(tmp_path / "access.uop"), "-t", "x86", "-o",
              str(tmp_path / "a2.o"), "--header", str(tmp_path / "a.h"))
    assert res.exit_code == 0
    assert ("void access(float *arg0, const float *arg1, float *arg2, const int16_t *arg3, "
            "int32_t arg4, double arg5);") in (tmp_path / "a.h").read_text()


def test_workers_example(tmp_path: Path) -> None:
    # examples/gidx_workers.uop: SPECIAL(4) "gidx0", SPECIAL(2) "gidx1"
    doc = _compile(tmp_path, "w", src=REPO / "examples" / "gidx_workers.uop")
    [k] = doc["kernels"]
    assert k["name"] == "grid_workers"
    assert (k["global"], k["local"], k["specials"]) == ([4, 2, 1], [1, 1, 1],
                                                        ["gidx0", "gidx1"])
    x = k["target"]["x86"]
    assert (x["arch"], x["workers"], x["worker_args"]) == ("x86-64-v3", [4, 2],
                                                           ["gidx0", "gidx1"])
    assert isinstance(x["frame_bytes"], int) and x["frame_bytes"] % 32 == 0


def test_manifest_text_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    _compile(a, "access", ACCESS)
    _compile(b, "access", ACCESS)
    assert (a / "access.json").read_text() == (b / "access.json").read_text()
    assert (a / "access.o").read_bytes() == (b / "access.o").read_bytes()


def test_read_manifest_checks_sha256(tmp_path: Path) -> None:
    _compile(tmp_path, "access", ACCESS)
    read_manifest(tmp_path / "access.json")
    obj = tmp_path / "access.o"
    obj.write_bytes(obj.read_bytes() + b"\0")
    with pytest.raises(LaunchError, match="sha256"):
        read_manifest(tmp_path / "access.json")


# -- check_launch ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def desc(tmp_path_factory: pytest.TempPathFactory) -> KernelDesc:
    d = tmp_path_factory.mktemp("m")
    return KernelDesc.from_json(_compile(d, "access", ACCESS)["kernels"][0])


def _good() -> list:
    return [np.zeros(8, np.float32), np.ones(8, np.float32), np.zeros(8, np.float32),
            np.zeros(5, np.int16), 3, 1.5]


def test_check_launch_accepts_and_normalizes(desc: KernelDesc) -> None:
    args = _good()
    args[2] = np.zeros((2, 4), np.float32)           # any shape with 8 elements
    ro = np.ones(8, np.float32)
    ro.flags.writeable = False                       # read-only input is fine
    args[1] = ro
    out = check_launch(desc, args)
    assert out[2].shape == (8,) and np.shares_memory(out[2], args[2])
    assert out[4].dtype == np.int32 and out[5].dtype == np.float64


@pytest.mark.parametrize("change,needle", [
    (lambda a: a[:-1], "takes 6 arguments, got 5"),
    (lambda a: a + [1], "takes 6 arguments, got 7"),
    (lambda a: [a[0].astype(np.float64)] + a[1:], "argument 0: expected dtype float32"),
    (lambda a: [np.zeros(9, np.float32)] + a[1:], "argument 0: expected 8 elements, got 9"),
    (lambda a: [np.zeros(16, np.float32)[::2]] + a[1:], "C-contiguous"),
    (lambda a: [a[0].tolist()] + a[1:], "argument 0: expected a float32 buffer"),
    (lambda a: a[:4] + [2.5, a[5]], "argument 4: expected an integer"),
    (lambda a: a[:4] + [9, a[5]], "outside the declared range"),
    (lambda a: a[:4] + [2**40, a[5]], "out of range for int32"),
    (lambda a: a[:4] + [True, a[5]], "got bool"),
    (lambda a: a[:5] + ["x"], "argument 5: expected a float64 scalar"),
    (lambda a: a[:5] + [np.zeros(3)], "got an array"),
])
def test_check_launch_refuses(desc: KernelDesc, change, needle: str) -> None:
    with pytest.raises(LaunchError, match=needle.replace("(", r"\(")):
        check_launch(desc, change(_good()))


@pytest.mark.parametrize("slot", [0, 2])
def test_check_launch_refuses_read_only_output(desc: KernelDesc, slot: int) -> None:
    args = _good()
    args[slot].flags.writeable = False
    with pytest.raises(LaunchError, match=f"argument {slot}: .*read-only"):
        check_launch(desc, args)


def test_refused_run_never_reaches_the_kernel(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """`kcc run` with a bad scalar: the x86 launcher is never called, the outputs on disk are
    untouched and no output folder is written; with good arguments it is called once."""
    calls = []
    monkeypatch.setattr(x86_target, "launch", lambda *a, **k: calls.append(a))
    (tmp_path / "s.uop").write_text(SCALE)
    out = np.full(16, 7, np.float32)
    np.save(tmp_path / "out.npy", out)
    np.save(tmp_path / "x.npy", np.arange(16, dtype=np.float32))
    before = (tmp_path / "out.npy").read_bytes()
    base = ["run", "-t", "x86", "-o", str(tmp_path / "o"), str(tmp_path / "s.uop"), "--",
            str(tmp_path / "out.npy"), str(tmp_path / "x.npy")]
    for s, k in (("1", "300"), ("9", "1"), ("1", "-1")):
        res = kcc(*base, s, k)
        assert res.exit_code == 1 and "error: argument" in res.stderr
    assert calls == []
    assert (tmp_path / "out.npy").read_bytes() == before
    assert not (tmp_path / "o").exists()
    res = kcc(*base, "1", "1")
    assert res.exit_code == 0, res.output
    assert len(calls) == 1
