"""Tests of kcc.ir.ops.FastOps, the name the hot modules import Ops by: Ops itself now (a
kcc.symbols class, whose members are read from the class's dict with no metaclass hook), so the
same member objects and everything else a module asks of Ops; the enum module itself is left
as it is."""

from __future__ import annotations

import enum
import pickle
import sys

import pytest

from kcc.ir.ops import FastOps, Ops


def test_every_member_is_the_enum_member_itself() -> None:
    assert len(FastOps) == len(Ops) > 40
    for m in Ops:
        assert getattr(FastOps, m.name) is m
    assert list(FastOps) == list(Ops)


def test_what_else_a_module_asks_is_answered_by_ops() -> None:
    assert isinstance(Ops.ADD, FastOps) and not isinstance("ADD", FastOps)
    assert FastOps["RANGE"] is Ops.RANGE
    assert FastOps.__members__ == Ops.__members__
    assert FastOps(Ops.END.value) is Ops.END
    with pytest.raises(KeyError):
        FastOps["NOPE"]
    with pytest.raises(AttributeError):
        FastOps.NOPE
    assert pickle.loads(pickle.dumps(FastOps.STORE)) is Ops.STORE
    assert repr(FastOps) == repr(Ops)


def test_the_enum_module_is_unchanged() -> None:
    # the rejected alternative deleted EnumType.__getattr__ for the whole process (3.12
    # dropped the hook itself)
    assert "__getattr__" in vars(enum.EnumType) or sys.version_info >= (3, 12)


def test_ops_is_fastops_and_reads_its_members_without_a_hook() -> None:
    assert FastOps is Ops
    # a member is in the class's own dict, and no metaclass in the MRO has __getattr__ or
    # __getattribute__ of its own (CPython then reads the type's dict directly)
    assert vars(Ops)["ADD"] is Ops.ADD
    assert not any("__getattr__" in vars(m) or "__getattribute__" in vars(m)
                   for m in type(Ops).__mro__ if m is not type and m is not object)


def test_the_hot_modules_read_fastops() -> None:
    from kcc.frontend import parser
    from kcc.ir import verify
    from kcc.isel.x86 import select
    from kcc.passes import simplify, slp, unroll
    assert all(m.Ops is FastOps for m in (simplify, slp, unroll, select, parser, verify))


def _fastops_modules() -> list:
    """The source files under kcc/ that import FastOps under the name Ops."""
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2] / "kcc"
    return [p for p in sorted(root.rglob("*.py"))
            if "import FastOps as Ops" in p.read_text()]


def test_modules_reading_fastops_ask_ops_only_for_members() -> None:
    # In these modules `Ops` is FastOps, not the enum class: an attribute other than a member
    # (a private or enum-only attribute), issubclass(x, Ops) or `type(x) is Ops` would misbehave
    # there, so none may appear (the review of the seventh session asked for this guard).
    import ast
    mods = _fastops_modules()
    assert len(mods) > 20
    answered = {"__members__"}  # what FastOps's metaclass forwards to Ops (tested above)
    bad = []
    for path in mods:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "Ops" and node.attr not in Ops.__members__
                    and node.attr not in answered):
                bad.append(f"{path.name}:{node.lineno}: Ops.{node.attr}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "issubclass"
                    and any(isinstance(a, ast.Name) and a.id == "Ops" for a in node.args)):
                bad.append(f"{path.name}:{node.lineno}: issubclass(…, Ops)")
            if (isinstance(node, ast.Compare)
                    and any(isinstance(c, ast.Name) and c.id == "Ops" for c in node.comparators)
                    and any(isinstance(o, (ast.Is, ast.IsNot, ast.Eq)) for o in node.ops)):
                bad.append(f"{path.name}:{node.lineno}: compared with the class Ops")
    assert not bad, "\n".join(bad)
