"""Process start-up (issue 11): `kcc --version` imports no back end, no parser, no numpy, and a
small x86 compile imports no numpy, capstone or pyelftools. These are properties of what a
fresh interpreter has in sys.modules, not timings (bench/startup.py measures the time).

Constant folding without numpy (kcc.ir.consts: integer casts and float rounding in Python) must
agree with the interpreter's numerics (kcc.ir.numerics, numpy), which it replaced on that path.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcc_process import modules_after

from kcc.ir import numerics as nm
from kcc.ir.consts import _convert, round_float
from kcc.ir.dtype import dtypes

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "examples" / "saxpy.uop"
HEAVY = ("numpy", "capstone", "elftools")


def test_version_imports_no_back_end_parser_or_numpy(tmp_path: Path) -> None:
    mods = modules_after("--version", cwd=tmp_path)
    assert "kcc.targets.registry" in mods          # the CLI ran
    for m in HEAVY + ("kcc.ir", "kcc.frontend.parser", "kcc.passes", "kcc.targets.pipeline",
                      "kcc.targets.x86", "kcc.targets.cuda", "kcc.targets.amd"):
        assert m not in mods, f"kcc --version imported {m}"


def test_help_imports_no_back_end(tmp_path: Path) -> None:
    mods = modules_after("compile", "--help", cwd=tmp_path)
    assert not {"numpy", "kcc.ir", "kcc.targets.x86.target", "kcc.targets.cuda.target"} & mods


def test_small_x86_compile_imports_no_numpy_capstone_or_elftools(tmp_path: Path) -> None:
    mods = modules_after("compile", str(SAXPY), "-t", "x86", "-o", str(tmp_path / "s.o"),
                         cwd=tmp_path)
    assert (tmp_path / "s.o").read_bytes()[:4] == b"\x7fELF"      # it did compile
    assert "kcc.targets.x86.target" in mods
    for m in HEAVY + ("kcc.targets.cuda.target", "kcc.targets.amd.target", "kcc.ir.interp",
                      "kcc.passes.transcendental", "decimal", "fractions"):
        assert m not in mods, f"compiling saxpy for x86 imported {m}"


# what the x86 compile path leaves out (issue 24, item 4): click (the fast front end parses the
# command line, kcc/cli.py), inspect and what it imports (dataclasses' stand-in,
# kcc/startup.py; PatternMatcher reads a rule's parameters from its code), the other targets,
# the interpreter, the disassembler and the encoders' decoders
NOT_ON_THE_X86_PATH = ("click", "kcc.cli_click", "inspect", "ast", "dis", "tokenize", "msgpack",
                       "kcc.targets.x86.disasm", "kcc.encode.amd", "kcc.isel.amd",
                       "kcc.isel.ptx", "kcc.targets.amd", "kcc.targets.cuda", "kcc.ir.interp",
                       "kcc.frontend.printer", "difflib", "locale", "datetime", "uuid",
                       "platform", "gettext", "threading", "argparse", "subprocess",
                       "kcc.passes.division", "kcc.passes.division64",
                       # imported where a kernel needs them (saxpy does not): a reduction,
                       # a rerolled loop, a division by a constant, SPECIAL dimensions,
                       # per-lane gates, strided loads
                       "kcc.passes.widen_reduce", "kcc.passes.widen_reroll", "kcc.ir.divmagic",
                       "kcc.targets.dims", "kcc.passes.gates_lanes", "kcc.passes.widen_stride",
                       # imported where an allocation sizes slots or coalesces copies (saxpy
                       # does neither)
                       "kcc.regalloc.unionfind",
                       # `kcc run`'s paths, reading a manifest or an object's facts, the x86
                       # launch, the other commands: split from driver, manifest, facts,
                       # x86/target and commands so that a compile does not load their code
                       "kcc.targets.runner", "kcc.targets.manifest_check",
                       "kcc.targets.facts_read", "kcc.targets.x86.workers", "kcc.commands_more")


def test_x86_compile_path_imports_no_click_inspect_or_other_target(tmp_path: Path) -> None:
    mods = modules_after("compile", str(SAXPY), "-t", "x86", "-o", str(tmp_path / "s.o"),
                         cwd=tmp_path)
    assert (tmp_path / "s.o").read_bytes()[:4] == b"\x7fELF"      # it did compile
    assert {"kcc.commands", "kcc.targets.x86.target", "kcc.record"} <= mods
    imported = sorted(m for m in mods if m in NOT_ON_THE_X86_PATH or
                      m.startswith(tuple(f"{n}." for n in NOT_ON_THE_X86_PATH)))
    assert imported == [], f"compiling saxpy for x86 imported {imported}"


def test_x86_compile_path_imports_no_pathlib_typing_or_importlib_util(tmp_path: Path) -> None:
    """pathlib (with urllib.parse, ipaddress and fnmatch: kcc/targets/pathtext.py answers for
    it), typing (kcc's modules import it for type checkers only) and importlib.util are not
    imported by a compile. Run without site (`-S`): an editable install's finder, which site
    loads, imports pathlib and importlib.util itself."""
    code = ("import sys\n"
            f"sys.argv = ['kcc', 'compile', {str(SAXPY)!r}, '-t', 'x86', '-o', "
            f"{str(tmp_path / 's.o')!r}]\n"
            "from kcc.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "mods = sorted(sys.modules)\n"      # (before this probe's own json import)
            "import json\n"
            "print(json.dumps(mods), file=sys.stderr)\n")
    # the second of two processes, as an installed kcc runs: its start-up caches written by
    # the first (without them, kcc's regexes are compiled by re)
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(tmp_path / "pyc"))
    env.pop("KCC_CHECK_ALLOC", None)    # as a user runs it (tests/conftest.py sets it)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for _ in range(2):
        p = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                           cwd=tmp_path, env=env, timeout=300)
    mods = set(json.loads(p.stderr.strip().splitlines()[-1]))
    assert (tmp_path / "s.o").read_bytes()[:4] == b"\x7fELF"      # it did compile
    assert "site" not in mods and "kcc.targets.x86.target" in mods
    for m in ("pathlib", "urllib", "urllib.parse", "ipaddress", "fnmatch", "importlib.util",
              "typing") + NOT_ON_THE_S_PATH:
        assert m not in mods, f"compiling saxpy for x86 imported {m}"
    assert (tmp_path / "s.json").read_text().startswith('{\n  "format": "kcc-manifest"')


# nor, since the classes of the compile path are kcc.record's (kcc/record.py), the manifest
# and launch facts are written by kcc/targets/jsontext.py, the collector's pause is a class and
# kcc's regexes load their programs (kcc.startup.regex): dataclasses (with copy and inspect's
# stand-in), json, re (with its parser and compiler) and contextlib; and, since kcc's
# enumerations are kcc.symbols classes and its named tuples and counts kcc.record's, enum (with
# functools), the collections package (with keyword, operator and reprlib) and weakref; nor the
# x86 table's templates (kcc/encode/x86/rows.py: the table is loaded from the cache); nor, since
# kcc takes heapq's, bisect's and struct's functions from their C modules, MappingProxyType,
# CodeType and FunctionType as the types of objects at hand and verify's memo of SINKs is a dict
# of weak references, the Python modules heapq, bisect, struct, types and _weakrefset
NOT_ON_THE_S_PATH = ("dataclasses", "copy", "inspect", "json", "json.decoder", "json.encoder",
                     "json.scanner", "re", "re._parser", "re._compiler", "contextlib", "enum",
                     "functools", "collections", "collections.abc", "keyword", "operator",
                     "reprlib", "weakref", "kcc.encode.x86.rows", "heapq", "bisect", "struct",
                     "types", "_weakrefset")


def test_a_transcendental_kernel_imports_its_decomposition(tmp_path: Path) -> None:
    """The lazily imported EXP2/LOG2/SIN polynomials are there when a kernel needs them."""
    src = REPO / "examples" / "transcendental.uop"
    mods = modules_after("compile", str(src), "-t", "x86", "-o", str(tmp_path / "t.o"),
                         cwd=tmp_path)
    assert (tmp_path / "t.o").read_bytes()[:4] == b"\x7fELF"
    assert "kcc.passes.transcendental" in mods
    assert "numpy" not in mods          # its float constant folds are Python's (simplify)


EXP2_ONLY = """# kcc-uop 1
%x   = PARAM ParamArg(0, float32, 16)
%o   = PARAM ParamArg(1, float32, 16)
%i   = RANGE(16) (0, LOOP)                 : weakint
%xi  = INDEX(%x, %i)
%xv  = LOAD(%xi)                           : float32
%e   = EXP2(%xv)                           : float32
%oi  = INDEX(%o, %i)
%st  = STORE(%oi, %e)
%end = END(%st, %i)
SINK(%end) KernelInfo(name="exp2_only")
"""


def test_exp2_decomposition_folds_its_nan_without_numpy(tmp_path: Path) -> None:
    """EXP2's decomposition folds CAST(nan) float32: without numpy (round_float keeps a quiet
    NaN whose payload float32 holds), which a tinygrad softmax's compile imported for it."""
    src = tmp_path / "e.uop"
    src.write_text(EXP2_ONLY)
    mods = modules_after("compile", str(src), "-t", "x86", "-o", str(tmp_path / "e.o"),
                         cwd=tmp_path)
    assert (tmp_path / "e.o").read_bytes()[:4] == b"\x7fELF"
    assert "kcc.passes.transcendental" in mods and "numpy" not in mods


