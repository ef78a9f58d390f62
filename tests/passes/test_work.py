"""kcc/passes/work.py vector_work: a kernel's element operations, the measure x86-64-v4's
per-kernel description asks (TargetDesc.narrow: no zmm for a kernel of little work)."""

from __future__ import annotations

from kcc.frontend.parser import parse
from kcc.passes.work import _POLY_WEIGHT, _UNKNOWN_TRIPS, vector_work


def _relu(n: int, lanes: int, op: str = "", bound: str = "") -> str:
    """out[lanes*i : lanes*i + lanes] = op(x[...]) for i < n (relu_spec's E_5_4 at 5 x 4)."""
    zs = ", ".join(["%z"] * lanes)
    return f"""# kcc-uop 1
%o = PARAM ParamArg(0, float32, {n * lanes})
%a = PARAM ParamArg(1, float32, {n * lanes})
{bound}%z = CAST(0.0) float32
%zv = STACK({zs})
%r = RANGE({"%nv" if bound else n}) (0, LOOP)
%b = MUL(%r, {lanes})
%p = SHRINK(%a, %b, {lanes})
%x = LOAD(%p)
%m = MAX(%zv, %x)
{op}%d = SHRINK(%o, %b, {lanes})
%s = STORE(%d, {"%f" if op else "%m"})
%e = END(%s, %r)
SINK(%e) KernelInfo(name="relu")
"""


def test_lanes_times_trips() -> None:
    # per iteration: the index MUL (1), LOAD (4), MAX (4), STORE (4) = 13; 5 iterations
    assert vector_work(parse(_relu(5, 4))) == 5 * 13
    assert vector_work(parse(_relu(50, 4))) == 50 * 13


def test_a_transcendental_weighs_a_polynomial() -> None:
    w = vector_work(parse(_relu(5, 4, "%f = EXP2(%m)\n")))
    assert w == 5 * (13 + 4 * _POLY_WEIGHT)


def test_a_runtime_bound_counts_as_large() -> None:
    bound = '%nv = PARAM ParamArg(2, int32, vmin_vmax=(1, 5), name="n", addrspace=ALU)\n'
    assert vector_work(parse(_relu(5, 4, bound=bound))) >= _UNKNOWN_TRIPS


def test_divides_are_the_float_sqrts_and_fdivs() -> None:
    from kcc.passes.work import work_split
    assert work_split(parse(_relu(5, 4))) == (5 * 13, 0)
    total, divides = work_split(parse(_relu(5, 4, "%f = SQRT(%m)\n")))
    assert (total, divides) == (5 * 17, 5 * 4)
    recip = "%one = CAST(1.0) float32\n%ov = STACK(%one, %one, %one, %one)\n" \
            "%f = FDIV(%ov, %m)\n"
    assert work_split(parse(_relu(50, 4, recip))) == (50 * 17, 50 * 4)
