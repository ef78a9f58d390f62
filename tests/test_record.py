"""kcc/record.py: a record behaves as the dataclass of the same body (dataclasses is the
oracle): construction, defaults and factories, repr, ==, hash, frozen assignment,
__post_init__, inheritance, methods the body defines, and dataclasses' own fields/replace/
asdict on a record; plus what a record refuses."""

from __future__ import annotations

import dataclasses
import math

import pytest

from kcc.record import MISSING, field, fields, record, replace


def _pair(frozen: bool = False, eq: bool = True):  # noqa: ANN202
    """The same class body made a dataclass and a record."""
    made = []
    for deco, fld in ((dataclasses.dataclass, dataclasses.field), (record, field)):
        class C:
            """A test class."""

            a: int
            b: str = "x"
            c: list = fld(default_factory=list)
            d: float = fld(default=1.5, compare=False)
            e: tuple = fld(default=(), repr=False)

        made.append(deco(frozen=frozen, eq=eq)(C))
    return made


def _outcome(fn, *args):  # noqa: ANN001, ANN202
    """fn(*args), or the type of what it raised."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        return type(e)


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("eq", [False, True])
def test_record_behaves_as_the_dataclass(frozen: bool, eq: bool) -> None:
    D, R = _pair(frozen, eq)
    for args, kw in [((1,), {}), ((1, "y", [2]), {"d": 2.5}), ((), {"a": 3, "e": (1,)}),
                     ((math.nan,), {})]:
        d, r = D(*args, **kw), R(*args, **kw)
        assert repr(d) == repr(r)
        assert d.__dict__ == r.__dict__ and list(d.__dict__) == list(r.__dict__)
        d2, r2 = D(*args, **kw), R(*args, **kw)
        assert (d == d2) == (r == r2) and (d != d2) == (r != r2)
        assert (d == d) == (r == r)             # a NaN field: equal to itself (tuples)
        assert r.__eq__(1) is d.__eq__(1)       # NotImplemented or object's answer
        if D.__hash__ is None:
            assert R.__hash__ is None
        elif eq and frozen:
            assert _outcome(hash, d) == _outcome(hash, r)   # the hash of the same tuple
            assert hash(D(1, c=())) == hash(R(1, c=()))
        else:
            assert R.__hash__ is object.__hash__
        if frozen:
            for obj in (d, r):
                with pytest.raises(dataclasses.FrozenInstanceError, match="'a'"):
                    obj.a = 2
                with pytest.raises(dataclasses.FrozenInstanceError):
                    del obj.b
        else:
            d.a = r.a = 5
            assert d.a == r.a == 5
    assert D(1).c is not D(1).c and R(1).c is not R(1).c            # a new list each
    assert R.__match_args__ == D.__match_args__ == ("a", "b", "c", "d", "e")
    assert R.b == D.b == "x" and R.d == D.d == 1.5
    assert not hasattr(R, "c") and not hasattr(D, "c")              # factory: no attribute
    assert R.__init__.__defaults__[0] == "x"
    assert R.__init__.__qualname__ == "_pair.<locals>.C.__init__"
    for bad in [(), (1, 2, 3, 4, 5, 6)]:
        for cls in (D, R):
            with pytest.raises(TypeError):
                cls(*bad)
    with pytest.raises(TypeError):
        R(1, zz=2)


def test_dataclasses_functions_answer_for_a_record() -> None:
    D, R = _pair(frozen=True)
    r = R(1, "y", [3])
    assert dataclasses.is_dataclass(r) and dataclasses.is_dataclass(R)
    assert [f.name for f in dataclasses.fields(R)] == [f.name for f in dataclasses.fields(D)]
    assert [(f.default, f.default_factory, f.repr, f.compare) for f in dataclasses.fields(R)] \
        == [(f.default, f.default_factory, f.repr, f.compare) for f in dataclasses.fields(D)]
    assert dataclasses.replace(r, b="z") == R(1, "z", [3])
    assert dataclasses.asdict(r) == dataclasses.asdict(D(1, "y", [3]))
    # this module's own fields and replace
    assert [f.name for f in fields(r)] == ["a", "b", "c", "d", "e"]
    assert fields(R)[0].default is MISSING and fields(R)[1].default == "x"
    assert fields(R)[2].default_factory is list
    assert replace(r, a=2) == R(2, "y", [3]) and replace(r, a=2).c is r.c
    assert [f.name for f in fields(D)] == ["a", "b", "c", "d", "e"]   # a dataclass's too
    assert fields(D)[0].default is MISSING
    assert replace(D(1), a=4) == D(4)


def test_inheritance_post_init_and_body_methods() -> None:
    @record(eq=False)
    class Base:
        """Base."""

        x: int
        y: int = 0

    @record(eq=False)
    class Sub(Base):
        """Sub: a field after the base's, and one declared again keeps its place."""

        y: int = 7
        z: str = "s"

    assert [f.name for f in fields(Sub)] == ["x", "y", "z"]
    s = Sub(1)
    assert (s.x, s.y, s.z) == (1, 7, "s") and repr(s) == \
        "test_inheritance_post_init_and_body_methods.<locals>.Sub(x=1, y=7, z='s')"
    assert replace(s, z="t").z == "t" and type(replace(s)) is Sub
    assert s != Sub(1) and hash(s) == object.__hash__(s)              # eq=False: identity

    calls = []

    @record(frozen=True, eq=False)
    class P:
        """With __post_init__, its own __repr__ and __eq__ kept."""

        n: int

        def __post_init__(self) -> None:
            calls.append(self.n)

        def __repr__(self) -> str:
            return "P!"

    assert repr(P(3)) == "P!" and calls == [3]

    @record(frozen=True)
    class H:
        """An explicit __hash__ is kept."""

        n: int

        def __hash__(self) -> int:
            return 42

    assert hash(H(1)) == 42 and H(1) == H(1)

    @record
    class NoFields:
        """No fields."""

    assert NoFields() == NoFields() and repr(NoFields()).endswith("NoFields()")


