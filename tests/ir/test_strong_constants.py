"""What real producers (tinygrad 0.14) write, accepted on every path (issue 8, part 1): strong
constants (`CAST(CONST)` chains, kcc/ir/consts.py) — read once, checked against the dtype, folded
by x86 and PTX alike. Oracles: numpy results written here, the reference interpreter, ptxas.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops, UOp, dtypes
from kcc.ir.consts import const_int, const_value
from kcc.ir.interp import run as interp_run
from x86_util import assert_same, compile_and_run, reference
from paths import DATA
from ptx_util import needs_ptxas, ptxas_ok

KERNELS = DATA / "kernels"


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
