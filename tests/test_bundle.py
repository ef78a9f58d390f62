"""kcc/bundle.py: kcc's modules loaded from one file of code objects (issue 24, item 4). What a
process loads from it is the code a `.pyc` import gives (the same code object, compared with
compiling the source), a module whose source changed is imported from its source, a broken
file is ignored, and nothing is written where bytecode is not. Properties of fresh processes
over a copy of the kcc package, not timings (bench/startup.py measures the time)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAXPY = REPO / "examples" / "saxpy.uop"

# what a process reports: where each kcc module came from, and its module attributes
PROBE = r"""
import json, sys
sys.argv = ["kcc", "compile", sys.argv[1], "-t", "x86", "-o", sys.argv[2]]
from kcc import cli
try:
    cli.main()
except SystemExit as e:
    assert e.code == 0, e.code
out = {}
for name, m in sorted(sys.modules.items()):
    if name.startswith("kcc."):
        spec = m.__spec__
        out[name] = [type(spec.loader).__name__, m.__file__, spec.origin,
                     getattr(m, "__path__", None), spec.parent, m.__cached__, spec.cached,
                     list(vars(m))[:9], m.__loader__ is spec.loader]
print(json.dumps(out))
"""


def _copy(tmp: Path) -> Path:
    """A copy of the kcc package under tmp (sources only), for a process to import."""
    shutil.copytree(REPO / "kcc", tmp / "kcc", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp


def _run(root: Path, out: Path, write: bool = True) -> dict[str, list]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(root)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    p = subprocess.run([sys.executable, "-c", PROBE, str(SAXPY), str(out)], env=env,
                       capture_output=True, text=True, timeout=300, cwd=root)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def _bundle_files(root: Path) -> list[Path]:
    return list((root / "kcc" / "__pycache__").glob("modules.*.bin"))


def _probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module kcc._bundle_probe imported from its source in tmp_path (so a save has one
    module's code to write), with bytecode writing on; its source file."""
    import importlib.util
    src = tmp_path / "probe.py"
    src.write_text("X = 1\n")
    spec = importlib.util.spec_from_file_location("kcc._bundle_probe", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setitem(sys.modules, "kcc._bundle_probe", mod)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return src


def test_second_process_loads_the_same_code_from_the_bundle(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    first = _run(root, tmp_path / "a.o")
    assert _bundle_files(root) and all(v[0] == "SourceFileLoader" for v in first.values())
    second = _run(root, tmp_path / "b.o")
    # the same modules, but the x86 table's templates: the first process built the table
    # (kcc/encode/x86/rows.py and rows_late.py), the second loads it from the start-up cache
    assert set(second) == set(first) - {"kcc.encode.x86.rows", "kcc.encode.x86.rows_late"}
    bundled = {n for n, v in second.items() if v[0] == "_Loader"}
    # every kcc module but the package and the bundle module itself (imported before it)
    assert bundled == set(second) - {"kcc.bundle"} and len(bundled) > 50
    for name in bundled:
        assert second[name][1:] == first[name][1:], name     # __file__, origin, __path__,
        assert first[name][5].endswith(".pyc"), name           # … __cached__, the order of
        assert second[name][8], name                           # the attributes; __loader__
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "b.o").read_bytes()
    # the code in the file is the source's code, as compile() makes it
    sys.path.insert(0, str(root))
    try:
        from kcc.bundle import Bundle
    finally:
        sys.path.remove(str(root))
    b = Bundle(str(_bundle_files(root)[0]))
    for name in ("kcc.cli", "kcc.ir", "kcc.targets.x86.target", "kcc.encode.x86.table"):
        origin = b.entries[name][0]
        with open(origin, encoding="utf-8") as f:
            want = compile(f.read(), origin, "exec", dont_inherit=True)
        assert b.loader.get_code(name) == want
        assert b.loader.is_package(name) == origin.endswith("__init__.py")


def test_a_changed_module_is_imported_from_its_source(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _run(root, tmp_path / "a.o")
    _run(root, tmp_path / "b.o")
    ops = root / "kcc" / "ir" / "ops.py"
    ops.write_text(ops.read_text() + "\nCHANGED_FOR_THE_TEST = 1\n")
    third = _run(root, tmp_path / "c.o")
    assert third["kcc.ir.ops"][0] == "SourceFileLoader"
    assert third["kcc.ir.uop"][0] == "_Loader"
    fourth = _run(root, tmp_path / "d.o")              # the bundle took the new version
    assert fourth["kcc.ir.ops"][0] == "_Loader"
    sys.path.insert(0, str(root))
    try:
        from kcc.bundle import Bundle
    finally:
        sys.path.remove(str(root))
    code = Bundle(str(_bundle_files(root)[0])).loader.get_code("kcc.ir.ops")
    assert "CHANGED_FOR_THE_TEST" in code.co_names
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "d.o").read_bytes()


@pytest.mark.parametrize("junk", [b"", b"\x00garbage", b"\xfb\x00\x00\x00", b"kccE\xff\xff\xff\x7f",
                                  b"kccE\x04\x00\x00\x00abcd", b"kccE\x01\x00\x00\x000"])
def test_a_broken_bundle_is_ignored_and_rewritten(tmp_path: Path, junk: bytes) -> None:
    root = _copy(tmp_path)
    _run(root, tmp_path / "a.o")
    [path] = _bundle_files(root)
    path.write_bytes(junk)
    again = _run(root, tmp_path / "b.o")
    assert all(v[0] == "SourceFileLoader" for v in again.values())
    assert path.stat().st_size > 100_000                  # written whole again
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "b.o").read_bytes()


