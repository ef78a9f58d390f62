"""Benchmark: kcc's process start-up, against a bare Python in the same run.

    python bench/startup.py [--runs 21] [--also DIR] [FILE]   # FILE: examples/saxpy.uop
    python bench/startup.py /tmp/tg/softmax/k001_*.uop          # a capture, with its .c

Runs, interleaved round-robin, `python -c pass` (the floor every `kcc` process pays),
`kcc --version`, `kcc compile FILE -t x86` (object and manifest into a temporary folder) and
clang compiling the same kernel's C as tinygrad does (bench/compile_time.py's CLANG command:
FILE's sibling `.c` from `bench/tinygrad_x86.py --capture-dir`, or for saxpy.uop the loop
tinygrad's C renderer writes for it), each as a fresh process (`python -m kcc.cli`, this
checkout first on PYTHONPATH). Prints the median and the minimum wall time of each, its median
CPU time (user + system, steadier than wall time on a loaded host), and kcc's wall time above
the bare interpreter. Bytecode
is cached under a temporary PYTHONPYCACHEPREFIX (warmed first) even where
PYTHONDONTWRITEBYTECODE is set, so the numbers are those of an installed kcc, not of
recompiling every module. `--also DIR` adds the same two kcc rows for another checkout of kcc
(e.g. `git worktree add /tmp/before <commit>`), interleaved in the same run.

`--installed` adds the process a user of a plain `pip install .` runs: each checkout's kcc
package copied into a fresh virtual environment's site-packages (`python -m venv
--without-pip`), byte-compiled as pip does, and the console script pip writes for
`[project.scripts] kcc = "kcc.cli:main"` (`#!<venv>/bin/python`, `from kcc.cli import main`),
run with no PYTHONPATH; and that environment's `python -c pass`. An editable install's
`python -c pass` (`pip install -e .`, setuptools' finder) imports pathlib, re and importlib.util
at every start-up, so the rows above include ~10 ms that a plain install does not pay.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_time import CLANG  # noqa: E402   (bench/compile_time.py, beside this script)

# examples/saxpy.uop as tinygrad's C renderer writes such a kernel (restrict pointers, the
# scalar as the last argument, one loop)
SAXPY_C = """void saxpy(float* restrict data0_1024, float* restrict data1_1024, float data2_1) {
  for (int ridx0 = 0; ridx0 < 1024; ridx0++) {
    float val0 = *(data1_1024+ridx0);
    float val1 = *(data0_1024+ridx0);
    *(data0_1024+ridx0) = ((data2_1*val0)+val1);
  }
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", type=Path, default=REPO / "examples" / "saxpy.uop")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--also", type=Path, help="another kcc checkout to time in the same run")
    ap.add_argument("--installed", action="store_true",
                    help="also time each checkout as a plain install's console script")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcc-startup-") as folder:
        _run(a, Path(folder))


def _run(a: argparse.Namespace, tmp: Path) -> None:
    """The interleaved runs in folder tmp (objects, bytecode caches), and the table."""
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    py = [sys.executable]
    cmds: dict[str, tuple[list[str], dict[str, str]]] = {"python -c pass": (py + ["-c", "pass"],
                                                                            base_env)}
    for i, tree in enumerate([REPO] + ([a.also.resolve()] if a.also else [])):
        env = dict(base_env, PYTHONPATH=os.pathsep.join(
            [str(tree), base_env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            PYTHONPYCACHEPREFIX=str(tmp / f"pyc{i}"))
        tag = "" if tree == REPO else f" ({tree})"
        cmds[f"kcc --version{tag}"] = (py + ["-m", "kcc.cli", "--version"], env)
        cmds[f"kcc compile {a.file.name} -t x86{tag}"] = (
            py + ["-m", "kcc.cli", "compile", str(a.file.resolve()), "-t", "x86", "-o",
                  str(tmp / f"k{i}.o")], env)
    if a.installed:
        for i, tree in enumerate([REPO] + ([a.also.resolve()] if a.also else [])):
            venv = _plain_install(tree, tmp / f"venv{i}")
            env = {k: v for k, v in base_env.items()
                   if k not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX")}
            tag = "" if tree == REPO else f" ({tree})"
            if i == 0:
                cmds["python -c pass (plain venv)"] = ([str(venv / "bin" / "python"), "-c",
                                                        "pass"], env)
            cmds[f"installed kcc compile {a.file.name} -t x86{tag}"] = (
                [str(venv / "bin" / "kcc"), "compile", str(a.file.resolve()), "-t", "x86",
                 "-o", str(tmp / f"i{i}.o")], env)
    c_file = a.file.with_suffix(".c")
    c_src = c_file.read_bytes() if c_file.exists() else \
        SAXPY_C.encode() if a.file.name == "saxpy.uop" else None
    if c_src is not None:
        cmds[f"clang -O2 (tinygrad's command) on {a.file.stem}'s C"] = (CLANG, base_env)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    cpu: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(2):                      # warm the bytecode cache and the page cache
        for c, env in cmds.values():
            subprocess.run(c, env=env, cwd=tmp, check=True, capture_output=True,
                           input=c_src if c is CLANG else None)
    for _ in range(a.runs):
        for k, (c, env) in cmds.items():
            r0, t0 = _child_cpu(), time.perf_counter()
            subprocess.run(c, env=env, cwd=tmp, check=True, capture_output=True,
                           input=c_src if c is CLANG else None)
            times[k].append((time.perf_counter() - t0) * 1e3)
            cpu[k].append((_child_cpu() - r0) * 1e3)
    base = statistics.median(times["python -c pass"])
    print(f"| process ({a.runs} runs, interleaved) | median ms | min ms | CPU ms (median) | "
          "median above `python -c pass` |")
    print("|---|---|---|---|---|")
    for k, ts in times.items():
        above = "–" if k.startswith(("python", "clang", "installed")) else \
            f"{statistics.median(ts) - base:.0f} ms"
        print(f"| `{k}` | {statistics.median(ts):.0f} | {min(ts):.0f} | "
              f"{statistics.median(cpu[k]):.0f} | {above} |")


def _plain_install(tree: Path, venv: Path) -> Path:
    """A virtual environment at venv holding tree's kcc package as `pip install .` lays it
    out (the package in site-packages, byte-compiled, and pip's console script)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    shutil.copytree(tree / "kcc", Path(site) / "kcc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([str(py), "-m", "compileall", "-q", str(Path(site) / "kcc")], check=True)
    script = venv / "bin" / "kcc"           # what pip writes for kcc = "kcc.cli:main"
    script.write_text(f"#!{py}\nimport sys\nfrom kcc.cli import main\n"
                      "if __name__ == '__main__':\n"
                      "    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n"
                      "    sys.exit(main())\n")
    script.chmod(0o755)
    return venv


def _child_cpu() -> float:
    """User + system seconds of the finished child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


if __name__ == "__main__":
    main()