INT_DTYPES = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32,
              dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.weakint]


def _numerics(v: int | float | bool, src, dt) -> int | float | bool:
    """The conversion as the interpreter's numerics compute it (the numpy path)."""
    with np.errstate(all="ignore"):
        c = nm.cast(nm.const_array(v, src), src, dt)
    if dt.is_bool:
        return bool(c)
    return float(c) if dt.is_float else int(c)


def _in(dt, v: int) -> int | bool:
    """v wrapped into dt's values (a constant of dt holds one)."""
    if dt.is_bool:
        return bool(v & 1)
    return _numerics(v, dtypes.weakint, dt) if dt != dtypes.weakint else \
        ((v + 2**63) % 2**64) - 2**63


@settings(max_examples=400, deadline=None)
@given(st.integers(-2**70, 2**70), st.sampled_from(INT_DTYPES), st.sampled_from(INT_DTYPES))
def test_integer_casts_without_numpy_match_numerics(v: int, src, dt) -> None:
    x = _in(src, v)
    got, want = _convert(x, src, dt), _numerics(x, src, dt)
    assert got == want and type(got) is type(want), (x, src, dt, got, want)


FLOATS = st.one_of(st.floats(allow_nan=False, width=64),
                   st.floats(-3.5e38, 3.5e38, allow_nan=False),
                   st.sampled_from([3.4028235677973366e38, 3.4028235677973362e38,
                                    -3.4028235677973366e38, 3.4028234663852886e38,
                                    1.401298464324817e-45, 7.006492321624085e-46,
                                    7.006492321624087e-46, 0.0, -0.0])
                   )