def test_nothing_written_without_bytecode(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _run(root, tmp_path / "a.o", write=False)
    assert _bundle_files(root) == []


def test_a_cut_bundle_serves_only_whole_modules(tmp_path: Path) -> None:
    """A file cut short (a full disk while another process wrote it is impossible — the
    write is renamed into place — but a copy may be cut): the modules whose code it still
    holds whole load from it, the rest from their sources."""
    root = _copy(tmp_path)
    _run(root, tmp_path / "a.o")
    [path] = _bundle_files(root)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    again = _run(root, tmp_path / "b.o")
    kinds = {v[0] for v in again.values()}
    assert kinds == {"_Loader", "SourceFileLoader"}
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "b.o").read_bytes()


def test_a_read_only_install_builds_no_bundle(tmp_path: Path) -> None:
    """Where the bytecode folder cannot be written, the process does not gather every
    module's code at exit to write nothing (and still compiles)."""
    if os.geteuid() == 0:
        pytest.skip("root writes to a read-only folder")
    root = _copy(tmp_path)
    cache = root / "kcc" / "__pycache__"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        got = _run(root, tmp_path / "a.o")
    finally:
        cache.chmod(0o755)
    assert _bundle_files(root) == [] and got


def test_save_gathers_nothing_where_it_cannot_write(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same property in this process (root may write anywhere): with a kcc module to add
    (a probe imported from its source) and the folder not writable, save() marshals no code
    and writes no file; writable, it writes the probe's code."""
    from kcc import bundle, startup
    _probe(tmp_path, monkeypatch)
    dumps = []
    real_dumps = bundle.marshal.dumps
    monkeypatch.setattr(bundle.marshal, "dumps", lambda v: dumps.append(1) or real_dumps(v))
    b = bundle.Bundle(str(tmp_path / "sub" / "modules.bin"))
    with monkeypatch.context() as m:
        m.setattr(startup.os, "access", lambda *a, **k: False)
        b.save()
    assert dumps == [] and not (tmp_path / "sub").exists()
    b.save()
    assert dumps and "kcc._bundle_probe" in bundle.Bundle(b.path).entries


def test_another_kcc_version_does_not_read_the_bundle(tmp_path: Path) -> None:
    """A bundle written by another version of kcc is not read (its modules come from their
    sources, as if there were no file) and is written again for this version."""
    root = _copy(tmp_path)
    _run(root, tmp_path / "a.o")
    init = root / "kcc" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "9.9.9+', 1))
    again = _run(root, tmp_path / "b.o")
    assert all(v[0] == "SourceFileLoader" for v in again.values())
    third = _run(root, tmp_path / "c.o")
    assert third["kcc.ir.ops"][0] == "_Loader"
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "c.o").read_bytes()
    sys.path.insert(0, str(root))
    try:
        from kcc.bundle import Bundle
    finally:
        sys.path.remove(str(root))
    [path] = _bundle_files(root)
    assert Bundle(str(path), "0.1.0").entries == {}
    assert Bundle(str(path), "9.9.9+0.1.0").entries


