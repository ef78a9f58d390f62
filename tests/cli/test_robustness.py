"""Bad input to every kcc command ends in a clear `error:` line and exit status 1, never a
Python traceback; and every `--dump-after` pass name works.

Most cases run through click's CliRunner (fast, same process; an escaping exception is caught
by the runner and shows up as `res.exception`, which we assert is a SystemExit); a few run the
real `kcc` entry point in a subprocess to prove the same end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from kcc.cli import main
from kcc.targets.pipeline import PASS_NAMES
from uop_texts import INC, SCALE  # noqa: F401 (INC: other tests import it from here too)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

# One GPU-only construct each; compiling it for x86 must name the construct. (A workgroup of
# constant size whose threads never meet is folded into workers: passes/threads.py; one of
# symbolic size is not.)
GPU_CONSTRUCTS = {
    "lidx": """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 16)
%n   = PARAM ParamArg(1, int32, addrspace=ALU, vmin_vmax=(1, 16))
%l   = SPECIAL(%n) "lidx0"     : int32
%oi  = INDEX(%out, %l)
%st  = STORE(%oi, 1.0)
SINK(%st) KernelInfo(name="g")
""",
    "BARRIER": """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 16)
%g   = SPECIAL(16) "gidx0"     : weakint
%oi  = INDEX(%out, %g)
%st  = STORE(%oi, 1.0)
%bar = BARRIER
%o2  = AFTER(%out, %st, %bar)
%p   = INDEX(%o2, 0)
%v   = LOAD(%p)                : float32
%v2  = ADD(%v, 1.0)            : float32
%q   = INDEX(%o2, %g)
%st2 = STORE(%q, %v2)
SINK(%st2) KernelInfo(name="g")
""",
    "LOCAL": """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 16)
