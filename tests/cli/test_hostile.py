"""Hostile files and arguments (issue 20, §4): each ends in exit status 1 and an `error:` line,
without a traceback, within a bounded time and memory.

The bounds are not timed assertions: each case runs the real `kcc` in a subprocess whose
address space is capped (RLIMIT_AS) and which is killed after a timeout; without the fix the
case exhausts the cap (a MemoryError traceback) or hangs (the timeout fails the test).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "examples" / "saxpy.uop"
AS_LIMIT = 2 * 2**30           # address space: python, numpy, kcc and a 256 MiB read fit
TIMEOUT = 120


def _limits(fsize: int | None = None):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
        # a test run started in the background of a non-interactive shell (CI) inherits SIGINT
        # ignored, and Python then installs no KeyboardInterrupt handler: kcc gets the
        # disposition a user's terminal gives it
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if fsize is not None:      # a full disk: a write past fsize fails with EFBIG
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return apply


def kcc(*args: str, cwd: Path | None = None, stdin=None, fsize: int | None = None
        ) -> subprocess.CompletedProcess:
    """The kcc command, bounded in memory and time; stdout/stderr as text."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "kcc.cli", *args], capture_output=True,
                          text=True, timeout=TIMEOUT, cwd=cwd, stdin=stdin, env=env,
                          preexec_fn=_limits(fsize))


def refused(r: subprocess.CompletedProcess, *words: str) -> None:
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Traceback" not in out and "error:" in r.stderr, out
    for w in words:
        assert w in r.stderr, r.stderr


# -- only regular files, with a size cap ----------------------------------------------------------

@pytest.mark.parametrize("cmd", [["check"], ["fmt"], ["disasm"], ["run", "--interp"]])
def test_a_device_is_not_read(cmd: list[str]) -> None:
    refused(kcc(*cmd, "/dev/zero"), "character device")


@pytest.mark.parametrize("cmd", [["check"], ["disasm"], ["run", "--interp"]])
def test_a_fifo_is_not_opened(cmd: list[str], tmp_path: Path) -> None:
    fifo = tmp_path / "k.uop"
    os.mkfifo(fifo)          # no writer: opening it for reading would wait forever
    refused(kcc(*cmd, str(fifo)), "FIFO")


def test_an_npy_argument_that_is_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.npy")
    refused(kcc("run", str(SAXPY), "--interp", "--random", str(tmp_path / "x.npy"),
                "-o", str(tmp_path / "out")), "argument 0", "FIFO")


def test_standard_input_is_read_up_to_the_cap() -> None:
    with open("/dev/zero", "rb") as zero:
        refused(kcc("check", "-", stdin=zero), "more than the 256.0 MiB")


def test_a_manifest_whose_object_is_a_device(tmp_path: Path) -> None:
    r = kcc("compile", str(SAXPY), "-t", "x86", "-o", str(tmp_path / "k.o"))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "k.json").read_text())
    doc["object"]["file"] = "/dev/zero"
    (tmp_path / "k.json").write_text(json.dumps(doc))
    refused(kcc("run", str(tmp_path / "k.json"), "--random"), "/dev/zero",
            "character device")


def test_a_manifest_that_is_a_device_or_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "k.json")
    refused(kcc("run", str(tmp_path / "k.json")), "FIFO")
    # the default manifest beside -o k.o is read to see whose it is: never a FIFO
    refused(kcc("compile", str(SAXPY), "-t", "x86", "-o", str(tmp_path / "k.o")),
            "not a kcc manifest")


