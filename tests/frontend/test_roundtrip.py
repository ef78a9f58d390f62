"""Parsing valid files, the canonical printer, and literal exactness.

Oracles: the format's contract (UOP_FORMAT.md) for what a line means, Python's own float()
and struct for float bits, numpy for where a float literal overflows a dtype, np.iinfo for
integer ranges. The round trip is checked as graph identity (hash-consing makes structurally
equal graphs the same object), and printing is checked for idempotence.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse, parse_file, parse_result
from kcc.frontend.printer import format_uop
from kcc.ir import AddrSpace, AxisType, Ops, dtypes
from kcc.ir.interp import run
from paths import DATA

# the format contract's examples (copied from the shared contract), this part's own, and the
# project's examples/ when present
EXAMPLES = sorted((DATA / "frontend_examples").glob("*.uop")) + \
    sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.uop"))
H = "# kcc-uop 1\n"


def _kernel(value: str, dtype: str = "float32", extra: str = "") -> str:
    """A one-store kernel writing `value` (an operand) into a buffer of dtype."""
    return (H + f"%o = PARAM ParamArg(0, {dtype}, 4)\n{extra}%z = INDEX(%o, 0)\n"
            f"%st = STORE(%z, {value})\nSINK(%st) KernelInfo(name=\"k\")\n")


def _stored(sink) -> object:
    """The value node of the kernel's one STORE."""
    return next(n for n in sink.toposort() if n.op is Ops.STORE).src[1]


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 7


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_round_trip(path: Path) -> None:
    sink = parse_file(path)
    text = format_uop(sink)
    again = parse(text)
    assert again is sink                       # the same graph, node for node
    assert format_uop(again) == text           # fmt(fmt(x)) == fmt(x)
    lines = text.splitlines()
    assert lines[0] == "# kcc-uop 1" and lines[-1].startswith("SINK")
    # renumbered %0, %1, … in order, and every typed node carries its type
    names = [ln.split(" = ")[0] for ln in lines[1:-1]]
    assert names == [f"%{k}" for k in range(len(names))]
    for ln in lines[1:-1]:
        op = ln.split(" = ")[1].split("(")[0].split()[0]
        void = op in ("STORE", "END", "GROUP", "BARRIER")
        assert (" : " in ln) != void, ln


def test_select_example_structure() -> None:
    # the contract's example, checked against what the format says each line means
    res = parse_result((DATA / "frontend_examples" / "select_f64.uop")
                       .read_text())
    sink = res.sink
    assert sink.arg.name == "select_f64"
    (e,) = sink.src
    assert e.op is Ops.END and e.src[1].op is Ops.RANGE
    i = e.src[1]
    assert i.arg == (0, AxisType.LOOP) and i.src[0].arg == 4 and i.dtype is dtypes.weakint
    st = e.src[0]
    where = st.src[1]
    assert where.op is Ops.WHERE and where.dtype is dtypes.float64
    cmp = where.src[0]
    assert cmp.op is Ops.CMPLT and cmp.src[1].op is Ops.CONST and cmp.src[1].arg == 3.0
    params = sorted((n for n in sink.toposort() if n.op is Ops.PARAM), key=lambda n: n.arg.slot)
    assert [p.arg.dtype for p in params] == [dtypes.float64, dtypes.float32, dtypes.float64,
                                            dtypes.float64]
    assert res.names[i] == "%i" and res.loc[i].line == 7
    assert res.loc[where].src_cols[0] == res.lines[14].index("%c") + 1


def test_duplicate_lines_are_one_node() -> None:
    text = _kernel("%b", extra="%a = CAST(2) float32\n%a2 = CAST(2) float32\n"
                               "%b = ADD(%a, %a2)\n")
    sink = parse(text)
    add = _stored(sink)
    assert add.src[0] is add.src[1]
    out = format_uop(sink)
    assert out.count("CAST(2) float32") == 1 and "ADD(%2, %2)" in out


def test_unused_param_keeps_its_slot() -> None:
    text = _kernel("1.0", extra="%spare = PARAM ParamArg(1, int8, 3)\n")
    sink = parse(text)
    assert [s.op for s in sink.src] == [Ops.STORE, Ops.PARAM]
    assert sink.src[1].arg.slot == 1
    out = format_uop(sink)
    assert "SINK(%3) " in out and "PARAM ParamArg(1, int8, 3)" in out
    assert parse(out) is sink
    # an explicit PARAM src of the SINK in a position the parser would not use is kept
    odd = text.replace("SINK(%st)", "SINK(%spare, %st)")
    s2 = parse(odd)
    assert s2.src[0].op is Ops.PARAM and parse(format_uop(s2)) is s2


@pytest.mark.parametrize("lit", ["-0.0", "0.0", "nan", "inf", "-inf", "1e-310", "1.5",
                                 "3.4028234663852886e+38", "0.1", "1_000.5", ".5", "5.",
                                 "1e+16", "2.5E-3", "-7.25"])
def test_float_literals_are_exact(lit: str) -> None:
    sink = parse(_kernel(lit, "float64"))
    v = _stored(sink).arg
    want = float(lit)
    assert isinstance(v, float)
    if math.isnan(want):
        assert math.isnan(v)
    else:
        assert struct.pack("<d", v) == struct.pack("<d", want)   # sign of zero included
    assert parse(format_uop(sink)) is sink


@pytest.mark.parametrize("lit,value", [("0x10", 16), ("-0x10", -16), ("0XfF", 255),
                                       ("1_000", 1000), ("-9223372036854775808", -2**63),
                                       ("18446744073709551615", 2**64 - 1), ("007", 7)])
