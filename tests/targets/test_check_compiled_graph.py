"""kcc/targets/check.py check_compiled_graph: a kernel whose EXP2 results are within their
2 ulp but whose arithmetic grows that error past `--check`'s 4 ulp (here exp2(x) - 2·exp2(x-1),
zero in exact arithmetic) passes when the target's buffers equal, bit for bit, the
interpreter's run of the graph the target compiled; a flipped bit in the target's result still
fails (the fallback does not hide a miscompile)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

import kcc.targets.x86.target as x86_target
from kcc.cli import main
from kcc.frontend.parser import parse
from kcc.targets.check import check_compiled_graph, check_report, compiled_graph, reference

CANCEL = """# kcc-uop 1
%x   = PARAM ParamArg(0, float32, 64)
%o   = PARAM ParamArg(1, float32, 64)
%i   = RANGE(64) (0, LOOP)                 : weakint
%xi  = INDEX(%x, %i)
%xv  = LOAD(%xi)                           : float32
%a   = EXP2(%xv)                           : float32
%xm  = ADD(%xv, -1.0)                      : float32
%b   = EXP2(%xm)                           : float32
%b2  = MUL(%b, 2.0)                        : float32
%nb  = NEG(%b2)                            : float32
%d   = ADD(%a, %nb)                        : float32
%oi  = INDEX(%o, %i)
%s   = STORE(%oi, %d)
%e   = END(%s, %i)
SINK(%e) KernelInfo(name="cancel")
"""


def kcc(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def cancel(tmp_path: Path) -> Path:
    p = tmp_path / "cancel.uop"
    p.write_text(CANCEL)
    return p


def test_the_compiled_graph_has_no_approximated_op_left(cancel: Path) -> None:
    from kcc.ir import Ops
    g = compiled_graph("x86", "x86-64-v3", parse(cancel.read_text()))
    assert not any(n.op in (Ops.EXP2, Ops.LOG2, Ops.SIN) for n in g.toposort())


@pytest.mark.parametrize("seed", ["0", "1"])
def test_grown_error_passes_by_the_compiled_graph(cancel: Path, tmp_path: Path,
                                                  seed: str) -> None:
    res = kcc("run", str(cancel), "-t", "x86", "--check", "--seed", seed,
              "-o", str(tmp_path / "o"))
    assert res.exit_code == 0, res.output
    assert "matches, bit for bit, the interpreter's run of the graph it compiled" in res.output
    assert "argument 1:" in res.output          # what differs from the kernel as written


def test_a_flipped_bit_still_fails(monkeypatch: pytest.MonkeyPatch, cancel: Path,
                                   tmp_path: Path) -> None:
    real = x86_target.launch

    def broken(obj, desc, values, threads=None):
        real(obj, desc, values, threads)
        i = int(np.flatnonzero(np.isfinite(values[1]))[0])    # (random inputs hold NaNs)
        values[1].view(np.uint32)[i] ^= np.uint32(1 << 23)

    monkeypatch.setattr(x86_target, "launch", broken)
    res = kcc("run", str(cancel), "-t", "x86", "--check", "-o", str(tmp_path / "o"))
    assert res.exit_code == 1, res.output
    assert "differs from the interpreter by more than 4 ulp" in res.stderr


def test_report_unchanged_when_the_buffers_differ_from_the_compiled_graph(cancel: Path) -> None:
    from kcc.targets.manifest import describe_kernel
    sink = parse(cancel.read_text())
    desc = describe_kernel(sink)
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    inputs = [x, np.zeros(64, np.float32)]
    want, defined = reference(sink, inputs)
    got = [x, np.full(64, 1.0, np.float32)]            # nothing like either graph's result
    rep = check_report(desc, "x86", sink, got, want, defined)
    assert not rep.ok
    assert check_compiled_graph(desc, "x86", None, sink, inputs, got, rep) is rep