def test_recursive_repr_is_dots() -> None:
    @record
    class Node:
        """A node that may hold itself."""

        kids: list = field(default_factory=list)

    n = Node()
    n.kids.append(n)
    assert repr(n).endswith("Node(kids=[...])")


def test_what_a_record_refuses() -> None:
    with pytest.raises(ValueError, match="mutable default"):
        @record
        class A:
            """A list default."""

            x: list = []                # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument 'y'"):
        @record
        class B:
            """A non-default field after a default one."""

            x: int = 0
            y: int

    with pytest.raises(TypeError, match="ClassVar"):
        @record
        class C:
            """A ClassVar field."""

            x: ClassVar[int] = 0        # noqa: F821

    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        @record(frozen=True)
        class D:
            """Frozen with its own __setattr__."""

            x: int

            def __setattr__(self, name: str, value: object) -> None:
                pass

    with pytest.raises(TypeError, match="dataclass base"):
        @dataclasses.dataclass
        class E:
            """A dataclass."""

            x: int

        @record
        class F(E):
            """A record over it."""

            y: int = 0

    with pytest.raises(ValueError):
        field(default=1, default_factory=list)


# -- FieldTuple and Counts, held to collections' namedtuple and Counter ------------------------

def test_field_tuple_answers_as_namedtuple() -> None:
    import collections
    import copy
    import pickle

    from kcc.frontend.parser import NodeLoc
    want = collections.namedtuple("NodeLoc", "line col src_cols arg_col", defaults=((), None))
    for args in [(1, 2), (3, 4, (5, 6)), (7, 8, (), 9)]:
        got, ref = NodeLoc(*args), want(*args)
        assert got == ref and tuple(got) == tuple(ref) and hash(got) == hash(ref)
        assert repr(got) == repr(ref) and got._fields == ref._fields
        assert [got.line, got.col, got.src_cols, got.arg_col] == \
            [ref.line, ref.col, ref.src_cols, ref.arg_col]
        assert got._asdict() == ref._asdict()
        assert got._replace(col=99) == ref._replace(col=99)
        assert type(got._replace(col=99)) is NodeLoc
        assert pickle.loads(pickle.dumps(got)) == got
        assert type(pickle.loads(pickle.dumps(got))) is NodeLoc
        assert copy.deepcopy(got) == got
    with pytest.raises(ValueError):
        NodeLoc(1, 2)._replace(nope=3)
    with pytest.raises(AttributeError):
        NodeLoc(1, 2).line = 5
    with pytest.raises(TypeError):
        NodeLoc(1)


def test_counts_answers_as_counter() -> None:
    import collections

    from kcc.record import Counts
    items = ["a", "b", "a", 3, "c", 3, "a"]
    got, ref = Counts(items), collections.Counter(items)
    assert dict(got) == dict(ref) and list(got) == list(ref)
    assert got["zz"] == ref["zz"] == 0 and "zz" not in got
    got["a"] -= 1
    ref["a"] -= 1
    got.update(x for x in "bd")
    ref.update(x for x in "bd")
    assert dict(got) == dict(ref) and list(got) == list(ref)
    assert Counts() == {} and Counts(iter(())) == {}
