"""Tests of kcc.symbols: each behaviour of a Symbols (FlagSymbols) class held to the
enum.Enum (enum.Flag) class of the same body, the oracle."""

from __future__ import annotations

import copy
import enum
import pickle

import pytest

from kcc.ir.mir import Kind, Role
from kcc.ir.ops import Ops
from kcc.ir.uop import AddrSpace, AxisType
from kcc.symbols import FlagSymbols, Symbols, auto


class Color(Symbols):
    RED = auto()
    GREEN = auto()
    BLUE = 7
    CYAN = auto()
    CRIMSON = 1             # an alias: the same member as RED

    def describe(self) -> str:
        return self.name.lower()


class EColor(enum.Enum):
    RED = enum.auto()
    GREEN = enum.auto()
    BLUE = 7
    CYAN = enum.auto()
    CRIMSON = 1

    def describe(self) -> str:
        return self.name.lower()


class Word(Symbols):
    A = "a"
    B = "b"


class EWord(enum.Enum):
    A = "a"
    B = "b"


class Bits(FlagSymbols):
    X = 1
    Y = 2
    Z = 4


class EBits(enum.Flag):
    X = 1
    Y = 2
    Z = 4


def _same(mine: str, theirs: str) -> None:
    """The same text, the enum classes' names read as their twins' (EColor as Color)."""
    for e in ("EColor", "EWord", "EBits"):
        theirs = theirs.replace(e, e[1:])
    assert mine == theirs


@pytest.mark.parametrize("mine,theirs", [(Color, EColor), (Word, EWord), (Bits, EBits)])
def test_the_class_answers_as_enum(mine, theirs) -> None:
    assert [m.name for m in mine] == [m.name for m in theirs]
    assert [m.value for m in mine] == [m.value for m in theirs]
    assert [m.name for m in reversed(mine)] == [m.name for m in reversed(theirs)]
    assert len(mine) == len(theirs)
    assert list(mine.__members__) == list(theirs.__members__)
    assert {k: v.name for k, v in mine.__members__.items()} == \
        {k: v.name for k, v in theirs.__members__.items()}
    for m, t in zip(mine, theirs):
        assert mine[m.name] is m and mine(m.value) is m and mine(m) is m
        assert m in mine and type(m) is mine and isinstance(m, mine)
        assert m._name_ == t._name_ and m._value_ == t._value_
        _same(repr(m), repr(t))
        _same(str(m), str(t))
        _same(f"{m}", f"{t}")
        assert f"{m:>20}" == f"{str(m):>20}" and f"{t:>20}" == f"{str(t):>20}"
        assert bool(m) == bool(t)
        assert m == m and m != next(x for x in mine if x is not m)
        assert hash(m) == hash(m) and {m: 1}[m] == 1
        assert copy.copy(m) is m and copy.deepcopy(m) is m
        assert pickle.loads(pickle.dumps(m)) is m
    _same(repr(mine), repr(theirs))
    with pytest.raises(KeyError):
        mine["NOPE"]
    with pytest.raises(ValueError):
        mine("nope")
    with pytest.raises(ValueError):
        mine([])                    # an unhashable value: ValueError, as enum's
    with pytest.raises(AttributeError):
        mine.NOPE
    first = next(iter(mine))
    with pytest.raises(AttributeError):
        first.name = "other"
    with pytest.raises(AttributeError):
        setattr(mine, first.name, 5)
    with pytest.raises(AttributeError):
        delattr(mine, first.name)
    with pytest.raises(TypeError):
        first < first               # noqa: B015  (members are not ordered)


def test_aliases_auto_and_methods() -> None:
    assert Color.CRIMSON is Color.RED and EColor.CRIMSON is EColor.RED
    assert Color["CRIMSON"] is Color.RED
    assert Color.CYAN.value == EColor.CYAN.value == 8
    assert Color.GREEN.describe() == EColor.GREEN.describe() == "green"
    assert "describe" not in Color.__members__


def test_flags_combine_as_enum_flags() -> None:
    pairs = list(zip(Bits, EBits))
    for a, ea in pairs:
        for b, eb in pairs:
            for op in (lambda p, q: p | q, lambda p, q: p & q, lambda p, q: p ^ q):
                got, want = op(a, b), op(ea, eb)
                assert got.value == want.value and got.name == want.name
                assert got is op(a, b)          # made once: compared with `is`
                _same(repr(got), repr(want))
                assert bool(got) == bool(want)
                assert (a in got) == (ea in want)
                assert [m.name for m in got] == [m.name for m in want]
                assert len(got) == len(want)
        assert (~a).value == (~ea).value and (~a).name == (~ea).name
    assert Bits(3) is Bits.X | Bits.Y and Bits(0).value == 0 and not Bits(0)
    _same(repr(Bits(0)), repr(EBits(0)))
    _same(str(Bits(0)), str(EBits(0)))
    _same(str(Bits(5)), str(EBits(5)))
    assert pickle.loads(pickle.dumps(Bits.X | Bits.Z)) is Bits.X | Bits.Z
    with pytest.raises(ValueError):
        Bits(8)
    with pytest.raises(TypeError):
        1 in Bits.X                 # noqa: B015


def test_kccs_enumerations() -> None:
    assert Ops.ADD is Ops["ADD"] is Ops(Ops.ADD.value) and repr(Ops.ADD) == "Ops.ADD"
    assert [o.value for o in Ops] == list(range(1, len(Ops) + 1))   # enum.auto's numbers
    assert AddrSpace("LOCAL") is AddrSpace.LOCAL and AxisType["REDUCE"].value == "REDUCE"
    assert Kind("op") is Kind.OP
    rw = Role.DEF | Role.USE
    assert rw is Role.USE | Role.DEF and Role.DEF in rw and rw.name == "DEF|USE"
    assert hash(Ops.ADD) == object.__hash__(Ops.ADD)
