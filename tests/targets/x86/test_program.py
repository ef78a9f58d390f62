"""The x86 program runtime (kcc/targets/x86/program.py) without tinygrad: a hand-built program
of two kernels — gidx workers, a weight in .rodata, an intermediate in the workspace, more
arguments than registers — linked into a C program with cc and run in process."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kcc.encode.x86.encoder import Assembler, Label
from kcc.frontend.parser import parse
from kcc.targets.program import Launch, ProgBuffer, Program, c_header, lay_out, weights_blob

CC = shutil.which("cc")
N = 256

SCALE = """# kcc-uop 1
%t  = PARAM ParamArg(0, float32, 256)
%x  = PARAM ParamArg(1, float32, 256)
%w  = PARAM ParamArg(2, float32, 256)
%g  = SPECIAL(8) "gidx0"                    : weakint
%i  = RANGE(32) (0, LOOP)                   : weakint
%b  = MUL(%g, 32)                           : weakint
%n  = ADD(%b, %i)                           : weakint
%xi = INDEX(%x, %n)
%xv = LOAD(%xi)                             : float32
%wi = INDEX(%w, %n)
%wv = LOAD(%wi)                             : float32
%c  = CAST(2.0) float32
%y  = MUL(%xv, %c)                          : float32
%v  = ADD(%y, %wv)                          : float32
%ti = INDEX(%t, %n)
%st = STORE(%ti, %v)
%e  = END(%st, %i)
SINK(%e) KernelInfo(name="p_scale")
"""


def _many() -> str:
    """out[n] = t[n] + a1[n] + … + a7[n]: 9 buffers and gidx0, 4 arguments on the stack."""
    lines = ["# kcc-uop 1", "%o = PARAM ParamArg(0, float32, 256)",
             "%t = PARAM ParamArg(1, float32, 256)"]
    lines += [f"%a{j} = PARAM ParamArg({j + 1}, float32, 256)" for j in range(1, 8)]
    lines += ['%g = SPECIAL(4) "gidx0" : weakint', "%i = RANGE(64) (0, LOOP) : weakint",
              "%b = MUL(%g, 64) : weakint", "%n = ADD(%b, %i) : weakint",
              "%ti = INDEX(%t, %n)", "%s0 = LOAD(%ti) : float32"]
    for j in range(1, 8):
        lines += [f"%i{j} = INDEX(%a{j}, %n)", f"%l{j} = LOAD(%i{j}) : float32",
                  f"%s{j} = ADD(%s{j - 1}, %l{j}) : float32"]
    lines += ["%oi = INDEX(%o, %n)", "%st = STORE(%oi, %s7)", "%e = END(%st, %i)",
              'SINK(%e) KernelInfo(name="p_many")']
    return "\n".join(lines) + "\n"


def _program() -> tuple[Program, list, dict[int, bytes], np.ndarray]:
    bufs = [ProgBuffer(0, "in0", "input", "float32", N, [N]),
            ProgBuffer(1, "out0", "output", "float32", N, [N]),
            ProgBuffer(2, "w0", "weight", "float32", N, [N]),
            ProgBuffer(3, "w1", "weight", "float32", N, [N]),
            ProgBuffer(4, "t4", "intermediate", "float32", N, [N])]
    lay_out(bufs, "intermediate")
    lay_out(bufs, "weight")
    w0 = np.arange(N, dtype=np.float32) / 7
    w1 = np.full(N, 0.5, np.float32)
    launches = [Launch("p_scale", [4, 0, 2]), Launch("p_many", [1, 4, 3, 3, 2, 3, 3, 0, 0])]
    prog = Program("p", bufs, [], launches, [0], [1])
    x = np.linspace(-3, 3, N).astype(np.float32)
    t = x * np.float32(2) + w0
    want = t + w1 + w1 + w0 + w1 + w1 + x + x
    return prog, [parse(SCALE), parse(_many())], {2: w0.tobytes(), 3: w1.tobytes()}, \
        np.stack([x, want])


def _compiled() -> tuple[Program, bytes, np.ndarray]:
    from kcc.targets.x86.program import compile_program_x86
    prog, sinks, values, xw = _program()
    obj, _, _ = compile_program_x86(prog, sinks, weights_blob(prog, values))
    return prog, obj, xw


def test_call_to_an_undefined_label_stays_a_rel32_fixup() -> None:
    """CALL rel32 is no relaxable branch: a callee outside the code is a fixup (a branch to
    an undefined label is refused)."""
    asm = Assembler()
    asm.emit("call_rel32", Label("pthread_create"))
    code, fixups = asm.finish()
    assert code == b"\xe8\x00\x00\x00\x00"
    assert [(f.offset, f.kind, f.target, f.addend) for f in fixups] == \
        [(1, "rel32", "pthread_create", -4)]


def test_program_runs_in_process_with_libc_stubs() -> None:
    """The loader gives the object's libc calls stubs; the entry point computes the values on
    1 and 3 threads, and a misaligned workspace is refused with a message."""
    from kcc.targets.x86.objload import LoadedObject
    from kcc.targets.x86.program_run import libc_addresses
    prog, obj, (x, want) = _compiled()
    with LoadedObject(obj, libc_addresses()) as lo:
        fn = lo.function("p", ctypes.c_int, [ctypes.c_void_p] * 2)
        for threads in (1, 3, 3, 2, 1):
            lo.function("p_set_threads", None, [ctypes.c_int])(threads)
            out = np.zeros(N, np.float32)
            assert fn(x.ctypes.data, out.ctypes.data) == 0
            np.testing.assert_array_equal(out, want)
        lo.function("p_release", None, [])()
        assert lo.function("p_workspace_bytes", ctypes.c_size_t, [])() == N * 4
        ws = np.zeros(N * 4 + 64, np.uint8)
        odd = ws.ctypes.data + (1 if ws.ctypes.data % 64 == 0 else 0)
        withws = lo.function("p_with_workspace", ctypes.c_int, [ctypes.c_void_p] * 3)
        assert withws(odd, x.ctypes.data, out.ctypes.data) == 1
        err = lo.function("p_error", ctypes.c_char_p, [])()
        assert err == b"p: the workspace is NULL or not 64-byte aligned"


def _c_floats(a: np.ndarray) -> str:
    return ", ".join(f"{v!r}f" for v in a.tolist())


def _build_main(tmp_path: Path, main_c: str) -> np.ndarray:
    """The program's object and header, and main.c (main_c with `{in0}` and `{want}` replaced
    by the input's and the expected output's values) built with cc into tmp_path/main;
    returns the expected output."""
    prog, obj, (x, want) = _compiled()
    (tmp_path / "p.o").write_bytes(obj)
    (tmp_path / "p.h").write_text(c_header(prog))
    (tmp_path / "main.c").write_text(main_c.replace("{in0}", _c_floats(x))
                                     .replace("{want}", _c_floats(want)))
    subprocess.run([CC, "-Wall", "-Werror", "main.c", "p.o", "-lpthread", "-lm", "-o", "main"],
                   cwd=tmp_path, check=True)
    return want


@pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")
def test_program_object_links_with_cc_and_runs(tmp_path: Path) -> None:
    want = _build_main(tmp_path, """
