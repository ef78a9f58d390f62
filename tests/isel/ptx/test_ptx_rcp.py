"""kcc's float32 RECIPROCAL on CUDA (kcc/isel/ptx/rounded.py) is the correctly rounded 1/x
for every float32, whatever `rcp.approx.ftz.f32` returns within its documented 1 ulp: the
numpy model of the instruction sequence (rcp_model.py, from the PTX ISA, independent of kcc)
against numpy's float32 1/x (IEEE: correctly rounded), with the approximation 1 ulp low, exact
and 1 ulp high. Fast by default; KCC_EXHAUSTIVE=1 (or running this file with --exhaustive)
walks all 2^32 inputs (`--binades 0,1,254`: every significand of those exponents). Also: kcc's
PTX is that sequence, ptxas accepts it, and its SASS has no CALL (no slow-path subroutine)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from ptx_util import k, needs_ptxas, ptx_of, sass_of
from rcp_model import bits, rcp_seq, wrong
from rounded_inputs import EXHAUSTIVE, all_inputs, fast_inputs, walk

from kcc.ir import UOp

F32 = np.float32


def reference(b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return (F32(1) / b).astype(F32)


def count_wrong(b: np.ndarray) -> tuple[int, list[str]]:
    bad, ex = 0, []
    want = reference(b)
    for kk in (-1, 0, 1):
        w = wrong(rcp_seq(b, kk), want)
        bad += int(w.sum())
        ex += [f"k={kk} {int(x):#010x}" for x in bits(b[w])[:3]]
    return bad, ex


@pytest.mark.parametrize("kk", [-1, 0, 1])
def test_specials(kk: int) -> None:
    b = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -149, -(2.0 ** -149),
                  2.0 ** -128, 2.0 ** -127, 2.0 ** 126, 2.0 ** 127, 2.0 ** 128 - 2.0 ** 104,
                  1.0, -1.0, 3.0, 2.0 - 2.0 ** -23], F32)
    got, want = rcp_seq(b, kk), reference(b)
    assert not wrong(got, want).any(), (got, want)
    assert bits(got)[0] == 0x7F800000 and bits(got)[1] == 0xFF800000   # 1/±0 = ±inf
    assert bits(got)[2] == 0 and bits(got)[3] == 0x80000000            # 1/±inf = ±0


def test_all_exponents_boundaries_and_subnormals() -> None:
    bad, ex = count_wrong(fast_inputs())
    assert bad == 0, ex


def test_all_ones_significands_need_the_rounded_up_first_step() -> None:
    """The model can fail: with the first Newton step rounded to nearest instead of upward, 1/b
    for an all-ones significand and y0 the power of two below 1/b ties to even wrongly."""
    from rcp_model import fma, rcp_approx_ftz
    b = np.array([2.0 - 2.0 ** -23], F32)
    y0 = rcp_approx_ftz(b, -1)                 # 0.5: 1 ulp below 1/b's correct rounding
    e0 = fma(-b, y0, F32(1))
    r1 = fma(y0, e0, y0)                       # .rn: the tie goes to 0.5
    x = fma(r1, fma(-b, r1, F32(1)), r1)
    assert x[0] == F32(0.5) and reference(b)[0] != F32(0.5)
    assert rcp_seq(b, -1)[0] == reference(b)[0]


@pytest.mark.skipif(not EXHAUSTIVE, reason="all 2^32 inputs: set KCC_EXHAUSTIVE=1 (minutes)")
def test_exhaustive() -> None:
    total = 0
    for b in all_inputs():
        bad, ex = count_wrong(b)
        assert bad == 0, ex
        total += b.size
    assert total == 1 << 32


# -- kcc's PTX is this sequence ----------------------------------------------------------------

def _kernel(op: str) -> UOp:
    return k(f"""%x = PARAM ParamArg(0, float32, 64)
%o = PARAM ParamArg(1, float32, 64)
%i = RANGE(64) (0, LOOP) : weakint
%a = INDEX(%x, %i)
%v = LOAD(%a) : float32
%y = {op}(%v) : float32
%b = INDEX(%o, %i)
%s = STORE(%b, %y)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
""")


RCP_OPS = ["abs.f32", "setp.ge.f32", "setp.lt.f32", "mov.f32", "mul.rn.f32", "mul.rn.f32",
           "rcp.approx.ftz.f32", "neg.f32", "fma.rn.f32", "fma.rp.f32", "fma.rn.f32",
           "fma.rn.f32", "fma.rm.f32", "add.rz.f32", "mov.f32", "mul.rn.f32", "mul.rz.f32",
           "setp.nan.f32", "selp.f32", "copysign.f32"]


def body_ops(ptx: str, first: str, count: int) -> list[str]:
    """The opcodes (guards dropped) of `count` instructions from the one starting `first`."""
    ops = [re.sub(r"^@!?%p\d+ ", "", ln.strip()).split(" ")[0] for ln in ptx.splitlines()
           if ln.startswith("\t") and not ln.strip().startswith(("//", "."))]
    i = ops.index(first)
    return ops[i:i + count]


def test_ptx_is_the_modelled_sequence() -> None:
    ptx = ptx_of(_kernel("RECIPROCAL"), "sm_80")
    assert "rcp.rn" not in ptx and "div." not in ptx and "call" not in ptx
    assert body_ops(ptx, "abs.f32", len(RCP_OPS)) == RCP_OPS
    for c in ("0f7E800000", "0f00800000", "0f4B800000", "0f00000001", "0f3FC00000"):
        assert c in ptx                        # 2^126, 2^-126, 2^24, 2^-149, 1.5


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_accepts_it_and_sass_has_no_call(tmp_path: Path, arch: str) -> None:
    sass = sass_of(_kernel("RECIPROCAL"), tmp_path, arch)
    assert "MUFU.RCP" in sass and "CALL" not in sass and "RET" not in sass


if __name__ == "__main__":
    walk(count_wrong, sys.argv, "rcp")