def test_racing_processes_leave_a_whole_bundle(tmp_path: Path) -> None:
    """Processes that write the bundle at the same time (the first ones, then those whose
    calls made functions whole) each rename a whole file into place: the file left is one
    of them, every module in it whole and its code the source's."""
    root = _copy(tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(root)
    for round_ in range(2):
        procs = [subprocess.Popen([sys.executable, "-c", PROBE, str(SAXPY),
                                   str(tmp_path / f"{round_}-{i}.o")], env=env, cwd=root,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for i in range(4)]
        for p in procs:
            assert p.wait(timeout=300) == 0, p.stderr.read()
    [path] = _bundle_files(root)
    assert not list(path.parent.glob(".*tmp")) and not list(path.parent.glob("*.tmp"))
    sys.path.insert(0, str(root))
    try:
        from kcc.bundle import Bundle
    finally:
        sys.path.remove(str(root))
    b = Bundle(str(path))
    assert len(b.entries) > 50
    for name, e in b.entries.items():
        with open(e[0], encoding="utf-8") as f:
            want = compile(f.read(), e[0], "exec", dont_inherit=True)
        assert b.loader.get_code(name) == want, name
        assert b.read(name) is not None, name
    outs = {p.read_bytes() for p in tmp_path.glob("*-*.o")}
    assert len(outs) == 1


def test_a_second_thread_imports_through_importlib(tmp_path: Path) -> None:
    """Bundle.load skips importlib's module locks, so it serves only a process of one
    thread: with another thread running, kcc's modules import through importlib (from the
    bundle's finder), and the compile is the same."""
    root = _copy(tmp_path)
    _run(root, tmp_path / "a.o")
    script = ("import threading, time\n"
              "ev = threading.Event()\n"
              "t = threading.Thread(target=ev.wait); t.start()\n"
              "import kcc.bundle as b, _frozen_importlib as fi\n"
              "seen = []\n"
              "load = b.Bundle.load\n"
              "b.Bundle.load = lambda self, *a: seen.append(a[0]) or load(self, *a)\n"
              "import kcc.ir.ops\n"
              "ev.set(); t.join()\n"
              "assert fi._find_and_load._kcc_bundle is not None\n"
              "assert seen == [], seen\n"
              "assert type(kcc.ir.ops.__spec__.loader).__name__ == '_Loader'\n"
              "import sys\n"
              "assert 'kcc.targets.elf' not in sys.modules\n"
              "import kcc.targets.elf\n"      # one thread again: through Bundle.load
              "assert 'kcc.targets.elf' in seen, seen\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(root)
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                       text=True, timeout=300, cwd=root)
    assert p.returncode == 0, p.stderr


def test_a_failed_write_leaves_the_old_bundle_and_no_part_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that fills (or turns read-only) while the bundle is written: the part written
    is removed, and the file in place is the previous whole one (readers never see part)."""
    from kcc import bundle, startup
    src = _probe(tmp_path, monkeypatch)
    path = tmp_path / "modules.bin"
    bundle.Bundle(str(path)).save()
    before = path.read_bytes()
    assert "kcc._bundle_probe" in bundle.Bundle(str(path)).entries
    src.write_text("X = 2  # changed\n")               # the next save has a module to add

    class Full:
        def __init__(self, name: str, mode: str) -> None:
            self.f = open(name, mode)  # noqa: SIM115

        def write(self, data: bytes) -> None:
            self.f.write(data[:len(data) // 2])
            raise OSError(28, "No space left on device")

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

    monkeypatch.setattr(startup, "open", Full, raising=False)
    bundle.Bundle(str(path)).save()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.glob("modules.bin*")] == ["modules.bin"]


def test_a_damaged_module_is_left_out_at_exit_without_a_traceback(tmp_path: Path) -> None:
    """A bundle whose copy of one module's code as compiled is damaged (its stubbed code
    whole): a process that calls that module's stubs still compiles, writes no traceback at
    exit, and the bundle it saves leaves the module out (its source serves it next)."""
    root = _copy(tmp_path)
    _run(root, tmp_path / "a.o")
    [path] = _bundle_files(root)
    sys.path.insert(0, str(root))
    try:
        from kcc.bundle import Bundle
    finally:
        sys.path.remove(str(root))
    b = Bundle(str(path))
    name = "kcc.cli"
    e = b.entries[name]
    assert e[5], "kcc.cli has no stubs: the test damages nothing"
    data = bytearray(path.read_bytes())
    at = b.base + e[2] + e[5]
    data[at:at + e[6]] = b"\xff" * e[6]                 # not marshal data
    path.write_bytes(bytes(data))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(root)
    # this process reads a stub of kcc.cli (as a kernel calling a function no compile
    # before it called would), so its save makes kcc.cli's functions whole from the copy
    script = PROBE + ("import kcc.bundle as kb\n"
                      "kb._ACTIVE[0].called.setdefault('kcc.cli', set()).add(('main', 1))\n")
    p = subprocess.run([sys.executable, "-c", script, str(SAXPY), str(tmp_path / "c.o")],
                       env=env, capture_output=True, text=True, timeout=300, cwd=root)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert name not in Bundle(str(path)).entries
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "c.o").read_bytes()