@settings(max_examples=400, deadline=None)
@given(FLOATS, st.sampled_from([dtypes.weakfloat, dtypes.float64, dtypes.float32,
                                dtypes.float16]),
       st.sampled_from([dtypes.float32, dtypes.float64]))
def test_float_rounding_without_numpy_matches_numerics(v: float, src, dt) -> None:
    x = _numerics(v, dtypes.weakfloat, src) if src != dtypes.weakfloat else v
    got, want = _convert(x, src, dt), _numerics(x, src, dt)
    assert math.copysign(1, got) == math.copysign(1, want)
    assert got == want, (x, src, dt, got, want)
    r = round_float(x, dt)
    assert r is None or (r == want and math.copysign(1, r) == math.copysign(1, want))


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 1), st.integers(0, 1), st.integers(0, (1 << 51) - 1))
def test_nan_to_float32_without_numpy_matches_numerics_bit_for_bit(sign: int, quiet: int,
                                                                    payload: int) -> None:
    """A NaN folded to float32 without numpy has numpy's bits, or is left to numpy (None)."""
    if not quiet and payload == 0:
        payload = 1                                  # (that would be an infinity)
    x = _f64(sign << 63 | 0x7FF << 52 | quiet << 51 | payload)
    want = _numerics(x, dtypes.float64, dtypes.float32)
    r = round_float(x, dtypes.float32)
    assert r is None or _bits(r) == _bits(want), (hex(_bits(x)), r, want)
    assert _bits(_convert(x, dtypes.float64, dtypes.float32)) == _bits(want)
    if quiet and payload & ((1 << 29) - 1) == 0:
        assert r is not None                         # the common NaNs fold without numpy
    for canonical in (math.nan, -math.nan, float("nan")):
        assert _bits(round_float(canonical, dtypes.float32)) == \
            _bits(_numerics(canonical, dtypes.float64, dtypes.float32))


