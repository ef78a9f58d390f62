"""Out-of-bounds accesses that value ranges prove (`check_bounds`, run by the parser) are
refused with the INDEX's line; gated, data-dependent and in-range accesses are accepted."""

from __future__ import annotations

import pytest

from kcc.frontend.errors import SourceError
from kcc.frontend.parser import parse

HEAD = "# kcc-uop 1\n"
BODY = """%out = PARAM ParamArg(0, int32, 4)
%x = PARAM ParamArg(1, int32, 8)
%n = PARAM ParamArg(2, int32, {decl}addrspace=ALU)
%i = RANGE(4) (0, LOOP)
%j = ADD(%i, {off})
%xi = {place}
%v = LOAD(%xi{gate})
%w = {use}
%oi = INDEX(%out, %i)
%s = STORE(%oi, %w)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


def _src(off="0", place="INDEX(%x, %j)", gate="", use="ADD(%v, 1)", decl="") -> str:
    return HEAD + BODY.format(off=off, place=place, gate=gate, use=use, decl=decl)


def test_in_bounds_is_accepted() -> None:
    parse(_src(off="4"))                  # elements 4..7 of 8


def test_out_of_bounds_load_is_refused_at_the_index() -> None:
    with pytest.raises(SourceError) as e:
        parse(_src(off="5"))              # elements 5..8 of 8
    assert e.value.line == 7 and "index out of bounds: elements 5..8 of a buffer of 8" \
        in e.value.message


def test_negative_index_is_refused() -> None:
    with pytest.raises(SourceError, match="elements -1..2"):
        parse(_src(off="-1"))


def test_a_gated_load_may_point_anywhere() -> None:
    parse(_src(off="-3", gate=", 0, %g").replace("%xi = ", "%g = CMPLT(2, %i)\n%xi = "))


def test_shrink_past_the_end_is_refused() -> None:
    src = _src(place="SHRINK(%x, %j, 2)", use="INDEX(%v, 1)", off="4")   # starts 4..7
    with pytest.raises(SourceError, match="starts of 2 elements 4..7 of a buffer of 8"):
        parse(src)


def test_index_from_an_undeclared_scalar_is_the_callers_promise() -> None:
    parse(_src(off="%n"))


def test_index_from_a_declared_scalar_range_is_checked() -> None:
    parse(_src(off="%n", decl="vmin_vmax=(0, 4), "))
    with pytest.raises(SourceError, match="out of bounds"):
        parse(_src(off="%n", decl="vmin_vmax=(0, 5), "))


WRAPPED = """# kcc-uop 1
%out = PARAM ParamArg(0, int32, 8)
%x = PARAM ParamArg(1, int32, 8)
%b = CAST({bound}) int16
%i = RANGE(%b) (0, LOOP)
%j = SUB(7, %i)
%xi = INDEX(%x, %j)
%v = LOAD(%xi)
%oi = INDEX(%out, %i)
%s = STORE(%oi, %v)
%e = END(%s, %i)
SINK(%e) KernelInfo(name="k")
"""


def test_a_wrapped_literal_bound_is_its_wrapped_value() -> None:
    """CAST(65544) int16 is 8 (the literal wraps): elements 0..7 of 8, accepted (the range
    analysis used to give the cast the whole int16 range and refuse it)."""
    parse(WRAPPED.format(bound=65536 + 8))
    parse(WRAPPED.format(bound=-65536 + 8))


def test_a_wrapped_literal_bound_past_the_end_is_refused() -> None:
    with pytest.raises(SourceError) as e:
        parse(WRAPPED.format(bound=65536 + 9))        # 9: element -1 of x
    assert "index out of bounds: elements -1..7 of a buffer of 8" in e.value.message
