"""x86 selection of integer vector CASTs to half- or double-size lanes (kcc/isel/x86/ivec.py
vcast_int: VPSHUFB + VPERMQ narrowing a ymm to an xmm, one truncating VPMOVDW/WB/QD on
x86-64-v4, VPMOVSX/ZX widening back) and of NEG
on int32 x 16 (a zmm, x86-64-v4), against the reference interpreter on full-range inputs."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import ARCHS, HAS_V4, compile_and_run, random_inputs, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops, dtypes
from kcc.ir.uop import toposort
from kcc.passes.devectorize import devectorize
from kcc.passes.lower_weak import lower_weak_dtypes
from kcc.targets.x86.target import compile_x86, disasm_object, x86_desc


# (source dtype, result dtype, lanes, the instruction that resizes the lanes)
CASES = [("uint32", "uint16", 8, "vpshufb"), ("int32", "int16", 8, "vpshufb"),
         ("int16", "int8", 16, "vpshufb"), ("uint16", "uint8", 16, "vpshufb"),
         ("int64", "int32", 4, "vpshufb"), ("uint64", "int32", 4, "vpshufb"),
         ("uint16", "uint32", 8, "vpmovzxwd"), ("int16", "int32", 8, "vpmovsxwd"),
         ("int8", "uint16", 16, "vpmovsxbw"), ("uint8", "int16", 16, "vpmovzxbw"),
         ("int32", "int64", 4, "vpmovsxdq"), ("uint32", "uint64", 4, "vpmovzxdq")]


def _kernel(src: str, dst: str, n: int, op: str = "CAST(%v) {dst}") -> str:
    return f"""# kcc-uop 1
%out = PARAM ParamArg(0, {dst}, {2 * n})
%a   = PARAM ParamArg(1, {src}, {2 * n})
%i   = RANGE(2) (0, LOOP)
%s   = MUL(%i, {n})
%pa  = SHRINK(%a, %s, {n})
%v   = LOAD(%pa)
%x   = {op.format(dst=dst)}
%po  = SHRINK(%out, %s, {n})
%st  = STORE(%po, %x)
%e   = END(%st, %i)
SINK(%e) KernelInfo(name="resize")
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src,dst,n,form", CASES)
def test_lane_resize_matches_interpreter(arch: str, src: str, dst: str, n: int,
                                         form: str) -> None:
    """Every lane's value (low bits when narrowing, sign or zero extension by the source's
    signedness when widening) agrees with the interpreter; the CAST stays one vector node,
    selected as `form` with no lane extraction."""
    sink = parse(_kernel(src, dst, n), "resize.uop")
    args = random_inputs(sink, 7)
    args[1] = np.random.default_rng(9).integers(np.iinfo(args[1].dtype).min,
                                                np.iinfo(args[1].dtype).max, 2 * n,
                                                dtype=args[1].dtype, endpoint=True)
    want = reference(sink, args)
    got = compile_and_run(sink, args, arch)
    assert np.array_equal(got[0], want[0])
    g = devectorize(lower_weak_dtypes(sink), x86_desc(arch))
    assert any(u.op is Ops.CAST and u.shape == (n,) for u in toposort([g]))
    text = disasm_object(compile_x86([sink], arch)[0])
    if form == "vpshufb" and arch == "x86-64-v4":     # one truncating down-convert
        form = _VPMOV[np.dtype(src).itemsize, np.dtype(dst).itemsize]
        assert "vpshufb" not in text
    assert form in text and "vpextr" not in text and "vpinsr" not in text


_VPMOV = {(4, 2): "vpmovdw", (2, 1): "vpmovwb", (8, 4): "vpmovqd", (4, 1): "vpmovdb"}


@pytest.mark.skipif(not HAS_V4, reason="this CPU has no AVX-512 (x86-64-v4 code cannot run here)")
@pytest.mark.parametrize("src,dst,n", [("int32", "int8", 8), ("uint32", "int8", 16),
                                       ("int32", "int16", 16), ("int64", "int32", 8),
                                       ("uint16", "int8", 32)])
def test_v4_narrowing_is_one_down_convert(src: str, dst: str, n: int) -> None:
    """On x86-64-v4 narrowing lanes of an xmm, ymm or zmm is one VPMOV{W,D,Q}{B,W,D}
    (truncation, SDM "VPMOVDB/VPMOVSDB/VPMOVUSDB"), each lane's low bits as the interpreter's."""
    sink = parse(_kernel(src, dst, n), "resize.uop")
    args = random_inputs(sink, 7)
    info = np.iinfo(args[1].dtype)
    args[1] = np.random.default_rng(3).integers(info.min, info.max, 2 * n,
                                                dtype=args[1].dtype, endpoint=True)
    assert np.array_equal(compile_and_run(sink, args, "x86-64-v4")[0], reference(sink, args)[0])
    text = disasm_object(compile_x86([sink], "x86-64-v4")[0])
    assert _VPMOV[np.dtype(src).itemsize, np.dtype(dst).itemsize] in text, text


@pytest.mark.skipif(not HAS_V4, reason="this CPU has no AVX-512 (x86-64-v4 code cannot run here)")
def test_zmm_int32_neg() -> None:
    """NEG of 16 int32 lanes is one zmm VPSUBD from zero (wrapping: -(-2^31) = -2^31)."""
    sink = parse(_kernel("int32", "int32", 16, "NEG(%v)"), "neg.uop")
    args = random_inputs(sink, 1)
    args[1][:3] = [-2**31, 2**31 - 1, 0]
    want = reference(sink, args)
    assert np.array_equal(compile_and_run(sink, args, "x86-64-v4")[0], want[0])
    assert x86_desc("x86-64-v4").alu_legal(16, dtypes.int32, Ops.NEG)
    text = disasm_object(compile_x86([sink], "x86-64-v4")[0])
    assert "vpsubd zmm" in text