%lds = BUFFER ParamArg(0, float32, 16, addrspace=LOCAL)
%g   = SPECIAL(16) "gidx0"     : weakint
%pl  = INDEX(%lds, %g)
%st0 = STORE(%pl, 2.0)
%l2  = AFTER(%lds, %st0)
%p2  = INDEX(%l2, %g)
%v   = LOAD(%p2)               : float32
%oi  = INDEX(%out, %g)
%st  = STORE(%oi, %v)
SINK(%st) KernelInfo(name="g")
""",
}


def kcc(*args: str) -> Result:
    """Invoke the CLI in-process; stdout and stderr are kept apart."""
    return CliRunner().invoke(main, list(args))


def assert_clean_error(res: Result, *needles: str) -> str:
    """Exit 1, an `error:` line on stderr that contains every needle, and no traceback."""
    err = res.stderr
    # an exception that escaped the command is caught by CliRunner; it must be sys.exit only
    assert isinstance(res.exception, SystemExit), (res.exception, res.output)
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ") or ": error: " in ln]
    assert lines, f"no error line in {err!r}"
    for n in needles:
        assert n in err, f"{n!r} not in {err!r}"
    return err


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scale.uop and inc.uop compiled (one object each and one holding both), plus inputs."""
    d = tmp_path_factory.mktemp("built")
    (d / "scale.uop").write_text(SCALE)
    (d / "inc.uop").write_text(INC)
    for name, text in GPU_CONSTRUCTS.items():
        (d / f"gpu_{name}.uop").write_text(text)
    assert kcc("compile", str(d / "scale.uop"), "-t", "x86", "-o", str(d / "s.o")).exit_code == 0
    res = kcc("compile", str(d / "scale.uop"), str(d / "inc.uop"), "-t", "x86",
              "-o", str(d / "two.o"))
    assert res.exit_code == 0, res.output
    np.save(d / "x.npy", np.arange(16, dtype=np.float32))
    np.save(d / "x64.npy", np.arange(16, dtype=np.float64))
    np.save(d / "x8.npy", np.arange(8, dtype=np.float32))
    np.save(d / "pickle.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (d / "text.npy").write_text("not a numpy file\n")
    return d


# -- compile ----------------------------------------------------------------------------------

def test_compile_missing_and_directory_inputs(built: Path) -> None:
    assert_clean_error(kcc("compile", str(built / "nope.uop"), "-t", "x86"), "nope.uop")
    assert_clean_error(kcc("compile", str(built), "-t", "x86"), str(built))


def test_compile_unopenable_input(built: Path) -> None:
    # tests run as root in CI, so chmod 000 would still open: a path through a regular file
    # (ENOTDIR) cannot be opened by anyone.
    assert_clean_error(kcc("compile", str(built / "scale.uop" / "x.uop"), "-t", "x86"))


@pytest.mark.parametrize("out", ["/nonexistent-dir/k.o", "/proc/kcc-test.o"])
def test_compile_unwritable_output(built: Path, out: str) -> None:
    assert_clean_error(kcc("compile", str(built / "scale.uop"), "-t", "x86", "-o", out),
                       "cannot write")


def test_compile_unwritable_manifest_and_header(built: Path, tmp_path: Path) -> None:
    src = str(built / "scale.uop")
    assert_clean_error(kcc("compile", src, "-t", "x86", "-o", str(tmp_path / "a.o"),
                           "--manifest", "/nonexistent-dir/k.json"), "cannot write")
    assert_clean_error(kcc("compile", src, "-t", "x86", "-o", str(tmp_path / "a.o"),
                           "--header", "/nonexistent-dir/k.h"), "cannot write")


def test_compile_wrong_target_is_a_usage_error(built: Path) -> None:
    res = kcc("compile", str(built / "scale.uop"), "-t", "arm")
    assert res.exit_code == 1 and "error: Invalid value" in res.stderr
    assert "Traceback" not in res.output


@pytest.mark.parametrize("target", ["x86", "cuda"])
def test_compile_wrong_arch(built: Path, target: str, tmp_path: Path) -> None:
    assert_clean_error(kcc("compile", str(built / "scale.uop"), "-t", target, "--arch",
                           "pdp11", "-o", str(tmp_path / "k.bin")), "pdp11", target)


@pytest.mark.parametrize("target,emit", [("x86", "ptx"), ("x86", "exe"), ("cuda", "obj"),
                                         ("cuda", "asm")])
def test_compile_wrong_emit(built: Path, target: str, emit: str, tmp_path: Path) -> None:
    assert_clean_error(kcc("compile", str(built / "scale.uop"), "-t", target, "--emit", emit,
                           "-o", str(tmp_path / "k.bin")), repr(emit))


def test_compile_unknown_dump_pass(built: Path) -> None:
    err = assert_clean_error(kcc("compile", str(built / "scale.uop"), "-t", "x86",
                                 "--dump-after", "nopass"), "'nopass'")
    for name in PASS_NAMES:       # the message lists the real pass names
        assert name in err


def test_compile_header_with_cuda(built: Path, tmp_path: Path) -> None:
    assert_clean_error(kcc("compile", str(built / "scale.uop"), "-t", "cuda", "--emit", "ptx",
                           "-o", str(tmp_path / "k.ptx"), "--header", str(tmp_path / "k.h")),
                       "--header")
    assert not (tmp_path / "k.h").exists()


@pytest.mark.parametrize("construct", sorted(GPU_CONSTRUCTS))
def test_compile_gpu_construct_for_x86_names_it(built: Path, construct: str,
                                                tmp_path: Path) -> None:
    res = kcc("compile", str(built / f"gpu_{construct}.uop"), "-t", "x86",
              "-o", str(tmp_path / "k.o"))
    assert_clean_error(res, construct, "GPU")
    assert not (tmp_path / "k.o").exists()


def test_compile_duplicate_kernel_names(built: Path, tmp_path: Path) -> None:
    other = tmp_path / "scale_copy.uop"
    other.write_text(SCALE)
    assert_clean_error(kcc("compile", str(built / "scale.uop"), str(other), "-t", "x86",
                           "-o", str(tmp_path / "k.o")), "'scale'")


@pytest.mark.parametrize("name", PASS_NAMES)
def test_dump_after_every_pass(built: Path, name: str, tmp_path: Path) -> None:
    res = kcc("compile", str(built / "scale.uop"), "-t", "x86", "--dump-after", name,
              "-o", str(tmp_path / "k.o"))
    assert res.exit_code == 0, res.output
    assert f"; after {name}" in res.stdout
    body = res.stdout.split(f"; after {name}", 1)[1]
    assert len(body.strip().splitlines()) >= 3      # the graph / listing itself


# -- run: choosing what to run ----------------------------------------------------------------

def test_run_needs_exactly_one_of_interp_and_target(built: Path) -> None:
    src = str(built / "scale.uop")
    assert_clean_error(kcc("run", src, "--random"), "--interp")
    assert_clean_error(kcc("run", src, "--interp", "-t", "x86", "--random"), "--interp")


def test_run_missing_source(built: Path) -> None:
    assert_clean_error(kcc("run", str(built / "nope.uop"), "--interp"), "nope.uop")
    assert_clean_error(kcc("run", str(built / "nope.json")), "nope.json")


def _manifest(built: Path, name: str = "s.json") -> dict:
    return json.loads((built / name).read_text())


def _write(tmp_path: Path, built: Path, doc: object, obj: str = "s.o") -> Path:
    """A manifest in tmp_path beside a copy of the object."""
    (tmp_path / obj).write_bytes((built / obj).read_bytes())
    p = tmp_path / "m.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: "{not json", "cannot read manifest"),
    (lambda d: [1, 2], "not a kcc manifest"),
    (lambda d: {**d, "format": "other"}, "not a kcc manifest"),
    (lambda d: {**d, "version": 2}, "version 2"),
    (lambda d: {**d, "object": {"file": "gone.o", "sha256": d["object"]["sha256"]}}, "gone.o"),
    (lambda d: {**d, "kernels": "scale"}, "kernels"),
    (lambda d: {**d, "kernels": [{"name": "scale"}]}, "args"),
    (lambda d: {**d, "kernels": [{**d["kernels"][0], "args": [{"slot": 0}]}]}, "argument 0"),
    (lambda d: {**d, "object": {"file": "s.o"}}, "sha256"),
    (lambda d: {**d, "target": "vax"}, "vax"),
])
def test_run_bad_manifest(built: Path, tmp_path: Path, mutate, needle: str) -> None:
    p = _write(tmp_path, built, mutate(_manifest(built)))
    assert_clean_error(kcc("run", str(p), str(built / "x.npy"), str(built / "x.npy"), "1", "1",
                           "-o", str(tmp_path / "out")), needle)
    assert not (tmp_path / "out").exists()


