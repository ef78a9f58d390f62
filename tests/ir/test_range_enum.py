"""Exact ranges of selects over loop indices (kcc/ir/range_enum.py, used by kcc/ir/ranges.py's
WHERE): the oracle is the reference interpreter, which stores the value at every iteration; the
range must be its exact min and max. Also what the analysis refuses, and what the exact ranges
buy: interpolate's clamped index needs no gate and passes the verifier's bounds check."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.ir.interp import run
from kcc.ir.range_enum import MAX_WORK, exact_range
from kcc.ir.ranges import int_ranges

# the value %v of two int32 loop indices stored at out[b*i + j] (as int32)
KERNEL = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, {n})
%na = CAST({a}) int32
%nb = CAST({b}) int32
%i = RANGE(%na) (0, LOOP)
%j = RANGE(%nb, %i) (1, LOOP)
{consts}
{body}
%c = CAST(%v) int32
%o = MULACC(%i, %nb, %j)
%p = INDEX(%out, %o)
%s = STORE(%p, %c)
%e = END(%s, %j)
%e2 = END(%e, %i)
SINK(%e2) KernelInfo(name="k")
"""
CONSTS = {f"%k{v if v >= 0 else 'm' + str(-v)}": f"CAST({v}) int32"
          for v in (-9, -8, 0, 1, 2, 4, 8, 16, 224)}

# interpolate's clamp (tinygrad's E_4_16_4_4): 16*i - 8 clamped to [0, 224], then its cell
CLAMP = """%x = SHL(%i, %k4)
%lo = CMPLT(%x, %k8)
%y = MULACC(%i, %k16, %km8)
%w = WHERE(%lo, %k0, %y)
%hi = CMPLT(%k224, %w)
%v0 = WHERE(%hi, %k224, %w)
%v = ADD(%v0, %j)"""
# a select of wrapping int8 arithmetic and an arithmetic shift of a negative value
WRAP = """%i8 = CAST(%i) int8
%j8 = CAST(%j) int8
%c37 = CAST(37) int8
%c2 = CAST(2) int8
%z8 = CAST(0) int8
%x = MUL(%i8, %c37)
%n = SUB(%x, %j8)
%q = SHR(%n, %c2)
%lt = CMPLT(%n, %z8)
%v = WHERE(%lt, %q, %x)"""
# C division and remainder of a select by a loop index plus one
DIV = """%d = ADD(%j, %k1)
%s0 = ADD(%i, %km9)
%ne = CMPNE(%d, %k2)
%w = WHERE(%ne, %s0, %i)
%q = CDIV(%w, %d)
%r = CMOD(%w, %d)
%v = ADD(%q, %r)"""


def _kernel(body: str, a: int, b: int) -> str:
    used = [k for k in CONSTS if re.search(re.escape(k) + r"\b", body)]   # (each one used)
    consts = "\n".join(f"{k} = {CONSTS[k]}" for k in used)
    return KERNEL.format(n=a * b, a=a, b=b, consts=consts, body=body)


def _clamp_where(sink):
    (v0,) = [u for u in sink.toposort() if u.op is Ops.WHERE and u.src[1].op is Ops.CAST
             and u.src[1].src[0].arg == 224]
    return v0


@pytest.mark.parametrize("body, a, b", [(CLAMP, 16, 3), (WRAP, 12, 7), (DIV, 20, 4)])
def test_select_range_is_the_interpreters_min_and_max(body: str, a: int, b: int) -> None:
    sink = parse(_kernel(body, a, b), "k.uop")
    out = np.zeros(a * b, np.int32)
    run(sink, [out])
    (store,) = [u for u in sink.toposort() if u.op is Ops.STORE]
    val = store.src[1].src[0]                     # the value under the int32 CAST
    rng = int_ranges([sink])
    lo, hi = int(out.min()), int(out.max())
    assert exact_range(val) == (lo, hi)
    # int_ranges is exact at a select, and holds every value elsewhere
    r = rng[val]
    assert r == (lo, hi) if val.op is Ops.WHERE else r[0] <= lo and hi <= r[1]


def test_interpolate_clamp_is_exact_and_decides_its_gates() -> None:
    sink = parse(_kernel(CLAMP, 16, 3), "k.uop")
    # the hull of the arms is [-8, 232]
    assert int_ranges([sink])[_clamp_where(sink)] == (0, 224)


def test_values_that_are_not_functions_of_loop_indices_are_refused() -> None:
    text = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 16)
%x = PARAM ParamArg(1, int32, 16)
%i = RANGE(16) (0, LOOP)
%xi = INDEX(%x, %i)
%l = LOAD(%xi)
%z = CAST(0) int32
%lt = CMPLT(%l, %z)
%v = WHERE(%lt, %z, %l)
%oi = INDEX(%out, %i)
%s = STORE(%oi, %v)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""
    sink = parse(text, "k.uop")
    (w,) = [u for u in sink.toposort() if u.op is Ops.WHERE]
    assert exact_range(w) is None


def test_too_many_iterations_are_not_enumerated() -> None:
    a = MAX_WORK                     # a * 3 combinations times the nodes: past the budget
    sink = parse(_kernel(CLAMP, a, 3), "k.uop")
    assert exact_range(_clamp_where(sink)) is None


def test_unspecified_shift_amounts_are_refused() -> None:
    body = "%lt = CMPLT(%i, %k2)\n%sh = SHL(%k1, %j)\n%v = WHERE(%lt, %sh, %k0)"
    sink = parse(_kernel(body, 8, 40), "k.uop")
    (w,) = [u for u in sink.toposort() if u.op is Ops.WHERE]
    assert exact_range(w) is None    # %j reaches 39: shifts of 32 and more are unspecified


# tinygrad's interpolate reads its clamped cells ungated (what simplify makes of its gates):
# the interval hull put the read at 0..524 of 512 elements, the exact range inside
UNGATED = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 256)
%x = PARAM ParamArg(1, float32, 128)
%n = CAST(16) int32
%i = RANGE(%n) (0, LOOP)
%k0 = CAST(0) int32
%k4 = CAST(4) int32
%k5 = CAST(5) int32
%k8 = CAST(8) int32
%k31 = CAST(31) int32
%km8 = CAST(-8) int32
%k224 = CAST(224) int32
%t = MULACC(%i, %n, %km8)
%x4 = SHL(%i, %k4)
%lo = CMPLT(%x4, %k8)
%w = WHERE(%lo, %k0, %t)
%hi = CMPLT(%k224, %w)
%c = WHERE(%hi, %k224, %w)
%a = ADD(%c, %k31)
%k = SHR(%a, %k5)
%ld = MULACC(%k, %n, %k0)
%xp = SHRINK(%x, %ld, 16)
%v = LOAD(%xp)
%st = MULACC(%i, %n, %k0)
%op = SHRINK(%out, %st, 16)
%s = STORE(%op, %v)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


def test_clamped_index_passes_the_bounds_check() -> None:
    sink = parse(UNGATED, "k.uop")                # (refused before: "index out of bounds")
    (k,) = [u for u in sink.toposort() if u.op is Ops.SHR]
    assert int_ranges([sink])[k] == (0, 7)
