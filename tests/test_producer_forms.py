"""What real producers (tinygrad 0.14) write, accepted on every path (issue 8, part 1).

Each form is compiled for x86 and run against a numpy result written here and against the
reference interpreter, and compiled for CUDA and checked by ptxas when it is installed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.consts import const_int, const_value
from kcc.ir.interp import run as interp_run
from kcc.targets.cuda.target import compile_cuda, find_ptxas
from tests.test_cuda_fake_driver import fake_driver  # noqa: F401 (a fixture)
from tests.test_hip_fake_driver import fake_hip  # noqa: F401 (a fixture)
from tests.x86_util import assert_same, compile_and_run, reference

KERNELS = Path(__file__).resolve().parent / "kernels"
PTXAS = find_ptxas()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed (CUDA oracle)")


def ptxas_ok(sink: UOp, tmp_path: Path, arch: str = "sm_80") -> str:
    """The kernel's PTX, after ptxas has assembled it."""
    ptx = compile_cuda([sink], arch=arch, emit="ptx")[0].decode()
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return ptx


# -- strong constants --------------------------------------------------------------------------

def _strong_args() -> list:
    rng = np.random.default_rng(1)
    return [np.zeros(32, np.float32), rng.standard_normal(32).astype(np.float32),
            np.zeros(2, np.uint32), np.zeros(2, np.float32), np.zeros(1, np.uint8)]


def _strong_numpy(args: list) -> list:
    """out[4k:4k+4] = in[4k:4k+4] reversed; the CASTs of literals as numpy converts them."""
    out = args[1].reshape(8, 4)[:, ::-1].reshape(-1).copy()
    with np.errstate(over="ignore"):
        f = np.array([1e39, -3.5e38]).astype(np.float32)
    u = np.array([-1056 % 2**32, 2**32 % 2**32], np.uint32)
    return [out, args[1], u, f, np.array([300 % 256], np.uint8)]


def test_strong_constants_x86_interp_numpy() -> None:
    sink = parse((KERNELS / "strong_constants.uop").read_text())
    args = _strong_args()
    want = _strong_numpy(args)
    ref = reference(sink, args)
    assert_same(sink, ref, want)
    assert np.isinf(ref[3]).all() and ref[3][0] > 0 > ref[3][1]
    got = compile_and_run(sink, args)
    assert_same(sink, got, want)


@needs_ptxas
def test_strong_constants_ptxas(tmp_path: Path) -> None:
    sink = parse((KERNELS / "strong_constants.uop").read_text())
    ptx = ptxas_ok(sink, tmp_path)
    # CAST(-1056) uint32 wraps, CAST(±big) float32 is ±inf, CAST(300) uint8 is 44
    for imm in ("0xFFFFFBE0", "0f7F800000", "0fFF800000", "0x0000002C"):
        assert imm in ptx, imm
    assert "{%f3, %f2, %f1, %f0}" in ptx          # the lanes by strong-constant lane indices


def test_const_value_of_cast_chains() -> None:
    def c(v, dt):
        return UOp(Ops.CAST, (UOp(Ops.CONST, (), v),), dt)
    assert const_value(c(-1056, dtypes.uint32)) == (2**32 - 1056, dtypes.uint32)
    assert const_value(c(300, dtypes.uint8)) == (44, dtypes.uint8)
    assert const_value(c(1e39, dtypes.float32)) == (float("inf"), dtypes.float32)
    assert const_value(c(1e10, dtypes.int32)) == (2**31 - 1, dtypes.int32)    # saturates
    assert const_value(c(2**24 + 1, dtypes.float32)) == (2.0**24, dtypes.float32)
    assert const_int(UOp(Ops.CAST, (c(-1, dtypes.int64),), dtypes.uint32)) == 2**32 - 1
    assert const_int(c(4.0, dtypes.float32)) is None           # a float is not an int bound
    assert const_int(UOp(Ops.CONST, (), True)) is None


_VEC = ("# kcc-uop 1\n%in = PARAM ParamArg(0, float32, 8)\n%n = PARAM ParamArg(1, int32, "
        "addrspace=ALU)\n%k = {k}\n%p = SHRINK(%in, 0, {n})\n%v = LOAD(%p)\n"
        "%x = INDEX(%v, {lane})\n%z = INDEX(%in, 0)\n%st = STORE(%z, %x)\n"
        'SINK(%st) KernelInfo(name="k")\n')


