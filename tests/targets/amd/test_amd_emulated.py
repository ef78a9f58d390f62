"""AMD end to end in kcc's emulator: every example, shared example and GPU-style test kernel
compiles for gfx1100 and gfx942 into a code object, runs in the emulator (which reads the
HSACO itself) and matches the reference interpreter: bit-exact, or within the documented
transcendental bound. Runs where the AMD encoder and emulator (issue 9) are in the tree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse_file
from kcc.ir import Ops
from kcc.targets.manifest import check_launch
from x86_util import REPO, SHARED, assert_same, random_inputs, reference

TRANSCENDENTAL_ULP = 4      # as tests/targets/x86/test_x86_e2e.py (docs/transcendentals.md)
KERNELS = (sorted((REPO / "examples").glob("*.uop")) + sorted((REPO / "tests" / "data" / "kernels")
                                                                .glob("*.uop"))
           + (sorted(SHARED.glob("*.uop")) if SHARED.is_dir() else []))


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
@pytest.mark.parametrize("path", KERNELS, ids=[p.stem for p in KERNELS])
def test_kernel_runs_in_the_emulator_like_the_interpreter(path: Path, arch: str) -> None:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    sink = parse_file(path)
    (code,) = compile_amd_code([sink], arch)
    data = hsaco([code])
    ulp = TRANSCENDENTAL_ULP if any(n.op in (Ops.EXP2, Ops.LOG2, Ops.SIN)
                                    for n in sink.toposort()) else 0
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        want = reference(sink, args)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        emulate(data, code.desc, check_launch(code.desc, got))
        assert_same(sink, got, want, ulp)


def test_cli_run_amd_emulates_and_points_to_emulate_without_a_gpu(tmp_path: Path,
                                                                   monkeypatch) -> None:
    from click.testing import CliRunner
    from kcc.cli import main
    from kcc.targets.amd import hip_driver
    monkeypatch.setenv("KCC_LIBAMDHIP64", str(tmp_path / "no-libamdhip64.so"))
    monkeypatch.setattr(hip_driver.Runtime, "_instance", None)
    src = str(REPO / "examples" / "local_reduce.uop")
    r = CliRunner().invoke(main, ["run", src, "-t", "amd", "--random", "-o", str(tmp_path)])
    assert r.exit_code == 1 and "--emulate" in r.output and "Traceback" not in r.output
    for arch in ("gfx1100", "gfx942"):
        r = CliRunner().invoke(main, ["run", src, "-t", "amd", "--arch", arch, "--check",
                                      "--emulate", "-o", str(tmp_path)])
        assert r.exit_code == 0 and "amd matches the interpreter" in r.output, r.output
    out = tmp_path / "k.hsaco"
    r = CliRunner().invoke(main, ["compile", "-t", "amd", src, "-o", str(out)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["disasm", str(out)])
    assert r.exit_code == 0 and "workgroup_sum:" in r.output and "s_barrier" in r.output
    monkeypatch.setattr(hip_driver.Runtime, "_instance", None)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_regression_uint8_to_int8_is_sign_extended(arch: str) -> None:
    """Found by the AMD fuzzer: CAST uint8 → int8 kept the zero-extended register (254 instead
    of -2), so a CMOD of it had the wrong sign."""
    from kcc.frontend.parser import parse
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    sink = parse("""# kcc-uop 1
%o = PARAM ParamArg(0, int8, 4)
%a = PARAM ParamArg(1, uint8, 4)
%i = RANGE(4) (0, LOOP) : weakint
%ai = INDEX(%a, %i)
%oi = INDEX(%o, %i)
%x = LOAD(%ai) : uint8
%y = CAST(%x) int8
%five = CAST(5) int8
%r = CMOD(%y, %five) : int8
%s = STORE(%oi, %r)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")
    args = [np.zeros(4, np.int8), np.array([254, 3, 128, 255], np.uint8)]
    want = reference(sink, args)
    (code,) = compile_amd_code([sink], arch)
    got = [a.copy() for a in args]
    emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
    assert got[0].tolist() == want[0].tolist() == [-2, 3, -3, -1]