@settings(max_examples=300, deadline=None)
@given(st.integers(-2**53, 2**53), st.sampled_from([dtypes.float32, dtypes.float64]),
       st.sampled_from([dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.weakint]))
def test_int_to_float_without_numpy_matches_numerics(v: int, dt, src) -> None:
    x = _in(src, v)
    assert _convert(x, src, dt) == _numerics(x, src, dt)


def test_version_is_the_package_version() -> None:
    from importlib import metadata

    import kcc
    p = subprocess.run([sys.executable, "-m", "kcc.cli", "--version"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == f"kcc, version {kcc.__version__}"
    try:
        installed = metadata.version("kcc")
    except metadata.PackageNotFoundError:
        pytest.skip("kcc is not installed (pip install -e .): no metadata to compare with")
    assert installed == kcc.__version__


def test_own_process_exits_without_finalization_after_writing_everything(
        tmp_path: Path) -> None:
    """`python -m kcc.cli compile` (kcc's own process) ends with os._exit after a command
    succeeded (kcc/cli.py _exit_now): its atexit handlers still run (the bundle and the
    caches are written under the bytecode folder), stdout is flushed whole, the status is 0."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(tmp_path / "pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    p = subprocess.run([sys.executable, "-m", "kcc.cli", "compile", str(SAXPY), "-t", "x86",
                        "-o", "-"], capture_output=True, cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    subprocess.run([sys.executable, "-m", "kcc.cli", "compile", str(SAXPY), "-t", "x86",
                    "-o", str(tmp_path / "s.o")], cwd=tmp_path, env=env, timeout=300,
                   check=True, capture_output=True)
    assert p.stdout == (tmp_path / "s.o").read_bytes()
    assert p.stderr.decode().startswith("wrote standard output")
    for cache in ("modules.*.bin", "record-methods.*.bin", "regex.*.bin"):
        assert list((tmp_path / "pyc").rglob(cache)), cache


@pytest.mark.parametrize("script", ["host.py", "kcc"])
def test_a_host_that_calls_main_runs_on_after_it(tmp_path: Path, script: str) -> None:
    """A program that calls kcc.cli.main() with no arguments (so main() reads sys.argv) and
    catches its SystemExit runs on: only kcc's own process ends with os._exit
    (kcc/cli.py _console_script), even when the host's file is named kcc."""
    host = tmp_path / script
    host.write_text("import sys\nfrom kcc.cli import main as run_kcc\n"
                    "try:\n    run_kcc()\nexcept SystemExit as e:\n"
                    "    print('kcc exited', e.code, flush=True)\n"
                    "open(sys.argv[-1] + '.after', 'w').write('ran on')\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = tmp_path / "s.o"
    p = subprocess.run([sys.executable, str(host), "compile", str(SAXPY), "-t", "x86", "-o",
                        str(out)], capture_output=True, cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().splitlines() == ["kcc exited 0"]
    assert out.read_bytes()[:4] == b"\x7fELF"
    assert (tmp_path / "s.o.after").read_text() == "ran on"


def test_console_script_detection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """kcc's own program: the console script (file kcc, its main kcc.cli.main, run as the
    program) or `-m kcc.cli`; not a host whose module is run with -m or named otherwise."""
    import types

    from kcc import cli

    def as_main(path: str | None, main: object, spec_name: str | None = None) -> bool:
        top = types.ModuleType("__main__")
        if path is not None:
            top.__file__ = path
        top.__spec__ = types.SimpleNamespace(name=spec_name) if spec_name else None
        top.main = main
        monkeypatch.setitem(sys.modules, "__main__", top)
        monkeypatch.setattr(sys, "argv", [path or "-c", "compile"])
        return cli._console_script()

    assert as_main("/venv/bin/kcc", cli.main)
    assert as_main("/x/kcc/cli.py", None, "kcc.cli")
    assert not as_main("/x/host.py", cli.main)
    assert not as_main("/x/kcc", object())
    assert not as_main("/x/host.py", cli.main, "host")
    assert not as_main(None, cli.main)
    # run by a relative path (`./venv/bin/kcc`): argv[0] as typed, __file__ absolute
    monkeypatch.chdir(tmp_path)
    assert as_main(str(tmp_path / "venv" / "bin" / "kcc"), cli.main)
    sys.argv[0] = os.path.join("venv", "bin", "kcc")
    assert cli._console_script()
    sys.argv[0] = os.path.join("other", "kcc")
    assert not cli._console_script()