@pytest.mark.parametrize("k, n, lane, fragment", [
    ("CAST(4) int32", "%k", "1", None),
    ("CAST(4) uint8", "4", "%k", "lane 4 is outside a vector of 4"),
    ("CAST(3) uint8", "4", "%k", None),
    ("CAST(4) float32", "%k", "1", "SHRINK length must be an integer constant"),
    ("CAST(0) int32", "%k", "1", "SHRINK length must be positive"),
    ("CAST(4) int32", "%n", "1", "SHRINK length must be an integer constant"),
    ("CAST(1.0) float32", "4", "%k", "lane index into a vector must be an integer constant"),
    ("CAST(-252) uint8", "%k", "1", None),                      # wraps to 4
])
def test_strong_constant_dtype_checked(k: str, n: str, lane: str, fragment: str | None) -> None:
    from kcc.frontend.errors import SourceError
    text = _VEC.format(k=k, n=n, lane=lane)
    if fragment is None:
        sink = parse(text)
        buf = np.arange(8, dtype=np.float32)
        out = interp_run(sink, [buf.copy(), np.int32(0)])[0]
        assert out[0] == buf[const_int(parse_const(k)) if lane == "%k" else 1]
        got = compile_and_run(sink, [buf.copy(), np.int32(0)])
        assert got[0][0] == out[0]
    else:
        with pytest.raises(SourceError, match=fragment):
            parse(text)


def parse_const(text: str) -> UOp:
    """The node of one strong-constant expression, parsed as a kernel's stored value."""
    sink = parse("# kcc-uop 1\n%o = PARAM ParamArg(0, int64, 1)\n%z = INDEX(%o, 0)\n"
                 f"%c = {text}\n%w = CAST(%c) int64\n%st = STORE(%z, %w)\n"
                 'SINK(%st) KernelInfo(name="k")\n')
    return next(u for u in sink.toposort() if u.op is Ops.STORE).src[1].src[0]


def test_interp_special_strong_bound_with_local_buffer() -> None:
    # a LOCAL buffer is sized by the gidx bound: a strong bound crashed the interpreter before
    text = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 8)
