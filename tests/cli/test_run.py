"""`kcc run`: compiled x86 vs the reference interpreter through the CLI, manifests with several
kernels, buffer shapes, the saved files, and `--check` (passing, and failing when the compiled
kernel is made to disagree)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

import kcc.targets.x86.target as x86_target
from kcc.cli import main
from kcc.targets.check import TRANSCENDENTAL_ULP
from kcc.frontend.parser import parse
from kcc.ir import Ops
from uop_texts import INC, SCALE
from x86_util import APPROX, CPU_EXAMPLES

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def kcc(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _buffer_slots(path: Path) -> list[int]:
    nodes = parse(path.read_text(), str(path)).toposort()
    return sorted(n.arg.slot for n in nodes if n.op is Ops.PARAM
                  and n.arg.addrspace.name != "ALU")


def _saved(outdir: Path) -> dict[int, np.ndarray]:
    return {int(p.stem[3:]): np.load(p) for p in outdir.glob("arg*.npy")}




def test_cpu_examples_found() -> None:
    assert len(CPU_EXAMPLES) >= 8
    assert EXAMPLES / "local_reduce.uop" not in CPU_EXAMPLES


@pytest.mark.parametrize("path", CPU_EXAMPLES, ids=lambda p: p.stem)
def test_x86_run_matches_interp_run(path: Path, tmp_path: Path) -> None:
    """--check passes, and the buffers it saves equal an --interp run on the same inputs."""
    a, b = tmp_path / "x86", tmp_path / "interp"
    res = kcc("run", str(path), "-t", "x86", "--check", "--seed", "3", "-o", str(a))
    assert res.exit_code == 0, res.output
    assert "matches the interpreter" in res.stderr
    res = kcc("run", str(path), "--interp", "--random", "--seed", "3", "-o", str(b))
    assert res.exit_code == 0, res.output
    got, want = _saved(a), _saved(b)
    slots = _buffer_slots(path)
    assert sorted(got) == sorted(want) == slots      # OUTDIR/arg{slot}.npy for every buffer
    approx = any(n.op in APPROX for n in parse(path.read_text(), str(path)).toposort())
    for s in slots:
        g, w = got[s], want[s]
        assert g.dtype == w.dtype and g.shape == w.shape
        if approx and g.dtype.kind == "f":
            np.testing.assert_array_max_ulp(g, w, maxulp=TRANSCENDENTAL_ULP)
        else:
            assert g.tobytes() == w.tobytes(), f"slot {s}"


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One object (and manifest) holding two kernels, scale and inc."""
    d = tmp_path_factory.mktemp("two")
    (d / "scale.uop").write_text(SCALE)
    (d / "inc.uop").write_text(INC)
    res = kcc("compile", str(d / "scale.uop"), str(d / "inc.uop"), "-t", "x86",
              "-o", str(d / "two.o"))
    assert res.exit_code == 0, res.output
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    np.save(d / "x.npy", x)
    np.save(d / "out.npy", np.full(16, 7, np.float32))
    return d


def test_multi_kernel_manifest_runs_each(two: Path, tmp_path: Path) -> None:
    x = np.load(two / "x.npy")
    m, out, xs = str(two / "two.json"), str(two / "out.npy"), str(two / "x.npy")
    res = kcc("run", m, "--kernel", "scale", "-o", str(tmp_path / "s"), "--", out, xs,
              "-1.5", "3")
    assert res.exit_code == 0, res.output
    # oracle: numpy in float32 (x * s is one rounding, + 3 another, as the graph says)
    want = (x * np.float32(-1.5)) + np.float32(3)
    assert np.load(tmp_path / "s" / "arg0.npy").tobytes() == want.tobytes()
    res = kcc("run", m, "--kernel", "inc", "-o", str(tmp_path / "i"), out, xs)
    assert res.exit_code == 0, res.output
    assert np.load(tmp_path / "i" / "arg0.npy").tobytes() == (x + np.float32(1)).tobytes()
    # inputs are saved back unchanged
    assert np.load(tmp_path / "i" / "arg1.npy").tobytes() == x.tobytes()


@pytest.mark.parametrize("shape", [(16,), (4, 4), (2, 2, 4), (1, 16, 1)])
def test_any_shape_with_the_right_count(two: Path, tmp_path: Path, shape: tuple) -> None:
    x = np.load(two / "x.npy").reshape(shape)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "o.npy", np.zeros(shape, np.float32))
    res = kcc("run", str(two / "two.json"), "--kernel", "inc", "-o", str(tmp_path / "r"),
              str(tmp_path / "o.npy"), str(tmp_path / "x.npy"))
    assert res.exit_code == 0, res.output
    got = np.load(tmp_path / "r" / "arg0.npy")
    assert got.reshape(-1).tobytes() == (x.reshape(-1) + np.float32(1)).tobytes()


def test_fortran_order_npy_is_read_as_its_values(two: Path, tmp_path: Path) -> None:
    # a Fortran-order .npy loads as a non-C-contiguous array; the CLI copies it to C order
    x = np.asfortranarray(np.load(two / "x.npy").reshape(4, 4))
    assert not x.flags.c_contiguous
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "o.npy", np.zeros(16, np.float32))
    res = kcc("run", str(two / "two.json"), "--kernel", "inc", "-o", str(tmp_path / "r"),
              str(tmp_path / "o.npy"), str(tmp_path / "x.npy"))
    assert res.exit_code == 0, res.output
    got = np.load(tmp_path / "r" / "arg0.npy").reshape(-1)
    assert got.tobytes() == (np.ascontiguousarray(x).reshape(-1) + np.float32(1)).tobytes()


@pytest.mark.parametrize("example,slot,bit", [
    ("saxpy", 0, 0),               # bit-exact kernel: the last mantissa bit is a failure
    ("transcendental", 2, 23),     # ulp-tolerant kernel: an exponent bit is still a failure
    ("casts", 0, 0),
])
def test_check_fails_when_the_object_disagrees(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path, example: str, slot: int,
                                               bit: int) -> None:
    """--check exits 1 when the compiled kernel's result differs from the interpreter: the
    real launch runs, then one bit of one output element is flipped (a miscompile)."""
    real = x86_target.launch

    def broken(obj, desc, values, threads=None):
        real(obj, desc, values, threads)
        out = values[slot]
        out.view(f"u{out.itemsize}")[5] ^= out.view(f"u{out.itemsize}").dtype.type(1 << bit)

    monkeypatch.setattr(x86_target, "launch", broken)
    res = kcc("run", str(EXAMPLES / f"{example}.uop"), "-t", "x86", "--check",
              "-o", str(tmp_path / "o"))
    assert res.exit_code == 1, res.output
    assert "differs from the interpreter" in res.stderr
    assert f"argument {slot}" in res.stderr
    assert "1 element differ, the first at index 5" in res.stderr, res.stderr
    # both sides' buffers are kept for a look
    got = np.load(tmp_path / "o" / f"arg{slot}.npy")
    want = np.load(tmp_path / "o" / f"arg{slot}.interp.npy")
    assert got.view(f"u{got.itemsize}")[5] != want.view(f"u{want.itemsize}")[5]


def test_check_needs_a_uop(two: Path) -> None:
    res = kcc("run", str(two / "two.json"), "--kernel", "inc", "--check")
    assert res.exit_code == 1 and "--check needs a .uop" in res.stderr
