"""kcc.tinygrad.capture: every kernel tinygrad runs, as .uop with tinygrad's own values.

Oracle: tinygrad's default CPU (clang) results, saved by the capture; kcc compiles each
captured kernel for x86 and its output must equal them. The GPU-style lowerings must pass
`kcc check`, and the PTX-style ones assemble with ptxas.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tinygrad_util import load_capture, needs_tinygrad, run_captured_x86

pytestmark = needs_tinygrad
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A capture of a small model: broadcasting, a reduction, a matmul, softmax, a cast."""
    import kcc.tinygrad
    from tinygrad import Tensor, dtypes
    from tinygrad.helpers import Context
    out = tmp_path_factory.mktemp("capture")
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((4, 6)).astype(np.float32)).realize()
    w = Tensor(rng.standard_normal((6, 3)).astype(np.float32)).realize()
    b = Tensor(rng.standard_normal((3,)).astype(np.float32)).realize()
    with Context(DEV="CPU", PARALLEL=0), kcc.tinygrad.capture(out):
        h = (x @ w + b).relu()
        y = h.softmax(axis=1)
        z = (y * 100).cast(dtypes.int32).sum(axis=0)
        z.realize()
        want = z.numpy()
    np.save(out / "want.npy", want)
    return out


def test_manifest_lists_kernels_in_order(captured: Path) -> None:
    doc = load_capture(captured)
    assert doc["format"] == "kcc-tinygrad-capture" and doc["version"] == 1
    ks = doc["kernels"]
    assert len(ks) >= 2
    assert [k["index"] for k in ks] == list(range(len(ks)))
    roles = {b["id"]: b["role"] for b in doc["buffers"]}
    assert "input" in roles.values() and "output" in roles.values()
    for k in ks:
        assert k["error"] is None, k["error"]
        assert (captured / k["uop"]).is_file()
        for a in k["args"]:
            assert a["kind"] in ("buffer", "scalar")
            if a["kind"] == "buffer":
                assert a["dtype"] and a["size"] > 0 and a["access"] in ("r", "w", "rw")
                assert np.load(captured / a["in"]).size == a["size"]
    # the last kernel's output is what tinygrad returned
    last = ks[-1]
    out = [a for a in last["args"] if "out" in a]
    np.testing.assert_array_equal(np.load(captured / out[0]["out"]), np.load(captured /
                                                                             "want.npy"))


def test_roles_follow_reads_and_writes(captured: Path) -> None:
    doc = load_capture(captured)
    roles = {b["id"]: b["role"] for b in doc["buffers"]}
    written_then_read = set()
    written: set[int] = set()
    for k in doc["kernels"]:
        for a in k["args"]:
            if a["kind"] == "buffer" and "r" in a["access"] and a["buffer"] in written:
                written_then_read.add(a["buffer"])
        for a in k["args"]:
            if a["kind"] == "buffer" and "w" in a["access"]:
                written.add(a["buffer"])
    assert written_then_read, "the model has intermediates"
    for bid in written_then_read:
        assert roles[bid] == "intermediate"


def test_captured_kernels_run_on_x86_like_tinygrad(captured: Path) -> None:
    for k in load_capture(captured)["kernels"]:
        for slot, (got, want) in run_captured_x86(captured, k).items():
            if got.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{k['name']} arg {slot}")
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{k['name']} arg {slot}")