#include <stdio.h>
#include <stdlib.h>
#include "p.h"
static const float in0[p_IN0_ELEMENTS] = {{in0}};
int main(int argc, char **argv) {
  float out0[p_OUT0_ELEMENTS];
  p_set_threads(atoi(argv[1]));
  void *ws = aligned_alloc(64, p_workspace_bytes());
  if (p(in0, out0) || p_with_workspace(ws, in0, out0)) return 1;
  for (int i = 0; i < p_OUT0_ELEMENTS; i++) printf("%.9g\\n", out0[i]);
  free(ws);
  p_release();
  return 0;
}
""")
    for threads in ("0", "1", "2", "7"):
        res = subprocess.run(["./main", threads], cwd=tmp_path, capture_output=True,
                             text=True, check=True)
        got = np.array([float(v) for v in res.stdout.split()], np.float32)
        np.testing.assert_array_equal(got, want)


def test_compile_prefix_renames_and_duplicates_name_both_files(tmp_path: Path) -> None:
    """kcc compile --prefix P names every kernel P_name; two inputs with one kernel name are
    refused naming both files."""
    from click.testing import CliRunner

    from kcc.cli import main
    (tmp_path / "a.uop").write_text(SCALE)
    (tmp_path / "b.uop").write_text(SCALE)
    res = CliRunner().invoke(main, ["compile", str(tmp_path / "a.uop"), str(tmp_path / "b.uop"),
                                    "-t", "x86", "-o", str(tmp_path / "k.o")])
    assert res.exit_code == 1
    assert f"{tmp_path / 'a.uop'} and {tmp_path / 'b.uop'} both define kernel 'p_scale'" \
        in res.output
    res = CliRunner().invoke(main, ["compile", str(tmp_path / "a.uop"), "-t", "x86",
                                    "--prefix", "net", "-o", str(tmp_path / "k.o")])
    assert res.exit_code == 0, res.output
    import json
    assert [k["name"] for k in json.loads((tmp_path / "k.json").read_text())["kernels"]] == \
        ["net_p_scale"]
    res = CliRunner().invoke(main, ["compile", str(tmp_path / "a.uop"), "-t", "x86",
                                    "--prefix", "1x", "-o", str(tmp_path / "k2.o")])
    assert res.exit_code == 1 and "not a C identifier" in res.output


def test_runtime_libc_names_are_reserved_program_names() -> None:
    """A program named like a libc function the runtime calls would call itself."""
    from kcc.targets.program import RESERVED, is_identifier
    from kcc.targets.x86.program import LIBC
    assert set(LIBC) <= RESERVED
    assert not is_identifier("pthread_create") and is_identifier("net")


@pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")
def test_program_object_links_into_a_shared_library(tmp_path: Path) -> None:
    """The runtime's relocations (PLT32 calls, PC-relative data) suit position-independent
    code: cc -shared takes the object, and the library's entry point runs through ctypes."""
    prog, obj, (x, want) = _compiled()
    (tmp_path / "p.o").write_bytes(obj)
    lib = tmp_path / "libp.so"
    subprocess.run([CC, "-shared", str(tmp_path / "p.o"), "-o", str(lib), "-lpthread", "-lm"],
                   check=True)
    so = ctypes.CDLL(str(lib))
    so.p_set_threads(2)
    out = np.zeros(N, np.float32)
    assert so.p(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data)) == 0
    np.testing.assert_array_equal(out, want)


@pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")
def test_worker_threads_persist_between_calls_until_released(tmp_path: Path) -> None:
    """The pool: after a call on T threads the process has T-1 more threads (counted in
    /proc/self/task), the same ones on the next call; another T replaces them, NAME_release
    joins them all, and a call after the release starts a pool again — every result right."""
    _build_main(tmp_path, """
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "p.h"
static const float in0[p_IN0_ELEMENTS] = {{in0}};
static const float want[p_OUT0_ELEMENTS] = {{want}};
static int count(void) {
  int n = 0; struct dirent *e; DIR *d = opendir("/proc/self/task");
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d); return n;
}
/* a thread pthread_join has returned for stays listed in /proc/self/task until the kernel
   reaps it (CLONE_CHILD_CLEARTID wakes the joiner before release_task), so the count is
   read until it is the expected one, for up to 2 s; a thread left running stays counted */
static int tasks(int expect) {
  int n = count();
  for (int i = 0; i < 2000 && n != expect; i++) { usleep(1000); n = count(); }
  return n;
}
static int run(int t, int expect) {
  float out0[p_OUT0_ELEMENTS];
  p_set_threads(t);
  if (p(in0, out0) || memcmp(out0, want, sizeof out0)) return -1;
  return tasks(expect);
}
int main(void) {
  int a = run(3, 3), b = run(3, 3), c = run(2, 2), d = run(1, 1);
  p_release();
  int e = tasks(1), f = run(3, 3);
  p_release();
  printf("%d %d %d %d %d %d %d\\n", a, b, c, d, e, f, tasks(1));
  return 0;
}
""")
    res = subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True, check=True,
                         timeout=60)
    assert res.stdout.split() == ["3", "3", "2", "1", "1", "3", "1"]
