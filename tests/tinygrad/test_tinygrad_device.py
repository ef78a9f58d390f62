"""DEV=CPU:KCC: tinygrad's CPU device with kcc's x86 back end compiling every kernel.

Oracle: the same computation on tinygrad's default CPU device (clang). Integer results,
selections and tinygrad's random generator must match bit for bit; float results to a few ulps
(clang contracts a*b+c into FMAs, kcc rounds every op: docs/tinygrad.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tinygrad_util import needs_tinygrad

pytestmark = needs_tinygrad
ROOT = Path(__file__).resolve().parents[2]


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
           "HOME": str(tmp)}
    env.update(extra)
    return env


def _on(dev: str, fn, seed: int = 0) -> list[np.ndarray]:
    from tinygrad.helpers import Context
    with Context(DEV=dev, PARALLEL=0):
        return fn(np.random.default_rng(seed))


def _names() -> list[str]:
    from tinygrad_suite import SUITE
    return list(SUITE)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """name -> (tinygrad's clang results, the capture directory of that run), computed once:
    the reference run on DEV=CPU is captured, so its kernels are checked on their own too."""
    import kcc.tinygrad
    from tinygrad_suite import SUITE
    from tinygrad.helpers import Context
    done: dict[str, tuple[list[np.ndarray], Path]] = {}

    def get(name: str) -> tuple[list[np.ndarray], Path]:
        if name not in done:
            out = tmp_path_factory.mktemp(name)
            with Context(DEV="CPU", PARALLEL=0), kcc.tinygrad.capture(out):
                want = SUITE[name](np.random.default_rng(0))
            done[name] = (want, out)
        return done[name]
    return get


def _same(name: str, got: np.ndarray, want: np.ndarray, what: str) -> None:
    from tinygrad_suite import EXACT
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if name in EXACT or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        # a few ulps of the result's scale: a long dot product near zero cancels, and clang
        # contracts a*b+c into an FMA where kcc rounds the product
        fin = np.abs(want[np.isfinite(want)]).astype(np.float64)
        scale = max(1.0, float(fin.max())) if fin.size else 1.0
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6 * scale, err_msg=what)


@pytest.mark.parametrize("name", _names())
def test_kcc_matches_tinygrad_clang(name: str, reference) -> None:
    from tinygrad_suite import SUITE
    from tinygrad import Device
    from tinygrad.helpers import Context
    want, _ = reference(name)
    got = _on("CPU:KCC", SUITE[name])
    with Context(DEV="CPU:KCC"):
        assert type(Device["CPU"].renderer).__name__ == "KCCRenderer"
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        _same(name, g, w, f"{name} result {i}")


@pytest.mark.parametrize("name", _names())
def test_captured_kernels_run_on_x86_like_tinygrad(name: str, reference) -> None:
    """Every kernel of the reference run, compiled ahead of time from its .uop, reproduces
    the buffers tinygrad's clang path wrote."""
    from tinygrad_util import load_capture, run_captured_x86
    _, out = reference(name)
    kernels = load_capture(out)["kernels"]
    assert kernels
    if name == "matmul_threads":
        from tinygrad.helpers import NUM_CPU_THREADS
        if NUM_CPU_THREADS.value > 1:      # tinygrad split it over threads: kcc's gidx0
            assert any(k["workers"] == NUM_CPU_THREADS.value for k in kernels)
    for k in kernels:
        assert k["error"] is None, k["error"]
        for slot, (g, w) in run_captured_x86(out, k).items():
            _same(name, g, w, f"{k['name']} arg {slot}")


@pytest.mark.parametrize("name", _names())
def test_captured_kernels_in_the_interpreter_like_tinygrad(name: str, reference) -> None:
    """The reference interpreter computes tinygrad's results from every captured graph: the
    CPU-path one and the PTX- and HIP-style lowerings (which no GPU runs here)."""
    from kcc.frontend.parser import parse
    from kcc.ir.interp import run
    from tinygrad_util import load_capture
    _, out = reference(name)
    for k in load_capture(out)["kernels"]:
        for file in (k["uop"], k["gpu"]["ptx"], k["gpu"]["hip"]):
            args = [np.load(out / a["in"]).copy() if a["kind"] == "buffer"
                    else np.dtype(a["dtype"]).type(a["value"]) for a in k["args"]]
            res = run(parse((out / file).read_text(), file), args)
            for a in k["args"]:
                if "out" in a:
                    _same(name, res[a["slot"]], np.load(out / a["out"]), f"{file} arg {a['slot']}")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) not on PATH")