def test_int_literals(lit: str, value: int) -> None:
    dt = "int64" if value < 0 else "uint64"
    sink = parse(_kernel("%c", dt, extra=f"%c = CAST({lit}) {dt}\n"))
    c = _stored(sink).src[0]
    assert c.op is Ops.CONST and c.arg == value and type(c.arg) is int


def test_bool_and_int_constants_are_distinct_nodes() -> None:
    # 1, 1.0 and true hash-cons to three different nodes (argkey keeps them apart)
    t = H + ("%o = PARAM ParamArg(0, float32, 4)\n%z = INDEX(%o, 0)\n%a = CMPNE(true, false)\n"
             "%b = CAST(%a) float32\n%c = ADD(%b, 1)\n%d = ADD(%c, 1.0)\n%st = STORE(%z, %d)\n"
             'SINK(%st) KernelInfo(name="k")\n')
    sink = parse(t)
    consts = {(type(n.arg), n.arg) for n in sink.toposort() if n.op is Ops.CONST}
    assert {(bool, True), (bool, False), (int, 1), (float, 1.0), (int, 0)} <= consts


@pytest.mark.parametrize("dt", ["float16", "float32"])
def test_cast_of_float_literal_rounds_like_numpy(dt: str) -> None:
    # CAST converts a literal like any value: beyond the dtype's range it rounds to ±inf
    # (numpy's rounding to the narrow dtype is the oracle); the file is never refused
    finfo = np.finfo(dt)
    ulp = float(finfo.max) - float(np.nextafter(finfo.max, np.array(0, dt)))
    for v in [float(finfo.max), float(finfo.max) + ulp * 0.49, float(finfo.max) + ulp / 2,
              float(finfo.max) + ulp * 0.51, float(finfo.max) * 2, -float(finfo.max) - ulp]:
        with np.errstate(over="ignore"):
            want = np.array(v).astype(dt)
        text = _kernel("%c", dt, extra=f"%c = CAST({v!r}) {dt}\n")
        sink = parse(text)
        assert _stored(sink).op is Ops.CAST
        out = run(sink, [np.zeros(4, dt)])[0]
        assert out[0].tobytes() == want.tobytes(), (v, out[0], want)


def test_cast_of_int_literal_wraps() -> None:
    # narrowing keeps the low bits (docs/semantics.md): the oracle is modular arithmetic
    for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        info = np.iinfo(dt)
        bits = info.bits
        for v in [int(info.min), int(info.max), int(info.min) - 1, int(info.max) + 1, -1056,
                  -1, 2**63 - 1, -2**63, 2**64 - 1]:
            if not -2**63 <= v <= 2**64 - 1:
                continue            # refused by the lexer: out of range of every dtype
            m = v % (1 << bits)
            if info.min < 0 and m >= 1 << (bits - 1):
                m -= 1 << bits
            sink = parse(_kernel("%c", dt, extra=f"%c = CAST({v}) {dt}\n"))
            out = run(sink, [np.zeros(4, dt)])[0]
            assert int(out[0]) == m, (dt, v, int(out[0]), m)


def test_arg_forms() -> None:
    text = (H + '%x = PARAM ParamArg(0, float32, 8, name="a\\"b\\\\c\\x01", volatile=true,)\n'
            "%n = PARAM ParamArg(1, int32, None, (0, 8), None, ALU)\n"
            "%i = RANGE(%n) (3, 2, GROUP_REDUCE)\n%xi = INDEX(%x, %i)\n%st = STORE(%xi, 0.0)\n"
            '%e = END(%st, %i)\nSINK(%e) KernelInfo("k")\n')
    sink = parse(text)
    x = next(n for n in sink.toposort() if n.op is Ops.PARAM and n.arg.slot == 0)
    assert x.arg.name == 'a"b\\c\x01' and x.arg.volatile is True and x.arg.size == 8
    n = next(n for n in sink.toposort() if n.op is Ops.PARAM and n.arg.slot == 1)
    assert n.arg.addrspace is AddrSpace.ALU and n.arg.vmin_vmax == (0, 8) and n.arg.size is None
    r = next(n for n in sink.toposort() if n.op is Ops.RANGE)
    assert r.arg == (3, 2, AxisType.GROUP_REDUCE)
    assert parse(format_uop(sink)) is sink


def test_crlf_comments_and_blank_lines() -> None:
    text = _kernel("1.0").replace("\n", "  # note\r\n")
    text = text.replace("# kcc-uop 1  # note", "# kcc-uop 1")
    text = text.replace("\r\n%z", "\r\n\r\n   \r\n%z")
    assert parse(text) is parse(_kernel("1.0"))


def test_chain_of_200000_nodes() -> None:
    n = 200_000
    lines = [H.strip(), "%o = PARAM ParamArg(0, float32, 1)", "%a = PARAM ParamArg(1, float32, 1)",
             "%p = INDEX(%a, 0)", "%x0 = LOAD(%p)"]
    lines += [f"%x{k} = ADD(%x{k - 1}, 1.0)" for k in range(1, n)]
    lines += ["%q = INDEX(%o, 0)", f"%st = STORE(%q, %x{n - 1})", 'SINK(%st) KernelInfo(name="c")']
    # no recursion limit, no quadratic blow-up; its speed is bench/'s business, not a timed test
    sink = parse("\n".join(lines) + "\n")
    out = format_uop(sink)
    assert out.count("\n") == n + 7
    assert f"%{n + 3} = ADD(%{n + 2}, 1.0)" in out