def test_run_manifest_of_asm_output(built: Path, tmp_path: Path) -> None:
    res = kcc("compile", str(built / "scale.uop"), "-t", "x86", "--emit", "asm",
              "-o", str(tmp_path / "k.s"))
    assert res.exit_code == 0, res.output
    assert_clean_error(kcc("run", str(tmp_path / "k.json"), "--random",
                           "-o", str(tmp_path / "out")), "--emit asm")


def test_run_object_changed_after_compile(built: Path, tmp_path: Path) -> None:
    p = _write(tmp_path, built, _manifest(built))
    obj = bytearray((tmp_path / "s.o").read_bytes())
    obj[-1] ^= 1
    (tmp_path / "s.o").write_bytes(bytes(obj))
    assert_clean_error(kcc("run", str(p), "--random", "-o", str(tmp_path / "out")), "sha256")


def test_run_manifest_kernel_not_in_object(built: Path, tmp_path: Path) -> None:
    doc = _manifest(built)
    doc["kernels"][0]["name"] = "renamed"
    p = _write(tmp_path, built, doc)
    assert_clean_error(kcc("run", str(p), "--random", "-o", str(tmp_path / "out")), "renamed")


def test_run_kernel_choice_in_multi_kernel_manifest(built: Path, tmp_path: Path) -> None:
    m = str(built / "two.json")
    assert_clean_error(kcc("run", m, "--random"), "--kernel", "scale", "inc")
    assert_clean_error(kcc("run", m, "--random", "--kernel", "nope"), "'nope'")


# -- run: arguments ---------------------------------------------------------------------------

def _run_scale(built: Path, tmp_path: Path, *args: str) -> Result:
    # `--` so that a negative number is an argument, not an option
    return kcc("run", "-o", str(tmp_path / "out"), str(built / "s.json"), "--", *args)


@pytest.mark.parametrize("buf,needle", [
    ("x64.npy", "dtype float32, got float64"),
    ("x8.npy", "16 elements, got 8"),
    ("text.npy", "not a .npy file"),
    ("pickle.npy", "cannot read"),
    ("missing.npy", "missing.npy"),
])
def test_run_bad_buffer(built: Path, tmp_path: Path, buf: str, needle: str) -> None:
    err = assert_clean_error(_run_scale(built, tmp_path, str(built / "x.npy"), str(built / buf),
                                        "1", "1"), "argument 1", needle)
    assert "pickle" not in err or buf == "pickle.npy"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("s,k,needle", [
    ("abc", "1", "argument 2"),
    ("1", "1.5", "argument 3"),
    ("1", "x", "argument 3"),
    ("1", "300", "out of range for int8"),
    ("1", "-200", "out of range for int8"),
    ("1", "9", "outside the declared range"),
    ("5", "1", "outside the declared range"),
    ("nan", "1", "argument 2"),
])
def test_run_bad_scalar(built: Path, tmp_path: Path, s: str, k: str, needle: str) -> None:
    x = str(built / "x.npy")
    assert_clean_error(_run_scale(built, tmp_path, x, x, s, k), needle)
    assert not (tmp_path / "out").exists()


