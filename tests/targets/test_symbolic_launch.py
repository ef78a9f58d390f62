"""What real producers (tinygrad 0.14) write (issue 8, part 1): symbolic launch sizes
(kcc/targets/dims.py) — worker counts and grids as expressions of scalar arguments, recorded
in the manifest, evaluated per launch by the x86, CUDA and HIP loaders, refused where a target
cannot take them. Oracles: numpy, the reference interpreter, ptxas, stand-in drivers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir.interp import run as interp_run
from kcc.targets.cuda.target import compile_cuda
from fake_cuda import fake_driver  # noqa: F401 (a fixture)
from fake_hip import fake_hip  # noqa: F401 (a fixture)
from x86_util import assert_same, compile_and_run, reference
from paths import DATA
from ptx_util import needs_ptxas, ptxas_ok

KERNELS = DATA / "kernels"


# -- symbolic launch sizes ---------------------------------------------------------------------

SYMBOLIC_WORKERS = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 64)
%n   = PARAM ParamArg(1, int32, vmin_vmax=(1, 64), name="n", addrspace=ALU)
%g   = SPECIAL(%n) "gidx0"
%oi  = INDEX(%out, %g)
%one = CAST(1) int32
%v   = ADD(%g, %one)
%st  = STORE(%oi, %v)
SINK(%st) KernelInfo(name="E_n")
"""


def _symbolic_numpy(x: np.ndarray, out: np.ndarray, n: int) -> np.ndarray:
    res = out.copy()
    res[:n] = x[:n] * np.float32(2) + np.float32(1)
    return res


@pytest.mark.parametrize("n", [1, 3, 4, 10, 63, 64])
def test_symbolic_size_x86_interp_numpy(n: int) -> None:
    sink = parse((KERNELS / "symbolic_gidx.uop").read_text())
    x = np.random.default_rng(n).standard_normal(64).astype(np.float32)
    out = np.full(64, -7.0, np.float32)
    want = [_symbolic_numpy(x, out, n), x, None]
    ref = reference(sink, [out, x, np.int32(n)])
    assert_same(sink, ref[:2], want[:2])
    got = compile_and_run(sink, [out, x, np.int32(n)])
    assert_same(sink, got[:2], want[:2])


@pytest.mark.parametrize("n", [1, 5, 64])
def test_x86_worker_count_is_the_expression(n: int) -> None:
    # one worker per gidx: out[g] = g + 1 for exactly n workers, the rest untouched
    sink = parse(SYMBOLIC_WORKERS)
    got = compile_and_run(sink, [np.zeros(64, np.int32), np.int32(n)])[0]
    assert got.tolist() == list(range(1, n + 1)) + [0] * (64 - n)
    assert interp_run(sink, [np.zeros(64, np.int32), np.int32(n)])[0].tolist() == got.tolist()