@pytest.mark.parametrize("name", _names())
def test_captured_gpu_style_kernels_compile_for_cuda(name: str, reference,
                                                      tmp_path: Path) -> None:
    """The PTX-style lowering of every captured kernel compiles for CUDA and ptxas accepts
    it; the HIP-style lowering passes kcc's verifier and, where kcc has an AMD target,
    compiles for it."""
    from kcc.frontend.parser import parse
    from kcc.targets import registry
    from kcc.targets.cuda.target import compile_cuda
    from tinygrad_util import load_capture
    _, out = reference(name)
    for k in load_capture(out)["kernels"]:
        for style in ("ptx", "hip"):
            assert k["gpu"].get(style), k["gpu"].get(f"{style}_error")
        sink = parse((out / k["gpu"]["ptx"]).read_text(), k["gpu"]["ptx"])
        hip = parse((out / k["gpu"]["hip"]).read_text(), k["gpu"]["hip"])
        if "amd" in registry.names():
            amd = registry.get("amd")
            assert amd.compile([hip], amd.default_arch, amd.default_emit).data
        ptx, _ = compile_cuda([sink], "sm_80", "ptx")
        src = tmp_path / f"{k['index']}.ptx"
        src.write_bytes(ptx)
        r = subprocess.run(["ptxas", "-arch=sm_80", str(src), "-o", str(src) + ".cubin"],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{k['gpu']['ptx']}: {r.stderr}"


def test_float_to_int_casts_saturate_in_kcc() -> None:
    """Where C leaves an out-of-range float->int conversion undefined, kcc saturates
    (docs/semantics.md): checked against the values, not against clang."""
    import kcc.tinygrad  # noqa: F401
    from tinygrad import Tensor, dtypes
    from tinygrad.helpers import Context
    vals = np.array([-1e10, -300.0, -1.5, 300.0, 1e10, np.nan], np.float32)
    with Context(DEV="CPU:KCC", PARALLEL=0):
        i32 = Tensor(vals).cast(dtypes.int32).numpy()
        u8 = Tensor(vals).cast(dtypes.uint8).numpy()
    assert i32.tolist() == [-2**31, -300, -1, 300, 2**31 - 1, 0]
    assert u8.tolist() == [0, 0, 0, 255, 255, 0]


def test_integer_division_by_a_tensor_of_minus_one() -> None:
    """tinygrad's test_div_rounding_mode case (issue 20, §2): the divisor's -1 test was hoisted
    out of the loop without its SETcc, so only the first quotient was negated."""
    import kcc.tinygrad  # noqa: F401
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    x = [5, 6, 7, 0, -5, -6, -7]
    with Context(DEV="CPU:KCC", PARALLEL=0):
        for mode in ("trunc", "floor"):
            got = Tensor(x).div(Tensor([-1]), rounding_mode=mode).numpy()
            assert got.tolist() == [-v for v in x], mode
        assert (Tensor(x) % Tensor([-1])).numpy().tolist() == [0] * 7


def test_dev_env_and_spawned_compile_workers(tmp_path: Path) -> None:
    """DEV=CPU:KCC from the environment, several kernels compiled in tinygrad's spawned
    worker processes (PARALLEL=2), which import kcc.tinygrad again to unpickle the renderer."""
    script = tmp_path / "model.py"
    script.write_text(
        "import kcc.tinygrad, numpy as np\n"
        "from tinygrad import Tensor, Device\n"
        "a = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))\n"
        "x, y, z = (a * 2).sum(axis=1), (a + 1).max(axis=0), (a - 3).abs()\n"
        "Tensor.realize(x, y, z)\n"
        "from tinygrad.engine import worker\n"
        "print(type(Device['CPU'].renderer).__name__, worker.worker_pool is not None,"
        " x.numpy().tolist(), y.numpy().tolist(), z.numpy().sum())\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=_env(tmp_path, DEV="CPU:KCC", PARALLEL="2"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == ["KCCRenderer", "True"], r.stdout
    assert "[12.0, 44.0, 76.0] [9.0, 10.0, 11.0, 12.0] 42.0" in r.stdout


def test_pytest_plugin_runs_a_test_suite_through_kcc(tmp_path: Path) -> None:
    """`pytest -p kcc.tinygrad` on a test file that never imports kcc."""
    test = tmp_path / "test_model.py"
    test.write_text(
        "from tinygrad import Tensor, Device\n"
        "def test_runs_through_kcc():\n"
        "    assert type(Device['CPU'].renderer).__name__ == 'KCCRenderer'\n"
        "    assert (Tensor([1.0, 2.0]) * 3).tolist() == [3.0, 6.0]\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "kcc.tinygrad",
                        "-p", "no:cacheprovider", str(test)], capture_output=True, text=True,
                       cwd=tmp_path, env=_env(tmp_path, DEV="CPU:KCC", PARALLEL="0"),
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


def test_refused_kernel_names_it_and_saves_the_uop(tmp_path: Path, monkeypatch) -> None:
    from kcc.tinygrad import KCCCompiler
    from tinygrad.device import CompileError
    monkeypatch.setenv("KCC_TINYGRAD_DUMP", str(tmp_path))
    src = ("# kcc-uop 1\n# tinygrad kernel E_bad\n%0 = PARAM ParamArg(0, float32, 4)\n"
           "%1 = INDEX(%0, 7)\n%2 = STORE(%1, 1.0)\nSINK(%2) KernelInfo(name=\"E_bad\")\n")
    with pytest.raises(CompileError) as e:
        KCCCompiler().compile(src)
    msg = str(e.value)
    assert "kernel E_bad" in msg and "E_bad.uop:4:" in msg and "out of bounds" in msg
    assert (tmp_path / "E_bad.uop").read_text() == src


def test_unimportable_op_names_the_kernel_and_the_op(tmp_path: Path, monkeypatch) -> None:
    from kcc.tinygrad import KCCRenderer
    from tinygrad.device import CompileError
    from tinygrad.dtype import dtypes
    from tinygrad.helpers import Target
    from tinygrad.uop.ops import KernelInfo, Ops, UOp
    monkeypatch.setenv("KCC_TINYGRAD_DUMP", str(tmp_path))
    buf = UOp.param(0, dtypes.float32, (4,))
    custom = UOp(Ops.CUSTOM, dtypes.float32, (), "rand()")
    st = buf.index(UOp.const(0, dtypes.int32)).store(custom)
    uops = list(st.sink(arg=KernelInfo(name="E_custom")).toposort())
    with pytest.raises(CompileError) as e:
        KCCRenderer(Target(device="CPU")).render(uops)
    assert "kernel E_custom" in str(e.value) and "CUSTOM" in str(e.value)
    assert (tmp_path / "E_custom.tinygrad.txt").is_file()


def test_native_ops_are_declared_and_can_be_turned_off() -> None:
    from kcc.tinygrad.renderer import NATIVE_OPS, KCCRenderer, code_for_op
    from tinygrad.renderer.cstyle import ClangRenderer
    from tinygrad.uop.ops import Ops
    assert set(code_for_op(False)) == set(ClangRenderer.code_for_op)
    assert set(code_for_op(True)) == set(ClangRenderer.code_for_op) | set(NATIVE_OPS)
    assert {Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.THREEFRY, Ops.MULACC} <= set(KCCRenderer.code_for_op)


def test_registers_on_a_cpu_device_already_open(tmp_path: Path) -> None:
    code = ("from tinygrad import Tensor, Device\n"
            "from tinygrad.helpers import Context\n"
            "print((Tensor([1.0, 2.0]) + 1).tolist())\n"          # opens CPU before kcc
            "import kcc.tinygrad\n"
            "with Context(DEV='CPU:KCC', PARALLEL=0):\n"
            "    print(type(Device['CPU'].renderer).__name__, (Tensor([1.0, 2.0]) * 5).tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=_env(tmp_path, PARALLEL="0"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[2.0, 3.0]", "KCCRenderer [5.0, 10.0]"]


def test_object_is_what_cpuprogram_loads() -> None:
    """The object tinygrad's CPUProgram maps itself: .text the first allocated section, the
    kernel at .text+0, only PC32/PLT32 relocations (here: constants in .rodata)."""
    import io

    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection
    from kcc.tinygrad import KCCCompiler
    src = ("# kcc-uop 1\n# tinygrad kernel E_4\n%0 = PARAM ParamArg(0, float32, 4)\n"
           "%1 = PARAM ParamArg(1, float32, 4)\n%c4 = CAST(4) int32\n"
           "%c15 = CAST(1.5) float32\n%2 = RANGE(%c4) (0, LOOP)\n%3 = INDEX(%1, %2)\n"
           "%4 = LOAD(%3)\n%5 = MUL(%4, %c15)\n%6 = INDEX(%0, %2)\n%7 = STORE(%6, %5)\n"
           '%8 = END(%7, %2)\nSINK(%8) KernelInfo(name="E_4")\n')
    elf = ELFFile(io.BytesIO(KCCCompiler().compile(src)))
    alloc = [s for s in elf.iter_sections() if s["sh_flags"] & 2]
    assert alloc[0].name == ".text"
    syms = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()}
    assert syms["E_4"] == 0
    types = {r["r_info_type"] for s in elf.iter_sections() if isinstance(s, RelocationSection)
             for r in s.iter_relocations()}
    assert types and types <= {2, 4}            # R_X86_64_PC32, R_X86_64_PLT32
