"""Tests of how kcc.ir.ops.Ops's members are read: Ops is a kcc.symbols class, so a member is
a plain attribute of the class (no metaclass hook: the hot passes read `Ops.ADD` per node), while
it still answers what a module asks of an Enum class; the enum module itself is left as it
is."""

from __future__ import annotations

import enum
import pickle
import sys

import pytest

from kcc.ir.ops import Ops


def test_members_answer_as_an_enum_class_does() -> None:
    assert len(Ops) > 40
    assert all(getattr(Ops, m.name) is m for m in Ops)
    assert isinstance(Ops.ADD, Ops) and not isinstance("ADD", Ops)
    assert Ops["RANGE"] is Ops.RANGE
    assert Ops(Ops.END.value) is Ops.END
    with pytest.raises(KeyError):
        Ops["NOPE"]
    with pytest.raises(AttributeError):
        Ops.NOPE
    assert pickle.loads(pickle.dumps(Ops.STORE)) is Ops.STORE


def test_the_enum_module_is_unchanged() -> None:
    # a rejected alternative deleted EnumType.__getattr__ for the whole process (3.12
    # dropped the hook itself)
    assert "__getattr__" in vars(enum.EnumType) or sys.version_info >= (3, 12)


def test_members_are_read_from_the_class_dict_without_a_hook() -> None:
    # a member is in the class's own dict, and no metaclass in the MRO has __getattr__ or
    # __getattribute__ of its own (CPython then reads the type's dict directly)
    assert vars(Ops)["ADD"] is Ops.ADD
    assert not any("__getattr__" in vars(m) or "__getattribute__" in vars(m)
                   for m in type(Ops).__mro__ if m is not type and m is not object)


def test_the_hot_modules_read_the_one_ops_class() -> None:
    from kcc.frontend import parser
    from kcc.ir import verify
    from kcc.isel.x86 import select
    from kcc.passes import simplify, slp, unroll
    assert all(m.Ops is Ops for m in (simplify, slp, unroll, select, parser, verify))
