"""BITCAST between bool and a byte (docs/semantics.md, CAST and BITCAST): a bool is 0 or 1, so
a uint8/int8 read as a bool is ``x != 0`` and a bool read as a byte is 0 or 1.

Before, the three disagreed on a byte other than 0/1: the interpreter stored the raw byte into
a bool buffer, x86 also computed on it (CAST to int32 gave 2, AND with true gave false for 2),
AMD made it 0/1. Now ``simplify`` rewrites such a BITCAST to CAST (kcc/passes/simplify.py
``bool_bitcast``) and the interpreter reads it the same way (kcc/ir/numerics.py ``bitcast``)."""

from __future__ import annotations

import numpy as np
import pytest
from x86_util import assert_same, compile_and_run, reference

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.uop import toposort
from kcc.passes.simplify import simplify

KERNEL = """# kcc-uop 1
%x = PARAM ParamArg(0, uint8, 8)
%c = PARAM ParamArg(1, bool, 8)
%ob = PARAM ParamArg(2, bool, 8)
%oi = PARAM ParamArg(3, int32, 8)
%oa = PARAM ParamArg(4, bool, 8)
%ou = PARAM ParamArg(5, int8, 8)
%l = SPECIAL(8) "gidx0" : weakint
%xi = INDEX(%x, %l)
%xv = LOAD(%xi) : uint8
%b = BITCAST(%xv) bool
%ci = INDEX(%c, %l)
%cv = LOAD(%ci) : bool
%p1 = INDEX(%ob, %l)
%s1 = STORE(%p1, %b)
%i = CAST(%b) int32
%p2 = INDEX(%oi, %l)
%s2 = STORE(%p2, %i)
%a = AND(%b, %cv) : bool
%p3 = INDEX(%oa, %l)
%s3 = STORE(%p3, %a)
%u = BITCAST(%cv) int8
%p4 = INDEX(%ou, %l)
%s4 = STORE(%p4, %u)
%g = GROUP(%s1, %s2, %s3, %s4)
SINK(%g) KernelInfo(name="bitcast_bool")
"""
X = np.array([0, 1, 2, 255, 0, 1, 2, 128], np.uint8)
C = np.array([1, 1, 1, 1, 0, 0, 0, 1], np.uint8).view(bool)
WANT = [X != 0, (X != 0).astype(np.int32), (X != 0) & C, C.astype(np.int8)]


def _args() -> list:
    return [X.copy(), C.copy(), np.zeros(8, bool), np.zeros(8, np.int32), np.zeros(8, bool),
            np.zeros(8, np.int8)]


def _check(got: list) -> None:
    for g, w in zip(got[2:], WANT):
        assert g.dtype == w.dtype and g.view(np.uint8 if g.dtype == bool else g.dtype).tolist() \
            == w.view(np.uint8 if w.dtype == bool else w.dtype).tolist()


def test_simplify_turns_bool_bitcasts_into_casts() -> None:
    out = simplify(parse(KERNEL))
    ops = {(n.op, n.src[0].dtype.name, n.arg.name) for n in toposort([out])
           if n.op in (Ops.CAST, Ops.BITCAST) and n.src}
    assert (Ops.CAST, "uint8", "bool") in ops and (Ops.CAST, "bool", "int8") in ops
    assert not any(op is Ops.BITCAST for op, _, _ in ops)


def test_interpreter_reads_a_byte_as_a_bool_by_nonzero() -> None:
    _check(reference(parse(KERNEL), _args()))


@pytest.mark.parametrize("arch", ["x86-64-v3", "x86-64-v4"])
def test_x86_agrees_on_bool_bitcasts(arch: str) -> None:
    """x86 stored 2 and 255 into the bool buffer, CAST them to int32 as 2 and 255 and ANDed
    2 with true to false."""
    sink = parse(KERNEL)
    got = compile_and_run(sink, _args(), arch)
    _check(got)
    assert_same(sink, got, reference(sink, _args()))


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_amd_agrees_on_bool_bitcasts(arch: str) -> None:
    from kcc.targets.amd.target import compile_amd_code, emulate, hsaco
    from kcc.targets.manifest import check_launch
    sink = parse(KERNEL)
    (code,) = compile_amd_code([sink], arch)
    got = _args()
    emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
    _check(got)
