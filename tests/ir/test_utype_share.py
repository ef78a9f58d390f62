"""The rule table shares one UType per distinct (dtype, shape, kind) (kcc.ir.rules._utype):
equal types are one object, and a node's dtype is still the very dtype object it was given."""

from __future__ import annotations

from kcc.ir import rules
from kcc.ir.dtype import DType, dtypes
from kcc.ir.ops import Ops
from kcc.ir.uop import ParamArg, UOp


def test_equal_types_are_one_object() -> None:
    p = UOp(Ops.PARAM, (), ParamArg(0, dtypes.float32, 16))
    q = UOp(Ops.PARAM, (), ParamArg(1, dtypes.float32, 16))
    a = UOp(Ops.INDEX, (p, UOp.const(3)))
    b = UOp(Ops.INDEX, (q, UOp.const(5)))
    assert a is not b and a.utype is b.utype and p.utype is q.utype
    assert p.utype.shape == (16,) and p.utype.kind == "buffer"


def test_shared_type_keeps_its_dtype_object() -> None:
    # an equal but distinct dtype object gets a UType of its own (keyed by the object), so a
    # type's dtype is always the object the rule was given
    twin = DType("float32", 4, "float")
    assert twin == dtypes.float32 and twin is not dtypes.float32
    a = rules._utype(dtypes.float32, (4,), "value")
    b = rules._utype(twin, (4,), "value")
    assert a.dtype is dtypes.float32 and b.dtype is twin and a == b and a is not b
    assert UOp(Ops.CAST, (UOp.const(1),), dtypes.float32).dtype is dtypes.float32


def test_table_is_bounded() -> None:
    before, kept = rules._UTYPES_MAX, dict(rules._UTYPES)
    try:
        rules._UTYPES_MAX = 4
        rules._UTYPES.clear()
        for n in range(1, 20):
            assert rules._utype(dtypes.int32, (n,), "buffer").shape == (n,)
            assert 0 < len(rules._UTYPES) <= 4
    finally:
        rules._UTYPES_MAX = before
        rules._UTYPES.update(kept)