def test_manifest_records_the_expression_of_named_arguments() -> None:
    from kcc.targets.manifest import KernelDesc, check_launch
    from kcc.targets.x86.target import compile_x86
    _, [desc] = compile_x86([parse((KERNELS / "symbolic_gidx.uop").read_text())])
    d = desc.to_json()
    assert d["global"] == [{"op": "CDIV", "dtype": "int32", "src": [
        {"op": "ADD", "dtype": "int32", "src": [{"arg": 2, "name": "n"}, 3]}, 4]}, 1, 1]
    assert d["local"] == [1, 1, 1]
    assert d["target"]["x86"]["workers"] == [d["global"][0]]
    back = KernelDesc.from_json(d)
    buf = np.zeros(64, np.float32)
    for n in (1, 4, 5, 64):
        args = check_launch(back, [buf, buf.copy(), n])
        assert back.launch_dims(args) == ([-(-n // 4), 1, 1], [1, 1, 1])


def test_loader_refuses_a_value_outside_vmin_vmax() -> None:
    from kcc.targets.manifest import LaunchError, check_launch
    from kcc.targets.x86.target import compile_x86
    _, [desc] = compile_x86([parse((KERNELS / "symbolic_gidx.uop").read_text())])
    buf = np.zeros(64, np.float32)
    for bad in (0, 65, -3):
        with pytest.raises(LaunchError, match="outside the declared range"):
            check_launch(desc, [buf, buf.copy(), bad])


def test_manifest_schema_checks_expressions(tmp_path: Path) -> None:
    import json

    from kcc.targets.manifest import LaunchError, read_manifest
    from kcc.targets.x86.target import compile_x86
    _, [desc] = compile_x86([parse((KERNELS / "symbolic_gidx.uop").read_text())])
    good = desc.to_json()
    for dims, why in [([{"op": "POW", "dtype": "int32", "src": [1, 2]}, 1, 1], "unknown"),
                      ([{"arg": 7}, 1, 1], "not an argument slot"),
                      ([{"op": "ADD", "dtype": "float32", "src": [1, 2]}, 1, 1], "integer"),
                      ([{"op": "ADD", "dtype": "int32", "src": [1]}, 1, 1], "takes 2 src"),
                      ([0, 1, 1], r"in \[1,")]:
        doc = {"format": "kcc-manifest", "version": 1, "target": "x86", "arch": "x86-64-v3",
               "kernels": [{**good, "global": dims}]}
        p = tmp_path / "m.json"
        p.write_text(json.dumps(doc))
        with pytest.raises(LaunchError, match=why):
            read_manifest(p)


def test_dims_evaluate_like_the_interpreter() -> None:
    from kcc.targets.dims import DimError, eval_dim, launch_dims
    e = {"op": "CDIV", "dtype": "int32", "src": [{"op": "NEG", "dtype": "int32",
                                                   "src": [{"arg": 0}]}, 4]}
    assert eval_dim(e, [np.int32(7)]) == -1                 # truncates toward zero
    wrap = {"op": "ADD", "dtype": "uint8", "src": [{"arg": 0}, 200]}
    assert eval_dim(wrap, [np.uint8(100)]) == 44            # wraps in its dtype
    w = {"op": "WHERE", "dtype": "int32", "src": [
        {"op": "CMPLT", "dtype": "bool", "src": [{"arg": 0}, 8]}, 8, {"arg": 0}]}
    assert [eval_dim(w, [v]) for v in (3, 20)] == [8, 20]
    with pytest.raises(DimError, match="divides by zero"):
        eval_dim({"op": "CMOD", "dtype": "int32", "src": [5, {"arg": 0}]}, [0])
    with pytest.raises(DimError, match="must be in"):
        launch_dims([{"op": "SUB", "dtype": "int32", "src": [{"arg": 0}, 9]}, 1, 1], [1, 1, 1],
                    [np.int32(3)])


@pytest.mark.parametrize("bound, fragment", [
    ("%z = INDEX(%o, 0)\n%b = LOAD(%z)\n", "built only from constants and scalar integer"),
    ("%f = CAST(%n) float32\n%h = MUL(%f, 0.5)\n%b = CAST(%h) int32\n",
     "CAST of float32 cannot be in it"),
])
def test_symbolic_bound_refused(bound: str, fragment: str) -> None:
    from kcc.frontend.errors import SourceError
    text = ("# kcc-uop 1\n%o = PARAM ParamArg(0, int32, 64)\n"
            "%n = PARAM ParamArg(1, int32, vmin_vmax=(1, 64), addrspace=ALU)\n" + bound +
            '%g = SPECIAL(%b) "gidx0"\n%oi = INDEX(%o, %g)\n%st = STORE(%oi, 1)\n'
            'SINK(%st) KernelInfo(name="k")\n')
    with pytest.raises(SourceError, match=fragment):
        parse(text)


@needs_ptxas
def test_symbolic_size_ptxas(tmp_path: Path) -> None:
    ptxas_ok(parse((KERNELS / "symbolic_gidx.uop").read_text()), tmp_path)


def test_cuda_refuses_a_symbolic_block_size() -> None:
    from kcc.targets.registry import CompileError
    text = SYMBOLIC_WORKERS.replace('"gidx0"', '"lidx0"')
    with pytest.raises(CompileError, match="constant block size"):
        compile_cuda([parse(text)], arch="sm_80", emit="ptx")


def test_cuda_loader_evaluates_the_grid_per_launch(fake_driver) -> None:
    from kcc.targets.cuda.target import launch_cuda
    from kcc.targets.manifest import check_launch
    sink = parse((KERNELS / "symbolic_gidx.uop").read_text())
    ptx, [desc] = compile_cuda([sink], arch="sm_80", emit="ptx")
    buf = np.zeros(64, np.float32)
    for n in (1, 9, 64):
        launch_cuda(ptx, desc, check_launch(desc, [buf, buf.copy(), n]))
        assert list(fake_driver.fake_dims().contents) == [-(-n // 4), 1, 1, 1, 1, 1]


@pytest.mark.parametrize("name", ["strong_constants", "reduce_local_reg", "bool_store_u8",
                                  "symbolic_gidx"])
def test_fmt_round_trip(name: str) -> None:
    # kcc fmt writes the producer forms back as .uop that reads as the same graph
    from kcc.frontend.printer import format_uop
    sink = parse((KERNELS / f"{name}.uop").read_text())
    text = format_uop(sink)
    assert parse(text) is sink and format_uop(parse(text)) == text


def test_hip_loader_evaluates_the_grid_per_launch(fake_hip) -> None:
    from kcc.targets.amd import hip_driver
    from kcc.targets.amd.target import assembly, compile_amd_code
    from kcc.targets.manifest import check_launch
    (code,) = compile_amd_code([parse((KERNELS / "symbolic_gidx.uop").read_text())], "gfx1100")
    image, desc = assembly([code]).encode(), code.desc
    buf = np.zeros(64, np.float32)
    for n in (1, 9, 64):
        hip_driver.launch_hip(image, desc, check_launch(desc, [buf, buf.copy(), n]))
        assert list(fake_hip.fake_dims().contents) == [-(-n // 4), 1, 1, 1, 1, 1]


def test_amd_refuses_a_symbolic_block_size() -> None:
    from kcc.isel.amd.base import AmdSelectError
    from kcc.targets.amd.target import compile_amd_code
    with pytest.raises(AmdSelectError, match="constant workgroup size"):
        compile_amd_code([parse(SYMBOLIC_WORKERS.replace('"gidx0"', '"lidx0"'))], "gfx1100")


def test_specials_of_one_name_share_a_symbolic_bound() -> None:
    from kcc.frontend.errors import SourceError
    head = ("# kcc-uop 1\n%o = PARAM ParamArg(0, int32, 64)\n"
            "%n = PARAM ParamArg(1, int32, vmin_vmax=(1, 32), addrspace=ALU)\n"
            "%m = ADD(%n, 1)\n%g = SPECIAL(%n) \"gidx0\"\n")
    tail = ("%x = ADD(%g, %h)\n%oi = INDEX(%o, %x)\n%st = STORE(%oi, 1)\n"
            'SINK(%st) KernelInfo(name="k")\n')
    parse(head.replace("%m = ADD(%n, 1)\n", "") + '%h = SPECIAL(%n) "gidx0"\n' + tail)
    with pytest.raises(SourceError, match="has bound an expression of scalar arguments here"):
        parse(head + '%h = SPECIAL(%m) "gidx0"\n' + tail)
    # a literal and a strong constant of the same value are one bound
    sink = parse("# kcc-uop 1\n%o = PARAM ParamArg(0, int64, 64)\n%c = CAST(8) int32\n"
                 '%g = SPECIAL(8) "gidx0"\n%h = SPECIAL(%c) "gidx0"\n%hh = CAST(%h) int64\n'
                 "%x = ADD(%g, %hh)\n%oi = INDEX(%o, %x)\n%st = STORE(%oi, %x)\n"
                 'SINK(%st) KernelInfo(name="k")\n')
    want = np.zeros(64, np.int64)
    want[0:16:2] = np.arange(0, 16, 2)
    assert interp_run(sink, [np.zeros(64, np.int64)])[0].tolist() == want.tolist()
    assert compile_and_run(sink, [np.zeros(64, np.int64)])[0].tolist() == want.tolist()
