"""bench/gpu_wmma.py (the WMMA section of bench/gpu_check.py) without a GPU: the matmul it
lowers is tinygrad's tensor-core graph, which the reference interpreter computes correctly with
the arguments in the order the bench passes them; the checker tells a right result from a wrong
one; the GPU path compiles, loads and launches through the stand-in libcuda; the tinygrad-runtime
subprocess runs on tinygrad's CPU device. The numbers themselves come only from a real GPU."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tinygrad")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gpu_wmma  # noqa: E402
from fake_cuda import fake_driver  # noqa: E402, F401 (a fixture)

from kcc.frontend.parser import parse  # noqa: E402
from kcc.ir.interp import run  # noqa: E402

N = 64            # tensor cores apply (several warps a workgroup); the interpreter is quick


@pytest.fixture(scope="module")
def operands() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b = gpu_wmma.inputs(N)
    return a, b, gpu_wmma.reference(a, b)


@pytest.mark.parametrize("acc", gpu_wmma.ACCS)
def test_lowered_matmul_is_tinygrads_wmma_graph_and_computes_a_at_b(acc, operands) -> None:
    a, b, want = operands
    low = gpu_wmma.lower_matmul(N, acc, "sm_80")
    assert low.wmmas > 0 and low.slots == [0, 1, 2]
    assert b".entry " + low.name.encode() in low.ptx and b"mma.sync" in low.ptx
    assert b"TARGET" not in low.ptx                    # tinygrad's compiler filled in the sm
    assert np.prod(low.global_size) * np.prod(low.local_size) > 0
    by_slot = {0: np.zeros((N, N), np.float16), 1: a, 2: b}
    args = [by_slot[s].reshape(-1).copy() for s in low.slots]
    got = run(parse(low.uop_text), args)[low.slots.index(0)].reshape(N, N)
    ok, how = gpu_wmma.check_matmul(got, want, acc)
    assert ok, how
    # the transposed product (a swapped argument order) is caught
    assert not gpu_wmma.check_matmul(gpu_wmma.reference(b, a), want, acc)[0]


def test_checker_tolerance() -> None:
    a, b = gpu_wmma.inputs(256)
    want = gpu_wmma.reference(a, b)
    assert gpu_wmma.check_matmul(want.astype(np.float16), want, "float32")[0]
    assert not gpu_wmma.check_matmul(np.zeros_like(want), want, "float32")[0]
    nan = want.copy()
    nan[3, 4] = np.nan
    ok, how = gpu_wmma.check_matmul(nan, want, "float16")
    assert not ok and "non-finite" in how


def test_rows_skip_below_sm80() -> None:
    [(_, status, why)] = gpu_wmma.rows(75, "sm_75")
    assert status == "SKIP" and "sm_75" in why


def test_gpu_path_through_the_stand_in_driver(fake_driver, operands) -> None:
    """Compile, load, copy, launch and time through the stand-in libcuda, which runs no PTX:
    every row is produced, with the launch dimensions and entry each program needs, and the
    checker reports the untouched output as wrong."""
    a, b, want = operands
    low = gpu_wmma.lower_matmul(N, "float32", "sm_80")
    rows = gpu_wmma.run_kcc_and_ptx(low, "sm_80", a, b, want)
    assert [r[0] for r in rows] == [f"wmma {N}^3 f16 f32acc tinygrad PTX via kcc's driver",
                                    f"wmma {N}^3 f16 f32acc kcc"]
    assert all(r[1] == "MISMATCH" and "TFLOP/s" in r[2] for r in rows), rows
    # the last launch was kcc's cubin, with the grid and block of tinygrad's SPECIALs
    assert fake_driver.fake_entry().decode() == low.name
    assert fake_driver.fake_image().startswith(b"\x7fELF")
    assert list(fake_driver.fake_dims().contents) == [*low.global_size, *low.local_size]
    assert low.out_dtype == "float16"
    ratio = gpu_wmma._ratio(rows, "x")
    assert ratio[1] == "SKIP"                            # no correct pair to compare


@pytest.mark.skipif(shutil.which("clang") is None, reason="tinygrad's CPU device needs clang")
def test_tinygrad_runtime_subprocess_on_cpu(operands) -> None:
    a, b, want = operands
    label, status, how = gpu_wmma.run_tinygrad_runtime(N, "float32", a, b, want, device="CPU",
                                                       timeout=240)
    assert label.endswith("DEV=CPU") and status == "ok", how
    assert "TFLOP/s" in how and "1 kernel(s)" in how


def test_ratio_row() -> None:
    rows = [("t kcc", "ok", "100.0 TFLOP/s (1 ms); x"), ("t tinygrad A", "ok", "50.0 TFLOP/s"),
            ("t tinygrad B", "MISMATCH", "80.0 TFLOP/s")]
    assert gpu_wmma._ratio(rows, "t") == ("t kcc / tinygrad", "ok",
                                          "2.00x tinygrad's best (50.0 TFLOP/s)")


def test_rows_through_the_stand_in_driver(fake_driver) -> None:
    rows = gpu_wmma.rows(80, "sm_80", n=N, accs=("float16",), runtime=False)
    assert [r[:2] for r in rows] == [
        (f"wmma {N}^3 f16 f16acc tinygrad PTX via kcc's driver", "MISMATCH"),
        (f"wmma {N}^3 f16 f16acc kcc", "MISMATCH"),
        (f"wmma {N}^3 f16 f16acc kcc / tinygrad", "SKIP")]


def test_gpu_check_only_wmma_with_the_stand_in_driver(fake_driver, capsys) -> None:
    """gpu_check's WMMA section end to end (--only-wmma, a small size): the stand-in reports
    sm_90, the programs load and launch, every row prints, the wrong (untouched) results and
    tinygrad's runtime (which finds no real libcuda here) make the exit status 1."""
    import gpu_check
    assert gpu_check.main(["--only-wmma", f"--wmma-n={N}"]) == 1
    out = capsys.readouterr().out
    assert "device: sm_90" in out and "kernels match the interpreter" not in out
    for acc in ("f32acc", "f16acc"):
        assert f"wmma {N}^3 f16 {acc} kcc " in out
        assert f"wmma {N}^3 f16 {acc} tinygrad PTX via kcc's driver" in out
        assert f"wmma {N}^3 f16 {acc} tinygrad DEV=CUDA:PTX" in out
        assert f"wmma {N}^3 f16 {acc} kcc / tinygrad" in out