def test_a_manifest_nested_100000_levels_deep(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    refused(kcc("run", str(deep)), "nested too deeply")
    deep.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    refused(kcc("run", str(deep)), "nested too deeply")
    # as the existing manifest beside an output: refused as not a kcc manifest
    (tmp_path / "k.json").write_text("[" * 100_000 + "]" * 100_000)
    refused(kcc("compile", str(SAXPY), "-t", "x86", "-o", str(tmp_path / "k.o")),
            "not a kcc manifest")


# -- one buffer-size limit for compile and run ----------------------------------------------------

def _buffer_kernel(size: int) -> str:
    return ("# kcc-uop 1\n"
            f"%out = PARAM ParamArg(0, float32, {size})\n"
            "%i = INDEX(%out, 0)\n%s = STORE(%i, 1.0)\nSINK(%s) KernelInfo(name=\"big\")\n")


def test_a_buffer_of_2_62_elements_is_refused_by_compile_and_run(tmp_path: Path) -> None:
    src = tmp_path / "big.uop"
    src.write_text(_buffer_kernel(2**62))
    for cmd in (["compile", str(src), "-t", "x86", "-o", str(tmp_path / "big.o")],
                ["run", str(src), "--interp", "--random", "-o", str(tmp_path / "o")],
                ["run", str(src), "-t", "x86", "--check", "-o", str(tmp_path / "o")],
                ["check", str(src)]):
        refused(kcc(*cmd), "big.uop:2:", "at most 2^40 elements")
    assert not (tmp_path / "big.o").exists() and not (tmp_path / "o").exists()


def test_the_limit_is_the_manifests() -> None:
    from kcc.frontend.errors import SourceError
    from kcc.frontend.parser import parse
    from kcc.ir.limits import MAX_BUFFER_ELEMENTS
    from kcc.targets.manifest import MAX_ELEMENTS
    assert MAX_ELEMENTS == MAX_BUFFER_ELEMENTS
    parse(_buffer_kernel(MAX_BUFFER_ELEMENTS))
    with pytest.raises(SourceError, match="at most 2"):
        parse(_buffer_kernel(MAX_BUFFER_ELEMENTS + 1))


# -- kcc run writes its outputs atomically ---------------------------------------------------------

def test_run_on_a_full_disk_leaves_no_half_written_buffer(tmp_path: Path) -> None:
    src = tmp_path / "k.uop"
    n = 1 << 16                       # 256 KiB of float32, over the 64 KiB file-size limit
    src.write_text(_buffer_kernel(n).replace('"big"', '"k"'))
    out = tmp_path / "out"
    out.mkdir()
    np.save(out / "arg0.npy", np.arange(4, dtype=np.float32))    # an earlier run's result
    before = (out / "arg0.npy").read_bytes()
    r = kcc("run", str(src), "--interp", "--random", "-o", str(out), fsize=64 * 1024)
    refused(r, "cannot write", "arg0.npy")
    assert sorted(p.name for p in out.iterdir()) == ["arg0.npy"]      # no temporary left
    assert (out / "arg0.npy").read_bytes() == before                   # not replaced


# -- messages that say what is wrong ---------------------------------------------------------------

def test_an_amd_asm_manifest_names_the_loadable_emit(tmp_path: Path) -> None:
    r = kcc("compile", str(SAXPY), "-t", "amd", "--emit", "asm", "-o", str(tmp_path / "k.s"),
            "--manifest", str(tmp_path / "k.json"))
    assert r.returncode == 0, r.stderr
    r = kcc("run", str(tmp_path / "k.json"), "--random")
    refused(r, "describes no object")
    from kcc.targets import registry
    loadable = [e.name for e in registry.get("amd").emits if e.loadable]
    if loadable:
        assert "--emit hsaco" in r.stderr and "--emit obj" not in r.stderr, r.stderr


@pytest.mark.parametrize("name", ["main", "memcpy", "free", "exp", "double", "__init_x",
                                  "_Start"])
def test_x86_kernel_names_of_the_c_library_are_refused(name: str, tmp_path: Path) -> None:
    src = tmp_path / "k.uop"
    src.write_text(_buffer_kernel(4).replace('"big"', f'"{name}"'))
    refused(kcc("compile", str(src), "-t", "x86", "-o", str(tmp_path / "k.o")),
            f"{src}: kernel {name}: its name is", "rename the kernel")
    assert not (tmp_path / "k.o").exists()
    refused(kcc("run", str(src), "-t", "x86", "--random", "-o", str(tmp_path / "o")),
            "rename the kernel")


def test_other_x86_kernel_names_compile(tmp_path: Path) -> None:
    from kcc.targets.x86.csyms import refusal
    for name in ("saxpy", "memcpy_f32", "E_4_4", "main2", "_k", "r_16"):
        assert refusal(name) is None, name


# -- x86 workers run in a native loop -------------------------------------------------------------

WORKERS = 2**24


def test_x86_runs_16m_workers_natively_and_says_how_many(tmp_path: Path) -> None:
    # one Python call per worker (~50 µs) took ~15 minutes for these and a list of 16M index
    # tuples (~2 GB, over the address-space cap); the native loop takes well under a second
    src = tmp_path / "w.uop"
    src.write_text("# kcc-uop 1\n"
                   f"%out = PARAM ParamArg(0, int32, {WORKERS})\n"
                   f'%g = SPECIAL({WORKERS}) "gidx0" : weakint\n'
                   "%v = CAST(%g) int32\n%i = INDEX(%out, %g)\n%s = STORE(%i, %v)\n"
                   'SINK(%s) KernelInfo(name="ids")\n')
    r = kcc("run", str(src), "-t", "x86", "--random", "-o", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert f"ids: runs {WORKERS} workers ({WORKERS} x 1 x 1)" in r.stderr, r.stderr
    out = np.load(tmp_path / "o" / "arg0.npy")
    np.testing.assert_array_equal(out, np.arange(WORKERS, dtype=np.int32))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_x86_worker_loop_passes_every_argument_class(seed: int, tmp_path: Path) -> None:
    # 17 scalars of six dtypes and three worker indices: registers and stack slots of both
    # System V classes, against the interpreter
    src = REPO / "tests" / "data" / "kernels" / "many_args_workers.uop"
    r = kcc("run", str(src), "-t", "x86", "--check", "--seed", str(seed), "-o",
            str(tmp_path / "o"))
    assert r.returncode == 0 and "x86 matches the interpreter" in r.stderr, r.stderr


def test_worker_loop_stub_disassembles_to_its_plan() -> None:
    # the stub's bytes, read back by capstone (an independent decoder): the workers are split
    # by div, the arguments loaded as constants, the kernel entered by push/push/ret
    capstone = pytest.importorskip("capstone")
    from kcc.targets.x86.workers import assemble_loop
    code = assemble_loop(0x1122334455667788, ["int", "float32", "int"], [0x1000, 1.5, -3],
                         [4, 2, 3])
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    text = [f"{i.mnemonic} {i.op_str}".strip() for i in md.disasm(code, 0)]
    assert sum(t.startswith("div") for t in text) == 2
    assert "movabs rax, 0x3fc00000" in text and "vmovq xmm0, rax" in text
    assert "movabs rdi, 0x1000" in text and "movabs rsi, 0xfffffffffffffffd" in text
    assert text[text.index("movabs rsi, 0xfffffffffffffffd") + 1:][:3] == [
        "mov edx, r14d", "mov ecx, r15d", "mov r8d, ebp"]
    assert "movabs rax, 0x1122334455667788" in text and text.count("ret") == 2
    assert len(b"".join([code])) == sum(i.size for i in md.disasm(code, 0))


def test_fmt_in_place_on_a_full_disk_leaves_the_source(tmp_path: Path) -> None:
    src = tmp_path / "k.uop"
    text = "# kcc-uop 1\n" + "# a long comment line that fmt keeps\n" * 4000 + \
        _buffer_kernel(4).split("\n", 1)[1].replace('"big"', '"k"')
    src.write_text(text)                 # ~150 KiB, over the 64 KiB file-size limit
    refused(kcc("fmt", "-i", str(src), fsize=64 * 1024), "cannot write the file")
    assert src.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.uop"]    # no temporary left
    link = tmp_path / "link.uop"
    link.symlink_to(src)                 # through a symlink the file it names is rewritten
    r = kcc("fmt", "-i", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and src.read_text() != text and "%0 = PARAM" in src.read_text()


def test_the_interpreter_out_of_memory_is_an_error_line(tmp_path: Path) -> None:
    # 2^31 workers as numpy lanes: 16 GiB for the index alone, over the 2 GiB cap
    src = tmp_path / "w.uop"
    src.write_text(_MANY)
    refused(kcc("run", str(src), "--interp", "--random", "-o", str(tmp_path / "o")),
            "kernel many: not enough memory for the interpreter")
    assert not (tmp_path / "o").exists()


_MANY = ("# kcc-uop 1\n%out = PARAM ParamArg(0, float32, 2)\n"
         f'%g = SPECIAL({2**31 - 1}) "gidx0" : weakint\n'
         "%lt = CMPLT(%g, 1) : bool\n%j = WHERE(%lt, 0, 1) : weakint\n"
         "%i = INDEX(%out, %j)\n"
         # a loop per worker, so that the launch lasts far longer than the test waits for
         # (2^31 empty workers end within seconds on an idle host)
         "%r = RANGE(4096) (0, LOOP) : weakint\n%v = CAST(%r) float32\n"
         "%s = STORE(%i, %v)\n%e = END(%s, %r)\n"
         'SINK(%e) KernelInfo(name="many")\n')


def test_a_2_31_worker_launch_says_so_and_ctrl_c_ends_it(tmp_path: Path) -> None:
    # 2^31 workers: kcc run names the count before it starts, and SIGINT ends the process
    # with one error line (native threads cannot be stopped, so it exits at once)
    n = 2**31 - 1
    src = tmp_path / "w.uop"
    src.write_text(_MANY)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(REPO)}
    p = subprocess.Popen([sys.executable, "-m", "kcc.cli", "run", str(src), "-t", "x86",
                          "--random", "-o", str(tmp_path / "o")], stderr=subprocess.PIPE,
                         text=True, env=env, preexec_fn=_limits())
    try:
        lines = []
        while not any("workers" in ln for ln in lines):
            ln = p.stderr.readline()
            assert ln, "".join(lines)
            lines.append(ln)
        assert f"many: runs {n} workers ({n} x 1 x 1)" in lines[-1], lines
        time.sleep(3)           # into the launch (an earlier SIGINT also ends in one line)
        p.send_signal(signal.SIGINT)
        rest = p.stderr.read()
        assert p.wait(timeout=TIMEOUT) == 1, rest
    finally:
        if p.poll() is None:
            p.kill()
    assert "error: interrupted" in rest and "Traceback" not in rest, rest
    assert "Aborted" not in rest
    assert not (tmp_path / "o").exists()
