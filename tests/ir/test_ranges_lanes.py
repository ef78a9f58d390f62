"""The range of one lane of an integer vector (`INDEX(v, c)`, kcc/ir/ranges.py): lane c of
its lane-wise ops down to the STACKs, not the hull of every lane.

Widening (kcc/passes/widen_lanes.py) builds a loop's per-iteration indices as one vector
`STACK(i, i, i, i) + STACK(-1, 0, 1, 2)` and reads each lane with INDEX; the copies whose
lane is in bounds are ungated. The hull of the lanes (-1..38 below) reaches out of the buffer
where the lane read (0..36) does not, and the verifier's bounds check, which the parser runs,
refused the valid graph tests/fuzz's --fp-contract oracle parses back from the dump after
`contract` ("index out of bounds: elements -1..38 of a buffer of 40")."""

from __future__ import annotations

import pytest

from kcc.frontend.errors import SourceError
from kcc.frontend.parser import parse
from kcc.ir import AxisType, Ops, ParamArg, UOp
from kcc.ir.dtype import dtypes
from kcc.ir.ranges import vmin_vmax

# a widened loop's lanes, as the dump after contract prints them (minimized from the fuzz
# kernel): lane {lane} of i + (-1, 0, 1, 2) indexes a buffer of 40, i = 4r in 0..36
LANES = """# kcc-uop 1
%a = PARAM ParamArg(0, float32, 40)    : float32[40]
%o = PARAM ParamArg(1, float32, 40)    : float32[40]
%n = CAST(10) int32                    : int32
%r = RANGE(%n) (0, LOOP)               : int32
%c4 = CAST(4) int32                    : int32
%i = MUL(%r, %c4)                      : int32
%m1 = CAST(-1) int32                   : int32
%c0 = CAST(0) int32                    : int32
%c1 = CAST(1) int32                    : int32
%c2 = CAST(2) int32                    : int32
%is = STACK(%i, %i, %i, %i)            : int32[4]
%ks = STACK(%m1, %c0, %c1, %c2)        : int32[4]
%v = {vec}
%j = INDEX(%v, {lane})
%x = INDEX(%a, %j)                     : float32
%l = LOAD(%x)                          : float32
%y = INDEX(%o, %i)                     : float32
%s = STORE(%y, %l)
%e = END(%s, %r)
SINK(%e) KernelInfo(name="fuzz")
"""


def _lanes(lane: int, vec: str = "ADD(%is, %ks)", before: str = "") -> str:
    """The kernel reading lane `lane` of the vector %v = vec (`before`: lines ahead of it)."""
    return LANES.format(lane=lane, vec=vec).replace("%v = ", before + "%v = ")


def _index(sink, lane_op: Ops = Ops.INDEX):
    """The INDEX that reads a lane (the one whose src is a vector value)."""
    return next(u for u in sink.toposort() if u.op is lane_op and u.kind == "value"
                and u.src[0].shape)


@pytest.mark.parametrize("lane", [1, 2, 3])
def test_a_lane_in_bounds_is_accepted_where_the_hull_is_not(lane: int) -> None:
    # lane 1: elements 0..36 (the hull -1..38 was the fuzz kernel's refusal)
    sink = parse(_lanes(lane))
    assert vmin_vmax(_index(sink)) == (lane - 1, 36 + lane - 1)


def test_the_lane_that_reaches_below_zero_is_still_refused() -> None:
    with pytest.raises(SourceError, match=r"elements -1\.\.35 of a buffer of 40"):
        parse(_lanes(0))


def test_a_lane_of_a_stack_is_its_scalar() -> None:
    r = UOp(Ops.RANGE, (UOp.const(10),), (0, AxisType.LOOP))
    v = UOp(Ops.STACK, (UOp.const(-1), r, UOp.const(40)))
    assert [vmin_vmax(UOp(Ops.INDEX, (v, UOp.const(k)))) for k in range(3)] == [
        (-1, -1), (0, 9), (40, 40)]


# ((i + (-1, 0, 1, 2)) + (-1, 0, 1, 2)) cast to int64
NESTED = "%w0 = ADD(%is, %ks)\n%w1 = ADD(%w0, %ks)\n"


def test_a_lane_through_nested_lane_wise_ops_and_a_cast() -> None:
    sink = parse(_lanes(1, vec="CAST(%w1) int64", before=NESTED))
    assert vmin_vmax(_index(sink)) == (0, 36)
    with pytest.raises(SourceError, match=r"elements 4\.\.40 of a buffer of 40"):
        parse(_lanes(3, vec="CAST(%w1) int64", before=NESTED))      # i + 4 reaches 40


def test_a_lane_of_a_where_is_the_hull_of_its_branches_lanes() -> None:
    # WHERE(i < 8, i + (-1, 0, 1, 2), i + 2 * (-1, 0, 1, 2)) lane 2: 1..37 or 2..38
    cond = ("%c8 = CAST(8) int32\n%g0 = CMPLT(%i, %c8)\n%g = STACK(%g0, %g0, %g0, %g0)\n"
            + NESTED)
    sink = parse(_lanes(2, vec="WHERE(%g, %w0, %w1)", before=cond))
    assert vmin_vmax(_index(sink)) == (1, 38)


def test_a_vector_not_built_lane_wise_answers_its_hull() -> None:
    # lane 1 of (LOAD of 4 int32) + (-1, 0, 1, 2): the loaded lanes are any int32
    b = UOp(Ops.PARAM, (), ParamArg(0, dtypes.int32, 4))
    q = UOp(Ops.LOAD, (UOp(Ops.SHRINK, (b, UOp.const(0), UOp.const(4))),))
    ks = UOp(Ops.STACK, tuple(UOp(Ops.CAST, (UOp.const(k),), dtypes.int32)
                              for k in (-1, 0, 1, 2)))
    lane = UOp(Ops.INDEX, (UOp(Ops.ADD, (q, ks)), UOp.const(1)))
    assert vmin_vmax(lane) == (-2**31, 2**31 - 1)