def test_gpu_style_lowerings_verify(captured: Path) -> None:
    from kcc.frontend.parser import parse
    ks = load_capture(captured)["kernels"]
    for k in ks:
        for style in ("ptx", "hip"):
            assert k["gpu"].get(style), k["gpu"].get(f"{style}_error")
            parse((captured / k["gpu"][style]).read_text(), k["gpu"][style])


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) not on PATH")
def test_ptx_style_lowerings_assemble_with_ptxas(captured: Path, tmp_path: Path) -> None:
    from kcc.frontend.parser import parse
    from kcc.targets.cuda.target import compile_cuda
    for k in load_capture(captured)["kernels"]:
        for style in ("ptx", "uop"):
            name = k["gpu"]["ptx"] if style == "ptx" else k["uop"]
            sink = parse((captured / name).read_text(), name)
            ptx, _ = compile_cuda([sink], "sm_80", "ptx")
            src = tmp_path / f"{k['index']}_{style}.ptx"
            src.write_bytes(ptx)
            r = subprocess.run(["ptxas", "-arch=sm_80", str(src), "-o", str(src) + ".cubin"],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"{name}: {r.stderr}"


def test_cli_captures_a_script(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text("import sys\nfrom tinygrad import Tensor\n"
                      "x = Tensor([1.0, -2.0, 3.0]) * float(sys.argv[1])\n"
                      "print(x.abs().numpy().tolist())\n")
    out = tmp_path / "cap"
    r = subprocess.run([sys.executable, "-m", "kcc.cli", "tinygrad-capture", str(script), "2",
                        "-o", str(out), "--no-gpu"], capture_output=True, text=True, cwd=ROOT,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DEV": "CPU",
                            "PARALLEL": "0", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "[2.0, 4.0, 6.0]" in r.stdout and "captured 1 kernel run" in r.stdout
    k = load_capture(out)["kernels"][0]
    assert k["gpu"] == {}
    for got, want in run_captured_x86(out, k).values():
        np.testing.assert_array_equal(got, want)


def test_cli_script_failure_and_missing_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.py"
    script.write_text("from tinygrad import Tensor\nprint((Tensor([1.0]) + 1).tolist())\n"
                      "raise ValueError('boom')\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DEV": "CPU", "PARALLEL": "0",
           "HOME": str(tmp_path)}
    out = tmp_path / "cap"
    r = subprocess.run([sys.executable, "-m", "kcc.cli", "tinygrad-capture", str(script), "-o",
                        str(out), "--no-gpu"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 1
    assert "bad.py raised ValueError: boom (the kernels it ran before are captured)" in r.stderr
    assert len(load_capture(out)["kernels"]) == 1
    r = subprocess.run([sys.executable, "-m", "kcc.cli", "tinygrad-capture",
                        str(tmp_path / "none.py")], capture_output=True, text=True, cwd=ROOT,
                       env=env)
    assert r.returncode == 1
    assert r.stderr.strip() == (f"error: cannot run {tmp_path / 'none.py'}: No such file or "
                                "directory")


def _capture(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DEV": "CPU", "PARALLEL": "0",
           "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "kcc.cli", "tinygrad-capture", *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def test_cli_capture_shows_the_scripts_traceback(tmp_path: Path) -> None:
    # the user's frames, from the script's first line on; not kcc's or runpy's
    (tmp_path / "bad.py").write_text("def f():\n    raise KeyError('boom')\n\n\nf()\n")
    r = _capture(tmp_path, "bad.py", "-o", "cap", "--no-gpu")
    assert r.returncode == 1, r.stderr
    tb = r.stderr[:r.stderr.index("error:")]
    assert tb.startswith("Traceback (most recent call last):\n"), r.stderr
    assert 'bad.py", line 5, in <module>' in tb and 'bad.py", line 2, in f' in tb
    assert "KeyError: 'boom'" in tb and "kcc" not in tb and "runpy" not in tb, tb


def test_cli_capture_refuses_what_it_would_mix_or_miss(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("from tinygrad import Tensor\n"
                                    "print((Tensor([1.0]) + 1).tolist())\n")
    (tmp_path / "file").write_text("mine")
    r = _capture(tmp_path, "ok.py", "-o", "file", "--no-gpu")
    assert r.returncode == 1 and r.stderr == ("error: file exists and is not a folder; choose "
                                              "a folder with -o\n"), r.stderr
    assert (tmp_path / "file").read_text() == "mine"
    r = _capture(tmp_path, str(tmp_path), "-o", "cap")
    assert r.returncode == 1 and "is a directory, not a regular file" in r.stderr, r.stderr
    # a folder of the user's is never emptied, not even with --force
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    for extra in ([], ["--force"]):
        r = _capture(tmp_path, "ok.py", "-o", "mine", "--no-gpu", *extra)
        assert r.returncode == 1 and "is not empty" in r.stderr, r.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    # an earlier capture: refused, then replaced with --force (no file of the first left)
    r = _capture(tmp_path, "ok.py", "-o", "cap", "--no-gpu")
    assert r.returncode == 0, r.stderr
    (tmp_path / "cap" / "stale.uop").write_text("from an earlier run")
    r = _capture(tmp_path, "ok.py", "-o", "cap", "--no-gpu")
    assert r.returncode == 1 and "cap is not empty" in r.stderr and "--force" in r.stderr
    r = _capture(tmp_path, "ok.py", "-o", "cap", "--no-gpu", "--force")
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "cap" / "stale.uop").exists()
    assert len(load_capture(tmp_path / "cap")["kernels"]) == 1
