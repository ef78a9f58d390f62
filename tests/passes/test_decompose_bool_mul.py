"""decompose's bool_mul (kcc/passes/decompose.py): an integer MUL by a bool's 0/1 CAST is a
WHERE on a target with `select_bool_mul` (x86: a masked move instead of VPMULLD), and stays
a MUL elsewhere (CUDA, AMD: their outputs do not change). tinygrad's argmax multiplies each
element's `x == max` by its reversed index. Values: the x86 object vs the reference
interpreter on the kernel as written (both arches where this CPU runs them)."""

from __future__ import annotations

import pytest
from x86_util import assert_same, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.decompose import decompose
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.passes.simplify import simplify
from kcc.targets.cuda.desc import CUDA
from kcc.targets.x86.arch import x86_desc
from kcc.targets.x86.target import V4_FLAGS, cpu_flags

# out[i] = (a[i] == b[i]) * (77 - i) as {dt}, {n} lanes a STACK of scalars or one element
ARGMAX = """# kcc-uop 1
%out = PARAM ParamArg(0, {dt}, 64)
%a = PARAM ParamArg(1, float32, 64)
%b = PARAM ParamArg(2, float32, 64)
%i = RANGE(64) (0, WEAK)
%pa = INDEX(%a, %i)
%x = LOAD(%pa)
%pb = INDEX(%b, %i)
%y = LOAD(%pb)
%eq = CMPEQ(%x, %y)
%c = CAST(%eq) {dt}
%n = SUB(77, %i)
%nc = CAST(%n) {dt}
%m = MUL({order})
%po = INDEX(%out, %i)
%st = STORE(%po, %m)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


def _text(dt: str = "int32", swap: bool = False) -> str:
    return ARGMAX.format(dt=dt, order="%nc, %c" if swap else "%c, %nc")


def _ops(text: str, desc) -> set:
    g = decompose(simplify(lower_weak_dtypes(parse(text))), desc)
    return {u.op for u in toposort([g])}


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("dt", ["int32", "uint8", "int64"])
def test_bool_mul_is_a_select_on_x86(dt: str, swap: bool) -> None:
    ops = _ops(_text(dt, swap), x86_desc("x86-64-v3"))
    assert Ops.WHERE in ops and Ops.MUL not in ops


def test_cuda_keeps_the_multiply() -> None:
    ops = _ops(_text(), CUDA)
    assert Ops.MUL in ops and Ops.WHERE not in ops


def test_float_multiply_is_not_a_select() -> None:
    # 0 * inf is NaN: a float MUL by a 0/1 CAST is not a select
    ops = _ops(_text("float32"), x86_desc("x86-64-v3"))
    assert Ops.MUL in ops


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt", ["int32", "uint8", "int64"])
def test_matches_the_interpreter(arch: str, dt: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_text(dt))
    args = random_inputs(sink, 2)
    args[2][::3] = args[1][::3]         # some lanes equal: both arms of the select
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))


def _shl_text(dt: str, k: int) -> str:
    """out[i] = (a[i] == b[i]) << k as dt (argmax_3d's powers-of-two factors)."""
    text = ARGMAX.format(dt=dt, order="%c, %nc").replace(
        "%m = MUL(%c, %nc)", f"%kk = CAST({k}) {dt}\n%m = SHL(%c, %kk)")
    return text.replace("%n = SUB(77, %i)\n", "").replace(f"%nc = CAST(%n) {dt}\n", "")


@pytest.mark.parametrize("dt,k", [("int32", 3), ("int32", 31), ("uint8", 7), ("int64", 40)])
def test_bool_shl_is_a_select_on_x86(dt: str, k: int) -> None:
    ops = _ops(_shl_text(dt, k), x86_desc("x86-64-v3"))
    assert Ops.WHERE in ops and Ops.SHL not in ops
    assert Ops.SHL in _ops(_shl_text(dt, k), CUDA)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("dt,k", [("int32", 3), ("int32", 31), ("uint8", 7), ("int64", 63)])
def test_bool_shl_matches_the_interpreter(arch: str, dt: str, k: int) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(_shl_text(dt, k))
    args = random_inputs(sink, 2)
    args[2][::3] = args[1][::3]
    want = reference(sink, args)
    assert set(want[0].tolist()) >= {0}
    assert_same(sink, compile_and_run(sink, args, arch), want)


# out[4i:4i+4] = (a == b) * (77 - i) + b's bits, 4 lanes: bool_mulacc's MULACC by the CAST
MULACC_TEXT = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 64)
%a = PARAM ParamArg(1, float32, 64)
%b = PARAM ParamArg(2, float32, 64)
%i = RANGE(16) (0, WEAK)
%i4 = MUL(%i, 4)
%pa = SHRINK(%a, %i4, 4)
%x = LOAD(%pa)
%pb = SHRINK(%b, %i4, 4)
%y = LOAD(%pb)
%eq = CMPEQ(%x, %y)
%c = CAST(%eq) int32
%n = SUB(77, %i)
%nv = STACK(%n, %n, %n, %n)
%yb = BITCAST(%y) int32
%m = MULACC({order}, %yb)
%po = SHRINK(%out, %i4, 4)
%st = STORE(%po, %m)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="k")
"""


@pytest.mark.parametrize("swap", [False, True])
def test_bool_mulacc_is_a_select_and_an_add_on_x86(swap: bool) -> None:
    text = MULACC_TEXT.format(order="%nv, %c" if swap else "%c, %nv")
    ops = _ops(text, x86_desc("x86-64-v3"))
    assert Ops.WHERE in ops and Ops.MULACC not in ops
    assert Ops.MULACC in _ops(text, CUDA)


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_bool_mulacc_matches_the_interpreter(arch: str) -> None:
    if arch == "x86-64-v4" and not all(f in cpu_flags() for f in V4_FLAGS):
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    sink = parse(MULACC_TEXT.format(order="%c, %nv"))
    args = random_inputs(sink, 2)
    args[2][::3] = args[1][::3]
    assert_same(sink, compile_and_run(sink, args, arch), reference(sink, args))