%n   = CAST(4) int32
%two = CAST(2) int32
%g   = SPECIAL(%two) "gidx0"
%l   = SPECIAL(%n) "lidx0"
%buf = BUFFER ParamArg(0, int32, 4, addrspace=LOCAL)
%bi  = INDEX(%buf, %l)
%st  = STORE(%bi, %l)
%bar = BARRIER
%ba  = AFTER(%buf, %bar, %st)
%x   = MUL(%g, %n)
%y   = ADD(%x, %l)
%oi  = INDEX(%out, %y)
%rl  = SUB(3, %l)
%ri  = INDEX(%ba, %rl)
%v   = LOAD(%ri)
%s2  = STORE(%oi, %v)
SINK(%s2) KernelInfo(name="k")
"""
    sink = parse(text)
    out = interp_run(sink, [np.zeros(8, np.int32)])[0]
    assert out.tolist() == [3, 2, 1, 0, 3, 2, 1, 0]


# -- BARRIER with ordering sources; BUFFER slots per address space ------------------------------

def _reduce_numpy(x: np.ndarray) -> np.ndarray:
    """Sequential float32 sums of 16 elements, left to right (the kernel's loop order)."""
    out = np.zeros(16, np.float32)
    for g in range(16):
        acc = np.float32(0)
        for r in range(16):
            acc = np.float32(acc + x[16 * g + r])
        out[g] = acc
    return out


def test_barrier_sources_and_slots_per_space_interp() -> None:
    sink = parse((KERNELS / "reduce_local_reg.uop").read_text())
    bufs = {(u.arg.addrspace.name, u.arg.slot) for u in sink.toposort() if u.op is Ops.BUFFER}
    assert bufs == {("REG", 0), ("LOCAL", 0)}
    x = np.random.default_rng(2).standard_normal(256).astype(np.float32)
    out = interp_run(sink, [np.zeros(16, np.float32), x])[0]
    assert out.tobytes() == _reduce_numpy(x).tobytes()


def test_barrier_scheduled_after_its_sources() -> None:
    from kcc.passes.linearize import linearize
    sink = parse((KERNELS / "reduce_local_reg.uop").read_text())
    lin = linearize(sink)
    bar = next(i for i, u in enumerate(lin) if u.op is Ops.BARRIER)
    st = next(i for i, u in enumerate(lin) if u.op is Ops.STORE
              and u.src[0].src[0].op is Ops.BUFFER
              and u.src[0].src[0].arg.addrspace.name == "LOCAL")
    loads = [i for i, u in enumerate(lin) if u.op is Ops.LOAD and u.src[0].src[0].op is Ops.AFTER
             and u.src[0].src[0].src[0].arg.addrspace.name == "LOCAL"]
    assert st < bar < min(loads)


@needs_ptxas
def test_barrier_sources_ptxas(tmp_path: Path) -> None:
    sink = parse((KERNELS / "reduce_local_reg.uop").read_text())
    ptx = ptxas_ok(sink, tmp_path)
    assert ptx.index("st.shared") < ptx.index("bar.sync") < ptx.index("ld.shared")
    assert ptx.count(".shared .align") == 1


def test_barrier_source_must_be_an_effect() -> None:
    from kcc.frontend.errors import SourceError
    text = ("# kcc-uop 1\n%o = PARAM ParamArg(0, int32, 1)\n%z = INDEX(%o, 0)\n"
            "%v = LOAD(%z)\n%b = BARRIER(%v)\n%st = STORE(%z, 1)\n%g = GROUP(%b, %st)\n"
            'SINK(%g) KernelInfo(name="k")\n')
    with pytest.raises(SourceError, match="BARRIER's srcs are the effects it waits for"):
        parse(text)


@pytest.mark.parametrize("second, ok", [("LOCAL", True), ("REG", False)])
def test_buffer_slot_unique_within_its_space(second: str, ok: bool) -> None:
    from kcc.frontend.errors import SourceError
    text = ("# kcc-uop 1\n%o = PARAM ParamArg(0, int32, 1)\n"
            "%a = BUFFER ParamArg(0, int32, 1, addrspace=REG)\n"
            f"%b = BUFFER ParamArg(0, int32, 1, addrspace={second})\n"
            "%ai = INDEX(%a, 0)\n%s1 = STORE(%ai, 1)\n%bi = INDEX(%b, 0)\n%s2 = STORE(%bi, 2)\n"
            "%x = AFTER(%a, %s1)\n%xi = INDEX(%x, 0)\n%v = LOAD(%xi)\n%oi = INDEX(%o, 0)\n"
            "%s3 = STORE(%oi, %v)\n%g = GROUP(%s2, %s3)\nSINK(%g) KernelInfo(name=\"k\")\n")
    if ok:
        sink = parse(text)
        assert interp_run(sink, [np.zeros(1, np.int32)])[0][0] == 1
        from kcc.frontend.printer import format_uop
        assert parse(format_uop(sink)) is sink          # fmt keeps both slots 0
    else:
        with pytest.raises(SourceError, match="BUFFER slot 0 is already declared by %a"):
            parse(text)


# -- bool stores from GPU-style lowerings ------------------------------------------------------

def _bool_args() -> list:
    rng = np.random.default_rng(3)
    return [np.zeros(64, bool), np.zeros(64, bool), rng.random(64).astype(np.float32),
            rng.integers(0, 256, 64).astype(np.uint8)]


def test_bool_store_of_uint8_x86_interp_numpy() -> None:
    sink = parse((KERNELS / "bool_store_u8.uop").read_text())
    args = _bool_args()
    args[3][:4] = [0, 1, 2, 255]
    want = [args[2] < np.float32(0.5), args[3] != 0, args[2], args[3]]
    ref = reference(sink, args)
    assert_same(sink, ref, want)
    got = compile_and_run(sink, args)
    assert_same(sink, got, want)
    assert got[1].view(np.uint8).max() == 1            # a bool byte is 0 or 1, never 2 or 255


@needs_ptxas
def test_bool_store_of_uint8_ptxas(tmp_path: Path) -> None:
    ptxas_ok(parse((KERNELS / "bool_store_u8.uop").read_text()), tmp_path)


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
    from kcc.targets.cuda.target import CudaCompileError
    text = SYMBOLIC_WORKERS.replace('"gidx0"', '"lidx0"')
    with pytest.raises(CudaCompileError, match="constant block size"):
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