def test_run_float_scalar_out_of_dtype_range(tmp_path: Path) -> None:
    # no declared range: 1e300 is still not a float32 (it would silently become inf)
    src = tmp_path / "f.uop"
    src.write_text(SCALE.replace(", (-4.0, 4.0), addrspace", ", None, addrspace"))
    x = tmp_path / "x.npy"
    np.save(x, np.zeros(16, np.float32))
    assert_clean_error(kcc("run", str(src), "--interp", str(x), str(x), "1e300", "1",
                           "-o", str(tmp_path / "o")), "argument 2", "float32")


def test_run_argument_count(built: Path, tmp_path: Path) -> None:
    x = str(built / "x.npy")
    assert_clean_error(_run_scale(built, tmp_path, x), "takes 4 arguments, got 1")
    assert_clean_error(_run_scale(built, tmp_path, x, x, "1", "1", "1"),
                       "takes 4 arguments, got 5")


def test_run_unwritable_outdir(built: Path) -> None:
    x = str(built / "x.npy")
    assert_clean_error(kcc("run", str(built / "s.json"), x, x, "1", "1", "-o",
                           str(built / "scale.uop" / "out")), "cannot write")


# -- disasm -----------------------------------------------------------------------------------

def test_disasm_bad_files(built: Path, tmp_path: Path) -> None:
    assert_clean_error(kcc("disasm", str(tmp_path / "nope.o")), "nope.o")
    assert_clean_error(kcc("disasm", str(tmp_path)), str(tmp_path))
    assert_clean_error(kcc("disasm", str(built / "x.npy")), "not an x86-64 ELF")
    obj = (built / "s.o").read_bytes()
    for cut in (16, 64, len(obj) // 2, len(obj) - 8):
        (tmp_path / "cut.o").write_bytes(obj[:cut])
        assert_clean_error(kcc("disasm", str(tmp_path / "cut.o")), "cut.o")


def test_disasm_corrupt_section_table(built: Path, tmp_path: Path) -> None:
    obj = bytearray((built / "s.o").read_bytes())
    obj[0x28:0x30] = (len(obj) * 4).to_bytes(8, "little")       # e_shoff past the end
    (tmp_path / "bad.o").write_bytes(bytes(obj))
    assert_clean_error(kcc("disasm", str(tmp_path / "bad.o")), "bad.o")


# -- end to end, in a real process ------------------------------------------------------------

@pytest.mark.parametrize("argv,needle", [
    (["compile", "{d}/nope.uop", "-t", "x86"], "nope.uop"),
    (["run", "{d}/s.json", "{d}/x.npy", "{d}/pickle.npy", "1", "1", "-o", "{d}/o"], "argument 1"),
    (["disasm", "{d}/x.npy"], "not an x86-64 ELF"),
])
def test_subprocess_no_traceback(built: Path, argv: list[str], needle: str) -> None:
    cmd = [sys.executable, "-m", "kcc.cli", *(a.format(d=built) for a in argv)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    first = p.stderr.splitlines()[0]
    assert first.startswith("error: ") or ": error: " in first, p.stderr
    assert needle in p.stderr


def test_an_internal_compiler_error_is_one_line_not_a_traceback(monkeypatch, tmp_path) -> None:
    """A bug inside a pass must still end in `error: internal compiler error …`, exit 1."""
    import kcc.targets.x86.target as x86

    def broken(*a, **k):
        raise ZeroDivisionError("simulated bug")
    monkeypatch.setattr(x86, "compile_x86", broken)
    monkeypatch.delenv("KCC_TRACEBACK", raising=False)
    src = Path(__file__).resolve().parents[2] / "examples" / "saxpy.uop"
    res = CliRunner().invoke(main, ["compile", str(src), "-t", "x86", "-o",
                                    str(tmp_path / "k.o")])
    assert res.exit_code == 1
    assert "internal compiler error (ZeroDivisionError: simulated bug)" in res.output
    assert "Traceback" not in res.output
